"""Grades and feedback back to the course platform, in the platform's own formats.

    python tools/grade.py export                   # `make export`: every assignment
    python tools/grade.py export assignment1       # one assignment

``<course>/grades.csv`` is an output: written from nbgrader's gradebook and the
instructor's decisions (decisions.py) by every ``make grade`` and ``make export``,
one row per submission or manual grade (an assignment nobody handed in has no
row, never a 0). Its ``score`` is the autograded score less the late penalty,
then the manual grades (a ``score`` replaces it, an ``adjust`` is added; never
below 0, never above the maximum: a grade past it is capped, its reason says
so and the export names the student, CAPPED; raise ``points.<assignment>`` in the
decisions file to allow more), rounded to 2 decimals; ``reasons`` says why it
differs. A student the grader could not grade (a NOT GRADED line in the report)
has no score in grades.csv or any export, the reason in ``reasons``, "NOT
GRADED" in the term sheet (text, which a spreadsheet's average skips), and is
named when exporting. Every cell that begins with ``=``, ``+``, ``-``, ``@``, a
tab or a carriage return (a formula to a spreadsheet) and is not a number gets a
leading ``'``, and control and bidirectional characters are removed
(roster.spreadsheet_safe), in every CSV written here. Its
``platform_id`` is the student's id on the platform *in that assignment*
(Moodle's participant number differs from one assignment to the next;
participants.csv, written by collect, keeps each). ``<course>/term-grades.csv``
has one row per student, a column per assignment. Each feedback page in
``<course>/feedback/`` gets a box at its top with the grade that goes back to the
platform and how it was made (``stamp_feedback``): the autograded score, the late
penalty, each manual grade or adjustment with its reason, an extension.

``make export`` also writes, in ``<course>/exports/``, for the students of each
platform (roster.csv says which):

* Moodle, ``<assignment>-moodle-grades.csv``: the assignment's *offline grading
  worksheet* (Assignment > View all submissions > Grading action > Upload grading
  worksheet; the assignment needs the feedback type "Offline grading worksheet").
  Moodle's importer (mod/assign/feedback/offline/importgradeslib.php) reads the
  columns ``Identifier`` (``Participant <n>``, n that assignment's participant
  number), ``Grade`` and ``Last modified (grade)``. When collect was given the
  worksheet downloaded from Moodle, it is written back as it came, every column
  kept, with ``Grade`` filled in for each student graded here (so Moodle's check
  that no grade changed there since the download still holds); else these
  columns with ``Full name``, ``Email address``, ``Maximum grade`` and "-" as
  the time (so a grade set in Moodle is never overwritten). Moodle skips, with
  no error, a row whose grade in Moodle is newer than the worksheet's time plus
  60 s (mod/assign/feedback/offline/locallib.php): after an upload, every grade
  there is newer than the worksheet it came from. So each export records the
  worksheet and the grades it wrote (``<assignment>-moodle-export.json``), and an
  export of changed grades from the same worksheet stops (STOPPED, exit 1) until
  the worksheet is downloaded again and given (``make export A=...
  WORKSHEET=...``), or ``--not-uploaded`` says the last file never reached Moodle;
* Moodle, ``<assignment>-moodle-feedback.zip``: each student's feedback page as
  ``<Full name>_<id>_assignfeedback_file_/<assignment>.html``, the layout of
  *Upload multiple feedback files in a zip* (feedback type "Feedback files");
* Canvas, ``canvas-grades.csv``: the Gradebook's import format (Grades > Import):
  ``Student``, ``ID`` (Canvas's user id, the number of the submissions' zip),
  ``SIS User ID``, ``SIS Login ID``, ``Section``, a ``Points Possible`` row, then
  one column per assignment that has a grade, named as ``[canvas]`` in
  deadlines.toml says (``assignment1 = "Assignment 1 (12345)"``, the header of
  Canvas's own export) or by the assignment's name; a student without a grade
  there has an empty cell, which Canvas leaves alone. Canvas takes feedback files
  only one by one (SpeedGrader), so there is no Canvas feedback bundle.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import hashlib
import json
import shutil
import sys
import tomllib
import zipfile
from pathlib import Path

from .decisions import DEADLINES, DECISIONS, Decisions, moved, read_decisions
from .feedback import number, stamp_feedback
from .roster import (
    PARTICIPANT,
    WORKSHEETS,
    Student,
    printable,
    read_participants,
    read_roster,
    read_worksheet,
    spreadsheet_safe,
)

ROOT = Path(__file__).resolve().parents[2]
GRADES = "grades.csv"
TERM = "term-grades.csv"
EXPORTS = "exports"
COLUMNS = [
    "assignment",
    "duedate",
    "timestamp",
    "student_id",
    "last_name",
    "first_name",
    "email",
    "raw_score",
    "late_submission_penalty",
    "score",
    "max_score",
    "name",
    "platform",
    "platform_id",
    "autograded_score",
    "due_for_student",
    "reasons",
]


def _gradebook(course: Path) -> list[dict]:
    """Every submission in nbgrader's gradebook, autograded score and penalty."""
    path = course / "gradebook.db"
    if not path.is_file():
        return []
    from nbgrader.api import Gradebook

    rows = []
    with Gradebook(f"sqlite:///{path}") as gb:
        for assignment in gb.assignments:
            for sub in assignment.submissions:
                penalty = sub.late_submission_penalty
                rows.append(
                    {
                        "assignment": assignment.name,
                        "duedate": assignment.duedate,
                        "timestamp": sub.timestamp,
                        "student_id": sub.student.id,
                        "raw_score": float(sub.score or 0.0),
                        "late_submission_penalty": float(penalty or 0.0),
                        "max_score": float(assignment.max_score or 0.0),
                    }
                )
    return rows


def grade_rows(course: Path, decisions: Decisions) -> list[dict]:
    """grades.csv's rows: the gradebook with the decisions applied, sorted."""
    roster = read_roster(course)
    numbers = read_participants(course)
    rows = {(r["assignment"], r["student_id"]): r for r in _gradebook(course)}
    for g in decisions.grades:  # manual-only assignments (the project)
        key = (g.assignment, g.student)
        if key not in rows:
            rows[key] = {
                "assignment": g.assignment,
                "duedate": None,
                "timestamp": None,
                "student_id": g.student,
                "raw_score": None,
                "late_submission_penalty": None,
                "max_score": decisions.points.get(g.assignment),
            }
    not_graded = _not_graded(course)
    zeroed = _zeroed(course)
    for key in [*not_graded, *zeroed]:
        if key not in rows:  # nbgrader wrote no submission: a row that says why
            rows[key] = {
                "assignment": key[0],
                "duedate": None,
                "timestamp": None,
                "student_id": key[1],
                "raw_score": None,
                "late_submission_penalty": None,
                "max_score": None,
            }
    maxima = {r["assignment"]: r["max_score"] for r in rows.values() if r["max_score"]}
    out = []
    for (assignment, sid), row in sorted(rows.items()):
        why_not = not_graded.get((assignment, sid))
        auto = None
        if row["raw_score"] is not None and why_not is None:
            auto = max(0.0, row["raw_score"] - row["late_submission_penalty"])
        score, reasons, decided = auto, [], []  # decided: for the feedback page
        why_zero = zeroed.get((assignment, sid))
        if why_zero is not None and why_not is None:  # not gradable: 0, never empty
            row = {**row, "raw_score": 0.0, "late_submission_penalty": 0.0}
            auto = score = 0.0
            reasons.append(f"0: {why_zero}")
        warnings = []
        if why_not is not None:
            row = {**row, "raw_score": None, "late_submission_penalty": None}
            reasons.append(f"NOT GRADED (no score): {why_not}")
        for g in decisions.manual(assignment, sid):
            if g.score is not None:
                score = g.score
                reasons.append(f"score {number(g.score)}: {g.reason}")
                decided.append(f"Manual grade {number(g.score)}: {g.reason}")
            elif why_not is not None and score is None:
                reasons.append(f"adjust {g.adjust:+g} not applied (no score)")
            else:
                score = (score or 0.0) + g.adjust
                reasons.append(f"adjust {g.adjust:+g}: {g.reason}")
                decided.append(f"Manual adjustment {g.adjust:+g}: {g.reason}")
        due = decisions.extension(assignment, sid)
        if due is not None:
            reasons.append(f"extension to {due:%Y-%m-%d %H:%M} UTC")
            decided.insert(0, f"Extension: your due date {due:%Y-%m-%d %H:%M} UTC")
        student = roster.get(sid) or Student(sid)
        max_score = decisions.points.get(assignment, row["max_score"])
        max_score = max_score or maxima.get(assignment)
        if score is not None:
            score = max(0.0, score)
            if max_score and score > max_score + 1e-9:
                # the platforms refuse a grade past the maximum (Moodle skips the
                # row as out of range): capped, and the instructor is told
                reasons.append(f"capped at the maximum {number(max_score)} (the decisions gave {number(score)})")
                decided.append(f"Capped at the assignment's maximum of {number(max_score)}")
                warnings.append(
                    f"CAPPED: {_who(sid, student)} in {assignment}: the decisions "
                    f"give {number(score)}, past the maximum {number(max_score)}; "
                    f"{number(max_score)} goes back (raise points.{assignment} in "
                    "the decisions file to allow more)"
                )
                score = max_score
        out.append(
            {
                **row,
                "email": student.email,
                "last_name": "",
                "first_name": "",
                "name": student.name,
                "platform": student.platform,
                "platform_id": numbers.get((assignment, sid), student.platform_id),
                "autograded_score": auto,
                "score": score,
                "max_score": max_score,
                "due_for_student": due or row["duedate"],
                "reasons": "; ".join(reasons),
                "decided": decided,
                "not_graded": why_not,
                "warnings": warnings,
            }
        )
    return out


def _who(sid: str, student: Student) -> str:
    return f"{sid} ({student.name})" if student.name else sid


def _not_graded(course: Path) -> dict[tuple[str, str], str]:
    """{(assignment, student): why}: the students the grader could not grade (the
    ``not_graded`` field of reports/<assignment>/verdicts/<student>.json, which only
    the grader's code sets); a refused folder is no student."""
    from .folders import REFUSED_PREFIX
    from .repair import NOTES, not_graded_reasons

    found = {}
    for path in sorted((course / NOTES).glob("*/*.txt")):
        if path.stem.startswith(REFUSED_PREFIX):
            continue
        why = not_graded_reasons(course, path.parent.name, path.stem)  # the grader's field
        if why:
            found[(path.parent.name, path.stem)] = "; ".join(why)
    return found


def _zeroed(course: Path) -> dict[tuple[str, str], str]:
    """{(assignment, student): why}: the submissions that score 0 without being graded
    (the ``zero`` field of the verdict: not a notebook, metadata nbgrader cannot read)."""
    from .folders import REFUSED_PREFIX
    from .repair import NOTES, zero_reasons

    found = {}
    for path in sorted((course / NOTES).glob("*/*.txt")):
        why = [] if path.stem.startswith(REFUSED_PREFIX) else zero_reasons(course, path.parent.name, path.stem)
        if why:
            found[(path.parent.name, path.stem)] = "; ".join(why)
    return found


def warnings(rows: list[dict]) -> list[str]:
    """What the instructor must hear about grades.csv's rows: grades capped at the
    maximum and the students not graded (no score in any export)."""
    said = [w for r in rows for w in r["warnings"]]
    for r in rows:
        if r["not_graded"] is not None and r["score"] is None:
            who = f"{r['student_id']} ({r['name']})" if r["name"] else r["student_id"]
            said.append(
                f"NOT GRADED (no score): {who} in {r['assignment']}: "
                f"{r['not_graded']}; the exports leave the grade empty"
            )
    return said


def _cell(value) -> str:
    """A CSV cell, safe to open in a spreadsheet (roster.spreadsheet_safe)."""
    if isinstance(value, float):
        return number(value)
    if isinstance(value, dt.datetime):
        return f"{value:%Y-%m-%d %H:%M:%S}"
    return "" if value is None else spreadsheet_safe(str(value))


def _safe(cells: list) -> list[str]:
    return [_cell(c) for c in cells]


def write_grades(course: Path, decisions: Decisions) -> list[dict]:
    """Write ``<course>/grades.csv`` and term-grades.csv (see the module); return
    grades.csv's rows."""
    rows = grade_rows(course, decisions)
    with open(course / GRADES, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(COLUMNS)
        for row in rows:
            writer.writerow([_cell(row.get(c)) for c in COLUMNS])
    assignments = sorted({r["assignment"] for r in rows})
    students: dict[str, dict] = {}
    for r in rows:
        students.setdefault(r["student_id"], {"row": r})[r["assignment"]] = r
    with open(course / TERM, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(_safe(["student_id", "name", "email", "platform", *assignments]))
        for sid, mine in sorted(students.items()):
            first = mine["row"]
            cells = [_term_cell(mine.get(a)) for a in assignments]
            who = [first["name"], first["email"], first["platform"]]
            writer.writerow(_safe([sid, *who]) + cells)
    return rows


def _term_cell(row: dict | None) -> str:
    """A term sheet's cell: the score; NOT GRADED as text, which a spreadsheet's
    AVERAGE skips (never a 0); '' when nothing was handed in."""
    if row is None:
        return ""
    if row["score"] is None and row["not_graded"] is not None:
        return "NOT GRADED"
    return number(row["score"])


def _of(rows: list[dict], platform: str, assignment: str | None = None) -> list:
    wanted = [r for r in rows if r["platform"] == platform]
    return [r for r in wanted if assignment in (None, r["assignment"])]


def write_moodle(rows: list[dict], assignment: str, path: Path, now: dt.datetime):
    """Moodle's grading worksheet of ``assignment`` (see the module); what to say."""
    sheet = path.parent.parent / WORKSHEETS / f"{assignment}.csv"
    if sheet.is_file():
        return _fill_worksheet(rows, assignment, sheet, path)
    header = [
        "Identifier",
        "Full name",
        "Email address",
        "Grade",
        "Maximum grade",
        "Last modified (grade)",
    ]
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        for r in _of(rows, "moodle", assignment):
            writer.writerow(
                _safe(
                    [
                        f"Participant {r['platform_id']}",
                        r["name"],
                        r["email"],
                        number(r["score"]),
                        number(r["max_score"]),
                    ]
                )
                + ["-"]  # never newer than a grade set in Moodle; a lone sign is no formula
            )
    return []


def _fill_worksheet(rows, assignment, sheet: Path, path: Path) -> list[str]:
    """The worksheet downloaded from Moodle, written back with the grades."""
    header, downloaded = read_worksheet(sheet)
    graded = {r["platform_id"]: r for r in _of(rows, "moodle", assignment)}
    said = []
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=header, extrasaction="ignore")
        writer.writeheader()
        for line in downloaded:
            r = graded.pop(line["participant"], None)
            if r is None:
                continue
            theirs = line.get("Maximum grade", "").strip()
            ours = r["max_score"]
            if theirs and ours and abs(float(theirs) - ours) > 1e-9 and not said:
                said.append(
                    f"WARNING: {assignment}'s Maximum grade in Moodle is {theirs}, "
                    f"here {number(ours)}: set Moodle's to {number(ours)} first"
                )
            writer.writerow({**_neutral(line, header), "Grade": number(r["score"])})
    for pid in sorted(graded):
        said.append(f"NOT IN THE WORKSHEET: {PARTICIPANT}{pid} of {sheet}")
    return said


# the worksheet's columns Moodle's importer reads (importgradeslib.php and the
# offline feedback plugin): written back as Moodle wrote them; the others (the
# name, the email, identity fields) are neutralised for a spreadsheet
MOODLE_READS = {"Identifier", "Grade", "Last modified (grade)", "Feedback comments"}


def _neutral(line: dict, header: list[str]) -> dict:
    keep = lambda k: k in MOODLE_READS or k.startswith("Outcome")  # noqa: E731
    return {k: v if keep(k) else _cell(v) for k, v in line.items() if k in header}


def moodle_feedback_zip(course: Path, rows: list[dict], assignment: str, path: Path):
    """Each Moodle student's feedback pages, as Moodle's feedback-files zip."""
    count = 0
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for r in _of(rows, "moodle", assignment):
            pages = course / "feedback" / r["student_id"] / assignment
            # Moodle splits the folder's name at '_': none in the name
            name = printable(r["name"] or "Participant").replace("_", " ").replace("/", " ")
            name = name.replace("\\", " ").replace("\n", " ").replace("\t", " ") or "Participant"
            folder = f"{name}_{r['platform_id']}_assignfeedback_file_"
            for page in sorted(pages.glob("*.html")):
                archive.write(page, f"{folder}/{page.name}")
                count += 1
    return count


def canvas_columns(deadlines: Path) -> dict[str, str]:
    """``[canvas]`` of deadlines.toml: {assignment: Canvas's column header}."""
    if not deadlines.is_file():
        return {}
    config = tomllib.loads(deadlines.read_text(encoding="utf-8"))
    columns = config.get("canvas", {})
    if not all(isinstance(v, str) for v in columns.values()):
        expected = 'assignment = "Canvas column"'
        raise ValueError(f"{deadlines}: [canvas] expects {expected}, got {columns!r}")
    return columns


def write_canvas(rows: list[dict], path: Path, columns: dict[str, str]):
    """Canvas's gradebook import CSV of every graded assignment (see the module)."""
    mine = _of(rows, "canvas")
    assignments = sorted({r["assignment"] for r in mine if r["score"] is not None})
    students: dict[str, dict] = {}
    for r in mine:
        students.setdefault(r["student_id"], {"row": r})[r["assignment"]] = r
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        fixed = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
        writer.writerow(_safe(fixed + [columns.get(a, a) for a in assignments]))
        maxima = {r["assignment"]: r["max_score"] for r in mine}
        points = [number(maxima[a]) for a in assignments]
        writer.writerow(["Points Possible", "", "", "", ""] + points)
        for sid in sorted(students, key=lambda s: (len(s), s)):
            first = students[sid]["row"]
            mine = students[sid]
            cells = [number(mine[a]["score"]) if a in mine else "" for a in assignments]
            writer.writerow(_safe([first["name"], first["platform_id"], "", "", ""]) + cells)


def _sheet_state(course: Path, assignment: str) -> str:
    """The worksheet an export of ``assignment`` is made from: the SHA-256 of the
    one kept in worksheets/, or "none"."""
    sheet = course / WORKSHEETS / f"{assignment}.csv"
    if not sheet.is_file():
        return "none"
    return hashlib.sha256(sheet.read_bytes()).hexdigest()


def moodle_cycle(course: Path, assignment: str, rows: list[dict]) -> tuple:
    """Whether the Moodle worksheet of ``assignment`` may be written now: (the
    record to keep after writing it, or None when it must not be written, and
    the reason).

    Moodle's importer (mod/assign/feedback/offline/locallib.php,
    process_import_grades) skips, with no error, a row whose grade in Moodle was
    modified more than 60 s after the worksheet's "Last modified (grade)". Once a
    worksheet has been uploaded, every grade in it is newer than that worksheet:
    a new grade written into the same worksheet again (a resubmission, an
    extension, a manual grade) would be skipped. So each export records the
    worksheet it was made from and the grades it wrote
    (exports/<assignment>-moodle-export.json), and a later export with other
    grades from the same worksheet stops: download the worksheet again.
    """
    record_path = course / EXPORTS / f"{assignment}-moodle-export.json"
    state = _sheet_state(course, assignment)
    grades = {r["platform_id"]: number(r["score"]) for r in _of(rows, "moodle", assignment)}
    record = {"worksheet": state, "grades": grades}
    if not record_path.is_file():
        return record, ""
    last = json.loads(record_path.read_text(encoding="utf-8"))
    if last.get("worksheet") != state or last.get("grades") == grades:
        return record, ""  # a new worksheet, or the same grades again
    changed = sorted(p for p in grades if last["grades"].get(p) != grades[p])
    shown = ", ".join(f"{PARTICIPANT}{p}" for p in changed[:5])
    more = f" and {len(changed) - 5} more" if len(changed) > 5 else ""
    return None, (
        f"STOPPED: {assignment}'s grades changed since the last export ({shown}{more}), "
        "and the worksheet here is the one that export was made from. If you "
        "uploaded that export to Moodle, Moodle would skip these rows without a "
        "word (a grade it holds is newer than the worksheet). Download the grading "
        "worksheet from Moodle again (View all submissions > Grading action > "
        f"Download grading worksheet) and give it: make export A={assignment} "
        "WORKSHEET=<the new file>. If you never uploaded the last export: "
        f"make export A={assignment} EXPORT_FLAGS=--not-uploaded"
    )


def export(
    course: Path,
    assignments: list[str] | None = None,
    decisions_path: Path = DECISIONS,
    deadlines: Path = DEADLINES,
    worksheet: Path | None = None,
    not_uploaded: bool = False,
) -> list[str]:
    """grades.csv and every platform's files in ``course``/exports; what was written.

    ``worksheet``: Moodle's grading worksheet of the one assignment exported,
    downloaded again, kept for this and later exports; ``not_uploaded``: the
    last Moodle export was never uploaded (see ``moodle_cycle``)."""
    decisions = read_decisions(decisions_path)
    rows = write_grades(course, decisions)
    done = [moved()] if moved() else []
    wanted = assignments or sorted({r["assignment"] for r in rows})
    if worksheet is not None:
        if len(wanted) != 1:
            raise ValueError(f"expected one assignment with a worksheet (A=assignment1), got {wanted}")
        read_worksheet(worksheet)  # says what is wrong with it
        (course / WORKSHEETS).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(worksheet, course / WORKSHEETS / f"{wanted[0]}.csv")
    out = course / EXPORTS
    out.mkdir(exist_ok=True)
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None, microsecond=0)
    done += [f"{course / GRADES}: {len(rows)} grade(s)"] + warnings(rows)
    pages = stamp_feedback(course, [r for r in rows if r["assignment"] in wanted])
    done.append(f"{course / 'feedback'}: the grade returned on {pages} page(s)")
    for assignment in wanted:
        moodle = _of(rows, "moodle", assignment)
        if moodle:
            record, why = moodle_cycle(course, assignment, rows)
            if record is None and not not_uploaded:
                done.append(why)
                continue
            record = record or {}
            path = out / f"{assignment}-moodle-grades.csv"
            said = write_moodle(rows, assignment, path, now)
            record_path = out / f"{assignment}-moodle-export.json"
            record = {**record, "worksheet": _sheet_state(course, assignment)}
            record["grades"] = {r["platform_id"]: number(r["score"]) for r in moodle}
            record_path.write_text(json.dumps(record, indent=1, sort_keys=True))
            done.append(f"{path}: {len(moodle)} grade(s), Moodle's grading worksheet")
            done += said
            path = out / f"{assignment}-moodle-feedback.zip"
            pages = moodle_feedback_zip(course, rows, assignment, path)
            done.append(f"{path}: {pages} feedback page(s)")
    if _of(rows, "canvas"):
        path = out / "canvas-grades.csv"
        write_canvas(
            [r for r in rows if r["assignment"] in wanted],
            path,
            canvas_columns(deadlines),
        )
        done.append(f"{path}: Canvas's gradebook import")
    return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("assignments", nargs="*", help="default: every one graded")
    parser.add_argument("--course", type=Path, default=ROOT / "_grading")
    parser.add_argument("--decisions", type=Path, help="<course>/decisions.toml")
    parser.add_argument("--deadlines", type=Path, default=DEADLINES)
    parser.add_argument(
        "--worksheet",
        type=Path,
        help="Moodle: the assignment's grading worksheet, downloaded again",
    )
    parser.add_argument(
        "--not-uploaded",
        action="store_true",
        help="Moodle: the last export was never uploaded; write over it",
    )
    args = parser.parse_args(argv)
    try:
        course = args.course.resolve()
        done = export(
            course,
            args.assignments,
            args.decisions or course / "decisions.toml",
            args.deadlines,
            args.worksheet,
            args.not_uploaded,
        )
    except (ValueError, OSError) as err:
        print(printable(str(err)), file=sys.stderr)
        return 2
    print(printable("\n".join(done)))
    return 1 if any(line.startswith("STOPPED") for line in done) else 0
