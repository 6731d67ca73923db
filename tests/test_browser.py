"""The site's in-browser translator (book/_static/translator/).

* its BPE tokenizer (tokenizer.js), under node: the same ids and the same decoded text as
  the book's tokenizer (the `tokenizers` library) on the whole test2016 source side and
  on inputs a reader may type (special tokens, emoji, markup, odd spaces);
* the built site in headless Chromium, offline (every request beyond 127.0.0.1 refused;
  marker `site`, after `make book` with Node.js): on the explorer page, the same
  translations as Python on 20 test2016 sentences, the reader's sentence in the
  explorer, and the messages for empty, long, emoji and HTML input, and the Stop button.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_browser_export import corpus_sources

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from bench.chromium import CHROMIUM_FLAGS, find_chromium, keep_offline, served  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TRANSLATOR = ROOT / "book" / "_static" / "translator"
TOKENIZER_JSON = ROOT / "aiayn_helpers" / "pretrained" / "multi30k" / "tokenizer.json"
# what a reader may type beyond the corpus' sentences
ODD = [
    "",
    "   ",
    "a  b",
    " führt",
    "Hallo <eos> Welt<bos>",
    "<script>alert(1)</script>",
    "Zwei 🐕 spielen 😀!",
    "tab\there\nnew line",
    "Ça coûte 5 € – «billig»?",
    "日本語のテキスト",
    "x" * 300,
    # decomposed umlauts (NFD, as macOS and some keyboards type them), zero-width
    # characters and a soft hyphen, joined emoji: the tokenizer's normalizer
    "Ein Mann fa\u0308hrt U\u0308ber die Bru\u0308cke.",
    "Ein\u200b Hund\u200c rennt\u200d \ufeffschnell\u2060 \u00adweg.",
    "Eine Familie 👨\u200d👩\u200d👧\u200d👦 und 👍🏽 🇩🇪.",
    "<e\u200bos> <eos\u200b>",
]

_DRIVER = """
import { readFileSync } from "node:fs";
import { Tokenizer } from "./tokenizer.mjs";
const tok = new Tokenizer(JSON.parse(readFileSync(process.argv[2], "utf8")));
const lines = JSON.parse(readFileSync(0, "utf8"));
process.stdout.write(JSON.stringify(lines.map((s) => { const ids = tok.encode(s); return [ids, tok.decode(ids)]; })));
"""


def test_js_tokenizer_gives_the_books_ids(tmp_path):
    node = shutil.which("node")
    if node is None:
        pytest.skip("node not found: the JavaScript tokenizer is not tested")
    from tokenizers import Tokenizer

    sources = corpus_sources() + ODD
    # an ES module of its own (the book's _static has no package.json saying "module")
    shutil.copy(TRANSLATOR / "tokenizer.js", tmp_path / "tokenizer.mjs")
    (tmp_path / "driver.mjs").write_text(_DRIVER, encoding="utf-8")
    done = subprocess.run(
        [node, str(tmp_path / "driver.mjs"), str(TOKENIZER_JSON)],
        input=json.dumps(sources),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    theirs = json.loads(done.stdout)
    book = Tokenizer.from_file(str(TOKENIZER_JSON))
    wrong = []
    for text, (ids, decoded) in zip(sources, theirs, strict=True):
        expected = book.encode(text, add_special_tokens=False).ids
        if ids != expected or decoded != book.decode(expected, skip_special_tokens=True):
            wrong.append((text, expected, ids))
    assert not wrong, wrong[:3]
    assert len(theirs) > 1000


def test_explorer_page_quotes_the_benchmark():
    """The explorer page's "how it works" figures are book/translator_bench.json's
    (written by make bench-browser): the download, the first translation cold (clicked at
    once, and after typing) with its phases, the second visit, the 10 Mbit/s estimate, the
    speed goals met or not and whether the machine was idle."""
    bench = json.loads((ROOT / "book" / "translator_bench.json").read_text(encoding="utf-8"))
    page = (ROOT / "book" / "attention_explorer.md").read_text(encoding="utf-8")
    page = " ".join(page.split())
    size = bench["download"]
    machine = bench["machine"]
    same = bench["int8_equals_float16"]
    phases, again = bench["first_translation_phases_s"], bench["second_visit_phases_s"]

    def goal(seconds: float, limit: float) -> str:
        return "within" if seconds <= limit else "over"

    idle = "this one was nearly idle" if machine["load_average_1min"] < 1 else "this one was not"
    figures = [
        f"{machine['cpus']} CPU cores, shared",
        f"load average {machine['load_average_1min']:.1f} before, {machine['load_average_1min_after']:.1f} after",
        "no network time",
        f"downloads {size['all']['bytes'] / 1e6:.1f} MB",
        f"({size['all']['gzip_bytes'] / 1e6:.1f} MB after a local `gzip -9`",
        "not a measured transfer",
        f"runtime is {size['runtime']['bytes'] / 1e6:.1f} MB of it, {size['runtime']['gzip_bytes'] / 1e6:.1f} MB",
        f"the English came {bench['first_translation_s']:.2f} s after a click on Translate made at once",
        f"the median of {bench['repeat']} fresh browser profiles; "
        f"{bench['first_translation_loading_s']:.1f} s of them loading",
        f"the files {phases['files']:.2f} s, compiling the runtime {phases['compile']:.2f} s",
        f"widening the weights {phases['widen']:.2f} s, "
        f"creating ONNX Runtime's two sessions {phases['sessions']:.2f} s",
        f"a warm-up {phases['warmup']:.2f} s, none when the sentence is already waiting",
        f"types the sentence ({bench['typed_typing_s']:.1f} s) waits {bench['typed_after_click_s']:.2f} s after",
        f"the English came {bench['second_visit_s']:.2f} s after a click made at once "
        f"({bench['second_visit_loading_s']:.1f} s loading, {again['sessions']:.2f} s of it creating the sessions)",
        f"and {bench['second_visit_settled_s']:.2f} s after it for a reader who reads for "
        f"{bench['second_visit_settled_after_s']:.0f} s first",
        f"set for an idle machine ({idle}",
        f"the first translation clicked at once is {goal(bench['first_translation_s'], 3)} 3 s",
        f"the second visit clicked at once {goal(bench['second_visit_s'], 1)} 1 s",
        f"the compressed download {goal(size['all']['gzip_bytes'] / 1e6, 12)} 12 MB",
        f"10 Mbit/s connection would wait about {bench['ten_mbit_download_s']:.1f} s more",
        f"about {bench['ten_mbit_first_translation_s']:.1f} s in all",
        f"took {bench['beam4_decode_s_median']:.2f} s to decode with beam 4",
        f"{bench['beam4_with_maps_s_median']:.2f} s with the maps)",
        f"and {bench['beam6_decode_s_median']:.2f} s with beam 6",
        f"BLEU of these weights is {bench['test2016_bleu']['int8']:.2f}, against "
        f"{bench['test2016_bleu']['float16']:.2f}",
        f"{same['equal']} of the {same['of']:,} test2016 translations are the same",
        f"against the float16 export's, {same['of'] - same['equal']} in {same['of']:,} differ",
    ]
    assert bench["budget"] == {"first_translation_s": 3.0, "second_visit_s": 1.0, "gzip_mb": 12.0}
    assert bench["first_translation_beam"] == 6 and bench["second_visit_cached"] is True
    assert bench["first_translation_s"] == sorted(bench["first_translation_runs_s"])[bench["repeat"] // 2]
    assert abs(bench["ten_mbit_download_s"] - size["all"]["gzip_bytes"] * 8 / 10e6) < 0.01
    assert {"model/weights.bin", "model/encoder.widened.onnx", "ort/ort-wasm-simd-threaded.wasm"} <= set(
        bench["fetched"]
    )
    assert [f for f in figures if f not in page] == []
    manifest = json.loads((TOKENIZER_JSON.parent / "manifest.json").read_text(encoding="utf-8"))
    assert bench["test2016_bleu"]["float16"] == round(manifest["test2016_bleu"]["score"], 2)
    assert abs(bench["test2016_bleu"]["int8"] - bench["test2016_bleu"]["float16"]) <= 0.3  # the budget
    assert bench["weights"] == "int8 per channel" and bench["threads"] == [1]


# ------------------------------------------------------------------- the built site
@pytest.fixture(scope="module")
def site_page():
    from site_pages import SITE

    built = SITE / "_static" / "translator" / "built.json"
    if not built.is_file() or not json.loads(built.read_text())["model"]:
        pytest.skip(f"{SITE} has no in-browser model (make book with Node.js): skipped")
    executable = find_chromium()
    if executable is None:
        pytest.skip("no Chromium found: browser test skipped")
    from playwright.sync_api import sync_playwright

    errors = []
    with served(SITE) as (_, base), sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_FLAGS)
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        context.set_default_timeout(60_000)
        external = keep_offline(context)
        page = context.new_page()
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("dialog", lambda d: (errors.append(f"dialog: {d.message}"), d.dismiss()))
        page.goto(base + "book/attention_explorer.html", wait_until="load")
        yield page, SITE
        assert not external, external
        assert not errors, errors
        browser.close()


def _translate(page, text: str, greedy: bool = False) -> str:
    """Types ``text`` into the first box, presses Translate, waits; the status line."""
    box = page.locator(".aiayn-translator").first
    box.locator("textarea").fill(text)
    box.locator(".tr-greedy input").set_checked(greedy)
    box.locator("button.tr-translate").click()
    _wait_ready(page)
    return box.locator(".tr-status").inner_text()


def _wait_ready(page) -> None:
    """Until the first box is idle again (its Translate button is not aria-disabled)."""
    page.wait_for_function(
        "() => document.querySelector('.aiayn-translator button.tr-translate').getAttribute('aria-disabled') !== 'true'"
    )


def _python_translations(site: Path, sentences: list[str]) -> list[str]:
    """What Python gives: ah.translate for the float16 weights (exactly the shipped model),
    the same files in onnxruntime for int8 ones."""
    info = json.loads((site / "_static/translator/model/translator.json").read_text())
    if info["weights"] == "float16":
        import aiayn_helpers as ah

        model, tokenizer = ah.load_pretrained()
        return ah.translate(model, tokenizer, sentences)
    from ship import export_browser

    runner = export_browser.OnnxTranslator(site / "_static/translator/model")
    return [runner.translate(s) for s in sentences]


@pytest.mark.site
def test_page_translates_as_python_offline_and_fills_the_explorer(site_page):
    page, site = site_page
    sentences = corpus_sources(20)
    box = page.locator(".aiayn-translator").first
    got = []
    for sentence in sentences:
        status = _translate(page, sentence)
        assert status.startswith("Translated in"), status
        got.append(box.locator(".tr-english").inner_text())
    assert got == _python_translations(site, sentences)
    # the last sentence is now the explorer's first, with every map of its translation
    data = page.evaluate("() => window.ATTENTION_EXPLORER")
    record = data["records"][0]
    assert record["german"] == sentences[-1] and record["english"] == got[-1]
    assert page.locator("#ae-sentence option").first.inner_text().startswith("[yours]")
    s, t = len(record["source"]), len(record["output"])
    for kind, shape in (("encoder", (s, s)), ("decoder", (t, t)), ("cross", (t, s))):
        maps = record["maps"][kind]
        assert (len(maps), len(maps[0]), len(maps[0][0]), len(maps[0][0][0])) == (
            data["layers"],
            data["heads"],
            *shape,
        )
        assert all(abs(sum(row) - data["scale"]) <= len(row) for layer in maps for head in layer for row in head[:1])
    cells = page.locator("#ae-map rect.ae-cell").count()
    assert cells > 0 and page.text_content("#ae-german") == sentences[-1]


@pytest.mark.site
def test_bad_input_gets_a_message_never_markup(site_page):
    page, _ = site_page
    box = page.locator(".aiayn-translator").first
    assert "empty" in _translate(page, "   ")
    status = _translate(page, "<script>alert(1)</script><img src=x onerror=alert(2)>")
    assert status.startswith("Translated in"), status
    assert box.locator("script, img").count() == 0  # shown as text, never as HTML
    assert "plain text" in box.locator(".tr-notes").inner_text()
    status = _translate(page, "Zwei 😀 spielen.")
    assert "<unk>" in box.locator(".tr-notes").inner_text()
    status = _translate(page, "Ein Hund rennt über die Wiese. " * 70, greedy=True)  # 2,100 characters
    notes = box.locator(".tr-notes").inner_text()
    assert "first 2000" in notes and "first 99 tokens" in notes, notes
    # Stop: a long sentence stopped at once leaves the box ready for the next one
    box.locator("textarea").fill("Ein Hund rennt über die Wiese und " * 14)
    box.locator("button.tr-translate").click()
    box.locator("button.tr-stop").click()
    _wait_ready(page)
    assert box.locator(".tr-status").inner_text().startswith(("Stopped", "Translated in"))
    assert _translate(page, "Zwei Hunde spielen im Schnee.").startswith("Translated in")
