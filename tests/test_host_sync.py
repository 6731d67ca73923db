"""The decoding loops wait for the device at most once per step (issue #26).

A host synchronisation is any point where Python needs a value that lives on the
device: ``.item()``, ``bool(t)``, ``int(t)``, ``float(t)``, ``if t:``, ``.tolist()``,
``.numpy()``, and the operations whose output shape depends on the data
(``nonzero``, boolean indexing, ``masked_select``, ...), which must wait for the data
before they can allocate. On a GPU each one stalls the queue of kernels, so a loop
that synchronises several times per step pays the launch latency several times.

The tests run on the CPU, where nothing stalls, so they count: every call above made
during a decode is recorded, through a dispatch mode (it sees the operators behind
``item``/``bool``/``int`` and the data-dependent ones) and through wrappers of
``Tensor.tolist``/``numpy``/``__array__`` (which dispatch no operator). Each call of
``model.next_token_logits`` marks the start of a step; between two marks at most one
synchronisation may happen (the "all finished?" test), and a few are allowed before the
first step (the input checks, the length limit) and after the last (reading the result).
"""

from __future__ import annotations

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import aiayn_helpers as ah
from aiayn_helpers.decoding import beam_search, greedy_decode

PAD, EOS = 0, 2
aten = torch.ops.aten

# operators that read a value back, or whose output size depends on the data
SYNC_OPS = {
    aten._local_scalar_dense.default,  # item(), bool(), int(), float(), if t:
    aten.nonzero.default,
    aten.masked_select.default,
    aten.equal.default,
    aten.repeat_interleave.Tensor,
    aten._unique2.default,
    aten.unique_consecutive.default,
    aten.unique_dim.default,
}
# allowed outside the steps: the input checks and the length limit before the first
# step, reading the hypotheses (and scores) back after the last
BEFORE_FIRST_STEP, AFTER_LAST_STEP = 6, 4


def _bool_index(args: tuple) -> bool:
    indices = args[1] if len(args) > 1 else ()
    masks = (torch.bool, torch.uint8)
    return any(isinstance(i, torch.Tensor) and i.dtype in masks for i in indices or ())


class SyncCounter(TorchDispatchMode):
    """Counts host synchronisations; ``marks`` holds the count at each step's start."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0
        self.marks: list[int] = []
        self.what: list[str] = []

    def record(self, name: str) -> None:
        self.count += 1
        self.what.append(name)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        indexing = func in (aten.index.Tensor, aten.index_put_.default)
        if func in SYNC_OPS or (indexing and _bool_index(args)):
            self.record(str(func))
        return func(*args, **(kwargs or {}))

    def per_step(self) -> list[int]:
        """Synchronisations between each step's start and the next step's start."""
        return [b - a for a, b in zip(self.marks, self.marks[1:], strict=False)]


@pytest.fixture
def counter(monkeypatch):
    counter = SyncCounter()
    for name in ("tolist", "numpy", "__array__"):
        original = getattr(torch.Tensor, name)

        def wrapped(self, *args, _original=original, _name=name, **kwargs):
            counter.record(f"Tensor.{_name}")
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(torch.Tensor, name, wrapped)
    return counter


def _model(seed: int = 0, vocab: int = 11) -> ah.Transformer:
    torch.manual_seed(seed)
    sizes = dict(d_model=16, num_heads=2, num_layers=2, d_ff=32, dropout=0.0)
    model = ah.Transformer(vocab, vocab, **sizes).double()
    # <eos> now and then, so that sentences finish at different steps
    with torch.no_grad():
        model.generator.weight[EOS] += 0.3 * model.generator.weight[4:].mean(0)
    return model


def _src(seed: int = 0, vocab: int = 11) -> torch.Tensor:
    src = torch.randint(4, vocab, (6, 7), generator=torch.Generator().manual_seed(seed))
    src[2, 3:] = PAD
    src[4, 5:] = PAD
    return src


def _decode_counting(counter: SyncCounter, model: ah.Transformer, decode) -> list[int]:
    original = model.next_token_logits

    def step(*args, **kwargs):
        counter.marks.append(counter.count)
        return original(*args, **kwargs)

    model.next_token_logits = step
    try:
        with counter:
            decode()
    finally:
        del model.next_token_logits
    counter.marks.append(counter.count)  # the end of the last step
    return counter.per_step()


DECODERS = {  # name -> (decoder, its keywords)
    "greedy": (greedy_decode, dict(max_new_tokens=15)),
    "beam4": (beam_search, dict(beam_size=4, max_new_tokens=15)),
    "beam3_scores": (beam_search, dict(beam_size=3, return_scores=True)),
    "beam2_no_penalty": (beam_search, dict(beam_size=2, length_penalty=0.0)),
}


@pytest.mark.parametrize("use_cache", [True, False])
@pytest.mark.parametrize("name", list(DECODERS))
def test_at_most_one_host_sync_per_step(counter, name, use_cache):
    model, src = _model(), _src()
    decoder, kwargs = DECODERS[name]
    decode = lambda: decoder(model, src, use_cache=use_cache, **kwargs)
    per_step = _decode_counting(counter, model, decode)
    before = counter.marks[0]
    assert len(per_step) >= 3, "the decode should take several steps"
    # the last step's count includes reading the result back
    assert max(per_step[:-1]) <= 1, (per_step, counter.what)
    assert per_step[-1] <= 1 + AFTER_LAST_STEP, (per_step, counter.what)
    assert before <= BEFORE_FIRST_STEP, counter.what[:before]


def test_the_counter_sees_every_kind_of_synchronisation(counter):
    """The counter is not blind: each of these counts once."""
    t = torch.tensor([1.0, 2.0, 3.0])
    with counter:
        t.sum().item()
        bool(t[0] > 0)
        int(t[1])
        float(t[2])
        if t[0]:
            pass
        torch.nonzero(t)
        t[t > 1]
        t.masked_select(t > 1)
        t.tolist()
    assert counter.count == 9, counter.what


def test_a_loop_that_reads_its_state_every_step_fails_the_bound(counter):
    """The kind of loop the test rejects: two read-backs per step."""
    model, src = _model(), _src()

    def decode():
        memory, src_mask = model.encode(src)
        ys = torch.full((src.shape[0], 1), 1)
        for _ in range(5):
            logits = model.next_token_logits(ys, memory, src_mask)
            nxt = logits.argmax(-1)
            ys = torch.cat([ys, nxt[:, None]], dim=1)
            n_eos = int((nxt == EOS).sum())  # one read-back ...
            negative = bool((nxt < 0).all())  # ... and a second
            if n_eos == len(nxt) and not negative:
                break

    with torch.no_grad():
        per_step = _decode_counting(counter, model, decode)
    assert max(per_step) == 2


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_sync_debug_mode_agrees():
    """On a GPU, PyTorch itself reports each synchronisation (set_sync_debug_mode)."""
    import warnings

    model, src = _model().cuda(), _src().cuda()
    marks: list[int] = []
    original = model.next_token_logits

    def step(*args, **kwargs):
        marks.append(len(caught))
        return original(*args, **kwargs)

    model.next_token_logits = step
    torch.cuda.set_sync_debug_mode("warn")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            beam_search(model, src, beam_size=4, max_new_tokens=15)
            marks.append(len(caught))
    finally:
        torch.cuda.set_sync_debug_mode("default")
    per_step = [b - a for a, b in zip(marks, marks[1:], strict=False)]
    assert max(per_step[:-1]) <= 1, per_step
