"""The chapters as the published editions hold them (plain Markdown,
tools/editions/plain_markdown.py: each diagram a ``data:image/png`` address), in JupyterLab.

Every chapter is opened in the JupyterLab the editions install (with jupyterlab-myst), and
CHAPTER in one with jupyterlab-myst turned off, which, like Colab and GitHub, renders
CommonMark and math only; each of their images must load. The launcher, the browser and
the page helpers are tests/test_jupyterlab.py's (split from it: no file over 600 lines).

An image here is one of the rendered Markdown, not CodeMirror's: a markdown cell keeps its
(hidden) editor, and CodeMirror 6 draws a line longer than it lays out (a data: address of
thousands of characters) as a spacer between two empty ``<img class="cm-widgetBuffer">``
elements, which never load (naturalWidth 0): those, not the diagrams, were the plain
edition's "images that load only partly" without jupyterlab-myst. With it, the diagrams as
data: SVGs showed as raw base64 text (markdown-it's validateLink): hence PNG.
Screenshots land in AIAYN_SCREENSHOTS (if set).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "tests"))
import test_jupyterlab  # noqa: E402
from editions import plain_markdown  # noqa: E402
from test_jupyterlab import (  # noqa: E402
    ALL,
    CHAPTER,
    NOTEBOOKS,
    _jupyter_lab,
    _markdown_text,
    _open,
    _require_lab_and_browser,
    _shut_down_sessions,
)

# the chapters' test's fixture (one Chromium per module), not a second copy of it
browser = test_jupyterlab.browser
# JupyterLab twice, a browser over every plain chapter (tests/conftest.py: lab -> integration)
pytestmark = [pytest.mark.slow, pytest.mark.lab]


# ---------------------------------------------------------------- the plain-Markdown edition


_JS_PLAIN_IMAGES = """() => [...document.querySelectorAll('.jp-MarkdownCell img')]
    .filter(i => !i.closest('.cm-editor'))
    .map(i => ({src: (i.getAttribute('src') || '').slice(0, 60), ok: i.complete && i.naturalWidth > 0}))"""


@pytest.fixture(scope="module")
def plain_folder(tmp_path_factory) -> tuple[Path, dict[str, nbformat.NotebookNode]]:
    """A folder holding every chapter as the published editions hold it, in notebooks/."""
    _require_lab_and_browser()
    tmp = tmp_path_factory.mktemp("plain")
    (tmp / "notebooks").mkdir()
    ctx = plain_markdown.book_context()
    notebooks = {}
    for path in NOTEBOOKS:
        notebooks[path.name] = plain_markdown.plain_notebook(nbformat.read(path, 4), ctx)
        nbformat.write(notebooks[path.name], tmp / "notebooks" / path.name)
    return tmp, notebooks


@pytest.fixture(scope="module")
def plain(browser, plain_folder, tmp_path_factory):
    """Every chapter of the editions in the JupyterLab they install (the package's [lab]
    set, Binder's too, has jupyterlab-myst: it parses Markdown with markdown-it, which shows
    a data: image other than gif, png, jpeg or webp as raw text): ``{name: (plain notebook,
    rendered images)}``, each chapter opened in turn in one page."""
    folder, notebooks = plain_folder
    found = {}
    with _jupyter_lab(folder, tmp_path_factory.mktemp("plain_lab")) as (base, token):
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        context.set_default_timeout(180_000)
        page = context.new_page()
        try:
            for name in notebooks:
                _open(page, base, token, name, "p", folder / "notebooks" / name)
                found[name] = (notebooks[name], page.evaluate(_JS_PLAIN_IMAGES))
                _shut_down_sessions(base, token)
        finally:
            context.close()
    return found


@pytest.fixture(scope="module")
def plain_page(browser, plain_folder, tmp_path_factory):
    """CHAPTER of the editions in a JupyterLab without jupyterlab-myst, which, like Colab and
    GitHub, renders CommonMark and math only; its math typeset (JupyterLab's MathJax)."""
    folder, _ = plain_folder
    with _jupyter_lab(folder, tmp_path_factory.mktemp("plain_bare"), myst=False) as (base, token):
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        context.set_default_timeout(180_000)
        page = context.new_page()
        try:
            _open(page, base, token, CHAPTER, "mjx-container", folder / "notebooks" / CHAPTER)
            yield page
        finally:
            context.close()


@pytest.mark.parametrize("path", ALL)
def test_plain_edition_every_image_loads(plain, path):
    """Each diagram of the plain chapter (a data: PNG) shows in the editions' JupyterLab:
    as many rendered images as the chapter has figures, each loaded."""
    nb, images = plain[path.name]
    markdown = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    figures = path.read_text(encoding="utf-8").count("](figures/")
    assert figures >= 1 and markdown.count("](data:image/png;base64,") == figures
    assert len(images) == figures, f"{path.name}: {len(images)} images rendered for {figures} figures"
    broken = [i["src"] for i in images if not i["ok"]]
    assert not broken, f"{path.name}: images that did not load: {broken}"


def test_plain_edition_reads_cleanly_without_the_extension(plain_page):
    """Admonitions are blockquotes headed by their bold title, with typeset math; exercises are
    headings with the site's numbers; no MyST syntax shows."""
    quotes = plain_page.locator(".jp-MarkdownCell blockquote").filter(has_text="Common mistake")
    assert quotes.count() >= 2
    titled = [q for q in quotes.all() if q.locator("p:first-child strong").inner_text().startswith("Common mistake")]
    assert len(titled) == quotes.count(), "a common-mistake blockquote without its bold title"
    assert any(q.locator("mjx-container").count() for q in titled), "no typeset math in a blockquote"
    shots = os.environ.get("AIAYN_SCREENSHOTS")
    if shots:
        titled[0].screenshot(path=str(Path(shots) / "plain_admonition.png"))
    headings = [h.strip() for h in plain_page.locator(".jp-MarkdownCell h4").all_inner_texts()]
    exercises = [h for h in headings if h.startswith("Exercise")]
    assert exercises == [f"Exercise 3.{i}" for i in range(1, 5)], headings
    text = _markdown_text(plain_page)
    for kind, pattern in plain_markdown.MYST_PATTERNS:
        assert not pattern.search(text), f"raw MyST {kind}"
    assert not re.findall(r"\{[a-z]+(?::[a-z]+)?\}", text)
    assert "Vaswani et al. (2017)" in text and "<aiayn_helpers." not in text
    images = plain_page.evaluate(_JS_PLAIN_IMAGES)
    figures = (ROOT / "notebooks" / CHAPTER).read_text(encoding="utf-8").count("](figures/")
    assert len(images) == figures and all(i["ok"] for i in images), images
