"""What keeps `make test` passing where readers run it: one repository URL, CI on a second kernel
set, workflows for Linux and macOS. (The thresholds themselves sit beside each trained check.)"""

from __future__ import annotations

import re
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
    assert set_repository_url.install_specs(first.source) == [("[reader]", url, set_repository_url.release_tag())], (
        f"{path.name}: the Colab cell must install aiayn_helpers[reader] from _config.yml's repository.url "
        f"({url}) at the release tag {set_repository_url.release_tag()}; run `python tools/set_repository_url.py`"
    )


def imported_modules(path: Path) -> set[str]:
    """The top-level modules a notebook's code cells import (IPython magics skipped)."""
    import ast

    names = set()
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type != "code":
            continue
        lines = cell.source.splitlines()  # an IPython magic becomes `pass`, keeping the indentation
        magic = [line.lstrip().startswith(("%", "!")) for line in lines]
        source = "\n".join(ln[: len(ln) - len(ln.lstrip())] + "pass" if m else ln for ln, m in zip(lines, magic))
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names.add(node.module.split(".")[0])
    return names


# Modules a chapter may import that are optional on purpose: the chapter says what is
# missing and carries on without them (chapter 8's export to Transformers and CTranslate2).
OPTIONAL = {"transformers", "ctranslate2"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_colab_install_gives_every_module_the_chapter_imports(path):
    """What the Colab cell installs (the package's dependencies and its reader extra) covers the chapter's imports."""
    import importlib.metadata
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = project["dependencies"] + project["optional-dependencies"]["reader"]
    installed = {re.split(r"[<>=!\[; ]", spec, maxsplit=1)[0].lower().replace("_", "-") for spec in wanted}
    installed |= {"aiayn-helpers", "ipython"}  # the package itself; ipykernel brings IPython
    distributions = importlib.metadata.packages_distributions()
    missing = []
    for module in sorted(imported_modules(path) - set(sys.stdlib_module_names) - OPTIONAL):
        dists = {d.lower().replace("_", "-") for d in distributions.get(module, [module])}
        if not dists & installed:
            missing.append(f"{module} (from {sorted(dists)})")
    assert not missing, f"{path.name} imports what aiayn_helpers[reader] does not install: {missing}"


def test_set_repository_url_rewrites_config_and_notebooks(tmp_path):
    config = tmp_path / "_config.yml"
    config.write_text((ROOT / "_config.yml").read_text())
    nb_path = tmp_path / "x.ipynb"
    nb_path.write_text(NOTEBOOKS[0].read_text())
    set_repository_url.set_config_url("https://github.com/someone/fork", config)
    assert set_repository_url.repository_url(config) == "https://github.com/someone/fork"
    assert set_repository_url.sync_notebooks("https://github.com/someone/fork", [nb_path]) == [nb_path]
    first = next(c for c in nbformat.read(nb_path, as_version=4).cells if c.cell_type == "code")
    assert [url for _, url, _ in set_repository_url.install_specs(first.source)] == ["https://github.com/someone/fork"]
    assert set_repository_url.sync_notebooks("https://github.com/someone/fork", [nb_path]) == []


def test_portable_target_uses_the_generic_kernels_and_one_thread():
    run = (ROOT / ".ci" / "run").read_text().splitlines()
    commands = [line.strip() for line in run if line.strip().startswith("make ")]
    assert commands == ["make test", "make test-portable"]
    makefile = (ROOT / "Makefile").read_text()
    assert "ATEN_CPU_CAPABILITY=default AIAYN_THREADS=1" in makefile


def test_workflows_test_both_ends_of_the_python_range_and_publish_the_student_site_after_the_tests():
    import tomllib

    test = yaml.safe_load((ROOT / ".github" / "workflows" / "test.yml").read_text())
    job = test["jobs"]["make-test"]
    runs = job["strategy"]["matrix"]["include"]
    assert {r["os"] for r in runs} == {"ubuntu-latest", "macos-latest"}
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert requires == ">=3.11,<3.15"  # the oldest and newest below must follow it
    assert {r["python"] for r in runs if r["os"] == "ubuntu-latest"} == {"3.11", "3.14"}
    assert any(step.get("run") == "make test" for step in job["steps"])
    assert any(step.get("with", {}).get("cache") == "pip" for step in job["steps"])
    pages = yaml.safe_load((ROOT / ".github" / "workflows" / "pages.yml").read_text())
    trigger = pages[True] if True in pages else pages["on"]  # YAML 1.1 reads the key `on` as True
    assert trigger["workflow_run"]["workflows"] == ["test"]  # deploys only after the tests ...
    assert "conclusion == 'success'" in pages["jobs"]["build"]["if"]  # ... passed
    build = pages["jobs"]["build"]["steps"]
    assert any("make_student.py" in step.get("run", "") for step in build)
    assert any(step.get("with", {}).get("path") == "_student/_build/html" for step in build)
    full_install = re.compile(r"-r requirements\.txt|make (book|setup|test)")  # the dev tools too: not here
    assert not any(full_install.search(step.get("run", "")) for step in build)
    assert trigger["workflow_run"]["branches"] == ["main"]


def test_binder_installs_the_cpu_reader_set_at_the_pins_of_requirements():
    import tomllib

    def pins(path: Path) -> dict[str, str]:
        lines = [ln.split("#")[0].strip() for ln in path.read_text().splitlines()]
        return dict(ln.lower().split("==") for ln in lines if "==" in ln)

    binder = ROOT / "binder"
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in (binder / "requirements.txt").read_text()
    ours, full = pins(binder / "requirements.txt"), pins(ROOT / "requirements.txt")
    assert all(full.get(name) == version for name, version in ours.items()), "binder pins differ from requirements.txt"
    reader = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["reader"]
    names = {re.split(r"[<>=!\[; ]", spec, maxsplit=1)[0].lower() for spec in reader} | {"torch", "numpy"}
    assert set(ours) == names, f"binder installs {sorted(ours)}, the reader set is {sorted(names)}"
    assert not {"pytest", "nbgrader", "playwright", "ruff", "jupyter-book"} & set(ours)
    assert "pip install --no-deps -e ." in (binder / "postBuild").read_text()
