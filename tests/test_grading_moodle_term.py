"""One student across a Moodle term (issue #34): two assignments, two participant numbers.

Moodle numbers the participants of each assignment anew (its assign_user_mapping
table), so the same student is ``Participant 2001`` in one assignment's zip and
``Participant 5003`` in the next. With each assignment's grading worksheet (the CSV
Moodle downloads, which pairs the participant number with the email), ``make
collect`` keys the student by an id made from the email, the same in both
assignments; ``make export`` writes each assignment's worksheet and feedback zip
back with that assignment's own participant numbers, which Moodle's imports match.

Two students named John Smith and Chloé Müller hand in assignments 1 and 3 (the
participant numbers of assignment 3 in another order); one John Smith has an
extension in assignment 1 and a manual adjustment in assignment 3, both named by
his term id. Everything is graded for real (tools/grade.py, sandboxed).
"""

from __future__ import annotations

import csv
import datetime as dt
import html
import re
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
pytest.importorskip("nbgrader", reason="nbgrader is pinned in requirements.txt")
import collect  # noqa: E402
import grade  # noqa: E402
from editions import make_student  # noqa: E402
from grading import export, roster  # noqa: E402

# generous: two assignments graded on a busy 2-core machine
pytestmark = pytest.mark.timeout(1800)

SOURCE = ROOT / "book" / "autograder" / "source"
A1, A3 = "assignment1", "assignment3"
DUE = {A1: dt.datetime(2027, 2, 9, 9, 0), A3: dt.datetime(2027, 3, 2, 9, 0)}
JS_A, JS_B, CM = "jsmith@uni.example", "john.smith@uni.example", "chloe@uni.example"
# the term ids make_collect derives from the emails
ID_A, ID_B, ID_C = "jsmith-uni-example", "john-smith-uni-example", "chloe-uni-example"
NAMES = {JS_A: "John Smith", JS_B: "John Smith", CM: "Chloé Müller"}
# each assignment's participant numbers: another order in assignment 3
NUMBERS = {A1: {JS_A: 2001, JS_B: 2002, CM: 2003}, A3: {JS_A: 5003, JS_B: 5001, CM: 5002}}
ABSENT = ("Pat Doe", "pat@uni.example")  # in the worksheets, hands in nothing
DECISIONS = f"""
[[extension]]
assignment = "{A1}"
student = "{ID_A}"
due = 2027-02-12T09:00:00Z
reason = "ill from 7 to 11 February"

[[grade]]
assignment = "{A3}"
student = "{ID_A}"
adjust = 1.5
reason = "written explanation, rubric: 1.5 of 2"
"""
HEADER = [
    "Identifier",
    "Full name",
    "Email address",
    "Status",
    "Grade",
    "Maximum grade",
    "Grade can be changed",
    "Last modified (submission)",
    "Last modified (grade)",
    "Feedback comments",
]
DOWNLOADED = "Monday, 1 March 2027, 10:00 AM"  # Moodle's own date format
POINTS = {A1: "12.00", A3: "10.00"}


def _answers(assignment: str, **changes: tuple[str, str]) -> dict[str, str]:
    nb = nbformat.read(SOURCE / assignment / f"{assignment}.ipynb", as_version=4)
    out = {}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            pattern = r"^[ \t]*### (BEGIN|END) SOLUTION\n?"
            out[meta["grade_id"]] = re.sub(pattern, "", cell.source, flags=re.M)
    for grade_id, (old, new) in changes.items():
        assert old in out[grade_id], (grade_id, old)
        out[grade_id] = out[grade_id].replace(old, new)
    return out


def _fill(released: nbformat.NotebookNode, answers: dict[str, str] | None) -> str:
    nb = nbformat.from_dict(released)
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if answers is not None and gid in answers:
            cell.source = answers[gid]
    return nbformat.writes(nb)


def _worksheet(path: Path, assignment: str) -> Path:
    """The grading worksheet Moodle downloads for ``assignment``."""
    people = [(NAMES[e], e, n) for e, n in NUMBERS[assignment].items()]
    people.append((*ABSENT, 7000 + len(assignment)))
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(HEADER)
        for name, email, number in people:
            row = [f"Participant {number}", name, email, "Submitted for grading", ""]
            row += [POINTS[assignment], "Yes", DOWNLOADED, DOWNLOADED, ""]
            writer.writerow(row)
    return path


@pytest.fixture(scope="module")
def term(tmp_path_factory, deadlines_file):
    tmp = tmp_path_factory.mktemp("moodle-term")
    source = tmp / "source"
    source.mkdir()
    for a in (A1, A3):
        (source / a).symlink_to(SOURCE / a, target_is_directory=True)
    course = tmp / "course"
    make_student.build_course(course, source)
    deadlines = deadlines_file(tmp, DUE)
    decisions = tmp / "decisions.toml"
    decisions.write_text(DECISIONS)
    on_time = {a: due - dt.timedelta(days=1) for a, due in DUE.items()}
    late = DUE[A1] + dt.timedelta(days=2, hours=12)  # 3 started days: 30% off
    wrong = {"padding_answer": ("tokens != pad_id", "tokens == pad_id")}
    uploads = {  # {assignment: {email: (answers or None for blank, time)}}
        A1: {JS_A: (_answers(A1), late), JS_B: (_answers(A1), on_time[A1])},
        A3: {JS_A: (_answers(A3, **wrong), on_time[A3]), JS_B: (_answers(A3), on_time[A3])},
    }
    uploads[A1][CM] = (None, on_time[A1])
    uploads[A3][CM] = (_answers(A3), on_time[A3])
    flags = ["--course", str(course), "--quiet", f"--deadlines={deadlines}"]
    flags += [f"--decisions={decisions}", "--cell-timeout=60", "--feedback"]
    flags += ["--unsandboxed"] if grade.sandbox_problem() else []
    out = {}
    for a in (A1, A3):
        released = nbformat.read(course / "release" / a / f"{a}.ipynb", as_version=4)
        path = tmp / f"{a}.zip"
        with zipfile.ZipFile(path, "w") as archive:
            for email, (answers, when) in uploads[a].items():
                folder = f"{NAMES[email]}_{NUMBERS[a][email]}_assignsubmission_file_"
                info = zipfile.ZipInfo(f"{folder}/{a}.ipynb", when.timetuple()[:6])
                archive.writestr(info, _fill(released, answers))
        sheet = _worksheet(tmp / f"{a}-worksheet.csv", a)
        args = [str(path), a, "--course", str(course), "--worksheet", str(sheet)]
        assert collect.main(args) == 0
        assert grade.main([a, *flags]) == 0
    out["graded_page"] = _box(course, ID_A, A3)  # make grade --feedback put it there
    out["export"] = export.export(course, None, decisions, deadlines)
    return course, out


def _csv(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_each_student_has_one_id_across_assignments(term):
    course, _ = term
    rows = _csv(course / "grades.csv")
    ids = {(r["assignment"], r["student_id"]) for r in rows}
    assert ids == {(a, s) for a in (A1, A3) for s in (ID_A, ID_B, ID_C)}
    by = {(r["assignment"], r["student_id"]): r for r in rows}
    for a in (A1, A3):  # grades.csv keeps each assignment's participant number
        for email, sid in ((JS_A, ID_A), (JS_B, ID_B), (CM, ID_C)):
            assert by[(a, sid)]["platform_id"] == str(NUMBERS[a][email])
    term_rows = {r["student_id"]: r for r in _csv(course / "term-grades.csv")}
    assert sorted(term_rows) == sorted([ID_A, ID_B, ID_C])  # one row each
    assert term_rows[ID_A]["name"] == term_rows[ID_B]["name"] == "John Smith"
    assert (term_rows[ID_A][A1], term_rows[ID_A][A3]) == ("12", "9.5")
    assert (term_rows[ID_B][A1], term_rows[ID_B][A3]) == ("12", "10")
    assert (term_rows[ID_C][A1], term_rows[ID_C][A3]) == ("0", "10")
    students = roster.read_roster(course)
    assert students[ID_C].name == "Chloé Müller" and students[ID_C].email == CM
    assert "pat-uni-example" in students  # in the worksheets, no submission


def test_decisions_named_by_the_term_id_stick_in_each_assignment(term):
    course, _ = term
    by = {(r["assignment"], r["student_id"]): r for r in _csv(course / "grades.csv")}
    extended = by[(A1, ID_A)]  # 2.5 days late, within the extension
    assert (extended["late_submission_penalty"], extended["score"]) == ("0", "12")
    assert "extension to 2027-02-12 09:00" in extended["reasons"]
    adjusted = by[(A3, ID_A)]  # padding mask wrong: 8, and 1.5 for the explanation
    assert (adjusted["autograded_score"], adjusted["score"]) == ("8", "9.5")
    assert "written explanation" in adjusted["reasons"]
    for a in (A1, A3):  # nothing of it reached the namesake
        assert by[(a, ID_B)]["reasons"] == ""


def test_each_worksheet_goes_back_with_its_assignments_numbers(term):
    course, out = term
    assert not [line for line in out["export"] if "WARNING" in line or "NOT IN" in line]
    expected = {
        A1: {2001: "12", 2002: "12", 2003: "0"},
        A3: {5003: "9.5", 5001: "10", 5002: "10"},
    }
    for a in (A1, A3):
        path = course / "exports" / f"{a}-moodle-grades.csv"
        with open(path, newline="", encoding="utf-8") as f:
            assert next(csv.reader(f)) == HEADER  # as downloaded, every column
        rows = _csv(path)
        grades = {r["Identifier"]: r["Grade"] for r in rows}
        assert grades == {f"Participant {n}": g for n, g in expected[a].items()}
        for row in rows:  # Moodle's check against grades changed since the download
            assert row["Last modified (grade)"] == DOWNLOADED
            assert row["Maximum grade"] == POINTS[a]
        with zipfile.ZipFile(course / "exports" / f"{a}-moodle-feedback.zip") as z:
            folders = {name.split("/")[0] for name in z.namelist()}
        numbers = {int(folder.split("_")[1]) for folder in folders}
        assert numbers == set(expected[a]), folders


def _box(course: Path, sid: str, assignment: str) -> str:
    page = course / "feedback" / sid / assignment / f"{assignment}.html"
    text = page.read_text(encoding="utf-8")
    assert text.count("<!-- grade returned -->") == 1
    box = text.split("<!-- grade returned -->")[1].split("<!-- /grade returned -->")[0]
    return html.unescape(re.sub(r"<[^>]+>", " ", box))


def test_feedback_pages_show_the_grade_that_goes_back(term):
    """Written by make grade --feedback, and again by make export."""
    course, out = term
    assert " ".join(out["graded_page"].split()) == " ".join(_box(course, ID_A, A3).split())
    adjusted = " ".join(_box(course, ID_A, A3).split())
    assert "Your grade for assignment3: 9.5 of 10" in adjusted
    assert "Autograded (the hidden tests): 8 of 10" in adjusted
    assert "Manual adjustment +1.5: written explanation, rubric: 1.5 of 2" in adjusted
    extended = " ".join(_box(course, ID_A, A1).split())
    assert "Your grade for assignment1: 12 of 12" in extended
    assert "Extension: your due date 2027-02-12 09:00 UTC" in extended
    assert "Late penalty" not in extended
    with zipfile.ZipFile(course / "exports" / f"{A3}-moodle-feedback.zip") as z:
        name = f"John Smith_5003_assignfeedback_file_/{A3}.html"
        assert "9.5 of 10" in z.read(name).decode()
