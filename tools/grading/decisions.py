"""Due dates, the late policy and the instructor's decisions, each in one file.

book/autograder/deadlines.toml (``--deadlines``) holds the due dates and the late
policy: the due date goes into the gradebook and ``LatePolicy`` takes off the late
penalty. ``<course>/decisions.toml`` (``_grading/decisions.toml``, ignored by git;
``--decisions``) holds what the instructor decides for one student, private to
the course and never in the repository (book/autograder/decisions.example.toml is
the tracked example; ``published_entries`` finds a decisions file with entries
where the release would publish it): an extension (a new due date) and manual
grades (a score that replaces the autograder's, or points added or taken off, each
with its reason). Grading reads both and writes neither, so a decision outlives
re-collecting, ``make grade`` and ``--force``; grades.csv and the exports are
written from the gradebook and these files every time (export.py).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from nbgrader.plugins import LateSubmissionPlugin
from traitlets import Float, Unicode

from .roster import SAFE_ID

ROOT = Path(__file__).resolve().parents[2]
DEADLINES = ROOT / "book" / "autograder" / "deadlines.toml"
DECISIONS = ROOT / "_grading" / "decisions.toml"  # the course's, private
EXAMPLE = ROOT / "book" / "autograder" / "decisions.example.toml"
OLD_DECISIONS = ROOT / "book" / "autograder" / "decisions.toml"  # before: tracked


class LatePolicy(LateSubmissionPlugin):
    """A late submission loses ``per_day`` of its score per day (or part of a day)
    late, after ``grace_minutes``; after ``max_days`` days it scores 0. A student
    with an extension (``extensions``: JSON, {student: seconds after the due date})
    is late only after it."""

    per_day = Float(0.0, help="fraction of the score lost a day").tag(config=True)
    max_days = Float(math.inf, help="days after which it scores 0").tag(config=True)
    grace_minutes = Float(0.0, help="minutes late that cost nothing").tag(config=True)
    extensions = Unicode("{}", help="JSON {student: seconds}").tag(config=True)

    def late_submission_penalty(self, student_id, score, total_seconds_late):
        extra = json.loads(self.extensions or "{}").get(student_id, 0)
        total_seconds_late -= extra
        if total_seconds_late <= self.grace_minutes * 60:
            return 0.0
        days = total_seconds_late / 86400
        if days > self.max_days:
            return score
        return min(score, score * self.per_day * math.ceil(days))


def read_deadlines(path: Path, assignment: str) -> tuple[dt.datetime | None, dict]:
    """The due date (UTC, or None) of ``assignment`` and the late policy, from ``path``.

    See book/autograder/deadlines.toml.
    """
    if not path.is_file():
        return None, {}
    try:
        config = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as err:
        raise ValueError(f"{path}: {err}") from None
    late = config.get("late", {})
    unknown = set(late) - {"per_day", "max_days", "grace_minutes"}
    if unknown:
        expected = "per_day, max_days, grace_minutes"
        raise ValueError(f"{path}: [late] expects {expected}, got {sorted(unknown)}")
    due = config.get("due", {}).get(assignment)
    if due is None:
        return None, late
    if isinstance(due, dt.date) and not isinstance(due, dt.datetime):
        due = dt.datetime.combine(due, dt.time(23, 59, 59))
    if not isinstance(due, dt.datetime):
        expected = "a TOML date-time such as 2027-02-09T09:00:00Z"
        raise ValueError(f"{path}: due.{assignment} must be {expected}, got {due!r}")
    if due.tzinfo is not None:
        due = due.astimezone(dt.UTC).replace(tzinfo=None)
    return due, late


def set_due_date(course: Path, assignment: str, due: dt.datetime | None) -> None:
    """Store ``assignment``'s due date (UTC; None: none) in the gradebook."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        gb.update_or_create_assignment(assignment, duedate=due)


def _utc(value, where: str) -> dt.datetime:
    """A TOML date or date-time as a naive UTC datetime (a date: its last second)."""
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        value = dt.datetime.combine(value, dt.time(23, 59, 59))
    if not isinstance(value, dt.datetime):
        expected = "a TOML date-time such as 2027-02-09T09:00:00Z"
        raise ValueError(f"{where} must be {expected}, got {value!r}")
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    return value


@dataclass
class Extension:
    """A new due date for one student of one assignment."""

    assignment: str
    student: str
    due: dt.datetime  # UTC
    reason: str


@dataclass
class ManualGrade:
    """A score that replaces the autograder's (``score``), or points added or taken
    off (``adjust``), for one student of one assignment."""

    assignment: str
    student: str
    reason: str
    score: float | None = None
    adjust: float | None = None


@dataclass
class Decisions:
    """Everything in the decisions file."""

    extensions: list[Extension] = field(default_factory=list)
    grades: list[ManualGrade] = field(default_factory=list)
    points: dict[str, float] = field(default_factory=dict)  # manual assignments

    def extension(self, assignment: str, student: str) -> dt.datetime | None:
        for ext in self.extensions:
            if (ext.assignment, ext.student) == (assignment, student):
                return ext.due
        return None

    def manual(self, assignment: str, student: str) -> list[ManualGrade]:
        key = (assignment, student)
        return [g for g in self.grades if (g.assignment, g.student) == key]


KEYS = {
    "extension": ({"assignment", "student", "due", "reason"}, set()),
    "grade": ({"assignment", "student", "reason"}, {"score", "adjust"}),
}


STUDENT_ID = "a student id from roster.csv (letters, digits, _ and -)"


def _real(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _entries(config: dict, kind: str, path: Path) -> list[dict]:
    entries = config.get(kind, [])
    if not isinstance(entries, list):
        raise ValueError(f"{path}: expected [[{kind}]] tables, got {entries!r}")
    needed, optional = KEYS[kind]
    for n, entry in enumerate(entries, 1):
        where = f"{path}: [[{kind}]] number {n}"
        missing, unknown = needed - set(entry), set(entry) - needed - optional
        if missing or unknown:
            expected = ", ".join(sorted(needed))
            if optional:
                expected += f" and one of {', '.join(sorted(optional))}"
            got = f"missing {sorted(missing)}" if missing else f"also {sorted(unknown)}"
            raise ValueError(f"{where}: expected {expected}; {got}")
        if not isinstance(entry["reason"], str) or not entry["reason"].strip():
            raise ValueError(f"{where}: expected a reason, got {entry['reason']!r}")
        if not SAFE_ID.fullmatch(str(entry["student"])):
            got = entry["student"]
            raise ValueError(f"{where}: expected {STUDENT_ID}, got {got!r}")
    return entries


def read_decisions(path: Path) -> Decisions:
    """The instructor's decisions in ``path`` (none when it does not exist).

    See book/autograder/decisions.example.toml. Raises ValueError, naming the entry, for an
    entry without a reason, with unknown keys, or with both score and adjust.
    """
    if not path.is_file():
        return Decisions()
    try:
        config = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as err:
        raise ValueError(f"{path}: {err}") from None
    unknown = set(config) - {"extension", "grade", "points"}
    if unknown:
        expected = "[[extension]], [[grade]] and [points]"
        raise ValueError(f"{path}: expected {expected}, got {sorted(unknown)}")
    decisions = Decisions()
    seen = set()
    for n, e in enumerate(_entries(config, "extension", path), 1):
        key = (str(e["assignment"]), str(e["student"]))
        if key in seen:
            raise ValueError(f"{path}: two extensions for {key[1]} in {key[0]}")
        seen.add(key)
        where = f"{path}: [[extension]] number {n}: due"
        due = _utc(e["due"], where)
        decisions.extensions.append(Extension(*key, due, e["reason"].strip()))
    for n, g in enumerate(_entries(config, "grade", path), 1):
        values = [g.get(k) for k in ("score", "adjust")]
        numbers = [v for v in values if v is not None]
        real = all(_real(v) for v in numbers)
        if len(numbers) != 1 or not real:
            got = {k: g[k] for k in ("score", "adjust") if k in g}
            raise ValueError(
                f"{path}: [[grade]] number {n}: expected a number as score (replaces "
                f"the autograder's) or as adjust (added to it), one of them, got {got}"
            )
        score, adjust = (None if v is None else float(v) for v in values)
        key = (str(g["assignment"]), str(g["student"]))
        decisions.grades.append(ManualGrade(*key, g["reason"].strip(), score, adjust))
    points = config.get("points", {})
    for name, value in points.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            expected = "expected a positive number"
            raise ValueError(f"{path}: points.{name}: {expected}, got {value!r}")
        decisions.points[name] = float(value)
    return decisions


def entries(path: Path) -> int:
    """How many decisions (extensions, grades) the TOML file ``path`` holds."""
    try:
        config = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return 0
    found = [config.get(k, []) for k in ("extension", "grade")]
    return sum(len(v) if isinstance(v, list) else 1 for v in found)


def published_entries(folder: Path) -> list[str]:
    """Every decisions file under ``folder`` (``*decisions*.toml``, the course's
    ``_grading`` and ``.venv`` left out) that holds entries: what the release must
    never publish, each named with its count."""
    found = []
    for path in sorted(folder.rglob("*decisions*.toml")):
        parts = path.relative_to(folder).parts
        if parts[0] in ("_grading", ".venv", ".git") or not path.is_file():
            continue
        count = entries(path)
        if count:
            found.append(f"{path} holds {count} decision(s)")
    return found


def moved() -> str | None:
    """What to say when book/autograder/decisions.toml, where the decisions were
    kept before (tracked by git), still holds entries: it is no longer read."""
    count = entries(OLD_DECISIONS) if OLD_DECISIONS.is_file() else 0
    if not count:
        return None
    return (
        f"WARNING: {OLD_DECISIONS} holds {count} decision(s) and is no longer read: "
        f"move it to {DECISIONS} (private to the course, ignored by git)"
    )
