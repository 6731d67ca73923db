"""`make slides`: one offline deck per session of the syllabus, generated from the chapters."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import make_slides  # noqa: E402


def test_one_deck_per_session_built_offline(tmp_path):
    written = make_slides.build(tmp_path)
    sessions = make_slides.syllabus()
    assert [p.name for p, _ in written] == [f"session-{s.number:02d}.html" for s in sessions]
    assert len(sessions) == 10
    assert (tmp_path / "mathjax" / "tex-chtml-full.js").is_file()
    for (path, count), session in zip(written, sessions, strict=True):
        page = path.read_text(encoding="utf-8")
        assert count >= 8 and page.count("<section") == count, path.name
        # the session's title slide, then every chapter's title slide
        assert page.count('<section class="title">') == 1 + len(session.chapters), path.name
        # offline: nothing from another host (the SVG namespace in the script is not a request)
        requests = re.findall(r'(?:src|href)="([^"]+)"', page)
        assert not [r for r in requests if r.startswith(("http:", "https:", "//"))], path.name
        for src in re.findall(r'src="(figures/[^"]+)"', page):
            assert (tmp_path / src).is_file(), f"{path.name}: {src} missing"
        assert not re.search(r"\{(cite|ref|numref|doc)[^}]*\}`", page), f"{path.name}: a MyST role left raw"
        assert "<h2>Summary" in page, f"{path.name}: no summary slide"


def test_session_option_builds_one_deck(tmp_path):
    written = make_slides.build(tmp_path, [3])
    assert [p.name for p, _ in written] == ["session-03.html"]
