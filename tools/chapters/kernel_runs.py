"""Run a chapter's first cells under each CPU kernel set and thread count; record values.

    python tools/chapters/kernel_runs.py notebooks/01_history_of_attention.ipynb \\
        --through "assert (offset == 1)" --out /tmp/ch01_runs.json \\
        --value 'within_one=(offset.abs() <= 1).float().mean().item()' ...

A bound that a chapter asserts on something trained must hold on every CPU a reader
has (CONTRIBUTING, "Thresholds"): PyTorch picks its CPU kernels by the instruction
set (``ATEN_CPU_CAPABILITY``: default, avx2, avx512) and splits work by thread count,
and either can change a trained model's numbers. For each of the six settings this
runs the notebook's cells up to and including the first cell whose source contains
``--through``, in a fresh kernel (nbclient, ``PYTHONHASHSEED=0``), with
``ATEN_CPU_CAPABILITY`` set and the chapter's ``setup_notebook(seed=0, threads=1)``
changed to the run's thread count; then it evaluates each ``--value`` expression in
that kernel and writes one JSON record per run (with the capability PyTorch reports,
so a machine without AVX-512 says so instead of silently running another kernel).

A tests/data record made with it is read by a test that checks the chapter's asserted
bounds against every run with a margin (tests/test_prose_numbers.py).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

SETUP = "ah.setup_notebook(seed=0, threads=1)"
SETTINGS = [(cap, threads) for cap in ("default", "avx2", "avx512") for threads in (1, 2)]


def cells_through(nb, marker: str) -> list:
    """The notebook's cells up to and including the first code cell holding marker."""
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and marker in cell.source:
            return nb.cells[: i + 1]
    raise ValueError(f"no code cell contains {marker!r}")


def run_once(path: Path, marker: str, values: dict[str, str], cap: str, threads: int) -> dict:
    nb = nbformat.read(path, as_version=4)
    cells = [c for c in cells_through(nb, marker) if c.cell_type == "code"]
    setups = [c for c in cells if SETUP in c.source]
    if len(setups) != 1:
        raise ValueError(f"expected one cell with {SETUP!r}, found {len(setups)}")
    setups[0].source = setups[0].source.replace(SETUP, f"ah.setup_notebook(seed=0, threads={threads})")
    probe = (
        "import json as _j, torch as _t\nprint(_j.dumps({"
        + ", ".join(f"{name!r}: {expr}" for name, expr in values.items())
        + ', "_capability": _t.backends.cpu.get_cpu_capability(), "_threads": _t.get_num_threads()}))'
    )
    nb.cells = [*cells, nbformat.v4.new_code_cell(probe)]
    env = {**os.environ, "ATEN_CPU_CAPABILITY": cap, "PYTHONHASHSEED": "0"}
    if threads > 1:
        env["OMP_WAIT_POLICY"] = "PASSIVE"  # how a waiting thread sleeps; no arithmetic
    client = NotebookClient(nb, timeout=1800, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    client.execute(env=env)  # the kernel's environment (jupyter_client's start_kernel)
    seconds = time.perf_counter() - start
    out = "".join(o.get("text", "") for o in nb.cells[-1].outputs if o.get("name") == "stdout")
    record = json.loads(out.strip().splitlines()[-1])
    return {"capability": cap, "threads": threads, **record, "seconds": round(seconds, 1)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebook", type=Path)
    parser.add_argument("--through", required=True, help="text of the last cell to run")
    parser.add_argument("--value", action="append", default=[], help="NAME=EXPRESSION")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    values = dict(v.split("=", 1) for v in args.value)
    if not values:
        parser.error("give at least one --value NAME=EXPRESSION")
    runs = []
    for cap, threads in SETTINGS:
        print(f"{args.notebook.name}: ATEN_CPU_CAPABILITY={cap}, {threads} thread(s)", file=sys.stderr, flush=True)
        runs.append(run_once(args.notebook.resolve(), args.through, values, cap, threads))
        print(f"  {runs[-1]['seconds']} s, PyTorch used {runs[-1]['_capability']}", file=sys.stderr, flush=True)
    load = os.getloadavg()[0]
    args.out.write_text(json.dumps({"runs": runs, "load_average_at_end": round(load, 2)}, indent=1) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
