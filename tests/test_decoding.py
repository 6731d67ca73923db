"""Greedy decoding and beam search (aiayn_helpers.decoding)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import aiayn_helpers as ah
from aiayn_helpers.decoding import beam_search, greedy_decode, length_penalty_gnmt, score_hypotheses

PAD, BOS, EOS = 0, 1, 2


# models this small run fastest on one thread, and suffer least on a busy machine
pytestmark = pytest.mark.usefixtures("one_thread")


def random_model(seed: int, vocab: int = 9) -> ah.Transformer:
    """A small untrained model, in float64, nudged to emit <eos> now and then."""
    torch.manual_seed(seed)
    model = ah.Transformer(vocab, vocab, d_model=16, num_heads=2, num_layers=2, d_ff=32, dropout=0.0).double()
    with torch.no_grad():
        model.generator.weight[EOS] += 0.3 * model.generator.weight[4:].mean(0)
    return model


def random_src(seed: int, batch: int = 8, length: int = 6, vocab: int = 9) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, vocab, (batch, length), generator=g)
    src[3, 4:] = PAD  # two padded sentences
    src[5, 2:] = PAD
    return src


@pytest.mark.parametrize("seed", range(4))
def test_beam_size_one_is_greedy(seed):
    model, src = random_model(seed), random_src(seed)
    assert beam_search(model, src, beam_size=1, max_new_tokens=12) == greedy_decode(model, src, max_new_tokens=12)
    assert beam_search(model, src, beam_size=1, max_new_tokens=12, length_penalty=0.0) == greedy_decode(
        model, src, max_new_tokens=12
    )


def test_returned_scores_are_the_model_scores():
    model, src = random_model(1), random_src(1)
    hyps, scores = beam_search(model, src, beam_size=3, max_new_tokens=12, return_scores=True)
    torch.testing.assert_close(
        torch.tensor(score_hypotheses(model, src, hyps, max_new_tokens=12)), torch.tensor(scores), rtol=0, atol=1e-9
    )


def test_beam_scores_at_least_greedy_on_average():
    """Beam search is a heuristic: the greedy path can fall out of the beam, so a beam
    hypothesis may score below greedy's for an odd sentence. Over many sentences it wins."""
    wins, total, gap = 0, 0, 0.0
    for seed in range(8):
        model, src = random_model(seed), random_src(seed)
        beam = score_hypotheses(model, src, beam_search(model, src, beam_size=4, max_new_tokens=12), max_new_tokens=12)
        greedy = score_hypotheses(model, src, greedy_decode(model, src, max_new_tokens=12), max_new_tokens=12)
        wins += sum(b >= g - 1e-9 for b, g in zip(beam, greedy, strict=True))
        total += len(beam)
        gap += sum(beam) - sum(greedy)
    assert gap > 0
    assert wins >= 0.9 * total


def test_stops_at_eos_and_respects_max_len():
    model, src = random_model(2), random_src(2)
    for hyps in (greedy_decode(model, src, max_new_tokens=7), beam_search(model, src, max_new_tokens=7)):
        assert all(len(h) <= 7 for h in hyps)
        assert all(EOS not in h and BOS not in h and PAD not in h for h in hyps)
    # A model whose generator always prefers <eos> stops at once: empty hypotheses.
    with torch.no_grad():
        model.generator.weight.zero_()
        model.generator.weight[EOS] = 1.0
        model.decoder.layers[-1].norm3.bias.fill_(1.0)  # positive features -> <eos> wins
    assert greedy_decode(model, src, max_new_tokens=7) == [[] for _ in range(len(src))]
    assert beam_search(model, src, max_new_tokens=7) == [[] for _ in range(len(src))]


def test_default_max_len_is_source_length_plus_50():
    model = random_model(0)
    with torch.no_grad():  # every logit is d_model except <eos>'s, -d_model: runs to the limit
        model.generator.weight.fill_(1.0)
        model.generator.weight[EOS] = -1.0
        model.decoder.layers[-1].norm3.bias.fill_(1.0)
    src = torch.tensor([[4, 5, 6, 0, 0], [4, 5, 6, 7, 8]])
    lens = [len(h) for h in greedy_decode(model, src)]
    assert lens == [53, 55]
    assert [len(h) for h in beam_search(model, src, beam_size=2)] == [53, 55]


@pytest.mark.parametrize("decode", ["greedy", "beam"])
def test_batched_equals_one_by_one(decode):
    model, src = random_model(3), random_src(3)
    run = (
        (lambda s: greedy_decode(model, s, max_new_tokens=12))
        if decode == "greedy"
        else (lambda s: beam_search(model, s, beam_size=3, max_new_tokens=12))
    )
    batched = run(src)
    single = [run(src[i : i + 1, : int((src[i] != PAD).sum())])[0] for i in range(len(src))]
    assert batched == single


def test_eval_mode_no_grad_and_mode_restored():
    model, src = random_model(0), random_src(0)
    model.train()
    calls = []
    for module in (model.encoder, model.decoder):
        module.register_forward_hook(lambda m, i, o: calls.append((m.training, torch.is_grad_enabled())))
    beam_search(model, src, max_new_tokens=3)
    greedy_decode(model, src, max_new_tokens=3)
    assert model.training
    assert calls and all(c == (False, False) for c in calls)


def test_encodes_once():
    model, src = random_model(0), random_src(0)
    counter = {"encode": 0}
    original = model.encode

    def counting_encode(s):
        counter["encode"] += 1
        return original(s)

    model.encode = counting_encode
    beam_search(model, src, max_new_tokens=6)
    greedy_decode(model, src, max_new_tokens=6)
    assert counter["encode"] == 2


def test_length_penalty_values():
    assert float(length_penalty_gnmt(1, 0.6)) == 1.0
    torch.testing.assert_close(length_penalty_gnmt(7, 0.6), torch.tensor(2.0**0.6, dtype=torch.float64))
    assert float(length_penalty_gnmt(30, 0.0)) == 1.0


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(beam_size=0), "beam_size"),
        (dict(beam_size=7), "too large"),
        (dict(max_new_tokens=0), "max_new_tokens"),
        (dict(length_penalty=-0.1), "length_penalty"),
        (dict(bos_id=0), "pad_id"),
        (dict(eos_id=1), "differ"),
        (dict(eos_id=9), "eos_id"),
    ],
)
def test_beam_search_validates(kwargs, match):
    model, src = random_model(0), random_src(0)
    with pytest.raises(ValueError, match=match):
        beam_search(model, src, **kwargs)


def test_inputs_validated():
    model = random_model(0)
    with pytest.raises(ValueError, match="src"):
        greedy_decode(model, torch.randn(2, 3), max_new_tokens=3)
    with pytest.raises(ValueError, match="src"):
        greedy_decode(model, torch.tensor([[4, 99]]), max_new_tokens=3)
    with pytest.raises(ValueError, match="model"):
        greedy_decode(torch.nn.Linear(2, 2), torch.tensor([[4, 5]]), max_new_tokens=3)
    with pytest.raises(ValueError, match="one hypothesis per"):
        score_hypotheses(model, torch.tensor([[4, 5]]), [[4], [5]])


def copy_batch(n: int, g: torch.Generator, vocab: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Source: random symbols + <eos>; target: <bos> + the same symbols + <eos>."""
    lengths = torch.randint(2, 6, (n,), generator=g)
    src = torch.zeros(n, 6, dtype=torch.long)
    tgt = torch.zeros(n, 7, dtype=torch.long)
    for i, length in enumerate(lengths.tolist()):
        s = torch.randint(4, vocab, (length,), generator=g)
        src[i, :length], src[i, length] = s, EOS
        tgt[i, 0], tgt[i, 1 : length + 1], tgt[i, length + 1] = BOS, s, EOS
    return src, tgt


def train_copy_model(seed: int, vocab: int = 10, target: float = 0.01, max_steps: int = 2000) -> tuple:
    """Train a small model on the copy task until the loss of 20 steps in a row is below ``target``.

    Training to a loss target, not for a fixed number of steps, is what makes this portable: another
    kernel set (AVX2, AVX-512, ARM) or thread count sums in another order, the trajectory drifts, and
    a fixed step count lands on a different model. The target is reached on every kernel set."""
    torch.manual_seed(seed)
    model = ah.Transformer(vocab, vocab, d_model=32, num_heads=4, num_layers=2, d_ff=64, dropout=0.0)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    g = torch.Generator().manual_seed(seed)
    recent: list[float] = []
    for step in range(1, max_steps + 1):
        src, tgt = copy_batch(64, g, vocab)
        logits = model(src, tgt[:, :-1])  # teacher forcing: input shifted right
        loss = F.cross_entropy(logits.reshape(-1, vocab), tgt[:, 1:].reshape(-1), ignore_index=PAD)
        opt.zero_grad()
        loss.backward()
        opt.step()
        recent = (recent + [loss.item()])[-20:]
        if len(recent) == 20 and max(recent) < target:
            return model, step
    return model, None


def test_tiny_trained_copy_model_decodes_exactly():
    vocab = 10
    model, steps = train_copy_model(seed=0, vocab=vocab)
    # Steps to the target, measured under ATEN_CPU_CAPABILITY=default/avx2/avx512, 1, 2 and 4 threads,
    # 18 runs (1 thread: seeds 0-3 on each kernel set; 2 and 4 threads: seed 0): 375 steps at most
    # (avx2, 2 threads); 2,000 allowed.
    assert steps is not None, "the copy task did not reach a loss of 0.01 in 2,000 steps"
    src, tgt = copy_batch(40, torch.Generator().manual_seed(1000), vocab)
    expected = [[t for t in row if t > EOS] for row in tgt.tolist()]
    greedy = greedy_decode(model, src, max_new_tokens=10)
    beam = beam_search(model, src, beam_size=4, max_new_tokens=10)
    # Exact copies out of 40 unseen sources, same 18 runs: 39 of 40 at worst (default seed 1, avx2 seed 2);
    # 36 required.
    assert sum(h == e for h, e in zip(greedy, expected, strict=True)) >= 36
    assert sum(h == e for h, e in zip(beam, expected, strict=True)) >= 36


def test_decoding_does_not_import_data():
    """Decoding needs token ids and a model, not the data pipeline (issue #26).

    The package's ``__init__`` imports everything, so the module is loaded in a fresh
    interpreter under a bare package object whose ``__init__`` never runs; whatever
    ``aiayn_helpers.decoding`` imports, directly or not, then shows in ``sys.modules``.
    """
    import ast
    import subprocess
    import sys
    from pathlib import Path

    package = Path(ah.__file__).parent
    code = (
        "import sys, types\n"
        "pkg = types.ModuleType('aiayn_helpers')\n"
        f"pkg.__path__ = [{str(package)!r}]\n"
        "sys.modules['aiayn_helpers'] = pkg\n"
        "import aiayn_helpers.decoding\n"
        "print(sorted(m for m in sys.modules if m.startswith('aiayn_helpers')))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    out = run.stdout
    loaded = ast.literal_eval(out)  # a printed list of module names
    assert "aiayn_helpers.decoding" in loaded
    assert "aiayn_helpers.data" not in loaded, loaded
