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


def test_the_student_edition_names_the_wheel_of_that_version(tmp_path):
    """Built without a wheel (make_editions' check), the student edition's
    requirements.txt names the wheel a build would make: its version read from
    pyproject.toml, not written into tools/editions/make_student.py."""
    sys.path.insert(0, str(ROOT / "tools"))
    from editions import make_student

    assert make_student.package_version() == ah.__version__
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "aiayn_helpers"\nversion = "9.8.7"\n')
    assert make_student.package_version(tmp_path) == "9.8.7"
