"""Browser test of the built site: every page loads, its figures and math render, search works.

Run after `make book` with `make site-test` (pytest marker `site`). Pages are served from
127.0.0.1 by Python's http.server and opened in headless Chromium through Playwright,
with every request that leaves 127.0.0.1 refused: the site must work offline
(MathJax is served from the site itself). Skips with a message when Chromium or
Playwright is missing. Set AIAYN_SITE_DIR to test another build than _build/html.
"""

from __future__ import annotations

import functools
import http.server
import json
import re
import sys
import threading
from pathlib import Path
from urllib.parse import urlsplit

import nbformat
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

pytestmark = pytest.mark.site

from site_pages import (  # noqa: E402, F401  (re-exported: test_browser*, bench_browser)
    _JS_LAYOUT,
    _JS_REPORT,
    _JS_WAIT,
    CHAPTERS,
    CHROMIUM_FLAGS,
    HTML,
    LAYOUT_VIEWPORTS,
    PAGES,
    REDIRECT,
    REDIRECTS,
    ROOT,
    SITE,
    STOPWORDS,
    _visit,
    find_chromium,
)

# ---------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def server():
    if not (SITE / "index.html").exists():
        pytest.skip(f"no built site in {SITE}: run `make book` first")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(SITE)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def browser():
    executable = find_chromium()
    if executable is None:
        pytest.skip("no Chromium found (apt-get install chromium, as .ci/run does): browser test skipped")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed (it is pinned in requirements.txt): browser test skipped")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def context(browser, server):
    """A fresh profile in which the network beyond 127.0.0.1 does not exist."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})  # a laptop (LAYOUT_VIEWPORTS)
    context.set_default_timeout(30_000)
    context.external = []  # requests the site tried to make to other hosts

    def offline(route):
        if urlsplit(route.request.url).hostname == "127.0.0.1":
            route.continue_()
        else:
            context.external.append(f"{route.request.resource_type} {route.request.url}")
            route.abort("internetdisconnected")

    context.route("**/*", offline)
    yield context
    context.close()


@pytest.fixture(scope="module")
def visit(context, server):
    return lambda page_path: _visit(context, server, page_path)


# ---------------------------------------------------------------------------- tests


def _pages_or_skip(pages):
    return pages or [pytest.param("", marks=pytest.mark.skip(reason=f"no built site in {SITE}: run `make book`"))]


@pytest.mark.parametrize("page_path", _pages_or_skip(PAGES))
def test_page_loads_without_errors(visit, page_path):
    r = visit(page_path)
    assert r["status"] == 200
    assert not r["page_errors"], f"JavaScript exceptions on {page_path}: {r['page_errors']}"
    assert not r["console"], f"console errors from local resources on {page_path}: {r['console']}"
    assert not r["failed"], f"local requests that failed on {page_path}: {r['failed']}"


@pytest.mark.parametrize("page_path", _pages_or_skip(PAGES))
def test_every_image_loads(visit, page_path):
    broken = [i["src"] for i in visit(page_path)["images"] if not i["ok"]]
    assert not broken, f"images that did not load on {page_path}: {broken}"


@pytest.mark.parametrize("page_path", _pages_or_skip(PAGES))
def test_math_renders_offline(visit, page_path):
    r = visit(page_path)
    if r["math"]:
        assert r["mathjax_src"] and all(urlsplit(s).hostname == "127.0.0.1" for s in r["mathjax_src"]), (
            f"MathJax is not served by the site itself: {r['mathjax_src']}"
        )
    assert not r["math_unrendered"], f"math MathJax did not typeset on {page_path}: {r['math_unrendered'][:5]}"
    assert not r["mjx_errors"], f"TeX errors on {page_path}: {r['mjx_errors'][:5]}"


@pytest.mark.parametrize("page_path", REDIRECTS)
def test_redirect_points_to_a_page(page_path):
    target = REDIRECT.search((SITE / page_path).read_text(encoding="utf-8"))[1]
    resolved = (SITE / page_path).parent / urlsplit(target).path
    assert resolved.resolve().relative_to(SITE).as_posix() in PAGES, f"{page_path} redirects to a missing {target}"


def test_site_needs_no_other_host(context, visit):
    """Every page was loaded with the network beyond 127.0.0.1 cut: nothing it needed was elsewhere."""
    for page_path in PAGES:
        visit(page_path)
    assert not context.external, f"the site requested resources from other hosts: {sorted(set(context.external))}"


def _notebook_for(page_path: str) -> Path:
    return ROOT / "notebooks" / (Path(page_path).stem + ".ipynb")


def _shown_image_outputs(nb) -> int:
    hidden = {"remove-output", "remove-cell"}
    return sum(
        1
        for cell in nb.cells
        if cell.cell_type == "code" and not hidden & set(cell.metadata.get("tags", []))
        for out in cell.get("outputs", [])
        if out.output_type in ("display_data", "execute_result")
        and any(k.startswith("image/") for k in out.get("data", {}))
    )


@pytest.mark.parametrize("page_path", _pages_or_skip(CHAPTERS))
def test_chapter_shows_its_figures_and_math(visit, page_path):
    source = _notebook_for(page_path)
    if not source.exists():
        pytest.skip(f"{source.name} is not in notebooks/ (built from another checkout?)")
    nb = nbformat.read(source, as_version=4)
    r = visit(page_path)
    figures = _shown_image_outputs(nb)
    shown = [i for i in r["images"] if i["output"] and i["ok"]]
    assert len(shown) >= figures, f"{page_path}: the notebook has {figures} figures, the page shows {len(shown)}"
    markdown = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    if re.search(r"\$[^$\n]+\$", markdown):
        assert r["mjx"] > 0, f"{page_path}: the chapter has math but no MathJax output"


def _search_word(nb) -> str:
    """A distinctive word from the chapter's title."""
    lines = (line for c in nb.cells if c.cell_type == "markdown" for line in c.source.splitlines())
    title = next((line for line in lines if line.startswith("# ")), "")
    words = [w for w in re.findall(r"[A-Za-z]{5,}", title) if w.lower() not in STOPWORDS]
    return max(words, key=len) if words else "Transformer"


@pytest.mark.parametrize("page_path", _pages_or_skip(CHAPTERS))
def test_search_finds_the_chapter(context, server, page_path):
    source = _notebook_for(page_path)
    if not source.exists():
        pytest.skip(f"{source.name} is not in notebooks/")
    word = _search_word(nbformat.read(source, as_version=4))
    page = context.new_page()
    page.goto(f"{server}search.html?q={word}", wait_until="load")
    page.wait_for_function(
        "() => { const s = document.querySelector('#search-results .search-summary, #search-results p');"
        " return s && /found|did not match/i.test(s.textContent); }"
    )
    hrefs = page.eval_on_selector_all("#search-results ul.search li a", "els => els.map(a => a.href)")
    page.close()
    assert any(urlsplit(h).path.lstrip("/").startswith(page_path) for h in hrefs), (
        f"searching {word!r} did not find {page_path}; results: {json.dumps(hrefs)[:500]}"
    )


# ---------------------------------------------------------------------------- self-check quizzes (jupyterquiz)


def _quiz_questions(nb) -> list[dict]:
    """The questions of the chapter's jupyterquiz cell (tagged exercise-quiz), read from its source
    (a list, or the encoded JSON that aiayn_helpers.course.exercises.decode reads)."""
    import ast

    from aiayn_helpers.course.exercises import decode

    for cell in nb.cells:
        if cell.cell_type == "code" and "exercise-quiz" in cell.metadata.get("tags", []):
            call = next(n for n in ast.walk(ast.parse(cell.source)) if isinstance(n, ast.Call) and n.args)
            questions = ast.literal_eval(call.args[0])
            return json.loads(decode(questions)) if isinstance(questions, str) else questions
    return []


QUIZ_CHAPTERS = [
    p for p in CHAPTERS if _notebook_for(p).exists() and _quiz_questions(nbformat.read(_notebook_for(p), as_version=4))
]


@pytest.mark.parametrize("page_path", _pages_or_skip(QUIZ_CHAPTERS))
def test_quiz_answers_on_the_static_site(context, server, page_path):
    """The self-check renders as buttons; a wrong answer says why it is wrong, the right one says right."""
    questions = _quiz_questions(nbformat.read(_notebook_for(page_path), as_version=4))
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(server + page_path, wait_until="load")
    page.wait_for_selector(".MCButton")
    first = questions[0]
    buttons = page.locator(".MCButton").filter(has_text=re.compile(".+"))
    assert buttons.count() >= sum(len(q["answers"]) for q in questions), "every answer is a button"
    wrong = next(a for a in first["answers"] if not a["correct"])
    right = next(a for a in first["answers"] if a["correct"])
    feedback = page.locator(".Feedback").first
    expect = pytest.importorskip("playwright.sync_api").expect  # retries until the page has updated
    page.locator(".MCButton", has_text=wrong["answer"]).first.click()
    expect(feedback).to_have_class(re.compile(r"(^|\s)incorrect(\s|$)"))
    expect(feedback).to_contain_text(wrong["feedback"][:30])
    page.locator(".MCButton", has_text=right["answer"]).first.click()
    expect(feedback).to_have_class(re.compile(r"(^|\s)correct(\s|$)"))
    expect(feedback).to_contain_text(right["feedback"][:30])
    page.close()
    assert not errors, f"JavaScript errors on {page_path}: {errors}"


def test_attention_explorer_draws_the_stored_weights_offline(context, server):
    """The explorer page: pick a sentence, a kind, a layer and a head; the squares drawn are the
    stored weights, and hovering one names its token pair and weight. No kernel, no other host."""
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(server + "book/attention_explorer.html", wait_until="load")
    data = page.evaluate("() => window.ATTENTION_EXPLORER")
    assert data, "attention_explorer_data.js was not built"
    assert data["held_out"] == 6 and len(data["records"]) >= 56  # chapter 8's six and 50 of test2016
    sentence, layer, head = 7, data["layers"] - 1, data["heads"] - 1
    page.select_option("#ae-sentence", str(sentence))
    page.select_option("#ae-kind", "cross")
    page.select_option("#ae-layer", str(layer))
    page.select_option("#ae-head", str(head))
    record = data["records"][sentence]
    assert page.text_content("#ae-german") == record["german"]
    assert page.text_content("#ae-english") == record["english"]
    cells = "els => els.map(e => [+e.dataset.q, +e.dataset.k, +e.dataset.w, e.getAttribute('fill')])"
    drawn = page.eval_on_selector_all("#ae-map rect.ae-cell", cells)
    stored = record["maps"]["cross"][layer][head]
    assert [(q, k, w) for q, k, w, _ in drawn] == [(q, k, w) for q, row in enumerate(stored) for k, w in enumerate(row)]
    assert all(fill.endswith(f"{w / data['scale']:.3f})") for _, _, w, fill in drawn)  # colour = weight
    q, k, w, _ = max(drawn, key=lambda cell: cell[2])  # the strongest square
    page.hover(f"#ae-map rect[data-q='{q}'][data-k='{k}']")
    name = lambda token: token.replace("\u2581", "_")  # noqa: E731
    expected = f"{name(record['output'][q])} \u2192 {name(record['source'][k])}: {w / data['scale']:.2f}"
    assert page.text_content("#ae-hover") == expected
    page.close()
    assert not errors, errors


DIAGRAM_PAGES = sorted(
    {
        f"notebooks/{p.stem}.html"
        for p in (ROOT / "notebooks").glob("*.ipynb")
        if "figures/" in p.read_text(encoding="utf-8")  # ../book/figures/ or figures/ (tools/chapters/lab_markdown.py)
    }
)
SCREENSHOTS = SITE.parent / "screenshots"  # kept as a build artifact beside the site


@pytest.mark.parametrize("width", [375, 1280], ids=["phone", "desktop"])
@pytest.mark.parametrize("mode", ["light", "dark"])
@pytest.mark.parametrize("page_path", _pages_or_skip(DIAGRAM_PAGES))
def test_diagrams_fit_a_phone_and_read_in_dark_mode(browser, server, page_path, width, mode):
    """Every chapter with diagrams, at a phone's and a laptop's width, in the site's light and
    dark modes: each diagram loads, fits the page's width, keeps its white background, and a
    screenshot of the first one is saved in _build/screenshots/."""
    context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=mode)
    context.route("**/*", lambda r: r.continue_() if urlsplit(r.request.url).hostname == "127.0.0.1" else r.abort())
    context.add_init_script(f"localStorage.setItem('mode', '{mode}'); localStorage.setItem('theme', '{mode}');")
    page = context.new_page()
    page.goto(server + page_path, wait_until="load")
    page.evaluate(_JS_WAIT)
    assert page.evaluate("() => document.documentElement.dataset.theme") == mode
    figures = page.eval_on_selector_all(
        "img[src*='_images/'][src$='.svg']",
        """els => els.map(e => ({
            ok: e.complete && e.naturalWidth > 0, alt: e.alt, right: e.getBoundingClientRect().right,
            page: document.documentElement.clientWidth}))""",
    )
    assert figures, f"{page_path}: no diagram found"
    for f in figures:
        assert f["ok"], f"{page_path}: a diagram did not load"
        assert len(f["alt"].split()) >= 8, f"{page_path}: a diagram's alt text is not a sentence: {f['alt']!r}"
        assert f["right"] <= f["page"] + 1, f"{page_path}: a diagram is wider than the page at {width} px"
    SCREENSHOTS.mkdir(exist_ok=True)
    first = page.locator("img[src*='_images/'][src$='.svg']").first
    first.scroll_into_view_if_needed()
    name = f"{Path(page_path).stem}-{width}-{mode}.png"
    first.screenshot(path=str(SCREENSHOTS / name))
    context.close()


@pytest.mark.parametrize("page_path", _pages_or_skip(QUIZ_CHAPTERS[:1]))
def test_quiz_survives_a_mathjax_that_has_not_loaded(context, server, page_path):
    """A reader may click before MathJax has loaded (a slow page): the quiz answers, no error.

    The page defines MathJax's configuration before the script arrives; jupyterquiz read
    ``MathJax.version[0]`` then, and threw. Blocking the script holds the page in that state.
    """
    questions = _quiz_questions(nbformat.read(_notebook_for(page_path), as_version=4))
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.route("**/mathjax/**", lambda route: route.abort())
    page.goto(server + page_path, wait_until="load")
    page.wait_for_selector(".MCButton")
    page.wait_for_timeout(1500)  # jupyterquiz typesets from a 1-second timer after rendering
    right = next(a for a in questions[0]["answers"] if a["correct"])
    page.locator(".MCButton", has_text=right["answer"]).first.click()
    expect = pytest.importorskip("playwright.sync_api").expect
    expect(page.locator(".Feedback").first).to_have_class(re.compile(r"(^|\s)correct(\s|$)"))
    assert page.evaluate("typeof MathJax !== 'undefined' && MathJax.version === undefined"), (
        "the test needs MathJax configured but not loaded"
    )
    page.close()
    assert not errors, f"JavaScript errors on {page_path} before MathJax loaded: {errors}"


# ---------------------------------------------------------------------------- layout: laptop and phone


@pytest.fixture(scope="module")
def layouts(browser, server, visit):
    """Every page at a laptop's 1280x900 (measured by the visit of the tests above) and a
    phone's 390x844: what _JS_LAYOUT measures."""
    out = {("laptop", page_path): visit(page_path)["layout"] for page_path in PAGES}
    for name, (width, height) in LAYOUT_VIEWPORTS.items():
        if name == "laptop":
            continue
        context = browser.new_context(viewport={"width": width, "height": height})
        context.route("**/*", lambda r: r.continue_() if urlsplit(r.request.url).hostname == "127.0.0.1" else r.abort())
        page = context.new_page()
        for page_path in PAGES:
            page.goto(server + page_path, wait_until="load")
            page.evaluate(_JS_WAIT)
            out[name, page_path] = page.evaluate(_JS_LAYOUT)
        context.close()
    return out


@pytest.mark.parametrize("viewport", list(LAYOUT_VIEWPORTS))
def test_no_page_is_wider_than_the_screen(layouts, viewport):
    """Issue #37: no page scrolls sideways on a 1280 px laptop or a 390 px phone
    (book/_static/aiayn.css wraps inline code and signatures; wide blocks scroll inside)."""
    if not PAGES:
        pytest.skip(f"no built site in {SITE}: run `make book`")
    wide = {p: r["page"] for (v, p), r in layouts.items() if v == viewport and r["page"] > r["viewport"]}
    assert not wide, f"pages wider than {LAYOUT_VIEWPORTS[viewport][0]} px (their width): {wide}"


def test_no_code_cell_scrolls_sideways_on_a_laptop(layouts):
    """At 1280 px every code cell of every chapter shows its 88 columns without a scrollbar,
    and its printed output wraps rather than scrolling."""
    chapters = [p for (v, p) in layouts if v == "laptop" and p in CHAPTERS]
    if not chapters:
        pytest.skip(f"no built site in {SITE}: run `make book`")
    assert sum(layouts["laptop", p]["code_cells"] for p in chapters) > 100  # the check has cells to check
    scrolling = {p: layouts["laptop", p]["scrolling"] for p in chapters if layouts["laptop", p]["scrolling"]}
    assert not scrolling, f"code cells that scroll sideways at 1280 px (their longest line): {scrolling}"


@pytest.mark.parametrize("page_path", ["book/results.html", "book/intro.html"])
def test_tables_and_code_blocks_fit_a_laptop(layouts, page_path):
    """The results page's tables (its BLEU column was cut off) and the pages' code blocks fit 1280 px."""
    if ("laptop", page_path) not in layouts:
        pytest.skip(f"{page_path} is not in the built site")
    assert not layouts["laptop", page_path]["wide_blocks"]


def test_no_code_or_output_box_is_wider_than_a_phone(layouts):
    """On a 390 px phone no code or output box of a chapter scrolls sideways: long lines
    wrap inside the column (book/_static/aiayn.css); before, chapter 8's training command
    was a 3,828 px line in a 358 px box."""
    chapters = [p for (v, p) in layouts if v == "phone" and p in CHAPTERS]
    if not chapters:
        pytest.skip(f"no built site in {SITE}: run `make book`")
    assert sum(layouts["phone", p]["boxes"] for p in chapters) > 500  # the check has boxes to check
    wide = {p: layouts["phone", p]["wide_boxes"] for p in chapters if layouts["phone", p]["wide_boxes"]}
    assert not wide, f"code or output boxes wider than their column at 390 px (width: first line): {wide}"


def test_tables_fit_a_phone_or_scroll_in_a_labelled_region(layouts):
    """At 390 px every table lies in a named region (book/_ext/table_regions.py) whose box
    ends inside the screen; one that scrolls sideways can be reached by keyboard
    (tabindex 0: pydata-sphinx-theme keeps it on the scrolling ones only). The results page
    and the instructor guide have tables to check. The general index's layout tables
    (Sphinx's template, not a document's) only have to fit: they scroll themselves."""
    tables = {p: layouts["phone", p]["tables"] for (v, p) in layouts if v == "phone"}
    if not tables:
        pytest.skip(f"no built site in {SITE}: run `make book`")
    for page_path in ("book/results.html", "book/instructor_guide.html"):
        assert tables.get(page_path), f"{page_path} shows no table"
    bad = {}
    for page_path, found in tables.items():
        for t in found:
            why = [
                why
                for why, wrong in (
                    ("not in a region", t["label"] is None and not t["index"]),
                    ("a region without a name", t["label"] == ""),
                    ("scrolls but cannot take the focus", t["scrolls"] and not t["focusable"]),
                    (f"ends at {t['right']:.0f} px", t["right"] > 391),
                )
                if wrong
            ]
            if why:
                bad.setdefault(page_path, []).append(f"{t['text']!r}: {', '.join(why)}")
    assert not bad, f"tables at 390 px: {bad}"


def test_instructor_guide_has_a_contents_list_to_jump_from(layouts):
    """The instructor guide (tens of screens on a phone, whose contents sidebar is hidden)
    opens with a list that links every section and subsection."""
    if ("phone", "book/instructor_guide.html") not in layouts:
        pytest.skip("book/instructor_guide.html is not in the built site")
    guide = layouts["phone", "book/instructor_guide.html"]
    assert len(guide["sections"]) >= 10
    assert guide["contents"] == guide["sections"], "the contents list must link every section, in order"
    assert 0 <= guide["contents_top"] < LAYOUT_VIEWPORTS["phone"][1], "the contents list is not in the first screen"


def test_no_long_stretch_without_a_figure(layouts):
    """Issue #37: at 1280x900 no chapter runs more than about 8 screens without a figure (an
    image, SVG or canvas of at least 200 x 120 px), from the page's top to its end;
    tools/bench/measure_stretches.py prints the same measurement for a page."""
    chapters = [p for (v, p) in layouts if v == "laptop" and p in CHAPTERS]
    if not chapters:
        pytest.skip(f"no built site in {SITE}: run `make book`")
    screen = LAYOUT_VIEWPORTS["laptop"][1]
    long = {}
    for p in chapters:
        stretches = layouts["laptop", p]["stretches"]
        assert len(stretches) >= 2, f"{p} shows no figure at all"
        over = [f"{h / screen:.1f} screens after {head!r}" for h, _, head in stretches if h > 8 * screen]
        if over:
            long[p] = over
    assert not long, f"stretches over 8 screens without a figure: {long}"


def test_one_search_box(layouts):
    """One search field on a laptop's page (the theme used to add a second in a header bar)."""
    if not PAGES:
        pytest.skip(f"no built site in {SITE}: run `make book`")
    counts = {
        p: r["search_boxes"] for (v, p), r in layouts.items() if v == "laptop" and p in CHAPTERS + ["book/intro.html"]
    }
    assert counts and set(counts.values()) == {1}, counts


def _explorer(browser, server, width, height):
    context = browser.new_context(viewport={"width": width, "height": height})
    context.route("**/*", lambda r: r.continue_() if urlsplit(r.request.url).hostname == "127.0.0.1" else r.abort())
    page = context.new_page()
    page.goto(server + "book/attention_explorer.html", wait_until="load")
    page.wait_for_selector("#ae-map rect.ae-cell")
    return context, page


def test_attention_explorer_map_is_in_the_first_screen(browser, server):
    """At 1280x900 the enlarged map of the first sentence is wholly visible without scrolling,
    beside every head of its layer and the colour scale."""
    context, page = _explorer(browser, server, 1280, 900)
    box = page.locator("#ae-map").bounding_box()
    assert box["y"] >= 0 and box["y"] + box["height"] <= 900, (
        f"the map spans y={box['y']:.0f} to {box['y'] + box['height']:.0f}"
    )
    data = page.evaluate("() => window.ATTENTION_EXPLORER")
    assert page.locator("#ae-heads button").count() == data["heads"]
    legend = page.locator("#ae-legend svg")
    assert "Colour scale" in legend.get_attribute("aria-label")
    assert legend.locator("text").all_text_contents() == ["0", "0.25", "0.5", "0.75", "1"]
    context.close()


def test_attention_explorer_reads_by_keyboard_and_as_a_table(browser, server):
    """Tab to the map, arrow keys move a cursor whose weight the live region reads; the table
    holds every weight of the enlarged map; a head's small map enlarges it; heads count from 0."""
    context, page = _explorer(browser, server, 390, 844)
    data = page.evaluate("() => window.ATTENTION_EXPLORER")
    record = data["records"][0]
    name = lambda token: token.replace("\u2581", "_")  # noqa: E731
    weight = lambda w: f"{w / data['scale']:.2f}"  # noqa: E731
    page.select_option("#ae-kind", "cross")
    page.select_option("#ae-layer", "1")
    page.locator("#ae-heads button[data-head='2']").click()
    assert page.get_attribute("#ae-map", "data-head") == "2"
    assert page.get_attribute("#ae-heads button[data-head='2']", "aria-pressed") == "true"
    stored = record["maps"]["cross"][1][2]
    page.focus("#ae-map")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    expected = f"{name(record['output'][1])} \u2192 {name(record['source'][2])}: {weight(stored[1][2])}"
    assert page.text_content("#ae-hover") == expected
    table = page.eval_on_selector_all(
        "#ae-table tbody tr", "rows => rows.map(r => Array.from(r.cells).map(c => c.textContent))"
    )
    assert table == [[name(q)] + [weight(w) for w in row] for q, row in zip(record["output"], stored)]
    assert "layer 2, head 2" in page.text_content("#ae-table caption")
    heads = page.eval_on_selector_all("#ae-head option", "os => os.map(o => o.textContent)")
    assert heads == [f"head {h}" for h in range(data["heads"])]
    assert page.evaluate("document.documentElement.scrollWidth") <= 390  # the long menu fits a phone
    context.close()
    chapter8 = (ROOT / "notebooks" / "08_using_the_model.ipynb").read_text(encoding="utf-8")
    assert "layer 1 head 0:" in chapter8 and "layer 0" not in chapter8  # chapter 8 counts the same way


def test_printing_wraps_code_and_output_instead_of_cutting_it(browser, server):
    """Printed (print media, A4-wide page), chapter 8's widest code and output lines wrap:
    no pre block is wider than the box it is printed in."""
    page_path = "notebooks/08_using_the_model.html"
    if page_path not in PAGES:
        pytest.skip(f"{page_path} is not in the built site")
    measure = "() => Array.from(document.querySelectorAll('pre')).filter(p => p.scrollWidth > p.clientWidth + 1).length"
    context = browser.new_context(viewport={"width": 794, "height": 1123})  # A4 at 96 dpi
    context.route("**/*", lambda r: r.continue_() if urlsplit(r.request.url).hostname == "127.0.0.1" else r.abort())
    page = context.new_page()
    page.goto(server + page_path, wait_until="load")
    page.emulate_media(media="print")
    printed = page.evaluate(measure)
    # the same page with wrapping turned off: some lines are wider than the paper, so the
    # check has something to check (the site's CSS wraps code on screen too, below 992 px)
    page.add_style_tag(content="pre, pre * { white-space: pre !important; }")
    unwrapped = page.evaluate(measure)
    context.close()
    assert unwrapped > 0
    assert printed == 0, f"{printed} pre blocks would be cut off on paper"
