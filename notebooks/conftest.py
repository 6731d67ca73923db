"""Pytest hooks for the notebooks under strict nbval.

- Report how long each notebook took.
- Keep every chapter within a classroom hub's memory: after a notebook's last cell,
  ask its kernel for its peak resident memory (``PEAK_MEMORY_EXPRESSION`` in
  tools/execute_notebooks.py, the expression that also writes the instructor guide's
  table) and fail that cell when it is above ``MEMORY_BUDGET_GB``. The peaks are
  reported beside the times. ``AIAYN_MEMORY_BUDGET_GB`` overrides the budget (the
  test of this hook lowers it to see it fire).
"""

from __future__ import annotations

import os
import sys
from collections import defaultdict
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from execute_notebooks import MEMORY_BUDGET_GB, PEAK_MEMORY_EXPRESSION  # noqa: E402

_durations: dict[str, float] = defaultdict(float)
_peaks: dict[str, int] = {}


def _budget_bytes() -> float:
    return float(os.environ.get("AIAYN_MEMORY_BUDGET_GB", MEMORY_BUDGET_GB)) * 1e9


def _is_last_cell(item) -> bool:
    nb = getattr(item.parent, "nb", None)
    if nb is None or not hasattr(item, "cell_num"):
        return False  # not an nbval cell
    return item.cell_num == sum(c.cell_type == "code" for c in nb.cells) - 1


def _kernel_peak_bytes(kernel, timeout: float = 60) -> int:
    """PEAK_MEMORY_EXPRESSION evaluated in nbval's kernel (silent: no output)."""
    msg_id = kernel.kc.execute(
        "",
        silent=True,
        store_history=False,
        user_expressions={"peak": PEAK_MEMORY_EXPRESSION},
    )
    while True:
        reply = kernel.kc.get_shell_msg(timeout=timeout)
        if reply["parent_header"].get("msg_id") == msg_id:
            break
    value = reply["content"]["user_expressions"]["peak"]
    if value.get("status") != "ok":
        raise RuntimeError(f"the kernel could not report its peak memory: {value}")
    return int(value["data"]["text/plain"])


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    result = yield  # a failing cell raises here, and nothing is measured
    if _is_last_cell(item):
        peak = _kernel_peak_bytes(item.parent.kernel)
        item.user_properties.append(("peak_memory_bytes", peak))
        budget = _budget_bytes()
        if peak > budget:
            raise AssertionError(
                f"{item.parent.name}: the kernel's peak resident memory was "
                f"{peak / 1e9:.2f} GB, above the budget of {budget / 1e9:.2f} GB per "
                "notebook (a classroom hub's share per student; the instructor guide). "
                "Find the cell that grows it (VmHWM in /proc/self/status before and "
                "after) and free or batch its large tensors."
            )
    return result


def pytest_runtest_logreport(report):
    path = report.nodeid.split("::", 1)[0]
    if path.endswith(".ipynb"):
        _durations[path] += report.duration
        for name, value in report.user_properties:
            if name == "peak_memory_bytes":
                _peaks[path] = value


def pytest_terminal_summary(terminalreporter):
    if not _durations:
        return
    terminalreporter.section("time and peak memory per notebook")
    for path, seconds in sorted(_durations.items()):
        peak = f"{_peaks[path] / 1e9:5.2f} GB" if path in _peaks else "   not measured"
        terminalreporter.write_line(f"{seconds:7.1f} s  {peak}  {path}")
    terminalreporter.write_line(f"{sum(_durations.values()):7.1f} s  in all")
    budget = _budget_bytes() / 1e9
    terminalreporter.write_line(f"memory budget per notebook: {budget:.2f} GB")
