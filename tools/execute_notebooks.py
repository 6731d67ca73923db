"""Re-execute notebooks in place, the way `make outputs` does.

    python tools/execute_notebooks.py notebooks/02_scaled_dot_product_attention.ipynb

Each notebook runs top to bottom in a fresh kernel from the notebooks/ folder,
with the environment `make test` uses (PYTHONHASHSEED=0, AIAYN_THREADS), so the
stored outputs are the ones strict nbval will reproduce. Timing metadata that
nbclient adds is removed, and the kernel is recorded as plain `python3`.

The wall-clock time of each notebook of the book (one under notebooks/) is also
recorded in book/notebook_times.json, which the instructor guide's syllabus reads
at build time (pass --no-record to leave it alone).

    python tools/execute_notebooks.py --two-at-once notebooks/07_full_model.ipynb

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

ROOT = Path(__file__).resolve().parents[1]
TIMES = ROOT / "book" / "notebook_times.json"


def execute(path: Path, write: bool = True) -> float:
    nb = nbformat.read(path, as_version=4)
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
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        if cell.cell_type == "code":
            for out in cell.get("outputs", []):
                out.get("metadata", {}).pop("execution", None)
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nb.metadata.pop("widgets", None)
    nb.metadata.pop("jupytext", None)
    if write:
        nbformat.write(nb, path)
    return elapsed


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


def record_time(path: Path, seconds: float, times_file: Path = TIMES, key_name: str = "seconds") -> bool:
    """Store `seconds` (as `key_name`) for a notebook of the book in `times_file`; others are ignored.

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
                key_name: round(seconds, 1),
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
            print(f"{execute(p, write=False):.1f}", flush=True)
            continue
        if "--two-at-once" in flags:
            elapsed, key_name = two_at_once(p), "seconds_two_at_once"
        else:
            elapsed, key_name = execute(p), "seconds"
        if "--no-record" not in flags:
            record_time(p, elapsed, key_name=key_name)
        print(f"{elapsed:7.1f} s  {key_name}  {p}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
