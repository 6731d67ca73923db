"""What tests/test_site.py opens and how: the built site's pages, the headless Chromium
that opens them (its flags and ``find_chromium``, from tools/bench/chromium.py, which
tools/bench/bench_browser.py and the translator's browser tests use too), and the scripts
each visit runs in a page (the wait for MathJax and the translator, the report of images,
math and links, the layout measures).
Set AIAYN_SITE_DIR to test another build than _build/html. Kept apart so that the test file
holds the tests (the 600-line rule, tests/test_architecture.py); no test is defined here.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from bench.chromium import CHROMIUM_FLAGS, find_chromium  # noqa: E402, F401  (shared with bench_browser)
from bench.measure_stretches import JS_STRETCHES  # noqa: E402  (tools/ is not a package)

ROOT = Path(__file__).resolve().parents[1]
SITE = Path(os.environ.get("AIAYN_SITE_DIR", ROOT / "_build" / "html")).resolve()
NOT_PAGES = ("_static", "_sources", "_images", "_sphinx_design_static", "jupyter_execute")
REDIRECT = re.compile(r'<meta http-equiv="refresh" content="0; url=([^"]+)"', re.IGNORECASE)
HTML = sorted(
    p.relative_to(SITE).as_posix()
    for p in SITE.rglob("*.html")
    if not p.relative_to(SITE).as_posix().startswith(NOT_PAGES)
)
REDIRECTS = [p for p in HTML if REDIRECT.search((SITE / p).read_text(encoding="utf-8", errors="replace")[:2000])]
PAGES = [p for p in HTML if p not in REDIRECTS]
CHAPTERS = [p for p in PAGES if re.fullmatch(r"notebooks/[^/]+\.html", p)]
STOPWORDS = {"about", "after", "their", "there", "these", "which", "while", "where", "every", "first"}


LAYOUT_VIEWPORTS = {"laptop": (1280, 900), "phone": (390, 844)}
_JS_LAYOUT = """() => {
  const vw = document.documentElement.clientWidth;
  const cells = Array.from(document.querySelectorAll('.cell_input pre, .cell_output pre'));
  return {
    viewport: vw,
    page: document.documentElement.scrollWidth,
    code_cells: cells.length,
    scrolling: cells.filter(p => p.scrollWidth > p.clientWidth + 1).map(
      p => p.textContent.split('\\n').reduce((a, b) => a.length >= b.length ? a : b).slice(0, 60)),
    wide_blocks: Array.from(document.querySelectorAll('.pst-scrollable-table-container, div.highlight pre')).filter(
      b => !b.closest('.cell_output') && b.scrollWidth > b.clientWidth + 1).map(b => b.textContent.trim().slice(0, 60)),
    search_boxes: Array.from(document.querySelectorAll('.search-button-field')).filter(
      e => e.offsetParent !== null).length,
    boxes: document.querySelectorAll('.bd-article pre').length,
    wide_boxes: Array.from(document.querySelectorAll('.bd-article pre')).filter(
      p => p.scrollWidth > p.clientWidth + 1).map(p => `${p.scrollWidth} px: ${p.textContent.trim().slice(0, 50)}`),
    tables: Array.from(document.querySelectorAll('.bd-article table')).map(t => {
      const region = t.closest('[role="region"]');
      const box = (region || t).getBoundingClientRect();
      return {
        text: t.textContent.trim().slice(0, 40), label: region ? region.getAttribute('aria-label') || '' : null,
        scrolls: region ? region.scrollWidth > region.clientWidth + 1 : null,
        focusable: region ? region.tabIndex === 0 : false, right: box.right,
        index: t.classList.contains('indextable'),
      };
    }),
    contents: Array.from(document.querySelectorAll('.bd-article nav.contents a')).map(a => a.getAttribute('href')),
    contents_top: (document.querySelector('.bd-article nav.contents') || {getBoundingClientRect: () => ({top: -1})})
      .getBoundingClientRect().top + window.scrollY,
    sections: Array.from(document.querySelectorAll('.bd-article section > h2, .bd-article section > h3')).map(
      h => '#' + h.parentElement.id),
  };
}"""


_JS_WAIT = """async () => {
  const timeout = new Promise(r => setTimeout(r, 20000));
  const images = Array.from(document.images).map(img => {
    img.loading = "eager";
    if (img.complete) return null;
    return new Promise(r => { img.addEventListener("load", r); img.addEventListener("error", r); });
  });
  await Promise.race([Promise.all(images), timeout]);
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await Promise.race([MathJax.startup.promise, timeout]);
  }
}"""

_JS_REPORT = """() => ({
  images: Array.from(document.images).map(img => ({
    src: img.currentSrc || img.src, ok: img.complete && img.naturalWidth > 0,
    output: !!img.closest(".cell_output, .output"),
  })),
  math: document.querySelectorAll(".math").length,
  math_unrendered: Array.from(document.querySelectorAll(".math")).filter(
    m => !m.querySelector("mjx-container") && !m.closest("mjx-container")).map(m => m.textContent.slice(0, 80)),
  mjx: document.querySelectorAll("mjx-container").length,
  mjx_errors: Array.from(document.querySelectorAll("mjx-merror")).map(e => e.textContent.slice(0, 80)),
  mathjax_src: Array.from(document.scripts).map(s => s.src).filter(s => /mathjax/i.test(s)),
})"""


@functools.cache
def _visit(context, base: str, page_path: str) -> dict:
    page = context.new_page()
    console, page_errors, failed = [], [], []

    def is_local(url: str) -> bool:
        return not url or urlsplit(url).hostname == "127.0.0.1"

    page.on(
        "console",
        lambda m: (
            console.append(f"{m.text} ({m.location.get('url', '')})")
            if m.type == "error" and is_local(m.location.get("url", ""))
            else None
        ),
    )
    page.on("pageerror", lambda e: page_errors.append(str(e)))
    page.on(
        "requestfailed",
        lambda r: failed.append(f"{r.url} {r.failure}") if is_local(r.url) else None,
    )
    page.on(  # a missing local file (the browser's own favicon probe aside)
        "response",
        lambda r: (
            failed.append(f"{r.url} HTTP {r.status}")
            if r.status >= 400 and is_local(r.url) and not r.url.endswith("/favicon.ico")
            else None
        ),
    )
    response = page.goto(base + page_path, wait_until="load")
    page.evaluate(_JS_WAIT)
    report = page.evaluate(_JS_REPORT)
    report["layout"] = page.evaluate(_JS_LAYOUT)
    report["layout"]["stretches"] = page.evaluate(JS_STRETCHES)
    report.update(status=response.status if response else None, console=console, page_errors=page_errors)
    report["failed"] = failed
    page.close()
    return report
