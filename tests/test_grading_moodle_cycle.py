"""Moodle's grading-worksheet cycle: download, upload, download again (no grading: fast).

``upload`` below is Moodle's importer reduced to its rules for a grade
(mod/assign/feedback/offline/locallib.php, ``process_import_grades``; the time is
``strtotime`` of "Last modified (grade)" in importgradeslib.php, 0 for Moodle's
"-"): a row is skipped, with no error, when its grade equals Moodle's, is empty or
negative, is past the maximum, or when Moodle's grade was modified more than 60 s
after the worksheet's time. ``download`` writes the worksheet as Moodle does
(``userdate``: "Monday, 8 February 2027, 9:00 AM"; "-" for a grade never set).
"""

from __future__ import annotations

import csv
import datetime as dt
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
pytest.importorskip("nbgrader", reason="nbgrader is pinned in requirements.txt")
from grading import export, roster  # noqa: E402

A = "assignment1"
MAXIMUM = 12.0
HEADER = ["Identifier", "Full name", "Email address", "Status", "Grade"]
HEADER += ["Maximum grade", "Grade can be changed", "Last modified (grade)", "Feedback comments"]
T0 = dt.datetime(2027, 3, 8, 9, 0)


def download(moodle: dict, path: Path) -> Path:
    """Moodle's "Download grading worksheet" of ``moodle``: {participant: (grade or
    None, timemodified or None)}."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(HEADER)
        for number, (grade, modified) in sorted(moodle.items()):
            when = f"{modified:%A, %-d %B %Y, %-I:%M %p}" if modified else "-"
            shown = "" if grade is None else f"{grade:.2f}"
            row = [f"Participant {number}", f"Student {number}", f"s{number}@uni.example"]
            writer.writerow(row + ["Submitted for grading", shown, f"{MAXIMUM:.2f}", "Yes", when, ""])
    return path


def upload(moodle: dict, path: Path, now: dt.datetime) -> list[str]:
    """Moodle's "Upload grading worksheet" into ``moodle`` at ``now``; the rows applied."""
    applied = []
    with open(path, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            number = row["Identifier"].removeprefix("Participant ")
            text = row["Last modified (grade)"]
            modified = 0.0 if text == "-" else dt.datetime.strptime(text, "%A, %d %B %Y, %I:%M %p").timestamp()
            grade, changed = moodle.get(number, (None, None))
            new = float(row["Grade"]) if row["Grade"].strip() else None
            stale = changed is not None and changed.timestamp() > modified + 60
            if grade is not None and grade == new:
                continue  # not modified
            if new is None or new < 0 or new > MAXIMUM or stale:
                continue  # no value, out of range, or Moodle's grade is newer
            moodle[number] = (new, now)
            applied.append(number)
    return applied


@pytest.fixture
def course(tmp_path, monkeypatch):
    course = tmp_path / "course"
    course.mkdir()
    people = {
        f"s{n}": roster.Student(f"s{n}", "moodle", str(n), f"Student {n}", f"s{n}@uni.example") for n in (1, 2, 3)
    }
    roster.write_roster(course, people)
    book = {"s1": 4.0, "s2": 8.4, "s3": 10.0}

    def gradebook(course):
        return [
            {
                "assignment": A,
                "duedate": None,
                "timestamp": None,
                "student_id": sid,
                "raw_score": raw,
                "late_submission_penalty": 0.0,
                "max_score": MAXIMUM,
            }
            for sid, raw in book.items()
        ]

    monkeypatch.setattr(export, "_gradebook", gradebook)
    return course, book


def _export(course: Path, tmp_path: Path, **kw) -> list[str]:
    return export.export(course, [A], tmp_path / "no-decisions.toml", tmp_path / "no.toml", **kw)


def test_a_regrade_after_an_upload_is_never_lost_silently(course, tmp_path):
    course, book = course
    moodle = {"1": (None, None), "2": (None, None), "3": (None, None)}
    sheet = download(moodle, tmp_path / "sheet-1.csv")  # before any grade: "-"
    _export(course, tmp_path, worksheet=sheet)
    graded = course / "exports" / f"{A}-moodle-grades.csv"
    assert upload(moodle, graded, T0) == ["1", "2", "3"]

    # a resubmission (4 -> 12) and an extension (8.4 -> 12) regraded
    book.update(s1=12.0, s2=12.0)
    before = graded.read_text()
    done = _export(course, tmp_path)
    stop = [line for line in done if line.startswith("STOPPED")]
    assert stop and "Participant 1, Participant 2" in stop[0] and "Download the grading worksheet" in stop[0]
    assert graded.read_text() == before  # nothing written that Moodle would skip
    assert export.main(["--course", str(course), "--decisions", str(tmp_path / "x"), A]) == 1

    # what the stop prevents: Moodle's own rule skips both regrades without a word
    _export(course, tmp_path, not_uploaded=True)
    assert upload(dict(moodle), graded, T0 + dt.timedelta(hours=1)) == []

    # downloading the worksheet again (Moodle's grades now carry their times) lets
    # them through; a grade changed in Moodle after that download stays Moodle's
    sheet = download(moodle, tmp_path / "sheet-2.csv")
    moodle["3"] = (11.0, T0 + dt.timedelta(hours=2))  # edited in Moodle
    book["s3"] = 9.0
    done = _export(course, tmp_path, worksheet=sheet)
    assert not any(line.startswith("STOPPED") for line in done)
    assert upload(moodle, graded, T0 + dt.timedelta(hours=3)) == ["1", "2"]
    assert {k: v[0] for k, v in moodle.items()} == {"1": 12.0, "2": 12.0, "3": 11.0}
    assert _export(course, tmp_path)[-1].endswith("feedback page(s)")  # same grades: no stop
