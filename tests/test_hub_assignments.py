"""make hub-links also links the graded assignments (issue #34 item 7)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from editions.hub_links import assignments  # noqa: E402

HUB = "https://hub.example.edu"


def test_every_released_assignment_has_a_link():
    names = sorted(p.parent.name for p in (ROOT / "book/autograder/source").glob("*/*.ipynb"))
    assert len(names) == 4
    assert assignments() == [f"assignments/{n}.ipynb" for n in names]
    run = subprocess.run(
        [sys.executable, str(ROOT / "tools/editions/hub_links.py"), "--hub", HUB, "--assignments"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    urls = [line.split()[-1] for line in run.stdout.splitlines() if "git-pull?" in line]
    paths = [parse_qs(urlsplit(u).query)["urlpath"][0] for u in urls]
    # the student edition (make_student.py) puts them in assignments/
    assert [p.split("/", 3)[3] for p in paths] == assignments()
    assert "pip install" not in run.stdout  # the chapters' run prints those


def test_make_hub_links_prints_both():
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("\nhub-links:", 1)[1].split("\n\n", 1)[0]
    assert "tools/editions/hub_links.py $(HUB_FLAGS)\n" in recipe
    assert "tools/editions/hub_links.py $(HUB_FLAGS) --assignments" in recipe
