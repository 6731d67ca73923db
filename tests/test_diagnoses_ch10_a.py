"""aiayn_helpers.course.diagnoses (chapter 10 and appendix A): each slip of chapter 10 and appendix A is named from the
answer's properties, and a right answer (or one that shows no slip) names none.

The chapters' check cells are run with these slips by tests/test_exercises.py (the
wrong-answer table, marked ``exercises``); these tests run the functions alone, in a
second, so that ``make test`` sees them too.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import aiayn_helpers as ah
from aiayn_helpers.course.diagnoses import (
    alibi_bias_slips,
    greedy_slips,
    masking_fraction_slips,
    online_softmax_slips,
    pre_norm_slips,
    state_dict_count_slips,
)


@pytest.mark.parametrize(
    ("answer", "named"),
    [
        (-6 / 16, None),
        (6 / 16, "the bias comes out positive"),
        (-6 / 4, "that of head 0 of 4 heads (heads count from 0), or that of head 1 of 8"),
        (-7 / 16, "the distance is counted as 7"),
        (-1 / 16, "the slope alone is given"),
        (-6 * 2.0**-16, "not divided by the number of heads"),
        (-0.38, None),  # no slip gives it: the check's hint instead
        (float("nan"), None),
        ("-0.375", None),
    ],
)
def test_alibi_bias_slips(answer, named):
    found = " and ".join(alibi_bias_slips(answer, num_heads=4, head=1, query=10, key=4))
    assert (named in found) if named else not found


def online_halves():
    """Scores s, values v and the online-softmax state (max, ell, output) of each half."""
    rng = np.random.default_rng(7)
    s, v = 5 * rng.standard_normal(10), rng.standard_normal((10, 4))

    def state(s, v):
        m = s.max()
        return m, np.exp(s - m).sum(), np.exp(s - m) @ v

    return s, v, state(s[:5], v[:5]), state(s[5:], v[5:])


def test_online_softmax_slips():
    s, v, half_a, half_b = online_halves()
    (m_a, l_a, o_a), (m_b, l_b, o_b) = half_a, half_b
    m = max(m_a, m_b)
    a, b = math.exp(m_a - m), math.exp(m_b - m)
    right = (a * o_a + b * o_b) / (a * l_a + b * l_b)
    np.testing.assert_allclose(right, torch.softmax(torch.from_numpy(s), 0).numpy() @ v)
    assert online_softmax_slips(right, half_a, half_b) == []
    assert "not first rescaled" in online_softmax_slips((o_a + o_b) / (l_a + l_b), half_a, half_b)[0]
    assert "not divided by the merged ell" in online_softmax_slips(a * o_a + b * o_b, half_a, half_b)[0]
    assert "averaged" in online_softmax_slips((o_a / l_a + o_b / l_b) / 2, half_a, half_b)[0]
    assert online_softmax_slips(np.ones(4), half_a, half_b) == []
    assert online_softmax_slips(right[None], half_a, half_b) == []  # a shape the check names


@pytest.mark.parametrize(
    ("fractions", "named"),
    [
        ({"mask": 0.12, "random": 0.015, "unchanged": 0.015, "predicted": 0.15}, None),
        ({"mask": 0.8, "random": 0.1, "unchanged": 0.1, "predicted": 0.15}, "shares of all tokens"),
        ({"mask": 12, "random": 1.5, "unchanged": 1.5, "predicted": 15}, "in percent"),
        ({"mask": 0.15, "random": 0.0, "unchanged": 0.0, "predicted": 0.15}, "every chosen token becomes"),
        ({"mask": 0.12, "random": 0.015, "unchanged": 0.015, "predicted": 1.0}, "on every token"),
        ({"mask": 0.12, "random": 0.015, "unchanged": 0.015, "predicted": 0.12}, "only the [MASK]ed"),
        ({"mask": 0.12, "random": 0.015, "unchanged": 0.865, "predicted": 0.15}, "never chosen"),
        ({"mask": 0.1206, "random": 0.0147, "unchanged": 0.0149, "predicted": 0.1502}, "measured on a batch"),
        ({"mask": 0.12, "random": 0.015, "predicted": 0.15}, None),  # a key missing: the check says so
    ],
)
def test_masking_fraction_slips(fractions, named):
    found = " and ".join(masking_fraction_slips(fractions))
    assert (named in found) if named else not found


@pytest.fixture(scope="module")
def reference():
    torch.manual_seed(0)
    model = ah.Transformer(20, 24, d_model=16, num_heads=4, num_layers=2, d_ff=32, dropout=0.0)
    return model.double().eval()


def test_state_dict_count_slips(reference):
    params = {name: t.detach().numpy() for name, t in reference.state_dict().items()}
    total = sum(a.size for a in params.values())
    assert state_dict_count_slips((total, 6), params, reference) == []
    assert "arrays of params" in state_dict_count_slips((len(params), 6), params, reference)[0]
    assert "cross-attention" in state_dict_count_slips((total, 4), params, reference)[0]
    assert "8 per module" in state_dict_count_slips((total, 48), params, reference)[0]
    assert "N = 6" in state_dict_count_slips((total, 18), params, reference)[0]


def test_greedy_slips(reference):
    src = torch.tensor([[5, 11, 3, 17, 2, 9, 0], [4, 8, 15, 16, 1, 0, 0]])
    out = torch.ones(2, 1, dtype=torch.long)
    with torch.no_grad():
        for _ in range(4):
            out = torch.cat([out, reference(src, out)[:, -1].argmax(-1, keepdim=True)], 1)
    assert greedy_slips(out.numpy(), reference, src.numpy(), steps=4) == []
    assert "start token 1 is left out" in greedy_slips(out[:, 1:].numpy(), reference, src.numpy(), 4)[0]
    other = out.clone()
    other[:, 0] = 0
    assert "do not start with token 1" in greedy_slips(other.numpy(), reference, src.numpy(), 4)[0]


def test_pre_norm_slips():
    torch.manual_seed(0)
    layer = ah.EncoderLayer(16, 4, 32, dropout=0.0, norm_first=True).double().eval()
    with torch.no_grad():
        for norm in (layer.norm1, layer.norm2):  # weights and biases that show
            norm.weight.uniform_(0.5, 1.5)
            norm.bias.uniform_(-0.5, 0.5)
    x = torch.randn(2, 5, 16, dtype=torch.float64)
    mask = torch.tensor([[True] * 5, [True] * 3 + [False] * 2])[:, None, None, :]
    with torch.no_grad():
        right = layer(x, mask)
        post = layer.norm1(x + layer.self_attn(x, x, x, mask))
        post = layer.norm2(post + layer.ff(post))
        swapped = x + layer.self_attn(*(layer.norm2(x),) * 3, mask)
        swapped = swapped + layer.ff(layer.norm1(swapped))
    assert pre_norm_slips(right.numpy(), layer, x.numpy(), mask) == []
    assert pre_norm_slips(post.numpy(), layer, x.numpy(), mask) == [
        "the layer is post-norm, LayerNorm(x + Sublayer(x)), the paper's order"
    ]
    assert "swapped" in pre_norm_slips(swapped.numpy(), layer, x.numpy(), mask)[0]
    assert pre_norm_slips(2 * right.numpy(), layer, x.numpy(), mask) == []
