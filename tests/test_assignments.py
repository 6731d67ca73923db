"""The graded assignments 2-4: rubric tables, and partial credit per function.

Each assignment's source (book/autograder/source/assignmentN/) has one graded test
cell per function, whose first line reads ``# Test of `name`: ... (N points).``, and
a rubric table in its first cell. The rubric is checked against the test cells'
nbgrader points. Then every assignment is graded as a class would be (tools/grade.py,
each notebook in a sandbox): the solution scores 100%, and each planted bug loses
exactly the points of the function it breaks, with an error that names that
function and the property it broke.
"""

from __future__ import annotations

import html
import re
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import grade  # noqa: E402
import grading_courses  # noqa: E402

pytest.importorskip("nbgrader", reason="nbgrader is pinned in requirements.txt")
from nbgrader.api import Gradebook  # noqa: E402

SOURCE = ROOT / "book" / "autograder" / "source"
ASSIGNMENTS = sorted(p.name for p in SOURCE.iterdir() if (p / f"{p.name}.ipynb").is_file())
FIRST_LINE = re.compile(r"^# Test of `(\w+)`: .*\((\d+) points?\)")
ROW = re.compile(r"^\| `(\w+)` \| (\d+) \|", re.M)
TOTAL = re.compile(r"^\| \*\*Total\*\* \| \*\*(\d+)\*\* \|", re.M)

# assignment -> bug -> ({answer cell: [(in the solution, replaced by)]}, the test cell
# that must fail, words its error must contain: the function and the property)
BUGS = {
    "assignment2": {
        "linear frequencies": (
            {"pe_answer": [("10000.0 ** (-torch", "1 - (torch")]},
            "test_positional_encoding",
            "positional_encoding fails the frequencies",
        ),
        "no ReLU": (
            {"ff_answer": [("torch.relu(self.linear1(x))", "self.linear1(x)")]},
            "test_FeedForward",
            "FeedForward fails the activation",
        ),
        "pre-norm": (
            {
                "encoder_answer": [
                    ("self.norm1(x + self.self_attn(x, x, x, mask))", "x + self.self_attn(*[self.norm1(x)] * 3, mask)"),
                    ("self.norm2(x + self.ff(x))", "x + self.ff(self.norm2(x))"),
                ]
            },
            "test_EncoderLayer",
            "EncoderLayer fails the post-norm",
        ),
        "inherits the book's layer": (
            {"encoder_answer": "class EncoderLayer(ah.EncoderLayer):\n    pass\n"},
            "test_EncoderLayer",
            "EncoderLayer fails the own work",
        ),
    },
    "assignment3": {
        "inverted padding mask": (
            {"padding_answer": [("tokens != pad_id", "tokens == pad_id")]},
            "test_padding_mask",
            "padding_mask fails the masking convention",
        ),
        "causal mask upside down": (
            {"causal_answer": [(".tril()", ".triu()")]},
            "test_causal_mask",
            "causal_mask fails the no peeking",
        ),
        "cross-attention ignores the memory mask": (
            {"decoder_answer": [("memory, memory, memory_mask)", "memory, memory)")]},
            "test_DecoderLayer",
            "DecoderLayer fails the masking (memory_mask",
        ),
    },
    "assignment4": {
        "log of softmax": (
            {"loss_answer": [("logits.log_softmax(dim=-1)", "logits.softmax(dim=-1).log()")]},
            "test_label_smoothed_loss",
            "label_smoothed_loss fails the numerical stability",
        ),
        "no d_model^-0.5": (
            {"noam_answer": [("d_model**-0.5 * ", "")]},
            "test_noam_lr",
            "noam_lr fails the scaling",
        ),
        "gradients accumulate": (
            {"step_answer": [("optimizer.zero_grad()", "pass")]},
            "test_train_step",
            "train_step fails the update over two steps",
        ),
    },
}


def _read(name: str) -> nbformat.NotebookNode:
    return nbformat.read(SOURCE / name / f"{name}.ipynb", as_version=4)


def _graded_cells(nb: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("points")]


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_the_rubric_table_matches_the_hidden_tests_points(name):
    nb = _read(name)
    points: dict[str, int] = {}
    for cell in _graded_cells(nb):
        meta = cell.metadata["nbgrader"]
        first = FIRST_LINE.match(cell.source)
        assert first, f"{name}/{meta['grade_id']}: first line {cell.source.splitlines()[0]!r}"
        assert int(first[2]) == meta["points"], f"{name}/{meta['grade_id']} says {first[2]} points"
        assert "BEGIN HIDDEN TESTS" in cell.source, f"{name}/{meta['grade_id']} has no hidden test"
        points[first[1]] = points.get(first[1], 0) + meta["points"]
    intro = nb.cells[0].source
    rubric = {function: int(p) for function, p in ROW.findall(intro)}
    assert rubric == points, f"{name}: the rubric says {rubric}, the test cells {points}"
    assert int(TOTAL.search(intro)[1]) == sum(points.values())
    for part in nb.cells:  # each part's heading states the points of its function
        heading = re.match(r"## Part \d+: .*\((\d+) points?\)", part.source)
        if part.cell_type == "markdown" and heading:
            assert int(heading[1]) in points.values(), part.source.splitlines()[0]


def test_assignments_2_to_4_have_one_graded_cell_per_function():
    for name in ("assignment2", "assignment3", "assignment4"):
        functions = [FIRST_LINE.match(c.source)[1] for c in _graded_cells(_read(name))]
        assert len(functions) == len(set(functions)) == 3, (name, functions)


def _solutions(nb: nbformat.NotebookNode) -> dict[str, str]:
    answers = {}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            answers[meta["grade_id"]] = re.sub(r"^[ \t]*### (BEGIN|END) SOLUTION\n?", "", cell.source, flags=re.M)
    return answers


def _with_bug(correct: dict[str, str], changes: dict, where: str) -> dict[str, str]:
    """The correct answers with a bug planted: per grade_id, a whole replacement (a string) or a list of
    (text in the solution, replaced by) pairs; each text must still be in the solution."""
    answers = dict(correct)
    for grade_id, change in changes.items():
        if isinstance(change, str):
            answers[grade_id] = change
            continue
        for old, new in change:
            assert old in answers[grade_id], f"{where}: {old!r} is not in the solution"
            answers[grade_id] = answers[grade_id].replace(old, new)
    return answers


def _fill(released: nbformat.NotebookNode, answers: dict[str, str]) -> nbformat.NotebookNode:
    nb = nbformat.from_dict(released)
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            cell.source = answers[grade_id]
    return nb


def _student(bug: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", bug.lower()).strip("-")


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Assignments 2-4 graded, the solution and every bug: {assignment: {student: nb}}."""
    course = tmp_path_factory.mktemp("assignments") / "course"
    assert grading_courses.course_of(tmp_path_factory, course, BUGS) == sorted(BUGS)  # assignments 2-4
    results = {}
    for name, bugs in BUGS.items():
        released = nbformat.read(course / "release" / name / f"{name}.ipynb", as_version=4)
        correct = _solutions(_read(name))
        submissions = {"correct": correct}
        for bug, (changes, _, _) in bugs.items():
            submissions[_student(bug)] = _with_bug(correct, changes, f"{name}, {bug}")
        for student, answers in submissions.items():
            folder = course / "submitted" / student / name
            folder.mkdir(parents=True)
            nbformat.write(_fill(released, answers), folder / f"{name}.ipynb")
        flags = ["--unsandboxed"] if grade.sandbox_problem() else []
        assert grade.main([name, "--course", str(course), "--quiet", "--feedback", *flags]) == 0
        results[name] = {}
        with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
            for student in submissions:
                nb = gb.find_submission_notebook(name, name, student)
                scores = {g.name: (g.score, g.max_score) for g in nb.grades if g.max_score}
                path = course / "autograded" / student / name / f"{name}.ipynb"
                results[name][student] = (scores, nbformat.read(path, as_version=4))
    results["course"] = course
    return results


@pytest.mark.parametrize("name", sorted(BUGS))
def test_the_solution_scores_full_marks(graded, name):
    scores, _ = graded[name]["correct"]
    assert all(score == most for score, most in scores.values()), scores


@pytest.mark.parametrize(("name", "bug"), [(n, b) for n, bugs in BUGS.items() for b in bugs])
def test_a_bug_loses_the_points_of_its_function_only_and_is_named(graded, name, bug):
    _, failing, words = BUGS[name][bug]
    scores, nb = graded[name][_student(bug)]
    lost = sorted(cell for cell, (score, most) in scores.items() if score < most)
    assert lost == [failing], f"{bug}: lost points in {lost}, expected only {failing}"
    assert scores[failing][0] == 0
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == failing)
    errors = [f"{o.ename}: {o.evalue}" for o in cell.outputs if o.output_type == "error"]
    assert errors and words in errors[0], errors


def _hidden_lines(name: str) -> set[str]:
    lines = set()
    for cell in _read(name).cells:
        for block in grade.HIDDEN.findall(cell.source):
            lines |= {line.strip() for line in block.splitlines()}
    return {line for line in lines if len(line) >= 12 and "HIDDEN TESTS" not in line}


@pytest.mark.parametrize("name", sorted(BUGS))
def test_released_feedback_shows_no_line_of_the_hidden_tests(graded, name):
    """Every feedback page, the failing ones included, against every hidden line."""
    course, hidden = graded["course"], _hidden_lines(name)
    pages = sorted((course / "feedback").glob(f"*/{name}/{name}.html"))
    assert len(pages) == len(graded[name]) and len(hidden) > 50
    for page in pages:
        text = html.unescape(re.sub(r"<[^>]+>", "", page.read_text()))
        assert "hidden tests: not shown" in text
        # a line the student wrote too (`super().__init__()`) is theirs to see
        submitted = course / "submitted" / page.parent.parent.name / name / f"{name}.ipynb"
        own = {line.strip() for c in nbformat.read(submitted, as_version=4).cells for line in c.source.splitlines()}
        leaked = sorted(line for line in hidden - own if line in text)
        assert not leaked, f"{page.relative_to(course)} shows {leaked[:3]}"
    # and the failures the feedback does show name the function and the property
    student = _student(next(iter(BUGS[name])))
    page = (course / "feedback" / student / name / f"{name}.html").read_text()
    assert html.escape(BUGS[name][next(iter(BUGS[name]))][2], quote=False) in page
