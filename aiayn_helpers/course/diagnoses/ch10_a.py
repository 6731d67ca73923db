"""Chapter 10 and appendix A: ALiBi, online softmax, BERT's masking, the NumPy model.

As everywhere in :mod:`aiayn_helpers.course.diagnoses`, each function is handed to
:func:`aiayn_helpers.course.exercises.check` as ``diagnose=``, is called only when
the answer is wrong, and returns the slips the answer shows, as phrases that complete
"This is what you get when ...". A slip is named only when the answer has the property
it gives (a positive bias, an output proportional to the right one, a count equal to
the number of arrays, an output equal to the layer computed in another order); an
answer that shows none gets the check's hint instead.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-12)


def _array(value: Any) -> np.ndarray | None:
    """``value`` as a float64 array, or None if it is not numbers."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    return array if np.isfinite(array).all() else None


def _same(got: np.ndarray, want: Any, tol: float = 1e-8) -> bool:
    want = np.asarray(want, dtype=np.float64)
    return got.shape == want.shape and np.allclose(got, want, rtol=tol, atol=tol)


# ------------------------------------------------------------------ chapter 10


def alibi_bias_slips(
    answer: Any, num_heads: int, head: int, query: int, key: int
) -> list[str]:
    """Exercise 10.1: what the bias ``answer`` shows, from its sign and its size.

    The right bias is ``-m * (query - key)`` with head ``head``'s slope
    ``m = 2^(-8 (head + 1) / num_heads)``; the size of ``answer`` divided by the
    distance is the slope it used, and a slope of the sequence names the head.
    """
    try:
        value = float(answer)
    except (TypeError, ValueError):
        return []
    if not math.isfinite(value) or value == 0:
        return []
    found = []
    if value > 0:
        found.append(
            "the bias comes out positive: ALiBi subtracts the slope times the "
            "distance i - j, a penalty on the keys further back"
        )
    size, distance = abs(value), query - key
    slope = 2 ** (-8 * (head + 1) / num_heads)
    if _close(size, slope * distance):
        return found
    for counted in (distance - 1, distance + 1):
        if _close(size, slope * counted):
            return [*found, f"the distance is counted as {counted}, not as i - j"]
    if _close(size, slope):
        return [*found, "the slope alone is given, not times the distance i - j"]
    if _close(size, distance):
        return [*found, "the distance alone is given, not times the head's slope"]
    exponent = -math.log2(size / distance)
    if not _close(exponent, round(exponent)):
        return found
    k = round(exponent)
    if k == 8 * (head + 1):
        return [
            *found,
            f"the slope is 2^-{k}: the exponent -8 (i + 1) is not divided by the "
            "number of heads",
        ]
    whose = [
        f"that of head {i} of {num_heads} heads (heads count from 0)"
        for i in range(num_heads)
        if i != head and _close(k * num_heads / 8 - 1, i)
    ]
    whose += [
        f"that of head {head} of {n} heads"
        for n in (2 * num_heads, num_heads // 2)
        if n > head and _close(k * n / 8 - 1, head)
    ]
    if whose:
        found.append(f"the slope used is 2^-{k}, " + ", or ".join(whose))
    return found


def online_softmax_slips(
    answer: Any,
    half_a: tuple[float, float, Any],
    half_b: tuple[float, float, Any],
) -> list[str]:
    """Exercise 10.2: how ``answer`` merged the halves' states ``(m, ell, o)``.

    Each way of merging that learners write is computed from the two states and
    compared with the answer; an answer proportional to the right output is a
    weighted sum that was not divided by the merged ``ell``.
    """
    got = _array(answer)
    (m_a, l_a, o_a), (m_b, l_b, o_b) = half_a, half_b
    o_a, o_b = np.asarray(o_a, dtype=np.float64), np.asarray(o_b, dtype=np.float64)
    if got is None or got.shape != o_a.shape:
        return []
    m = max(m_a, m_b)
    a, b = math.exp(m_a - m), math.exp(m_b - m)
    inv_a, inv_b = math.exp(m - m_a), math.exp(m - m_b)
    right = (a * o_a + b * o_b) / (a * l_a + b * l_b)
    top = "a" if m_a >= m_b else "b"
    merges = [
        (
            "the halves' ell and o are added as they are, not first rescaled to the "
            "common maximum m",
            (o_a + o_b) / (l_a + l_b),
        ),
        (
            "each half is multiplied by exp(m - m_half) instead of exp(m_half - m)",
            (inv_a * o_a + inv_b * o_b) / (inv_a * l_a + inv_b * l_b),
        ),
        ("the o are rescaled but the ell are not", (a * o_a + b * o_b) / (l_a + l_b)),
        ("the ell are rescaled but the o are not", (o_a + o_b) / (a * l_a + b * l_b)),
        (
            "the halves' outputs o / ell are averaged with equal weights, though "
            "each half counts by its share of the softmax's denominator",
            (o_a / l_a + o_b / l_b) / 2,
        ),
        ("the halves' outputs o / ell are added", o_a / l_a + o_b / l_b),
        (
            f"only half {top}, the one with the larger maximum, is kept",
            o_a / l_a if top == "a" else o_b / l_b,
        ),
    ]
    for text, value in merges:
        if _same(got, value):
            return [text]
    scale = float(got.ravel() @ right.ravel() / (right.ravel() @ right.ravel()))
    if not _close(scale, 1.0) and _same(got, scale * right):
        return [
            "the merged o is not divided by the merged ell (your output is the "
            f"attention output times {scale:.4g})"
        ]
    return []


_FATES = ("mask", "random", "unchanged", "predicted")


def masking_fraction_slips(
    answer: Any, p: float = 0.15, masked: float = 0.8, random: float = 0.1
) -> list[str]:
    """Exercise 10.3: what the four fractions of ``answer`` show.

    BERT chooses a share ``p`` of the tokens, all of them predicted; of those,
    ``masked`` become [MASK], ``random`` a random token, the rest stay unchanged.
    """
    if not isinstance(answer, Mapping) or set(answer) != set(_FATES):
        return []
    try:
        got = {key: float(answer[key]) for key in _FATES}
    except (TypeError, ValueError):
        return []
    if not all(math.isfinite(v) for v in got.values()):
        return []
    kept = 1 - masked - random
    right = {"mask": p * masked, "random": p * random, "unchanged": p * kept}
    right["predicted"] = p
    if all(_close(got[k], right[k]) for k in _FATES):
        return []
    if all(_close(got[k] / 100, right[k]) for k in _FATES):
        return ["the fractions are given in percent, not as fractions of 1"]
    found = []
    shares = {"mask": masked, "random": random, "unchanged": kept}
    if all(_close(got[k], shares[k]) for k in shares):
        found.append(
            "80/10/10 are taken as shares of all tokens, not of the chosen 15%"
        )
    elif _close(got["mask"], p) and got["random"] == 0 == got["unchanged"]:
        found.append(
            "every chosen token becomes [MASK]: BERT leaves 10% of them unchanged "
            "and replaces 10% by a random token"
        )
    elif any(
        _close(got["unchanged"], 1 - p + extra) for extra in (0, right["unchanged"])
    ):
        found.append(
            "the tokens never chosen are counted as unchanged: 'unchanged' is a "
            "chosen token left as it is"
        )
    if _close(got["predicted"], 1.0):
        found.append("the loss is computed on every token, not only on the chosen ones")
    elif _close(got["predicted"], right["mask"]):
        found.append(
            "only the [MASK]ed tokens are counted as predicted: the loss covers every "
            "chosen token, whatever its input became"
        )
    elif _close(got["predicted"], right["mask"] + right["random"]):
        found.append(
            "the unchanged tokens are counted as not predicted: the loss covers every "
            "chosen token, whatever its input became"
        )
    if not found and all(abs(got[k] - right[k]) < 0.005 for k in _FATES):
        found.append(
            "the fractions are measured on a batch: the exercise asks first for the "
            "recipe's exact fractions"
        )
    fates = got["mask"] + got["random"] + got["unchanged"]
    if not found and not _close(fates, got["predicted"]):
        found.append(
            "the fractions of [MASK], random and unchanged tokens do not add up to "
            "the fraction predicted, though every chosen token has one of these fates"
        )
    return found


# ------------------------------------------------------------------ appendix A


def state_dict_count_slips(
    answer: Any, params: Mapping[str, Any], model: Any
) -> list[str]:
    """Exercise A.1: what the counts ``(total, attention modules)`` show.

    ``params`` maps the names of ``model``'s state_dict to arrays.
    """
    try:
        total, modules = (int(v) for v in answer)
    except (TypeError, ValueError):
        return []
    found = []
    sizes = {name: int(np.asarray(a).size) for name, a in params.items()}
    attention = [name for name in sizes if "attn." in name]
    if total == len(sizes):
        found.append("the arrays of params are counted, not the numbers they hold")
    elif total == sum(n for name, n in sizes.items() if not name.endswith("bias")):
        found.append("the biases are left out of the total")
    elif total == sum(sizes[name] for name in attention):
        found.append("only the attention modules' numbers are counted in the total")
    names = [
        n for n, m in model.named_modules() if type(m).__name__.endswith("Attention")
    ]
    cross = sum("cross" in n for n in names)
    layers = len(model.encoder.layers)
    if modules == len(attention):
        per = len(attention) // len(names)
        found.append(
            f"the attention modules' arrays are counted ({per} per module: a weight "
            "and a bias for each of w_q, w_k, w_v and w_o), not the modules"
        )
    elif modules == len(attention) // 2:
        found.append(
            "the attention modules' weight arrays are counted, not the modules"
        )
    elif modules == len(names) - cross:
        found.append("the decoder's cross-attention modules are left out")
    elif modules == sum(sizes[name] for name in attention):
        found.append("the attention modules' numbers are counted, not the modules")
    elif modules == len(names) // layers * 6 != len(names):
        found.append(
            f"the paper's N = 6 layers are counted, not this model's N = {layers}"
        )
    return found


def causality_slips(
    tgt_changed: Any, tgt: np.ndarray, changed: Any, probs: np.ndarray
) -> list[str]:
    """Exercise A.2: what is wrong with the changed targets and their outputs."""
    if isinstance(tgt_changed, np.ndarray) and (
        tgt_changed is tgt or np.shares_memory(tgt_changed, tgt)
    ):
        return [
            "tgt_changed is tgt itself (or a view of it), so changing it changed tgt "
            "too, for every later cell: copy it (tgt.copy()), and run the chapter "
            "again from the cell that builds tgt"
        ]
    found = []
    if isinstance(tgt_changed, np.ndarray) and tgt_changed.shape == tgt.shape:
        moved = sorted({int(c) for c in np.argwhere(tgt_changed != tgt)[:, 1]})
        last = tgt.shape[1] - 1
        if moved and last not in moved:
            where = ", ".join(str(c) for c in moved)
            found.append(
                f"the tokens at position {where} are changed, not the last one"
            )
    got = _array(changed)
    if got is not None and got.shape == probs.shape:
        if np.array_equal(got, probs):
            found.append("changed is computed from tgt, not from tgt_changed")
        elif not np.allclose(got.sum(-1), 1.0):
            found.append(
                "changed holds the logits (decode's output), not the probabilities "
                "(forward's)"
            )
    return found


def greedy_slips(
    answer: Any, model: Any, src: Any, steps: int, bos: int = 1
) -> list[str]:
    """Exercise A.3: what the greedy tokens ``answer`` show, against ``model``'s.

    ``model`` is the reference ``ah.Transformer``; its greedy decoding is computed
    again with the slips learners make and compared with the answer.
    """
    got = _array(answer)
    if got is None or got.ndim != 2:
        return []
    src = torch.as_tensor(np.asarray(src))

    def greedy(position: int = -1, over_positions: bool = False) -> np.ndarray:
        out = torch.full((src.shape[0], 1), bos)
        with torch.no_grad():
            for _ in range(steps):
                logits = model(src, out)
                if over_positions:
                    token = logits.argmax(1)[:, position]
                else:
                    token = logits[:, position].argmax(-1)
                out = torch.cat([out, token[:, None]], dim=1)
        return out.numpy()

    right = greedy()
    if got.shape == (right.shape[0], steps) and _same(got, right[:, 1:]):
        return [f"the start token {bos} is left out of the output"]
    if got.shape != right.shape:
        return []
    found = []
    if not (got[:, 0] == bos).all():
        found.append(f"the targets do not start with token {bos}")
    elif _same(got, greedy(position=0)):
        found.append(
            "each step appends the most probable token at the first position, not "
            "at the last"
        )
    elif _same(got, greedy(over_positions=True)):
        found.append(
            "the argmax is taken over the positions, not over the vocabulary: each "
            "new token is a position's index"
        )
    return found


_PRE_NORM_SLIPS = {
    "post": "the layer is post-norm, LayerNorm(x + Sublayer(x)), the paper's order",
    "post_attn": "the attention sub-layer is post-norm, LayerNorm(x + Attention(x))",
    "post_ff": "the feed-forward sub-layer is post-norm, LayerNorm(h + FFN(h))",
    "norm_residual": "the residual path carries the normalised input, LayerNorm(x) + "
    "Sublayer(LayerNorm(x)), instead of x",
    "ff_reads_x": "the feed-forward sub-layer reads the layer's input x, not the "
    "attention sub-layer's output (or both sub-layers are added to x side by side)",
    "swapped": "norm1 and norm2 are swapped: norm1 belongs to the attention "
    "sub-layer, norm2 to the feed-forward",
    "norm1_twice": "norm1 normalises the input of both sub-layers: the feed-forward "
    "has its own, norm2",
    "norm2_twice": "norm2 normalises the input of both sub-layers: the attention has "
    "its own, norm1",
    "no_mask": "the padding mask is not passed to the attention",
    "final_norm": "the layer's output is normalised once more: a pre-norm layer ends "
    "with the residual addition",
    "no_affine": "the LayerNorms' learned scale and shift (weight and bias) are left "
    "out",
    "std_eps": "the LayerNorms divide by std + eps instead of sqrt(var + eps) (the "
    "appendix's common mistake)",
}


class _StdPlusEps(torch.nn.Module):
    """``norm`` computed as ``(x - mean) / (std + eps)``, the common mistake."""

    def __init__(self, norm: torch.nn.LayerNorm) -> None:
        super().__init__()
        self.norm = norm

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        centred = x - x.mean(-1, keepdim=True)
        scaled = centred / (x.std(-1, unbiased=False, keepdim=True) + self.norm.eps)
        return self.norm.weight * scaled + self.norm.bias


def _pre_norm_layer(layer: Any, x: torch.Tensor, mask: Any, slip: str) -> torch.Tensor:
    """``layer(x, mask)`` of a pre-norm ``ah.EncoderLayer``, with ``slip`` made."""
    norms = {
        "swapped": (layer.norm2, layer.norm1),
        "norm1_twice": (layer.norm1, layer.norm1),
        "norm2_twice": (layer.norm2, layer.norm2),
    }
    n1, n2 = norms.get(slip, (layer.norm1, layer.norm2))
    if slip == "no_affine":  # standardised only: no weight, no bias
        n1 = n2 = torch.nn.LayerNorm(x.shape[-1], elementwise_affine=False).double()
    if slip == "std_eps":
        n1, n2 = _StdPlusEps(layer.norm1), _StdPlusEps(layer.norm2)
    mask = None if slip == "no_mask" else mask

    def attend(t):
        return layer.self_attn(t, t, t, mask)

    if slip == "post":
        h = n1(x + attend(x))
        return n2(h + layer.ff(h))
    if slip == "norm_residual":
        h = n1(x) + attend(n1(x))
        return n2(h) + layer.ff(n2(h))
    h = n1(x + attend(x)) if slip == "post_attn" else x + attend(n1(x))
    if slip == "post_ff":
        return n2(h + layer.ff(h))
    if slip == "ff_reads_x":
        return h + layer.ff(n2(x))
    out = h + layer.ff(n2(h))
    return n2(out) if slip == "final_norm" else out


def pre_norm_slips(answer: Any, layer: Any, x: Any, mask: Any) -> list[str]:
    """Exercise A.4: the pre-norm layer ``answer`` computes, if a slip gives it.

    ``layer`` is the reference ``ah.EncoderLayer(..., norm_first=True)`` (float64,
    its LayerNorms' weights and biases not 1 and 0, so that they show), ``x`` its
    input and ``mask`` the padding mask it was called with.
    """
    got = _array(answer)
    x = torch.as_tensor(np.asarray(x))
    if got is None or got.shape != tuple(x.shape):
        return []
    with torch.no_grad():
        for slip, text in _PRE_NORM_SLIPS.items():
            if _same(got, _pre_norm_layer(layer, x, mask, slip).numpy()):
                return [text]
    return []
