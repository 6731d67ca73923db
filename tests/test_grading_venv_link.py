"""A venv reached through a symbolic link grades in the sandbox (issue #34, item 7).

The sandbox binds the venv at its real path; it used to run the interpreter at the
link's path, which does not exist inside, and `make grade` refused with "install
bubblewrap" although bubblewrap was installed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
pytest.importorskip("nbgrader", reason="nbgrader is pinned in requirements.txt")
from grading import sandbox  # noqa: E402

NO_SANDBOX = sandbox.sandbox_problem()


@pytest.mark.skipif(NO_SANDBOX is not None, reason=f"no sandbox here: {NO_SANDBOX}")
def test_a_linked_venv_runs_in_the_sandbox(tmp_path):
    if sys.prefix == sys.base_prefix:
        pytest.skip("not run from a venv")
    link = tmp_path / "venv-link"
    link.symlink_to(Path(sys.prefix).resolve(), target_is_directory=True)
    python = link / "bin" / Path(sys.executable).name
    code = (
        f"import sys; sys.path.insert(0, {str(ROOT / 'tools')!r})\n"
        "from grading import sandbox\n"
        "print(sandbox.python()); print(sandbox.sandbox_problem())\n"
    )
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    ran, problem = done.stdout.splitlines()[-2:]
    assert problem == "None", problem
    # the interpreter runs at the venv's real folder, not through the link
    assert not ran.startswith(str(link)) and Path(ran).parent == python.parent.resolve()


def test_a_broken_sandbox_is_not_reported_as_a_missing_bubblewrap():
    broken = sandbox.refusal("could not start a sandbox (exit 127: no such file)")
    assert "apt install" not in broken and "exit 127: no such file" in broken
    assert "is installed" in broken
    missing = sandbox.refusal("is not installed (no bwrap on PATH)")
    assert "apt install bubblewrap" in missing
