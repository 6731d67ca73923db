"""The longest stretch of each chapter page without a figure, in screens of a 1280x900 laptop.

Issue #37 asks for no stretch of more than about 8 screens without a picture. Run after
`make book`; it serves _build/html from 127.0.0.1 and measures each page in Chromium:

    .venv/bin/python tools/bench/measure_stretches.py                      # every chapter
    .venv/bin/python tools/bench/measure_stretches.py notebooks/05_encoder.html

A figure is an image, SVG or canvas at least 200 x 120 px in the article; a stretch runs from
the article's top, a figure's bottom or the article's end to the next figure. The same
measurement is tests/test_site.py's test_no_long_stretch_without_a_figure.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCREEN = (1280, 900)

# Returns every stretch as [height px, top px (from the article's top), heading above it].
JS_STRETCHES = """() => {
  const art = document.querySelector('article.bd-article') || document.querySelector('main');
  const box = art.getBoundingClientRect();
  const top0 = box.top + window.scrollY, end = top0 + box.height;
  const figs = Array.from(art.querySelectorAll('img, svg, canvas'))
    .map(e => e.getBoundingClientRect())
    .filter(r => r.width >= 200 && r.height >= 120)
    .map(r => [r.top + window.scrollY, r.bottom + window.scrollY])
    .sort((a, b) => a[0] - b[0]);
  const heads = Array.from(art.querySelectorAll('h1, h2, h3')).map(
    h => [h.getBoundingClientRect().top + window.scrollY, h.textContent.replace('#', '').trim()]);
  const heading = y => heads.filter(h => h[0] <= y + 5).map(h => h[1]).pop() || null;
  const out = [];
  let prev = top0;
  for (const [t, b] of figs) {
    if (t > prev) out.push([t - prev, prev - top0, heading(prev)]);
    prev = Math.max(prev, b);
  }
  out.push([end - prev, prev - top0, heading(prev)]);
  return out;
}"""


def serve(site: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_port}/"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pages", nargs="*", help="pages under the site, e.g. notebooks/05_encoder.html")
    parser.add_argument("--site", type=Path, default=ROOT / "_build" / "html")
    parser.add_argument("--limit", type=float, default=8.0, help="screens (default 8)")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    pages = args.pages or sorted(p.relative_to(args.site).as_posix() for p in (args.site / "notebooks").glob("*.html"))
    server, base = serve(args.site)
    worst_overall = 0.0
    with sync_playwright() as play:
        browser = play.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": SCREEN[0], "height": SCREEN[1]})
        for path in pages:
            page.goto(base + path, wait_until="load")
            page.wait_for_timeout(1000)
            stretches = page.evaluate(JS_STRETCHES)
            worst = max(stretches, key=lambda s: s[0])
            worst_overall = max(worst_overall, worst[0] / SCREEN[1])
            over = [f"{h / SCREEN[1]:.1f} after {head!r}" for h, _, head in stretches if h > args.limit * SCREEN[1]]
            print(f"{path}: {len(stretches) - 1} figures, longest stretch {worst[0] / SCREEN[1]:.1f} screens")
            for line in over:
                print(f"    over {args.limit:g}: {line}")
        browser.close()
    server.shutdown()
    print(f"longest stretch of all: {worst_overall:.1f} screens")


if __name__ == "__main__":
    main()
