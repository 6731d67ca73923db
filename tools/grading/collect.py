"""Collect a course platform's zip of submissions into nbgrader's submitted/ folder.

    python tools/collect.py downloads.zip assignment1   # `make collect ZIP=... A=...`

A platform (Moodle, Canvas, a shared drive) hands the instructor one zip of every
student's upload. This writes each student's notebooks to
``_grading/submitted/<student>/<assignment>/`` with a
``timestamp.txt`` (the submission's time, which nbgrader and the late policy in
book/autograder/deadlines.toml read), ready for ``make grade``. Recognized layouts:

* Moodle: ``<Full Name>_<id>_assignsubmission_file_/<any name>.ipynb``, or
  ``<Full Name>_<id>_assignsubmission_file_<any name>.ipynb`` without folders;
* Canvas: ``<name>_<id>_<submission id>_<any name>.ipynb`` (``<name>_LATE_...`` too);
* one folder per student: ``<student>/<any name>.ipynb``.

A submission already in submitted/ is replaced only by a newer one, so collecting
the zip of a resubmission round adds the resubmissions and keeps the rest. The
notebooks keep their names and times; tools/grade.py picks the one that is the
assignment (``assignment1 (1).ipynb`` too, the newest of several) and says which.
The times are those the zip stores for its files, read as UTC (``--utc-offset`` if
your platform writes local time).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

from .repair import expected_notebooks, match_notebook
from .roster import student_id

ROOT = Path(__file__).resolve().parents[2]
MOODLE = re.compile(r"^(?P<name>.+?)_(?P<id>\d+)_assignsubmission_file_?$")
MOODLE_FLAT = re.compile(r"^(?P<name>.+?)_(?P<id>\d+)_assignsubmission_file_(.+)")
CANVAS_NAME = r"^(?P<name>[^_/]+)(?:_late)?_(?P<id>\d+)_(?P<sub>\d+)_(?P<file>.+)$"
CANVAS = re.compile(CANVAS_NAME, re.I)
TIME_FORMAT = "%Y-%m-%d %H:%M:%S.%f UTC"  # nbgrader's timestamp.txt


def owner(entry: str) -> tuple[str, str] | None:
    """(student id, file name) of a zip entry, or None if it is not a submission."""
    parts = PurePosixPath(entry).parts
    if not parts or parts[0] == "__MACOSX" or parts[-1].startswith("."):
        return None
    if not parts[-1].endswith(".ipynb") or ".ipynb_checkpoints" in parts:
        return None
    for folder in parts[:-1]:
        moodle = MOODLE.match(folder)
        if moodle:
            return student_id(moodle["name"]), parts[-1]
    flat = MOODLE_FLAT.match(parts[-1])  # Moodle without "download in folders"
    if flat:
        return student_id(flat["name"]), flat[3]
    canvas = CANVAS.match(parts[-1])
    if canvas and len(parts) == 1:
        return student_id(canvas["name"]), canvas["file"]
    if len(parts) >= 2:
        return student_id(parts[-2] if len(parts) > 2 else parts[0]), parts[-1]
    return None


def _read_stamp(folder: Path) -> dt.datetime | None:
    try:
        text = (folder / "timestamp.txt").read_text().strip()
        return dt.datetime.strptime(text, TIME_FORMAT)
    except (OSError, ValueError):
        return None


def collect(zip_path: Path, assignment: str, course: Path, utc_offset=0.0) -> list:
    """Unpack ``zip_path`` into ``course``/submitted; what was done, a line each."""
    if not zipfile.is_zipfile(zip_path):
        raise ValueError(f"expected a zip file of submissions, got {zip_path}")
    expected = expected_notebooks(course, assignment)
    if len(expected) != 1:
        found, folder = expected or "none", course / "release" / assignment
        hint = "run make student first"
        raise ValueError(f"expected one notebook in {folder}, found {found}: {hint}")
    name = expected[0]
    uploads: dict[str, dict[str, tuple[dt.datetime, str]]] = {}
    done, skipped = [], []
    with zipfile.ZipFile(zip_path) as archive:
        for info in archive.infolist():
            if info.is_dir():
                continue
            who = owner(info.filename)
            if who is None:
                if info.filename.endswith(".ipynb"):
                    skipped.append(info.filename)
                continue
            when = dt.datetime(*info.date_time) - dt.timedelta(hours=utc_offset)
            student, filename = who
            files = uploads.setdefault(student, {})
            if filename not in files or when > files[filename][0]:
                files[filename] = (when, info.filename)
        for student, files in sorted(uploads.items()):
            folder = course / "submitted" / student / assignment
            old = _read_stamp(folder) if folder.is_dir() else None
            with tempfile.TemporaryDirectory() as tmp:
                staged = Path(tmp) / student
                staged.mkdir()
                for filename, (when, entry) in files.items():
                    target = staged / Path(filename).name
                    with archive.open(entry) as src, open(target, "wb") as dst:
                        shutil.copyfileobj(src, dst)
                    seconds = when.replace(tzinfo=dt.UTC).timestamp()
                    os.utime(target, (seconds, seconds))
                path, _ = match_notebook(staged, name)
                times = [w for w, _ in files.values()]
                when = files[path.name][0] if path else max(times)
                if old is not None and old >= when:
                    kept = f"{student}: kept the submission of {old:%Y-%m-%d %H:%M}"
                    done.append(kept)
                    continue
                stamp = f"{when.strftime(TIME_FORMAT)}\n"
                (staged / "timestamp.txt").write_text(stamp)
                if folder.exists():
                    shutil.rmtree(folder)
                folder.parent.mkdir(parents=True, exist_ok=True)
                shutil.copytree(staged, folder)
            what = "resubmission" if old is not None else "submission"
            names = ", ".join(sorted(files))
            done.append(f"{student}: {what} of {when:%Y-%m-%d %H:%M} UTC ({names})")
    for entry in skipped:
        done.append(f"SKIPPED {entry}: no student recognized in its path")
    return done


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
    args = parser.parse_args(argv)
    try:
        course = args.course.resolve()
        done = collect(args.zip, args.assignment, course, args.utc_offset)
    except (ValueError, OSError) as err:
        print(err, file=sys.stderr)
        return 2
    print("\n".join(done) or "no submission found in the zip")
    print(f"next: make grade A={args.assignment}")
    return 1 if any(line.startswith("SKIPPED") for line in done) else 0


if __name__ == "__main__":
    sys.exit(main())
