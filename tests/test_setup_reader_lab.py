"""What ``make setup`` adds to the reader's JupyterLab (``make reader-lab``,
tools/chapters/jupyterlab/), checked without a browser: the files and what they switch
off. tests/test_jupyterlab_reader.py opens the JupyterLab they make (integration)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "tools" / "chapters" / "jupyterlab"
INSTALLED = {
    "etc/jupyter/labconfig/page_config.json": "page_config.json",
    "etc/jupyter/jupyter_server_config.d/zz_aiayn_reader.json": "nbgrader_off.json",
    "share/jupyter/labextensions/aiayn-reader/package.json": "aiayn-reader/package.json",
    "share/jupyter/labextensions/aiayn-reader/static/remoteEntry.js": "aiayn-reader/static/remoteEntry.js",
}

needs_make = pytest.mark.skipif(shutil.which("make") is None, reason="no make")


@needs_make
def test_make_setup_runs_reader_lab(tmp_path):
    """``make setup`` installs the reader's JupyterLab every time it runs (``make -n``:
    nothing runs; the recursive ``reader-lab`` prints its commands)."""
    dry = subprocess.run(
        ["make", "-n", "--no-print-directory", "setup", f"LAB_PREFIX={tmp_path}"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    )  # fmt: skip
    for path in INSTALLED:
        assert f"{tmp_path}/{Path(path).parent}" in dry.stdout, f"make setup does not install {path}"


@needs_make
def test_reader_lab_installs_its_files(tmp_path):
    subprocess.run(
        ["make", "--no-print-directory", "reader-lab", f"LAB_PREFIX={tmp_path}"],
        cwd=ROOT, capture_output=True, check=True,
    )  # fmt: skip
    for path, source in INSTALLED.items():
        assert (tmp_path / path).read_bytes() == (SOURCE / source).read_bytes(), path


def test_every_nbgrader_extension_is_switched_off():
    """Each server extension nbgrader enables (its own jupyter_server_config.d/nbgrader.json
    in this environment) is off in the reader's file, which sorts after it (the later file
    wins), and nbgrader's lab extension is disabled: a new nbgrader that adds one fails here."""
    nbgrader = Path(sys.prefix) / "etc" / "jupyter" / "jupyter_server_config.d" / "nbgrader.json"
    if not nbgrader.is_file():
        pytest.skip("nbgrader's server extensions are not installed here")
    enabled = json.loads(nbgrader.read_text())["ServerApp"]["jpserver_extensions"]
    off = json.loads((SOURCE / "nbgrader_off.json").read_text())["ServerApp"]["jpserver_extensions"]
    assert enabled and {name for name, on in enabled.items() if on} <= {n for n, on in off.items() if not on}
    assert sorted(["nbgrader.json", Path(list(INSTALLED)[1]).name])[-1] == "zz_aiayn_reader.json"
    labextension = Path(sys.prefix) / "share" / "jupyter" / "labextensions" / "@jupyter" / "nbgrader"
    name = json.loads((labextension / "package.json").read_text())["name"] if labextension.is_dir() else None
    disabled = json.loads((SOURCE / "page_config.json").read_text())["disabledExtensions"]
    assert disabled == {name or "@jupyter/nbgrader": True}


def test_the_extension_registers_its_plugin():
    """aiayn-reader's package.json points JupyterLab at the file that registers the
    container its name says, with the module "./extension"."""
    package = json.loads((SOURCE / "aiayn-reader" / "package.json").read_text())
    build = package["jupyterlab"]["_build"]
    script = (SOURCE / "aiayn-reader" / build["load"]).read_text()
    assert build["extension"] == "./extension" and f'module !== "{build["extension"]}"' in script
    assert f'window._JUPYTERLAB["{package["name"]}"] = container' in script
