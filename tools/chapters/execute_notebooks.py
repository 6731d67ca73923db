"""Re-execute notebooks in place, the way `make outputs` does.

    python tools/chapters/execute_notebooks.py notebooks/02_scaled_dot_product_attention.ipynb

Each notebook runs top to bottom in a fresh kernel from the notebooks/ folder,
with the environment `make test` uses (PYTHONHASHSEED=0, AIAYN_THREADS), so the
stored outputs are the ones strict nbval will reproduce. Timing metadata that
nbclient adds is removed, and the kernel is recorded as plain `python3`.

The wall-clock time of each notebook of the book (one under notebooks/) and the
peak resident memory of its kernel are also recorded in book/notebook_times.json,
which the instructor guide's syllabus and run-time table read at build time (pass
--no-record to leave it alone). The memory is asked of the kernel itself after the
last cell (``PEAK_MEMORY_EXPRESSION``: the operating system's high-water mark of
its resident memory, Linux's VmHWM, plus that of its largest finished child
process); conftest.py (the root's) asks the same under strict nbval and fails a
notebook above ``MEMORY_BUDGET_GB``, a classroom hub's share per student, or well
above the peak recorded here (the guide's table would understate it). The
kernel's CPU time (``CPU_TIME_EXPRESSION``, user and system) is recorded too: on a
machine that other programs share, the wall-clock seconds grow with their load,
while the CPU time stays close to what the notebook takes on a core of its own,
so the time budget ``TIME_BUDGET_S`` is checked against it. The machine's 1-minute
load average when the run ended (``load_average``) says how busy it was.

    python tools/chapters/execute_notebooks.py --measure-only notebooks/07_full_model.ipynb

runs and records without rewriting the notebook (a chapter someone else is editing).

    python tools/chapters/execute_notebooks.py --two-at-once notebooks/07_full_model.ipynb

measures a classroom instead: two copies of each notebook run at the same time, as
two students on one shared server would, and the slower of the two is recorded as
``seconds_two_at_once``. The notebooks themselves are not rewritten.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[2]
TIMES = ROOT / "book" / "notebook_times.json"

# What one student's notebook may use on a classroom hub (the instructor guide asks the
# hub's administrator for this much per student): peak resident memory of the kernel and
# its children, and the CPU time to run a chapter top to bottom with one thread.
MEMORY_BUDGET_GB = 1.5
TIME_BUDGET_S = 180

# One Python expression, evaluated in the kernel: its peak resident memory in bytes,
# plus the largest of its finished children's. ru_maxrss is KiB on Linux (the VmHWM
# line of /proc/self/status) and bytes on macOS.
PEAK_MEMORY_EXPRESSION = (
    "(lambda r, s: sum(r.getrusage(w).ru_maxrss"
    " for w in (r.RUSAGE_SELF, r.RUSAGE_CHILDREN))"
    " * (1 if s.platform == 'darwin' else 1024))"
    "(__import__('resource'), __import__('sys'))"
)
# The kernel's CPU seconds so far, user and system, its finished children's included.
CPU_TIME_EXPRESSION = (
    "(lambda r: sum(u.ru_utime + u.ru_stime for u in map(r.getrusage, "
    "(r.RUSAGE_SELF, r.RUSAGE_CHILDREN))))(__import__('resource'))"
)


def settle_progress_bars(cell) -> None:
    """Store a progress bar once, in its final state, instead of once per refresh.

    tqdm redraws its bar on stderr with a carriage return, and nbclient keeps every
    redraw as its own output: chapter 7 stored 406 of them. Consecutive stderr outputs of
    a cell become one, and on each line only the text after the last carriage return is
    kept, which is what a terminal (and Jupyter) would show at the end. A reader running
    the notebook still sees the bar move; stdout is left exactly as printed.
    """
    merged = []
    for out in cell.get("outputs", []):
        stderr = out.get("output_type") == "stream" and out.get("name") == "stderr"
        if stderr and merged and merged[-1].get("output_type") == "stream" and merged[-1].get("name") == "stderr":
            merged[-1]["text"] += out["text"]
        else:
            merged.append(out)
    for out in merged:
        if out.get("output_type") == "stream" and out.get("name") == "stderr":
            lines = out["text"].split("\n")
            out["text"] = "\n".join(line.rsplit("\r", 1)[-1] for line in lines)
    cell["outputs"] = merged


def execute(path: Path, write: bool = True) -> tuple[float, int, float]:
    """Run ``path`` in a fresh kernel: seconds, its kernel's peak bytes and CPU time."""
    nb = nbformat.read(path, as_version=4)
    measure = f"print({PEAK_MEMORY_EXPRESSION}, {CPU_TIME_EXPRESSION})"
    nb.cells.append(nbformat.v4.new_code_cell(measure))
    start = time.perf_counter()
    client = NotebookClient(
        nb,
        timeout=900,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
        record_timing=False,
    )
    client.execute()
    elapsed = time.perf_counter() - start
    outputs = nb.cells.pop().outputs  # the two numbers may come in two stream messages
    text = "".join(o.get("text", "") for o in outputs if o.get("name") == "stdout")
    peak, cpu = text.split()
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        if cell.cell_type == "code":
            for out in cell.get("outputs", []):
                out.get("metadata", {}).pop("execution", None)
            settle_progress_bars(cell)
    # the display name ipykernel installs, which JupyterLab writes back when the kernel
    # starts: "Python 3" made every chapter open marked modified
    nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    nb.metadata.pop("widgets", None)
    nb.metadata.pop("jupytext", None)
    if write:
        nbformat.write(nb, path)
    return elapsed, int(peak), float(cpu)


def two_at_once(path: Path) -> float:
    """Run two copies of ``path`` at the same time, each in its own process; the slower one's seconds."""
    with tempfile.TemporaryDirectory() as tmp:
        copies = []
        for i in range(2):  # copies beside the original, so relative paths in the notebook still resolve
            copy = path.parent / f".two-at-once-{i}-{os.getpid()}-{path.name}"
            shutil.copy(path, copy)
            copies.append(copy)
        try:
            procs = [
                subprocess.Popen(
                    [sys.executable, __file__, "--time-only", str(c)],
                    stdout=open(Path(tmp) / f"{i}.txt", "w"),  # noqa: SIM115 (closed with the process)
                )
                for i, c in enumerate(copies)
            ]
            if any(p.wait() for p in procs):
                raise RuntimeError(f"{path}: a copy failed while running two at once")
            return max(float((Path(tmp) / f"{i}.txt").read_text().split()[0]) for i in range(2))
        finally:
            for c in copies:
                c.unlink(missing_ok=True)


def record_time(
    path: Path, seconds: float, times_file: Path = TIMES, key_name: str = "seconds", digits: int = 1
) -> bool:
    """Store `seconds` (as `key_name`) for a notebook of the book in `times_file`; others are ignored.

    The same store keeps the peak memory (``key_name="peak_memory_mb"``, ``digits=0``).

    Several processes may execute notebooks at once, so the read-modify-write of the
    JSON file happens under an exclusive lock on it.
    """
    try:
        key = path.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return False
    if not key.startswith("notebooks/"):
        return False
    threads = int(os.environ.get("AIAYN_THREADS", "1"))
    times_file.parent.mkdir(parents=True, exist_ok=True)
    with open(times_file, "a+", encoding="utf-8") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        text = f.read()
        try:
            times = json.loads(text) if text.strip() else {}
        except json.JSONDecodeError:
            times = {}
        entry = times.get(key, {})
        if entry.get("threads") != threads or entry.get("cpu_count") != os.cpu_count():
            entry = {}  # figures from another machine or thread setting would not compare
        entry.update(
            {
                key_name: round(seconds, digits) if digits else round(seconds),
                "date": date.today().isoformat(),
                "cpu_count": os.cpu_count(),
                "threads": threads,
            }
        )
        times[key] = dict(sorted(entry.items()))
        f.seek(0)
        f.truncate()
        f.write(json.dumps(dict(sorted(times.items())), indent=1) + "\n")
        f.flush()
    return True


def main(argv: list[str]) -> None:
    os.environ.setdefault("PYTHONHASHSEED", "0")
    flags = {a for a in argv if a.startswith("--")}
    for p in (Path(a) for a in argv if not a.startswith("--")):
        if "--time-only" in flags:  # one copy of --two-at-once: run, print the seconds, write nothing
            print(f"{execute(p, write=False)[0]:.1f}", flush=True)
            continue
        if "--two-at-once" in flags:
            elapsed, key_name = two_at_once(p), "seconds_two_at_once"
            peak = None
        else:
            elapsed, peak, cpu = execute(p, write="--measure-only" not in flags)
            key_name = "seconds"
        if "--no-record" not in flags:
            record_time(p, elapsed, key_name=key_name)
            if peak is not None:
                record_time(p, cpu, key_name="cpu_seconds")
                record_time(p, os.getloadavg()[0], key_name="load_average")
                record_time(p, peak / 1e6, key_name="peak_memory_mb", digits=0)
        memory = "" if peak is None else f"  {cpu:.1f} s CPU  {peak / 1e9:.2f} GB peak"
        print(f"{elapsed:7.1f} s{memory}  {key_name}  {p}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
