"""Chapter 6: the decoder layer and the cross-attention weights."""

from __future__ import annotations

import torch
from matplotlib.patches import Rectangle

from aiayn_helpers import padding_mask

from .draw import (
    ATTN,
    D_MODEL,
    EMBED,
    FFN,
    FONT,
    FRAME,
    N_LAYERS,
    SMALL,
    STATE,
    VOCAB,
    arrow,
    box,
    canvas,
    grid,
    note,
    small,
    sublayer_block,
    text,
)


def ch06_decoder_layer():
    fig, ax = canvas(5.8, 8.9, "A decoder layer")
    cx = 2.1
    text(ax, cx, 0.3, f"target prefix: (B, T, {D_MODEL})")
    y = sublayer_block(ax, cx, 0.5, "masked\nself-attention", ATTN)
    note(ax, cx + 1.2, 1.1, "causal\nmask", ha="left")
    y = sublayer_block(ax, cx, y, "cross-attention", ATTN)
    mem_y = y - 2.2 + 0.6
    mx = 4.95  # the encoder's memory, outside the layer's frame
    box(ax, mx, mem_y - 1.0, 1.4, 0.75, "encoder\nmemory", fc=STATE, size=SMALL)
    small(ax, mx, mem_y - 1.6, f"(B, S, {D_MODEL})")
    arrow(ax, (mx, mem_y - 0.62), (cx + 1.1, mem_y), rad=0.3)
    small(ax, mx - 0.1, mem_y + 0.05, "keys,\nvalues", ha="left")
    y = sublayer_block(ax, cx, y, "feed-forward", FFN)
    ax.add_patch(Rectangle((0.25, 0.55), 3.85, y - 0.45, **FRAME))
    text(ax, 4.3, y - 1.0, f"× N = {N_LAYERS}", size=FONT, ha="left")
    arrow(ax, (cx, y), (cx, y + 0.3))
    box(ax, cx, y + 0.55, 2.2, 0.5, f"linear → {VOCAB}", fc=EMBED, size=SMALL)
    arrow(ax, (cx, y + 0.8), (cx, y + 1.05))
    small(ax, cx, y + 1.2, f"logits: (B, T, {VOCAB})")
    return fig


def ch06_cross_attention():
    fig, ax = canvas(5.0, 4.4, "Cross-attention mask: T × S")
    src = ["die", "katze", "schläft", "<eos>", "<pad>"]
    tgt = ["<bos>", "the", "cat", "sleeps", "<eos>", "<pad>"]
    ids = torch.tensor([[7, 8, 9, 2, 0]])
    allowed = padding_mask(ids, 0)[0, 0, 0].expand(len(tgt), -1).tolist()
    grid(ax, 1.6, 2.75, 0.36, allowed, tgt, src)
    small(ax, 2.5, 0.35, "rows: target queries (decoder)\ncolumns: source keys")
    note(ax, 3.6, 1.95, "no causal\nmask; only\nsource pads\nblocked", ha="left")
    return fig


FIGURES = [ch06_decoder_layer, ch06_cross_attention]
