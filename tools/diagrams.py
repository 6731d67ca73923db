"""Draw the book's architecture diagrams as SVG files in book/figures/.

    python tools/diagrams.py          regenerate every diagram
    python tools/diagrams.py --check  exit 1 and name the files that are out of date

Every diagram is a function below that draws on a figure whose units are inches
(``canvas``), with boxes, arrows and grids from a few helpers. Sizes written on a
diagram (d_model, h, d_k, d_ff, N, the vocabulary, label smoothing) come from
``aiayn_helpers.config.BASE``, and the masks are the package's own
(``causal_mask``, ``padding_mask``), so a diagram cannot disagree with the code.

The output is deterministic: a fixed ``svg.hashsalt``, no date, text kept as text
(``svg.fonttype = "none"``), and no DOCTYPE (it names another host). Every figure
has a white background, so it reads in the site's dark mode, and is at most
``MAX_WIDTH_IN`` inches wide with text of at least ``MIN_FONT_PT`` points, so it
stays legible at a phone's width (tests/test_diagrams.py checks both).
"""

from __future__ import annotations

import argparse
import io
import math
import re
import sys
from collections.abc import Callable
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch, Rectangle

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from aiayn_helpers import causal_mask, padding_mask  # noqa: E402
from aiayn_helpers.config import BASE  # noqa: E402

FIGURES = ROOT / "book" / "figures"
MAX_WIDTH_IN = 6.0
MIN_FONT_PT = 12

D_MODEL = BASE.d_model
HEADS = BASE.num_heads
D_K = BASE.d_model // BASE.num_heads
D_FF = BASE.d_ff
N_LAYERS = BASE.num_layers
VOCAB = BASE.vocab_size
EPS_LS = BASE.label_smoothing

# colours: one per kind of block, as in the paper's Figure 1
ATTN = "#fcd9b0"
FFN = "#c6e2f7"
NORM = "#f4ef9f"
EMBED = "#f6c9dc"
STATE = "#d4edcc"
GREY = "#e6e6e6"
INK = "#222222"
NOTE = "#555555"
BLOCKED = "#9a9a9a"
ALLOWED = "#3c8dbc"
HEAD_COLOURS = [
    "#e41a1c",
    "#377eb8",
    "#4daf4a",
    "#984ea3",
    "#ff7f00",
    "#a6761d",
    "#f781bf",
    "#666666",
]

FONT = 14  # the default size of text in a box
FRAME = {"fc": "none", "ec": "#888888", "lw": 1.2, "ls": "--"}  # the N-times box
SMALL = 12  # shapes and notes, never smaller (MIN_FONT_PT)

# applied while a diagram is drawn and saved (render): importing changes nothing
STYLE = {
    "svg.hashsalt": "aiayn-diagrams",
    "svg.fonttype": "none",
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans"],
    "mathtext.fontset": "dejavusans",
    "figure.facecolor": "white",
    "savefig.facecolor": "white",
    "lines.solid_capstyle": "butt",
}

# --------------------------------------------------------------- helpers


def canvas(width: float, height: float, title: str = ""):
    """A figure ``width`` x ``height`` inches, axes in inches, a bold title on top."""
    assert width <= MAX_WIDTH_IN, f"{width} in is wider than {MAX_WIDTH_IN} in"
    fig = plt.figure(figsize=(width, height))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.set_axis_off()
    if title:
        text(ax, width / 2, height - 0.22, title, weight="bold")
    return fig, ax


def box(ax, x, y, w, h, label="", fc=GREY, size=FONT, ec=INK, lw=1.4, **kw):
    """A rounded box centred on (x, y) with ``label`` (``kw``: for the text)."""
    corner = (x - w / 2, y - h / 2)
    rounded = "round,pad=0,rounding_size=0.08"
    ax.add_patch(FancyBboxPatch(corner, w, h, boxstyle=rounded, fc=fc, ec=ec, lw=lw))
    if label:
        text(ax, x, y, label, size=size, **kw)


def text(ax, x, y, s, size=FONT, ha="center", va="center", color=INK, **kw):
    assert size >= MIN_FONT_PT
    ax.text(x, y, s, ha=ha, va=va, fontsize=size, color=color, **kw)


def small(ax, x, y, s, **kw):
    """Shapes, sizes and labels: text at the smallest size."""
    text(ax, x, y, s, size=SMALL, **kw)


def note(ax, x, y, s, **kw):
    """A remark beside the drawing: small grey text."""
    small(ax, x, y, s, color=NOTE, **kw)


def arrow(ax, start, end, color=INK, lw=1.6, style="-|>", ls="-", rad=0.0):
    ax.add_patch(
        FancyArrowPatch(
            start,
            end,
            arrowstyle=style,
            mutation_scale=14,
            color=color,
            lw=lw,
            linestyle=ls,
            shrinkA=0,
            shrinkB=0,
            connectionstyle=f"arc3,rad={rad}",
        )
    )


def line(ax, xs, ys, color=INK, lw=1.6, ls="-"):
    ax.plot(xs, ys, color=color, lw=lw, linestyle=ls, solid_capstyle="butt")


def plus(ax, x, y, r=0.13):
    """The residual addition: a circle with a plus."""
    ax.add_patch(Circle((x, y), r, fc="white", ec=INK, lw=1.4, zorder=3))
    line(ax, [x - r * 0.6, x + r * 0.6], [y, y], lw=1.4)
    line(ax, [x, x], [y - r * 0.6, y + r * 0.6], lw=1.4)


def grid(ax, x0, y_top, cell, allowed, rows, cols, title=None):
    """A boolean matrix as a grid of squares, row 0 on top: blue True, grey False."""
    n_rows, n_cols = len(allowed), len(allowed[0])
    for i in range(n_rows):
        for j in range(n_cols):
            ax.add_patch(
                Rectangle(
                    (x0 + j * cell, y_top - (i + 1) * cell),
                    cell,
                    cell,
                    fc=ALLOWED if allowed[i][j] else BLOCKED,
                    ec="white",
                    lw=2,
                )
            )
    for i, label in enumerate(rows):
        small(ax, x0 - 0.08, y_top - (i + 0.5) * cell, label, ha="right")
    for j, label in enumerate(cols):
        small(ax, x0 + (j + 0.5) * cell, y_top + 0.08, label, va="bottom", rotation=90)
    if title:
        text(
            ax,
            x0 + n_cols * cell / 2,
            y_top - n_rows * cell - 0.25,
            title,
            size=FONT,
            va="top",
        )


def matrix(ax, x0, y0, n_rows, n_cols, cell, fc, label=None, shape=None):
    """An n_rows x n_cols matrix of cells with its lower-left corner at (x0, y0)."""
    for i in range(n_rows):
        for j in range(n_cols):
            corner = (x0 + j * cell, y0 + i * cell)
            ax.add_patch(Rectangle(corner, cell, cell, fc=fc, ec=INK, lw=0.8))
    w, h = n_cols * cell, n_rows * cell
    if label:
        text(ax, x0 + w / 2, y0 + h + 0.07, label, size=FONT, va="bottom")
    if shape:
        small(ax, x0 + w / 2, y0 - 0.07, shape, va="top")
    return x0 + w, y0 + h


def legend(ax, x, y, items):
    """Small squares with a label each, in a row starting at (x, y)."""
    for colour, label in items:
        ax.add_patch(Rectangle((x, y - 0.09), 0.18, 0.18, fc=colour, ec="white"))
        small(ax, x + 0.25, y, label, ha="left")
        x += 0.25 + 0.11 * len(label) + 0.3


# ------------------------------------------------------------- chapter 1


def ch01_fixed_context():
    fig, ax = canvas(5.4, 4.6, "One context vector c for the whole sentence")
    xs = [0.65, 1.55, 2.45, 3.35]
    for j, x in enumerate(xs):
        text(ax, x, 0.3, f"$x_{j + 1}$")
        arrow(ax, (x, 0.5), (x, 0.95))
        box(ax, x, 1.2, 0.65, 0.5, f"$h_{j + 1}$", fc=STATE)
        if j:
            arrow(ax, (xs[j - 1] + 0.33, 1.2), (x - 0.33, 1.2))
    small(ax, 4.55, 1.2, "encoder", ha="center")
    box(ax, 3.35, 2.3, 0.8, 0.5, "c", fc=NORM, weight="bold")
    arrow(ax, (3.35, 1.45), (3.35, 2.05))
    small(ax, 3.85, 1.75, "last state", ha="left")
    ys = [1.3, 2.5, 3.7]
    for i, x in enumerate(ys):
        box(ax, x, 3.3, 0.65, 0.5, f"$s_{i + 1}$", fc=ATTN)
        arrow(ax, (x, 3.55), (x, 3.85))
        text(ax, x, 4.0, f"$y_{i + 1}$")
        arrow(ax, (3.35, 2.55), (x, 3.05), color="#8a6d00", lw=1.4)
        if i:
            arrow(ax, (ys[i - 1] + 0.33, 3.3), (x - 0.33, 3.3))
    small(ax, 4.55, 3.3, "decoder", ha="left")
    small(ax, 1.1, 2.3, "the same c\nat every step", color="#8a6d00")
    return fig


def ch01_attention_context():
    fig, ax = canvas(5.4, 4.8, "Attention: a new context $c_i$ per step")
    xs = [0.65, 1.55, 2.45, 3.35]
    weights = [0.1, 0.6, 0.2, 0.1]  # illustrative: the thickness of each line
    for j, x in enumerate(xs):
        text(ax, x, 0.3, f"$x_{j + 1}$")
        arrow(ax, (x, 0.5), (x, 0.95))
        box(ax, x, 1.2, 0.65, 0.5, f"$h_{j + 1}$", fc=STATE)
        if j:
            line(ax, [xs[j - 1] + 0.33, x - 0.33], [1.2, 1.2])
        arrow(ax, (x, 1.45), (2.2, 2.3), color=ALLOWED, lw=1 + 9 * weights[j])
    small(ax, 4.1, 1.2, "all encoder\nstates", ha="left")
    small(
        ax,
        4.1,
        1.95,
        r"weights $\alpha_{2j}$" + "\n(softmax)",
        ha="left",
        color=ALLOWED,
    )
    box(ax, 2.2, 2.55, 0.8, 0.5, "$c_2$", fc=NORM, weight="bold")
    ys = [1.0, 2.2, 3.4]
    for i, x in enumerate(ys):
        box(ax, x, 3.55, 0.65, 0.5, f"$s_{i + 1}$", fc=ATTN)
        arrow(ax, (x, 3.8), (x, 4.1))
        text(ax, x, 4.25, f"$y_{i + 1}$")
        if i:
            arrow(ax, (ys[i - 1] + 0.33, 3.55), (x - 0.33, 3.55))
    arrow(ax, (2.2, 2.8), (2.2, 3.3), lw=2)
    arrow(ax, (1.2, 3.3), (1.9, 2.45), color="#777777", lw=1.2, ls="--")
    note(ax, 0.2, 2.6, "$s_1$ scores\nevery $h_j$", ha="left")
    small(ax, 3.2, 2.55, r"$c_2 = \sum_j \alpha_{2j} h_j$", ha="left")
    return fig


# ------------------------------------------------------------- chapter 2


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
    scores = r"scores / $\sqrt{d_k}$"
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


# ------------------------------------------------------------- chapter 3


def ch03_multi_head():
    fig, ax = canvas(5.0, 8.6, "Multi-head attention")
    cx = 2.5
    on_white = {"size": SMALL, "bbox": {"fc": "white", "ec": "none", "pad": 1}}
    text(ax, cx, 0.3, f"X: (B, T, {D_MODEL})", size=FONT)
    for k, name in enumerate(["Q", "K", "V"]):
        x = 1.0 + k * 1.5
        arrow(ax, (cx, 0.5), (x, 0.95))
        box(ax, x, 1.2, 1.2, 0.5, f"$W^{name}$", fc=FFN)
        small(ax, x, 1.6, f"{D_MODEL}→{D_MODEL}")
        arrow(ax, (x, 1.8), (x, 2.15))
        box(ax, x, 2.45, 1.3, 0.55, "split\nheads", fc=GREY, size=SMALL)
        arrow(ax, (x, 2.73), (x, 3.55))
    text(ax, cx, 3.12, f"each (B, {HEADS}, T, {D_K})", **on_white)
    for k in range(HEADS):  # the heads, stacked
        off = (HEADS - 1 - k) * 0.06
        box(ax, cx + off, 3.9 + off, 3.8, 0.6, "", fc=ATTN, lw=1.0)
    box(ax, cx, 3.9, 3.8, 0.6, "", fc=ATTN)
    text(ax, cx, 3.9, f"attention in {HEADS} heads at once", size=FONT)
    top = 4.2 + 0.06 * HEADS
    per_head = f"$d_k$ = {D_MODEL} / {HEADS} = {D_K} per head"
    small(ax, cx, top + 0.22, per_head)
    arrow(ax, (cx, top + 0.4), (cx, top + 1.05))
    text(ax, cx, top + 0.72, f"(B, {HEADS}, T, {D_K})", **on_white)
    y = top + 1.33
    box(ax, cx, y, 2.8, 0.55, "concatenate heads", fc=GREY)
    arrow(ax, (cx, y + 0.28), (cx, y + 0.88))
    text(ax, cx, y + 0.58, f"(B, T, {HEADS}·{D_K} = {D_MODEL})", **on_white)
    box(ax, cx, y + 1.15, 1.4, 0.55, "$W^O$", fc=FFN)
    small(ax, cx + 0.85, y + 1.15, f"{D_MODEL}→{D_MODEL}", ha="left")
    arrow(ax, (cx, y + 1.43), (cx, y + 1.7))
    text(ax, cx, y + 1.88, f"output: (B, T, {D_MODEL})", size=FONT)
    return fig


def ch03_split_heads():
    fig, ax = canvas(5.4, 4.4, "Split into heads: view, then transpose")
    shown = 4  # heads drawn; the labels say how many there are
    x0, w, top = 0.5, 4.4, 3.1
    for k in range(shown):
        ax.add_patch(
            Rectangle(
                (x0 + k * w / shown, top),
                w / shown,
                0.6,
                fc=HEAD_COLOURS[k],
                alpha=0.45,
                ec=INK,
            )
        )
        small(ax, x0 + (k + 0.5) * w / shown, top + 0.3, f"head {k + 1}")
    small(ax, x0 + w / 2, top + 0.78, f"one position: {D_MODEL} features")
    small(
        ax,
        x0 + w / 2,
        top - 0.2,
        f"(drawn with {shown} heads; the base model has {HEADS})",
    )
    arrow(ax, (1.2, 2.75), (1.2, 2.3))
    small(ax, 1.4, 2.52, "view(B, T, h, $d_k$)\nthen transpose(1, 2)", ha="left")
    for k in range(shown):
        x = x0 + k * (w / shown) + 0.1
        for t in range(4):
            ax.add_patch(
                Rectangle(
                    (x, 1.85 - t * 0.3),
                    w / shown - 0.2,
                    0.3,
                    fc=HEAD_COLOURS[k],
                    alpha=0.45,
                    ec=INK,
                )
            )
        small(ax, x + (w / shown - 0.2) / 2, 0.4, f"T × {D_K}")
    small(ax, 0.15, 1.4, "T")
    small(ax, 2.7, 0.12, f"each head: its own T × $d_k$, $d_k$ = {D_K}")
    return fig


# ------------------------------------------------------------- chapter 4


def pe_value(pos: float, column: int, d_model: int = D_MODEL) -> float:
    """PE(pos, column) by the paper's formula, in plain Python (the same everywhere)."""
    omega = 10000.0 ** (-(column - column % 2) / d_model)
    return math.sin(pos * omega) if column % 2 == 0 else math.cos(pos * omega)


def ch04_sinusoids():
    pairs = [0, 16, 32, 64]
    fig, ax = canvas(5.4, 5.6, f"One sinusoid per column ($d_{{model}}$ = {D_MODEL})")
    positions = list(range(41))
    x0, width, band = 0.45, 4.75, 1.15
    for r, i in enumerate(pairs):
        yc = 4.45 - r * band
        line(ax, [x0, x0 + width], [yc, yc], color="#bbbbbb", lw=0.8)
        for col, style in ((2 * i, "-"), (2 * i + 1, "--")):
            fine = [p / 8 for p in range(40 * 8 + 1)]
            ys = [yc + 0.38 * pe_value(p, col) for p in fine]
            xs = [x0 + width * p / 40 for p in fine]
            line(
                ax,
                xs,
                ys,
                color=ALLOWED if style == "-" else "#d95f02",
                lw=1.5,
                ls=style,
            )
        xs = [x0 + width * p / 40 for p in positions]
        ax.scatter(
            xs,
            [yc + 0.38 * pe_value(p, 2 * i) for p in positions],
            s=7,
            color=ALLOWED,
            zorder=3,
        )
        wavelength = 2 * math.pi * 10000 ** (2 * i / D_MODEL)
        small(
            ax,
            x0,
            yc + 0.5,
            f"pair i = {i}: columns {2 * i}, {2 * i + 1}, wavelength {wavelength:.1f}",
            ha="left",
        )
    small(ax, x0 + width / 2, 0.35, "positions 0 to 40: sine solid, cosine dashed")
    return fig


def ch04_rotation():
    title = "Each pair turns by $\\omega_i k$ from position to position"
    fig, ax = canvas(5.4, 3.7, title)
    for i, cx in ((0, 1.35), (16, 4.05)):
        omega = 10000.0 ** (-2 * i / D_MODEL)
        cy, r = 1.85, 1.0
        ax.add_patch(Circle((cx, cy), r, fc="none", ec="#bbbbbb", lw=1.2))
        line(ax, [cx - r - 0.1, cx + r + 0.1], [cy, cy], color="#cccccc", lw=0.8)
        line(ax, [cx, cx], [cy - r - 0.1, cy + r + 0.1], color="#cccccc", lw=0.8)
        for pos in range(4):
            dx, dy = (
                pe_value(pos, 2 * i),
                pe_value(pos, 2 * i + 1),
            )  # (sin, cos) of pair i
            ax.add_patch(
                Circle(
                    (cx + r * dx, cy + r * dy),
                    0.07,
                    fc=HEAD_COLOURS[pos],
                    ec="none",
                    zorder=3,
                )
            )
            small(
                ax,
                cx + (r - 0.25) * dx,
                cy + (r - 0.25) * dy,
                f"{pos}",
                color=HEAD_COLOURS[pos],
            )
        start = (
            cx + 1.2 * r * pe_value(0, 2 * i),
            cy + 1.2 * r * pe_value(0, 2 * i + 1),
        )
        end = (cx + 1.2 * r * pe_value(1, 2 * i), cy + 1.2 * r * pe_value(1, 2 * i + 1))
        arrow(ax, start, end, color=NOTE, lw=1.2, rad=-0.3)
        small(ax, cx, 0.3, f"pair i = {i}: $\\omega_i$ = {omega:.2f} rad")
    small(ax, 2.7, 1.85, "sin →\ncos ↑")
    return fig


# ------------------------------------------------------------- chapter 5


def sublayer_block(ax, cx, y, label, fc, shape=None, pre_norm=False, width=2.2):
    """A sub-layer and its residual path, from height y up; returns the top."""
    skip_x = cx - width / 2 - 0.35
    if pre_norm:
        arrow(ax, (cx, y), (cx, y + 0.3))
        box(ax, cx, y + 0.55, width * 0.75, 0.5, "LayerNorm", fc=NORM, size=SMALL)
        arrow(ax, (cx, y + 0.8), (cx, y + 1.05))
        box(ax, cx, y + 1.35, width, 0.6, label, fc=fc)
        arrow(ax, (cx, y + 1.65), (cx, y + 1.97))
        plus(ax, cx, y + 2.1)
        line(ax, [cx, skip_x, skip_x], [y + 0.12, y + 0.12, y + 2.1])
        arrow(ax, (skip_x, y + 2.1), (cx - 0.13, y + 2.1))
        return y + 2.23
    arrow(ax, (cx, y), (cx, y + 0.3))
    box(ax, cx, y + 0.6, width, 0.6, label, fc=fc)
    if shape:
        small(ax, cx + width / 2 + 0.1, y + 0.6, shape, ha="left")
    arrow(ax, (cx, y + 0.9), (cx, y + 1.22))
    plus(ax, cx, y + 1.35)
    line(ax, [cx, skip_x, skip_x], [y + 0.12, y + 0.12, y + 1.35])
    arrow(ax, (skip_x, y + 1.35), (cx - 0.13, y + 1.35))
    arrow(ax, (cx, y + 1.48), (cx, y + 1.7))
    box(ax, cx, y + 1.95, width * 0.75, 0.5, "LayerNorm", fc=NORM, size=SMALL)
    return y + 2.2


def ch05_encoder_layer():
    fig, ax = canvas(4.6, 6.6, "An encoder layer (post-norm)")
    cx = 2.0
    text(ax, cx, 0.3, f"x: (B, S, {D_MODEL})")
    y = sublayer_block(ax, cx, 0.5, "self-attention\n" + f"{HEADS} heads", ATTN)
    ffn = f"feed-forward\n{D_MODEL}→{D_FF}→{D_MODEL}"
    y = sublayer_block(ax, cx, y, ffn, FFN)
    arrow(ax, (cx, y), (cx, y + 0.4))
    text(ax, cx, y + 0.6, f"(B, S, {D_MODEL}) to the next layer")
    ax.add_patch(Rectangle((0.35, 0.55), 3.3, y - 0.45, **FRAME))
    text(ax, 3.8, 3.3, f"× N\n= {N_LAYERS}", size=FONT, ha="left")
    note(ax, 3.8, 1.15, "dropout\nbefore +", ha="left")
    return fig


def ch05_post_vs_pre():
    fig, ax = canvas(5.6, 5.0, "Where the LayerNorm goes")
    for cx, pre, title in (
        (1.55, False, "post-norm (paper)"),
        (4.25, True, "pre-norm"),
    ):
        text(ax, cx, 4.35, title, size=FONT)
        text(ax, cx, 0.3, "x")
        y = sublayer_block(ax, cx, 0.45, "sub-layer", ATTN, pre_norm=pre, width=1.6)
        arrow(ax, (cx, y), (cx, y + 0.35))
        small(ax, cx, y + 0.55, "normalised x" if not pre else "x keeps growing")
        if pre:
            note(ax, cx, y + 0.9, "(one final LayerNorm\non top of the stack)")
    return fig


# ------------------------------------------------------------- chapter 6


def ch06_decoder_layer():
    fig, ax = canvas(5.2, 8.9, "A decoder layer")
    cx = 2.1
    text(ax, cx, 0.3, f"target prefix: (B, T, {D_MODEL})")
    y = sublayer_block(ax, cx, 0.5, "masked\nself-attention", ATTN)
    note(ax, cx + 1.2, 1.1, "causal\nmask", ha="left")
    y = sublayer_block(ax, cx, y, "cross-attention", ATTN)
    mem_y = y - 2.2 + 0.6
    box(ax, 4.35, mem_y - 1.0, 1.4, 0.75, "encoder\nmemory", fc=STATE, size=SMALL)
    small(ax, 4.35, mem_y - 1.6, f"(B, S, {D_MODEL})")
    arrow(ax, (4.35, mem_y - 0.62), (cx + 1.1, mem_y), rad=0.3)
    small(ax, 4.25, mem_y + 0.05, "keys,\nvalues", ha="left")
    y = sublayer_block(ax, cx, y, "feed-forward", FFN)
    ax.add_patch(Rectangle((0.25, 0.55), 3.3, y - 0.45, **FRAME))
    text(ax, 3.75, y - 1.0, f"× N = {N_LAYERS}", size=FONT, ha="left")
    arrow(ax, (cx, y), (cx, y + 0.3))
    box(ax, cx, y + 0.55, 2.2, 0.5, f"linear → {VOCAB}", fc=EMBED, size=SMALL)
    arrow(ax, (cx, y + 0.8), (cx, y + 1.05))
    small(ax, cx, y + 1.2, f"logits: (B, T, {VOCAB})")
    return fig


def ch06_cross_attention():
    fig, ax = canvas(5.0, 4.4, "Cross-attention weights: T × S")
    src = ["die", "katze", "schläft", "<eos>", "<pad>"]
    tgt = ["<bos>", "the", "cat", "sleeps", "<eos>", "<pad>"]
    ids = torch.tensor([[7, 8, 9, 2, 0]])
    allowed = padding_mask(ids, 0)[0, 0, 0].expand(len(tgt), -1).tolist()
    grid(ax, 1.6, 2.75, 0.36, allowed, tgt, src)
    small(ax, 2.5, 0.35, "rows: target queries (decoder)\ncolumns: source keys")
    note(ax, 3.6, 1.95, "no causal\nmask; only\nsource pads\nblocked", ha="left")
    return fig


# ------------------------------------------------------------- chapter 7


def ch07_model_data_flow():
    fig, ax = canvas(5.6, 7.6, "The whole model, German to English")
    el, dl = 1.35, 4.2
    text(ax, el, 0.3, "ein Hund läuft", style="italic")
    text(ax, dl, 0.3, "<bos> a dog", style="italic")
    for x, side in ((el, "S"), (dl, "T")):
        arrow(ax, (x, 0.5), (x, 0.8))
        box(ax, x, 1.05, 1.8, 0.5, "BPE ids", fc=GREY, size=SMALL)
        arrow(ax, (x, 1.3), (x, 1.6))
        box(
            ax,
            x,
            1.95,
            2.3,
            0.7,
            f"embedding · √{D_MODEL}\n+ positions",
            fc=EMBED,
            size=SMALL,
        )
        small(ax, x, 2.5, f"(B, {side}, {D_MODEL})")
        arrow(ax, (x, 2.65), (x, 3.05))
    box(ax, el, 3.55, 1.9, 1.0, f"encoder\n× {N_LAYERS}", fc=FFN)
    box(ax, dl, 4.0, 1.9, 1.9, f"decoder\n× {N_LAYERS}", fc=ATTN)
    arrow(ax, (el, 4.05), (el, 4.4))
    small(ax, el, 4.6, "memory")
    small(ax, el, 4.9, f"(B, S, {D_MODEL})")
    arrow(ax, (el + 0.7, 4.75), (dl - 0.95, 4.5))
    arrow(ax, (dl, 4.95), (dl, 5.3))
    box(ax, dl, 5.55, 2.2, 0.5, "linear (tied)", fc=EMBED, size=SMALL)
    arrow(ax, (dl, 5.8), (dl, 6.1))
    box(ax, dl, 6.35, 2.2, 0.5, "softmax", fc=NORM, size=SMALL)
    small(ax, dl, 6.85, f"(B, T, {VOCAB}) probabilities")
    note(ax, el, 6.0, "next English\ntoken at each\nposition")
    return fig


def ch07_teacher_forcing():
    fig, ax = canvas(5.6, 6.0, "Training: teacher forcing")
    words_in = ["<bos>", "a", "dog", "runs"]
    words_out = ["a", "dog", "runs", "<eos>"]
    xs = [0.95, 2.15, 3.35, 4.55]
    box(
        ax,
        2.75,
        4.6,
        4.9,
        0.55,
        "decoder: every position in one pass",
        fc=ATTN,
        size=SMALL,
    )
    for x, a, b in zip(xs, words_in, words_out, strict=True):
        small(ax, x, 3.9, a)
        arrow(ax, (x, 4.05), (x, 4.32))
        arrow(ax, (x, 4.88), (x, 5.15))
        small(ax, x, 5.3, b, weight="bold")
    note(ax, 2.8, 3.5, "inputs are the reference, shifted right")
    text(ax, 2.8, 3.0, "Translating: one step at a time", size=FONT, weight="bold")
    for step in range(3):
        y = 2.3 - step * 0.8
        prefix = words_in[: step + 1]
        small(ax, 0.15, y, f"step {step + 1}", ha="left")
        for j, word in enumerate(prefix):
            small(ax, 1.3 + 0.62 * j, y, word)
        arrow(ax, (3.1, y), (3.45, y))
        box(ax, 3.95, y, 0.8, 0.45, "dec", fc=ATTN, size=SMALL)
        arrow(ax, (4.35, y), (4.7, y))
        small(ax, 5.0, y, words_out[step], weight="bold")
        if step < 2:
            arrow(
                ax,
                (5.0, y - 0.2),
                (1.3 + 0.62 * (step + 1) + 0.2, y - 0.62),
                color="#777777",
                ls="--",
                lw=1.2,
            )
    note(
        ax,
        2.8,
        0.1 + 0.08,
        "each prediction is fed back as the next input",
        va="bottom",
    )
    return fig


def ch07_label_smoothing():
    vocab = 8
    fig, ax = canvas(5.4, 3.9, f"Label smoothing, ε = {EPS_LS} (V = {vocab} here)")
    q_hot = [1.0 if v == 2 else 0.0 for v in range(vocab)]
    q_ls = [(1 - EPS_LS) * h + EPS_LS / vocab for h in q_hot]
    panels = ((q_hot, "one-hot target", BLOCKED), (q_ls, "smoothed target", ALLOWED))
    for k, (q, title, colour) in enumerate(panels):
        x0 = 0.35 + k * 2.7
        base, scale, bw = 0.75, 2.2, 0.27
        line(ax, [x0, x0 + vocab * bw], [base, base], lw=1.0)
        for v, value in enumerate(q):
            ax.add_patch(
                Rectangle(
                    (x0 + v * bw + 0.03, base),
                    bw - 0.06,
                    scale * value,
                    fc=colour,
                    ec="none",
                )
            )
        small(ax, x0 + vocab * bw / 2, 0.45, title)
        small(ax, x0 + 2.5 * bw, base + scale * q[2] + 0.15, f"{q[2]:.4g}")
        if k:
            small(ax, x0 + 6.5 * bw, base + 0.35, f"{q[0]:.4g} each")
    note(ax, 2.7, 0.15, "the correct word is the third")
    return fig


# ------------------------------------------------------------- chapter 8


def ch08_beam_search():
    """A beam of 2 for three steps: made-up log-probabilities, computed sums."""
    fig, ax = canvas(5.6, 5.6, "Beam search, beam size 2")
    # step -> list of (parent index in previous step's kept list, word, log-probability)
    steps = [
        [(0, "a", -0.4), (0, "the", -1.2), (0, "one", -2.3)],
        [(0, "dog", -0.5), (0, "man", -1.6), (1, "dog", -0.3), (1, "cat", -2.0)],
        [(0, "runs", -0.7), (0, "is", -0.9), (1, "runs", -0.2), (1, "sits", -1.5)],
    ]
    keep = 2
    prev = [("<bos>", 0.0, (0.45, 2.7))]
    box(ax, 0.45, 2.7, 0.75, 0.42, "<bos>", fc=GREY, size=SMALL)
    for s, cands in enumerate(steps):
        scored = [(prev[p][1] + lp, p, w) for p, w, lp in cands]
        ranked = sorted(range(len(scored)), key=lambda n: -scored[n][0])[:keep]
        x = 1.8 + s * 1.45
        where = []
        for n, (score, p, w) in enumerate(scored):
            y = 4.6 - n * (3.8 / (len(cands) - 1))
            where.append((x, y))
            good = n in ranked
            ink = INK if good else "#999999"
            px, py = prev[p][2]
            arrow(
                ax,
                (px + 0.38, py),
                (x - 0.5, y),
                color=INK if good else "#bbbbbb",
                lw=1.4 if good else 1.0,
            )
            box(
                ax,
                x,
                y,
                1.0,
                0.55,
                "",
                fc=STATE if good else "white",
                ec=INK if good else "#bbbbbb",
            )
            small(ax, x, y + 0.11, w, color=ink)
            small(ax, x, y - 0.13, f"{score:.1f}", color=ink)
        prev = [(scored[n][2], scored[n][0], where[n]) for n in ranked]  # best first
    note(ax, 2.8, 0.2, "kept: green; dropped: grey; number: summed log p")
    return fig


def ch08_kv_cache():
    fig, ax = canvas(5.0, 5.2, "A key/value cache filling up")
    words = ["<bos>", "a", "dog", "runs"]
    c = 0.42
    for t in range(4):
        y = 3.95 - t * 1.05
        small(ax, 0.1, y + c / 2, f"step {t + 1}", ha="left")
        for j in range(t + 1):
            new = j == t
            fc_k = ATTN if new else "#fbeedd"
            fc_v = FFN if new else "#e6f1fa"
            lw = 1.2 if new else 0.7
            x = 1.2 + j * c
            ax.add_patch(Rectangle((x, y + c / 2), c, c / 2, fc=fc_k, ec=INK, lw=lw))
            ax.add_patch(Rectangle((x, y), c, c / 2, fc=fc_v, ec=INK, lw=lw))
        label = f"new token: {words[t]}"
        small(ax, 1.2 + (t + 1) * c + 0.15, y + c / 2, label, ha="left")
    items = [(ATTN, "new key"), (FFN, "new value"), ("#fbeedd", "cached")]
    legend(ax, 0.2, 0.45, items)
    note(ax, 2.5, 0.1, "the new query attends to every cached key", va="bottom")
    return fig


DIAGRAMS: dict[str, Callable] = {
    "ch01_fixed_context": ch01_fixed_context,
    "ch01_attention_context": ch01_attention_context,
    "ch02_qkv_shapes": ch02_qkv_shapes,
    "ch02_masks": ch02_masks,
    "ch03_multi_head": ch03_multi_head,
    "ch03_split_heads": ch03_split_heads,
    "ch04_sinusoids": ch04_sinusoids,
    "ch04_rotation": ch04_rotation,
    "ch05_encoder_layer": ch05_encoder_layer,
    "ch05_post_vs_pre": ch05_post_vs_pre,
    "ch06_decoder_layer": ch06_decoder_layer,
    "ch06_cross_attention": ch06_cross_attention,
    "ch07_model_data_flow": ch07_model_data_flow,
    "ch07_teacher_forcing": ch07_teacher_forcing,
    "ch07_label_smoothing": ch07_label_smoothing,
    "ch08_beam_search": ch08_beam_search,
    "ch08_kv_cache": ch08_kv_cache,
}

# ---------------------------------------------------------------- output


def render(draw: Callable) -> bytes:
    """The SVG bytes of one diagram, made deterministic and self-contained."""
    with plt.rc_context():
        matplotlib.rcdefaults()  # a matplotlibrc of the reader's changes nothing
        plt.rcParams.update(STYLE)
        fig = draw()
        buffer = io.StringIO()
        fig.savefig(
            buffer,
            format="svg",
            metadata={"Date": None, "Creator": None, "Format": None, "Type": None},
        )
        plt.close(fig)
    svg = buffer.getvalue()
    # the DOCTYPE names a DTD on another host; SVG needs none
    svg = re.sub(r"<!DOCTYPE svg[^>]*>\n", "", svg)
    # mathtext names one font per glyph; let the browser fall back to any sans-serif
    svg = re.sub(r"(font-family: '[^']+')(?=[;\"])", r"\1, sans-serif", svg)
    return svg.encode("utf-8")


def write_all(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, draw in DIAGRAMS.items():
        path = folder / f"{name}.svg"
        path.write_bytes(render(draw))
        paths.append(path)
    return paths


def stale(folder: Path = FIGURES) -> list[str]:
    """The diagrams whose file in ``folder`` is missing or differs from a fresh one."""
    out = []
    for name, draw in DIAGRAMS.items():
        path = folder / f"{name}.svg"
        if not path.is_file() or path.read_bytes() != render(draw):
            shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
            out.append(str(shown))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report stale diagrams")
    args = parser.parse_args(argv)
    if args.check:
        out = stale()
        for path in out:
            print(f"out of date: {path} (run python tools/diagrams.py)")
        return 1 if out else 0
    for path in write_all(FIGURES):
        print(path.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    matplotlib.use("svg")  # no window needed; a test that imports this keeps its own
    sys.exit(main())
