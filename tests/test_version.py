"""One version number, read from one place (issue #34): pyproject.toml's."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import aiayn_helpers as ah

ROOT = Path(__file__).resolve().parents[1]


def test_the_package_says_the_version_of_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert ah.__version__ == project["version"]


def test_a_built_wheel_says_the_same_version(tmp_path):
    """Installed from a wheel (no pyproject.toml beside it), the metadata answers."""
    site = tmp_path / "site"
    (site / "aiayn_helpers").mkdir(parents=True)
    init = (ROOT / "aiayn_helpers" / "__init__.py").read_text()
    start = init.index("def _version")
    end = init.index("__version__ = _version()")
    code = init[start:end].replace("__file__", repr(str(site / "aiayn_helpers" / "x")))
    code += "print(_version())\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    # no pyproject.toml there: the installed metadata (make setup's editable install)
    assert done.stdout.strip() == project["version"]
