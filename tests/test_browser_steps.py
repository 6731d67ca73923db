"""The explorer's step-by-step view of the decoder ("Watch the decoder think").

In headless Chromium, offline, on the built site: the page's trace of the beam search
(beam.js, run by the translator's worker on the site's int8 files) equals Python's
(tools/ship/export_browser.py's ``OnnxTranslator.beam`` with ``trace``, onnxruntime on
the same files) at every step of five sentences, with the model's beam and with beam 3,
alpha 0.6 and a maximum length: the beams going in, their tokens and summed
log-probabilities, each beam's five most probable next tokens, the best 2k candidates
with their penalised scores and fates, and beam 0's cross-attention query, keys, scaled
scores and weights for the chosen layer and head. The view is then driven by keyboard
at 1280 px and at 390 px (no sideways scrolling of the page), and screenshots of both
are written to $AIAYN_SCREENSHOTS (when set) for a person to look at.

Marker ``site`` and ``integration`` (make test-integration).
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest
from test_browser_reader import EXPLORER, reader  # noqa: F401  (the served site and pages)

pytestmark = [pytest.mark.site, pytest.mark.integration, pytest.mark.rendering]

SENTENCES = [
    "Zwei Hunde spielen im Schnee.",
    "Ein Mann in einem blauen Hemd fährt mit seinem alten Fahrrad die steile Straße hinunter.",
    "Eine Frau liest ein Buch im Park.",
    "Kinder spielen Fußball auf einer Wiese.",
    "Ein älterer Mann sitzt auf einer Bank und liest Zeitung.",
]
SETTINGS = [(None, None, None, 2, 2), (3, 0.6, 12, 0, 1)]  # beam, alpha, max length, layer, head


def _close(a: float, b: float, tol: float) -> bool:
    if a == -math.inf or b == -math.inf:
        return a == b
    return abs(a - b) <= tol


def _compare(ours: list, theirs: list) -> list[str]:
    """What differs between the page's trace and Python's, step by step."""
    wrong = []
    if len(ours) != len(theirs):
        return [f"{len(ours)} steps on the page, {len(theirs)} in Python"]
    for s, (a, b) in enumerate(zip(ours, theirs, strict=True), start=1):
        if [ids for ids, _ in a["beams"]] != [ids for ids, _ in b["beams"]]:
            wrong.append(f"step {s}: beams {a['beams']} != {b['beams']}")
        if not all(_close(x, y, 2e-3) for (_, x), (_, y) in zip(a["beams"], b["beams"], strict=True)):
            wrong.append(f"step {s}: beam scores")
        for r, (x, y) in enumerate(zip(a["next"], b["next"], strict=True)):
            if [i for i, _ in x] != [i for i, _ in y] or not all(
                _close(p, q, 2e-3) for (_, p), (_, q) in zip(x, y, strict=True)
            ):
                wrong.append(f"step {s}: beam {r}'s next tokens {x} != {y}")
        for x, y in zip(a["candidates"], b["candidates"], strict=True):
            if x[0:2] != y[0:2] or x[4] != y[4] or not (_close(x[2], y[2], 2e-3) and _close(x[3], y[3], 2e-3)):
                wrong.append(f"step {s}: candidate {x} != {y}")
        if not _close(a["penalty"], b["penalty"], 1e-12):
            wrong.append(f"step {s}: length penalty")
        for key, tol in (("query", 1e-3), ("scores", 1e-3), ("weights", 1e-4)):
            if not all(_close(x, y, tol) for x, y in zip(a[key], b[key], strict=True)) or len(a[key]) != len(b[key]):
                wrong.append(f"step {s}: {key}")
        flat = [x for row in a["keys"] for x in row], [x for row in b["keys"] for x in row]
        if len(flat[0]) != len(flat[1]) or not all(_close(x, y, 1e-3) for x, y in zip(*flat, strict=True)):
            wrong.append(f"step {s}: keys")
        # chapter 2's formula on the page's own numbers: softmax of the scaled scores
        top = max(a["scores"])
        e = [math.exp(x - top) for x in a["scores"]]
        if not all(_close(w, x / sum(e), 1e-4) for w, x in zip(a["weights"], e, strict=True)):
            wrong.append(f"step {s}: the weights are not the softmax of the scores")
    return wrong


def test_every_step_equals_python(reader):  # noqa: F811
    from ship import export_browser

    _, new_page, site = reader
    page = new_page(EXPLORER)
    page.wait_for_function("() => window.aiaynTranslator")
    runner = export_browser.OnnxTranslator(site / "_static/translator/model")
    info = runner.info
    steps = 0
    for beam, alpha, max_length, layer, head in SETTINGS:
        k = beam or info["beam_size"]
        a = info["length_penalty"] if alpha is None else alpha
        for sentence in SENTENCES:
            got = page.evaluate(
                "async ([text, o]) => await window.aiaynTranslator.translate(text, o)",
                [
                    sentence,
                    {"beamSize": k, "alpha": a, "maxLength": max_length, "trace": {"layer": layer, "head": head}},
                ],
            )
            trace: list = []
            ids = runner.beam(
                runner.source_ids(sentence), k, a, trace=trace, max_length=max_length, layer=layer, head=head
            )
            assert got["output"] == ids, sentence
            wrong = _compare(got["trace"], json.loads(json.dumps(trace)))
            assert not wrong, (sentence, k, wrong[:5])
            steps += len(trace)
    assert steps > 50
    assert page.errors == [] and page.external == []


@pytest.mark.parametrize("width", [1280, 390])
def test_the_view_by_keyboard(reader, width):  # noqa: F811
    _, new_page, _ = reader
    page = new_page(EXPLORER, width=width)
    view = page.locator(".aiayn-steps")
    view.locator("#st-sentence").fill("Zwei Hunde spielen im Schnee.")
    view.locator("#st-sentence").press("Enter")
    page.wait_for_function("() => document.querySelector('.st-status').textContent.startsWith('English:')")
    assert "Two dogs are playing in the snow." in view.locator(".st-status").inner_text()
    assert view.locator(".st-table").count() == 5
    assert view.locator("details.st-vectors table").is_hidden()  # the query and keys: one click away
    where = view.locator(".st-where").inner_text()
    assert where.startswith("Step 1 of "), where
    view.locator("input[type=range]").focus()
    page.keyboard.press("ArrowRight")
    assert view.locator(".st-where").inner_text().startswith("Step 2 of ")
    page.keyboard.press("Tab")  # to "Next step"
    page.keyboard.press("Enter")
    assert view.locator(".st-where").inner_text().startswith("Step 3 of ")
    rows = view.locator(".st-table").nth(2).locator("tbody tr")
    fates = {rows.nth(i).locator("td").last.inner_text() for i in range(rows.count())}
    assert "kept" in fates
    # the beam size control runs it again
    view.locator("select").first.select_option("2")
    page.wait_for_function("() => document.querySelector('.st-status').textContent.includes('beam 2')")
    assert view.locator(".st-table").nth(2).locator("tbody tr").count() == 4
    overflow = page.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0, overflow
    folder = os.environ.get("AIAYN_SCREENSHOTS")
    if folder:  # the view at the top of the window, under the theme's header
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.set_viewport_size({"width": width, "height": 1100})
        view.evaluate("(e) => { e.scrollIntoView(); window.scrollBy(0, -70); }")
        page.wait_for_timeout(300)
        page.screenshot(path=str(Path(folder) / f"steps_{width}.png"))
    view.locator("details.st-vectors summary").click()
    assert view.locator("details.st-vectors table").is_visible()
    assert page.errors == []
