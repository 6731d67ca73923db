"""No text in a figure smaller than about 9 px at the column's width (issue #37, item 6).

How the smallest text is measured, without a browser:

* A diagram (book/figures/*.svg) is shown at its own width or the column's, whichever
  is smaller. Its text is ``font-size`` CSS px at the natural width (matplotlib writes
  points, 4/3 px each), so at the column it is ``size * min(1, COLUMN / width)``.
* A plot is a PNG in a notebook's outputs, drawn by matplotlib at
  ``figure.dpi`` = 100 (``ah.setup_notebook``; checked below) and shown at its pixel
  width or the column's, whichever is smaller. A font of ``s`` points is
  ``s / 72 * 100`` px tall in the PNG, so at the column it is
  ``s / 72 * 100 * min(1, COLUMN / png_width)``. The PNG does not record its fonts,
  so ``s`` is read from the cell that draws it: matplotlib's default of 10 points
  (tick labels, legends and axis labels), or the smallest size the cell asks for
  (``fontsize=7``, ``size="small"``, ``labelsize=8``...), whichever is smaller.

COLUMN is the narrow end of the site's column on a laptop (688 px at 1280 px wide).
A figure below MIN_PX fails, unless TO_DO lists it (figures of chapters that were
being edited when the check was written); a listed figure that now passes fails too,
so that the list only shrinks.
"""

from __future__ import annotations

import base64
import re
import struct
from pathlib import Path

import matplotlib
import nbformat
import pytest

import aiayn_helpers as ah

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
FIGURES = sorted((ROOT / "book" / "figures").glob("*.svg"))
COLUMN = 688  # CSS px
MIN_PX = 9.0
DPI = 100
DEFAULT_PT = 10.0  # matplotlib's font.size: ticks, labels and legends
NAMED_PT = {"xx-small": 5.79, "x-small": 6.94, "small": 8.33, "medium": 10.0}
ASKED = re.compile(
    r"\b(?:fontsize|size|labelsize|title_fontsize)\s*=\s*"
    r"(?:(\d+(?:\.\d+)?)|[\"'](xx-small|x-small|small|medium)[\"'])"
)
# (notebook, cell id): the multi-panel plots still to re-lay out for the column (none
# left: a plot that fails now is fixed, not listed)
TO_DO: set[tuple[str, str]] = set()


def smallest_pt(source: str) -> float:
    """The smallest font, in points, that a plotting cell can draw."""
    asked = [float(n) if n else NAMED_PT[name] for n, name in ASKED.findall(source)]
    return min([DEFAULT_PT, *asked])


def png_width(data: str) -> int:
    header = base64.b64decode(data[:64])
    assert header[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">I", header[16:20])[0]


def plot_px(source: str, width: int) -> float:
    """The smallest text of a PNG plot, in CSS px, at the column's width."""
    return smallest_pt(source) / 72 * DPI * min(1.0, COLUMN / width)


def plots(path: Path):
    """(cell id, smallest text in px) of each PNG output of a notebook."""
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type != "code":
            continue
        for out in cell.get("outputs", []):
            data = out.get("data", {}).get("image/png")
            if data:
                yield cell.get("id"), plot_px(cell.source, png_width(data))


def test_the_measure_knows_the_notebook_style():
    with matplotlib.rc_context():
        ah.setup_notebook(seed=0)
        assert matplotlib.rcParams["figure.dpi"] == DPI
        assert matplotlib.rcParams["font.size"] == DEFAULT_PT
    assert smallest_pt('ax.text(0, 0, "x", fontsize=7)\nax.legend()') == 7
    assert smallest_pt('ax.legend(fontsize="small")') == NAMED_PT["small"]
    assert smallest_pt("plt.plot(x)") == DEFAULT_PT
    # a 12 in figure (1200 px) squeezed into the column: 10 pt is about 8 px
    assert plot_px("plt.plot(x)", 1200) < MIN_PX <= plot_px("plt.plot(x)", 688)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_plot_text_is_readable_at_the_column_width(path):
    small, fixed = [], []
    for cell_id, px in plots(path):
        listed = (path.name, cell_id) in TO_DO
        if px < MIN_PX and not listed:
            small.append(f"cell {cell_id}: {px:.1f} px")
        if px >= MIN_PX and listed:
            fixed.append(cell_id)
    assert not small, f"{path.name}: text under {MIN_PX} px at {COLUMN} px: {small}"
    assert not fixed, f"{path.name}: readable now, take them off TO_DO: {fixed}"


def test_to_do_names_existing_figures():
    ids = {(p.name, c) for p in NOTEBOOKS for c, _ in plots(p)}
    assert TO_DO <= ids, f"TO_DO names figures that are gone: {sorted(TO_DO - ids)}"


@pytest.mark.parametrize("path", FIGURES, ids=lambda p: p.name)
def test_diagram_text_is_readable_at_the_column_width(path):
    svg = path.read_text()
    width_px = float(re.search(r'<svg[^>]*width="([\d.]+)pt"', svg)[1]) * 4 / 3
    sizes_px = [float(s) * 4 / 3 for s in re.findall(r"font-size: ([\d.]+)px", svg)]
    assert sizes_px, "no text found"
    smallest = min(sizes_px) * min(1.0, COLUMN / width_px)
    assert smallest >= MIN_PX, f"{path.name}: {smallest:.1f} px at {COLUMN} px"
