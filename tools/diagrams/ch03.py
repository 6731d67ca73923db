"""Chapter 3: multi-head attention and splitting into heads."""

from __future__ import annotations

from matplotlib.patches import Rectangle

from .draw import (
    ATTN,
    D_K,
    D_MODEL,
    FFN,
    FONT,
    GREY,
    HEAD_COLOURS,
    HEADS,
    INK,
    SMALL,
    arrow,
    box,
    canvas,
    note,
    small,
    text,
)


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


SEQ_B, SEQ_T = 3, 6  # chapter 3's batch for nn.MultiheadAttention: x is (3, 6, 16)
SEQ_D = 16


def _token_grid(ax, x0, y_top, by_row: bool):
    """The batch as a B x T grid of tokens a0 ... c5; a colour per attention group."""
    w, h = 0.6, 0.4
    for b in range(SEQ_B):
        for t in range(SEQ_T):
            colour = HEAD_COLOURS[b if by_row else t]
            corner = (x0 + t * w, y_top - (b + 1) * h)
            ax.add_patch(Rectangle(corner, w, h, fc=colour, alpha=0.4, ec=INK, lw=0.8))
            small(ax, x0 + (t + 0.5) * w, y_top - (b + 0.5) * h, f"{'abc'[b]}{t}")
    groups = range(SEQ_B) if by_row else range(SEQ_T)
    for g in groups:  # a frame around each group that attends together
        if by_row:
            corner, gw, gh = (x0, y_top - (g + 1) * h), SEQ_T * w, h
        else:
            corner, gw, gh = (x0 + g * w, y_top - SEQ_B * h), w, SEQ_B * h
        ax.add_patch(Rectangle(corner, gw, gh, fc="none", ec=INK, lw=2.2))
    for b in range(SEQ_B):
        small(ax, x0 - 0.1, y_top - (b + 0.5) * h, f"sentence {'abc'[b]}", ha="right")


def ch03_sequence_first():
    fig, ax = canvas(6.0, 5.05)
    x0, up = 1.55, 0.3
    text(ax, 3.0, 4.5 + up, "batch_first=True: each sentence is a row")
    for t in range(SEQ_T):
        small(ax, x0 + (t + 0.5) * 0.6, 4.17 + up, str(t))
    small(ax, x0 - 0.1, 4.17 + up, "position", ha="right")
    _token_grid(ax, x0, 3.97 + up, by_row=True)
    shape = f"x: (B, T, $d_{{model}}$) = ({SEQ_B}, {SEQ_T}, {SEQ_D})"
    small(ax, 3.0, 2.6 + up, shape)
    text(ax, 3.0, 2.18 + up, "batch_first=False: each “sentence” is a column")
    _token_grid(ax, x0, 1.93 + up, by_row=False)
    read_as = f"the same x read as (T, B, $d_{{model}}$): {SEQ_T} “sentences” of {SEQ_B}"
    note(ax, 3.0, 0.42 + up, read_as + " words")
    note(ax, 3.0, 0.35, "framed: the words that attend to one another")
    return fig


FIGURES = [ch03_multi_head, ch03_split_heads, ch03_sequence_first]
