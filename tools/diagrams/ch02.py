"""Chapter 2: scaled dot-product attention, shape by shape, and the masks."""

from __future__ import annotations

import torch
from matplotlib.patches import Rectangle

from aiayn_helpers import causal_mask, padding_mask

from .draw import (
    ALLOWED,
    ATTN,
    BLOCKED,
    D_K,
    D_MODEL,
    FFN,
    HEADS,
    NORM,
    NOTE,
    SMALL,
    STATE,
    arrow,
    box,
    canvas,
    grid,
    legend,
    matrix,
    small,
    text,
)


def ch02_qkv_shapes():
    fig, ax = canvas(5.4, 5.6, "Scaled dot-product attention, shape by shape")
    c = 0.3
    tq, tk, dk, dv = 4, 5, 3, 3
    # row 1: Q times K transposed gives the scores
    y1 = 3.2
    x, _ = matrix(ax, 0.3, y1, tq, dk, c, ATTN, "Q", r"$T_q \times d_k$")
    text(ax, x + 0.2, y1 + tq * c / 2, "·", size=22)
    x, _ = matrix(
        ax,
        x + 0.4,
        y1 + (tq - dk) * c,
        dk,
        tk,
        c,
        ATTN,
        r"$K^\top$",
        r"$d_k \times T_k$",
    )
    text(ax, x + 0.25, y1 + tq * c / 2, "=", size=18)
    scores = "scores / √$d_k$"  # \sqrt in mathtext comes apart in a browser
    matrix(ax, x + 0.5, y1, tq, tk, c, NORM, scores, r"$T_q \times T_k$")
    # the softmax, row by row
    small(ax, 2.7, 2.55, "softmax over each row (the keys)")
    arrow(ax, (4.45, 3.0), (1.05, 2.2), color="#777777", rad=-0.15)
    # row 2: weights times V gives the output
    y2 = 0.55
    x, _ = matrix(ax, 0.3, y2, tq, tk, c, NORM, "weights", r"$T_q \times T_k$")
    text(ax, x + 0.2, y2 + tq * c / 2, "·", size=22)
    y_v = y2 - (tk - tq) * c
    x, _ = matrix(ax, x + 0.4, y_v, tk, dv, c, FFN, "V", r"$T_k \times d_v$")
    text(ax, x + 0.25, y2 + tq * c / 2, "=", size=18)
    matrix(ax, x + 0.5, y2, tq, dv, c, STATE, "output", r"$T_q \times d_v$")
    per_head = f"base model: $d_k = d_v$ = {D_MODEL} / {HEADS} = {D_K} per head"
    small(ax, 2.7, 4.95, per_head)
    return fig


def ch02_masks():
    fig, ax = canvas(5.6, 3.9, "Masks: True (blue) = may attend")
    tokens = ["ein", "Hund", "bellt", "pad", "pad"]
    ids = [[5, 6, 7, 0, 0]]
    pad = padding_mask(torch.tensor(ids), 0)[0, 0, 0]  # (T_k,) True = may attend
    causal = causal_mask(len(tokens))  # (T, T)
    both = causal & pad
    pad_grid = pad.expand(len(tokens), -1).tolist()
    cell = 0.27
    for k, (m, title) in enumerate(
        [
            (pad_grid, "padding"),
            (causal.tolist(), "causal"),
            (both.tolist(), "both (&)"),
        ]
    ):
        x0 = 0.75 + k * 1.7
        rows = tokens if k == 0 else [""] * len(tokens)
        grid(ax, x0, 2.85, cell, m, rows, tokens, title)
    small(ax, 0.1, 0.35, "rows: queries; columns: keys", ha="left")
    legend(ax, 3.0, 0.35, [(ALLOWED, "attend"), (BLOCKED, "blocked")])
    return fig


FIGURES = [ch02_qkv_shapes, ch02_masks]


# the soft look-up of the chapter's first cell: four orthogonal keys, values 10 to 40,
# a query that points at key 2 with strength 1 (no scaling by √d_k in that cell)
LOOKUP_KEYS = torch.eye(4, dtype=torch.float64)
LOOKUP_VALUES = torch.tensor([10.0, 20.0, 30.0, 40.0], dtype=torch.float64)
LOOKUP_QUERY = 1.0 * LOOKUP_KEYS[2]


def lookup():
    """(scores, weights, output) of the chapter's soft look-up, computed here."""
    scores = LOOKUP_KEYS @ LOOKUP_QUERY
    weights = scores.softmax(dim=0)
    return scores.tolist(), weights.tolist(), float(weights @ LOOKUP_VALUES)


def vector(v) -> str:
    return "(" + ", ".join(f"{x:g}" for x in v) + ")"


def ch02_walkthrough():
    """One query, key by key: q·k, softmax, weighted sum of the values."""
    fig, ax = canvas(6.0, 5.3, "One query, step by step")
    scores, weights, output = lookup()
    small(ax, 3.0, 4.72, f"query q = {vector(LOOKUP_QUERY.tolist())}", weight="bold")
    heads = ["key $k_j$", "score q·$k_j$", "softmax weight", "value $v_j$"]
    xs = [0.85, 2.3, 3.6, 5.3]
    for x, head in zip(xs, heads, strict=True):
        small(ax, x, 4.3, head, color=NOTE)
    for j, (score, weight) in enumerate(zip(scores, weights, strict=True)):
        y = 3.5 - j * 0.62
        small(ax, 0.1, y, f"{j}", ha="left", color=NOTE)
        small(ax, xs[0], y, vector(LOOKUP_KEYS[j].tolist()))
        arrow(ax, (1.6, y), (1.95, y), color=NOTE, lw=1.2)
        box(ax, xs[1], y, 0.6, 0.42, f"{score:g}", fc=NORM, size=SMALL)
        arrow(ax, (2.65, y), (2.95, y), color=NOTE, lw=1.2)
        bar = 0.95 * weight / max(weights)  # the weight as a bar
        ax.add_patch(Rectangle((3.0, y - 0.14), bar, 0.28, fc=ALLOWED, ec="none"))
        small(ax, 3.0 + bar + 0.05, y, f"{weight:.3f}", ha="left")
        text(ax, 4.75, y, "×", size=SMALL)
        box(ax, xs[3], y, 0.7, 0.42, f"{LOOKUP_VALUES[j]:g}", fc=FFN, size=SMALL)
    small(ax, 3.65, 1.12, f"the weights sum to {sum(weights):g}", color=NOTE)
    pairs = zip(weights, LOOKUP_VALUES.tolist(), strict=True)
    terms = " + ".join(f"{w:.3f}·{v:g}" for w, v in pairs)
    small(ax, 3.0, 0.68, "output = Σ weight × value =")
    small(ax, 3.0, 0.3, f"{terms} = {output:.2f}", weight="bold")
    return fig


FIGURES.append(ch02_walkthrough)
