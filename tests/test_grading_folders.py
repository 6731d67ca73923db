"""Student folders checked before nbgrader sees them (issue #35, item 5).

Folder names with glob or regex characters, a newline, non-Latin letters, a folder that
is a link (to the course's source: the instructor's solution) and one that holds a link
are each moved out of ``submitted/`` to ``refused/`` (as they are, links not followed)
and named in a report, while the safe folders stay to be graded. No nbgrader, no
sandbox: 0.1 s.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from grading import folders  # noqa: E402

A = "assignment1"
ODD = ["a*", "b[1]", "c?d", "new\nline", "李雷", "Иван Петров", "Ólafur Þór", ".hidden", "x" * 65]


@pytest.fixture
def course(tmp_path):
    course = tmp_path / "course"
    (course / "source" / A).mkdir(parents=True)
    (course / "source" / A / f"{A}.ipynb").write_text("{}")
    for name in ["ok", "ok_2", "with-link", *ODD]:
        folder = course / "submitted" / name / A
        folder.mkdir(parents=True)
        (folder / f"{A}.ipynb").write_text("{}")
    (course / "submitted" / "with-link" / A / "notes.txt").symlink_to(course / "source" / A / f"{A}.ipynb")
    (course / "submitted" / "linked").symlink_to(course / "source", target_is_directory=True)
    return course


def test_unsafe_folders_are_moved_aside_and_reported_the_rest_stay(course):
    done = folders.refuse_unsafe(course, A)
    assert sorted(os.listdir(course / "submitted")) == ["ok", "ok_2"]
    assert len(done) == len(ODD) + 2
    refused = course / "refused" / A
    assert sorted(os.listdir(refused)) == sorted(done)
    texts = "\n".join(done.values())
    for name in [*ODD, "linked", "with-link"]:
        assert repr(name) in texts, name
    assert "it is a link" in texts and "holds links (assignment1/notes.txt)" in texts
    # moved as they are: the link is still a link, and the source is untouched
    linked = next(refused / n for n, t in done.items() if "'linked'" in t)
    assert linked.is_symlink() and (course / "source" / A / f"{A}.ipynb").is_file()
    for name, text in done.items():  # each in its own report, read by make grade's summary
        report = course / "reports" / A / f"{name}.txt"
        assert report.read_text().strip() == text
        assert text.startswith("NOT GRADED: ")
    assert folders.refuse_unsafe(course, A) == {}  # a second run finds nothing


def test_reports_of_students_no_longer_submitted_are_removed(course):
    reports = course / "reports" / A
    reports.mkdir(parents=True)
    (reports / "ok.txt").write_text("graded\n")
    (reports / "gone.txt").write_text("old\n")
    assert folders.stale_reports(course, A) == [reports / "gone.txt"]
    assert sorted(p.name for p in reports.iterdir()) == ["ok.txt"]
