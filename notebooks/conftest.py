"""Pytest hooks for the notebooks: report how long each notebook took under strict nbval."""

from __future__ import annotations

from collections import defaultdict

_durations: dict[str, float] = defaultdict(float)


def pytest_runtest_logreport(report):
    path = report.nodeid.split("::", 1)[0]
    if path.endswith(".ipynb"):
        _durations[path] += report.duration


def pytest_terminal_summary(terminalreporter):
    if not _durations:
        return
    terminalreporter.section("time per notebook")
    for path, seconds in sorted(_durations.items()):
        terminalreporter.write_line(f"{seconds:7.1f} s  {path}")
    terminalreporter.write_line(f"{sum(_durations.values()):7.1f} s  in all")
