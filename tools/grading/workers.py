"""A class's submissions shared among workers: nbgrader's autograde and feedback of
each student in a child process of its own, under the grader's limits (confine.py).

``autograde_all`` shares the students among ``--workers`` servers and prints a line
per student done; a student whose child passed a limit scores 0 with the reason.
``feedback_all`` writes each graded student's feedback pages the same way, then
makes them safe to open offline and caps their size (feedback.finish_pages). Split
from cli.py (no module over 600 lines).
"""

from __future__ import annotations

import shutil
import sys
import threading
import time
from pathlib import Path

from . import confine
from .feedback import finish_pages
from .repair import SCORED_0, note
from .roster import display, printable, read_roster


def autograde_all(
    course: Path,
    assignment: str,
    flags: list[str],
    students: list[str],
    workers: int,
    verbose: bool = False,
    limits: confine.Limits = confine.DEFAULT,
    sandboxed: bool = True,
) -> str:
    """nbgrader's autograde of ``students``, shared among ``workers`` servers
    (confine.run: each grades its share one student after another, a child process
    each under ``limits``); a line per student done, with how far grading is and
    about how long is left; nbgrader's log, every server's in turn. A student whose
    child passed a limit scores 0 with the reason (confine.reason)."""
    if not students:
        return ""
    shares = [students[k::workers] for k in range(workers)]
    logs = [""] * len(shares)
    found: dict[str, dict] = {}
    start = time.monotonic()
    flags = ["--create", *flags]

    def run(k: int) -> None:
        done, logs[k] = confine.run(
            "autograde",
            assignment,
            shares[k],
            course,
            flags,
            limits,
            sandboxed,
        )
        found.update(done)

    threads = [threading.Thread(target=run, args=(k,), daemon=True) for k in range(workers)]
    for thread in threads:
        thread.start()
    done: set[str] = set()
    roster = read_roster(course)
    total = len(students)
    print(f"grading {total} submission(s), {len(shares)} at a time", file=sys.stderr)
    while True:
        alive = any(t.is_alive() for t in threads)
        for student in students:
            if student in done:
                continue
            finished = course / "autograded" / student / assignment
            ended = not alive or (finished.is_dir() and _written(finished))
            if ended:
                done.add(student)
                took = time.monotonic() - start
                left = took / len(done) * (total - len(done))
                who = display(course, student, roster)
                print(
                    printable(
                        f"  {len(done)}/{total} {who} ({took:.0f} s; about {left:.0f} s left)",
                    ),
                    file=sys.stderr,
                    flush=True,
                )
        if not alive:
            break
        time.sleep(0.5)
    log = "".join(logs)
    stopped = _stopped(course, assignment, found, limits, "autograde")
    graded = course / "autograded"
    missed = [s for s in students if s not in stopped and not _written(graded / s / assignment)]
    if missed and len(shares) > 1:  # once more, alone: two servers shared one gradebook
        for student in missed:  # nbgrader skips a student whose folder is there
            shutil.rmtree(graded / student / assignment, ignore_errors=True)
        again, more = confine.run(
            "autograde",
            assignment,
            missed,
            course,
            flags,
            limits,
            sandboxed,
        )
        log += more
        _stopped(course, assignment, again, limits, "autograde")
    log += "".join(
        f"grader's process for {printable(st, escape=True)}: {r.get('status')}, "
        f"{r.get('cpu')} CPU-s, {r.get('wall')} s, "
        f"peak {int(r.get('peak') or 0) >> 20} MiB of address space\n"
        for st, r in sorted(found.items())
    )
    if verbose:
        print(printable(log, escape=True), file=sys.stderr)
    return log


def _stopped(course: Path, assignment: str, found: dict, limits, command: str) -> list:
    """The students whose nbgrader child passed a limit (``found``: confine.run's
    results): their grading removed, and 0 with the reason in their reports."""
    stopped = []
    for student, result in sorted(found.items()):
        why = confine.reason(str(result.get("status")), limits, command)
        if not why:
            continue
        stopped.append(student)
        if command == "autograde":
            shutil.rmtree(course / "autograded" / student / assignment, True)
            note(course, assignment, student, f"{SCORED_0}: {why}")
        else:
            shutil.rmtree(course / "feedback" / student / assignment, True)
            note(course, assignment, student, f"feedback not written: {why}")
    return stopped


def feedback_all(course: Path, assignment: str, limits, sandboxed: bool = True) -> str:
    """nbgrader's generate_feedback for each student graded, a child process each
    under ``limits`` (confine.run); a student whose child passed a limit gets no
    page, and a line in the report says why; then every page made offline-safe and
    within its size (feedback.finish_pages). RuntimeError: the server failed."""
    graded = (course / "autograded").glob(f"*/{assignment}")
    students = sorted(p.parent.name for p in graded if _written(p))
    found, log = confine.run(
        "generate_feedback",
        assignment,
        students,
        course,
        (),
        limits,
        sandboxed,
        check=True,
    )
    _stopped(course, assignment, found, limits, "generate_feedback")
    for student, lines in finish_pages(course, assignment, students).items():
        for line in lines:
            note(course, assignment, student, line)
    return log


def _written(folder: Path) -> bool:
    """Whether nbgrader has finished this submission: its autograded notebooks are
    written after grading (the files it copies first are not notebooks)."""
    return any(folder.glob("*.ipynb"))
