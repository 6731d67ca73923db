"""Every "Common mistake" box of the chapters says what to do about it (issue #36).

A box names a mistake a reader could make; a sentence beginning "The fix:" says how to
repair it and one beginning "The check:" says which check of the chapter catches it. The
lecture slides (tools/slides/lecture.py) show those two sentences as the slide's rows, so a
box without them becomes a slide that only names the mistake.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
BOX = re.compile(
    r"^(?P<fence>`{3,}|:{3,})\{admonition\} Common mistake: (?P<title>.*?)\n(?P<body>.*?)^(?P=fence)$", re.M | re.S
)


def boxes(path: Path) -> list[tuple[str, str]]:
    nb = nbformat.read(path, as_version=4)
    return [
        (m["title"], m["body"]) for cell in nb.cells if cell.cell_type == "markdown" for m in BOX.finditer(cell.source)
    ]


def test_the_chapters_have_mistake_boxes():
    assert sum(len(boxes(p)) for p in NOTEBOOKS) >= 30


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_mistake_box_states_its_fix_and_its_check(path):
    missing = []
    for title, body in boxes(path):
        text = " ".join(body.split())
        lacks = [word for word in ("The fix:", "The check:") if word not in text]
        if lacks:
            missing.append(f"{title!r} lacks {' and '.join(lacks)}")
    assert not missing, "; ".join(missing)
