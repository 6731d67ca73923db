"""Chapter 7: the whole model's data flow, teacher forcing, label smoothing."""

from __future__ import annotations

from matplotlib.patches import Rectangle

from .draw import (
    ALLOWED,
    ATTN,
    BLOCKED,
    D_MODEL,
    EMBED,
    EPS_LS,
    FFN,
    FONT,
    GREY,
    N_LAYERS,
    NORM,
    SMALL,
    VOCAB,
    arrow,
    box,
    canvas,
    line,
    note,
    small,
    text,
)


def ch07_model_data_flow():
    fig, ax = canvas(5.6, 7.6, "The whole model, German to English")
    el, dl = 1.35, 4.2
    text(ax, el, 0.3, "ein Hund läuft", style="italic")
    text(ax, dl, 0.3, "<bos> a dog", style="italic")
    for x, side in ((el, "S"), (dl, "T")):
        arrow(ax, (x, 0.5), (x, 0.8))
        box(ax, x, 1.05, 1.8, 0.5, "BPE ids", fc=GREY, size=SMALL)
        arrow(ax, (x, 1.3), (x, 1.6))
        box(
            ax,
            x,
            1.95,
            2.3,
            0.7,
            f"embedding · √{D_MODEL}\n+ positions",
            fc=EMBED,
            size=SMALL,
        )
        small(ax, x, 2.5, f"(B, {side}, {D_MODEL})")
        arrow(ax, (x, 2.65), (x, 3.05))
    box(ax, el, 3.55, 1.9, 1.0, f"encoder\n× {N_LAYERS}", fc=FFN)
    box(ax, dl, 4.0, 1.9, 1.9, f"decoder\n× {N_LAYERS}", fc=ATTN)
    arrow(ax, (el, 4.05), (el, 4.4))
    small(ax, el, 4.6, "memory")
    small(ax, el, 4.9, f"(B, S, {D_MODEL})")
    arrow(ax, (el + 0.7, 4.75), (dl - 0.95, 4.5))
    arrow(ax, (dl, 4.95), (dl, 5.3))
    box(ax, dl, 5.55, 2.2, 0.5, "linear (tied)", fc=EMBED, size=SMALL)
    arrow(ax, (dl, 5.8), (dl, 6.1))
    box(ax, dl, 6.35, 2.2, 0.5, "softmax", fc=NORM, size=SMALL)
    small(ax, dl, 6.85, f"(B, T, {VOCAB}) probabilities")
    note(ax, dl - 1.25, 6.35, "the next English\ntoken, at each\nposition", ha="right")
    return fig


def ch07_teacher_forcing():
    fig, ax = canvas(5.6, 6.0, "Training: teacher forcing")
    words_in = ["<bos>", "a", "dog", "runs"]
    words_out = ["a", "dog", "runs", "<eos>"]
    xs = [0.95, 2.15, 3.35, 4.55]
    box(
        ax,
        2.75,
        4.6,
        4.9,
        0.55,
        "decoder: every position in one pass",
        fc=ATTN,
        size=SMALL,
    )
    for x, a, b in zip(xs, words_in, words_out, strict=True):
        small(ax, x, 3.9, a)
        arrow(ax, (x, 4.05), (x, 4.32))
        arrow(ax, (x, 4.88), (x, 5.15))
        small(ax, x, 5.3, b, weight="bold")
    note(ax, 2.8, 3.5, "inputs are the reference, shifted right")
    text(ax, 2.8, 3.0, "Translating: one step at a time", size=FONT, weight="bold")
    for step in range(3):
        y = 2.3 - step * 0.8
        prefix = words_in[: step + 1]
        small(ax, 0.15, y, f"step {step + 1}", ha="left")
        for j, word in enumerate(prefix):
            small(ax, 1.3 + 0.62 * j, y, word)
        arrow(ax, (3.1, y), (3.45, y))
        box(ax, 3.95, y, 0.8, 0.45, "dec", fc=ATTN, size=SMALL)
        arrow(ax, (4.35, y), (4.7, y))
        small(ax, 5.0, y, words_out[step], weight="bold")
        if step < 2:
            arrow(
                ax,
                (5.0, y - 0.2),
                (1.3 + 0.62 * (step + 1) + 0.2, y - 0.62),
                color="#777777",
                ls="--",
                lw=1.2,
            )
    note(
        ax,
        2.8,
        0.1 + 0.08,
        "each prediction is fed back as the next input",
        va="bottom",
    )
    return fig


def ch07_label_smoothing():
    vocab = 8
    fig, ax = canvas(5.4, 3.9, f"Label smoothing, ε = {EPS_LS} (V = {vocab} here)")
    q_hot = [1.0 if v == 2 else 0.0 for v in range(vocab)]
    q_ls = [(1 - EPS_LS) * h + EPS_LS / vocab for h in q_hot]
    panels = ((q_hot, "one-hot target", BLOCKED), (q_ls, "smoothed target", ALLOWED))
    for k, (q, title, colour) in enumerate(panels):
        x0 = 0.35 + k * 2.7
        base, scale, bw = 0.75, 2.2, 0.27
        line(ax, [x0, x0 + vocab * bw], [base, base], lw=1.0)
        for v, value in enumerate(q):
            ax.add_patch(
                Rectangle(
                    (x0 + v * bw + 0.03, base),
                    bw - 0.06,
                    scale * value,
                    fc=colour,
                    ec="none",
                )
            )
        small(ax, x0 + vocab * bw / 2, 0.45, title)
        small(ax, x0 + 2.5 * bw, base + scale * q[2] + 0.15, f"{q[2]:.4g}")
        if k:
            small(ax, x0 + 6.5 * bw, base + 0.35, f"{q[0]:.4g} each")
    note(ax, 2.7, 0.15, "the correct word is the third")
    return fig


def shipped_choice() -> tuple[dict, dict]:
    """The candidates the shipped model's validation choice tried, and its winner, as
    its manifest records them (tools/ship/choose_decoding.py wrote them)."""
    from aiayn_helpers.pretrained import ROOT, read_manifest

    rows = read_manifest(ROOT / "multi30k")["validation_choice"]["rows"]
    # choose_decoding's rule: the highest BLEU; ties to fewer averaged files, then beam
    best = max(rows, key=lambda r: (r["bleu"], -r["average"], -r["beam_size"]))
    keys = ("average", "beam_size", "length_penalty")
    tried = {key: sorted({r[key] for r in rows}) for key in keys}
    return tried, best


def weights_label(average: int) -> str:
    return f"the mean of the last {average}" if average else "the last epoch's"


def ch07_recipe():
    """The shipped model's recipe (tools/ship/train_shipped.sh): which split decides what."""
    tried, best = shipped_choice()
    fig, ax = canvas(6.0, 6.4, "The shipped model's recipe: which split decides what")
    cx, w = 2.05, 3.7
    last, mean = (weights_label(n) for n in tried["average"])
    beams = " or ".join(str(b) for b in tried["beam_size"])
    alphas = ", ".join(f"{a:.1f}" for a in tried["length_penalty"])
    choose = f"choose by BLEU: {last}\nweights or {mean},\nbeam {beams}, α = {alphas}"
    chosen = f"{weights_label(best['average'])},\nbeam {best['beam_size']}, "
    steps = [
        (5.45, 0.66, "train (preset multi30k),\nkeep every epoch's weights", FFN),
        (4.1, 1.05, choose, NORM),
        (2.6, 0.66, chosen + f"α = {best['length_penalty']:.1f}", GREY),
        (1.35, 0.66, "BLEU with that choice,\nonce", EMBED),
    ]
    for i, (y, h, label, colour) in enumerate(steps):
        box(ax, cx, y, w, h, label, fc=colour, size=SMALL)
        if i:
            prev_y, prev_h = steps[i - 1][:2]
            arrow(ax, (cx, prev_y - prev_h / 2), (cx, y + h / 2))
    note(ax, cx + 0.12, 3.26, "chosen:", ha="left")
    splits = [
        (5.45, "train split", FFN),
        (4.1, "validation split", NORM),
        (1.35, "test split", EMBED),
    ]
    sx = 5.05
    for y, label, colour in splits:
        box(ax, sx, y, 1.7, 0.5, label, fc=colour, size=SMALL)
        arrow(ax, (sx - 0.85, y), (cx + w / 2, y))
    note(ax, sx, 2.6, "the test split\nis not used\nuntil the end")
    arrow(ax, (cx, 1.02), (cx, 0.72))
    small(ax, cx, 0.5, "the results page")
    return fig


FIGURES = [
    ch07_model_data_flow,
    ch07_teacher_forcing,
    ch07_label_smoothing,
    ch07_recipe,
]
