"""Feedback pages that cannot run anything: tools/grading/feedback.py's sanitizer and
autograde.safe_output, on the payloads of a red team, without grading (a second).

The graded version, the pages opened in Chromium, is in test_grading_hostile_two.py.
"""

from __future__ import annotations

import re
import sys
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
pytest.importorskip("nbgrader", reason="nbgrader is pinned in requirements.txt")
from grading import autograde, feedback  # noqa: E402

HOSTILE_MARKDOWN = [
    "[a](javascript:alert(1))",
    "[a](JaVa&#x09;script:alert(1))",
    "[a](<javascript:alert(1)>)",
    "![i](javascript:alert(1))",
    "[r][1]\n\n[1]: javascript:alert(2)",
    "[d](data:text/html,<script>alert(1)</script>)",
    "[v](vbscript:msgbox)",
]
HOSTILE_HTML = [
    '<img src=x onerror="alert(1)">',
    "<a href=' javascript:alert(1)'>x</a>",
    "<a href='java\tscript:alert(1)'>x</a>",
    "<a href='&#106;avascript:alert(1)'>x</a>",
    "<svg onload=alert(1)></svg>",
    "<script>alert(1)</script>",
    "<iframe src='javascript:alert(1)'></iframe>",
    '<img src="x.png" width="1 onerror=alert(1)">',
    "<div style='background:url(javascript:alert(1))'>x</div>",
]


def _tags(page: str) -> list[tuple[str, dict]]:
    """The tags of ``page`` as a browser's parser reads them, with their attributes."""
    found = []

    class Parser(HTMLParser):
        def handle_starttag(self, tag, attrs):
            found.append((tag, {k: v or "" for k, v in attrs}))

    Parser(convert_charrefs=True).feed(page)
    return found


def _assert_harmless(page: str) -> None:
    for tag, attrs in _tags(page):
        assert tag in feedback.TAGS, (tag, page)
        assert not [a for a in attrs if a.startswith("on") or a == "style" and "url" in attrs[a]], (attrs, page)
        for name in ("href", "src"):
            address = re.sub(r"[\x00-\x20]", "", attrs.get(name, "")).lower()
            assert not address.startswith(("javascript:", "vbscript:", "data:")), (attrs, page)
        assert attrs.get("width", "0").isdigit() and attrs.get("height", "0").isdigit(), (attrs, page)


@pytest.mark.parametrize("source", HOSTILE_MARKDOWN)
def test_markdown_links_to_anything_but_http_mailto_or_relative_are_dropped(source):
    page = feedback.safe_markdown2html(source)
    _assert_harmless(page)
    assert _tags(page), page  # the link or image is still there, without its address


@pytest.mark.parametrize("html", HOSTILE_HTML)
def test_html_keeps_no_event_script_or_script_address(html):
    page = feedback.sanitize_html(html)
    _assert_harmless(page)
    _assert_harmless(feedback.safe_markdown2html(html))


def test_good_markdown_keeps_its_links_tables_and_code():
    page = feedback.safe_markdown2html(
        "# T\n\n[w](https://a.org/x) [m](mailto:a@b.c) [r](../x.html#y)\n\n| a |\n|:-|\n| 1 |\n\n`c`\n"
    )
    for kept in ('href="https://a.org/x"', 'href="mailto:a@b.c"', 'href="../x.html#y"', "<table>", "<code>c</code>"):
        assert kept in page, (kept, page)


def test_an_image_output_keeps_only_numbers_for_its_size():
    out = nbformat.v4.new_output(
        "display_data",
        data={"image/png": "iVBORw0KGgo=", "text/html": "<b>x</b>"},
        metadata={
            "image/png": {"width": '1 onerror=document.title="X"', "height": "40"},
            "width": "2 onerror=x",
            "filenames": {"image/png": "javascript:x"},
        },
    )
    safe = autograde.safe_output(out)
    assert set(safe.data) == {"image/png", "text/plain"}
    assert safe.metadata == {"image/png": {"height": 40}}
    bad = nbformat.v4.new_output("display_data", data={"image/png": '" onerror="x'}, metadata={})
    assert "image/png" not in autograde.safe_output(bad).data


def test_a_feedback_page_loads_nothing_from_outside_and_borrows_no_box():
    """Issue 51 item 9: a remote or protocol-relative image becomes a link that loads
    nothing; no class or id of a submission (a fake grade box), but the grader's own
    tex2jax_ignore, which keeps MathJax off a student's text."""
    for markdown in ("![x](http://evil.example/a.png)", "![x](//evil.example/a.png)", "![x](HTTPS://e/x.png)"):
        page = feedback.safe_markdown2html(markdown)
        assert "<img" not in page and "not loaded" in page, page
    assert '<img src="figure.png"' in feedback.safe_markdown2html("![f](figure.png)")
    boxed = feedback.safe_markdown2html('<div class="panel panel-primary" id="grade">12 of 12</div>')
    assert "class=" not in boxed and "id=" not in boxed, boxed
    kept = feedback.safe_markdown2html('<div class="tex2jax_ignore">\n\n$x$\n\n</div>')
    assert 'class="tex2jax_ignore"' in kept, kept


def test_an_empty_code_cell_shows_no_not_executed_error():
    """Issue 51 (low): an honest student's empty code cell, which the runner never
    runs, showed ``NotExecuted`` in the feedback; a cell with code and no result still
    does (a test cell that never ran fails)."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("  \n"), nbformat.v4.new_code_cell("x = 1")])
    merged = autograde.merge_outputs(nb, [], "the sandbox stopped")
    assert merged.cells[0].outputs == []
    assert merged.cells[1].outputs[0].ename == "NotExecuted"
