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
    note,
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


# the sizes chapter 2 counts the two scores at: T queries and keys, d = d_a
SPEED_T, SPEED_D = 512, 64


def _block(ax, x0, y0, rows, cols, depth, c, fc):
    """A rows x cols x depth tensor: ``depth`` slices, each drawn behind the last."""
    step = 0.09
    for k in reversed(range(depth)):
        corner = (x0 + k * step, y0 + k * step)
        ax.add_patch(Rectangle(corner, cols * c, rows * c, fc=fc, ec="#444444", lw=0.8))
    return x0 + cols * c + (depth - 1) * step, y0 + rows * c + (depth - 1) * step


def ch02_dot_vs_additive():
    """The scores of T_q queries against T_k keys: one matrix product, or a
    T_q x T_k x d_a tensor written, put through tanh and read back."""
    fig, ax = canvas(5.9, 5.3, "Scores two ways: what each writes to memory")
    c, tq, tk, d = 0.2, 4, 5, 3
    # dot product: Q times K transposed, straight to the scores
    y1 = 3.35
    small(ax, 0.1, 4.75, "dot product: one matrix multiplication", ha="left")
    x, _ = matrix(ax, 0.3, y1, tq, d, c, ATTN, "Q", r"$T_q \times d$")
    text(ax, x + 0.18, y1 + tq * c / 2, "·", size=22)
    x, _ = matrix(ax, x + 0.36, y1 + (tq - d) * c, d, tk, c, ATTN, r"$K^\top$")
    small(ax, x - tk * c / 2, y1 - 0.07, r"$d \times T_k$", va="top")
    text(ax, x + 0.22, y1 + tq * c / 2, "=", size=18)
    x, _ = matrix(ax, x + 0.45, y1, tq, tk, c, NORM, "scores", r"$T_q \times T_k$")
    dot = SPEED_T * SPEED_T
    note(ax, x + 0.15, y1 + tq * c / 2, f"{dot:,} numbers\nat T = {SPEED_T}", ha="left")
    # additive: W q_i + U k_j for every pair, tanh, then the product with v
    y2 = 1.15
    small(ax, 0.1, 2.75, r"additive: $v^\top \tanh(W q_i + U k_j)$", ha="left")
    x, top = _block(ax, 0.3, y2, tq, tk, 4, c, STATE)
    small(ax, (0.3 + x) / 2, y2 - 0.07, r"$T_q \times T_k \times d_a$", va="top")
    small(ax, (0.3 + x) / 2, top + 0.12, r"$W q_i + U k_j$")
    arrow(ax, (x + 0.1, y2 + 0.5), (x + 0.6, y2 + 0.5))
    small(ax, x + 0.35, y2 + 0.75, "tanh")
    x2, _ = _block(ax, x + 0.7, y2, tq, tk, 4, c, STATE)
    arrow(ax, (x2 + 0.1, y2 + 0.5), (x2 + 0.6, y2 + 0.5))
    small(ax, x2 + 0.35, y2 + 0.75, "· v")
    matrix(ax, x2 + 0.7, y2, tq, tk, c, NORM, "scores", r"$T_q \times T_k$")
    big = SPEED_T * SPEED_T * SPEED_D
    at = f"at T = {SPEED_T}, d_a = {SPEED_D}: {big:,} numbers"
    note(ax, 0.1, 0.45, at + ",", ha="left")
    note(ax, 0.1, 0.15, "written, put through tanh one by one, read back", ha="left")
    return fig


FIGURES.append(ch02_dot_vs_additive)


# the mask of chapter 2's fully-masked-row cell: query 1 may attend to no key
MASKED_ROW = [[True, True, False], [False, False, False], [True, False, False]]
NAN_FILL = "#f4a6a6"


def _weights_grid(ax, x0, y_top, cell, entries, fills, title):
    for i, row in enumerate(entries):
        for j, entry in enumerate(row):
            corner = (x0 + j * cell, y_top - (i + 1) * cell)
            ax.add_patch(Rectangle(corner, cell, cell, fc=fills[i][j], ec="white", lw=2))
            small(ax, corner[0] + cell / 2, corner[1] + cell / 2, entry)
    small(ax, x0 + 1.5 * cell, y_top + 0.12, title, va="bottom")


def ch02_fully_masked_row():
    """A query with every key blocked: NaN from a -inf fill, zeros from the package."""
    fig, ax = canvas(5.9, 3.2, "A query with nothing to attend to")
    cell, top = 0.45, 2.3
    mask = MASKED_ROW
    shown = [["T" if m else "F" for m in row] for row in mask]
    blue = [[ALLOWED if m else BLOCKED for m in row] for row in mask]
    _weights_grid(ax, 0.85, top, cell, shown, blue, "mask")
    for i in range(3):
        small(ax, 0.75, top - (i + 0.5) * cell, f"query {i}", ha="right")
    light = [[STATE if m else GREY_CELL for m in row] for row in mask]

    def weights(row_1, fill):
        entries = [["w" if m else "0" for m in row] for row in mask]
        entries[2] = ["1" if m else "0" for m in mask[2]]
        entries[1] = [row_1] * 3
        fills = [list(r) for r in light]
        fills[1] = [fill] * 3
        return entries, fills

    naive, naive_fill = weights("NaN", NAN_FILL)
    _weights_grid(ax, 2.55, top, cell, naive, naive_fill, "−inf, softmax")
    package, package_fill = weights("0", GREY_CELL)
    _weights_grid(ax, 4.3, top, cell, package, package_fill, "the package")
    note(ax, 3.22, 0.55, "row 1: 0 / 0 = NaN")
    note(ax, 4.97, 0.55, "row 1 set to 0")
    note(ax, 0.1, 0.15, "T = may attend, F = blocked; w: a weight between 0 and 1", ha="left")
    return fig


GREY_CELL = "#eeeeee"
FIGURES.append(ch02_fully_masked_row)
