"""The drawing vocabulary of the diagrams: a canvas in inches, boxes, text, arrows,
grids and matrices, the residual "+" and a sub-layer with its residual path.

Sizes written on a diagram come from ``aiayn_helpers.config.BASE`` (``D_MODEL``,
``HEADS``, ...), colours are one per kind of block, as in the paper's Figure 1, and no
text is smaller than ``MIN_FONT_PT`` points (``text`` refuses it).
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch, Rectangle

from aiayn_helpers.config import BASE

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


def line(ax, xs, ys, color=INK, lw=1.6, ls="-", **kw):
    ax.plot(xs, ys, color=color, lw=lw, linestyle=ls, solid_capstyle="butt", **kw)


def plus(ax, x, y, r=0.13):
    """The residual addition: a white circle with a plus drawn on top of it.

    The SVG names the parts ``residual-add-K`` (the circle) and ``residual-add-K-plus``
    (its two strokes), so tests/test_diagrams.py can find every "+" and its circle.
    """
    k = sum(1 for p in ax.patches if (p.get_gid() or "").startswith("residual-add"))
    gid = f"residual-add-{k}"
    ax.add_patch(Circle((x, y), r, fc="white", ec=INK, lw=1.4, zorder=3, gid=gid))
    xs = [x - r * 0.6, x + r * 0.6, None, x, x]
    ys = [y, y, None, y - r * 0.6, y + r * 0.6]
    line(ax, xs, ys, lw=1.4, zorder=4, gid=f"{gid}-plus")


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


def legend(ax, x, y, items, edge="white", lw=1.0):
    """Small squares with a label each, in a row starting at (x, y); ``edge`` outlines
    them (as the boxes they stand for are outlined, so pale colours show on white)."""
    for colour, label in items:
        ax.add_patch(Rectangle((x, y - 0.09), 0.18, 0.18, fc=colour, ec=edge, lw=lw))
        small(ax, x + 0.25, y, label, ha="left")
        x += 0.25 + 0.11 * len(label) + 0.3


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


def pe_value(pos: float, column: int, d_model: int = D_MODEL) -> float:
    """PE(pos, column) by the paper's formula, in plain Python (the same everywhere)."""
    omega = 10000.0 ** (-(column - column % 2) / d_model)
    return math.sin(pos * omega) if column % 2 == 0 else math.cos(pos * omega)
