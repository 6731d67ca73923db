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
