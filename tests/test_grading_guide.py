"""The instructor guide's sandbox section says what tools/grade.py does.

Its limits are grade.py's defaults, and it says what to install on each platform.
"""

from __future__ import annotations

import inspect
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
pytest.importorskip("nbgrader", reason="nbgrader is pinned in requirements.txt")
import grade  # noqa: E402

GUIDE = " ".join((ROOT / "book" / "instructor_guide.md").read_text().split())


def _cli_defaults() -> dict[str, object]:
    """make grade's defaults, read from grade.py's command line help."""
    found = {}
    for name in ("cell-timeout", "notebook-timeout", "memory", "processes"):
        m = re.search(rf'"--{name}",.*?default=("?[^,\s]+"?),', inspect.getsource(grade.main), re.S)
        assert m, name
        found[name] = m[1].strip('"')
    return found


def test_the_guide_states_the_sandbox_limits_grade_py_uses():
    cli = _cli_defaults()
    inner = inspect.signature(grade.run_sandboxed).parameters
    memory_gib = grade._bytes(cli["memory"]) / 2**30
    stated = [
        f"at most {cli['cell-timeout']} s per cell",
        f"{cli['notebook-timeout']} s per notebook",
        f"{memory_gib:g} GiB of address space per process",
        f"{cli['processes']} processes and threads",
        f"{inner['file_size'].default >> 20} MiB per file",
        f"`/tmp` of {inner['tmp_size'].default >> 20} MiB",
        f"a private folder of {inner['scratch_size'].default >> 20} MiB",
        f"limited to {inner['scratch_size'].default >> 20} MiB each",
    ]
    missing = [s for s in stated if s not in GUIDE]
    assert not missing, f"the guide does not say {missing}"


def test_the_guide_says_what_to_install_on_each_platform():
    for needed in ("sudo apt install bubblewrap", "sudo dnf install bubblewrap", "macOS", "WSL 2"):
        assert needed in GUIDE, needed
    for needed in ("apt install bubblewrap", "dnf install bubblewrap", "macOS", "WSL"):
        assert needed in grade.INSTALL, needed  # what make grade prints when it refuses
    assert "GRADE_FLAGS=--unsandboxed" in GUIDE and "never for students' submissions" in GUIDE


# the guide's rows of assignment 1's score table -> tests/test_grading.py's submission
# (None: the correct answers; "probe": the correct answers with every escape)
SCORE_ROWS = {
    "correct": None,
    r"divides by $d_k$ instead of $\sqrt{d_k}$, and empties its test cells": "divides by d_k",
    "splits the heads without the transpose": "splits heads without the transpose",
    "inverted mask": "inverted mask",
    "ignores the masks": "ignores masks",
    "merges the heads in the wrong order (permuted rows of $W^O$)": (
        "permuted W^O rows (heads merged in the wrong order)"
    ),
    "imports `aiayn_helpers`": "imports aiayn_helpers",
    "correct, and tries every escape listed below": "probe",
}


def _guide_score_table() -> dict[str, str]:
    text = (ROOT / "book" / "instructor_guide.md").read_text()
    table = text.split("| Submission | Score |\n|---|---|\n", 1)[1].split("\n\n", 1)[0]
    return dict(re.fullmatch(r"\| (.+) \| (\d+%) \|", line).groups() for line in table.splitlines())


def test_the_guides_score_table_is_the_graders_own_results_row_by_row():
    """Each row's score follows from tests/test_grading.py's LOST (the test cells each
    planted bug loses there, asserted on nbgrader's grading in the sandbox) and the
    source's points; the in-process grader (tests/grading_harness.py) loses the same
    cells for each bug."""
    import grading_harness
    import test_grading

    points = grading_harness.points("assignment1")
    full = sum(points.values())
    rows = _guide_score_table()
    assert sorted(rows) == sorted(SCORE_ROWS), rows
    solutions = test_grading._solutions()
    for row, bug in SCORE_ROWS.items():
        lost = set(test_grading.LOST[bug][0]) if bug in test_grading.LOST else set()
        expected = f"{round(100 * (full - sum(points[t] for t in lost)) / full)}%"
        assert rows[row] == expected, (row, rows[row], expected)
        if bug in test_grading.BUGS:
            answers = test_grading.test_assignments._with_bug(solutions, test_grading.BUGS[bug], bug)
            graded = grading_harness.grade("assignment1", grading_harness.filled("assignment1", answers))
            assert {t for t, why in graded.failures.items() if why} == lost, (bug, graded.failures)


def test_python_m_grading_runs_each_command_and_refuses_others(capsys):
    """Grading's entry point inside tools/grading/ (issue 52 item 2): ``python -m grading
    collect|grade|export`` with tools/ on the path, the same functions as the thin
    tools/grade.py and tools/collect.py (which a course's nbgrader_config.py imports)."""
    import os
    import subprocess

    env = dict(os.environ, PYTHONPATH=str(ROOT / "tools"))
    refused = subprocess.run([sys.executable, "-m", "grading", "regrade"], env=env, capture_output=True, text=True)
    assert refused.returncode == 2 and "expected a command, got regrade" in refused.stderr
    from grading import __main__ as entry

    for command, option in (("collect", "--utc-offset"), ("grade", "--cell-timeout"), ("export", "--worksheet")):
        with pytest.raises(SystemExit) as done:
            entry.main([command, "--help"])
        assert done.value.code == 0 and option in capsys.readouterr().out, command
    assert entry.main([]) == 2
