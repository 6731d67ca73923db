"""Where CI installed bubblewrap, the sandbox must work: its tests may not skip there.

tests/test_grading.py skips the probing submission's tests on a machine where
bubblewrap cannot run (not installed, or namespaces forbidden). .ci/run installs
bubblewrap and sets AIAYN_REQUIRE_SANDBOX=1, so a CI machine on which the sandbox
does not work fails here, saying why, instead of passing without the probe.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
pytest.importorskip("nbgrader", reason="nbgrader is pinned in requirements.txt")
import grade  # noqa: E402


@pytest.mark.skipif(
    os.environ.get("AIAYN_REQUIRE_SANDBOX") != "1",
    reason="only where AIAYN_REQUIRE_SANDBOX=1 (.ci/run)",
)
def test_the_sandbox_works_where_ci_requires_it():
    grade.sandbox_problem.cache_clear()
    problem = grade.sandbox_problem()
    assert problem is None, f"bubblewrap {problem}: the sandbox tests would be skipped"
