"""Every page of the built site under axe-core, offline: no serious or critical violation.

axe-core comes from the npm lock of the site's runtime (tools/ship/browser/, a
devDependency: ``make book``'s npm ci installs it into .tools/translator; never a CDN)
and is put into each page by Playwright; the pages are served from 127.0.0.1 with every
other host refused, as test_site.py does. AIAYN_AXE names another axe.min.js.

The fixes are book/_ext/site_fixes.py's (the themes' search button, code-cell toggles,
colour-mode icons, bibliography roles, empty table headers, duplicate region labels)
and the translator's box (book/_static/translator/view.js). Before them axe-core 4.14
found on every page a serious ``label-content-name-mismatch`` (2 to 6 nodes a page) and
on the bibliography a critical ``aria-required-children``.

Marker ``site`` and ``integration``: a page takes a few seconds (make test-integration).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from test_site import server  # noqa: F401  (the site served from 127.0.0.1)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from bench.chromium import CHROMIUM_FLAGS, find_chromium, keep_offline  # noqa: E402

pytestmark = [pytest.mark.site, pytest.mark.integration, pytest.mark.rendering]

ROOT = Path(__file__).resolve().parents[1]
AXE = Path(os.environ.get("AIAYN_AXE", ROOT / ".tools/translator/node_modules/axe-core/axe.min.js"))
SERIOUS = ("serious", "critical")


@pytest.fixture(scope="module")
def axe_page(server):  # noqa: F811  (the fixture imported above)
    if not AXE.is_file():
        pytest.skip(f"{AXE} not found (make book installs it with npm ci from tools/ship/browser)")
    executable = find_chromium()
    if executable is None:
        pytest.skip("no Chromium found: browser test skipped")
    from playwright.sync_api import sync_playwright

    source = AXE.read_text(encoding="utf-8")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_FLAGS)
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        keep_offline(context)
        page = context.new_page()

        def run(path: str) -> list[dict]:
            page.goto(server + path, wait_until="load")
            page.evaluate(source)
            return page.evaluate(
                """async () => (await axe.run(document, {resultTypes: ['violations']})).violations.map(
                     v => ({id: v.id, impact: v.impact,
                            nodes: v.nodes.slice(0, 3).map(n => n.html.slice(0, 120))}))"""
            )

        yield run
        browser.close()


def test_no_serious_or_critical_violation_on_any_page(axe_page):
    from test_site import PAGES

    assert len(PAGES) > 20
    found = {}
    for path in PAGES:
        bad = [v for v in axe_page(path) if v["impact"] in SERIOUS]
        if bad:
            found[path] = bad
    assert found == {}, found
