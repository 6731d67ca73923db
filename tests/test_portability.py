"""What keeps `make test` passing where readers run it: one repository URL, CI on a second kernel
set, workflows for Linux and macOS. (The thresholds themselves sit beside each trained check.)"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import set_repository_url  # noqa: E402

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_colab_cell_installs_from_the_configured_repository(path):
    url = set_repository_url.repository_url()
    first = next(c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code")
    assert set_repository_url.installed_from(first.source) == [url], (
        f"{path.name}: the Colab cell must install from _config.yml's repository.url ({url}); "
        "run `python tools/set_repository_url.py`"
    )


def test_set_repository_url_rewrites_config_and_notebooks(tmp_path):
    config = tmp_path / "_config.yml"
    config.write_text((ROOT / "_config.yml").read_text())
    nb_path = tmp_path / "x.ipynb"
    nb_path.write_text(NOTEBOOKS[0].read_text())
    set_repository_url.set_config_url("https://github.com/someone/fork", config)
    assert set_repository_url.repository_url(config) == "https://github.com/someone/fork"
    assert set_repository_url.sync_notebooks("https://github.com/someone/fork", [nb_path]) == [nb_path]
    first = next(c for c in nbformat.read(nb_path, as_version=4).cells if c.cell_type == "code")
    assert set_repository_url.installed_from(first.source) == ["https://github.com/someone/fork"]
    assert set_repository_url.sync_notebooks("https://github.com/someone/fork", [nb_path]) == []


def test_portable_target_uses_the_generic_kernels_and_one_thread():
    run = (ROOT / ".ci" / "run").read_text().splitlines()
    commands = [line.strip() for line in run if line.strip().startswith("make ")]
    assert commands == ["make test", "make test-portable"]
    makefile = (ROOT / "Makefile").read_text()
    assert "ATEN_CPU_CAPABILITY=default AIAYN_THREADS=1" in makefile


def test_workflows_run_make_test_on_linux_and_macos_and_publish_the_site():
    test = yaml.safe_load((ROOT / ".github" / "workflows" / "test.yml").read_text())
    job = test["jobs"]["make-test"]
    assert set(job["strategy"]["matrix"]["os"]) == {"ubuntu-latest", "macos-latest"}
    assert any(step.get("run") == "make test" for step in job["steps"])
    assert any(step.get("with", {}).get("cache") == "pip" for step in job["steps"])
    pages = yaml.safe_load((ROOT / ".github" / "workflows" / "pages.yml").read_text())
    build = pages["jobs"]["build"]["steps"]
    assert any(step.get("run") == "make book" for step in build)
    assert any(step.get("with", {}).get("path") == "_build/html" for step in build)
    assert pages[True]["push"]["branches"] == ["main"]  # YAML 1.1 reads the key `on` as True
