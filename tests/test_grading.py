"""The graded assignments: nbgrader's own grading scores a correct submission 100% and each planted bug less.

The course folder is generated as `make student` does (tools/editions/make_student.py: nbgrader
generate_assignment), the submissions are the released notebook with its answer cells
filled in (the source's solution, or that solution with one typical bug), and the
scores are read from nbgrader's gradebook after `make grade` (tools/grade.py), which
runs every submission in a bubblewrap sandbox. All students are graded in one run,
with a submission that probes the sandbox: it reads the hidden tests, the gradebook
and another student's notebook, writes outside its folder, opens connections, leaves
processes behind, allocates too much memory and loops forever.
"""

from __future__ import annotations

import hashlib
import os
import re
import socket
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import grade  # noqa: E402

pytest.importorskip("nbgrader", reason="nbgrader is pinned in requirements.txt")
import grading_courses  # noqa: E402
import test_assignments  # noqa: E402  (its helpers that fill a released notebook)
from nbgrader.api import Gradebook  # noqa: E402

pytestmark = pytest.mark.timeout(900)  # the first test to use `graded` grades everyone

ASSIGNMENT = "assignment1"
SOURCE = ROOT / "book" / "autograder" / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"

# name -> {answer cell's grade_id: [(in the correct answer, replaced by), ...]}, or a whole replacement
BUGS: dict[str, dict[str, list[tuple[str, str]] | str]] = {
    "divides by d_k": {"sdpa_answer": [("/ math.sqrt(q.size(-1))", "/ q.size(-1)")]},
    "no sqrt(d_k)": {"sdpa_answer": [("/ math.sqrt(q.size(-1))", "")]},
    "splits heads without the transpose": {
        "mha_answer": [
            (
                ".view(x.size(0), -1, self.num_heads, self.d_k).transpose(1, 2)",
                ".view(x.size(0), self.num_heads, -1, self.d_k)",
            )
        ],
    },  # fmt: skip
    "inverted mask": {"sdpa_answer": [("masked_fill(~mask,", "masked_fill(mask,")]},
    "ignores masks": {"sdpa_answer": [("if mask is not None:", "if False:")]},
    "permuted W^O rows (heads merged in the wrong order)": {
        "mha_answer": [("out.transpose(1, 2).reshape(", "out.permute(0, 2, 3, 1).reshape(")]
    },
    "imports aiayn_helpers": {
        "sdpa_answer": "from aiayn_helpers import scaled_dot_product_attention  # noqa: F401",
        "mha_answer": "from aiayn_helpers import MultiHeadAttention  # noqa: F401",
    },
}
SDPA = ["test_sdpa_mask", "test_sdpa_values"]
MHA = ["test_mha_causal", "test_mha_cross", "test_mha_padding", "test_mha_self"]
# the test cells each bug loses (and no other: the multi-head tests run with a correct
# attention function, issue #34), and words the first failure's message must contain:
# the function and the property it broke
LOST = {
    "divides by d_k": (SDPA, "scaled_dot_product_attention fails the scaling check: the scores q k^T are divided by"),
    "no sqrt(d_k)": (SDPA, "scaled_dot_product_attention fails the scaling check: the scores q k^T are not divided"),
    "splits heads without the transpose": (MHA, "split into heads and merged back"),
    "inverted mask": (["test_sdpa_mask"], "scaled_dot_product_attention fails the masking convention check"),
    "ignores masks": (["test_sdpa_mask"], "scaled_dot_product_attention fails the masking check: the mask is ignored"),
    "permuted W^O rows (heads merged in the wrong order)": (MHA, "split into heads and merged back"),
    "imports aiayn_helpers": (sorted(SDPA + MHA), "fails the own work check"),
}
TAMPERED = "divides by d_k"  # this submission also empties its test cells


def _solutions() -> dict[str, str]:
    """grade_id -> the source's answer, solution markers removed."""
    return test_assignments._solutions(nbformat.read(SOURCE, as_version=4))


_submission = test_assignments._fill  # the released notebook with those answers filled in


def _grade_id(cell) -> str | None:
    return cell.metadata.get("nbgrader", {}).get("grade_id")


def test_solutions_hidden_tests_and_solutions_are_not_released(graded):
    course = graded[0]
    released = (course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_text()
    for secret in ("BEGIN HIDDEN TESTS", "_own_work", "BEGIN SOLUTION", "masked_fill(~mask"):
        assert secret not in released
    assert "raise NotImplementedError" in released


NO_SANDBOX = grade.sandbox_problem()
needs_sandbox = pytest.mark.skipif(bool(NO_SANDBOX), reason=f"bubblewrap {NO_SANDBOX}")
MARKER = "aiayn-probe-was-here"  # the name of every file the probe tries to write
CELL_TIMEOUT = 20  # seconds: the probe's endless loop costs this much
HOME = Path.home()


def _probe(course: Path, port: int) -> dict[str, str]:
    """The correct answers, each followed by attempts to get out of the sandbox."""
    answers = _solutions()
    notebook = f"{ASSIGNMENT}/{ASSIGNMENT}.ipynb"
    reads = {
        "source": f"{course}/source/{notebook}",
        "source, relative": f"../../../source/{notebook}",
        "gradebook": f"{course}/gradebook.db",
        "another student": f"{course}/submitted/correct/{notebook}",
        "repository": f"{ROOT}/README.md",
    }
    readable = [p for p in HOME.glob("*") if p.is_file() and os.access(p, os.R_OK)]
    if readable:
        reads["home"] = str(min(readable))
    other = course / "submitted" / "correct" / ASSIGNMENT
    writes = [course, other, ROOT, HOME, Path(sys.prefix)]
    # the sandbox shows the folders that lead to the Python it may read, nothing else
    bound = [p for p in grade._read_only_paths([]) if p.is_relative_to(HOME)]
    lead = sorted({p.relative_to(HOME).parts[0] for p in bound})
    probe = [
        "import os, socket, subprocess, sys, time",
        "def _try(what, action):",
        "    try:",
        "        result = action()",
        "    except BaseException as err:",
        "        print(f'PROBE {what}: blocked ({type(err).__name__})')",
        "    else:",
        "        print(f'PROBE {what}: LEAKED {str(result)[:40]!r}')",
        "def _visible(folder, lead):",
        "    seen = sorted(set(os.listdir(folder)) - set(lead))",
        "    if not seen:",
        "        raise FileNotFoundError(folder)",
        "    return seen",
        f"_try('list home', lambda: _visible({str(HOME)!r}, {lead!r}))",
    ]
    for what, path in reads.items():
        probe.append(f"_try('read {what}', lambda: open({path!r}, 'rb').read(100))")
    for i, folder in enumerate(writes):
        path = str(folder / MARKER)
        probe.append(f"_try('write {i}', lambda: open({path!r}, 'w').write('x'))")
    connect = "lambda: socket.create_connection"
    probe += [
        f"_try('connect to the host', {connect}(('127.0.0.1', {port}), timeout=3))",
        f"_try('connect outside', {connect}(('1.1.1.1', 53), timeout=3))",
        "_try('allocate 16 GiB', lambda: len(bytearray(16 << 30)))",
        f"_sleep = [sys.executable, '-c', 'import time; time.sleep(900)', {MARKER!r}]",
        "subprocess.Popen(_sleep, start_new_session=True)",
        "_pids = []",
        "def _fork_many():",
        "    for _ in range(2000):",
        "        pid = os.fork()",
        "        if pid == 0:",
        "            time.sleep(900)",
        "            os._exit(0)",
        "        _pids.append(pid)",
        "    return len(_pids)",
        "_try('start 2000 processes', _fork_many)",
        "for _pid in _pids:",
        "    os.kill(_pid, 9)",
        "    os.waitpid(_pid, 0)",
        "print(f'PROBE processes started: {len(_pids)}')",
    ]
    answers["sdpa_answer"] += "\n" + "\n".join(probe) + "\n"
    answers["mha_answer"] += "\nprint('HISTORY', *In)\nwhile True:\n    pass\n"
    return answers


def _digest(folder: Path, skip: tuple[str, ...] = ()) -> dict[str, str]:
    files = [p for p in sorted(folder.rglob("*")) if p.is_file()]
    names = {str(p.relative_to(folder)): p for p in files}
    digest = {k: hashlib.sha256(p.read_bytes()).hexdigest() for k, p in names.items()}
    return {k: v for k, v in digest.items() if not k.startswith(skip)}


def _marked_processes() -> list[str]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if MARKER.encode() in cmdline.read_bytes():
                found.append(cmdline.parent.name)
        except OSError:
            pass
    return found


def _planted(released: nbformat.NotebookNode) -> dict[str, nbformat.NotebookNode]:
    """The correct submission and one per bug."""
    correct = _solutions()
    submissions = {"correct": _submission(released, correct)}
    for bug, changes in BUGS.items():
        answers = test_assignments._with_bug(correct, changes, bug)
        submissions[bug] = _submission(released, answers)
    # one wrong answer also empties its test cells: nbgrader puts them back
    for cell in submissions[TAMPERED].cells:
        if cell.metadata.get("nbgrader", {}).get("grade"):
            cell.source = "pass"
    return submissions


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """All submissions graded in one run of tools/grade.py.

    Returns the course folder, {name: student id}, {name: score} and a socket that
    listens on the grading machine, which the probe tries to reach.
    """
    course = tmp_path_factory.mktemp("grading") / "course"
    assert grading_courses.course_of(tmp_path_factory, course, [ASSIGNMENT]) == [ASSIGNMENT]
    release = course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    released = nbformat.read(release, as_version=4)
    submissions = _planted(released)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.setblocking(False)
    if NO_SANDBOX is None:
        probe = _probe(course, listener.getsockname()[1])
        submissions["probe"] = _submission(released, probe)
    students = {name: re.sub(r"[^a-z0-9]+", "-", name) for name in submissions}
    for name, nb in submissions.items():
        folder = course / "submitted" / students[name] / ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / f"{ASSIGNMENT}.ipynb")

    outputs = ("gradebook.db", "autograded", "feedback", "grades.csv", "term-grades.csv", grade.NOTES)
    before = _digest(course, skip=outputs)
    args = [ASSIGNMENT, "--course", str(course), "--feedback", "--quiet"]
    args += [f"--cell-timeout={CELL_TIMEOUT}", "--memory=4G", "--processes=128"]
    assert grade.main(args + (["--unsandboxed"] if NO_SANDBOX else [])) == 0
    changed = "grading changed the course's own files"
    assert _digest(course, skip=outputs) == before, changed

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        scores = {}
        for name, student in students.items():
            sub = gb.find_submission(ASSIGNMENT, student)
            scores[name] = sub.score / sub.max_score
    print("\n".join(f"{s:6.1%}  {name}" for name, s in scores.items()))
    yield course, students, scores, listener
    listener.close()


def test_nbgrader_scores_correct_and_planted_bugs(graded):
    course, students, scores, _ = graded
    assert scores["correct"] == 1.0, scores
    assert set(LOST) == set(BUGS)
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for bug, (failing, words) in LOST.items():
            nb = gb.find_submission_notebook(ASSIGNMENT, ASSIGNMENT, students[bug])
            lost = sorted(g.name for g in nb.grades if g.max_score and g.score < g.max_score)
            # emptied test cells (TAMPERED) are put back: they lose their points too
            assert lost == failing, f"{bug}: lost points in {lost}, expected {failing}"
            assert all(g.score == 0 for g in nb.grades if g.name in failing), bug
            path = course / "autograded" / students[bug] / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
            cells = {_grade_id(c): c for c in nbformat.read(path, as_version=4).cells}
            for cell in failing:
                errors = [f"{o.ename}: {o.evalue}" for o in cells[cell].outputs if o.output_type == "error"]
                assert len(errors) == 1 and words in errors[0], (bug, cell, errors)
    # only the missing sqrt(d_k): the attention part's 4 points lost, the multi-head 8 kept
    assert scores["no sqrt(d_k)"] == 8 / 12


@needs_sandbox
def test_the_probe_gets_out_nowhere_and_is_graded_for_its_answers(graded):
    course, students, scores, listener = graded
    assert scores["probe"] == 1.0, "its answers are right: escaping must cost nothing"
    autograded = course / "autograded" / students["probe"] / ASSIGNMENT
    nb = nbformat.read(autograded / f"{ASSIGNMENT}.ipynb", as_version=4)
    cells = {c.metadata.get("nbgrader", {}).get("grade_id"): c for c in nb.cells}
    printed = "".join(o.get("text", "") for o in cells["sdpa_answer"].outputs)
    attempts = re.findall(r"^PROBE (.+?): (blocked|LEAKED)", printed, re.M)
    assert len(attempts) == cells["sdpa_answer"].source.count("\n_try("), printed
    assert all(result == "blocked" for _, result in attempts), printed
    started = re.search(r"^PROBE processes started: (\d+)", printed, re.M)
    assert 0 < int(started[1]) < 128, printed
    outputs = cells["mha_answer"].outputs
    errors = [o.ename for o in outputs if o.output_type == "error"]
    # the endless loop was interrupted at the cell's time limit
    assert errors and errors[0] in ("KeyboardInterrupt", "CellTimeoutError"), errors
    with pytest.raises(BlockingIOError):
        listener.accept()
    assert not _marked_processes(), "a process of the probe outlived its sandbox"
    assert not list(course.rglob(MARKER))
    for folder in (ROOT, HOME, Path(sys.prefix)):
        assert not (folder / MARKER).exists(), folder


@needs_sandbox
def test_feedback_withholds_the_hidden_tests(graded):
    course, students, _, _ = graded
    hidden = ("BEGIN HIDDEN", "_own_work", "_student_mha(", "_with_correct_attention", "masked_select", "need_weights")
    pages = sorted((course / "feedback").rglob("*.html"))
    assert len(pages) == len(students)
    for page in pages:
        html = page.read_text()
        assert "hidden tests: not shown" in html, page
        leaked = [s for s in hidden if s in html]
        assert not leaked, f"{page.relative_to(course)} shows {leaked}"
    # the probe printed In[]: the grader's hidden cells ran without history, so it
    # holds the notebook's own cells only (its feedback may still withhold it: a
    # correct answer shares lines with the grader's reference helpers)
    nb = nbformat.read(course / "autograded" / students["probe"] / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "mha_answer")
    printed = "".join(o.get("text", "") for o in cell.outputs)
    assert "HISTORY" in printed and "def scaled_dot_product_attention" in printed, printed[:500]
    assert not [s for s in hidden if s in printed], printed[:500]


@needs_sandbox
def test_feedback_index_names_every_test_and_not_the_graders_helpers(graded):
    """On the pages make grade --feedback writes (the fixture's class), the index names
    each test worth points by its grade id, and not the 0-point helper cell."""
    course, students, _, _ = graded
    cells = [c.metadata.get("nbgrader", {}) for c in nbformat.read(SOURCE, as_version=4).cells]
    tests = [m["grade_id"] for m in cells if m.get("grade") and m.get("points")]
    helpers = [m["grade_id"] for m in cells if m.get("grade") and not m.get("points")]
    assert tests and helpers, (tests, helpers)
    for page in sorted((course / "feedback").rglob("*.html")):
        index = re.findall(r'<li><a href="#([\w-]+)">([\w-]+)</a> \(Score: ', page.read_text())
        assert index == [(t, t) for t in tests], f"{page.relative_to(course)}: {index}"


def test_a_forged_or_missing_result_fails_its_test():
    """The sandbox returns outputs only; a test cell it did not report on scores 0."""
    from nbgrader.utils import determine_grade

    nb = nbformat.read(SOURCE, as_version=4)
    points = [c.metadata.get("nbgrader", {}).get("points") for c in nb.cells]
    tests = [i for i, p in enumerate(points) if p]
    first, second, third = tests[:3]
    stream, shell = [{"output_type": "stream"}], [{"output_type": "shell"}]
    frames = [
        {"index": first, "id": nb.cells[first].id, "outputs": stream},
        {"index": second, "id": "another-cell", "outputs": []},  # wrong id: ignored
        {"index": 10_000, "id": "x", "outputs": []},
        {"index": third, "id": nb.cells[third].id, "outputs": shell},
    ]
    merged = grade.merge_outputs(nb, frames, "the notebook ran past its time limit")
    score = {i: determine_grade(merged.cells[i])[0] for i in tests}
    assert score[first] == points[first]
    assert score[second] == 0
    assert merged.cells[second].outputs[0].ename == "NotExecuted"
    assert score[third] == points[third]  # the unknown output is dropped
    assert all(score[i] == 0 for i in tests[3:])


def test_grading_refuses_without_bubblewrap(tmp_path, monkeypatch, capsys):
    course = tmp_path / "course"
    course.mkdir()
    (course / "nbgrader_config.py").write_text("from grade import configure\n")
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap on it
    grade.sandbox_problem.cache_clear()
    try:
        assert grade.main([ASSIGNMENT, "--course", str(course)]) == 2
    finally:
        grade.sandbox_problem.cache_clear()
    err = capsys.readouterr().err
    assert "apt install bubblewrap" in err and "--unsandboxed" in err
    assert sorted(p.name for p in course.iterdir()) == ["nbgrader_config.py"]


def test_grading_refuses_a_folder_holding_links(tmp_path, monkeypatch, capsys):
    """nbgrader copies a submission's files following links: make grade moves such a
    folder out of submitted/ before nbgrader runs, reports it and grades the rest
    (nbgrader stood in here; test_grading_hostile.py grades a class beside one)."""
    from grading import cli, confine

    course = tmp_path / "course"
    folder = course / "submitted" / "s1" / ASSIGNMENT
    folder.mkdir(parents=True)
    (course / "nbgrader_config.py").write_text("from grade import configure\n")
    (folder / "notes.txt").symlink_to(SOURCE)
    seen = []

    def nbgrader(command, assignment, students, course, *args, **kw):  # confine.run
        seen.append(sorted(os.listdir(course / "submitted")))
        return {s: {"status": "ok"} for s in students}, "log\n"

    monkeypatch.setattr(confine, "run", nbgrader)
    monkeypatch.setattr(cli, "set_due_date", lambda *a: None)
    monkeypatch.setattr(cli, "write_grades", lambda *a: [])
    assert grade.main([ASSIGNMENT, "--course", str(course), "--unsandboxed"]) == 1
    assert seen in ([], [[]])  # nbgrader never saw the folder (or was not run at all)
    err = capsys.readouterr().err
    assert "NOT GRADED: the folder 's1' was refused: it holds links" in err
    assert f"{ASSIGNMENT}/notes.txt" in err
    refused = list((course / "refused" / ASSIGNMENT).iterdir())
    assert len(refused) == 1 and (refused[0] / ASSIGNMENT / "notes.txt").is_symlink()


def test_the_scratch_copy_leaves_out_notebooks_and_links(tmp_path):
    """What nbgrader copied from a link (here: the source) stays out of the sandbox."""
    submitted, autograded, scratch = (tmp_path / n for n in ("sub", "auto", "scratch"))
    for folder in (submitted / "data", autograded / "data", scratch):
        folder.mkdir(parents=True)
    (submitted / "data" / "mine.csv").write_text("1,2\n")
    (submitted / "notes.txt").symlink_to(SOURCE)
    (submitted / "linked").symlink_to(SOURCE.parent, target_is_directory=True)
    (autograded / "data" / "mine.csv").write_text("1,2\n")
    (autograded / "notes.txt").write_bytes(SOURCE.read_bytes())  # as nbgrader copies
    (autograded / f"{ASSIGNMENT}.ipynb").write_bytes(SOURCE.read_bytes())
    grade._copy_files(autograded, scratch, submitted)
    assert sorted(str(p.relative_to(scratch)) for p in scratch.rglob("*")) == [
        "data",
        "data/mine.csv",
    ]


@needs_sandbox
def test_grading_refuses_a_memory_limit_too_small_for_pytorch(tmp_path, capsys):
    course = tmp_path / "course"
    course.mkdir()
    (course / "nbgrader_config.py").write_text("from grade import configure\n")
    assert grade.main([ASSIGNMENT, "--course", str(course), "--memory", "300M"]) == 2
    assert "PyTorch does not import" in capsys.readouterr().err
    assert sorted(p.name for p in course.iterdir()) == ["nbgrader_config.py"]
