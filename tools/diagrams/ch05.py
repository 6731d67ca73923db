"""Chapter 5: the encoder layer, post-norm against pre-norm."""

from __future__ import annotations

import torch
from matplotlib.patches import Rectangle

from aiayn_helpers import padding_mask

from .draw import (
    ALLOWED,
    ATTN,
    BLOCKED,
    D_FF,
    D_MODEL,
    FFN,
    FONT,
    FRAME,
    GREY,
    HEADS,
    INK,
    N_LAYERS,
    arrow,
    canvas,
    legend,
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


# the padded batch of the chapter's comparison with nn.TransformerEncoder
MASK_TOKENS = [
    [5, 8, 2, 9, 4, 7, 0, 0, 0],
    [3, 3, 6, 1, 0, 0, 0, 0, 0],
    [9, 8, 7, 6, 5, 4, 3, 2, 1],
]


def ch05_mask_conventions():
    """The chapter's padded batch and its two key masks: ours (True = may attend)
    and nn.TransformerEncoder's src_key_padding_mask (True = padding, blocked). A
    cell's colour is what it means, its letter what the tensor stores."""
    fig, ax = canvas(6.0, 4.0, "The same padding, two conventions")
    tokens = torch.tensor(MASK_TOKENS)
    ours = padding_mask(tokens, 0)[:, 0, 0].tolist()  # (B, S), True = may attend
    nn_mask = (tokens == 0).tolist()  # (B, S), True = padding
    cell = 0.28
    width = cell * tokens.shape[1]

    def cells(x0, y_top, entries, fills):
        for i, row in enumerate(entries):
            for j, entry in enumerate(row):
                corner = (x0 + j * cell, y_top - (i + 1) * cell)
                ax.add_patch(Rectangle(corner, cell, cell, fc=fills[i][j], ec="white", lw=2))
                colour = INK if fills[i][j] == GREY else "white"
                small(ax, corner[0] + cell / 2, corner[1] + cell / 2, entry, color=colour)

    meaning = [[ALLOWED if keep else BLOCKED for keep in row] for row in ours]
    x_tokens = (6.0 - width) / 2
    cells(x_tokens, 3.5, tokens.tolist(), [[GREY] * len(r) for r in MASK_TOKENS])
    small(ax, x_tokens - 0.1, 3.5 - 1.5 * cell, "tokens", ha="right")
    note(ax, x_tokens + width + 0.1, 3.5 - 1.5 * cell, "0 = <pad>", ha="left")
    top = 1.74
    for x0, stored, lines in (
        (0.35, ours, ["ours: padding_mask(tokens, 0)", "True = may attend"]),
        (3.25, nn_mask, ["nn: src_key_padding_mask", "= tokens == 0", "True = padding"]),
    ):
        cells(x0, top, [["T" if s else "F" for s in row] for row in stored], meaning)
        for k, words in enumerate(lines):
            small(ax, x0 + width / 2, top + 0.12 + 0.26 * (len(lines) - 1 - k), words, va="bottom")
    legend(ax, 0.35, top - 3 * cell - 0.3, [(ALLOWED, "may attend"), (BLOCKED, "blocked")])
    note(ax, 0.35, top - 3 * cell - 0.65, "colour: what a cell means; letter: what the tensor stores", ha="left")
    return fig


FIGURES.append(ch05_mask_conventions)
