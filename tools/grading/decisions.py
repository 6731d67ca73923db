"""Due dates, the late policy and the instructor's decisions, each in one file.

book/autograder/deadlines.toml (``--deadlines``) holds the due dates and the late
policy: the due date goes into the gradebook and ``LatePolicy`` takes off the late
penalty.
"""

from __future__ import annotations

import datetime as dt
import math
import tomllib
from pathlib import Path

from nbgrader.plugins import LateSubmissionPlugin
from traitlets import Float

ROOT = Path(__file__).resolve().parents[2]
DEADLINES = ROOT / "book" / "autograder" / "deadlines.toml"


class LatePolicy(LateSubmissionPlugin):
    """A late submission loses ``per_day`` of its score per day (or part of a day)
    late, after ``grace_minutes``; after ``max_days`` days it scores 0."""

    per_day = Float(0.0, help="fraction of the score lost a day").tag(config=True)
    max_days = Float(math.inf, help="days after which it scores 0").tag(config=True)
    grace_minutes = Float(0.0, help="minutes late that cost nothing").tag(config=True)

    def late_submission_penalty(self, student_id, score, total_seconds_late):
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
