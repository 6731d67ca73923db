"""Wide tables scroll inside a labelled region (loaded through `local_extensions`).

pydata-sphinx-theme wraps every table in ``<div class="pst-scrollable-table-container">``,
a box that scrolls sideways (book/_static/aiayn.css lets it). On a phone a table wider
than the column then scrolls inside that box, not the page; a keyboard or screen-reader
user reaches such a box only if it is a focusable region with a name. So, once each page
is rendered, every such box gets ``role="region"``, ``tabindex="0"`` and an
``aria-label``: the table's caption, else "Table: " and the heading of the section it
is in, else "Table N" (WAI-ARIA Authoring Practices, "scrollable region";
tests/test_site.py measures the tables at 390 px).
"""

from __future__ import annotations

import html
import re

CONTAINER = '<div class="pst-scrollable-table-container">'
HEADING = re.compile(r"<h[1-6][^>]*>(.*?)</h[1-6]>", re.S)
CAPTION = re.compile(r"<caption[^>]*>(.*?)</caption>", re.S)
TAG = re.compile(r"<[^>]+>")
HEADERLINK = re.compile(r'<a class="headerlink".*?</a>', re.S)


def _text(fragment: str) -> str:
    """The plain text of an HTML fragment, one line."""
    fragment = HEADERLINK.sub("", fragment)
    return " ".join(html.unescape(TAG.sub("", fragment)).split())


def label_tables(body: str) -> str:
    """``body`` with each table container a named, focusable region."""
    parts = body.split(CONTAINER)
    out = [parts[0]]
    for number, part in enumerate(parts[1:], start=1):
        before = "".join(out)
        caption = CAPTION.search(part[: part.find("</table>") if "</table>" in part else None])
        headings = HEADING.findall(before)
        if caption and _text(caption[1]):
            label = _text(caption[1])
        elif headings and _text(headings[-1]):
            label = f"Table: {_text(headings[-1])}"
        else:
            label = f"Table {number}"
        attributes = f'role="region" tabindex="0" aria-label="{html.escape(label, quote=True)}"'
        out.append(f'<div class="pst-scrollable-table-container" {attributes}>' + part)
    return "".join(out)


def _page_context(app, pagename, templatename, context, doctree):
    if "body" in context and CONTAINER in context["body"]:
        context["body"] = label_tables(context["body"])


def setup(app):
    app.connect("html-page-context", _page_context)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
