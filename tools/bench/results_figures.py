"""The results page's plots (book/results.md), drawn from the records the page quotes.

    python tools/bench/results_figures.py          # redraw book/figures/results/*.svg
    python tools/bench/results_figures.py --check  # exit 1 and name the files that are out of date

- ``results_loss.svg``: training and validation loss per epoch of the full recipe and
  of the CPU recipe, read from the page's own two epoch tables (those runs kept no
  record; the page says so, and the figure plots exactly the tables' figures);
- ``results_bleu_sweep.svg``: validation BLEU against the length penalty, for beam 4
  and 6, the last epoch's weights and the mean of the last five, from the shipped
  model's ``manifest.json`` (``validation_choice``);
- ``results_export_speed.svg``: sentences per second of the four ways of translating
  test2016, from ``book/metrics/bench_export.json``.

The SVGs are byte-for-byte reproducible (fixed ``svg.hashsalt``, no date, text kept as
text) and at most 6 inches wide with text of at least 11 points, so that they read in
the site's column and on a phone. tests/test_results_figures.py redraws them.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "book" / "results.md"
MANIFEST = ROOT / "aiayn_helpers" / "pretrained" / "multi30k" / "manifest.json"
EXPORT = ROOT / "book" / "metrics" / "bench_export.json"
FOLDER = ROOT / "book" / "figures" / "results"
MAX_WIDTH_IN = 6.0
MIN_FONT_PT = 11
STYLE = {
    "svg.hashsalt": "aiayn-results",
    "svg.fonttype": "none",
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans"],
    "font.size": 12,
    "axes.titlesize": 12,
    "axes.labelsize": 12,
    "xtick.labelsize": 11,
    "ytick.labelsize": 11,
    "legend.fontsize": 11,
    "figure.facecolor": "white",
    "savefig.facecolor": "white",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
}
BLUE, ORANGE, GREEN, PURPLE = "#1f77b4", "#d95f02", "#1b9e77", "#7570b3"
EPOCH_TABLES = ("### The full recipe, epoch by epoch", "### The CPU recipe, epoch by epoch")


def _number(cell: str) -> float:
    return float(cell.replace(",", ""))


def epoch_table(text: str, heading: str) -> list[dict]:
    """The rows of the epoch table under ``heading``: epoch, train loss, val loss.

    A last, partial epoch (``32 (1 update)``) is left out: its training loss is the
    mean over one update, not over an epoch.
    """
    if heading not in text:
        raise ValueError(f"expected the heading {heading!r} in the results page")
    section = text.split(heading, 1)[1].split("\n#", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("| ") or not re.fullmatch(r"\d+", cells[0]):
            continue
        rows.append({"epoch": int(cells[0]), "train": _number(cells[2]), "val": _number(cells[3])})
    if not rows:
        raise ValueError(f"expected an epoch table under {heading!r}, found no rows")
    return rows


def bleu_sweep(manifest: dict) -> dict[tuple[int, int], list[tuple[float, float]]]:
    """(average, beam) -> [(length penalty, validation BLEU)], from the manifest."""
    out: dict[tuple[int, int], list[tuple[float, float]]] = {}
    for row in manifest["validation_choice"]["rows"]:
        key = (row["average"], row["beam_size"])
        out.setdefault(key, []).append((row["length_penalty"], row["bleu"]))
    return {k: sorted(v) for k, v in sorted(out.items())}


def export_speeds(record: dict) -> list[tuple[str, float, float]]:
    """(way, sentences per second, BLEU) for each way the benchmark measured."""
    return [(name, w["sentences_per_s"], w["bleu"]) for name, w in record["ways"].items()]


def draw_loss(text: str):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(6.0, 3.2), sharey=True)
    titles = ("Full recipe", "CPU recipe")
    for ax, heading, title in zip(axes, EPOCH_TABLES, titles, strict=True):
        rows = epoch_table(text, heading)
        epochs = [r["epoch"] for r in rows]
        ax.plot(epochs, [r["train"] for r in rows], color=BLUE, marker="o", ms=3, label="training\n(label-smoothed)")
        ax.plot(epochs, [r["val"] for r in rows], color=ORANGE, marker="s", ms=3, label="validation")
        ax.set_title(f"{title}\n({len(rows)} complete epochs)")
        ax.set_xlabel("epoch")
    axes[0].set_ylabel("loss (nats per token)")
    axes[0].legend(frameon=False)
    fig.tight_layout()
    return fig


def draw_bleu_sweep(manifest: dict):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.0, 3.9))
    styles = {
        (0, 4): (BLUE, "o", "--", "last epoch, beam 4"),
        (0, 6): (BLUE, "s", "-", "last epoch, beam 6"),
        (5, 4): (ORANGE, "o", "--", "mean of 5 epochs, beam 4"),
        (5, 6): (ORANGE, "s", "-", "mean of 5 epochs, beam 6"),
    }
    for key, points in bleu_sweep(manifest).items():
        colour, marker, line, label = styles[key]
        ax.plot(*zip(*points, strict=True), color=colour, marker=marker, ls=line, label=label)
    best = manifest["validation_choice"]["best"]
    ax.annotate(
        f"chosen: {best['bleu']:.2f}",
        (best["length_penalty"], best["bleu"]),
        xytext=(0, 12),
        textcoords="offset points",
        ha="center",
        fontsize=11,
    )
    ax.set_xlabel("length penalty \u03b1")
    ax.set_ylabel("validation BLEU")
    ax.set_xticks(sorted({p for pts in bleu_sweep(manifest).values() for p, _ in pts}))
    ax.margins(y=0.2)
    ax.legend(frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncols=2)
    fig.tight_layout()
    return fig


def draw_export_speed(record: dict):
    import matplotlib.pyplot as plt

    ways = export_speeds(record)
    fig, ax = plt.subplots(figsize=(6.0, 2.8))
    names = [name.replace(" (", "\n(") for name, _, _ in ways]
    speeds = [s for _, s, _ in ways]
    colours = [BLUE, PURPLE, GREEN, GREEN][: len(ways)]
    bars = ax.barh(range(len(ways)), speeds, color=colours)
    for bar, (_, speed, bleu) in zip(bars, ways, strict=True):
        ax.text(
            bar.get_width() + max(speeds) * 0.02,
            bar.get_y() + bar.get_height() / 2,
            f"{speed:.1f}/s, BLEU {bleu:.2f}",
            va="center",
            fontsize=11,
        )
    ax.set_yticks(range(len(ways)), names)
    ax.invert_yaxis()
    ax.set_xlim(0, max(speeds) * 1.75)
    ax.set_xlabel(f"sentences per second (test2016, beam {record['beam_size']})")
    ax.grid(axis="y", visible=False)
    fig.tight_layout()
    return fig


def figures() -> dict[str, object]:
    """File name -> a function that draws it from the committed records."""
    text = PAGE.read_text(encoding="utf-8")
    manifest = json.loads(MANIFEST.read_text(encoding="utf-8"))
    export = json.loads(EXPORT.read_text(encoding="utf-8"))
    return {
        "results_loss.svg": lambda: draw_loss(text),
        "results_bleu_sweep.svg": lambda: draw_bleu_sweep(manifest),
        "results_export_speed.svg": lambda: draw_export_speed(export),
    }


def alt_texts() -> dict[str, str]:
    """File name -> the alt text the results page gives the figure, from the same data."""
    text = PAGE.read_text(encoding="utf-8")
    manifest = json.loads(MANIFEST.read_text(encoding="utf-8"))
    export = json.loads(EXPORT.read_text(encoding="utf-8"))
    full, cpu = (epoch_table(text, heading) for heading in EPOCH_TABLES)

    def fall(rows: list[dict], key: str) -> str:
        return f"{rows[0][key]:.3f} in the first epoch to {rows[-1][key]:.3f} in the last"

    def listed(values: list[float]) -> str:
        words = [f"{v:.1f}" for v in values]
        return ", ".join(words[:-1]) + " and " + words[-1] if len(words) > 1 else words[0]

    loss = (
        "Two line charts of the loss per epoch. Left, the full recipe over "
        f"{len(full)} complete epochs: the label-smoothed training loss goes from "
        f"{fall(full, 'train')}, the validation loss from {fall(full, 'val')}. Right, "
        f"the CPU recipe over {len(cpu)} complete epochs: from {fall(cpu, 'train')}, and "
        f"from {fall(cpu, 'val')}."
    )
    sweep = bleu_sweep(manifest)
    alphas = [p for p, _ in sweep[0, 4]]
    better = [a for i, a in enumerate(alphas) if all(sweep[5, b][i][1] > sweep[0, b][i][1] for b in (4, 6))]
    best = manifest["validation_choice"]["best"]
    bleu = (
        f"Validation BLEU against the length penalty alpha ({listed(alphas)}) for beam 4 "
        "and beam 6, with the last epoch's weights and with the mean of "
        "the last five epochs. At the same beam size the averaged weights score higher at "
        f"alpha {listed(better)}; the chosen setting, the averaged "
        f"weights with beam {best['beam_size']} and alpha {best['length_penalty']:.1f}, "
        f"scores {best['bleu']:.2f}."
    )
    ways = "; ".join(f"{name} {speed:.1f}" for name, speed, _ in export_speeds(export))
    speed = (
        "Horizontal bars of the speed of translating test2016 with beam "
        f"{export['beam_size']}, in sentences per second: {ways}. Each bar is labelled "
        "with its speed and its BLEU."
    )
    return {
        "results_loss.svg": loss,
        "results_bleu_sweep.svg": bleu,
        "results_export_speed.svg": speed,
    }


def render(draw) -> bytes:
    """The SVG bytes of one figure, deterministic and self-contained."""
    import matplotlib
    import matplotlib.pyplot as plt

    with plt.rc_context():
        matplotlib.rcdefaults()
        plt.rcParams.update(STYLE)
        fig = draw()
        width = fig.get_size_inches()[0]
        assert width <= MAX_WIDTH_IN, f"{width} in is wider than {MAX_WIDTH_IN} in"
        buffer = io.StringIO()
        fig.savefig(
            buffer,
            format="svg",
            metadata={"Date": None, "Creator": None, "Format": None, "Type": None},
        )
        plt.close(fig)
    svg = re.sub(r"<!DOCTYPE svg[^>]*>\n", "", buffer.getvalue())
    return svg.encode("utf-8")


def main(argv: list[str] | None = None) -> int:
    import matplotlib

    matplotlib.use("Agg")
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only report out-of-date files")
    parser.add_argument("--out", type=Path, default=FOLDER, help="folder (default: %(default)s)")
    args = parser.parse_args(argv)
    stale = []
    for name, draw in figures().items():
        svg, path = render(draw), args.out / name
        if args.check:
            if not path.exists() or path.read_bytes() != svg:
                stale.append(name)
            continue
        args.out.mkdir(parents=True, exist_ok=True)
        path.write_bytes(svg)
        print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    if stale:
        print("out of date (run python tools/bench/results_figures.py):", ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
