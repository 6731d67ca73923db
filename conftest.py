"""Pytest hooks for the notebooks under strict nbval (``pytest --nbval notebooks``).

This file sits in the repository's root, not in notebooks/, so that a reader's file
browser (``jupyter lab notebooks/``) shows the chapters and what they open, not the
tests' hooks. Being the root's, pytest loads it for every run; the hooks act on nbval's
cells only (``_is_last_cell``, paths ending in .ipynb), and tools/chapters/execute_notebooks.py is
imported only when a notebook is measured.

- Report how long each notebook took.
- Keep every chapter within a classroom hub's memory: after a notebook's last cell
  (run or skipped), ask its kernel for its peak resident memory and CPU time
  (``PEAK_MEMORY_EXPRESSION`` and ``CPU_TIME_EXPRESSION`` in
  tools/chapters/execute_notebooks.py, the expressions that also write the instructor guide's
  table) and fail that cell when the peak is above ``MEMORY_BUDGET_GB``. The figures
  are reported beside the times, under pytest-xdist too (they travel in the reports'
  ``user_properties``). ``AIAYN_MEMORY_BUDGET_GB`` overrides the budget (the test of
  this hook lowers it to see it fire).
- Keep the guide's table honest, when asked (``AIAYN_CHECK_TABLE=1``, on Linux, on
  the kind of machine the table was measured on): the last cell also fails when the
  kernel's peak is above the one book/notebook_times.json records for the notebook by
  more than ``STALE_FRACTION`` of it (and at least ``STALE_MIN_GB``): the table would
  understate what a student needs, and ``tools/chapters/execute_notebooks.py --measure-only``
  must measure the notebook again. Not in ``make test``: a fresh clone's kernels on
  another machine peaked up to 0.34 GB above the table (0.77 against 0.43 GB for
  chapter 0), while every chapter stayed far inside the budget.
"""

from __future__ import annotations

import json
import os
import sys
from collections import defaultdict
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parent / "tools"

# How far above the recorded peak a measured one may be before the table is stale: the
# same notebook measured again on one machine differs by a few per cent.
STALE_FRACTION = 0.2
STALE_MIN_GB = 0.1

_durations: dict[str, float] = defaultdict(float)
_peaks: dict[str, int] = {}
_cpu: dict[str, float] = {}


def _execute_notebooks():
    """tools/chapters/execute_notebooks.py, which holds the budget and the kernel's expressions."""
    if str(TOOLS) not in sys.path:
        sys.path.insert(0, str(TOOLS))
    from chapters import execute_notebooks

    return execute_notebooks


def _budget_bytes() -> float:
    budget = os.environ.get("AIAYN_MEMORY_BUDGET_GB", _execute_notebooks().MEMORY_BUDGET_GB)
    return float(budget) * 1e9


def _is_last_cell(item) -> bool:
    nb = getattr(item.parent, "nb", None)
    if nb is None or not hasattr(item, "cell_num"):
        return False  # not an nbval cell
    return item.cell_num == sum(c.cell_type == "code" for c in nb.cells) - 1


def _kernel_figures(kernel, timeout: float = 60) -> tuple[int, float]:
    """The kernel's peak bytes and CPU seconds (a silent request: no output)."""
    tools = _execute_notebooks()
    msg_id = kernel.kc.execute(
        "",
        silent=True,
        store_history=False,
        user_expressions={
            "peak": tools.PEAK_MEMORY_EXPRESSION,
            "cpu": tools.CPU_TIME_EXPRESSION,
        },
    )
    while True:
        reply = kernel.kc.get_shell_msg(timeout=timeout)
        if reply["parent_header"].get("msg_id") == msg_id:
            break
    values = reply["content"]["user_expressions"]
    if any(v.get("status") != "ok" for v in values.values()):
        raise RuntimeError(f"the kernel could not report its peak memory: {values}")
    peak, cpu = (values[k]["data"]["text/plain"] for k in ("peak", "cpu"))
    return int(peak), float(cpu)


def _recorded_peak_bytes(item) -> float | None:
    """The peak that book/notebook_times.json (the guide's table) gives the notebook."""
    root = Path(item.config.rootpath)
    try:
        key = Path(item.path).resolve().relative_to(root.resolve()).as_posix()
        times = json.loads((root / "book" / "notebook_times.json").read_text())
    except (ValueError, OSError, json.JSONDecodeError):
        return None
    entry = times.get(key, {})
    if "peak_memory_mb" not in entry:
        return None
    return entry["peak_memory_mb"] * 1e6


def _measure(item) -> None:
    peak, cpu = _kernel_figures(item.parent.kernel)
    item.user_properties += [("peak_memory_bytes", peak), ("cpu_seconds", cpu)]
    budget = _budget_bytes()
    if peak > budget:
        raise AssertionError(
            f"{item.parent.name}: the kernel's peak resident memory was "
            f"{peak / 1e9:.2f} GB, above the budget of {budget / 1e9:.2f} GB per "
            "notebook (a classroom hub's share per student; the instructor guide). "
            "Find the cell that grows it (VmHWM in /proc/self/status before and "
            "after) and free or batch its large tensors."
        )
    recorded = _recorded_peak_bytes(item)
    if recorded is None or not sys.platform.startswith("linux"):
        return
    if os.environ.get("AIAYN_CHECK_TABLE") != "1":
        return
    allowed = recorded + max(STALE_FRACTION * recorded, STALE_MIN_GB * 1e9)
    if peak > allowed:
        raise AssertionError(
            f"{item.parent.name}: the kernel's peak resident memory was "
            f"{peak / 1e9:.2f} GB, but book/notebook_times.json (the instructor "
            f"guide's table) records {recorded / 1e9:.2f} GB; measure it again: "
            f"tools/chapters/execute_notebooks.py --measure-only {item.path.name}"
        )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    if not _is_last_cell(item):
        return (yield)
    try:
        result = yield  # a failing cell raises here, and nothing is measured
    except pytest.skip.Exception:  # the cells before it ran: measure them
        _measure(item)
        raise
    _measure(item)
    return result


def pytest_runtest_logreport(report):
    path = report.nodeid.split("::", 1)[0]
    if path.endswith(".ipynb"):
        _durations[path] += report.duration
        for name, value in report.user_properties:
            if name == "peak_memory_bytes":
                _peaks[path] = value
            elif name == "cpu_seconds":
                _cpu[path] = value


def pytest_terminal_summary(terminalreporter):
    if not _durations:
        return
    terminalreporter.section("time, kernel CPU time and peak memory per notebook")
    for path, seconds in sorted(_durations.items()):
        if path in _peaks:
            figures = f"{_cpu[path]:6.1f} s CPU  {_peaks[path] / 1e9:5.2f} GB"
        else:
            figures = "  not measured (its last cell failed or did not run)"
        terminalreporter.write_line(f"{seconds:7.1f} s  {figures}  {path}")
    terminalreporter.write_line(f"{sum(_durations.values()):7.1f} s  in all")
    budget = _budget_bytes() / 1e9
    terminalreporter.write_line(f"memory budget per notebook: {budget:.2f} GB")
