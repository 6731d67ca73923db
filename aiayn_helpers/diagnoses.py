"""What a chapter's check says about a wrong answer: the slips it shows.

Each function here is handed to :func:`aiayn_helpers.exercises.check` as
``diagnose=``: called only when the answer is wrong, it returns the slips the answer
shows (a list of phrases that complete "This is what you get when ..."), found from
the answer's properties, or nothing. A slip is named only when the answer has the
property that slip gives (the weights summing to one over the wrong axis, the
projections' weights transposed, a bias missing); an answer that shows none gets the
check's hint instead. A function that cannot tell returns nothing.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import torch

__all__ = ["head_swap_slips", "multi_head_slips", "temperature_slips"]

# exercise 3.1's slips, in the order they are named
MULTI_HEAD_SLIPS = {
    "split": "each projection is split into heads by a single view to "
    "(batch, h, T, d_k), which deals the features of several positions out to one "
    "head",
    "bias_qkv": "the biases of w_q, w_k and w_v are left out",
    "transpose_qkv": "the inputs are multiplied by w_q, w_k and w_v's weights as "
    "stored (x @ W; nn.Linear computes x @ W.T + b)",
    "scale": "the scores are not divided by sqrt(d_k)",
    "softmax": "the softmax runs over the queries (dim -2): each key's weights sum "
    "to one, not each query's",
    "merge": "the heads are merged by a reshape to (batch, T, d_model) straight "
    "from (batch, h, T, d_k): each position's row then holds pieces of other "
    "positions",
    "w_o": "the output projection w_o is not applied",
    "transpose_o": "the merged heads are multiplied by w_o's weight as stored "
    "(x @ W, not x @ W.T)",
    "bias_o": "w_o's bias is left out",
}


def _linear(x: torch.Tensor, layer: torch.nn.Linear, slips: set[str], which: str):
    weight = layer.weight if f"transpose_{which}" not in slips else layer.weight.T
    out = x @ weight.T
    return out if f"bias_{which}" in slips else out + layer.bias


def multi_head_by_hand(module: Any, x: torch.Tensor, slips: set[str]) -> torch.Tensor:
    """``module(x, x, x)`` computed step by step, with the given ``slips`` made.

    ``module`` is an ``ah.MultiHeadAttention`` (square weights); ``x`` is
    ``(batch, T, d_model)``; ``slips`` holds keys of ``MULTI_HEAD_SLIPS``.
    """
    batch, length, d_model = x.shape
    h = module.num_heads
    d_k = d_model // h

    def split(t):
        if "split" in slips:
            return t.reshape(batch, h, length, d_k)
        return t.reshape(batch, length, h, d_k).transpose(1, 2)

    q, k, v = (
        split(_linear(x, layer, slips, "qkv"))
        for layer in (module.w_q, module.w_k, module.w_v)
    )
    scores = q @ k.transpose(-2, -1)
    if "scale" not in slips:
        scores = scores / math.sqrt(d_k)
    heads = scores.softmax(dim=-2 if "softmax" in slips else -1) @ v
    if "merge" in slips:
        merged = heads.reshape(batch, length, d_model)
    else:
        merged = heads.transpose(1, 2).reshape(batch, length, d_model)
    if "w_o" in slips:
        return merged
    return _linear(merged, module.w_o, slips, "o")


def multi_head_slips(
    module: Any, x: torch.Tensor, answer: Any, *, tol: float = 1e-8
) -> list[str]:
    """Exercise 3.1: the fewest slips whose by-hand output is ``answer``.

    Every combination of the slips of ``MULTI_HEAD_SLIPS`` is computed, the smallest
    first; the first whose output equals ``answer`` (to ``tol``, in float64) is named.
    None matches (another slip, or an answer of the wrong shape): nothing is named.
    """
    if not isinstance(answer, torch.Tensor) or answer.shape != x.shape:
        return []
    answer = answer.detach().to(torch.float64)
    names = list(MULTI_HEAD_SLIPS)
    with torch.no_grad():
        for size in range(1, len(names) + 1):
            for combo in itertools.combinations(names, size):
                if "w_o" in combo and ("transpose_o" in combo or "bias_o" in combo):
                    continue
                made = multi_head_by_hand(module, x.to(torch.float64), set(combo))
                if torch.allclose(made, answer, rtol=tol, atol=tol):
                    return [MULTI_HEAD_SLIPS[name] for name in combo]
    return []


def _blocks(weight: torch.Tensor, h: int, dim: int) -> list[torch.Tensor]:
    return list(weight.chunk(h, dim=dim))


def _order(new: torch.Tensor, old: torch.Tensor, h: int, dim: int) -> list[int] | None:
    """The head order ``p``: block i of ``new`` == block p[i] of ``old`` (or None)."""
    found = []
    old_blocks = _blocks(old, h, dim)
    for block in _blocks(new, h, dim):
        match = [j for j, o in enumerate(old_blocks) if torch.equal(block, o)]
        if not match:
            return None
        found.append(match[0])
    return found


def head_swap_slips(
    swapped: Any, original: Any, order: Sequence[int], *, ours: Any = None
) -> list[str]:
    """Exercise 3.2: what is wrong with ``swapped``, read off its parameters.

    ``original`` holds the weights before the swap (a copy nobody edited), ``order``
    the head order wanted (``[2, 1, 0, 3]``); ``ours``, the student's module the
    weights were taken from, is checked for sharing its tensors with ``swapped``.
    """
    if not all(hasattr(swapped, n) for n in ("w_q", "w_k", "w_v", "w_o")):
        return []
    found = []
    if ours is not None:
        theirs = {p.data_ptr() for p in ours.parameters()}
        if swapped is ours or any(p.data_ptr() in theirs for p in swapped.parameters()):
            found.append(
                "swapped is ours, or shares its tensors, so that editing one edits "
                "the other: ours has changed too (run the chapter again from the cell "
                "that builds ours)"
            )
    h, order = original.num_heads, list(order)
    with torch.no_grad():
        rows = {
            n: _order(getattr(swapped, n).weight, getattr(original, n).weight, h, 0)
            for n in ("w_q", "w_k", "w_v")
        }
        biases = {
            n: _order(getattr(swapped, n).bias, getattr(original, n).bias, h, 0)
            for n in ("w_q", "w_k", "w_v")
        }
        columns = _order(swapped.w_o.weight, original.w_o.weight, h, 1)
        o_rows = _order(swapped.w_o.weight, original.w_o.weight, h, 0)
    moved = {tuple(p) for p in rows.values() if p is not None}
    if len(moved) == 1 and moved != {tuple(order)}:
        (other,) = moved
        heads = [i for i, j in enumerate(other) if i != j]
        if len(heads) == 2:
            found.append(f"heads {heads[0]} and {heads[1]} are swapped, not 0 and 2")
    if all(p == order for p in rows.values()):
        if all(b == list(range(h)) for b in biases.values()):
            found.append(
                "the biases of w_q, w_k and w_v are not permuted with their rows"
            )
        elif any(b is None for b in biases.values()):
            found.append("the biases of w_q, w_k and w_v are not copied from ours")
        if columns == list(range(h)) and o_rows != order:
            found.append("w_o.weight is not permuted")
        elif o_rows == order and columns != order:
            found.append(
                "the rows of w_o.weight (its outputs) are permuted, not its columns "
                "(its inputs, where the heads enter)"
            )
        if not torch.equal(swapped.w_o.bias, original.w_o.bias):
            found.append("w_o's bias is changed: it belongs to the outputs, not a head")
    return found


def temperature_slips(
    outputs: Mapping[float, Any], values: torch.Tensor, small: float, large: float
) -> list[str]:
    """Exercise 2.1: what the outputs of the soft look-up at each temperature show.

    A softmax over the keys gives weights that sum to one, so every output lies
    between the smallest and the largest value; scores multiplied by tau instead of
    divided give the hard look-up at the large tau and the average at the small one.
    """
    try:
        shown = {tau: float(outputs[tau]) for tau in (small, large)}
    except (KeyError, TypeError, ValueError):
        return []
    low, high = float(values.min()), float(values.max())
    if any(not low - 1e-9 <= v <= high + 1e-9 for v in shown.values()):
        return [
            "the weights do not sum to one over the keys: an output outside the "
            f"values' range ({low:g} to {high:g}) cannot be a weighted average of them "
            "- is the softmax taken over the keys?"
        ]
    mean = float(values.mean())
    if abs(shown[small] - mean) < 0.05 and abs(shown[large] - mean) > 0.05:
        return ["the scores are multiplied by tau, not divided by it"]
    return []
