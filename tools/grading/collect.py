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
* Canvas: ``<name>_<id>_<submission id>_<any name>.ipynb`` (``<name>_LATE_...`` too);
* one folder per student: ``<student>/<any name>.ipynb`` (in one wrapping folder or
  not).

Nothing is lost without a word: every notebook in the zip is written to a
student's folder, or named in a line that starts with SKIPPED (no student in its
path, an older notebook of the same name in the same upload) or IGNORED (a
Jupyter checkpoint); a student whose upload holds no notebook is named (NO
NOTEBOOK). A submission already in
submitted/ is replaced only by a newer one, so collecting the zip of a
resubmission round adds the resubmissions and keeps the rest; collecting never
writes the instructor's decisions (decisions.py), so an extension or a manual
grade outlives any collect. The notebooks keep their names and times;
``make grade`` picks the one that is the assignment (``assignment1 (1).ipynb`` too,
the newest of several) and says which. The times are those the zip stores for
its files, read as UTC (``--utc-offset`` if your platform writes local time).
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import os
import re
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

from .repair import expected_notebooks, match_notebook
from .roster import (
    Student,
    add_worksheet,
    apply_class_list,
    identify,
    read_class_list,
    read_participants,
    read_roster,
    read_worksheet,
    student_id,
    write_participants,
    write_roster,
)

ROOT = Path(__file__).resolve().parents[2]
MOODLE = re.compile(r"^(?P<name>.+?)_(?P<id>\d+)_assignsubmission_file_?$")
MOODLE_FLAT = re.compile(r"^(?P<name>.+?)_(?P<id>\d+)_assignsubmission_file_(.+)")
CANVAS_NAME = r"^(?P<name>[^_/]+)(?:_late)?_(?P<id>\d+)_(?P<sub>\d+)_(?P<file>.+)$"
CANVAS = re.compile(CANVAS_NAME, re.I)
TIME_FORMAT = "%Y-%m-%d %H:%M:%S.%f UTC"  # nbgrader's timestamp.txt


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
        return _platform("moodle", flat), flat[3]
    canvas = CANVAS.match(parts[-1])
    if canvas and len(parts) == 1:
        return _platform("canvas", canvas), canvas["file"]
    if wrapper is not None and parts[0] == wrapper:
        parts = parts[1:]
    if len(parts) >= 2:
        folder = parts[-2] if wrapper is None and len(parts) > 2 else parts[0]
        student = Student(student_id(folder), "folder", folder, folder)
        return student, parts[-1]
    return None


def _platform(platform: str, match: re.Match) -> Student:
    return Student(match["id"], platform, match["id"], match["name"].strip())


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


def collect(
    zip_path: Path,
    assignment: str,
    course: Path,
    utc_offset: float = 0.0,
    class_list: Path | None = None,
    worksheet: Path | None = None,
) -> list:
    """Unpack ``zip_path`` into ``course``/submitted; what was done, a line each.

    ``class_list``: the instructor's roster CSV (id, name, email), read into
    ``course``/roster.csv with the students of the zip. ``worksheet``: Moodle's
    grading worksheet of ``assignment`` (kept in ``course``/worksheets/ for the
    export); with it or ``class_list`` a Moodle student is keyed by the email.
    """
    if not zipfile.is_zipfile(zip_path):
        raise ValueError(f"expected a zip file of submissions, got {zip_path}")
    expected = expected_notebooks(course, assignment)
    if len(expected) != 1:
        found, folder = expected or "none", course / "release" / assignment
        hint = "run make student first"
        raise ValueError(f"expected one notebook in {folder}, found {found}: {hint}")
    rows = read_class_list(class_list) if class_list else []
    sheet = read_worksheet(worksheet) if worksheet else ([], [])
    name = expected[0]
    roster = read_roster(course)
    students: dict[tuple, Student] = {}
    # {student key: {file name: (time, entry)}}
    uploads: dict[tuple, dict[str, tuple[dt.datetime, str]]] = {}
    other_files: dict[tuple, list[str]] = {}
    done, skipped = [], []
    with zipfile.ZipFile(zip_path) as archive:
        infos = [i for i in archive.infolist() if not i.is_dir()]
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
                continue
            student, filename = who
            key = (student.platform, student.platform_id)
            students.setdefault(key, student)
            if not notebook:
                other_files.setdefault(key, []).append(filename)
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
        empty = sorted(set(other_files) - set(uploads), key=lambda k: students[k].id)
        for key in empty:
            student = students[key]
            found = ", ".join(sorted(set(other_files[key])))
            done.append(f"NO NOTEBOOK from {_show(student)}: the upload holds {found}")
        for key, files in sorted(uploads.items(), key=lambda kv: students[kv[0]].id):
            student = students[key]
            done.append(_store(archive, course, assignment, name, student, files))
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


def _show(student: Student) -> str:
    return f"{student.id} ({student.name})" if student.name else student.id


def _store(archive, course, assignment, name, student, files) -> str:
    """One student's notebooks into submitted/, unless what is there is newer."""
    folder = course / "submitted" / student.id / assignment
    old = _read_stamp(folder) if folder.is_dir() else None
    with tempfile.TemporaryDirectory() as tmp:
        staged = Path(tmp) / student.id
        staged.mkdir()
        for filename, (when, entry) in files.items():
            target = staged / filename
            with archive.open(entry) as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst)
            seconds = when.replace(tzinfo=dt.UTC).timestamp()
            os.utime(target, (seconds, seconds))
        path, _ = match_notebook(staged, name)
        times = [w for w, _ in files.values()]
        when = files[path.name][0] if path else max(times)
        if old is not None and old >= when:
            return f"{_show(student)}: kept the submission of {old:%Y-%m-%d %H:%M}"
        (staged / "timestamp.txt").write_text(f"{when.strftime(TIME_FORMAT)}\n")
        if folder.exists():
            shutil.rmtree(folder)
        folder.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(staged, folder)
    what = "resubmission" if old is not None else "submission"
    names = ", ".join(sorted(files))
    return f"{_show(student)}: {what} of {when:%Y-%m-%d %H:%M} UTC ({names})"


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
        )
    except (ValueError, OSError) as err:
        print(err, file=sys.stderr)
        return 2
    print("\n".join(done) or "no submission found in the zip")
    print(f"next: make grade A={args.assignment}")
    bad = ("SKIPPED", "NO NOTEBOOK")
    return 1 if any(line.startswith(bad) for line in done) else 0


if __name__ == "__main__":
    sys.exit(main())
