"""Chapter 8: beam search, the key/value cache and the export's permutation."""

from __future__ import annotations

from matplotlib.patches import Rectangle

from .draw import (
    ATTN,
    FFN,
    INK,
    NOTE,
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
    box(ax, 0.45, 2.7, 0.75, 0.42, "<bos>", fc="white", size=SMALL)  # the start
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
    fig, ax = canvas(5.0, 5.9, "A key/value cache filling up")
    words = ["<bos>", "a", "dog", "runs"]
    cached_k, cached_v = "#fbeedd", "#e6f1fa"
    c = 0.42
    for t in range(4):
        y = 4.65 - t * 1.05
        small(ax, 0.1, y + c / 2, f"step {t + 1}", ha="left")
        for j in range(t + 1):
            new = j == t
            fc_k = ATTN if new else cached_k
            fc_v = FFN if new else cached_v
            lw = 1.2 if new else 0.7
            x = 1.2 + j * c
            ax.add_patch(Rectangle((x, y + c / 2), c, c / 2, fc=fc_k, ec=INK, lw=lw))
            ax.add_patch(Rectangle((x, y), c, c / 2, fc=fc_v, ec=INK, lw=lw))
        label = f"new token: {words[t]}"
        small(ax, 1.2 + (t + 1) * c + 0.15, y + c / 2, label, ha="left")
    # outlined like the boxes they stand for (pale fills vanish on white otherwise)
    legend(ax, 0.2, 1.15, [(ATTN, "new key"), (FFN, "new value")], edge=INK, lw=1.2)
    legend(ax, 0.2, 0.8, [(cached_k, "cached key"), (cached_v, "cached value")], edge=INK, lw=0.7)
    note(ax, 2.5, 0.4, "the new query attends to every cached key", va="bottom")
    note(ax, 2.5, 0.1, "and to its own new key", va="bottom")
    return fig


EXPORT_D = 8  # columns drawn: a d_model small enough to label every column


def export_order(d_model: int = EXPORT_D) -> list[int]:
    """Marian's column j holds the book's column order[j]: the sines, then the
    cosines (aiayn_helpers.export's permutation; tests/test_diagrams.py checks it)."""
    return list(range(0, d_model, 2)) + list(range(1, d_model, 2))


def ch08_export_permutation():
    d = EXPORT_D
    order = export_order(d)
    fig, ax = canvas(6.0, 3.9, f"Exporting to Marian: one permutation, d_model = {d}")
    cell, x0 = 0.6, 0.75

    def column(ax, j, y, book_col, number_above):
        fc = ATTN if book_col % 2 == 0 else FFN
        word = "sin" if book_col % 2 == 0 else "cos"
        ax.add_patch(Rectangle((x0 + j * cell, y), cell, 0.42, fc=fc, ec=INK, lw=1.0))
        small(ax, x0 + (j + 0.5) * cell, y + 0.21, f"{word} {book_col // 2}")
        dy = 0.56 if number_above else -0.14
        note(ax, x0 + (j + 0.5) * cell, y + dy, str(j))

    top, bottom = 2.5, 1.15
    small(ax, 0.1, top + 0.8, "the book: sine and cosine alternate (chapter 4)", ha="left")
    small(ax, 0.1, bottom - 0.52, "Marian: all the sines, then all the cosines", ha="left")
    for j in range(d):
        column(ax, j, top, j, True)
        column(ax, j, bottom, order[j], False)
    for j, source in enumerate(order):
        arrow(
            ax,
            (x0 + (source + 0.5) * cell, top - 0.03),
            (x0 + (j + 0.5) * cell, bottom + 0.45),
            color=NOTE,
            lw=1.1,
        )
    note(ax, 0.1, 0.25, "the same for every weight on the residual stream", ha="left")
    return fig


FIGURES = [ch08_beam_search, ch08_kv_cache, ch08_export_permutation]
