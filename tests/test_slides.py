"""`make slides`: one offline deck per session of the syllabus, generated from the chapters.

The first tests read the generated HTML; the last opens every deck in headless Chromium
(Playwright, as tests/test_site.py does) and checks what a lecturer would see: math
typeset (titles included), no MyST markup left raw, no slide taller than a 1280 x 720
screen, speaker notes in every deck.
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from slides import (  # noqa: E402
    lecture,
    make_slides,
)
from slides.chapter import Block, notebook_blocks  # noqa: E402

SECTION = re.compile(r'<section class="(\w+)">(.*?)</section>', re.S)
# what MyST or TeX source looks like when it reaches a slide unrendered
RAW = re.compile(
    r"\$|\{(?:ref|numref|doc|eq|cite|cite:[pt]|py:obj|term)\}`|```|:::|\{(?:admonition|exercise|solution)|:label:|:class:|\\\(|\\\[|\\[A-Za-z]{2,}"
)


@pytest.fixture(scope="module")
def decks(tmp_path_factory):
    out = tmp_path_factory.mktemp("slides")
    return out, make_slides.build(out)


def slides_of(path: Path) -> list[tuple[str, str]]:
    return SECTION.findall(path.read_text(encoding="utf-8"))


def heading(inner: str) -> str:
    return re.search(r"<h[12]>(.*?)</h[12]>", inner, re.S)[1]


def test_one_deck_per_session_built_offline(decks):
    out, written = decks
    sessions = make_slides.syllabus()
    assert [p.name for p, _ in written] == [f"session-{s.number:02d}.html" for s in sessions]
    assert len(sessions) == 10
    assert (out / "mathjax" / "tex-chtml-full.js").is_file()
    for (path, count), session in zip(written, sessions, strict=True):
        page = path.read_text(encoding="utf-8")
        kinds = [kind for kind, _ in slides_of(path)]
        assert count >= 8 and len(kinds) == count, path.name
        # the session's slide, then every chapter's title slide
        assert kinds.count("session") == 1 and kinds.count("title") == len(session.chapters), path.name
        assert {"text", "quote", "figure", "mistake", "exercise", "summary"} <= set(kinds), path.name
        # offline: nothing fetched from another host (links to cited pages are not requests)
        requests = re.findall(r'src="([^"]+)"', page) + re.findall(r'<link[^>]*href="([^"]+)"', page)
        assert not [r for r in requests if r.startswith(("http:", "https:", "//"))], path.name
        for src in re.findall(r'src="(figures/[^"]+)"', page):
            assert (out / src).is_file(), f"{path.name}: {src} missing"
        # the printable notes: the same slides, every note shown
        notes = path.with_name(path.stem + "-notes.html").read_text(encoding="utf-8")
        assert '<body class="notes-view"' in notes and notes.count("<section") == count, path.name
        assert notes.count('<aside class="notes">') == page.count('<aside class="notes">') > count // 2


def test_session_option_builds_one_deck(tmp_path):
    written = make_slides.build(tmp_path, [3])
    assert [p.name for p, _ in written] == ["session-03.html"]


def test_key_formula_is_the_papers_not_the_sections_first(decks):
    """Issue #36: the sqrt(d_k) slide paired the paper's words with the look-up task's loss formula."""
    out, _ = decks
    opening = {}
    for kind, inner in slides_of(out / "session-02.html"):
        opening.setdefault(heading(inner), (kind, inner))
    kind, inner = opening["A soft dictionary look-up"]
    assert kind == "text" and r"\operatorname{Attention}(Q, K, V)" in inner  # equation (1), on the opening slide
    kind, inner = opening[r"Why divide by \(\sqrt{d_k}\)?"]  # the title's math is typeset, not "$...$"
    assert kind == "text" and "math key" not in inner and r"\mathbb{E}" not in inner
    # the look-up task's loss formula is on a slide of its own, with the sentence that introduces it
    loss = [i for k, i in slides_of(out / "session-02.html") if k == "formula" and r"\mathbb{E}\Big[" in i]
    assert len(loss) == 1 and "the expected loss is" in loss[0]
    # a section that opens with the paper's formula in a quote (appendix A's feed-forward network) shows
    # it with its citation, not beside the first paragraph, which is about layer normalisation
    opening = {}
    for _kind, inner in slides_of(out / "session-08.html"):
        opening.setdefault(heading(inner), inner)
    inner = opening["Feed-forward, residual connection and layer norm"]
    assert r"\text{FFN}(x)" in inner and "section 3.3" in inner and "normalisation" not in inner.split("<aside")[0]
    # the rule: the paper's own equation (quoted, or introduced as the paper's), else none on the opening slide
    para, eq = Block("para", "A small task makes it visible; its loss is"), Block("eq", r"L = \sum_j w_j")
    assert lecture.key_formula([para, eq]) is None
    cited = Block("para", "The model of Bahdanau et al. (2015) scores each pair,")
    assert lecture.key_formula([para, eq, cited, Block("eq", "e_{ij} = a(s, h)")]) == "e_{ij} = a(s, h)"
    quoted = Block("quote", "> $$\\mathrm{FFN}(x) = \\max(0, xW_1)W_2$$\n— Vaswani et al. (2017), section 3.3")
    assert lecture.key_formula([para, eq, quoted]) == r"\mathrm{FFN}(x) = \max(0, xW_1)W_2"
    # else the equation the first paragraph introduces, right after it
    assert lecture.key_formula([Block("para", "Each head has four matrices:"), eq]) == eq.text
    assert lecture.key_formula([Block("para", "Each head has four matrices."), eq]) is None


def test_every_mistake_box_and_exercise_is_a_slide_without_solutions(decks):
    out, written = decks
    html = "\n".join(p.read_text(encoding="utf-8") for p, _ in written)
    chapters = [c for s in make_slides.syllabus() for c in s.chapters]
    boxes = [b for c in chapters for b in notebook_blocks(c) if b.kind == "mistake"]
    exercises = [b for c in chapters for b in notebook_blocks(c) if b.kind == "exercise"]
    assert len(boxes) >= 30 and len(exercises) >= 30
    mistakes = [inner for p, _ in written for kind, inner in slides_of(p) if kind == "mistake"]
    assert len(mistakes) == len(boxes)
    for inner in mistakes:
        assert heading(inner).startswith("Common mistake:") and "<dt>The mistake</dt>" in inner
    # a box that says its check gets it on the slide ("The check: no weight above the diagonal.")
    inverted = [i for i in mistakes if "inverted causal mask" in heading(i) and "above the diagonal" in i]
    assert inverted and "<dt>The check</dt><dd><p>No weight above the diagonal.</p>" in inverted[0]
    assert sum("<dt>The fix</dt>" in i for i in mistakes) >= 20
    assert sum("<dt>The check</dt>" in i for i in mistakes) >= 20
    titles = [heading(inner) for p, _ in written for kind, inner in slides_of(p) if kind == "exercise"]
    assert len(titles) == len(exercises) and "Exercise 2.1" in titles and "Exercise A.4" in titles
    # no solution in a slide or in the notes: the prose of every solution block is absent
    for path in chapters:
        md = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown")
        for solution in re.findall(r"```\{solution-start\}.*?```\n(.*?)```\{solution-end\}", md, re.S):
            for line in solution.splitlines():
                if len(line) > 40 and not line.startswith(("```", ":", "$")):
                    assert line[:40] not in html, f"{path.name}: a solution's words in a deck: {line[:40]!r}"
        for solution in re.findall(r"\n([^\n`]{40,})\n```\{solution-end\}", md):
            assert solution[:40] not in html, f"{path.name}: a solution's words in a deck: {solution[:40]!r}"


@pytest.mark.slow
def test_decks_in_a_browser(decks):
    """Every deck in Chromium at 1280 x 720: nothing raw, math typeset, every slide fits, notes present."""
    executable = next(
        (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None
    )
    if executable is None:
        pytest.skip("no Chromium found (apt-get install chromium, as .ci/run does): browser test skipped")
    sync_playwright = pytest.importorskip("playwright.sync_api").sync_playwright
    out, written = decks
    problems: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, headless=True, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        external: list[str] = []

        def offline(route):  # the decks' own files only
            if route.request.url.startswith("file:"):
                route.continue_()
            else:
                external.append(route.request.url)
                route.abort("internetdisconnected")

        page.route("**/*", offline)
        for path, count in written + [(path.with_name(path.stem + "-notes.html"), count) for path, count in written]:
            page.goto(path.as_uri())
            page.wait_for_selector("body[data-typeset]", state="attached", timeout=60_000)
            report = page.evaluate(
                """() => {
                  const out = {slides: 0, notes: 0, raw: [], errors: [], untypeset: [], tall: []};
                  const slides = Array.from(document.querySelectorAll("section"));
                  slides.forEach((s, k) => {
                    if (window.deck) window.deck.show(k);
                    const visible = s.cloneNode(true);
                    visible.querySelectorAll("aside.notes, mjx-assistive-mml").forEach(e => e.remove());
                    const name = (k + 1) + " " + (s.querySelector("h1, h2") || {}).textContent.slice(0, 60);
                    out.slides += 1;
                    const notes = s.querySelector("aside.notes");
                    if (notes && notes.textContent.trim()) out.notes += 1;
                    out.raw.push([name, visible.textContent]);
                    if (s.querySelector("mjx-merror")) out.errors.push(name);
                    if (window.deck && window.deck.overflows(s)) out.tall.push(name);
                  });
                  out.math = document.querySelectorAll("mjx-container").length;
                  return out;
                }"""
            )
            name = path.name
            assert report["slides"] == count, name
            problems += [
                f"{name} slide {n}: raw markup {m.group(0)!r}"
                for n, text in report["raw"]
                for m in [RAW.search(text)]
                if m
            ]
            problems += [f"{name} slide {n}: a TeX error" for n in report["errors"]]
            problems += [f"{name} slide {n}: taller or wider than the screen" for n in report["tall"]]
            if report["math"] < 10:
                problems.append(f"{name}: only {report['math']} formulas typeset")
            if report["notes"] < count // 2:
                problems.append(f"{name}: speaker notes on {report['notes']} of {count} slides")
        browser.close()
    assert not external, f"requests to other hosts: {external[:5]}"
    assert not problems, "\n".join(problems[:30])


def test_instructor_guide_describes_the_decks():
    guide = (ROOT / "book" / "instructor_guide.md").read_text(encoding="utf-8")
    paragraph = guide[guide.index("(instructor-slides)=") :].split("\n\n(")[0]
    script = (ROOT / "tools" / "slides" / "deck.js").read_text(encoding="utf-8")
    for key in re.findall(r"`([A-Z])`", paragraph):  # every key the guide names, the deck handles
        assert f'e.key === "{key}"' in script, key
    assert re.findall(r"`([A-Z])`", paragraph) == ["N", "P", "F"]
    assert "session-NN.html" in paragraph and "session-NN-notes.html" in paragraph
