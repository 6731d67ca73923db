"""A total grading-time budget for each student's submission.

The cell and notebook limits bound one cell and one notebook; an assignment of several
notebooks could still take the sum of their limits for each student. In one run of
nbgrader's autograde, this module adds up the seconds each student's sandboxes ran (from
starting the sandbox to its end: the kernel's start counts) and gives each notebook at
most what is left (``limit``). A submission that spends it is stopped where it is; the
cells not reached score 0, as past any time limit, because the submission's own code
took the time; the student's report names the budget, the notebook stopped, and what
was graded (``stopped``). A sandbox that fails for a reason of the host
(sandbox.SandboxFailed) is NOT GRADED with that reason, never scored 0.

Set with ``make grade GRADE_FLAGS=--student-timeout=SECONDS`` (cli.py) or
``c.SandboxedExecute.student_timeout`` in nbgrader_config.py; 0 turns it off.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Spent:
    """What one student's grading has used: seconds, and per notebook what ran."""

    seconds: float = 0.0
    notebooks: list[str] = field(default_factory=list)


# (course, assignment, student) -> what the student's grading used in this process
_SPENT: dict[tuple[str, str, str], Spent] = {}


def student_key(resources: dict) -> tuple[str, str, str] | None:
    """Whose budget a notebook's grading counts against (None: not a student's)."""
    ids = resources.get("nbgrader") or {}
    path = (resources.get("metadata") or {}).get("path")
    if not (ids.get("student") and ids.get("assignment") and path):
        return None
    # <course>/autograded/<student>/<assignment>
    course = str(Path(path).resolve().parents[2])
    return (course, str(ids["assignment"]), str(ids["student"]))


def reason(student_timeout: int) -> str:
    """What a cell the budget stopped, or never reached, says."""
    return f"the submission's grading ran past its time budget ({student_timeout} s for all its notebooks)"


def limit(
    key: tuple[str, str, str] | None,
    notebook_timeout: int,
    student_timeout: int,
) -> tuple[float, str | None]:
    """The seconds the next notebook of ``key`` may run, and the reason to give when it
    is stopped there: None when that is the notebook's own limit, the budget's words
    when what is left of the budget is less."""
    if student_timeout < 0 or notebook_timeout <= 0:
        got = f"{notebook_timeout} s per notebook, {student_timeout} s per student"
        expected = "a positive notebook limit and a budget of 0 (none) or more"
        raise ValueError(f"expected {expected}, got {got}")
    if key is None or student_timeout == 0:
        return notebook_timeout, None
    left = student_timeout - _SPENT.get(key, Spent()).seconds
    if left >= notebook_timeout:
        return notebook_timeout, None
    return max(0.0, left), reason(student_timeout)


def record(key, notebook: str, seconds: float, ran: int | None, cells: int) -> None:
    """Count ``seconds`` of ``notebook`` against ``key``'s budget; ``ran`` of its
    ``cells`` code cells ran (None: its sandbox was not started)."""
    if key is None:
        return
    spent = _SPENT.setdefault(key, Spent())
    spent.seconds += seconds
    if ran is None:
        spent.notebooks.append(f"{notebook} (not started)")
        return
    what = f"{ran} of {cells} code cells ran"
    spent.notebooks.append(f"{notebook} ({what}, {math.ceil(seconds)} s)")


def stopped(key, student_timeout: int) -> str:
    """The report's line for a submission the budget stopped: the budget, each notebook
    graded and how far, and what the cells not reached score."""
    spent = _SPENT.get(key, Spent())
    graded = "; ".join(spent.notebooks) or "nothing"
    return (
        f"time budget: grading stopped at the submission's budget of "
        f"{student_timeout} s for all its notebooks ({math.ceil(spent.seconds)} s used): "
        f"{graded}. The cells not reached score 0 (its own code took the time)."
    )
