"""The built pages, made accessible where the themes are not (loaded by aiayn_book.py).

axe-core (tests/test_site_axe.py runs it over every page) found on the pages that
sphinx-book-theme and pydata-sphinx-theme write:

* ``label-content-name-mismatch`` (serious): the sidebar's search button says "Search
  Ctrl+K" but is named "Search"; a code cell's "Show code cell source" is named "Toggle
  hidden content"; the colour-mode button's icons carry titles ("Light", "Dark") that
  are not its name. A control's name must contain its visible text (WCAG 2.5.3).
* ``aria-required-children`` (critical) and ``aria-deprecated-role``: the bibliography
  is a ``role="list"`` whose entries are ``role="doc-biblioentry"``, a role DPUB-ARIA 1.1
  deprecated; a list needs ``listitem`` children.
* ``empty-table-header``: an empty ``<th>`` (a table's top-left corner) names nothing;
  it becomes an empty ``<td>``.
* ``region``: the sidebar (the book's title and its table of contents) is in no
  landmark; it becomes a complementary one, "Book sidebar".
* ``landmark-unique``: two tables under one heading got the same region label
  (table_regions.py); the second is numbered.

And one addition for the translator's box: on a page that has one, a classic script
(``_static/translator/file_notice.js``) goes before the module ``view.js``, so that a
copy of the site opened from disk (where browsers refuse module scripts) says how to
serve it instead of showing nothing.

The fixes run on every written HTML file when the build finishes (they need the
theme's own markup, which Sphinx's page context does not hold); each is a plain text
substitution, so a theme that changes its markup makes the axe test fail, not the build.
"""

from __future__ import annotations

import re
from pathlib import Path

SEARCH_FIELD = re.compile(r'(<button class="btn search-button-field[^"]*"[^>]*?) aria-label="Search"')
TOGGLE = '<summary aria-label="Toggle hidden content">'
THEME_ICON = re.compile(r'(<i class="theme-switch [^"]*"\s+data-mode="[a-z]+")\s+title="[^"]*"></i>')
BIBLIOENTRY = 'role="doc-biblioentry"'
EMPTY_TH = re.compile(r"<th(\s[^>]*)?>\s*(?:<p>\s*</p>)?\s*</th>")
REGION_LABEL = re.compile(r'(role="region" tabindex="0" aria-label=")([^"]*)(")')
SIDEBAR = '<div id="pst-primary-sidebar" class="bd-sidebar-primary bd-sidebar">'
VIEW_JS = re.compile(r'<script type="module" src="([^"]*)_static/translator/view\.js"></script>')


def fix_page(text: str) -> str:
    """The page ``text`` with the fixes of the module's docstring."""
    text = SEARCH_FIELD.sub(r"\1", text)
    text = text.replace(TOGGLE, "<summary>")
    text = THEME_ICON.sub(r'\1 aria-hidden="true"></i>', text)
    text = text.replace(SIDEBAR, SIDEBAR[:-1] + ' role="complementary" aria-label="Book sidebar">')
    text = text.replace(BIBLIOENTRY, 'role="listitem"')
    text = EMPTY_TH.sub(lambda m: f"<td{m[1] or ''}></td>", text)
    seen: dict[str, int] = {}

    def unique(match: re.Match) -> str:
        label = match[2]
        seen[label] = seen.get(label, 0) + 1
        if seen[label] > 1:
            label = f"{label} ({seen[label]})"
        return match[1] + label + match[3]

    text = REGION_LABEL.sub(unique, text)
    if "file_notice.js" not in text:
        text = VIEW_JS.sub(lambda m: f'<script src="{m[1]}_static/translator/file_notice.js"></script>\n{m[0]}', text)
    return text


def fix_site(folder: str | Path) -> int:
    """Every page of the built site ``folder`` fixed in place; the number changed."""
    changed = 0
    for path in Path(folder).rglob("*.html"):
        if "_static" in path.parts:
            continue
        text = path.read_text(encoding="utf-8")
        fixed = fix_page(text)
        if fixed != text:
            path.write_text(fixed, encoding="utf-8")
            changed += 1
    return changed


def _build_finished(app, exception):
    if exception is None and app.builder.format == "html":
        fix_site(app.outdir)


def setup(app):
    app.connect("build-finished", _build_finished)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
