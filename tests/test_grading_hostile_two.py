"""A hostile class, round two: the payloads of a second red team, each a submission
graded in one run of tools/grade.py (assignment 1, with feedback, in the sandbox),
beside an honest control (12/12) and a blank one (0), and a Part 1 slip in each of
assignments 2, 3 and 4.

* ``page``: a PNG whose width metadata is ``1 onerror=...`` and a Markdown cell with
  ``javascript:`` links: the feedback page, opened in headless Chromium, runs no
  script (its title stays, no element has an event attribute, no link a script
  address).
* ``fakefail``: the kernel looks for the grader's log among its descriptors
  (/proc/self/fd), writes a fake "bwrap: Can't mount proc" failure to every one it
  can, then kills its runner: reported as the submission's doing, never as a
  problem of the machine, and scored for what ran before (Part 1: 4 of 12). Its
  Part 1 answer lists the kernel's descriptors: no file, nothing of the grader's.
* ``history``: an answer prints ``In``, ``_ih``, ``Out``, ``_oh``, ``%history`` and
  the line cache (zlib and base64, as the red team did) after the hidden tests of
  Part 1 ran: no line of a hidden test in what it printed; full marks.
* ``package-sys``, ``package-import``: the book's package imported and kept under
  other names, then removed from ``os.sys.modules``; reached by ``importlib``,
  ``__import__`` and ``builtins``: 0, and the report lists the package's objects.
* ``syntax``: a syntax error in Part 1, a correct Part 2: 8 of 12 (Part 2 graded with
  the hidden tests' own correct attention in place of Part 1's, the report naming
  it). Assignments 2, 3, 4: an exception before Part 1's definition, a deleted name,
  a syntax error: each loses Part 1's points only.
* ``shape``: a record claiming a tensor of shape [2**64]: those tests fail with a
  reason, the rest is graded (4 of 12).
* ``endless``: endless output stops at the 64 MiB output cap, not at the memory
  limit, and Part 1 keeps its 4 points.
"""

from __future__ import annotations

import base64
import re
import sys
import zlib
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import grade  # noqa: E402
from grading.verdict import HIDDEN  # noqa: E402

pytest.importorskip("nbgrader", reason="nbgrader is pinned in requirements.txt")
import grading_courses  # noqa: E402
import test_assignments  # noqa: E402
from nbgrader.api import Gradebook  # noqa: E402

NO_SANDBOX = grade.sandbox_problem()
pytestmark = [
    pytest.mark.slow,  # one graded class of 10 submissions and 3 more: about 6-20 min
    pytest.mark.timeout(1500),
    pytest.mark.skipif(bool(NO_SANDBOX), reason=f"bubblewrap {NO_SANDBOX}"),
]
SOURCES = ROOT / "book" / "autograder" / "source"
A = "assignment1"

IMAGE = """
from IPython.display import display as _show
_png = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
_show({"image/png": _png}, metadata={"image/png": {"width": '1 onerror=document.title="X"', "height": 5}}, raw=True)
_show({"image/png": _png}, metadata={"width": '2 onerror=document.title="X"'}, raw=True)
"""
LINKS = """A hostile Markdown cell.

[click me](javascript:document.title='X') and [me too](JAVA&#09;SCRIPT:document.title='X')
and ![picture](x.png "t") and <a href="javascript:document.title='X'">raw</a>
and [ref][1] and $\\href{javascript:document.title='X'}{math}$

[1]: javascript:document.title='X'
"""
FDS = """
import os as _os, stat as _stat
_fds = []
for _fd in sorted(_os.listdir("/proc/self/fd")):
    try:
        _kind = _stat.S_IFMT(_os.fstat(int(_fd)).st_mode)
        _fds.append(f"{_fd}:{_kind:o}:{_os.readlink('/proc/self/fd/' + _fd)}")
    except OSError:
        pass
print("FDS", " ".join(_fds))
"""
FAKE = """
import os as _os, signal as _signal
_lie = b" " * 24000 + b"\\nbwrap: Can't mount proc on /newroot/proc: Operation not permitted\\x1b[2J\\n"
for _fd in _os.listdir("/proc/self/fd"):
    try:
        _os.write(int(_fd), _lie)
    except OSError:
        pass
_os.kill(_os.getppid(), _signal.SIGKILL)
"""
HISTORY = """
import base64 as _b64, linecache as _lc, zlib as _z
_seen = [repr(In), repr(_ih), repr(Out), repr(_oh)]
_seen.append(str(get_ipython().run_line_magic("history", "-n -g")))
_seen.append(repr(get_ipython().history_manager.input_hist_raw))
_seen += ["".join(e[2]) for e in list(_lc.cache.values()) if isinstance(e, tuple) and len(e) > 2 and e[2]]
try:
    import inspect as _inspect
    _seen.append(_inspect.getsource(_attention))
except Exception as err:
    _seen.append(f"getsource: {type(err).__name__}")
print("SEEN", _b64.b64encode(_z.compress("\\n".join(_seen).encode())).decode())
"""
PACKAGE_SYS = """
import os
import aiayn_helpers.attention as helper
_mine = helper.scaled_dot_product_attention


def scaled_dot_product_attention(q, k, v, mask=None):
    return _mine(q, k, v, mask)


for _name in [m for m in os.sys.modules if m.startswith("aiayn_" + "helpers")]:
    del os.sys.modules[_name]
del helper
"""
PACKAGE_IMPORT = """
import builtins, importlib
_module = importlib.import_module("aiayn_" + "helpers.attention")
builtins.sdpa_kept = getattr(_module, "scaled_dot_product_" + "attention")
del _module
_mods = __import__("sys").modules
for _name in [m for m in _mods if m.startswith("aiayn_")]:
    _mods.pop(_name)


def scaled_dot_product_attention(q, k, v, mask=None):
    return builtins.sdpa_kept(q, k, v, mask)
"""
SHAPE = """
import IPython.display as _d
_real = _d.display


def _lie(obj, *args, **kwargs):
    mime = "application/x-aiayn-result+json"
    if isinstance(obj, dict) and mime in obj:
        obj = {mime: {"__tensor__": "float64", "shape": [2**64], "b64": ""}}
    return _real(obj, *args, **kwargs)


_d.display = _lie
"""
ENDLESS = """
_line = "x" * 1000
while True:
    print(_line)
"""
# student -> (answers changed from the correct ones, the fraction of the points)
HOSTILE = {
    "page": ({"mha_answer": "+" + IMAGE}, 1.0),
    "fakefail": ({"sdpa_answer": "+" + FDS, "mha_answer": "+" + FAKE}, 4 / 12),
    "history": ({"mha_answer": "+" + HISTORY}, 1.0),
    "package-sys": ({"sdpa_answer": PACKAGE_SYS}, 0.0),
    "package-import": ({"sdpa_answer": PACKAGE_IMPORT}, 0.0),
    "syntax": ({"sdpa_answer": "def scaled_dot_product_attention(q, k, v, mask=None:\n    pass\n"}, 8 / 12),
    "shape": ({"mha_answer": "+" + SHAPE}, 4 / 12),
    "endless": ({"mha_answer": "+" + ENDLESS}, 4 / 12),
}
# the other assignments: Part 1 broken three ways, the rest correct
SLIPS = {
    "assignment2": ("exception", lambda answer: "raise RuntimeError('a slip')\n" + answer),
    "assignment3": ("missing", lambda answer: "pass\n"),
    "assignment4": ("syntax", lambda answer: answer.replace("):", ":", 1)),
}


def _answers(source: nbformat.NotebookNode, changes: dict) -> dict[str, str]:
    correct = test_assignments._solutions(source)
    for gid, text in changes.items():
        correct[gid] = correct[gid] + text[1:] if text.startswith("+") else text
    return correct


def _tests_of_first_part(source: nbformat.NotebookNode) -> tuple[str, float, float]:
    """The first answer cell's id, the points of the tests before the next answer,
    and all points."""
    first, part1, total, answers = None, 0.0, 0.0, 0
    for cell in source.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            answers += 1
            first = first or meta["grade_id"]
        if meta.get("grade"):
            total += meta.get("points", 0)
            part1 += meta.get("points", 0) if answers == 1 else 0
    return first, part1, total


def _scores(course: Path, assignment: str, students) -> dict[str, float]:
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        out = {}
        for name in students:
            sub = gb.find_submission(assignment, name)
            out[name] = sub.score / sub.max_score
        return out


def _submit(course: Path, assignment: str, student: str, nb) -> None:
    folder = course / "submitted" / student / assignment
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / f"{assignment}.ipynb")


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    course = tmp_path_factory.mktemp("hostile-two") / "course"
    names = [A, *SLIPS]
    assert grading_courses.course_of(tmp_path_factory, course, names) == sorted(names)
    released = nbformat.read(course / "release" / A / f"{A}.ipynb", as_version=4)
    source = nbformat.read(SOURCES / A / f"{A}.ipynb", as_version=4)
    subs = {"blank": released, "honest": test_assignments._fill(released, _answers(source, {}))}
    for name, (changes, _) in HOSTILE.items():
        subs[name] = test_assignments._fill(released, _answers(source, changes))
    page = subs["page"]
    at = next(i for i, c in enumerate(page.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == "mha_answer")
    page.cells.insert(at + 1, nbformat.v4.new_markdown_cell(LINKS))
    for name, nb in subs.items():
        _submit(course, A, name, nb)
    args = ["--course", str(course), "--quiet", "--cell-timeout=60", "--feedback"]
    status = grade.main([A, *args])
    expected = {}
    for assignment, (student, slip) in SLIPS.items():
        src = nbformat.read(SOURCES / assignment / f"{assignment}.ipynb", as_version=4)
        first, part1, total = _tests_of_first_part(src)
        answers = _answers(src, {})
        answers[first] = slip(answers[first])
        rel = nbformat.read(course / "release" / assignment / f"{assignment}.ipynb", as_version=4)
        _submit(course, assignment, student, test_assignments._fill(rel, answers))
        # only their scores are read: no feedback pages (a process less each)
        assert grade.main([assignment, *args[:-1]]) == 0, assignment
        expected[assignment] = (student, (total - part1) / total)
    scores = _scores(course, A, subs)
    slips = {a: _scores(course, a, [s])[s] for a, (s, _) in expected.items()}
    reports = {n: (course / "reports" / A / f"{n}.txt") for n in subs}
    reports = {n: p.read_text() if p.is_file() else "" for n, p in reports.items()}
    return course, status, scores, reports, slips, expected


def _outputs(course: Path, student: str, grade_id: str, assignment: str = A) -> str:
    nb = nbformat.read(course / "autograded" / student / assignment / f"{assignment}.ipynb", as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
    return "".join(o.get("text", "") for o in cell.outputs)


def _hidden_lines(course: Path, student: str, assignment: str = A) -> set[str]:
    """Lines of the source's hidden tests long enough to be telling, and not also
    in what the student handed in (the released cells and their own answers: a
    correct answer may share a line with the grader's reference helpers)."""
    source = nbformat.read(SOURCES / assignment / f"{assignment}.ipynb", as_version=4)
    handed_in = course / "submitted" / student / assignment / f"{assignment}.ipynb"
    released = nbformat.read(handed_in, as_version=4)
    visible = {line.strip() for cell in released.cells for line in cell.source.splitlines()}
    found = set()
    for cell in source.cells:
        for block in HIDDEN.findall(cell.source):
            found |= {line.strip() for line in block.splitlines() if len(line.strip()) >= 20}
    return found - visible - {"### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"}


def test_the_controls_and_every_payload_score_what_their_code_earns(graded):
    _, status, scores, reports, _, _ = graded
    assert status == 0, reports
    assert scores["honest"] == 1.0 and scores["blank"] == 0.0, (scores, reports)
    for name, (_, fraction) in HOSTILE.items():
        assert scores[name] == pytest.approx(fraction), (name, scores[name], reports[name])
        assert "NOT GRADED" not in reports[name], reports[name]


def test_a_part_1_slip_costs_part_1_only_in_every_assignment(graded):
    _, _, scores, reports, slips, expected = graded
    assert scores["syntax"] == pytest.approx(8 / 12), reports["syntax"]
    # the course's attention stood in for the missing one in Part 2's tests: said by name
    assert "the course's scaled_dot_product_attention stood in for the student's (missing)" in reports["syntax"]
    for assignment, (student, fraction) in expected.items():
        assert slips[assignment] == pytest.approx(fraction), (assignment, student, slips[assignment])


def test_a_killed_runner_is_the_students_doing_and_no_descriptor_of_the_grader_reaches_the_kernel(graded):
    course, _, _, reports, _, _ = graded
    report = reports["fakefail"]
    # either order of the race: the kill seen first (the runner's exit) or the junk
    # on the kernel's channel seen first (the runner's client stops): both happen
    # after the submission's code started, and both reasons say whose doing it is
    assert "the submission's doing" in report, report
    assert "sandbox: " in report, report
    assert "problem of this machine" not in report and "mount proc" not in report, report
    assert "\x1b" not in (course / "reports" / A / "autograde.log").read_text()
    fds = _outputs(course, "fakefail", "sdpa_answer").split("FDS", 1)[1].split()
    assert fds, "the kernel listed no descriptor"
    regular = [f for f in fds if f.split(":")[1] == "100000"]  # S_IFREG
    assert not regular, fds
    assert not any("aiayn-grade" in f or f.endswith("/log") for f in fds), fds


def test_the_hidden_tests_leave_no_trace_in_the_kernel_or_the_feedback(graded):
    course, _, _, _, _, _ = graded
    printed = _outputs(course, "history", "mha_answer")
    seen = zlib.decompress(base64.b64decode(printed.rsplit("SEEN ", 1)[1].split()[0])).decode()
    assert "def scaled_dot_product_attention" in seen  # the payload read the history
    assert "getsource: " in seen  # the grader's helpers have no source to show
    hidden = _hidden_lines(course, "history")
    assert len(hidden) > 20
    leaked = sorted(line for line in hidden if line in seen)
    assert not leaked, leaked[:5]
    for page in (course / "feedback").rglob("*.html"):
        text = page.read_text()
        assert not [line for line in hidden if line in text], page


def test_the_books_package_is_found_by_identity_and_listed(graded):
    course, _, scores, reports, _, _ = graded
    for name in ("package-sys", "package-import"):
        assert scores[name] == 0.0
        assert "the book's package in the kernel: " in reports[name], reports[name]
        assert "aiayn_helpers.attention.scaled_dot_product_attention" in reports[name], reports[name]
    assert "sys.modules" in reports["package-sys"]
    for name in ("package-sys", "package-import"):
        nb = nbformat.read(course / "autograded" / name / A / f"{A}.ipynb", as_version=4)
        errors = [o.evalue for c in nb.cells for o in c.get("outputs", []) if o.output_type == "error"]
        assert errors and all("own work" in e for e in errors[:2]), errors
    assert "the book's package in the kernel" not in reports["honest"]


def test_an_absurd_record_fails_its_test_with_a_reason(graded):
    course, _, _, _, _, _ = graded
    nb = nbformat.read(course / "autograded" / "shape" / A / f"{A}.ipynb", as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "test_mha_self")
    errors = [o for o in cell.outputs if o.output_type == "error"]
    assert errors and "its result could not be read" in errors[0].evalue, cell.outputs
    assert "for a shape" in errors[0].evalue


def test_endless_output_stops_at_the_output_cap_not_the_memory_limit(graded):
    _, _, _, reports, _, _ = graded
    report = reports["endless"]
    assert "wrote more than 64 MiB of output" in report, report
    assert "memory" not in report and "died" not in report, report
    held = int(report.split("the runner holding ")[1].split()[0])
    assert held < 1024, report  # MiB: a quarter of the 4 GiB memory limit


def test_feedback_pages_run_no_script_in_chromium(graded):
    course, _, _, _, _, _ = graded
    from test_site import CHROMIUM_FLAGS, find_chromium

    page_file = course / "feedback" / "page" / A / f"{A}.html"
    text = page_file.read_text()
    from test_grading_feedback_safe import _tags

    for tag, attrs in _tags(text):  # the page's own tags: no event, no script address
        assert not [a for a in attrs if a.startswith("on")], (tag, attrs)
        assert (
            not re.sub(r"[\x00-\x20]", "", attrs.get("href", "") + attrs.get("src", ""))
            .lower()
            .startswith("javascript:")
        ), (tag, attrs)
    assert "click me" in text and "<img" in text  # the payloads reached the page
    executable = find_chromium()
    if executable is None:
        pytest.skip("no Chromium found (apt-get install chromium, as .ci/run does)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page()
            page.route(re.compile(r"^(?!file:).*"), lambda route: route.abort())
            page.goto(page_file.as_uri(), wait_until="load")
            title = page.title()
            assert title != "X"
            found = page.evaluate(
                """() => {
                    const all = [...document.querySelectorAll('*')];
                    const events = all.filter(e => [...e.attributes].some(a => a.name.startsWith('on')));
                    const links = [...document.querySelectorAll('a[href], img[src]')]
                        .map(e => new URL(e.getAttribute('href') || e.getAttribute('src'), location.href).protocol);
                    const scripted = [...document.querySelectorAll('a[href]')]
                        .filter(a => a.protocol === 'javascript:');
                    scripted.forEach(a => a.click());
                    return {events: events.length, protocols: [...new Set(links)], scripted: scripted.length};
                }"""
            )
            page.wait_for_timeout(200)
            assert page.title() == title and title != "X"
            assert found["events"] == 0 and found["scripted"] == 0, found
            assert set(found["protocols"]) <= {"http:", "https:", "mailto:", "file:", "data:"}, found
        finally:
            browser.close()
