"""Re-execute notebooks in place, the way `make outputs` does.

    python tools/execute_notebooks.py notebooks/02_scaled_dot_product_attention.ipynb

Each notebook runs top to bottom in a fresh kernel from the notebooks/ folder,
with the environment `make test` uses (PYTHONHASHSEED=0, AIAYN_THREADS), so the
stored outputs are the ones strict nbval will reproduce. Timing metadata that
nbclient adds is removed, and the kernel is recorded as plain `python3`.

The wall-clock time of each notebook of the book (one under notebooks/) is also
recorded in book/notebook_times.json, which the instructor guide's syllabus reads
at build time (pass --no-record to leave it alone).
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
import time
from datetime import date
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
TIMES = ROOT / "book" / "notebook_times.json"


def execute(path: Path) -> float:
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
    nbformat.write(nb, path)
    return elapsed


def record_time(path: Path, seconds: float, times_file: Path = TIMES) -> bool:
    """Store `seconds` for a notebook of the book in `times_file`; other notebooks are ignored.

    Several processes may execute notebooks at once, so the read-modify-write of the
    JSON file happens under an exclusive lock on it.
    """
    try:
        key = path.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return False
    if not key.startswith("notebooks/"):
        return False
    entry = {
        "seconds": round(seconds, 1),
        "date": date.today().isoformat(),
        "cpu_count": os.cpu_count(),
        "threads": int(os.environ.get("AIAYN_THREADS", "2")),
    }
    times_file.parent.mkdir(parents=True, exist_ok=True)
    with open(times_file, "a+", encoding="utf-8") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        text = f.read()
        try:
            times = json.loads(text) if text.strip() else {}
        except json.JSONDecodeError:
            times = {}
        times[key] = entry
        f.seek(0)
        f.truncate()
        f.write(json.dumps(dict(sorted(times.items())), indent=1) + "\n")
        f.flush()
    return True


def main(argv: list[str]) -> None:
    os.environ.setdefault("PYTHONHASHSEED", "0")
    record = "--no-record" not in argv
    for p in (a for a in argv if a != "--no-record"):
        elapsed = execute(Path(p))
        if record:
            record_time(Path(p), elapsed)
        print(f"{elapsed:7.1f} s  {p}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
