"""Draw the book's diagrams as SVG files in book/figures/.

    python tools/diagrams          regenerate every diagram
    python tools/diagrams --check  exit 1 and name the files that are out of date

The package has a small drawing vocabulary (``draw``: a canvas whose units are inches,
boxes, text, arrows, grids, matrices, the residual "+") and one module per chapter
(``ch01`` ... ``ch10``, ``ch_a``), each ending with the list ``FIGURES`` of its
drawing functions; a function ``chNN_name`` writes ``book/figures/chNN_name.svg``.
Sizes written on a diagram (d_model, h, d_k, d_ff, N, the vocabulary, label smoothing)
come from ``aiayn_helpers.config.BASE``, and the masks are the package's own
(``causal_mask``, ``padding_mask``), so a diagram cannot disagree with the code.

The output is deterministic: a fixed ``svg.hashsalt``, no date, text kept as text
(``svg.fonttype = "none"``), and no DOCTYPE (it names another host). Every figure
has a white background, so it reads in the site's dark mode, and is at most
``MAX_WIDTH_IN`` inches wide with text of at least ``MIN_FONT_PT`` points, so it
stays legible at a phone's width (tests/test_diagrams.py checks both).
"""

from __future__ import annotations

import argparse
import io
import re
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import matplotlib  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402

from . import ch01, ch02, ch03, ch04, ch05, ch06, ch07, ch08, ch09, ch10, ch_a, overview  # noqa: E402
from .draw import (  # noqa: E402, F401  (the names tests and readers look up here)
    D_FF,
    D_K,
    D_MODEL,
    HEADS,
    MAX_WIDTH_IN,
    MIN_FONT_PT,
    N_LAYERS,
    STYLE,
    pe_value,
)

FIGURES = ROOT / "book" / "figures"
CHAPTERS = [overview, ch01, ch02, ch03, ch04, ch05, ch06, ch07, ch08, ch09, ch10, ch_a]
DIAGRAMS: dict[str, Callable] = {f.__name__: f for m in CHAPTERS for f in m.FIGURES}


def _save(draw: Callable, buffer, **savefig) -> None:
    """``draw``'s figure saved into ``buffer``, drawn under the book's style alone."""
    with plt.rc_context():
        matplotlib.rcdefaults()  # a matplotlibrc of the reader's changes nothing
        plt.rcParams.update(STYLE)
        fig = draw()
        fig.savefig(buffer, **savefig)
        plt.close(fig)


def render_png(draw: Callable, dpi: int) -> bytes:
    """The PNG bytes of one diagram at ``dpi`` pixels an inch (96: one pixel a CSS pixel,
    the size its SVG shows at), for the places that show no SVG (tools/editions/plain_markdown.py)."""
    buffer = io.BytesIO()
    _save(draw, buffer, format="png", dpi=dpi, metadata={"Software": None})
    return buffer.getvalue()


def render(draw: Callable) -> bytes:
    """The SVG bytes of one diagram, made deterministic and self-contained."""
    buffer = io.StringIO()
    _save(draw, buffer, format="svg", metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
    svg = buffer.getvalue()
    # the DOCTYPE names a DTD on another host; SVG needs none
    svg = re.sub(r"<!DOCTYPE svg[^>]*>\n", "", svg)
    # mathtext names one font per glyph; let the browser fall back to any sans-serif
    svg = re.sub(r"(font-family: '[^']+')(?=[;\"])", r"\1, sans-serif", svg)
    return svg.encode("utf-8")


def write_all(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, draw in DIAGRAMS.items():
        path = folder / f"{name}.svg"
        path.write_bytes(render(draw))
        paths.append(path)
    return paths


def stale(folder: Path = FIGURES) -> list[str]:
    """The diagrams whose file in ``folder`` is missing or differs from a fresh one."""
    out = []
    for name, draw in DIAGRAMS.items():
        path = folder / f"{name}.svg"
        if not path.is_file() or path.read_bytes() != render(draw):
            shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
            out.append(str(shown))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report stale diagrams")
    args = parser.parse_args(argv)
    if args.check:
        out = stale()
        for path in out:
            print(f"out of date: {path} (run python tools/diagrams)")
        return 1 if out else 0
    for path in write_all(FIGURES):
        print(path.relative_to(ROOT))
    return 0
