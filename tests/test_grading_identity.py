"""Who a Moodle student is across a term, and the grade a feedback page shows (issue #34).

Fast: collecting without grading, and the export's and feedback's writers on rows
made here. tests/test_grading_moodle_term.py grades the same for real.
"""

from __future__ import annotations

import csv
import datetime as dt
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
pytest.importorskip("nbgrader", reason="nbgrader is pinned in requirements.txt")
import collect  # noqa: E402
from grading import export, feedback, roster  # noqa: E402

WHEN = dt.datetime(2027, 2, 8, 9, 0)
NB = nbformat.writes(nbformat.v4.new_notebook())
HEADER = ["Identifier", "Full name", "Email address", "Status", "Grade"]
HEADER += ["Maximum grade", "Last modified (grade)", "Feedback comments"]


def _course(tmp_path: Path, *assignments: str) -> Path:
    course = tmp_path / "course"
    for a in assignments:
        (course / "release" / a).mkdir(parents=True)
        (course / "release" / a / f"{a}.ipynb").write_text(NB)
    return course


def _zip(path: Path, assignment: str, people: dict[int, str]) -> Path:
    """A Moodle zip: {participant number: full name}."""
    with zipfile.ZipFile(path, "w") as archive:
        for number, name in people.items():
            entry = f"{name}_{number}_assignsubmission_file_/{assignment}.ipynb"
            archive.writestr(zipfile.ZipInfo(entry, WHEN.timetuple()[:6]), NB)
    return path


def _sheet(path: Path, people: dict[int, tuple[str, str]]) -> Path:
    """Moodle's grading worksheet: {participant number: (full name, email)}."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(HEADER)
        for number, (name, email) in people.items():
            row = [f"Participant {number}", name, email, "Submitted for grading", ""]
            writer.writerow(row + ["10.00", "Monday, 8 February 2027, 9:00 AM", ""])
    return path


def test_without_a_worksheet_collect_says_the_student_cannot_be_matched(tmp_path, capsys):
    course = _course(tmp_path, "assignment1")
    people = {2001: "John Smith", 2002: "John Smith"}
    path = _zip(tmp_path / "a1.zip", "assignment1", people)
    assert collect.main([str(path), "assignment1", "--course", str(course)]) == 0
    out = capsys.readouterr().out
    assert "WARNING: 2 Moodle student(s) keyed by this assignment's participant" in out
    assert "cannot be joined" in out and "WORKSHEET=" in out and "ROSTER=" in out
    # nothing lost: each keyed by its participant number
    folders = sorted(p.parent.name for p in course.glob("submitted/*/assignment1"))
    assert folders == ["2001", "2002"]


def test_worksheets_key_namesakes_by_email_in_every_assignment(tmp_path, capsys):
    course = _course(tmp_path, "assignment1", "assignment2")
    a = ("John Smith", "jsmith@uni.example")
    b = ("John Smith", "John.Smith@uni.example")
    c = ("李雷", "li.lei@uni.example")
    rounds = {  # another participant number, and order, in each assignment
        "assignment1": {2001: a, 2002: b, 2003: c},
        "assignment2": {5003: a, 5001: b, 5002: c},
    }
    for assignment, people in rounds.items():
        names = {n: person[0] for n, person in people.items()}
        path = _zip(tmp_path / f"{assignment}.zip", assignment, names)
        sheet = _sheet(tmp_path / f"{assignment}.csv", people)
        args = [str(path), assignment, "--course", str(course), "--worksheet", sheet]
        assert collect.main(list(map(str, args))) == 0
    out = capsys.readouterr().out
    assert "WARNING" not in out
    ids = {"jsmith-uni-example", "john-smith-uni-example", "li-lei-uni-example"}
    for assignment in rounds:
        found = {p.parent.name for p in course.glob(f"submitted/*/{assignment}")}
        assert found == ids, found
    numbers = roster.read_participants(course)
    assert numbers[("assignment1", "jsmith-uni-example")] == "2001"
    assert numbers[("assignment2", "jsmith-uni-example")] == "5003"
    assert numbers[("assignment2", "john-smith-uni-example")] == "5001"
    students = roster.read_roster(course)
    assert students["li-lei-uni-example"].name == "李雷"
    assert students["john-smith-uni-example"].email == "John.Smith@uni.example"
    kept = course / roster.WORKSHEETS / "assignment2.csv"
    assert kept.read_bytes() == (tmp_path / "assignment2.csv").read_bytes()


def test_a_class_list_matches_by_a_name_only_one_student_has(tmp_path, capsys):
    course = _course(tmp_path, "assignment1")
    people = {2001: "John Smith", 2002: "John Smith", 2003: "Chloé Müller"}
    path = _zip(tmp_path / "a1.zip", "assignment1", people)
    class_list = tmp_path / "class.csv"
    class_list.write_text(
        "id,name,email\n"
        "s1,John Smith,jsmith@uni.example\n"
        "s2,John Smith,john.smith@uni.example\n"
        "s3,Chloé Müller,chloe@uni.example\n",
        encoding="utf-8",
    )
    args = [str(path), "assignment1", "--course", str(course)]
    assert collect.main([*args, "--roster", str(class_list)]) == 0
    out = capsys.readouterr().out
    found = sorted(p.parent.name for p in course.glob("submitted/*/assignment1"))
    assert found == ["2001", "2002", "chloe-uni-example"]
    assert "2001 (John Smith), two or more in the roster" in out
    assert "WORKSHEET=" in out


def test_a_worksheet_says_what_is_wrong(tmp_path):
    path = tmp_path / "sheet.csv"
    path.write_text("Identifiant,Nom complet\nParticipant 1,A\n", encoding="utf-8")
    with pytest.raises(ValueError, match="columns Identifier, Full name, Email"):
        roster.read_worksheet(path)
    path.write_text("Identifier,Full name,Email address\n2001,A,a@x\n")
    with pytest.raises(ValueError, match="line 2: expected an Identifier such as"):
        roster.read_worksheet(path)
    with pytest.raises(ValueError, match="expected an email address"):
        roster.email_id("John Smith")


def test_two_emails_that_spell_alike_get_two_ids():
    first = roster.email_id("j.smith@x.example")
    second = roster.email_id("j-smith@x.example", {first: "j.smith@x.example"})
    assert first == "j-smith-x-example" and second.startswith(first + "-")
    assert roster.email_id("J.Smith@X.example", {first: "j.smith@x.example"}) == first


def _row(**changes) -> dict:
    row = {
        "assignment": "assignment3",
        "student_id": "jsmith-uni-example",
        "platform": "moodle",
        "platform_id": "5003",
        "name": "John Smith",
        "email": "jsmith@uni.example",
        "raw_score": 10.0,
        "late_submission_penalty": 3.0,
        "autograded_score": 7.0,
        "score": 5.5,
        "max_score": 10.0,
        "due_for_student": dt.datetime(2027, 3, 2, 9, 0),
        "decided": ["Manual adjustment -1.5: copied <code> from a friend"],
    }
    return {**row, **changes}


def test_a_feedback_page_shows_the_grade_that_goes_back(tmp_path):
    course = tmp_path / "course"
    folder = course / "feedback" / "jsmith-uni-example" / "assignment3"
    folder.mkdir(parents=True)
    page = folder / "assignment3.html"
    page.write_text("<html><head></head>\n<body>\n<h4>(Score: 10.0 / 10.0)</h4>\n")
    assert feedback.stamp_feedback(course, [_row()]) == 1
    text = page.read_text()
    box = text.split("<body>\n", 1)[1].split("<h4>(Score")[0]
    assert "Your grade for assignment3: 5.5 of 10" in box
    assert "Autograded (the hidden tests): 10 of 10" in box
    assert "Late penalty (due 2027-03-02 09:00 UTC): -3" in box
    assert "copied &lt;code&gt; from a friend" in box  # escaped
    # a second run (a new decision) replaces the box: one box, the new grade
    extended = ["Extension: your due date 2027-03-05 09:00 UTC"]
    row = _row(late_submission_penalty=0.0, score=10.0, decided=extended)
    assert feedback.stamp_feedback(course, [row]) == 1
    text = page.read_text()
    assert text.count("<!-- grade returned -->") == 1
    assert "10 of 10" in text and "5.5" not in text and "Late penalty" not in text
    assert "Extension: your due date 2027-03-05 09:00 UTC" in text


def test_a_downloaded_worksheet_goes_back_with_grades_only(tmp_path):
    course = tmp_path / "course"
    (course / roster.WORKSHEETS).mkdir(parents=True)
    (course / "exports").mkdir()
    people = {5003: ("John Smith", "a@x"), 5001: ("John Smith", "b@x")}
    _sheet(course / roster.WORKSHEETS / "assignment3.csv", people)
    rows = [_row(), _row(platform_id="9999", student_id="other", max_score=12.0)]
    path = course / "exports" / "assignment3-moodle-grades.csv"
    said = export.write_moodle(rows, "assignment3", path, dt.datetime(2027, 3, 9))
    with open(path, newline="", encoding="utf-8") as f:
        written = list(csv.reader(f))
    assert written[0] == HEADER
    assert [r[0] for r in written[1:]] == ["Participant 5003"]  # only the graded
    assert written[1][4] == "5.5" and written[1][6] == "Monday, 8 February 2027, 9:00 AM"
    assert said == [
        f"NOT IN THE WORKSHEET: Participant 9999 of {path.parent.parent}/{roster.WORKSHEETS}/assignment3.csv"
    ]
    rows = [_row(max_score=12.0)]
    said = export.write_moodle(rows, "assignment3", path, dt.datetime(2027, 3, 9))
    assert said and said[0].startswith("WARNING: assignment3's Maximum grade in Moodle")


def test_a_worksheet_after_a_collect_without_one_names_the_old_folder(tmp_path, capsys):
    """Collected first by participant number, then with the worksheet: the student
    gets the email id, and the folder under the number is named, not deleted."""
    course = _course(tmp_path, "assignment1")
    path = _zip(tmp_path / "a1.zip", "assignment1", {2001: "John Smith"})
    args = [str(path), "assignment1", "--course", str(course)]
    assert collect.main(args) == 0
    sheet = _sheet(tmp_path / "sheet.csv", {2001: ("John Smith", "js@uni.example")})
    assert collect.main([*args, "--worksheet", str(sheet)]) == 0
    out = capsys.readouterr().out
    assert "ALSO submitted/2001/assignment1: js-uni-example (John Smith)" in out
    found = sorted(p.parent.name for p in course.glob("submitted/*/assignment1"))
    assert found == ["2001", "js-uni-example"]


def test_canvas_ids_are_kept_and_need_no_worksheet(tmp_path, capsys):
    course = _course(tmp_path, "assignment1")
    with zipfile.ZipFile(tmp_path / "c.zip", "w") as archive:
        for n in (3001, 3002):
            entry = f"smithjohn_{n}_9{n}_assignment1.ipynb"
            archive.writestr(zipfile.ZipInfo(entry, WHEN.timetuple()[:6]), NB)
    args = [str(tmp_path / "c.zip"), "assignment1", "--course", str(course)]
    assert collect.main(args) == 0
    assert "WARNING" not in capsys.readouterr().out
    numbers = roster.read_participants(course)
    assert numbers == {("assignment1", "3001"): "3001", ("assignment1", "3002"): "3002"}
