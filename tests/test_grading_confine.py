"""nbgrader's own processing under limits of its own, and the feedback pages it makes
(issue 51, items 6 and 9): tools/grading/confine.py and feedback.finish_pages.

Fast checks here (make test): a child past its memory, CPU or wall limit is stopped
and named; a notebook that stays under repair.too_large's caps but takes more memory
to parse than the limit is refused with the reason, an honest one read; a feedback
page over the cap is cut to a short page, the others load MathJax from the course's
own copy and nothing from another machine. The whole path (a class graded in the
sandbox, the payload at 0 with the reason and the next student at full marks) is in
tests/test_grading_issue51_payloads.py (marker integration).
"""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
pytest.importorskip("nbgrader", reason="nbgrader is pinned in requirements.txt")
from grading import feedback, repair  # noqa: E402

try:
    from grading import confine
except ImportError:  # the code before these limits: every test below fails on it
    confine = None

# what an honest feedback page and a class's path may reach: no address that loads
# from another machine (a link's href is a click, not a load: allowed)
LOADS = re.compile(r"""<(?!a\b)[a-z]+\b[^>]*?\b(?:src|href)\s*=\s*["']?([^"'\s>]*)""", re.I)
CSS_URL = re.compile(r"url\(\s*['\"]?([^'\")\s]*)", re.I)


def remote_loads(text: str) -> list[str]:
    """Every address a page would load (src, a non-link href, CSS url()) that is on
    another machine (a scheme or //host; data: URIs are in the page)."""
    found = LOADS.findall(text) + CSS_URL.findall(text)
    return [u for u in found if feedback.remote(u) and not u.lower().startswith("data:")]


def dicts_notebook(mib: float) -> str:
    """An honest-looking notebook (one code cell) whose metadata holds ``mib`` MiB of
    empty JSON objects: under every cap of repair.too_large (a few cells, no outputs,
    under 20 MiB), and about 180 MiB of the reader's memory per MiB."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    nb.cells[0].metadata["x"] = ["PLACEHOLDER"]
    count = int(mib * (1 << 20)) // 3
    return nbformat.writes(nb).replace('"PLACEHOLDER"', ",".join(["{}"] * count))


def test_limits_reject_bad_values():
    for bad in (0, -1, "2G", None, True):
        with pytest.raises(ValueError, match="expected a number above 0"):
            confine.Limits(memory=bad)
    with pytest.raises(ValueError, match="expected a command of"):
        confine.run("assign", "a1", ["s"], ROOT)
    with pytest.raises(ValueError, match="expected Limits"):
        confine.read_notebook(ROOT / "x.ipynb", limits=1 << 30)


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "status, body, limits",
    [
        ("cpu", "while True: pass", {"cpu": 1, "wall": 40}),
        ("wall", "time.sleep(60)", {"cpu": 30, "wall": 1}),
        ("memory", "os._exit(86)", {}),  # confine.MEMORY_EXIT
        ("ok", "os._exit(0)", {}),
        ("failed", "os._exit(3)", {}),
        ("signal 11", "os.kill(os.getpid(), 11)", {}),
    ],
)
def test_a_child_past_a_limit_is_stopped_and_named(status, body, limits):
    limits = confine.Limits(**limits)
    assert confine.MEMORY_EXIT == 86
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        try:
            exec(body)
        finally:
            os._exit(5)
    done = confine._watch(pid, limits, start)
    assert done["status"] == status, done
    assert done["wall"] < 30, done
    said = confine.reason(status, limits)
    if status in ("cpu", "wall", "memory"):
        assert said.startswith(f"the grader's {'time' if status == 'wall' else ''}".rstrip())
        assert "\n" not in said and "while grading the notebook" in said, said
    if status == "memory":
        assert said == "the grader's memory limit (2048 MiB) was exceeded while grading the notebook"


@pytest.mark.timeout(120)
def test_a_notebook_under_the_caps_past_the_memory_limit_is_refused_and_the_next_read(tmp_path):
    """8 MiB of ``{}`` in a cell's metadata: under the caps, about 1.5 GB to parse (the
    19 MiB the caps allow: 3.5 GB and 34 s, measured), refused at a 600 MiB limit; an
    honest notebook read at the same limit."""
    limits = confine.Limits(memory=600 << 20, cpu=60, wall=100)
    payload = tmp_path / "payload.ipynb"
    payload.write_text(dicts_notebook(8))
    assert repair.too_large(payload) == ""  # the caps let it through
    honest = tmp_path / "honest.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")]), honest)
    why = confine.read_notebook(payload, limits)
    # the memory limit stopped it, not the CPU or wall limit (no wall-clock assert: CI is shared)
    assert why == "the grader's memory limit (600 MiB) was exceeded while reading the notebook"
    assert confine.read_notebook(honest, limits) == ""
    broken = tmp_path / "broken.ipynb"
    broken.write_text("{not json")
    assert confine.read_notebook(broken, limits).startswith(("JSONDecodeError", "NotJSONError"))


@pytest.mark.timeout(120)
def test_prepare_submissions_refuses_it_with_the_reason_and_reads_the_next(tmp_path):
    course = tmp_path / "course"
    (course / "release" / "a1").mkdir(parents=True)
    nbformat.write(nbformat.v4.new_notebook(), course / "release" / "a1" / "a1.ipynb")
    for student, text in (("s1", dicts_notebook(8)), ("s2", None)):
        folder = course / "submitted" / student / "a1"
        folder.mkdir(parents=True)
        if text is None:
            nbformat.write(nbformat.v4.new_notebook(), folder / "a1.ipynb")
        else:
            (folder / "a1.ipynb").write_text(text)
    done = repair.prepare_submissions(course, "a1", confine.Limits(memory=600 << 20, cpu=60, wall=100))
    want = "SCORED 0: a1.ipynb: the grader's memory limit (600 MiB) was exceeded while reading the notebook"
    assert done == {"s1": [want], "s2": []}, done
    assert (course / "submitted" / "s1" / "a1" / "a1.ipynb.refused").is_file()
    assert (course / "submitted" / "s2" / "a1" / "a1.ipynb").is_file()


def _page(course: Path, student: str, body: str = "$x^2$") -> Path:
    """A feedback page as nbconvert writes one (its MathJax from the CDN)."""
    import nbgrader
    from nbconvert import HTMLExporter

    formgrader = Path(nbgrader.__file__).parent / "server_extensions" / "formgrader"
    exporter = HTMLExporter(  # as nbgrader's GenerateFeedback sets it up
        template_name="feedback",
        extra_template_basedirs=[str(formgrader / "templates")],
        extra_template_paths=[str(formgrader / "static/node_modules/bootstrap/dist/css")],
    )
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(body)])
    graded = {"notebook": "a1", "score": 1, "max_score": 2, "late_penalty": 0}
    text, _ = exporter.from_notebook_node(nb, resources={"nbgrader": graded})
    page = course / "feedback" / student / "a1" / "a1.html"
    page.parent.mkdir(parents=True)
    page.write_text(text, encoding="utf-8")
    return page


def test_feedback_pages_load_mathjax_from_the_course_and_nothing_remote(tmp_path):
    page = _page(tmp_path, "s1")
    assert remote_loads(page.read_text())  # nbconvert's page: MathJax from a CDN
    assert feedback.finish_pages(tmp_path, "a1") == {}
    text = page.read_text()
    assert remote_loads(text) == [], remote_loads(text)
    assert '<script src="mathjax/tex-chtml-full.js" async></script>' in text
    copy = page.parent / "mathjax" / "tex-chtml-full.js"
    assert copy.read_bytes() == (feedback.MATHJAX / "tex-chtml-full.js").read_bytes()
    fonts = page.parent / "mathjax" / "output" / "chtml" / "fonts" / "woff-v2"
    assert len(list(fonts.glob("*.woff"))) == len(list(feedback.MATHJAX.rglob("*.woff"))) > 0
    assert feedback.finish_pages(tmp_path, "a1") == {}  # again: unchanged
    assert page.read_text() == text


def test_the_pages_index_names_each_test_and_leaves_out_the_graders_helpers(tmp_path):
    """nbgrader's index says "Test cell" for every test and lists the grader's hidden
    helpers (0 points) as "Test cell (Score: 0.0 / 0.0)"; the finished page names each
    test by its grade id and leaves the helpers out of the index (not out of the page)."""
    import nbgrader
    from nbconvert import HTMLExporter

    formgrader = Path(nbgrader.__file__).parent / "server_extensions" / "formgrader"
    exporter = HTMLExporter(
        template_name="feedback",
        extra_template_basedirs=[str(formgrader / "templates")],
        extra_template_paths=[str(formgrader / "static/node_modules/bootstrap/dist/css")],
    )
    cells = []
    for ident, points, score in [("grader_helpers", 0, 0), ("test_sdpa_mask", 2, 1.5)]:
        cell = nbformat.v4.new_code_cell(f"# {ident}")
        cell.metadata["nbgrader"] = {
            "grade": True,
            "solution": False,
            "locked": True,
            "grade_id": ident,
            "points": points,
            "score": score,
            "schema_version": 3,
        }
        cells.append(cell)
    graded = {"notebook": "a1", "score": 1.5, "max_score": 2, "late_penalty": 0}
    text, _ = exporter.from_notebook_node(nbformat.v4.new_notebook(cells=cells), resources={"nbgrader": graded})
    page = tmp_path / "feedback" / "s1" / "a1" / "a1.html"
    page.parent.mkdir(parents=True)
    page.write_text(text, encoding="utf-8")
    assert '<a href="#grader_helpers">Test cell</a> (Score: 0.0 / 0.0)' in text  # nbgrader's
    assert feedback.finish_pages(tmp_path, "a1") == {}
    done = page.read_text()
    assert '<li><a href="#test_sdpa_mask">test_sdpa_mask</a> (Score: 1.5 / 2.0)</li>' in done
    assert 'href="#grader_helpers"' not in done and "Test cell</a>" not in done
    assert '<a name="grader_helpers"></a>' in done  # the cell itself stays on the page
    assert feedback.named_index(page) is False  # again: unchanged


def test_a_feedback_page_over_the_cap_is_cut_to_a_short_page_that_says_why(tmp_path):
    small, big = _page(tmp_path, "s1"), _page(tmp_path, "s2", "y" * (3 << 20))
    assert big.stat().st_size > 3 << 20
    said = feedback.finish_pages(tmp_path, "a1", cap=2 << 20)
    assert list(said) == ["s2"] and said["s2"][0].startswith("feedback page a1.html cut: 3.")
    assert said["s2"][0].endswith("MiB, more than 2 MiB"), said
    text = big.read_text()
    assert len(text) < 2000 and "feedback page cut" in text and "more than the 2 MiB" in text
    assert "<body>" in text and remote_loads(text) == []  # the grade box goes after <body>
    assert "mathjax/tex-chtml-full.js" in small.read_text()
    assert feedback.MAX_PAGE == 5 << 20
    with pytest.raises(ValueError, match="expected a number of bytes"):
        feedback.finish_pages(tmp_path, "a1", cap=0)


# The whole path: a class graded in the sandbox (make grade --feedback, one worker, so
# that the students are graded in turn), the grader's memory limit set low for it
# through the environment (AIAYN_GRADER_MEMORY; the default, 2048 MiB, is measured in
# the guide). A notebook under the caps that takes more than the limit to read is 0
# with the reason; the students after it are graded in full; a feedback page past
# the size cap is cut and said in the report; no page loads anything remote.
# six cells of 1 MB each (the sandbox keeps 1 MiB of an output): a 6 MiB page
LOUD = [nbformat.v4.new_code_cell("print('y' * 1_000_000)") for _ in range(6)]


@pytest.fixture(scope="module")
def confined_class(tmp_path_factory):
    import grade
    import grading_courses
    import grading_harness as h

    if grade.sandbox_problem():
        pytest.skip(f"bubblewrap {grade.sandbox_problem()}")
    course = tmp_path_factory.mktemp("confined") / "course"
    assert grading_courses.course_of(tmp_path_factory, course, ["assignment1"]) == ["assignment1"]
    honest = nbformat.writes(h.filled("assignment1"))
    loud = h.filled("assignment1")
    loud.cells += LOUD
    dicts = ",".join(["{}"] * ((8 << 20) // 3))  # 8 MiB: about 1.5 GB to read
    texts = {
        "a_payload": honest.replace('"metadata": {', f'"metadata": {{"x": [{dicts}],', 1),
        "b_honest": honest,
        "c_loud": nbformat.writes(loud),
    }
    for student, text in texts.items():
        folder = course / "submitted" / student / "assignment1"
        folder.mkdir(parents=True)
        (folder / "assignment1.ipynb").write_text(text)
    assert repair.too_large(course / "submitted" / "a_payload" / "assignment1" / "assignment1.ipynb") == ""
    os.environ["AIAYN_GRADER_MEMORY"] = "1400M"  # the old code: no such setting
    start = time.monotonic()
    try:
        argv = ["assignment1", "--course", str(course), "--quiet", "--workers", "1", "--feedback"]
        status = grade.main(argv)
    finally:
        del os.environ["AIAYN_GRADER_MEMORY"]
    took = time.monotonic() - start
    with open(course / "grades.csv", encoding="utf-8") as f:
        import csv

        rows = {r["student_id"]: r for r in csv.DictReader(f)}
    reports = {s: (course / "reports" / "assignment1" / f"{s}.txt") for s in texts}
    reports = {s: p.read_text() if p.is_file() else "" for s, p in reports.items()}
    return course, status, rows, reports, took


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_a_class_past_the_graders_limits_scores_0_with_the_reason_and_goes_on(confined_class):
    course, status, rows, reports, took = confined_class
    print(f"graded in {took:.0f} s; {reports}")
    assert status == 0, reports
    words = re.compile(r"SCORED 0: .*the grader's memory limit \(1400 MiB\) was exceeded while (reading|grading)")
    assert words.search(reports["a_payload"]), reports["a_payload"]
    assert len(reports["a_payload"].splitlines()) == 1, reports["a_payload"]
    assert {s: rows[s]["score"] for s in rows} == {"a_payload": "0", "b_honest": "12", "c_loud": "12"}, rows
    assert "feedback page assignment1.html cut: " in reports["c_loud"], reports["c_loud"]
    cut = (course / "feedback" / "c_loud" / "assignment1" / "assignment1.html").read_text()
    assert "feedback page cut" in cut and "Your grade for assignment1: 12 of 12" in cut
    page = course / "feedback" / "b_honest" / "assignment1" / "assignment1.html"
    assert 'src="mathjax/tex-chtml-full.js"' in page.read_text()
    assert (page.parent / "mathjax" / "tex-chtml-full.js").is_file()
    pages = sorted((course / "feedback").rglob("*.html"))
    assert len(pages) == 2, pages  # no page for the student refused
    for path in pages:
        assert remote_loads(path.read_text()) == [], path


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_nbgrader_itself_past_its_memory_limit_is_stopped_and_the_next_student_graded(confined_class):
    """The same payload past the reading step (put back as handed in): nbgrader's own
    autograde of it, in its child, stops at the limit; the student after it is graded
    by a fresh child (confine.run, as make grade runs it)."""
    course = confined_class[0]
    folder = course / "submitted" / "a_payload" / "assignment1"
    (folder / "assignment1.ipynb.refused").rename(folder / "assignment1.ipynb")
    limits = confine.Limits(memory=1400 << 20, cpu=120, wall=900)
    found, log = confine.run("autograde", "assignment1", ["a_payload", "b_honest"], course, ["--force"], limits)
    print({s: {k: v for k, v in r.items()} for s, r in found.items()})
    assert found["a_payload"]["status"] == "memory", (found, log[-3000:])
    assert found["b_honest"]["status"] == "ok", (found, log[-3000:])
    assert found["b_honest"]["peak"] < limits.memory
    assert (course / "autograded" / "b_honest" / "assignment1" / "assignment1.ipynb").is_file()
    said = confine.reason("memory", limits)
    assert said == "the grader's memory limit (1400 MiB) was exceeded while grading the notebook"


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_feedback_page_typesets_its_math_in_chromium_with_nothing_from_outside(confined_class):
    """The honest page opened from disk in headless Chromium: MathJax (the course's
    copy beside it) typesets the course's formulas, and the page asks for nothing but
    files of its own folder (every other request recorded, and refused)."""
    from test_site import CHROMIUM_FLAGS, find_chromium

    page_file = confined_class[0] / "feedback" / "b_honest" / "assignment1" / "assignment1.html"
    executable = find_chromium()
    if executable is None:
        pytest.skip("no Chromium found (apt-get install chromium, as .ci/run does)")
    sync_api = pytest.importorskip("playwright.sync_api")
    asked = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page()
            page.on("request", lambda request: asked.append(request.url))
            page.route(re.compile(r"^(?!file:|data:).*"), lambda route: route.abort())
            page.goto(page_file.as_uri(), wait_until="load")
            page.wait_for_function("() => document.querySelectorAll('mjx-container').length > 0", timeout=60_000)
            math = page.evaluate("() => [...document.querySelectorAll('mjx-container')].map(e => e.textContent)")
        finally:
            browser.close()
    assert any("softmax" in m for m in math), math  # the course's formula, typeset
    outside = [u for u in asked if not u.startswith(("file:", "data:"))]
    assert outside == [], outside
    assert any(u.endswith("/mathjax/tex-chtml-full.js") for u in asked), asked
