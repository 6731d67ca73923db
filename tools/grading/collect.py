"""Collect a course platform's zip of submissions into nbgrader's submitted/ folder.

    python tools/collect.py downloads.zip assignment1   # `make collect ZIP=... A=...`

A platform (Moodle, Canvas, a shared drive) hands the instructor one zip of every
student's upload. This writes each student's notebooks to
``<course>/submitted/<id>/<assignment>/`` with a ``timestamp.txt`` (the
submission's time, which nbgrader and the late policy in
book/autograder/deadlines.toml read), ready for ``make grade``, and each student
to ``<course>/roster.csv`` (roster.py: the id is the platform's, the name kept for
show; a Moodle student's id comes from the email when the assignment's grading
worksheet, ``--worksheet``, or a roster, ``--roster``, gives it, so that it is the
same in every assignment). Recognized layouts:

* Moodle: ``<Full Name>_<id>_assignsubmission_file_/<any name>.ipynb``, or
  ``<Full Name>_<id>_assignsubmission_file_<any name>.ipynb`` without folders;
* Canvas: ``<name>[_LATE]_<user id>_<file id>_<any name>.ipynb``, where ``<name>``
  is the student's sortable name lower-cased with everything but letters, digits
  and ``_`` removed (``smithjohn``, ``o_brienpat``, ``李雷``), or, with anonymous
  grading, ``[LATE_]anon_<anonymous id>_<file id>_<any name>.ipynb``
  (canvas-lms lib/content_zipper.rb: ``get_filename``, ``add_upload_submission``);
* one folder per student: ``<student>/<any name>.ipynb`` (in one wrapping folder or
  not).

Nothing is lost without a word: every notebook in the zip is written to a
student's folder, or named in a line that starts with SKIPPED (no student in its
path, an older notebook of the same name in the same upload), IGNORED (a
Jupyter checkpoint) or REFUSED (larger than ``--max-notebook-mib`` or past the
submission's ``--max-submission-mib``: never written in full, whatever the zip
says its size is); a student whose upload holds no notebook (a PDF, Moodle's or
Canvas's online text) is named (NO NOTEBOOK) and not made a student. The exit
status is 0 when every notebook landed or was named for a reason of its own, 1
when one belongs to no student. A submission already in
submitted/ is replaced only by a newer one, so collecting the zip of a
resubmission round adds the resubmissions and keeps the rest; collecting never
writes the instructor's decisions (decisions.py), so an extension or a manual
grade outlives any collect. The notebooks keep their names and times;
``make grade`` picks the one that is the assignment (``assignment1 (1).ipynb`` too,
the newest of several) and says which.

Submission times, and so lateness, and collect says where they came from:

* ``--times submissions.csv``: the instructor's list of submission times, a CSV
  with a ``user_id`` (or ``id``, or ``anonymous_id``) column and a
  ``submitted_at`` column (ISO 8601, such as Canvas's API gives:
  ``2027-03-04T21:00:00Z``); it wins over everything else;
* Canvas without it: Canvas's zip carries no submission time. rubyzip, which
  builds it, stamps every entry with the moment the zip was built
  (``Zip::Entry``'s ``time: ::Zip::DOSTime.now``; content_zipper.rb gives no
  time), so those times are never read. A submission Canvas marked ``LATE`` is
  stamped just past the due date and its grace (deadlines.toml), which costs the
  least late penalty, one started day, and collect says so; the others are
  stamped at the due date (on time);
* otherwise (Moodle, a folder per student): the times the zip stores for its
  files, read as UTC (``--utc-offset`` if your platform writes local time).
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import hashlib
import os
import re
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

from .archive import canvas_match, readable_zip, stored_name
from .repair import expected_notebooks, match_notebook
from .roster import (
    Student,
    add_worksheet,
    apply_class_list,
    identify,
    printable,
    read_class_list,
    read_participants,
    read_roster,
    read_worksheet,
    student_id,
    write_participants,
    write_roster,
)

ROOT = Path(__file__).resolve().parents[2]
# Moodle's "Download all submissions": <Full name>_<participant>_assignsubmission_
# <plugin>_ (file: the uploads; onlinetext: onlinetext.html, no student's notebook)
MOODLE = re.compile(r"^(?P<name>.+?)_(?P<id>\d+)_assignsubmission_(?P<plugin>[a-z]+)_?$")
MOODLE_FLAT = re.compile(r"^(?P<name>.+?)_(?P<id>\d+)_assignsubmission_(?P<plugin>[a-z]+)_(.+)")
# canvas-lms lib/content_zipper.rb: get_filename joins [name, "LATE" if late, id]
# with "_" (id: the user id, or "anon_<anonymous id>" with anonymous grading), then
# add_upload_submission appends "_<attachment id>_<display name>"; online text is
# "<that>_text.html" (add_text_or_url). The name is the sortable name lower-cased
# with every non-word character removed: it may hold "_" but never "_<digits>_".
CANVAS_TEXT = re.compile(
    r"^(?:(?P<name>\w+?)_)??(?P<late>LATE_)?(?P<id>\d+|anon_[A-Za-z0-9]+)_"
    r"(?P<file>text|link)\.html$"
)
TIME_FORMAT = "%Y-%m-%d %H:%M:%S.%f UTC"  # nbgrader's timestamp.txt
MAX_NOTEBOOK_MIB = 20  # a notebook of the assignment is well under 1 MiB
MAX_SUBMISSION_MIB = 50  # all of one student's notebooks together


def _ignored(parts: tuple[str, ...]) -> bool:
    """A file of the system or of Jupyter, not of the student."""
    hidden = any(p.startswith(".") for p in parts)
    return not parts or parts[0] == "__MACOSX" or hidden


def uploader(entry: str, wrapper: str | None = None) -> tuple[Student, str] | None:
    """(the student, the file's name) of any zip entry, or None if no student is
    recognized in its path; ``wrapper``: a folder around the whole zip."""
    parts = PurePosixPath(entry).parts
    if _ignored(parts):
        return None
    for folder in parts[:-1]:
        moodle = MOODLE.match(folder)
        if moodle:
            return _platform("moodle", moodle), parts[-1]
    flat = MOODLE_FLAT.match(parts[-1])  # Moodle without "download in folders"
    if flat:
        return _platform("moodle", flat), flat[4]
    canvas = canvas_match(parts[-1]) or CANVAS_TEXT.match(parts[-1])
    if canvas and len(parts) == 1:
        file = canvas["file"]
        return _platform("canvas", canvas), file if "." in file else f"{file}.html"
    if wrapper is not None and parts[0] == wrapper:
        parts = parts[1:]
    if len(parts) >= 2:
        folder = parts[-2] if wrapper is None and len(parts) > 2 else parts[0]
        student = Student(student_id(folder), "folder", folder, folder)
        return student, parts[-1]
    return None


def _platform(platform: str, match) -> Student:
    """The student a platform's entry names; Canvas's lower-cased sortable name is
    kept as it is (a roster gives the display name), an anonymous one has none."""
    name = (match["name"] or "").strip()
    return Student(match["id"], platform, match["id"], name)


def late_marker(entry: str) -> bool:
    """Whether Canvas marked this entry's submission late (``_LATE_`` in its name)."""
    found = canvas_match(PurePosixPath(entry).name)
    return bool(found and found["late"])


def read_times(path: Path) -> dict[str, dt.datetime]:
    """The instructor's submission times: {user id or anonymous id: UTC time} from a
    CSV with ``user_id`` (or ``id``, ``anonymous_id``) and ``submitted_at``
    (ISO 8601; without a zone, UTC); an empty time is no submission."""
    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.DictReader(f)
        header = [(h or "").strip().lower() for h in reader.fieldnames or []]
        keys = [k for k in ("user_id", "id", "anonymous_id") if k in header]
        if not keys or "submitted_at" not in header:
            raise ValueError(
                f"expected a CSV of submission times with the columns user_id (or "
                f"id, anonymous_id) and submitted_at, got {reader.fieldnames} in {path}"
            )
        times = {}
        for n, raw in enumerate(reader, 2):
            row = {(k or "").strip().lower(): (v or "").strip() for k, v in raw.items()}
            text = row["submitted_at"]
            if not text:
                continue
            try:
                when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
            except ValueError:
                expected = "an ISO 8601 time such as 2027-03-04T21:00:00Z"
                where = f"{path}, line {n}"
                raise ValueError(f"{where}: expected {expected}, got {text!r}") from None
            if when.tzinfo is not None:
                when = when.astimezone(dt.UTC).replace(tzinfo=None)
            for key in keys:
                if row.get(key):
                    ident = row[key]
                    if key == "anonymous_id" and not ident.startswith("anon_"):
                        ident = f"anon_{ident}"
                    times[ident] = when
    return times


def owner(entry: str) -> tuple[str, str] | None:
    """(student id, file name) of a notebook in a zip, or None if it is not a
    submission (not a notebook, a checkpoint, no student recognized)."""
    parts = PurePosixPath(entry).parts
    if not parts or not parts[-1].endswith(".ipynb") or ".ipynb_checkpoints" in parts:
        return None
    found = uploader(entry)
    return (found[0].id, found[1]) if found else None


def _wrapper(entries: list[str]) -> str | None:
    """The one folder the whole zip sits in (``export/<student>/...``), if any."""
    firsts = {PurePosixPath(e).parts[0] for e in entries}
    deep = all(len(PurePosixPath(e).parts) >= 3 for e in entries)
    return firsts.pop() if len(firsts) == 1 and deep else None


def _read_stamp(folder: Path) -> dt.datetime | None:
    try:
        text = (folder / "timestamp.txt").read_text().strip()
        return dt.datetime.strptime(text, TIME_FORMAT)
    except (OSError, ValueError):
        return None


def _who(student: Student) -> tuple[str, str]:
    """What makes a student one person: a Moodle student's email (the participant
    number is per assignment), else the platform's id."""
    if student.platform == "moodle" and student.email:
        return ("email", student.email.lower())
    return (student.platform, student.platform_id)


def _unique_ids(found: dict[tuple, Student], roster: dict[str, Student]) -> None:
    """Give a new id to a student whose id is another's (two folders that
    transliterate alike, ``Olafur`` and ``Ólafur``): ``<id>-<6 hex digits>``."""
    taken = {s.id: _who(s) for s in roster.values()}
    for key, student in sorted(found.items()):
        if taken.setdefault(student.id, _who(student)) != _who(student):
            digest = hashlib.sha256("/".join(key).encode()).hexdigest()[:6]
            student.id = f"{student.id[:57]}-{digest}"
            taken[student.id] = _who(student)


def _limits(max_notebook_mib: float, max_submission_mib: float) -> tuple[int, int]:
    if not (max_notebook_mib > 0 and max_submission_mib > 0):
        got = f"{max_notebook_mib} and {max_submission_mib}"
        raise ValueError(f"expected positive MiB limits, got {got}")
    return int(max_notebook_mib * 2**20), int(max_submission_mib * 2**20)


def collect(
    zip_path: Path,
    assignment: str,
    course: Path,
    utc_offset: float = 0.0,
    class_list: Path | None = None,
    worksheet: Path | None = None,
    times: Path | None = None,
    deadlines: Path | None = None,
    max_notebook_mib: float = MAX_NOTEBOOK_MIB,
    max_submission_mib: float = MAX_SUBMISSION_MIB,
) -> list:
    """Unpack ``zip_path`` into ``course``/submitted; what was done, a line each.

    ``class_list``: the instructor's roster CSV (id, name, email), read into
    ``course``/roster.csv with the students of the zip. ``worksheet``: Moodle's
    grading worksheet of ``assignment`` (kept in ``course``/worksheets/ for the
    export); with it or ``class_list`` a Moodle student is keyed by the email.
    ``times``: submission times (``read_times``); ``deadlines``: the due date and
    grace for Canvas's LATE marker (default book/autograder/deadlines.toml).
    """
    if not zipfile.is_zipfile(zip_path):
        raise ValueError(f"expected a zip file of submissions, got {zip_path}")
    per_notebook, per_submission = _limits(max_notebook_mib, max_submission_mib)
    expected = expected_notebooks(course, assignment)
    if len(expected) != 1:
        found, folder = expected or "none", course / "release" / assignment
        hint = "run make student first"
        raise ValueError(f"expected one notebook in {folder}, found {found}: {hint}")
    rows = read_class_list(class_list) if class_list else []
    sheet = read_worksheet(worksheet) if worksheet else ([], [])
    given = read_times(times) if times else {}
    name = expected[0]
    roster = read_roster(course)
    students: dict[tuple, Student] = {}
    # {student key: {file name: (time, entry)}}
    uploads: dict[tuple, dict[str, tuple[dt.datetime, str]]] = {}
    other_files: dict[tuple, list[str]] = {}
    late: set[tuple] = set()  # Canvas's LATE marker
    done, skipped = [], []
    scratch = tempfile.TemporaryDirectory(prefix="aiayn-collect-")
    zip_path, bad_names = readable_zip(zip_path, Path(scratch.name))
    with scratch, zipfile.ZipFile(zip_path) as archive:
        infos = [i for i in archive.infolist() if not i.is_dir() and i.filename not in bad_names]
        for bad in bad_names:
            why = "its name is not valid UTF-8 (as the zip says it is)"
            skipped.append(f"SKIPPED {printable(bad, escape=True)}: {why}")
        entries = [i.filename for i in infos]
        wrapper = _wrapper([e for e in entries if not _ignored(PurePosixPath(e).parts)])
        for info in infos:
            parts = PurePosixPath(info.filename).parts
            notebook = info.filename.endswith(".ipynb")
            if notebook and ".ipynb_checkpoints" in parts:
                skipped.append(f"IGNORED {info.filename}: a Jupyter checkpoint")
                continue
            who = uploader(info.filename, wrapper)
            if who is None:
                if notebook:
                    why = "no student recognized in its path"
                    skipped.append(f"SKIPPED {info.filename}: {why}")
                elif not _ignored(parts):
                    skipped.append(f"NOT A NOTEBOOK {info.filename}: left out")
                continue
            student, filename = who
            key = (student.platform, student.platform_id)
            students.setdefault(key, student)
            if late_marker(info.filename):
                late.add(key)
            if not notebook:
                other_files.setdefault(key, []).append(filename)
                continue
            if info.file_size > per_notebook:
                skipped.append(_refused(info.filename, info.file_size, per_notebook))
                continue
            when = dt.datetime(*info.date_time) - dt.timedelta(hours=utc_offset)
            files = uploads.setdefault(key, {})
            filename = Path(filename).name
            if filename in files:
                older = min((when, info.filename), files[filename])
                why = f"an older notebook of the same name in {student.id}'s upload"
                skipped.append(f"SKIPPED {older[1]}: {why}")
                if when <= files[filename][0]:
                    continue
            files[filename] = (when, info.filename)
        source, said = _times(students, uploads, late, given, assignment, deadlines)
        done += said
        everyone = dict(students)  # a student without a notebook is named only
        students = {k: v for k, v in students.items() if k in uploads}
        warnings = identify(students, roster, sheet[1], rows)
        _unique_ids(students, roster)
        for student in sorted(students.values(), key=lambda s: s.id):
            known = roster.get(student.id)
            if known is None or not known.name:
                roster[student.id] = student
            else:  # keep the email and a name an instructor's roster gave
                known.platform, known.platform_id = (
                    student.platform,
                    student.platform_id,
                )
                known.email = known.email or student.email
        for key in sorted(set(other_files) - set(uploads)):
            found = ", ".join(sorted(set(other_files[key])))
            who = _show(everyone[key])
            done.append(f"NO NOTEBOOK from {who}: the upload holds {found}")
        for key, files in sorted(uploads.items(), key=lambda kv: students[kv[0]].id):
            student = students[key]
            limits = (per_notebook, per_submission, source[key])
            line, refused = _store(archive, course, assignment, name, student, files, limits)
            done.append(line)
            skipped += refused
    if rows:
        missing = apply_class_list(roster, rows)
        if missing:
            done.append(f"roster: no submission yet from {', '.join(missing)}")
    numbers = read_participants(course)
    for student in students.values():
        if student.platform in ("moodle", "canvas"):
            numbers[(assignment, student.id)] = student.platform_id
        old = course / "submitted" / student.platform_id / assignment
        if student.platform == "moodle" and student.id != student.platform_id:
            if old.is_dir():  # collected before without a worksheet or roster
                done.append(
                    f"ALSO {old.relative_to(course)}: {_show(student)} collected "
                    "earlier by participant number; delete that folder"
                )
    if worksheet:
        done += add_worksheet(course, assignment, worksheet, sheet[1], roster, numbers)
    write_participants(course, numbers)
    write_roster(course, roster)
    return done + skipped + warnings


def _refused(entry: str, size: int, limit: int, what: str = "a notebook") -> str:
    return (
        f"REFUSED {entry}: {size / 2**20:.1f} MiB or more, past the limit of "
        f"{limit / 2**20:g} MiB for {what} (--max-notebook-mib, "
        "--max-submission-mib); not written"
    )


def _times(students, uploads, late, given, assignment, deadlines) -> tuple:
    """Each student's submission times by where they come from: {key: source},
    and the lines that say it. Changes ``uploads``' times in place."""
    from .decisions import DEADLINES, read_deadlines

    source, said = {}, []
    canvas = [k for k in uploads if k[0] == "canvas"]
    due = grace = None
    if canvas and any(k[1] not in given for k in canvas):
        due, policy = read_deadlines(deadlines or DEADLINES, assignment)
        grace = dt.timedelta(minutes=float(policy.get("grace_minutes", 0.0)))
    marked, unknown = [], []
    for key, files in uploads.items():
        if key[1] in given:
            when = given[key[1]]
            for filename, (_, entry) in files.items():
                files[filename] = (when, entry)
            source[key] = "given"
        elif key[0] == "canvas":
            if due is None:
                when, source[key] = None, "none"
                unknown.append(key)
            elif key in late:
                when, source[key] = due + grace + dt.timedelta(seconds=1), "marker"
                marked.append(key)
            else:
                when, source[key] = due, "marker"
            for filename, (_, entry) in files.items():
                files[filename] = (when, entry)
        else:
            source[key] = "zip"
    names = lambda keys: ", ".join(sorted(_show(students[k]) for k in keys))  # noqa: E731
    if given:
        said.append(
            f"times: {sum(v == 'given' for v in source.values())} submission(s) "
            "timed by the submission times given (--times)"
        )
    if any(v == "zip" for v in source.values()):
        said.append("times: the times the zip stores for its files (read as UTC)")
    if any(v in ("marker", "none") for v in source.values()):
        said.append(
            "times: Canvas's zip carries no submission time (every entry holds the "
            "moment the zip was built), so lateness comes from Canvas's LATE marker"
            + ("" if due is not None else ", and there is no due date here")
            + "; give Canvas's submission times (--times, TIMES=) for the exact ones"
        )
    if marked:
        said.append(
            f"LATE (Canvas's marker, exact time unknown): {names(marked)}: stamped "
            f"just past the due date and grace, {due + grace:%Y-%m-%d %H:%M} UTC, the "
            "least late penalty (one started day)"
        )
    if unknown:
        said.append(f"NO TIME (no due date for {assignment}): {names(unknown)}")
    return source, said


def _show(student: Student) -> str:
    return f"{student.id} ({student.name})" if student.name else student.id


def _copy(src, dst, budget: int) -> int:
    """Copy at most ``budget`` bytes; the count, or -1 if there was more."""
    written = 0
    while True:
        chunk = src.read(min(1 << 20, budget - written + 1))
        if not chunk:
            return written
        written += len(chunk)
        if written > budget:
            return -1
        dst.write(chunk)


def _store(archive, course, assignment, name, student, files, limits) -> tuple:
    """One student's notebooks into submitted/, unless what is there is newer; the
    line to print and the entries refused (past a size limit)."""
    per_notebook, per_submission, source = limits
    folder = course / "submitted" / student.id / assignment
    old = _read_stamp(folder) if folder.is_dir() else None
    refused = []
    with tempfile.TemporaryDirectory() as tmp:
        staged = Path(tmp) / student.id
        staged.mkdir()
        left = per_submission
        # the assignment's own notebook first, so that extras cannot crowd it out
        order = sorted(files.items(), key=lambda kv: kv[0] != name)
        for filename, (when, entry) in order:
            target = staged / stored_name(filename)
            budget = min(per_notebook, left)
            try:
                with archive.open(entry) as src, open(target, "wb") as dst:
                    size = _copy(src, dst, budget)
            except (OSError, zipfile.BadZipFile, RuntimeError, ValueError, EOFError) as err:
                target.unlink(missing_ok=True)  # this file only: the others go on
                refused.append(f"SKIPPED {printable(entry, escape=True)}: {type(err).__name__}: {err}"[:400])
                continue
            if size < 0:
                target.unlink()
                if budget < per_notebook:
                    what = "all of a submission's notebooks"
                    line = _refused(entry, budget, per_submission, what)
                else:
                    line = _refused(entry, budget, per_notebook)
                refused.append(line)
                continue
            left -= size
            if when is not None:
                seconds = when.replace(tzinfo=dt.UTC).timestamp()
                os.utime(target, (seconds, seconds))
        kept = {stored_name(f): v for f, v in files.items() if (staged / stored_name(f)).is_file()}
        if not kept:
            return f"NO NOTEBOOK from {_show(student)}: every one refused", refused
        path, _ = match_notebook(staged, name)
        times = [w for w, _ in kept.values() if w is not None]
        when = kept[path.name][0] if path else max(times, default=None)
        # Canvas's zip holds each student's latest submission: without real times
        # it replaces what is there
        real = source in ("zip", "given") and when is not None
        if real and old is not None and old >= when:
            line = f"{_show(student)}: kept the submission of {old:%Y-%m-%d %H:%M}"
            return line, refused
        if when is not None:
            (staged / "timestamp.txt").write_text(f"{when.strftime(TIME_FORMAT)}\n")
        if folder.exists():
            shutil.rmtree(folder)
        folder.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(staged, folder)
    what = "resubmission" if old is not None else "submission"
    names = ", ".join(sorted(kept))
    if when is None or source == "marker":
        return f"{_show(student)}: {what} ({names})", refused
    return f"{_show(student)}: {what} of {when:%Y-%m-%d %H:%M} UTC ({names})", refused


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("zip", type=Path, help="the platform's zip of submissions")
    parser.add_argument("assignment", help="the assignment's name, e.g. assignment1")
    parser.add_argument(
        "--course",
        type=Path,
        default=ROOT / "_grading",
        help="nbgrader course folder (_grading)",
    )
    parser.add_argument(
        "--utc-offset",
        type=float,
        default=0.0,
        help="hours the zip's times are ahead of UTC (0)",
    )
    parser.add_argument(
        "--roster",
        type=Path,
        help="your class list, a CSV with the columns id, name, email",
    )
    parser.add_argument(
        "--worksheet",
        type=Path,
        help="Moodle: the assignment's grading worksheet CSV, as downloaded",
    )
    parser.add_argument(
        "--times",
        type=Path,
        help="submission times, a CSV with user_id and submitted_at (Canvas)",
    )
    parser.add_argument(
        "--deadlines",
        type=Path,
        help="due dates, for Canvas's LATE marker (book/autograder/deadlines.toml)",
    )
    parser.add_argument(
        "--max-notebook-mib",
        type=float,
        default=MAX_NOTEBOOK_MIB,
        help=f"largest notebook written, in MiB ({MAX_NOTEBOOK_MIB})",
    )
    parser.add_argument(
        "--max-submission-mib",
        type=float,
        default=MAX_SUBMISSION_MIB,
        help=f"all of a student's notebooks, in MiB ({MAX_SUBMISSION_MIB})",
    )
    args = parser.parse_args(argv)
    try:
        course = args.course.resolve()
        done = collect(
            args.zip,
            args.assignment,
            course,
            args.utc_offset,
            args.roster,
            args.worksheet,
            args.times,
            args.deadlines,
            args.max_notebook_mib,
            args.max_submission_mib,
        )
    except (ValueError, OSError) as err:
        print(printable(str(err)), file=sys.stderr)
        return 2
    print(printable("\n".join(done) or "no submission found in the zip"))
    print(f"next: make grade A={args.assignment}")
    # every notebook landed or was named for a reason of its own; 1: one that
    # belongs to no student
    lost = [line for line in done if line.startswith("SKIPPED") and "no student" in line]
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
