""" "Am I done?": the last cell make student adds to every released assignment (issue #34).

The cell runs the visible tests again, says which passed and why the others failed,
that hidden tests follow, and where to hand in (deadlines.toml's [hand_in] text).
These tests run the cell on small notebooks (0.1 s); tests/test_grading_term.py runs
it at the end of a released assignment filled in by a student.
"""

from __future__ import annotations

import contextlib
import io
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
pytest.importorskip("nbgrader", reason="nbgrader is pinned in requirements.txt")
from grading import handin  # noqa: E402


def _test_cell(source: str, gid: str) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["nbgrader"] = {"grade": True, "grade_id": gid, "points": 1}
    return cell


def _released() -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        _test_cell("# Hidden helpers of the grader (nothing to do here).", "helpers"),
        _test_cell("# Test of `double`: small numbers (1 point).\nassert double(2) == 4", "t1"),
        _test_cell("# Test of `double`: negative numbers (1 point).\nassert double(-3) == -6, 'sign'", "t2"),
        _test_cell("# Test of `half` (1 point).\nassert half(4) == 2", "t3"),
        _test_cell("# Test of `double`: big numbers (2 points).", "t4"),  # hidden only
    ]
    return nb


def _run(cell: nbformat.NotebookNode, namespace: dict) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(cell.source, namespace)
    return out.getvalue()


def test_the_cell_says_what_passed_what_failed_and_where_to_hand_in(monkeypatch):
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    cell = handin.check_cell(_released(), "Upload it to Moodle > Assignment 1.")
    assert cell.source.startswith("# Am I done?") and cell.id == handin.CELL_ID

    def double(x):
        return 2 * abs(x)  # wrong for negative numbers

    text = _run(cell, {"double": double})
    assert "Visible tests: 1 of 3 passed." in text
    assert "passed  Test of `double`: small numbers" in text
    assert "FAILED  Test of `double`: negative numbers" in text and "AssertionError: sign" in text
    assert "name 'half' is not defined: run every cell above first" in text
    assert "hidden  Test of `double`: big numbers (2 points): checked only after" in text
    assert "Hidden helpers" not in text  # not a test
    assert "grade comes from hidden tests" in text
    assert text.rstrip().endswith("How to hand in: Upload it to Moodle > Assignment 1.")

    def unwritten(x):
        raise NotImplementedError

    text = _run(cell, {"double": unwritten, "half": lambda x: x / 2})
    assert "Visible tests: 1 of 3 passed." in text
    assert text.count("the function is not written yet") == 2


def test_being_graded_the_cell_does_nothing(monkeypatch):
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    cell = handin.check_cell(_released(), "x")
    assert _run(cell, {}) == ""


def test_the_hand_in_text_comes_from_the_deadlines_file(tmp_path):
    path = tmp_path / "deadlines.toml"
    path.write_text(
        '[due]\nassignment2 = 2027-02-23T09:00:00Z\n[hand_in]\ntext = """Upload\n'
        '{notebook} to {assignment} before {due}."""\n'
    )
    text = handin.hand_in_text(path, "assignment2", "assignment2")
    assert text == "Upload assignment2.ipynb to assignment2 before 2027-02-23 09:00 UTC."
    assert "assignment1.ipynb" in handin.hand_in_text(tmp_path / "none", "assignment1", "assignment1")
    path.write_text("[hand_in]\ntext = 3\n")
    with pytest.raises(ValueError, match=r"expected \[hand_in\] text"):
        handin.hand_in_text(path, "assignment2", "assignment2")


def test_the_book_sets_a_hand_in_text():
    text = handin.hand_in_text(handin.DEADLINES, "assignment1", "assignment1")
    assert "assignment1.ipynb" in text and text != handin.DEFAULT.format(notebook="assignment1.ipynb")


def test_grading_takes_out_the_check_cell_only_as_released():
    """It grades nothing and runs tests with exec: out before grading, unless edited."""
    from grading import repair

    release = _released()
    release.cells.append(handin.check_cell(release, "x"))
    nb = nbformat.from_dict(release)
    assert repair.CHECK == handin.CELL_ID
    assert [c.get("id") for c in repair.drop_check_cell(nb, release).cells][-1] != handin.CELL_ID
    pasted = nbformat.from_dict(release)
    pasted.cells[-1]["id"] = "f00d"  # copied into a new notebook
    assert len(repair.drop_check_cell(pasted, release).cells) == len(release.cells) - 1
    edited = nbformat.from_dict(release)
    edited.cells[-1].source += "\nprint('mine')"
    assert repair.drop_check_cell(edited, release).cells[-1].id == handin.CELL_ID
