"""book/_ext/site_fixes.py: the themes' markup that axe-core flags, fixed once the build
finishes (tests/test_site_axe.py runs axe-core over the built site; this checks the
substitutions themselves, in a second, on the markup sphinx-book-theme writes)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "book" / "_ext"))
from site_fixes import fix_page, fix_site  # noqa: E402

# the theme's markup, as written (long lines)

PAGE = """<div id="pst-primary-sidebar" class="bd-sidebar-primary bd-sidebar">
<button class="btn search-button-field search-button__button pst-js-only" title="Search" aria-label="Search" data-bs-placement="bottom">
 <span class="search-button__default-text">Search</span></button>
<button class="btn btn-sm pst-navbar-icon search-button search-button__button pst-js-only" title="Search" aria-label="Search">
<button class="btn btn-sm nav-link pst-navbar-icon theme-switch-button pst-js-only" aria-label="Color mode">
  <i class="theme-switch fa-solid fa-sun                fa-lg" data-mode="light" title="Light"></i>
  <i class="theme-switch fa-solid fa-moon               fa-lg" data-mode="dark"  title="Dark"></i>
</button>
<summary aria-label="Toggle hidden content">
<div role="list" class="citation-list"><div class="citation" id="id5" role="doc-biblioentry">x</div></div>
<table><thead><tr><th class="head"><p></p></th><th class="head"><p>dot</p></th></tr></thead></table>
<div class="pst-scrollable-table-container" role="region" tabindex="0" aria-label="Table: A"><table></table></div>
<div class="pst-scrollable-table-container" role="region" tabindex="0" aria-label="Table: A"><table></table></div>
<div class="aiayn-translator"></div>
<script type="module" src="../_static/translator/view.js"></script>
"""  # noqa: E501


def test_each_fix():
    fixed = fix_page(PAGE)
    # the visible text is the name: no aria-label on the search field with text
    assert 'search-button-field search-button__button pst-js-only" title="Search" data-bs' in fixed
    assert 'pst-js-only" title="Search" aria-label="Search">' in fixed  # the icon-only one keeps it
    assert 'title="Light"' not in fixed and fixed.count('aria-hidden="true"></i>') == 2
    assert "<summary>" in fixed and "Toggle hidden content" not in fixed
    assert 'role="listitem"' in fixed and "doc-biblioentry" not in fixed
    assert '<td class="head"></td><th class="head"><p>dot</p></th>' in fixed
    assert 'aria-label="Table: A"' in fixed and 'aria-label="Table: A (2)"' in fixed
    assert 'role="complementary" aria-label="Book sidebar"' in fixed
    assert (
        '<script src="../_static/translator/file_notice.js"></script>\n'
        '<script type="module" src="../_static/translator/view.js"></script>'
    ) in fixed


def test_fixing_twice_changes_nothing(tmp_path):
    """An incremental build fixes every page again: the fixes are idempotent."""
    once = fix_page(PAGE)
    assert fix_page(once) == once
    (tmp_path / "a.html").write_text(PAGE, encoding="utf-8")
    (tmp_path / "_static").mkdir()
    (tmp_path / "_static" / "b.html").write_text(PAGE, encoding="utf-8")
    assert fix_site(tmp_path) == 1 and fix_site(tmp_path) == 0
    assert (tmp_path / "_static" / "b.html").read_text(encoding="utf-8") == PAGE


def test_no_table_header_is_math_alone():
    """A header cell that is only math (``$\\alpha=0.6$``) is empty to axe-core's
    ``empty-table-header`` once MathJax draws it (the results page had seven): the book's
    pages write such headers as text (``α = 0.6``)."""
    import re

    root = Path(__file__).resolve().parents[1]
    math_only = re.compile(r"^\s*\$[^$]+\$\s*$")
    found = []
    for page in sorted((root / "book").glob("*.md")):
        lines = page.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines[:-1]):
            if line.startswith("|") and re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", lines[i + 1].strip()):
                cells = line.strip().strip("|").split("|")
                found += [f"{page.name}:{i + 1}: {c.strip()}" for c in cells if math_only.match(c)]
    assert found == [], found
