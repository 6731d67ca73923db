"""Grade an nbgrader assignment with every submission in its own sandbox.

    python tools/grade.py assignment1                # `make grade A=assignment1`
    python tools/grade.py assignment1 --feedback     # and feedback, hidden tests out
    python tools/grade.py assignment1 --force        # everyone again, changed or not
    python tools/grade.py assignment1 --student ID   # one student again (STUDENT=ID)
    python tools/grade.py assignment1 --remove ID    # one student out (REMOVE=ID)
    python tools/grade.py assignment1 --workers 1    # one sandbox at a time
    python tools/grade.py assignment1 --unsandboxed  # NO sandbox: own notebooks only

The stages of a term, one module each in tools/grading/: collect (a platform's zip
into ``<course>/submitted/<student>/<assignment>/``; roster: who the students are),
repair (each submission made gradable, reported per student), sandbox and autograde
(nbgrader with the students' code in a bubblewrap sandbox) and decisions (due dates,
late policy). This module runs them for ``make grade``:

* a submission is graded again when its files changed (a resubmission: the newest
  counts), or when a due date, the late policy or a limit changed; the others keep
  their grades (nbgrader alone skips any student already graded);
* a student folder that cannot be graded safely (an odd name, a link) is moved to
  ``<course>/refused/`` and reported (folders.py), and every other one is graded;
* nbgrader reads, grades and writes the feedback of each submission in a child
  process of its own, under limits of its own (confine.py: ``--grader-memory``,
  ``--grader-cpu``); a submission past one scores 0 with the reason;
* the submissions to grade are shared among ``--workers`` nbgrader servers,
  each grading its share one sandbox after another (default: one per core, fewer
  when the memory a sandbox may take times the workers would not fit in the
  memory available, which is said); a line per submission graded says how far
  grading is and about how long is left. Each student is graded by one process
  alone and scores the same as in a serial run (tests/test_grading_parallel.py);
* nbgrader's own log goes to ``<course>/reports/<assignment>/autograde.log``
  (``--verbose`` prints it too, escaped);
* what grading did is printed at the end, per student, from ``<course>/reports/``,
  also when a stage fails (the failure named last), then a summary to paste:
  graded, mean and spread, late penalties, NOT GRADED names.

Exit status: 0, every submission graded; 1, the class was graded but some students
were NOT GRADED (a refused folder, a notebook that could not be read or run), each
named in the report: not a crash, the others' grades are written, and the status
tells a script that the instructor has something to look at; 2, nothing was graded
(no course, no sandbox, a bad deadlines file); 3, grading stopped part-way (nbgrader's
autograde, grades.csv or the feedback failed), the report says what was done.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

from . import confine
from .decisions import (
    DEADLINES,
    moved,
    read_deadlines,
    read_decisions,
    set_due_date,
)
from .export import warnings, write_grades
from .feedback import number, stamp_feedback
from .folders import REFUSED, REFUSED_PREFIX, refuse_unsafe, stale_reports
from .gradebook import use_this_python
from .limits import SCOPED, memory_scope, systemd_scope
from .repair import (
    NOTES,
    SCORED_0,
    expected_notebooks,
    forget,
    not_graded_reasons,
    note,
    prepare_submissions,
    zero_reasons,
)
from .roster import printable, read_roster
from .sandbox import _bytes, refusal, sandbox_problem, too_little_memory
from .workers import autograde_all, feedback_all

ROOT = Path(__file__).resolve().parents[2]
UNSANDBOXED = """\
!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!
!! --unsandboxed: the notebooks run as YOU, in the course folder, with your files, !!
!! the network and no limits. They can read the hidden tests and the gradebook.    !!
!! Use it only for notebooks you wrote yourself, never for students' submissions.  !!
!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"""


def _digest(folder: Path, extra: str) -> str:
    """What a submission's grade depends on: its files, and ``extra``."""
    import hashlib

    h = hashlib.sha256(extra.encode())
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        h.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def stale_submissions(
    course: Path,
    assignment: str,
    extra: str,
    force: bool,
    own: dict[str, str] | None = None,
    only: str | None = None,
) -> tuple:
    """The students to grade (again): new, resubmitted, or all with ``force``;
    ``own``: what else a student's grade depends on (an extension); ``only``: that
    student alone, graded again.

    Their old results are removed, so that nbgrader grades them; nbgrader alone
    skips a student already graded unless the submission's timestamp.txt is newer.
    Returns them and every student's digest.
    """
    state_path = course / NOTES / assignment / "graded.json"
    state = json.loads(state_path.read_text()) if state_path.is_file() else {}
    digests, stale = {}, []
    for folder in sorted((course / "submitted").glob(f"*/{assignment}")):
        student = folder.parent.name
        digests[student] = _digest(folder, extra + (own or {}).get(student, ""))
        autograded = course / "autograded" / student / assignment
        changed = state.get(student) != digests[student] or not autograded.is_dir()
        if (only is None and (force or changed)) or student == only:
            stale.append(student)
            for stage in ("autograded", "feedback"):
                shutil.rmtree(course / stage / student / assignment, ignore_errors=True)
            forget(course, assignment, student)
    return stale, digests


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("assignment", help="the assignment's name, e.g. assignment1")
    parser.add_argument(
        "--course",
        type=Path,
        default=ROOT / "_grading",
        help="nbgrader course folder",
    )
    parser.add_argument(
        "--feedback",
        action="store_true",
        help="also write feedback/ (hidden tests withheld)",
    )
    parser.add_argument(
        "--unsandboxed",
        action="store_true",
        help="NO sandbox: only for your own notebooks",
    )
    parser.add_argument(
        "--cell-timeout",
        type=int,
        default=60,
        help="seconds per cell (60)",
    )
    parser.add_argument(
        "--notebook-timeout",
        type=int,
        default=600,
        help="seconds per notebook (600)",
    )
    parser.add_argument(
        "--student-timeout",
        type=int,
        default=1200,
        help="seconds for all of a student's notebooks together (1200; 0: none)",
    )
    parser.add_argument("--memory", default="4G", help="address space per process (4G)")
    parser.add_argument(
        "--grader-memory",
        default=os.environ.get(confine.MEMORY_ENV) or f"{confine.MEMORY >> 20}M",
        help=f"address space of nbgrader's own process, per submission (2048M; {confine.MEMORY_ENV})",
    )
    parser.add_argument(
        "--grader-cpu",
        type=float,
        default=confine.CPU,
        help="CPU seconds of nbgrader's own process, per submission (120)",
    )
    parser.add_argument(
        "--processes",
        type=int,
        default=256,
        help="processes and threads (256)",
    )
    parser.add_argument(
        "--data",
        action="append",
        default=[],
        help="a folder the notebooks may read",
    )
    parser.add_argument(
        "--quiet",
        action="store_true",
        help="(the default) nbgrader's log only in reports/<assignment>/autograde.log",
    )
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="also print nbgrader's log (escaped)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=0,
        help="sandboxes graded at once (0: one per core, as memory allows)",
    )
    parser.add_argument("--student", help="grade this student again, no one else")
    parser.add_argument(
        "--remove",
        metavar="STUDENT",
        help="take this student out of the assignment (files, gradebook, grades.csv)",
    )
    parser.add_argument(
        "--deadlines",
        type=Path,
        default=DEADLINES,
        help="due dates and late policy (book/autograder/deadlines.toml)",
    )
    parser.add_argument(
        "--decisions",
        type=Path,
        help="extensions, manual grades (<course>/decisions.toml)",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="grade every submission again, changed or not",
    )
    args = parser.parse_args(argv)
    if args.workers < 0:
        parser.error(f"--workers: expected 0 (one per core) or more, got {args.workers}")
    if args.student_timeout < 0:
        parser.error(f"--student-timeout: expected 0 or more, got {args.student_timeout}")
    try:
        grader = confine.Limits(_bytes(args.grader_memory), args.grader_cpu)
    except ValueError as err:
        parser.error(f"--grader-memory, --grader-cpu: {err}")
    use_this_python()  # a new gradebook without the venv's bin on PATH
    course = args.course.resolve()
    if not (course / "nbgrader_config.py").is_file():
        print(
            f"{course} has no nbgrader_config.py: run make student first",
            file=sys.stderr,
        )
        return 2
    if "from grade import configure" not in (course / "nbgrader_config.py").read_text():
        print(
            f"{course}/nbgrader_config.py predates the sandbox: run make student again",
            file=sys.stderr,
        )
        return 2
    if args.remove:
        return remove_student(course, args.assignment, args.remove, args.decisions)
    scope = ""
    if args.unsandboxed:
        print(UNSANDBOXED, file=sys.stderr)
    else:
        relaunch = systemd_scope()  # cgroup v2 under systemd, the grader's cgroup shared
        if relaunch:  # grade in a scope of its own, so each sandbox gets a cgroup
            print(f"grading in a systemd scope: {' '.join(relaunch[:-1])}", file=sys.stderr)
            again = [sys.executable, str(ROOT / "tools" / "grade.py")]
            again += sys.argv[1:] if argv is None else argv
            environment = {**os.environ, SCOPED: "1"}
            return subprocess.run([*relaunch, *again], env=environment).returncode
        problem = sandbox_problem()
        if problem:
            print(refusal(problem), file=sys.stderr)
            return 2
        short = too_little_memory(_bytes(args.memory), args.processes)
        if short:
            print(short, file=sys.stderr)
            return 2
        scope = memory_scope(args.memory)  # a cgroup per sandbox, or per process only
        print(scope, file=sys.stderr)  # once: the report does not repeat it
    try:
        due, late = read_deadlines(args.deadlines, args.assignment)
        decisions = read_decisions(args.decisions or course / "decisions.toml")
        if moved():
            print(moved(), file=sys.stderr)
    except ValueError as err:
        print(printable(str(err)), file=sys.stderr)
        return 2
    flags = [
        f"--SandboxedExecute.sandbox={not args.unsandboxed}",
        f"--SandboxedExecute.timeout={args.cell_timeout}",
        f"--SandboxedExecute.notebook_timeout={args.notebook_timeout}",
        f"--SandboxedExecute.student_timeout={args.student_timeout}",
        f"--SandboxedExecute.memory={args.memory}",
        f"--SandboxedExecute.processes={args.processes}",
    ]
    flags += [f"--SandboxedExecute.read_only={Path(d).resolve()}" for d in args.data]
    flags += [f"--LatePolicy.{key}={value}" for key, value in sorted(late.items())]
    # a folder nbgrader cannot grade safely (an odd name, a link) is moved aside and
    # reported, and everyone else is graded; reports of students gone are removed
    refuse_unsafe(course, args.assignment)
    stale_reports(course, args.assignment)
    notes = prepare_submissions(course, args.assignment, grader)
    # a new due date, policy or limit changes every grade: grade everyone again
    settings = json.dumps([str(due), late, flags], sort_keys=True)
    # an extension changes one student's: grade that one again
    extensions = {
        e.student: max(0.0, (e.due - due).total_seconds())
        for e in decisions.extensions
        if e.assignment == args.assignment and due is not None
    }
    flags.append(f"--LatePolicy.extensions={json.dumps(extensions, sort_keys=True)}")
    own = {s: f"extension {seconds}" for s, seconds in extensions.items()}
    reports = course / NOTES / args.assignment
    state_path = reports / "graded.json"
    before = json.loads(state_path.read_text()) if state_path.is_file() else {}
    if args.student and not (course / "submitted" / args.student / args.assignment).is_dir():
        print(f"no submission of {args.student!r} in {course / 'submitted'}", file=sys.stderr)
        return 2
    stale, digests = stale_submissions(
        course,
        args.assignment,
        settings,
        args.force,
        own,
        args.student,
    )
    # what repair did (a misnamed notebook renamed) is kept for a submission graded
    # again unchanged (--force, --student): the rename happened at its first grading
    repairs_path = reports / "repairs.json"
    repairs = json.loads(repairs_path.read_text()) if repairs_path.is_file() else {}
    for student in stale:
        texts = notes.get(student, [])
        if before.get(student) == digests.get(student):  # the same files again
            texts = texts or repairs.get(student, [])
        repairs[student] = texts
        for text in texts:
            note(course, args.assignment, student, text)
    reports.mkdir(parents=True, exist_ok=True)
    repairs_path.write_text(json.dumps(repairs, indent=1, sort_keys=True))
    workers, said = choose_workers(args.workers, len(stale), _bytes(args.memory))
    if said:
        print(said, file=sys.stderr)
    stage, failure = "autograde", ""
    try:
        set_due_date(course, args.assignment, due)
        # nbgrader's own processing, a child per submission under ``grader``'s
        # limits; its wall time: the sandbox's budget for the student, and more
        notebooks = max(1, len(expected_notebooks(course, args.assignment)))
        budget = args.student_timeout or args.notebook_timeout * notebooks
        wall = budget + confine.WALL_MARGIN + grader.cpu
        limits = confine.Limits(grader.memory, grader.cpu, wall)
        sandboxed = not args.unsandboxed
        log = autograde_all(course, args.assignment, flags, stale, workers, args.verbose, limits, sandboxed)
        (reports / "autograde.log").write_text(log)
        graded = dict(before) if args.student else {}
        where = f"its log: {reports / 'autograde.log'}"
        for student, digest in digests.items():
            folder = course / "autograded" / student / args.assignment
            if any(folder.glob("*.ipynb")):
                graded[student] = digest
            elif student in stale and not (
                not_graded_reasons(course, args.assignment, student) or zero_reasons(course, args.assignment, student)
            ):
                # the sandbox started (else NOT GRADED above): nbgrader failed on the
                # notebook itself (its metadata, its structure): 0, with the reason
                why = f"nbgrader could not grade the notebook, as handed in ({where})"
                note(course, args.assignment, student, f"{SCORED_0}: {why}")
        graded = {k: v for k, v in graded.items() if k in digests}
        (reports / "graded.json").write_text(json.dumps(graded, indent=1))
        stage = "writing grades.csv"
        rows = write_grades(course, decisions)  # the gradebook and the decisions
        if args.feedback:
            stage = "feedback"
            limits = confine.Limits(grader.memory, grader.cpu, confine.FEEDBACK_WALL)
            feedback_all(course, args.assignment, limits, not args.unsandboxed)
            # each page opens with the grade that goes back to the platform
            mine = [r for r in rows if r["assignment"] == args.assignment]
            stamp_feedback(course, mine)
    except RuntimeError as err:
        failure = f"{stage} failed: {err}"
    except BaseException as err:  # a bug: still say what was done, then raise it
        failure = f"{stage} failed: {type(err).__name__}: {err}"
        raise
    finally:
        failed = report(course, args.assignment, stale, due, failure)
    if failure:
        return 3
    print(summary(rows, args.assignment))
    wrote = f"grades: {course / 'grades.csv'}"
    if args.feedback:
        wrote += f"; feedback: {course / 'feedback'}"
    print(wrote)
    if args.unsandboxed:
        print("(graded WITHOUT a sandbox)", file=sys.stderr)
    return 1 if failed else 0


def report(
    course: Path,
    assignment: str,
    graded: list[str],
    due,
    failure: str = "",
    scope: str = "",
) -> list[str]:
    """Print what grading did to each submission, what bounded a sandbox's memory
    (``scope``), and ``failure``, the stage that stopped grading (if one did); return
    the students not graded."""
    folder = course / NOTES / assignment
    failed = []
    lines = [f"{assignment}: {len(graded)} submission(s) graded (new or changed)"]
    if due is not None:
        lines[0] += f", due {due:%Y-%m-%d %H:%M} UTC"
    if scope:
        lines.append(f"  {scope}")
    roster = read_roster(course)
    for path in sorted(folder.glob("*.txt")):
        texts = path.read_text(encoding="utf-8").splitlines()
        if not_graded_reasons(course, assignment, path.stem):  # the grader's field
            failed.append(path.stem)
        known = roster.get(path.stem)
        who = f"{path.stem} ({known.name})" if known and known.name else path.stem
        lines += [f"  {who}: {t}" for t in texts]
    lines = [lines[0]] + [printable(line, escape=True) for line in lines[1:]]
    refused = [s for s in failed if s.startswith(REFUSED_PREFIX)]
    scored = [s for s in failed if s not in refused]
    if scored:
        lines.append(f"NOT GRADED (no score): {', '.join(scored)}")
    if refused:
        where = course / REFUSED / assignment
        names = ", ".join(refused)
        lines.append(f"NOT GRADED (folder refused, now in {where}): {names}")
    if failure:
        lines.append(f"GRADING STOPPED: {failure}")
    bad = failed or failure
    print("\n".join(lines), file=sys.stderr if bad else sys.stdout)
    return failed


def choose_workers(asked: int, jobs: int, memory: int) -> tuple[int, str]:
    """How many sandboxes to grade at once: ``asked`` (0: one per core of this
    machine), no more than ``jobs``, and no more than the memory available holds
    at ``memory`` bytes a sandbox; and what to say when memory made it fewer."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    wanted = asked or cores or os.cpu_count() or 1
    available = _available_memory()
    fit = max(1, available // memory) if available else wanted
    workers = max(1, min(wanted, fit, max(jobs, 1)))
    said = ""
    if fit < min(wanted, max(jobs, 1)):
        said = (
            f"workers: {workers} sandbox(es) at once, not {wanted}: each may take "
            f"{memory >> 20} MiB and {available >> 20} MiB is available "
            "(--memory, --workers)"
        )
    return workers, said


def _available_memory() -> int | None:
    """MemAvailable of /proc/meminfo, in bytes (None where there is none)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def summary(rows: list[dict], assignment: str) -> str:
    """The closing lines to paste: graded, mean and spread, late penalties, capped
    grades and the NOT GRADED names of ``assignment``."""
    mine = [r for r in rows if r["assignment"] == assignment]
    scores = [r["score"] for r in mine if r["score"] is not None]
    lines = [f"Summary of {assignment}: {len(scores)} graded"]
    if scores:
        mean = statistics.fmean(scores)
        spread = statistics.pstdev(scores) if len(scores) > 1 else 0.0
        out = number(mine[0]["max_score"]) if mine[0]["max_score"] else "?"
        lines[0] += (
            f", mean {number(mean)} of {out} (standard deviation {number(spread)}, "
            f"lowest {number(min(scores))}, highest {number(max(scores))})"
        )
    late = [r for r in mine if r.get("late_submission_penalty")]
    if late:
        shown = ", ".join(f"{r['student_id']} (-{number(r['late_submission_penalty'])})" for r in late)
        lines.append(f"  late penalty: {shown}")
    lines += [f"  {w}" for w in warnings(mine)]
    return printable("\n".join(lines))


def remove_student(course: Path, assignment: str, student: str, decisions: Path | None) -> int:
    """Take ``student`` out of ``assignment``: the submission, its grading and
    feedback, its report and its gradebook row, then grades.csv written again (the
    next ``make export`` leaves the student out). Decisions about the student stay
    in the decisions file (remove them there)."""
    from .decisions import read_decisions as read

    folders = [course / stage / student / assignment for stage in ("submitted", "autograded", "feedback")]
    report_file = course / NOTES / assignment / f"{student}.txt"
    if not any(f.exists() for f in folders) and not report_file.exists():
        print(f"{student!r} has nothing in {assignment} to remove", file=sys.stderr)
        return 2
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)
    forget(course, assignment, student)
    state_path = course / NOTES / assignment / "graded.json"
    if state_path.is_file():
        state = json.loads(state_path.read_text())
        state.pop(student, None)
        state_path.write_text(json.dumps(state, indent=1))
    if (course / "gradebook.db").is_file():
        from nbgrader.api import Gradebook, MissingEntry

        with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
            try:
                gb.remove_submission(assignment, student)
            except MissingEntry:
                pass
    write_grades(course, read(decisions or course / "decisions.toml"))
    print(f"removed {student} from {assignment}: submission, grading, feedback, grades.csv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
