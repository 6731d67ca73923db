"""The whole model, the picture a reader returns to, and one small locator per chapter.

``overview_transformer`` is the encoder-decoder stack of the paper's Figure 1 with
the sizes of the base model and the chapter that builds each block. A locator
(``chNN_where``) is a smaller drawing of the same stack with the blocks of chapter NN
in colour and the others in pale grey, shown at the top of that chapter.
"""

from __future__ import annotations

from matplotlib.patches import Rectangle

from .draw import (
    ATTN,
    D_FF,
    D_MODEL,
    EMBED,
    FFN,
    FRAME,
    HEADS,
    INK,
    N_LAYERS,
    NORM,
    NOTE,
    arrow,
    box,
    canvas,
    line,
    small,
    text,
)

# the base model's shared BPE vocabulary: "about 37000 tokens" (the paper, section 5.1);
# the package's default configuration uses 10000 (config.BASE), a size of our own
PAPER_VOCAB = 37000
POS = "#e0d4ef"  # the positional encoding: a colour of its own
FADED_FILL, FADED_EDGE, FADED_INK = "#f4f4f4", "#c4c4c4", "#9a9a9a"

# (key, label, colour, the chapter that builds it) from the bottom up, per column. Every
# block carries its tag: chapter 5 builds the residual add and LayerNorm of the encoder
# layer, chapter 6 the decoder layer's three (the same function, as it does the decoder's
# feed-forward); a chapter named in a tag lights the block in its locator (LOCATORS).
ENCODER = [
    ("src_embed", f"embedding · √{D_MODEL}", EMBED, "ch. 5"),
    ("src_pos", "+ positions", POS, "ch. 4"),
    ("enc_attn", f"self-attention, {HEADS} heads", ATTN, "ch. 2, 3, 5"),
    ("enc_norm1", "add & LayerNorm", NORM, "ch. 5"),
    ("enc_ffn", "feed-forward", FFN, f"{D_MODEL}→{D_FF}→{D_MODEL} · ch. 5"),
    ("enc_norm2", "add & LayerNorm", NORM, "ch. 5"),
]
DECODER = [
    ("tgt_embed", f"embedding · √{D_MODEL}", EMBED, "ch. 5"),
    ("tgt_pos", "+ positions", POS, "ch. 4"),
    ("dec_self", "masked self-attention", ATTN, "ch. 2, 3, 6"),
    ("dec_norm1", "add & LayerNorm", NORM, "ch. 6"),
    ("dec_cross", "cross-attention", ATTN, "ch. 6"),
    ("dec_norm2", "add & LayerNorm", NORM, "ch. 6"),
    ("dec_ffn", "feed-forward", FFN, "ch. 6"),
    ("dec_norm3", "add & LayerNorm", NORM, "ch. 6"),
    ("linear", "linear (tied)", EMBED, "ch. 6, 7"),
    ("softmax", "softmax", NORM, "ch. 6, 7, 8"),
]
# the locators' labels, without the base model's sizes (appendix A's model is smaller)
COMPACT = {
    "src_embed": "embedding · √d",
    "tgt_embed": "embedding · √d",
    "enc_attn": "self-attention",
    "dec_self": "masked self-attn.",
    "linear": "linear",
    **{f"{side}_norm{n}": "add & norm" for side in ("enc", "dec") for n in (1, 2, 3)},
}
EVERYTHING = {key for key, *_ in ENCODER + DECODER} | {"memory"}
# chapter 10's BERT-style model: a linear layer and a softmax on the encoder's outputs,
# predicting the masked tokens (the decoder's pair predicts GPT's next token); drawn in
# a locator only when lit, and not a block of the paper's model
ENCODER_HEAD = [("mlm_linear", "linear", EMBED, ""), ("mlm_softmax", "softmax", NORM, "")]
ATTENTION = {"enc_attn", "dec_self", "dec_cross"}
ENCODER_LAYER = {"enc_attn", "enc_norm1", "enc_ffn", "enc_norm2"}
DECODER_LAYER = {k for k, *_ in DECODER[2:8]}

# chapter -> (the blocks it builds or uses, what the locator's title says)
LOCATORS = {
    "01": ({"dec_cross"}, "Chapter 1: attention from decoder to encoder"),
    "02": (ATTENTION, "Chapter 2: the attention in every attention block"),
    "03": (ATTENTION, "Chapter 3: many heads in every attention block"),
    "04": ({"src_pos", "tgt_pos"}, "Chapter 4: the positions"),
    "05": (
        ENCODER_LAYER | {"memory", "src_embed", "tgt_embed"},
        "Chapter 5: the encoder layer, the embeddings",
    ),
    "06": (DECODER_LAYER | {"linear", "softmax"}, "Chapter 6: the decoder layer, the output"),
    "07": (EVERYTHING, "Chapter 7: the whole model, trained"),
    "08": (
        {"linear", "softmax", "loop", "dec_self", "dec_cross"},
        "Chapter 8: decoding, token by token",
    ),
    "09": (EVERYTHING, "Chapter 9: the whole model, measured"),
    "10": (
        EVERYTHING - {"dec_cross", "dec_norm2", "memory"} | {"mlm_linear", "mlm_softmax"},
        "Chapter 10: what BERT and GPT kept",
    ),
    "A": (EVERYTHING, "Appendix A: every block, in NumPy"),
}


def stack(ax, cx, y, blocks, lit, compact, skip_side):
    """Draw one column from height ``y`` up; returns {key: (y, height)} and the top."""
    width = 2.0 if not compact else 1.75
    placed = {}
    for n, (key, label, colour, ref) in enumerate(blocks):
        is_norm = "norm" in key
        # in the full drawing an add & norm box is as tall as the others: two lines,
        # its name and its chapter tag
        h = 0.6 if not compact else (0.3 if is_norm else 0.42)
        on = key in lit
        w = width * (0.8 if is_norm else 1.0)
        if n:
            gap = 0.3 if key not in ("enc_attn", "dec_self") else 0.55
            if compact:
                gap = 0.3 if key.endswith(("attn", "self")) else 0.14 if is_norm else 0.2
            if key == "linear":
                gap = 0.55 if not compact else 0.32
            arrow(ax, (cx, y), (cx, y + gap), color=INK if on else FADED_EDGE)
            y += gap
        ink = INK if on else FADED_INK
        if compact:
            label = COMPACT.get(key, label)  # no sizes: a locator fits every model
        box(
            ax,
            cx,
            y + h / 2,
            w,
            h,
            fc=colour if on else FADED_FILL,
            ec=INK if on else FADED_EDGE,
        )
        if ref and not compact:
            small(ax, cx, y + h / 2 + 0.11, label, color=ink)
            small(ax, cx, y + h / 2 - 0.14, ref, color=NOTE if on else FADED_INK)
        else:
            small(ax, cx, y + h / 2, label, color=ink)
        placed[key] = (y, h)
        y += h
    if not compact:  # the residual paths: around each sub-layer into its add & norm
        x_skip = cx + skip_side * (width / 2 + 0.12)
        for key, (y0, h) in placed.items():
            if "norm" not in key:
                continue
            before = list(placed)[list(placed).index(key) - 1]
            y_in = placed[before][0] - 0.15
            colour = INK if key in lit else FADED_EDGE
            line(ax, [cx, x_skip, x_skip], [y_in, y_in, y0 + h / 2], color=colour, lw=1.2)
            end = cx + skip_side * width * 0.4
            arrow(ax, (x_skip, y0 + h / 2), (end, y0 + h / 2), color=colour, lw=1.2)
    return placed, y


def transformer(lit: set[str], compact: bool, title: str):
    """The encoder-decoder stack; the blocks named in ``lit`` in colour."""
    width = 6.0 if not compact else 5.8
    fig, ax = canvas(width, 20.0)  # cut to the drawing's height at the end
    ce, cd = (1.5, 4.4) if not compact else (1.45, 3.95)
    y0 = 0.75 if not compact else 0.5
    if not compact:
        text(ax, ce, 0.3, "ein Hund läuft", style="italic")
        text(ax, cd, 0.3, "<bos> a dog", style="italic")
        small(ax, ce, 0.62, "German source", color=NOTE)
        small(ax, cd, 0.62, "English so far", color=NOTE)
        y0 = 0.85
    else:
        small(ax, ce, 0.22, "source", color=NOTE)
        small(ax, cd, 0.22, "target so far", color=NOTE)
        y0 = 0.4
    enc, enc_top = stack(ax, ce, y0, ENCODER, lit, compact, -1)
    dec, dec_top = stack(ax, cd, y0, DECODER[:8], lit, compact, +1)
    # the N-times frames around the layers, named on their outer side
    pad = 0.25 if not compact else 0.12
    half = (2.0 if not compact else 1.75) / 2 + pad
    for cx, blocks, top, name, side, keys in (
        (ce, enc, enc_top, "encoder", -1, ENCODER_LAYER),
        (cd, dec, dec_top, "decoder", +1, DECODER_LAYER),
    ):
        first = blocks["enc_attn" if name == "encoder" else "dec_self"][0]
        y_bottom, y_top = first - 0.2, top + 0.12
        on = bool(lit & keys)
        style = dict(FRAME, ec=FRAME["ec"] if on else FADED_EDGE)
        ax.add_patch(Rectangle((cx - half, y_bottom), 2 * half, y_top - y_bottom, **style))
        label = f"{name} × {N_LAYERS}" if not compact else "× N"
        x_label = cx + side * (half + (0.15 if not compact else 0.22))
        text(
            ax,
            x_label,
            (y_bottom + y_top) / 2,
            label,
            size=14 if not compact else 12,
            rotation=90 if not compact else 0,
            color=INK if on else FADED_INK,
        )
    # the memory: the encoder's output enters every decoder layer's cross-attention
    y_cross = dec["dec_cross"][0] + dec["dec_cross"][1] / 2
    on = bool(lit & {"dec_cross", "memory"})
    colour = INK if on else FADED_EDGE
    x_mid = (ce + half + cd - half) / 2
    y_route = enc_top + (0.45 if not compact else 0.3)
    line(ax, [ce, ce, x_mid, x_mid], [enc_top + 0.12, y_route, y_route, y_cross], color=colour)
    w_dec = 2.0 if not compact else 1.75
    arrow(ax, (x_mid, y_cross), (cd - w_dec / 2, y_cross), color=colour)
    if not compact:
        small(ax, ce, y_route + 0.48, "memory", color=INK if on else FADED_INK)
        small(ax, ce, y_route + 0.22, f"(B, S, {D_MODEL})", color=NOTE)
    two_heads = "mlm_softmax" in lit  # chapter 10: BERT's head on the encoder, GPT's
    if two_heads:  # on the decoder, each model's own output
        head, head_top = stack(ax, ce, enc_top + 0.44, ENCODER_HEAD, lit, compact, -1)
        arrow(ax, (ce, enc_top + 0.12), (ce, enc_top + 0.44))
        arrow(ax, (ce, head_top), (ce, head_top + 0.3))
        small(ax, ce, head_top + 0.45, "masked tokens (BERT)")
    # the output: a linear layer and a softmax over the vocabulary
    y = dec_top + 0.12
    out, top = stack(ax, cd, y, DECODER[8:], lit, compact, +1)
    on = "softmax" in lit
    arrow(ax, (cd, top), (cd, top + 0.3), color=INK if on else FADED_EDGE)
    ink = INK if on else FADED_INK
    if not compact:
        shape = "next-token probabilities\n(B, T, V)"
        small(ax, cd, top + 0.62, shape, color=ink)
        vocab = f"V: the vocabulary, about {PAPER_VOCAB} in the paper"
        small(ax, cd - 0.6, top + 1.05, vocab, color=NOTE)
    else:
        label = "next token (GPT)" if two_heads else "next token"
        small(ax, cd, top + 0.45, label, color=ink)
    if "loop" in lit:  # chapter 8: each chosen token goes back in as the next input
        x_loop = cd + w_dec / 2 + 0.55
        line(ax, [cd + 0.5, x_loop, x_loop], [top + 0.45, top + 0.45, 0.22], ls="--")
        arrow(ax, (x_loop, 0.22), (cd + 0.6, 0.22), ls="--")
        small(ax, x_loop + 0.15, (top + 0.45) / 2, "fed back", rotation=90)
    height = top + (1.8 if not compact else 1.0)
    fig.set_size_inches(width, height)
    ax.set_ylim(0, height)
    text(ax, width / 2, height - 0.25, title, weight="bold")
    return fig


def overview_transformer():
    title = "The Transformer (the base model's layer sizes)"
    return transformer(EVERYTHING, compact=False, title=title)


def locator(chapter: str):
    """The drawing function of chapter ``chapter``'s locator, named chNN_where."""
    lit, title = LOCATORS[chapter]

    def draw():
        return transformer(lit, compact=True, title=title)

    draw.__name__ = f"ch{chapter}_where"
    return draw


FIGURES = [overview_transformer] + [locator(chapter) for chapter in LOCATORS]
