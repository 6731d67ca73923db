"""Every diagnosis of aiayn_helpers.course.diagnoses runs: each is called on a wrong answer that shows one of its
slips, and names it.

A chapter's check calls its diagnosis only when the answer is wrong, and takes a diagnosis that raises for one
that found nothing (it may be handed a student's odd objects): a bug of ours in a diagnosis (an import that points
nowhere, a misspelt name) then turns the named slip into the check's hint, silently. The chapters' wrong-answer
table (tests/test_exercises.py, marked ``exercises``) runs every slip through the notebooks, in minutes, in
``make test-portable`` only; this file calls each diagnosis directly, with small objects, in a few seconds, in
``make test`` and ``make test-quick``. tests/test_diagnoses_ch10_a.py goes through chapter 10's and appendix A's
slips one by one.
"""

from __future__ import annotations

import ast
import copy
import importlib
import pkgutil
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from test_diagnoses_ch10_a import online_halves

import aiayn_helpers as ah
import aiayn_helpers.course.diagnoses as diagnoses
from aiayn_helpers.course.answer_keys import Reference, reference

PACKAGE = Path(ah.__file__).parent


def _modules(package) -> list[str]:
    return [info.name for info in pkgutil.walk_packages(package.__path__, package.__name__ + ".")]


@pytest.mark.parametrize("name", _modules(diagnoses))
def test_every_diagnosis_module_imports(name):
    importlib.import_module(name)


def _imports_in_functions(path: Path):
    """(line, module, names) of each ``from X import ...`` inside a function of ``path``: such an import runs
    only when the function is called, so an import that points nowhere shows only then."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for function in ast.walk(tree):
        if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            for node in ast.walk(function):
                if isinstance(node, ast.ImportFrom):
                    yield node.lineno, node.level, node.module, [a.name for a in node.names]
                elif isinstance(node, ast.Import):
                    for alias in node.names:
                        yield node.lineno, 0, alias.name, []


def test_every_import_inside_a_function_of_the_package_resolves():
    """The bug this file was written for: ``from .model import Transformer`` inside model_count_slips, after the
    diagnoses moved into a package of their own (it had to be ``..model``). Every import of the package's own
    modules inside a function of aiayn_helpers is resolved here, relative ones against the module's package."""
    broken = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        module_name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        package = module_name if parts[-1] == "__init__" else module_name.rpartition(".")[0]
        for line, level, module, names in _imports_in_functions(path):
            target = "." * level + (module or "")
            if level == 0 and target.split(".")[0] != "aiayn_helpers":
                continue  # another package's: whether it is installed is requirements.txt's business
            where = f"{path.relative_to(PACKAGE.parent)}:{line}"
            try:
                imported = importlib.import_module(target, package if level else None)
            except ImportError as error:
                broken.append(f"{where}: {target}: {error}")
                continue
            for name in names:
                if name != "*" and not hasattr(imported, name):
                    try:
                        importlib.import_module(f"{imported.__name__}.{name}")
                    except ImportError:
                        broken.append(f"{where}: {target} has no {name}")
    assert not broken, "\n".join(broken)


# ------------------------------------------------------------------ the wrong answers, one or more a diagnosis


def _double(module):
    torch.manual_seed(0)
    return module.double().eval()


def _model_count():
    model = _double(ah.Transformer(40, 40, d_model=16, num_heads=2, num_layers=1, d_ff=32, dropout=0.0))
    answer = ah.count_parameters(model)  # share_embeddings=False, the constructor's default
    kwargs = dict(vocab=40, d_model=16, d_ff=64, num_layers=1)
    return (answer, {"big": model}), kwargs


def _zero_score():
    h = torch.randn(2, 3, 4)
    alpha = torch.randn(2, 3).softmax(0)  # over the batch
    return (alpha, h.sum(1), h), {}


def _alignment_count():
    model = SimpleNamespace(
        W_a=torch.nn.Linear(4, 3, bias=False), U_a=torch.nn.Linear(6, 3), v_a=torch.nn.Linear(3, 1, bias=False)
    )
    weights = 4 * 3 + 6 * 3 + 3
    return (weights, 1000, model), {}


def _general_score():
    h_t, h_bar = torch.randn(2, 3), torch.randn(2, 5, 4)
    W = torch.randn(4, 3)  # noqa: N806  (source size, decoder size)
    return (W, torch.randn(2, 5), h_t, h_bar), {}


class _Attentive:
    """A chapter-1 model: ``greedy(src, return_weights=True)`` gives (tokens, weights (n, T_y, T_x))."""

    def greedy(self, src, return_weights=False):
        weights = torch.tensor([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8], [0.1, 0.1, 0.8]]).softmax(-1)
        return None, weights.expand(src.shape[0], 3, 3)


def _make_batch(n, length, generator):
    return (torch.randint(3, 10, (n, length), generator=generator),)


def _sharpness_mean():
    return ({5: 1 / 5}, {5: 2 / 5}, _Attentive(), _make_batch), {"n": 4}


def _sharpness_axis():
    weights = _Attentive().greedy(torch.zeros(4, 3))[1].double()
    columns = weights.max(dim=1).values.mean().item()
    return ({3: columns}, {3: 0.9}, _Attentive(), _make_batch), {"n": 4}


def _temperature():
    values = torch.tensor([1.0, 2.0, 6.0])
    return ({0.01: 3.0, 100.0: 6.0}, values, 0.01, 100.0), {}


def _multi_head():
    from aiayn_helpers.course.diagnoses.ch03_04 import multi_head_by_hand

    module = _double(ah.MultiHeadAttention(8, 2))
    x = torch.randn(1, 3, 8, dtype=torch.float64)
    with torch.no_grad():
        answer = multi_head_by_hand(module, x, {"scale"})
    return (module, x, answer), {}


def _head_swap():
    original = _double(ah.MultiHeadAttention(8, 4))
    swapped = copy.deepcopy(original)
    order = [2, 1, 0, 3]
    with torch.no_grad():
        for name in ("w_q", "w_k", "w_v"):
            weight = getattr(original, name).weight
            getattr(swapped, name).weight.copy_(torch.cat([weight.chunk(4, 0)[i] for i in order], 0))
        swapped.w_o.weight.copy_(torch.cat([original.w_o.weight.chunk(4, 1)[i] for i in order], 1))
    return (swapped, original, order), {}  # the biases stay where they were


def _table(positions, d_model):
    angles = torch.arange(*positions, dtype=torch.float64)[:, None] * 10000.0 ** (
        -torch.arange(0, d_model, 2, dtype=torch.float64) / d_model
    )
    return torch.stack([angles.sin(), angles.cos()], -1).reshape(len(angles), d_model)


def _shift_back():
    length, k, d_model = 20, 5, 8
    return (_table((-k, length - 2 * k), d_model), torch.eye(d_model, dtype=torch.float64)), dict(length=length, k=k)


def _projection():
    W_q = torch.randn(4, 4)  # noqa: N806
    return (W_q, W_q, torch.randn(4, 4)), {}


def _encoder_layer():
    return _double(ah.EncoderLayer(16, 2, 32, dropout=0.0))


def _parameter_count():
    layer = _encoder_layer()
    return (ah.count_parameters(layer), layer, 6), {}


def _permutation():
    encoder = _double(ah.Encoder(1, 16, 2, 32, dropout=0.0))
    x = torch.randn(2, 5, 16, dtype=torch.float64)
    with torch.no_grad():
        answer = encoder(x)  # the input left in its order
    return (encoder, x, torch.tensor([4, 3, 2, 1, 0]), answer), {}


def _reference(label, value):
    made = Reference(reference(label, value))
    made.label = label
    return made


def _shared_layer():
    one = ah.count_parameters(_encoder_layer())
    return (one, one, True, _reference("ch05-ex4", one), _reference("ch05-ex4", 6 * one)), {}


def _source_change():
    src = torch.tensor([[5, 6, 0], [7, 8, 9]])
    changed = src.clone()
    changed[1, 0] = 4  # sentence 1, not 0
    return (changed, src, torch.tensor(0.5)), dict(pad=0, length=4)


def _target_padding():
    torch.manual_seed(0)
    model = _double(ah.Transformer(12, 12, d_model=16, num_heads=2, num_layers=1, d_ff=32, dropout=0.0))
    src = torch.tensor([[5, 6, 7, 2], [4, 8, 2, 0]])
    tgt_in, tgt_out = torch.tensor([[1, 5, 6], [1, 9, 3]]), torch.tensor([[5, 6, 2], [9, 3, 2]])
    pads = torch.zeros(2, 2, dtype=torch.long)
    with torch.no_grad():
        logits = model(src, tgt_in)
        padded = model(src, torch.cat([tgt_in, pads], 1))
    loss = F.cross_entropy(padded.reshape(-1, 12), torch.cat([tgt_out, pads], 1).reshape(-1))  # counts the pads
    return (model, src, tgt_in, tgt_out, logits, padded, loss), dict(pad=0)


def _padded_batch():
    pairs = [([1, 2], [3]), ([1], [2, 3, 4]), ([5, 6, 7], [8]), ([1], [2])]
    batches = [[0, 1], [2, 3]]
    largest = max(sum(len(pairs[i][side]) for i in b) for b in batches for side in (0, 1))  # before padding
    return ({0, 1, 2, 3}, largest, batches, pairs), {}


def _online_softmax():
    _, _, half_a, half_b = online_halves()
    (_, l_a, o_a), (_, l_b, o_b) = half_a, half_b
    return ((o_a + o_b) / (l_a + l_b), half_a, half_b), {}  # not rescaled to the larger maximum


def _state_dict_count():
    model = _double(ah.Transformer(20, 24, d_model=16, num_heads=4, num_layers=2, d_ff=32, dropout=0.0))
    params = {name: t.detach().numpy() for name, t in model.state_dict().items()}
    return ((len(params), 6), params, model), {}


def _causality():
    tgt = np.array([[1, 5, 6, 7]])
    probs = np.full((1, 4, 10), 0.1)
    return (tgt, tgt, probs, probs), {}


def _greedy():
    model = _double(ah.Transformer(20, 24, d_model=16, num_heads=4, num_layers=2, d_ff=32, dropout=0.0))
    src = torch.tensor([[5, 11, 3, 17, 2, 9, 0], [4, 8, 15, 16, 1, 0, 0]])
    out = torch.ones(2, 1, dtype=torch.long)
    with torch.no_grad():
        for _ in range(4):
            out = torch.cat([out, model(src, out)[:, -1].argmax(-1, keepdim=True)], 1)
    return (out[:, 1:].numpy(), model, src.numpy(), 4), {}


def _pre_norm():
    layer = _double(ah.EncoderLayer(16, 4, 32, dropout=0.0, norm_first=True))
    with torch.no_grad():
        for norm in (layer.norm1, layer.norm2):
            norm.weight.uniform_(0.5, 1.5)
            norm.bias.uniform_(-0.5, 0.5)
    x = torch.randn(2, 5, 16, dtype=torch.float64)
    mask = torch.tensor([[True] * 5, [True] * 3 + [False] * 2])[:, None, None, :]
    with torch.no_grad():
        post = layer.norm1(x + layer.self_attn(x, x, x, mask))
        post = layer.norm2(post + layer.ff(post))
    return (post.numpy(), layer, x.numpy(), mask), {}


# (diagnosis, the wrong answer's arguments, words the slip it names contains)
CASES = [
    ("model_count_slips", _model_count, "the vocabulary matrices are not shared"),
    ("model_count_slips", _model_count, "d_ff is 32, not Table 3's 64"),
    ("zero_score_slips", _zero_score, "the softmax is taken over the batch"),
    ("zero_score_slips", _zero_score, "plain sum of the annotations"),
    ("alignment_count_slips", _alignment_count, "the bias of U_a is left out"),
    ("general_score_slips", _general_score, "W_rect is stored as (source size, decoder size)"),
    ("sharpness_slips", _sharpness_mean, "a row's mean weight"),
    ("sharpness_slips", _sharpness_axis, "taken over the target axis"),
    ("temperature_slips", _temperature, "multiplied by tau"),
    ("multi_head_slips", _multi_head, "the scores are not divided by sqrt(d_k)"),
    ("head_swap_slips", _head_swap, "the biases of w_q, w_k and w_v are not permuted"),
    ("shift_back_slips", _shift_back, "the table's first rows are mapped"),
    ("projection_slips", _projection, "W_q and W_k are the same matrix"),
    ("projection_slips", _projection, "W is not block-diagonal"),
    ("fit_residual_slips", lambda: (({6: 1e-7},), {}), "the table is float32"),
    (
        "t2t_frequency_slips",
        lambda: ((10000.0 ** (-torch.arange(0, 128, 2, dtype=torch.float64) / 128), 128), {}),
        "the paper's, 10000^(-2/128)",
    ),
    ("parameter_count_slips", _parameter_count, "one layer is counted, not the stack of N"),
    ("permutation_slips", _permutation, "the output is in the input's original order"),
    ("final_norm_slips", lambda: ((1.0, 1.0), {}), "both stacks end in a LayerNorm"),
    ("shared_layer_slips", _shared_layer, "holds one layer object six times"),
    ("mask_convention_slips", lambda: ((~torch.ones(4, 4, dtype=torch.bool).tril(), 4), {}), "the mask is inverted"),
    ("source_change_slips", _source_change, "a token of another sentence is changed"),
    ("source_change_slips", _source_change, "change is one number"),
    ("target_padding_slips", _target_padding, "the pad positions are counted in the loss"),
    (
        "beam_sweep_slips",
        lambda: (({1: (0.01, -5.0), 4: (0.02, -600.0)}, 0.6, -6.0), {}),
        "compared with another sentence's reference",
    ),
    ("beam_sweep_slips", lambda: (({1: (0.01, -5.0), 4: (0.02, -600.0)}, 0.6, -6.0), {}), "summed over the 100"),
    ("padded_batch_slips", _padded_batch, "used is a set"),
    ("padded_batch_slips", _padded_batch, "counts the tokens before padding"),
    ("alibi_bias_slips", lambda: ((6 / 16,), dict(num_heads=4, head=1, query=10, key=4)), "comes out positive"),
    ("online_softmax_slips", _online_softmax, "not first rescaled"),
    (
        "masking_fraction_slips",
        lambda: (({"mask": 12, "random": 1.5, "unchanged": 1.5, "predicted": 15},), {}),
        "in percent",
    ),
    ("state_dict_count_slips", _state_dict_count, "the arrays of params are counted"),
    ("causality_slips", _causality, "tgt_changed is tgt itself"),
    ("greedy_slips", _greedy, "the start token 1 is left out"),
    ("pre_norm_slips", _pre_norm, "the layer is post-norm"),
]


@pytest.mark.parametrize(("name", "wrong", "named"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_each_diagnosis_names_a_slip_of_a_wrong_answer(name, wrong, named):
    args, kwargs = wrong()
    found = getattr(diagnoses, name)(*args, **kwargs)  # raises on a bug of ours: the check would hide it
    found = [found] if isinstance(found, str) else list(found)
    assert any(named in text for text in found), (name, found)


def test_every_diagnosis_is_called():
    assert sorted(diagnoses.__all__) == sorted({name for name, _, _ in CASES})


def test_a_right_answer_names_nothing():
    assert diagnoses.final_norm_slips(3.0, 1.0) == []
    assert diagnoses.mask_convention_slips(torch.ones(4, 4, dtype=torch.bool).tril(), 4) == []
    assert diagnoses.fit_residual_slips({6: 1e-15}) == []
