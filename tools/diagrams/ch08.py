"""Chapter 8: beam search and the key/value cache."""

from __future__ import annotations

from matplotlib.patches import Rectangle

from .draw import (
    ATTN,
    FFN,
    GREY,
    INK,
    SMALL,
    STATE,
    arrow,
    box,
    canvas,
    legend,
    note,
    small,
)


def ch08_beam_search():
    """A beam of 2 for three steps: made-up log-probabilities, computed sums."""
    fig, ax = canvas(5.6, 5.6, "Beam search, beam size 2")
    # step -> list of (parent index in previous step's kept list, word, log-probability)
    steps = [
        [(0, "a", -0.4), (0, "the", -1.2), (0, "one", -2.3)],
        [(0, "dog", -0.5), (0, "man", -1.6), (1, "dog", -0.3), (1, "cat", -2.0)],
        [(0, "runs", -0.7), (0, "is", -0.9), (1, "runs", -0.2), (1, "sits", -1.5)],
    ]
    keep = 2
    prev = [("<bos>", 0.0, (0.45, 2.7))]
    box(ax, 0.45, 2.7, 0.75, 0.42, "<bos>", fc=GREY, size=SMALL)
    for s, cands in enumerate(steps):
        scored = [(prev[p][1] + lp, p, w) for p, w, lp in cands]
        ranked = sorted(range(len(scored)), key=lambda n: -scored[n][0])[:keep]
        x = 1.8 + s * 1.45
        where = []
        for n, (score, p, w) in enumerate(scored):
            y = 4.6 - n * (3.8 / (len(cands) - 1))
            where.append((x, y))
            good = n in ranked
            ink = INK if good else "#999999"
            px, py = prev[p][2]
            arrow(
                ax,
                (px + 0.38, py),
                (x - 0.5, y),
                color=INK if good else "#bbbbbb",
                lw=1.4 if good else 1.0,
            )
            box(
                ax,
                x,
                y,
                1.0,
                0.55,
                "",
                fc=STATE if good else "white",
                ec=INK if good else "#bbbbbb",
            )
            small(ax, x, y + 0.11, w, color=ink)
            small(ax, x, y - 0.13, f"{score:.1f}", color=ink)
        prev = [(scored[n][2], scored[n][0], where[n]) for n in ranked]  # best first
    note(ax, 2.8, 0.2, "kept: green; dropped: grey; number: summed log p")
    return fig


def ch08_kv_cache():
    fig, ax = canvas(5.0, 5.2, "A key/value cache filling up")
    words = ["<bos>", "a", "dog", "runs"]
    c = 0.42
    for t in range(4):
        y = 3.95 - t * 1.05
        small(ax, 0.1, y + c / 2, f"step {t + 1}", ha="left")
        for j in range(t + 1):
            new = j == t
            fc_k = ATTN if new else "#fbeedd"
            fc_v = FFN if new else "#e6f1fa"
            lw = 1.2 if new else 0.7
            x = 1.2 + j * c
            ax.add_patch(Rectangle((x, y + c / 2), c, c / 2, fc=fc_k, ec=INK, lw=lw))
            ax.add_patch(Rectangle((x, y), c, c / 2, fc=fc_v, ec=INK, lw=lw))
        label = f"new token: {words[t]}"
        small(ax, 1.2 + (t + 1) * c + 0.15, y + c / 2, label, ha="left")
    items = [(ATTN, "new key"), (FFN, "new value"), ("#fbeedd", "cached")]
    legend(ax, 0.2, 0.45, items)
    note(ax, 2.5, 0.1, "the new query attends to every cached key", va="bottom")
    return fig


FIGURES = [ch08_beam_search, ch08_kv_cache]
