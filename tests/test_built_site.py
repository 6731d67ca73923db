"""Static checks of the built site (_build/html), run after the book build: every page of the
table of contents is there, and every local link, image and script it references exists."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"

pytestmark = pytest.mark.site


class _Refs(HTMLParser):
    def __init__(self):
        super().__init__()
        self.refs: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for key in ("href", "src"):
            if a.get(key) and tag in ("a", "img", "script", "link"):
                self.refs.append(a[key])


def toc_pages() -> list[str]:
    return re.findall(r"file:\s*(\S+)", (ROOT / "_toc.yml").read_text()) + [
        re.search(r"root:\s*(\S+)", (ROOT / "_toc.yml").read_text())[1]
    ]


@pytest.fixture(scope="module")
def site():
    if not (HTML / "index.html").exists():
        pytest.fail("_build/html/index.html is missing: run `make book` first")
    return HTML


def test_every_toc_page_is_built(site):
    for page in toc_pages():
        assert (site / f"{page}.html").exists(), f"{page} is in _toc.yml but was not built"


def test_local_references_resolve(site):
    broken = []
    for page in site.rglob("*.html"):
        if "_static" in page.parts or "_sources" in page.parts:
            continue
        parser = _Refs()
        parser.feed(page.read_text(errors="replace"))
        for ref in parser.refs:
            url = urlparse(ref)
            if url.scheme or url.netloc or ref.startswith(("#", "mailto:", "javascript:")):
                continue
            target = (page.parent / unquote(url.path)).resolve()
            if url.path and not target.exists():
                broken.append(f"{page.relative_to(site)} -> {ref}")
    assert not broken, "broken local references:\n" + "\n".join(broken[:20])


def test_chapter_pages_have_their_figures(site):
    for page in site.glob("notebooks/*.html"):
        nb = ROOT / "notebooks" / f"{page.stem}.ipynb"
        if '"image/png"' in nb.read_text():
            assert "<img" in page.read_text(), f"{page.name}: the notebook has figures but the page shows none"


def test_no_page_shows_a_wall_of_progress_bars(site):
    """Progress bars (stderr) stay in the notebooks and off the site (_config.yml: nb_output_stderr)."""
    walls = {}
    for page in site.glob("notebooks/*.html"):
        stderr_blocks = len(re.findall(r'class="output stderr', page.read_text(errors="replace")))
        if stderr_blocks:
            walls[page.name] = stderr_blocks
    assert not walls, f"stderr output shown on the site: {walls}"
    chapter7 = (ROOT / "notebooks" / "07_full_model.ipynb").read_text()
    assert '"name": "stderr"' in chapter7  # the check above would pass trivially without any


def test_every_page_has_the_books_layout_and_one_search_field(site):
    """book/_static/aiayn.css is linked from every page, and no page has the theme's header
    bar with a second search field (book/_ext/aiayn_book.py sets navbar_persistent empty)."""
    assert (site / "_static" / "aiayn.css").is_file()
    for page in site.rglob("*.html"):
        if {"_static", "_sources"} & set(page.parts):
            continue
        text = page.read_text(errors="replace")
        if 'http-equiv="refresh"' in text[:2000].lower():
            continue
        assert "_static/aiayn.css" in text, f"{page.relative_to(site)} lacks the book's stylesheet"
        assert "navbar-persistent--container" not in text, f"{page.relative_to(site)} has a header search field"
