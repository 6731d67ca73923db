"""Chapter 1: a fixed context against attention's context per step."""

from __future__ import annotations

from .draw import (
    ALLOWED,
    ATTN,
    NORM,
    STATE,
    arrow,
    box,
    canvas,
    line,
    note,
    small,
    text,
)


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


FIGURES = [ch01_fixed_context, ch01_attention_context]
