"""Chapters 3 and 4: multi-head attention, the positional encoding.

See :mod:`aiayn_helpers.course.diagnoses` for what a diagnosis is and how a check
calls it.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import torch

from ._common import _allclose

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


def _table_at(positions: torch.Tensor, d_model: int) -> torch.Tensor:
    """The paper's sinusoidal table at ``positions`` (negative ones too), float64."""
    pos = positions.to(torch.float64)[:, None]
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    angles = pos * 10000.0 ** (-two_i / d_model)
    table = torch.empty(len(positions), d_model, dtype=torch.float64)
    table[:, 0::2], table[:, 1::2] = torch.sin(angles), torch.cos(angles)
    return table


def _steps(matrix: torch.Tensor, offset: int, d_model: int) -> bool:
    """Does ``matrix`` map PE_pos to PE_{pos + offset} (as M_k does, column vectors)?"""
    table = _table_at(torch.arange(0, 50), d_model)
    moved = table @ matrix.detach().to(torch.float64).T
    return _allclose(moved, _table_at(torch.arange(offset, 50 + offset), d_model), 1e-8)


def shift_back_slips(
    back_shifted: Any, round_trip: Any, *, length: int, k: int
) -> list[str]:
    """Exercise 4.1: which positions ``back_shifted`` holds, and where ``round_trip``
    steps.

    ``back_shifted`` should hold PE_{pos-k} for pos = k ... length - 1, one row each,
    and ``round_trip`` = M_-k M_k should step nowhere. A row vector times M_-k (no
    transpose) applies M_-k^T = M_k, a step forward; mapping the table's first rows
    gives the positions -k ... length - 2k - 1.
    """
    tensors = (back_shifted, round_trip)
    if not all(isinstance(t, torch.Tensor) and t.dim() == 2 for t in tensors):
        return []
    d_model = round_trip.shape[0]
    if round_trip.shape != (d_model, d_model) or d_model % 2:
        return []
    found = []
    forward = _steps(round_trip, 2 * k, d_model)
    if back_shifted.shape == (length - k, d_model):
        rows = back_shifted.detach().to(torch.float64)
        ahead = _table_at(torch.arange(2 * k, length + k), d_model)
        early = _table_at(torch.arange(-k, length - 2 * k), d_model)
        if _allclose(rows, ahead, 1e-8):
            if forward:
                found.append(
                    f"M_back steps forward: back_shifted holds PE_{{pos+{k}}}, and "
                    f"round_trip steps {2 * k} positions forward instead of none "
                    f"(M_back is M_{k}, not M_-{k})"
                )
                forward = False
            else:
                found.append(
                    f"the rows are multiplied by M_back itself: a row vector times a "
                    f"matrix applies its transpose, and M_-{k}^T = M_{k} steps {k} "
                    f"positions forward (back_shifted holds PE_{{pos+{k}}})"
                )
        elif _allclose(rows, early, 1e-8):
            found.append(
                f"the table's first rows are mapped, PE_0 to PE_{length - k - 1}, so "
                f"back_shifted holds PE_-{k} to PE_{length - 2 * k - 1}; the exercise "
                f"maps PE_{k} to PE_{length - 1}"
            )
    if forward:
        found.append(
            f"round_trip steps {2 * k} positions forward instead of none: its first "
            f"factor steps forward too (M_{k}, or M_-{k} transposed)"
        )
    return found


def projection_slips(W_q: Any, W_k: Any, W: Any) -> list[str]:  # noqa: N803
    """Exercise 4.2: the student's projections, read for the two slips that change
    the answers: one matrix for both W^Q and W^K (the scores are then symmetric in the
    two positions), and a W whose 2 x 2 blocks are not scaled rotations (W^T W is then
    no multiple of the identity on a pair, so the position does not cancel)."""
    found = []
    if isinstance(W_q, torch.Tensor) and isinstance(W_k, torch.Tensor):
        if W_q.shape == W_k.shape and torch.equal(W_q, W_k):
            found.append(
                "W_q and W_k are the same matrix: the scores s(p, q) are then "
                "symmetric in p and q, so the diagonals at offsets +3 and -3 agree "
                "(the exercise draws two independent matrices)"
            )
    if isinstance(W, torch.Tensor) and W.dim() == 2 and W.shape[0] == W.shape[1]:
        n = W.shape[0]
        w = W.detach().to(torch.float64)
        pairs = torch.arange(n) // 2
        if n % 2 == 0:
            off_blocks = w[pairs[:, None] != pairs[None, :]]
            if off_blocks.abs().max() > 1e-12:
                found.append(
                    "W is not block-diagonal: it mixes different sine-cosine pairs, "
                    "which turn at different speeds, so the position does not cancel"
                )
            else:
                gram = w.T @ w
                a, b, c = gram.diagonal()[0::2], gram.diagonal()[1::2], gram[0::2, 1::2]
                tol = 1e-9 * max(gram.abs().max().item(), 1e-300)
                if (a - b).abs().max() > tol or c.diagonal().abs().max() > tol:
                    found.append(
                        "W's 2 x 2 blocks are not scaled rotations a R(alpha): W^T W "
                        "is then not a multiple of the identity on each pair, and only "
                        "such a W commutes with the shifts M_k"
                    )
    return found


def fit_residual_slips(residuals: Any) -> list[str]:
    """Exercise 4.3: a d_model = 6 residual of float32's rounding size (about 1e-7)
    means a float32 table (ah.sinusoidal_encoding's default): in float64 the fit is
    exact to about 1e-15."""
    try:
        even = float(residuals[6])
    except (KeyError, TypeError, ValueError, IndexError):
        return []
    if 1e-8 < even < 1e-5:
        return [
            f"the table is float32, ah.sinusoidal_encoding's default dtype: the "
            f"d_model = 6 fit then misses by {even:.0e}, float32's rounding error, not "
            f"1e-9 (build it with dtype=torch.float64)"
        ]
    return []


def t2t_frequency_slips(omega: Any, d_model: int) -> list[str]:
    """Exercise 4.4: what Tensor2Tensor-like ``omega`` does instead of falling
    geometrically from 1 to exactly 1/10000: the paper's ratio 10000^(-2/d_model)
    (its last frequency 10000^(-(d_model-2)/d_model)), an exponent over the column
    index 2i (its last frequency 1e-8), a rise to 10000 (the timescales,
    1/frequency), even spacing, float32 rounding, or NaN."""
    half = d_model // 2
    if not isinstance(omega, torch.Tensor) or omega.shape != (half,):
        return []
    w = omega.detach().to(torch.float64)
    if not bool(torch.isfinite(w).all()):
        nan = int(torch.isnan(w).sum())
        return [f"{nan} of the {half} frequencies are NaN (not a number)"] * (nan > 0)
    if bool((w <= 0).any()):
        return []
    ratios = w[1:] / w[:-1]
    geometric = _allclose(ratios, ratios[:1].expand(half - 1), 1e-5)
    steps = w[1:] - w[:-1]
    if not geometric and _allclose(steps, steps[:1].expand(half - 1), 1e-9):
        return [
            "the frequencies are evenly spaced: each one is the previous one minus "
            "the same amount, while Tensor2Tensor's fall by the same factor"
        ]
    if not geometric or abs(w[0].item() - 1) > 1e-6:
        return []
    last = w[-1].item()
    if abs(ratios[0].item() - 10000.0 ** (-2 / d_model)) < 1e-9:
        return [
            f"the ratio between neighbours is the paper's, 10000^(-2/{d_model}): the "
            f"last frequency is then {last:.3g}, not 1/10000 (the paper's spacing is "
            f"used, not Tensor2Tensor's)"
        ]
    if abs(last * 1e8 - 1) < 1e-5:
        return [
            "the last frequency is 1e-08, the square of 1/10000: the exponent runs "
            "over the column index 0, 2, 4, ... (that is 2i) where Tensor2Tensor's "
            "runs over the pair index i"
        ]
    if abs(last / 10000.0 - 1) < 1e-5:
        return [
            "omega_t2t rises from 1 to 10000: those are Tensor2Tensor's timescales, "
            "1 / frequency (the minus sign of the exponent is lost)"
        ]
    if omega.dtype != torch.float64 and abs(last * 10000.0 - 1) < 1e-5:
        return [
            f"omega_t2t is {omega.dtype}: right to that precision's rounding, but the "
            "check compares 6 significant digits of the float64 values (give "
            "torch.arange dtype=torch.float64)"
        ]
    return []
