"""A student's whole submission has a grading-time budget (issue #35 item 3).

An assignment of two notebooks, graded by make grade (cli.main) in the sandbox, with a
budget of 60 s for all of a student's notebooks. The slow student's cells each stay
under the cell limit (22 s of 30) and each notebook under the notebook limit (44 s of
90), but together they pass the budget: grading stops there, the cells not reached
score 0 (the submission's own code took the time), and the student's report names the
budget and what was graded. An honest student graded in the same run scores full marks.
Wall time about 80 s, most of it the slow student's 60 s.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
pytest.importorskip("nbgrader", reason="nbgrader is pinned in requirements.txt")
import grade  # noqa: E402
from editions import make_student  # noqa: E402
from grading import budget  # noqa: E402
from nbgrader.api import Gradebook  # noqa: E402

NO_SANDBOX = grade.sandbox_problem()
A = "timed"
# the honest student's two notebooks take 4-25 s (kernel starts up to 11 s at load
# 12); the slow one's answers sleep 22 s: part_a takes 44 s, part_b gets what is left
BUDGET, CELL, NOTEBOOK, SLEEP = 60, 30, 90, 22
NOTEBOOKS = ("part_a", "part_b")


def _source(name: str) -> nbformat.NotebookNode:
    """A notebook of two answers, each followed by its 1-point test."""
    cells = []
    for n in (1, 2):
        answer = nbformat.v4.new_code_cell(f"### BEGIN SOLUTION\n{name}_{n} = {n}\n### END SOLUTION")
        answer.metadata["nbgrader"] = {
            "grade": False,
            "solution": True,
            "locked": False,
            "grade_id": f"answer_{name}_{n}",
            "schema_version": 3,
        }
        test = nbformat.v4.new_code_cell(f"assert {name}_{n} == {n}")
        test.metadata["nbgrader"] = {
            "grade": True,
            "solution": False,
            "locked": True,
            "points": 1,
            "grade_id": f"test_{name}_{n}",
            "schema_version": 3,
        }
        cells += [answer, test]
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    return nb


def _answers(slow: bool) -> dict[str, str]:
    """Right answers for every cell; the slow student's each sleep SLEEP s first."""
    wait = f"import time\ntime.sleep({SLEEP})\n" if slow else ""
    return {f"answer_{name}_{n}": f"{wait}{name}_{n} = {n}\n" for name in NOTEBOOKS for n in (1, 2)}


@pytest.mark.skipif(bool(NO_SANDBOX), reason=f"bubblewrap {NO_SANDBOX}")
@pytest.mark.timeout(600)
def test_a_slow_submission_is_stopped_at_its_budget_an_honest_one_scores_full(
    tmp_path,
):
    source = tmp_path / "assignments" / A
    source.mkdir(parents=True)
    for name in NOTEBOOKS:
        nbformat.write(_source(name), source / f"{name}.ipynb")
    course = tmp_path / "course"
    assert make_student.build_course(course, source.parent) == [A]
    for student, slow in (("honest", False), ("slow", True)):
        folder = course / "submitted" / student / A
        folder.mkdir(parents=True)
        for name in NOTEBOOKS:
            released = nbformat.read(course / "release" / A / f"{name}.ipynb", 4)
            for cell in released.cells:
                grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
                cell.source = _answers(slow).get(grade_id, cell.source)
            nbformat.write(released, folder / f"{name}.ipynb")
    args = [A, "--course", str(course), "--quiet", f"--cell-timeout={CELL}"]
    args += [f"--notebook-timeout={NOTEBOOK}", f"--student-timeout={BUDGET}"]
    assert grade.main(args) == 0  # both graded: a budget spent is not a failure
    scores = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for student in ("honest", "slow"):
            sub = gb.find_submission(A, student)
            scores[student] = {nb.name: nb.score for nb in sub.notebooks}
    reports = course / "reports" / A
    honest = (reports / "honest.txt").read_text() if (reports / "honest.txt").is_file() else ""
    assert scores["honest"] == {"part_a": 2.0, "part_b": 2.0}, (scores, honest)
    assert "time budget" not in honest
    slow = (reports / "slow.txt").read_text()
    # the 22 s answers fit in part_a (44 s of 60), not in what part_b has left
    assert scores["slow"]["part_b"] == 0.0, (scores, slow)
    assert sum(scores["slow"].values()) < 4.0, (scores, slow)
    line = [t for t in slow.splitlines() if t.startswith("time budget:")][-1]
    assert f"budget of {BUDGET} s for all its notebooks" in line, line
    ran = r"part_b\.ipynb \((not started|[01] of 4 code cells ran)"
    assert re.search(ran, line), line
    used = int(re.search(r"\((\d+) s used\)", line)[1])
    # stopped at the budget, not at part_b's own limit (it would run 44 + 44 s)
    assert used < BUDGET + 20, line
    nb = nbformat.read(course / "autograded" / "slow" / A / "part_b.ipynb", 4)
    text = str([c.outputs for c in nb.cells if c.cell_type == "code"])
    assert budget.reason(BUDGET) in text  # each cell not reached says why


def test_the_budget_gives_a_notebook_what_is_left():
    key = ("course", "a", "student")
    budget._SPENT.pop(key, None)
    assert budget.limit(key, 60, 0) == (60.0, None)  # no budget
    assert budget.limit(None, 60, 40) == (60.0, None)  # not a student's notebook
    assert budget.limit(key, 30, 40) == (30.0, None)
    budget.record(key, "a.ipynb", 25.0, 4, 4)
    assert budget.limit(key, 30, 40) == (15.0, budget.reason(40))
    budget.record(key, "b.ipynb", 15.5, 1, 4)
    assert budget.limit(key, 30, 40) == (0.0, budget.reason(40))
    budget.record(key, "c.ipynb", 0.0, None, 2)
    line = budget.stopped(key, 40)
    assert "(41 s used): a.ipynb (4 of 4 code cells ran, 25 s); b.ipynb (1 of 4" in line
    assert line.endswith("c.ipynb (not started). The cells not reached score 0 (its own code took the time)."), line
    with pytest.raises(ValueError, match="got 30 s per notebook, -1 s per student"):
        budget.limit(key, 30, -1)
    budget._SPENT.pop(key, None)


def test_the_guide_states_the_budget_make_grade_uses():
    import inspect

    m = re.search(r'"--student-timeout",.*?default=(\d+),', inspect.getsource(grade.main), re.S)
    assert m and int(m[1]) == grade.SandboxedExecute.student_timeout.default_value
    guide = " ".join((ROOT / "book" / "instructor_guide.md").read_text().split())
    assert f"{m[1]} s for all the notebooks of one student's submission" in guide
    assert "--student-timeout=SECONDS" in guide
