"""The graded assignments: nbgrader's own grading scores a correct submission 100% and each planted bug less.

The course folder is generated as `make student` does (tools/make_student.py: nbgrader
generate_assignment), the submissions are the released notebook with its answer cells
filled in (the source's solution, or that solution with one typical bug), and the
scores are read from nbgrader's gradebook after `nbgrader autograde`.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import make_student  # noqa: E402

pytest.importorskip("nbgrader", reason="nbgrader is pinned in requirements.txt")
from nbgrader.api import Gradebook  # noqa: E402

ASSIGNMENT = "assignment1"
SOURCE = ROOT / "book" / "autograder" / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"

# name -> {answer cell's grade_id: [(in the correct answer, replaced by), ...]}, or a whole replacement
BUGS: dict[str, dict[str, list[tuple[str, str]] | str]] = {
    "divides by d_k": {"sdpa_answer": [("/ math.sqrt(q.size(-1))", "/ q.size(-1)")]},
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
# the most each bug may score: enough weight sits on the tests that catch it
MAX_SCORE = {"imports aiayn_helpers": 0.0, "ignores masks": 0.5, "inverted mask": 0.5, "divides by d_k": 0.0}


def _solutions() -> dict[str, str]:
    """grade_id -> the source's answer, solution markers removed."""
    nb = nbformat.read(SOURCE, as_version=4)
    answers = {}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            answers[meta["grade_id"]] = re.sub(r"^[ \t]*### (BEGIN|END) SOLUTION\n?", "", cell.source, flags=re.M)
    return answers


def _submission(released: nbformat.NotebookNode, answers: dict[str, str]) -> nbformat.NotebookNode:
    nb = nbformat.from_dict(released)
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            cell.source = answers[grade_id]
    return nb


def test_solutions_hidden_tests_and_solutions_are_not_released(tmp_path):
    course = tmp_path / "course"
    assert make_student.build_course(course) == [ASSIGNMENT]
    released = (course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_text()
    for secret in ("BEGIN HIDDEN TESTS", "_own_work", "BEGIN SOLUTION", "masked_fill(~mask"):
        assert secret not in released
    assert "raise NotImplementedError" in released


@pytest.mark.timeout(1200)
def test_nbgrader_scores_correct_and_planted_bugs(tmp_path):
    course = tmp_path / "course"
    make_student.build_course(course)
    released = nbformat.read(course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    correct = _solutions()
    submissions = {"correct": correct}
    for bug, changes in BUGS.items():
        answers = dict(correct)
        for grade_id, change in changes.items():
            if isinstance(change, str):
                answers[grade_id] = change
                continue
            for old, new in change:
                assert old in answers[grade_id], f"{bug}: {old!r} is not in the solution any more"
                answers[grade_id] = answers[grade_id].replace(old, new)
        submissions[bug] = answers
    students = {name: f"s{i}" for i, name in enumerate(submissions)}
    for name, answers in submissions.items():
        folder = course / "submitted" / students[name] / ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(_submission(released, answers), folder / f"{ASSIGNMENT}.ipynb")

    make_student.nbgrader("autograde", ASSIGNMENT, "--create", cwd=course)

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        scores = {}
        for name, student in students.items():
            sub = gb.find_submission(ASSIGNMENT, student)
            scores[name] = sub.score / sub.max_score
    print("\n".join(f"{s:6.1%}  {name}" for name, s in scores.items()))
    assert scores["correct"] == 1.0, scores
    for bug in BUGS:
        assert scores[bug] < 1.0, f"{bug} scores {scores[bug]:.0%}"
        assert scores[bug] <= MAX_SCORE.get(bug, 0.75), f"{bug} scores {scores[bug]:.0%}"
