"""Every figure of the book has alt text that says what it shows (issue #23).

A matplotlib figure is a cell output; its alt text lives in the cell's metadata
(``mystnb: image: alt:``), which the site builder (MyST-NB) puts on the image. Without
it, a screen-reader user hears the image's file name, a hash. The diagrams' alt text
is checked by tests/test_diagrams.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def is_figure(output) -> bool:
    shown = output.output_type in ("display_data", "execute_result")
    return shown and any(k.startswith("image/") for k in output.get("data", {}))


def figure_cells(path: Path):
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type == "code" and any(is_figure(out) for out in cell.get("outputs", [])):
            yield cell


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_figure_has_a_sentence_of_alt_text(path):
    missing = []
    for cell in figure_cells(path):
        alt = cell.metadata.get("mystnb", {}).get("image", {}).get("alt", "")
        if len(alt.split()) < 12 or not alt.rstrip().endswith("."):
            missing.append(f"cell {cell.get('id')}: {alt!r}")
    assert not missing, f"{path.name}: figures without a sentence of alt text: {missing}"


@pytest.mark.site
def test_no_image_on_the_site_has_a_hash_or_nothing_for_alt_text():
    site = ROOT / "_build" / "html"
    if not (site / "index.html").exists():
        pytest.skip("no built site: run `make book`")
    bad = []
    for page in site.rglob("*.html"):
        if "_static" in page.parts:
            continue
        for img in re.findall(r"<img [^>]*>", page.read_text(errors="replace")):
            alt = re.search(r'alt="([^"]*)"', img)
            src = re.search(r'src="([^"]*)"', img)
            text = alt[1] if alt else ""
            if not text.strip() or re.search(r"[0-9a-f]{32,}", text) or (src and text == src[1]):
                bad.append(f"{page.relative_to(site)}: {src[1] if src else img[:80]} alt={text!r}")
    assert not bad, "images without descriptive alt text:\n" + "\n".join(bad[:20])
