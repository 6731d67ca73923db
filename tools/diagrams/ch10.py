"""Chapter 10: the masks of GPT and BERT, RoPE's rotation, ALiBi's bias, and
FlashAttention's tiles. Masks and biases are the package's own (``causal_mask``,
``alibi_bias``), RoPE's vectors are turned by ``apply_rotary``."""

from __future__ import annotations

import math

import torch
from matplotlib.patches import Circle, Rectangle

from aiayn_helpers import alibi_bias, alibi_slopes, apply_rotary, causal_mask

from .draw import (
    ALLOWED,
    ATTN,
    BLOCKED,
    INK,
    NORM,
    NOTE,
    SMALL,
    STATE,
    arrow,
    box,
    canvas,
    grid,
    legend,
    line,
    small,
    text,
)

GPT_WORDS = ["a", "dog", "runs", "in", "the", "snow"]
BERT_WORDS = ["a", "[MASK]", "runs", "in", "the", "[MASK]"]


def ch10_masks():
    fig, ax = canvas(6.0, 4.3, "GPT reads to the left, BERT both ways")
    n = len(GPT_WORDS)
    gpt = causal_mask(n).tolist()
    bert = torch.ones(n, n, dtype=torch.bool).tolist()  # no mask: every key
    cell = 0.3
    grid(ax, 1.05, 3.1, cell, gpt, GPT_WORDS, GPT_WORDS, "GPT: causal mask")
    grid(ax, 4.1, 3.1, cell, bert, BERT_WORDS, BERT_WORDS, "BERT: no mask")
    small(ax, 1.95, 0.75, "predicts the next word", color=NOTE)
    # BERT predicts every token chosen (15%), whether it became [MASK], a random
    # token or stayed as it was; the two shown here became [MASK]
    small(ax, 4.83, 0.75, "predicts each chosen token", color=NOTE)
    small(ax, 4.83, 0.5, "([MASK], random or kept)", color=NOTE)
    small(ax, 0.1, 0.12, "rows: queries; columns: keys", ha="left")
    legend(ax, 3.3, 0.12, [(ALLOWED, "attend"), (BLOCKED, "blocked")])
    return fig


ROPE_Q, ROPE_K = (1.0, 0.0), (0.7, 0.0)  # one pair of features, so theta = 1 rad
ROPE_CASES = [(2, 1), (5, 4)]  # (query position m, key position n): the same m - n


def rotary(vector, position):
    """``vector`` (one pair of features) turned by ``apply_rotary`` at ``position``."""
    x = torch.tensor([[[vector]]], dtype=torch.float64)  # (1, 1, T=1, d=2)
    return apply_rotary(x, torch.tensor([position]))[0, 0, 0].tolist()


def rope_scores():
    """q·k after rotation for each case in ROPE_CASES."""
    out = []
    for m, n in ROPE_CASES:
        q, k = rotary(ROPE_Q, m), rotary(ROPE_K, n)
        out.append(q[0] * k[0] + q[1] * k[1])
    return out


def ch10_rope():
    fig, ax = canvas(6.0, 4.3, "RoPE: only the distance m − n turns the score")
    for (m, n), score, cx in zip(ROPE_CASES, rope_scores(), (1.5, 4.5), strict=True):
        cy, r = 2.0, 1.0
        ax.add_patch(Circle((cx, cy), r, fc="none", ec="#bbbbbb", lw=1.2))
        line(ax, [cx - r - 0.1, cx + r + 0.1], [cy, cy], color="#cccccc", lw=0.8)
        line(ax, [cx, cx], [cy - r - 0.1, cy + r + 0.1], color="#cccccc", lw=0.8)
        for vector, pos, colour, name in ((ROPE_Q, m, "#d95f02", "q"), (ROPE_K, n, ALLOWED, "k")):
            x, y = rotary(vector, pos)
            scale = r
            arrow(ax, (cx, cy), (cx + scale * x, cy + scale * y), color=colour, lw=2.2)
            label = f"{name} at {'m' if name == 'q' else 'n'} = {pos}"
            length = math.hypot(x, y)
            tip = (cx + (r + 0.3) * x / length, cy + (r + 0.3) * y / length)
            small(ax, *tip, label, color=colour)
        small(ax, cx, 0.22, f"m − n = {m - n}: q·k = {score:.3f}")
    note = "one pair of features (θ = 1 rad): each vector turns by its position"
    small(ax, 3.0, 3.7, note, color=NOTE)
    return fig


ALIBI_HEADS, ALIBI_T = 4, 5


def ch10_alibi():
    slope = alibi_slopes(ALIBI_HEADS)[0].item()
    title = f"ALiBi: head 0 adds −{slope:g}·(i − j) to each score"
    fig, ax = canvas(5.6, 4.2, title)
    bias = alibi_bias(ALIBI_HEADS, ALIBI_T, ALIBI_T)[0] + 0.0  # head 0: (T, T)
    allowed = causal_mask(ALIBI_T)
    cell, x0, top = 0.56, 1.5, 3.45
    shade = [-bias[allowed].min().item() or 1.0]
    for i in range(ALIBI_T):
        small(ax, x0 - 0.12, top - (i + 0.5) * cell, f"i = {i}", ha="right")
        for j in range(ALIBI_T):
            corner = (x0 + j * cell, top - (i + 1) * cell)
            if allowed[i, j]:
                value = bias[i, j].item()
                depth = -value / shade[0]  # 0 on the diagonal, 1 furthest back
                colour = mix(ALLOWED, "#ffffff", 0.25 + 0.75 * (1 - depth))
                ax.add_patch(Rectangle(corner, cell, cell, fc=colour, ec="white", lw=2))
                small(ax, corner[0] + cell / 2, corner[1] + cell / 2, f"{value:g}")
            else:
                ax.add_patch(Rectangle(corner, cell, cell, fc=BLOCKED, ec="white", lw=2))
                small(ax, corner[0] + cell / 2, corner[1] + cell / 2, "−∞", color="white")
    for j in range(ALIBI_T):
        small(ax, x0 + (j + 0.5) * cell, top + 0.12, f"j = {j}", va="bottom")
    slopes = ", ".join(f"{s:g}" for s in alibi_slopes(ALIBI_HEADS).tolist())
    small(ax, 2.8, 0.25, f"slopes of the {ALIBI_HEADS} heads: {slopes}", color=NOTE)
    return fig


def mix(colour: str, other: str, share: float) -> str:
    """``share`` of ``colour`` and the rest of ``other``, as #rrggbb."""
    a = [int(colour[i : i + 2], 16) for i in (1, 3, 5)]
    b = [int(other[i : i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{round(share * u + (1 - share) * v):02x}" for u, v in zip(a, b, strict=True))


TILE_T, TILE_BLOCK = 300, 64  # the chapter's tiled_attention: T = 300, blocks of 64


def tiles() -> list[int]:
    """The block sizes that cover TILE_T positions, the last one shorter."""
    return [min(TILE_BLOCK, TILE_T - s) for s in range(0, TILE_T, TILE_BLOCK)]


TILE_NOW = (2, 2)  # (query block, key/value block) of the tile in fast memory now
UNVISITED = "#f4f4f4"


def tile_state(i: int, j: int) -> str:
    """Where FlashAttention's algorithm 1 stands at TILE_NOW: its outer loop runs over
    the key/value blocks j, its inner loop over the query blocks i."""
    now_i, now_j = TILE_NOW
    if (i, j) == TILE_NOW:
        return "now"
    return "done" if j < now_j or (j == now_j and i < now_i) else "not yet"


def ch10_tiling():
    fig, ax = canvas(6.0, 5.6, "FlashAttention: one tile of scores at a time")
    sizes = tiles()
    scale = 2.9 / TILE_T  # inches per position
    x0, top = 1.55, 4.45
    edges = [0]
    for s in sizes:
        edges.append(edges[-1] + s)
    fill = {"done": NORM, "now": ATTN, "not yet": UNVISITED}
    for i, (a, b) in enumerate(zip(edges, edges[1:], strict=False)):
        for j, (c, d) in enumerate(zip(edges, edges[1:], strict=False)):
            fc = fill[tile_state(i, j)]
            corner = (x0 + c * scale, top - b * scale)
            ax.add_patch(Rectangle(corner, (d - c) * scale, (b - a) * scale, fc=fc, ec=INK, lw=1.0))
    for j, s in enumerate(sizes):
        small(ax, x0 + (edges[j] + s / 2) * scale, top + 0.15, f"{s}", va="bottom")
    head = f"outer loop: keys and values in blocks (T = {TILE_T}) →"
    small(ax, x0 + TILE_T * scale / 2, top + 0.5, head)
    for i, s in enumerate(sizes):
        small(ax, x0 - 0.1, top - (edges[i] + s / 2) * scale, f"{s}", ha="right")
    side = "inner loop: queries in blocks"
    text(ax, 0.45, top - TILE_T * scale / 2, side, size=SMALL, rotation=90)
    # the running quantities of every query row wait in the slow memory between visits
    now_i = TILE_NOW[0]
    y = top - (edges[now_i] + sizes[now_i] / 2) * scale
    box(ax, 5.4, y, 1.15, 1.45, "m, ℓ, o\nof each\nquery row,\nin slow\nmemory", fc=STATE, size=SMALL)
    arrow(ax, (x0 + TILE_T * scale + 0.05, y), (4.8, y), style="<|-|>")
    legend(ax, 0.2, 0.95, [(NORM, "folded in"), (ATTN, "in fast memory now")])
    legend(ax, 0.2, 0.6, [(UNVISITED, "not visited yet")])
    small(ax, 3.0, 0.22, "never stored: the whole T × T table of scores", color=NOTE)
    return fig


FIGURES = [ch10_masks, ch10_rope, ch10_alibi, ch10_tiling]
