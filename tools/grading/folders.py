"""Every student folder checked before nbgrader sees it.

nbgrader uses a student's id as a glob pattern and as a regular expression, and
follows links: a folder named with ``*`` or ``[`` made other students vanish from the
grades, a newline stopped grading for everyone sorted after it, and a student folder
that was a link to ``../source`` had the instructor's solution graded as that
student's. So before grading, each folder of ``<course>/submitted/`` is checked:

* its name is an id of the safe characters collect writes (``roster.SAFE_ID``);
* it is no link, holds no link at any level, and resolves inside ``submitted/``.

A folder that fails is moved, as it is (links not followed), to
``<course>/refused/<assignment>/`` under a safe name, and its student is named in the
report with the reason; every other student is graded. Nothing is deleted: put the
folder back under a safe name (``make collect`` writes one) and grade again.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from .repair import NOTES, note, verdict_path
from .roster import SAFE_ID

REFUSED = "refused"  # <course>/refused/<assignment>/<safe name>/: refused folders
REFUSED_PREFIX = "refused-"  # the safe names, also of their reports


def _links(folder: Path) -> list[Path]:
    found = []
    for here, dirs, files in os.walk(folder):
        found += [Path(here) / n for n in dirs + files if (Path(here) / n).is_symlink()]
    return found


def problem(submitted: Path, student: str) -> str | None:
    """Why ``submitted/student`` cannot be graded, in words; None when it can."""
    folder = submitted / student
    if not SAFE_ID.fullmatch(student):
        return f"its name {student!r} is not an id of A-Z a-z 0-9 _ - (1 to 64)"
    if folder.is_symlink():
        return f"it is a link (to {os.readlink(folder)!r})"
    if not folder.resolve().is_relative_to(submitted.resolve()):
        return "it resolves outside submitted/"
    links = _links(folder)
    if links:
        inside = ", ".join(str(p.relative_to(folder)) for p in links[:5])
        return f"it holds links ({inside}), which nbgrader would follow"
    return None


def safe_name(student: str) -> str:
    """A name under ``refused/`` for the folder ``student`` (any characters)."""
    digest = hashlib.sha256(student.encode("utf-8", "surrogateescape")).hexdigest()[:10]
    return f"{REFUSED_PREFIX}{digest}"


def refuse_unsafe(course: Path, assignment: str) -> dict[str, str]:
    """Move every folder of ``<course>/submitted/`` that cannot be graded safely out of
    nbgrader's way; {its safe name: what was done}, also written to its report."""
    submitted = course / "submitted"
    done = {}
    if not submitted.is_dir():
        return done
    for entry in sorted(os.listdir(submitted)):
        why = problem(submitted, entry)
        if why is None:
            continue
        name = safe_name(entry)
        target = course / REFUSED / assignment / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists() or target.is_symlink():
            target = target.with_name(f"{name}-{len(os.listdir(target.parent))}")
        os.rename(submitted / entry, target)  # the entry itself: a link stays a link
        text = (
            f"NOT GRADED: the folder {entry!r} was refused: {why}; moved to "
            f"{target.relative_to(course)} (rename it to a safe id and grade again)"
        )
        note(course, assignment, target.name, text)
        done[target.name] = text
    return done


def stale_reports(course: Path, assignment: str) -> list[Path]:
    """Reports of students no longer in ``submitted/``, removed (they stop printing);
    a refused folder's report stays while the folder is in ``refused/``."""
    folder, gone = course / NOTES / assignment, []
    for path in sorted(folder.glob("*.txt")) if folder.is_dir() else []:
        student = path.stem
        if student.startswith(REFUSED_PREFIX):
            kept = course / REFUSED / assignment / student
            here = kept.exists() or kept.is_symlink()
        else:
            here = (course / "submitted" / student / assignment).is_dir()
        if not here:
            path.unlink()
            verdict_path(course, assignment, student).unlink(missing_ok=True)
            gone.append(path)
    return gone
