"""What makes the translator answer sooner (issue 54, item 3), in headless Chromium,
offline, on the built site (the server and pages of test_browser_reader.py):

* the worker's load reports its phases (files, compile, widen, sessions, warmup): the
  runtime compiled while the model downloads, the weights widened in JavaScript (no
  Cast and Mul for onnxruntime to fold), a three-step beam search before the reader's;
  make bench-browser records them;
* the page downloads the page's graphs (``*.widened.onnx``), never the Python ones;
* a returning reader (every file of this version in the browser's cache) gets a ready
  box without a click and without a download, while a first visit's page view loads
  nothing, and so does a returning reader's after the model changed;
* a box on a page without the explorer computes no attention maps (its English comes
  without the "maps" phase); the explorer's box still does.

Timings are make bench-browser's (book/translator_bench.json), not asserted here.
Marker ``site`` and ``integration`` (make test-integration).
"""

from __future__ import annotations

import pytest
from test_browser_reader import (
    EXPLORER,
    INTRO,
    _box,
    _model_requests,
    _press_translate,
    _wait_idle,
    reader,  # noqa: F401  (the served site and its pages)
)

pytestmark = [pytest.mark.site, pytest.mark.integration, pytest.mark.rendering]

# every data-phase the first box goes through, from now on
_WATCH_PHASES = """() => { const b = document.querySelector('.aiayn-translator'); window.phasesSeen = [];
  new MutationObserver(() => window.phasesSeen.push(b.dataset.phase))
    .observe(b, {attributes: true, attributeFilter: ['data-phase']}); }"""


def test_the_load_reports_its_phases_and_fetches_the_pages_graphs(reader):  # noqa: F811
    server, new_page, _ = reader
    server.log.clear()
    page = new_page(INTRO)
    _press_translate(page, "Zwei Hunde spielen im Schnee.")
    _wait_idle(page)
    assert _box(page).locator(".tr-english").inner_text() == "Two dogs are playing in the snow."
    ready = page.evaluate("async () => await window.aiaynTranslator.load()")
    assert set(ready["timings"]) == {"files", "compile", "widen", "sessions", "warmup"}, ready["timings"]
    assert all(v >= 0 for v in ready["timings"].values())
    got = {p.rsplit("/", 1)[1] for p in _model_requests(server)}
    assert {"encoder.widened.onnx", "decoder.widened.onnx", "weights.bin"} <= got, got
    assert not {"encoder.onnx", "decoder.onnx"} & got, got
    assert page.errors == [] and page.external == []


def test_a_returning_reader_gets_a_ready_box_without_a_download(reader):  # noqa: F811
    server, new_page, _ = reader
    server.log.clear()
    page = new_page(INTRO)
    page.wait_for_timeout(3000)  # a first visit: the page idle, the box never clicked
    assert page.evaluate("() => window.aiaynTranslator.loaded()") is False
    assert _model_requests(server) == []
    _press_translate(page, "Zwei Hunde spielen im Schnee.")
    _wait_idle(page)
    page.close()
    server.log.clear()
    again = page.context.new_page()  # the same browser profile, the next day
    again.goto(page.url, wait_until="load")
    again.wait_for_function("() => window.aiaynTranslator && window.aiaynTranslator.loaded()", timeout=60_000)
    # the runtime and the model from the browser's Cache Storage; only the runtime's two
    # small JavaScript modules (74 kB) may be asked again, revalidated from its HTTP
    # cache (this test's server sends no Cache-Control)
    assert [p for p in _model_requests(server) if not p.endswith(".mjs")] == []
    assert _box(again).locator("textarea").input_value() == ""  # nothing was clicked or typed
    # the model updated (its weights no longer in the cache): nothing loads until a click
    again.evaluate(
        """async () => { const cache = await caches.open('aiayn-translator');
           for (const k of await cache.keys()) if (k.url.includes('weights.bin')) await cache.delete(k); }"""
    )
    again.close()
    server.log.clear()
    third = page.context.new_page()
    third.goto(page.url, wait_until="load")
    third.wait_for_timeout(3000)
    assert third.evaluate("() => window.aiaynTranslator.loaded()") is False
    assert [p for p in _model_requests(server) if not p.endswith(".mjs")] == []


def test_maps_only_where_the_explorer_shows_them(reader):  # noqa: F811
    _, new_page, _ = reader
    seen = {}
    for path in (INTRO, EXPLORER):
        page = new_page(path)
        page.evaluate(_WATCH_PHASES)
        _press_translate(page, "Eine Frau liest ein Buch im Park.")
        _wait_idle(page)
        assert _box(page).locator(".tr-english").inner_text().startswith("A woman"), path
        seen[path] = page.evaluate("() => window.phasesSeen")
        assert page.errors == [] and page.external == []
    assert "decoding" in seen[INTRO] and "maps" not in seen[INTRO], seen[INTRO]
    assert "maps" in seen[EXPLORER], seen[EXPLORER]
