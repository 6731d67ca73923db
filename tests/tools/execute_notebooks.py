"""Re-execute notebooks in place, the way `make outputs` does.

    python tests/tools/execute_notebooks.py notebooks/02_scaled_dot_product_attention.ipynb

Each notebook runs top to bottom in a fresh kernel from the notebooks/ folder,
with the environment `make test` uses (PYTHONHASHSEED=0, AIAYN_THREADS), so the
stored outputs are the ones strict nbval will reproduce. Timing metadata that
nbclient adds is removed, and the kernel is recorded as plain `python3`.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient


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


def main(paths: list[str]) -> None:
    os.environ.setdefault("PYTHONHASHSEED", "0")
    for p in paths:
        elapsed = execute(Path(p))
        print(f"{elapsed:7.1f} s  {p}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
