"""Appendix A: the NumPy forward pass as a flow of shapes.

The sizes are appendix A's reference model and batch (``REFERENCE``: three source
sentences of 7 ids, three target prefixes of 5, d_model 16, 4 heads, 2 layers,
d_ff 32, a target vocabulary of 24); tests/test_diagrams.py reads them back from
the appendix's code, so the two cannot drift apart.
"""

from __future__ import annotations

from matplotlib.patches import Rectangle

from .draw import ATTN, EMBED, FFN, FRAME, NORM, NOTE, STATE, arrow, box, canvas, small

REFERENCE = {"B": 3, "S": 7, "T": 5, "D_MODEL": 16, "HEADS": 4, "LAYERS": 2}
REFERENCE |= {"D_FF": 32, "SRC_VOCAB": 20, "TGT_VOCAB": 24}


def shape(*dims) -> str:
    return "(" + ", ".join(str(d) for d in dims) + ")"


GAP, TALL, WIDE = 0.45, 0.7, 2.6


def column(ax, cx, y, steps):
    """Boxes from height ``y`` up: (name, colour, inner shapes, output shape) each;
    the output shape is written beside the arrow that leaves the box. Returns the
    top and the centre height of each box."""
    centres = []
    for n, (label, colour, inner, out) in enumerate(steps):
        box(ax, cx, y + TALL / 2, WIDE, TALL, "", fc=colour)
        small(ax, cx, y + TALL / 2 + 0.13, label)
        small(ax, cx, y + TALL / 2 - 0.15, inner, color=NOTE)
        centres.append(y + TALL / 2)
        y += TALL
        if n < len(steps) - 1:
            arrow(ax, (cx, y), (cx, y + GAP))
            small(ax, cx + 0.08, y + GAP / 2, out, ha="left", color=NOTE)
            y += GAP
    return y, centres


def chA_shapes():
    r = REFERENCE
    b, s, t, d, h = r["B"], r["S"], r["T"], r["D_MODEL"], r["HEADS"]
    d_ff, vocab = r["D_FF"], r["TGT_VOCAB"]
    fig, ax = canvas(6.0, 8.0, "The forward pass, shape by shape")
    ce, cd = 1.55, 4.45
    for cx, ids in ((ce, shape(b, s)), (cd, shape(b, t))):
        small(ax, cx, 0.25, f"{'src' if cx == ce else 'tgt'} ids {ids}", weight="bold")
        arrow(ax, (cx, 0.4), (cx, 0.75))
    encoder = [
        ("embed · √d + positions", EMBED, f"table ({r['SRC_VOCAB']}, {d})", shape(b, s, d)),
        ("multi_head (self)", ATTN, f"scores {shape(b, h, s, s)}", shape(b, s, d)),
        ("feed_forward", FFN, f"hidden {shape(b, s, d_ff)}", shape(b, s, d)),
    ]
    decoder = [
        ("embed · √d + positions", EMBED, f"table ({vocab}, {d})", shape(b, t, d)),
        ("multi_head (causal)", ATTN, f"scores {shape(b, h, t, t)}", shape(b, t, d)),
        ("multi_head (cross)", ATTN, f"scores {shape(b, h, t, s)}", shape(b, t, d)),
        ("feed_forward", FFN, f"hidden {shape(b, t, d_ff)}", shape(b, t, d)),
    ]
    top_e, _ = column(ax, ce, 0.75, encoder)
    top_d, centres = column(ax, cd, 0.75, decoder)
    # everything above the embedding runs once per layer
    bottom = 0.75 + TALL + 0.07
    for cx, top, name in ((ce, top_e, "encoder"), (cd, top_d, "decoder")):
        ax.add_patch(Rectangle((cx - WIDE / 2 - 0.1, bottom), WIDE + 0.2, top + 0.1 - bottom, **FRAME))
        label = f"{name} × {r['LAYERS']}"
        small(ax, cx - WIDE / 2, top + 0.25, label, ha="left", color=NOTE)
    # the memory: keys and values of every cross-attention
    y_mem = top_e + 0.65
    arrow(ax, (ce, top_e + 0.1), (ce, y_mem - 0.22))
    box(ax, ce, y_mem, WIDE, 0.45, f"memory {shape(b, s, d)}", fc=STATE, size=12)
    arrow(ax, (ce + WIDE / 2, y_mem), (cd - WIDE / 2, centres[2]), rad=-0.3)
    small(ax, ce, y_mem + 0.75, "each block: x + block(x),\nthen layer_norm", color=NOTE)
    # the output
    y = top_d + 0.1
    arrow(ax, (cd, y), (cd, y + GAP))
    small(ax, cd + 0.08, y + GAP / 2, shape(b, t, d), ha="left", color=NOTE)
    y += GAP
    box(ax, cd, y + 0.25, WIDE, 0.5, "linear (generator): logits", fc=EMBED, size=12)
    arrow(ax, (cd, y + 0.5), (cd, y + 0.5 + GAP))
    small(ax, cd + 0.08, y + 0.5 + GAP / 2, shape(b, t, vocab), ha="left", color=NOTE)
    y += 0.5 + GAP
    box(ax, cd, y + 0.25, WIDE, 0.5, "softmax", fc=NORM, size=12)
    arrow(ax, (cd, y + 0.5), (cd, y + 0.8))
    small(ax, cd, y + 0.98, f"probabilities {shape(b, t, vocab)}", weight="bold")
    return fig


FIGURES = [chA_shapes]
