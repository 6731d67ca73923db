"""The site's translator under a real reader (issue 54), in headless Chromium, offline.

The built site is served from 127.0.0.1 by a server of this file's own, which can slow
the model's weights down (a reader's connection) or break a download off half way (a
dropped connection), and records every request. Every other host is refused. Checked:

* opened from disk (file://), the box says in one line how to serve the site;
* ``#translate=`` links: a malformed one is reported, never thrown; a good one fills
  the box and downloads nothing until the reader presses Translate;
* a download that breaks off is reported by name, and the next press downloads again
  from the start and translates;
* Stop while the model loads ends the load (no translation arrives later), Stop while
  decoding says at which step, and the box works afterwards;
* one translation at a time: Ctrl+Enter during one says so instead of starting another;
* keyboard and screen reader: after Tab, Enter the focus is on a control of the box, not
  the page; the live region holds the English and its notes; dir="auto"; the shortcut
  is shown;
* the reader's text: a decomposed umlaut or a zero-width character translates as the
  plain word does; a joined emoji counts as one unknown character; a news sentence gets
  the out-of-domain note and a caption does not.

Marker ``site`` (needs ``make book`` with Node.js) and ``integration`` (a minute or
more of Chromium; make test-integration).
"""

from __future__ import annotations

import http.server
import json
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from bench.chromium import CHROMIUM_FLAGS, find_chromium, keep_offline, served  # noqa: E402

pytestmark = [pytest.mark.site, pytest.mark.integration, pytest.mark.rendering]

EXPLORER = "book/attention_explorer.html"
INTRO = "book/intro.html"
LONG = "Ein Mann in einem blauen Hemd fährt mit seinem alten Fahrrad die steile Straße hinunter, " * 3


# the served site's state, read by _Handler as self.server.<name>: the paths asked for,
# a speed limit on the model's weights (bytes per second, 0: none) and the files whose
# next download breaks off half way
def _state() -> dict:
    return {"log": [], "limit": 0, "break_once": set()}


class _Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def copyfile(self, source, outputfile):
        server = self.server
        name = urlsplit(self.path).path.rsplit("/", 1)[-1]
        if name in server.break_once:
            server.break_once.discard(name)
            data = source.read()
            outputfile.write(data[: len(data) // 2])
            outputfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)  # the connection drops half way
            return
        if name == "weights.bin" and server.limit:
            while chunk := source.read(server.limit // 10):
                outputfile.write(chunk)
                time.sleep(0.1)
            return
        super().copyfile(source, outputfile)

    def do_GET(self):
        self.server.log.append(urlsplit(self.path).path)
        super().do_GET()


@pytest.fixture(scope="module")
def reader():
    from site_pages import SITE

    built = SITE / "_static" / "translator" / "built.json"
    if not built.is_file() or not json.loads(built.read_text())["model"]:
        pytest.skip(f"{SITE} has no in-browser model (make book with Node.js): skipped")
    executable = find_chromium()
    if executable is None:
        pytest.skip("no Chromium found: browser test skipped")
    from playwright.sync_api import sync_playwright

    with served(SITE, _Handler, **_state()) as (server, base), sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_FLAGS)

        def new_page(path: str = EXPLORER, width: int = 1280):
            context = browser.new_context(viewport={"width": width, "height": 900})
            context.set_default_timeout(90_000)
            errors = []
            external = keep_offline(context, files=True)
            page = context.new_page()
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.errors, page.external = errors, external
            page.goto(path if path.startswith("file:") else base + path, wait_until="load")
            return page

        yield server, new_page, SITE
        browser.close()


def _box(page):
    return page.locator(".aiayn-translator").first


def _status(page) -> str:
    return _box(page).locator(".tr-status").inner_text()


def _press_translate(page, text: str):
    box = _box(page)
    box.locator("textarea").fill(text)
    box.locator("button.tr-translate").click()


def _wait_idle(page):
    """Until the first box is idle (data-state, which view.js sets; on a site before it,
    until its status is no longer a "..." or "Loading" one)."""
    page.wait_for_function(
        "() => { const b = document.querySelector('.aiayn-translator');"
        " if (b.dataset.state) return b.dataset.state === 'idle';"
        " return !b.querySelector('.tr-status').textContent.endsWith('...')"
        " && !b.querySelector('.tr-status').textContent.startsWith('Loading'); }"
    )


def _model_requests(server) -> list[str]:
    """The runtime's and the model's files asked for (translator.json, 1 kB of sizes and
    layer counts that the step-by-step view reads for its controls, is not the model)."""
    return [
        p
        for p in server.log
        if ("/translator/model/" in p or "/translator/ort/" in p) and not p.endswith("translator.json")
    ]


def test_opened_from_disk_says_how_to_serve(reader):
    _, new_page, site = reader
    page = new_page((site / INTRO).resolve().as_uri())
    page.wait_for_timeout(500)
    text = _box(page).inner_text()
    assert "python -m http.server" in text, repr(text)
    assert len(text.strip().splitlines()) == 1


def test_translate_links_decode_safely_and_start_nothing(reader):
    server, new_page, _ = reader
    page = new_page(EXPLORER + "#translate=%E0%A4%A")
    page.wait_for_timeout(300)
    assert page.errors == [], page.errors  # no uncaught URIError
    assert "could not be read" in _status(page)
    server.log.clear()
    page = new_page(EXPLORER + "#translate=Zwei%20Hunde%20spielen%20im%20Schnee.")
    page.wait_for_timeout(1500)
    assert _box(page).locator("textarea").input_value() == "Zwei Hunde spielen im Schnee."
    assert "press Translate" in _status(page)
    assert _model_requests(server) == []  # nothing downloaded until the reader asks
    assert page.errors == [] and page.external == []


def test_a_broken_download_is_reported_and_the_next_press_starts_again(reader):
    server, new_page, _ = reader
    server.log.clear()
    server.break_once = {"weights.bin"}
    page = new_page()
    _press_translate(page, "Zwei Hunde spielen im Schnee.")
    _wait_idle(page)
    status = _status(page)
    assert "failed" in status and "weights.bin" in status, status
    assert _box(page).locator("progress").is_hidden()
    assert server.log.count("/_static/translator/model/weights.bin") == 1
    _box(page).locator("button.tr-translate").click()
    _wait_idle(page)
    assert _status(page).startswith("Translated in"), _status(page)
    assert server.log.count("/_static/translator/model/weights.bin") == 2  # from scratch
    assert _box(page).locator(".tr-english").inner_text() == "Two dogs are playing in the snow."
    assert page.errors == [] and page.external == []


def test_stop_while_loading_ends_the_load(reader):
    server, new_page, _ = reader
    server.limit = 2_000_000  # the 8 MB of weights in 4 s
    try:
        page = new_page()
        _press_translate(page, "Zwei Hunde spielen im Schnee.")
        page.wait_for_function("() => /of [0-9.]+ MB/.test(document.querySelector('.aiayn-translator').innerText)")
        _box(page).locator("button.tr-stop").click()
        status = _status(page)
        assert status.startswith("Stopped loading the model"), status
        page.wait_for_timeout(7000)  # longer than the load would have taken
        assert _status(page) == status, _status(page)  # no translation arrived after Stop
        assert _box(page).locator(".tr-output").is_hidden()
    finally:
        server.limit = 0
    _box(page).locator("button.tr-translate").click()
    _wait_idle(page)
    assert _status(page).startswith("Translated in"), _status(page)
    assert page.errors == [] and page.external == []


def test_stop_while_decoding_and_one_translation_at_a_time(reader):
    _, new_page, _ = reader
    page = new_page()
    _press_translate(page, "Zwei Hunde spielen im Schnee.")
    _wait_idle(page)
    box = _box(page)
    # Ctrl+Enter while a translation runs says so and starts no second one
    _press_translate(page, LONG)
    page.wait_for_function("() => document.querySelector('.tr-status').textContent.startsWith('Translating')")
    box.locator("textarea").press("Control+Enter")
    assert "already running" in _status(page), _status(page)
    started = page.evaluate("() => window.aiaynTranslator.busy()")
    assert started
    box.locator("button.tr-stop").click()
    status = _status(page)
    assert status.startswith("Stopped while"), status
    page.wait_for_timeout(3000)
    assert _status(page) == status and box.locator(".tr-output").is_hidden()
    # a sentence stopped during its decoding says at which step: Stop pressed in the page
    # the moment the worker reports the decoding phase (data-phase), however fast the machine
    page.evaluate(
        """() => {
        const box = document.querySelector('.aiayn-translator');
        window.stoppedInDecoding = false;
        const watch = new MutationObserver(() => {
          if (box.dataset.phase !== 'decoding') return;
          watch.disconnect();
          box.querySelector('button.tr-stop').click();
          window.stoppedInDecoding = true;
        });
        watch.observe(box, { attributes: true, attributeFilter: ['data-phase'] });
      }"""
    )
    _press_translate(page, LONG)
    page.wait_for_function("() => window.stoppedInDecoding")
    assert "decoding, at step" in _status(page), _status(page)
    # pressed again at once: the stopped run, ending in the worker a step later, must
    # not mark the new one as finished
    box.locator("textarea").fill(LONG * 2)  # cut at 99 tokens: seconds of decoding
    box.locator("button.tr-translate").click()
    page.wait_for_timeout(200)  # the stopped run ends within a step
    assert box.get_attribute("data-state") == "running"
    box.locator("textarea").press("Control+Enter")
    assert "already running" in _status(page), _status(page)
    _wait_idle(page)
    assert _status(page).startswith("Translated in"), _status(page)
    _press_translate(page, "Zwei Hunde spielen im Schnee.")
    _wait_idle(page)
    assert _status(page).startswith("Translated in"), _status(page)
    assert page.errors == []


def test_keyboard_focus_live_region_and_direction(reader):
    _, new_page, _ = reader
    page = new_page()
    box = _box(page)
    assert "Ctrl+Enter" in box.inner_text()  # the shortcut is shown
    assert box.locator("textarea").get_attribute("dir") == "auto"
    assert box.locator(".tr-english").get_attribute("dir") == "auto"
    box.locator("textarea").fill("Zwei 😀 spielen im Schnee.")
    box.locator("textarea").focus()
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.textContent") == "Translate"
    page.keyboard.press("Enter")
    _wait_idle(page)
    assert _status(page).startswith("Translated in"), _status(page)
    focused = page.evaluate("() => document.activeElement.closest('.aiayn-translator') !== null")
    assert focused, page.evaluate("() => document.activeElement.outerHTML.slice(0, 80)")
    english = box.locator(".tr-english").inner_text()
    live = box.locator("[aria-live]:not([aria-live=off]), [role=status]")
    spoken = " ".join(live.nth(i).inner_text() for i in range(live.count()))
    assert english and english in spoken, spoken
    assert "<unk>" in spoken  # the notes too


def test_what_the_reader_types(reader):
    _, new_page, _ = reader
    page = new_page()
    box = _box(page)

    def english(text):
        _press_translate(page, text)
        _wait_idle(page)
        assert _status(page).startswith("Translated in"), _status(page)
        return box.locator(".tr-english").inner_text(), box.locator(".tr-notes").inner_text()

    plain, _ = english("Ein Mann fährt Fahrrad.")
    assert english("Ein Mann fa\u0308hrt Fahrrad.")[0] == plain  # decomposed umlaut (NFD)
    assert english("Ein Mann f\u200bährt Fahr\u00adrad.")[0] == plain  # zero-width, soft hyphen
    _, notes = english("Eine Familie 👨\u200d👩\u200d👧\u200d👦 geht im Park spazieren.")
    assert "1 character(s)" in notes and "Most of this text" not in notes, notes
    _, notes = english("Die Bundesregierung hat einen Gesetzentwurf zur Reform der Rentenversicherung beschlossen.")
    assert "rare for this model" in notes, notes
    _, notes = english("Zwei Hunde spielen im Schnee.")
    assert "rare for this model" not in notes, notes
    assert page.errors == []
