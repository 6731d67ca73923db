"""How fast `make grade` grades a class, with one sandbox at a time and with all workers.

    python tools/bench/bench_grading.py --copies 5     # `make bench-grading N=5`

Builds make student's course of one assignment (default assignment1) in a temporary
folder, hands in ``--copies`` copies of a mixed class of four (a right answer to every
part, Part 2 wrong, a notebook that raises in Part 1, a blank one), grades it with
``--workers 1`` and again, from the same submissions, with one worker per core
(tools/grading/cli.py), and prints the seconds per submission of each, the speed-up,
the CPU-seconds the machine was busy per submission (Linux), what 200 submissions
would take at the parallel rate, the machine (lscpu's model name, cores) and the load
average before and after. The scores of both runs must be the same, or it says which
differ and exits 1.
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/

from editions import make_student  # noqa: E402

KINDS = ("right", "wrong", "raises", "blank")


def solutions(assignment: str) -> dict[str, str]:
    """{grade id: the solution's code} of an assignment's source notebook."""
    nb = nbformat.read(make_student.ASSIGNMENTS / assignment / f"{assignment}.ipynb", as_version=4)
    out = {}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution") and cell.cell_type == "code":
            out[meta["grade_id"]] = re.sub(r"^[ \t]*### (BEGIN|END) SOLUTION\n?", "", cell.source, flags=re.M)
    return out


def submission(course: Path, assignment: str, kind: str) -> str:
    """A released notebook filled in as ``kind`` (one of KINDS)."""
    if kind not in KINDS:
        raise ValueError(f"expected one of {KINDS}, got {kind!r}")
    nb = nbformat.read(course / "release" / assignment / f"{assignment}.ipynb", as_version=4)
    answers = solutions(assignment)
    ids = list(answers)
    if kind == "blank":
        answers = {}
    elif kind == "wrong":  # the last part's answer replaced: its tests fail
        answers[ids[-1]] = "raise NotImplementedError('wrong on purpose')"
    elif kind == "raises":  # the first part raises; the others are right
        answers[ids[0]] = "raise RuntimeError('a slip in Part 1')"
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in answers:
            cell.source = answers[gid]
    return nbformat.writes(nb)


def hand_in(course: Path, assignment: str, copies: int, kinds: tuple[str, ...] = KINDS) -> list[str]:
    """``copies`` of the mixed class (of ``kinds``) into ``course``/submitted; the
    student ids."""
    if copies < 1:
        raise ValueError(f"expected 1 or more copies, got {copies}")
    texts = {kind: submission(course, assignment, kind) for kind in kinds}
    ids = []
    for n in range(copies):
        for kind in kinds:
            sid = f"{kind}-{n:03d}"
            folder = course / "submitted" / sid / assignment
            folder.mkdir(parents=True)
            (folder / f"{assignment}.ipynb").write_text(texts[kind])
            ids.append(sid)
    return ids


def build(folder: Path, assignment: str) -> Path:
    """make student's course folder with ``assignment`` only, in ``folder``/course."""
    source = folder / "source"
    source.mkdir(parents=True)
    (source / assignment).symlink_to(make_student.ASSIGNMENTS / assignment, target_is_directory=True)
    make_student.build_course(folder / "course", source)
    return folder / "course"


def scores(course: Path) -> dict[str, str]:
    with open(course / "grades.csv", newline="", encoding="utf-8") as f:
        return {r["student_id"]: r["score"] for r in csv.DictReader(f)}


def machine() -> str:
    """lscpu's model name and the cores this process may use."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        model = re.search(r"Model name:\s*(.+)", out)
        name = model[1].strip() if model else "unknown CPU"
    except (OSError, subprocess.CalledProcessError):
        name = "unknown CPU"
    return f"{name}, {len(os.sched_getaffinity(0))} core(s)"


def busy_seconds() -> float | None:
    """CPU-seconds the whole machine has spent busy since boot (Linux's /proc/stat:
    every state but idle and iowait), None where there is no /proc/stat. The sandboxes'
    processes are killed, not waited for, so their time never reaches this process's
    rusage: the machine's counter is what sees it (and everything else running)."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    except (OSError, IndexError):
        return None
    ticks = [int(f) for f in fields[:8]]
    busy = sum(ticks) - ticks[3] - ticks[4]  # less idle and iowait
    return busy / os.sysconf("SC_CLK_TCK")


def grade(course: Path, assignment: str, workers: int, extra: list[str]) -> tuple[float, float | None]:
    """Seconds `make grade` took over ``course`` with ``workers``, and the CPU-seconds
    the machine was busy meanwhile (None where unknown)."""
    command = [sys.executable, str(Path(__file__).resolve().parents[1] / "grade.py"), assignment]
    command += ["--course", str(course), f"--workers={workers}", *extra]
    start, busy = time.monotonic(), busy_seconds()
    done = subprocess.run(command, capture_output=True, text=True)
    took = time.monotonic() - start
    after = busy_seconds()
    if done.returncode not in (0, 1):
        raise RuntimeError(f"make grade failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return took, (after - busy if busy is not None and after is not None else None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--copies", type=int, default=5, help="copies of the class of four (5)")
    parser.add_argument("--assignment", default="assignment1")
    parser.add_argument("--workers", type=int, default=0, help="the parallel run's workers (0: one per core)")
    parser.add_argument("--unsandboxed", action="store_true", help="no sandbox (where bubblewrap is missing)")
    args = parser.parse_args(argv)
    extra = ["--unsandboxed"] if args.unsandboxed else []
    with tempfile.TemporaryDirectory(prefix="aiayn-bench-") as tmp:
        serial = build(Path(tmp) / "serial", args.assignment)
        ids = hand_in(serial, args.assignment, args.copies)
        parallel = Path(tmp) / "parallel" / "course"
        shutil.copytree(serial, parallel, symlinks=True)
        load = os.getloadavg()
        one, cpu_one = grade(serial, args.assignment, 1, extra)
        many, cpu_many = grade(parallel, args.assignment, args.workers, extra)
        after = os.getloadavg()
        a, b = scores(serial), scores(parallel)
    n = len(ids)
    workers = args.workers or len(os.sched_getaffinity(0))
    print(f"machine: {machine()}; load average {load[0]:.1f} before, {after[0]:.1f} after")
    print(f"{n} submissions of {args.assignment} ({args.copies} copies of {', '.join(KINDS)})")
    print(f"1 worker: {one:.0f} s, {one / n:.1f} s a submission")
    print(f"{workers} workers: {many:.0f} s, {many / n:.1f} s a submission; speed-up {one / many:.2f}x")
    if cpu_one is not None and cpu_many is not None:
        print(
            f"the machine busy: {cpu_one / n:.1f} CPU-s a submission with 1 worker, "
            f"{cpu_many / n:.1f} with {workers} (everything running counts: exact on an "
            "idle machine)"
        )
    print(f"200 submissions at the {workers} workers' rate: about {200 * many / n / 60:.0f} min")
    differ = sorted(s for s in ids if a.get(s) != b.get(s))
    if differ:
        print(f"SCORES DIFFER: {', '.join(f'{s} {a.get(s)} vs {b.get(s)}' for s in differ)}")
        return 1
    print(f"scores: the same in both runs ({sorted(set(a.values()))})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
