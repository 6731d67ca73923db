"""Chapter 6: the decoder layer and the cross-attention weights."""

from __future__ import annotations

import torch
from matplotlib.patches import Rectangle

from aiayn_helpers import causal_mask, padding_mask

from .draw import (
    ALLOWED,
    ATTN,
    BLOCKED,
    D_MODEL,
    EMBED,
    FFN,
    FONT,
    FRAME,
    N_LAYERS,
    SMALL,
    STATE,
    arrow,
    box,
    canvas,
    grid,
    legend,
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
    box(ax, cx, y + 0.55, 2.2, 0.5, "linear → V", fc=EMBED, size=SMALL)
    arrow(ax, (cx, y + 0.8), (cx, y + 1.05))
    small(ax, cx, y + 1.2, "logits: (B, T, V), V the vocabulary")
    return fig


def ch06_cross_attention():
    fig, ax = canvas(5.0, 4.65, "Cross-attention mask: T × S")
    src = ["die", "katze", "schläft", "<eos>", "<pad>"]
    tgt = ["<bos>", "the", "cat", "sleeps", "<eos>", "<pad>"]
    ids = torch.tensor([[7, 8, 9, 2, 0]])
    allowed = padding_mask(ids, 0)[0, 0, 0].expand(len(tgt), -1).tolist()
    grid(ax, 1.6, 3.0, 0.36, allowed, tgt, src)
    small(ax, 2.5, 0.6, "rows: target queries (decoder)\ncolumns: source keys")
    note(ax, 3.6, 2.2, "no causal\nmask; only\nsource pads\nblocked", ha="left")
    legend(ax, 1.1, 0.15, [(ALLOWED, "attend"), (BLOCKED, "blocked")])
    return fig


def ch06_torch_masks():
    """Our one target mask (True = may attend) against PyTorch's two (True = blocked),
    for the chapter's second target sentence; a cell's colour is what it means, its
    letter what the tensor stores."""
    fig, ax = canvas(6.0, 5.5, "One mask of ours, two of PyTorch's")
    tgt = ["<bos>", "the", "cat", "sleeps", "<eos>", "<pad>"]
    ids = torch.tensor([[1, 9, 10, 11, 2, 0]])
    n, cell = len(tgt), 0.34
    ours = (padding_mask(ids, 0)[0, 0] & causal_mask(n)).tolist()
    blocked = (~causal_mask(n)).tolist()
    pads = (ids[0] == 0).tolist()

    def letters(x0, y_top, stored):
        for i, row in enumerate(stored):
            for j, value in enumerate(row):
                x, y = x0 + (j + 0.5) * cell, y_top - (i + 0.5) * cell
                small(ax, x, y, "T" if value else "F", color="white")

    left, right, top = 0.95, 3.75, 4.1
    mid_left, mid_right = left + n * cell / 2, right + n * cell / 2
    text(ax, mid_left, 4.95, "ours: one tensor")
    text(ax, mid_right, 4.95, "PyTorch: two tensors")
    grid(ax, left, top, cell, ours, tgt, tgt)
    letters(left, top, ours)
    grid(ax, right, top, cell, [[not b for b in row] for row in blocked], [], tgt)
    letters(right, top, blocked)
    bottom = top - n * cell
    small(ax, mid_left, bottom - 0.22, "tgt_mask, True = may attend")
    small(ax, mid_left, bottom - 0.5, "(padding & causal)")
    small(ax, mid_right, bottom - 0.22, "tgt_mask = ~causal_mask(T)")
    small(ax, mid_right, bottom - 0.5, "True = blocked")
    row_top = bottom - 0.8
    grid(ax, right, row_top, cell, [[not p for p in pads]], [], [])
    letters(right, row_top, [pads])
    small(ax, mid_right, row_top - cell - 0.2, "tgt_key_padding_mask")
    small(ax, mid_right, row_top - cell - 0.46, "True = padding key")
    legend(ax, 0.35, row_top - 0.2, [(ALLOWED, "may attend")])
    legend(ax, 0.35, row_top - 0.55, [(BLOCKED, "blocked")])
    note(ax, 0.35, row_top - 0.95, "letters: what the\ntensor stores", ha="left")
    return fig


FIGURES = [ch06_decoder_layer, ch06_cross_attention, ch06_torch_masks]
