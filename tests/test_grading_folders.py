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

import nbformat
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


# make grade (cli.main) around the folders: nbgrader, the gradebook and the sandbox
# checks replaced by stand-ins, so that only main's own steps run (about 0.5 s). The
# real grading of a refused folder beside the others is in test_grading_hostile.py.
from grading import cli, confine  # noqa: E402


@pytest.fixture
def make_grade(course, monkeypatch):
    """cli.main over ``course`` (safe: ok, ok_2; the others refused); what nbgrader
    was asked to do is recorded, and ``fail`` names an nbgrader command that fails."""
    (course / "nbgrader_config.py").write_text("from grade import configure\n")
    for name in ["ok", "ok_2"]:  # readable notebooks, as nbgrader needs them
        nbformat.write(nbformat.v4.new_notebook(), course / "submitted" / name / A / f"{A}.ipynb")
    calls, fail = [], set()

    def nbgrader(command, assignment, students, course, *args, check=False, **kw):
        calls.append(command)  # confine.run: the nbgrader server of one worker
        if command in fail:
            raise RuntimeError(f"nbgrader {command} {assignment} failed: stand-in")
        for student in students:
            graded = course / "autograded" / student / assignment
            graded.mkdir(parents=True, exist_ok=True)
            (graded / f"{assignment}.ipynb").write_text("{}")
        return {s: {"status": "ok"} for s in students}, "log\n"

    monkeypatch.setattr(confine, "run", nbgrader)
    monkeypatch.setattr(cli, "sandbox_problem", lambda: None)
    monkeypatch.setattr(cli, "too_little_memory", lambda memory, processes: None)
    monkeypatch.setattr(cli, "set_due_date", lambda course, assignment, due: None)
    monkeypatch.setattr(cli, "write_grades", lambda course, decisions: [])
    deadlines = course / "deadlines.toml"
    deadlines.write_text("[due]\n")
    decisions = course / "decisions.toml"
    decisions.write_text("")

    def run(*flags):
        argv = [A, "--course", str(course), "--deadlines", str(deadlines)]
        return cli.main([*argv, "--decisions", str(decisions), *flags])

    return run, calls, fail


def test_make_grade_refuses_unsafe_folders_and_grades_the_others(make_grade, capsys):
    run, calls, _ = make_grade
    assert run() == 1  # the class graded; the refused folders NOT GRADED
    err = capsys.readouterr().err
    assert set(calls) == {"autograde"}  # one nbgrader per worker
    assert "2 submission(s) graded" in err
    for name in ["linked", "with-link", *ODD]:
        assert f"NOT GRADED: the folder {name!r} was refused" in err, name
    assert "NOT GRADED (folder refused, now in " in err
    assert "NOT GRADED (no score)" not in err  # nobody who was graded


def test_make_grade_removes_reports_of_students_gone(course, make_grade, capsys):
    run, _, _ = make_grade
    assert run() == 1
    reports = course / "reports" / A
    refused = sorted(p.name for p in reports.glob("refused-*.txt"))
    assert len(refused) == len(ODD) + 2
    (reports / "gone.txt").write_text("NOT GRADED: from an earlier run\n")
    # the instructor renames one refused folder to a safe id: its report goes too
    first = course / "refused" / A / refused[0].removesuffix(".txt")
    if first.is_symlink():
        first.unlink()
    else:
        first.rename(course / "submitted" / "renamed")
    capsys.readouterr()
    assert run() == 1
    err = capsys.readouterr().err
    assert not (reports / "gone.txt").exists() and "earlier run" not in err
    assert sorted(p.name for p in reports.glob("refused-*.txt")) == refused[1:]
    assert f"  {refused[1].removesuffix('.txt')}: NOT GRADED" in err


def test_the_report_prints_when_feedback_fails_and_names_the_failure(make_grade, capsys):
    run, calls, fail = make_grade
    fail.add("generate_feedback")
    assert run("--feedback") == 3  # stopped part-way: not the same as refused folders
    err = capsys.readouterr().err
    assert calls[-1] == "generate_feedback" and set(calls[:-1]) == {"autograde"}
    assert "2 submission(s) graded" in err and "was refused" in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("GRADING STOPPED: feedback failed: nbgrader generate_feedback")


def test_one_student_is_graded_again_or_removed(course, make_grade, capsys):
    """`make grade STUDENT=ok` grades that student alone again; `REMOVE=ok` takes the
    student out (submission, grading, report), and grades.csv is written again."""
    run, calls, _ = make_grade
    run()
    capsys.readouterr()
    assert run("--student", "ok") == 1  # the refused folders are still reported
    err = capsys.readouterr().err
    assert "1 submission(s) graded" in err and "1/1 ok" in err
    assert run("--student", "nobody") == 2
    assert "no submission of 'nobody'" in capsys.readouterr().err
    assert run("--remove", "ok") == 0
    assert "removed ok from" in capsys.readouterr().out
    assert not (course / "submitted" / "ok").joinpath(A).exists()
    assert not (course / "autograded" / "ok" / A).exists()
    assert (course / "autograded" / "ok_2" / A).is_dir()
    assert run("--remove", "ok") == 2  # nothing left to remove


def test_a_student_no_worker_graded_is_graded_again_alone(course, make_grade, monkeypatch, capsys):
    """Two workers share one gradebook; a student whose worker wrote nothing (its
    nbgrader lost a write to the other's, say) is graded once more, by one nbgrader
    alone that excludes everyone else, and is not reported NOT GRADED."""
    run, _, _ = make_grade
    asked = []

    def nbgrader(command, assignment, students, course, *args, **kw):
        mine = list(students)  # confine.run grades these, one child each
        asked.append(mine)
        for student in mine:
            if student == "ok_2" and len(asked) <= 2:  # its first worker fails it
                continue
            graded = course / "autograded" / student / assignment
            graded.mkdir(parents=True, exist_ok=True)
            (graded / f"{assignment}.ipynb").write_text("{}")
        return {s: {"status": "ok"} for s in mine}, "log\n"

    monkeypatch.setattr(confine, "run", nbgrader)
    assert run("--workers", "2") == 1  # the refused folders are still NOT GRADED
    err = capsys.readouterr().err
    assert sorted(map(tuple, asked[:2])) == [("ok",), ("ok_2",)], asked  # one each
    assert asked[2:] == [["ok_2"]], asked  # then the one missed, alone
    assert (course / "autograded" / "ok_2" / A / f"{A}.ipynb").is_file()
    assert "ok_2: NOT GRADED" not in err and "grading 2 submission(s), 2 at a time" in err
