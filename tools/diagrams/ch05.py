"""Chapter 5: the encoder layer, post-norm against pre-norm."""

from __future__ import annotations

from matplotlib.patches import Rectangle

from .draw import (
    ATTN,
    D_FF,
    D_MODEL,
    FFN,
    FONT,
    FRAME,
    HEADS,
    N_LAYERS,
    arrow,
    canvas,
    note,
    small,
    sublayer_block,
    text,
)


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


FIGURES = [ch05_encoder_layer, ch05_post_vs_pre]
