"""Chapter 1: a fixed context against attention's context per step."""

from __future__ import annotations

from matplotlib.patches import Rectangle

from .draw import (
    ALLOWED,
    ATTN,
    NORM,
    NOTE,
    SMALL,
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


def reversal_example() -> tuple[list[int], list[int]]:
    """The source and target chapter 1 prints for its task: ``make_batch(2, 6, g)``
    with ``g`` seeded 0, tokens 1 to 20, the first sentence and its reversal."""
    import torch

    src = torch.randint(1, 21, (2, 6), generator=torch.Generator().manual_seed(0))[0]
    return src.tolist(), src.flip(0).tolist()


def ch01_reversal():
    fig, ax = canvas(5.6, 3.7, "Reversal: each output copies one input")
    src, tgt = reversal_example()
    xs = [1.35 + 0.78 * j for j in range(len(src))]
    top, bottom = 2.75, 1.15
    small(ax, 0.1, top, "source", ha="left")
    small(ax, 0.1, bottom, "target", ha="left")
    for j, (x, token) in enumerate(zip(xs, src)):
        box(ax, x, top, 0.56, 0.46, str(token), fc=STATE)
        small(ax, x, top + 0.38, f"$x_{j + 1}$")
    for i, (x, token) in enumerate(zip(xs, tgt)):
        box(ax, x, bottom, 0.56, 0.46, str(token), fc=ATTN)
        small(ax, x, bottom - 0.38, f"$y_{i + 1}$")
        j = len(src) - 1 - i  # output i copies input T_x + 1 - i (counting from 1)
        arrow(ax, (xs[j], top - 0.23), (x, bottom + 0.23), color=ALLOWED, lw=1.4)
    note(ax, 2.8, 0.3, r"output $i$ copies input $T_x + 1 - i$: an anti-diagonal alignment")
    return fig


FIGURES.append(ch01_reversal)


def ch01_query_key_value():
    """The attention step as a function, with Bahdanau's names and the Transformer's."""
    fig, ax = canvas(5.9, 4.3, "The attention step, renamed by the Transformer")
    xs = [2.35, 2.95, 3.55, 4.15]
    weights = [0.1, 0.6, 0.2, 0.1]  # illustrative, as in the diagram above
    small(ax, 0.1, 3.45, "keys", ha="left", weight="bold")
    small(ax, 0.1, 3.12, "$k_j = h_j$", ha="left")
    small(ax, 0.1, 0.95, "values", ha="left", weight="bold")
    small(ax, 0.1, 0.62, "$v_j = h_j$", ha="left")
    box(ax, 0.75, 2.15, 1.1, 0.75, "", fc=ATTN)
    small(ax, 0.75, 2.3, "query", weight="bold")
    small(ax, 0.75, 1.98, "$q = s_{i-1}$")
    for j, (x, w) in enumerate(zip(xs, weights)):
        box(ax, x, 3.3, 0.5, 0.42, f"$h_{j + 1}$", fc=STATE, size=SMALL)
        box(ax, x, 0.8, 0.5, 0.42, f"$h_{j + 1}$", fc=STATE, size=SMALL)
        arrow(ax, (x, 3.07), (x, 2.6), color=NOTE, lw=1.0)
        box(ax, x, 2.4, 0.5, 0.34, "", fc=NORM, lw=1.0)
        bar = 0.46 * w / max(weights)  # the weight as a bar
        ax.add_patch(Rectangle((x - 0.23, 1.62), 0.46, bar, fc=ALLOWED, ec="none"))
        line(ax, [x, x], [1.03, 1.55], color=NOTE, lw=1.0)
    arrow(ax, (1.32, 2.4), (2.05, 2.4))
    small(ax, 4.55, 2.4, "scores $e_{ij}$", ha="left")
    small(ax, 4.55, 1.82, r"weights $\alpha_{ij}$", ha="left")
    small(ax, 4.55, 1.45, "(softmax)", ha="left", color=NOTE)
    arrow(ax, (4.45, 0.8), (5.05, 0.8))
    box(ax, 5.4, 0.8, 0.6, 0.42, "$c_i$", fc=NORM, weight="bold")
    small(ax, 5.4, 0.35, "output")
    note(ax, 3.25, 0.22, r"output $= \sum_j$ weight $\times$ value")
    return fig


FIGURES.append(ch01_query_key_value)
