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
from editions import set_repository_url  # noqa: E402

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_colab_cell_installs_from_the_configured_repository(path):
    url = set_repository_url.repository_url()
    first = next(c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code")
    assert set_repository_url.install_specs(first.source) == [("[reader]", url, set_repository_url.release_tag())], (
        f"{path.name}: the Colab cell must install aiayn_helpers[reader] from _config.yml's repository.url "
        f"({url}) at the release tag {set_repository_url.release_tag()}; "
        "run `python tools/editions/set_repository_url.py`"
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
# What Colab's runtime pins (its google-colab package) and Colab warns against upgrading:
# "Upgrading ipython, ipykernel, tornado, prompt-toolkit or pyzmq can cause your runtime to
# repeatedly crash". The Colab cell must not pull any of them, even indirectly.
COLAB_RUNTIME = {"ipykernel", "ipython", "tornado", "prompt-toolkit", "pyzmq"}
COLAB_RUNTIME |= {"notebook", "jupyter-server", "jupyterlab"}  # Colab's own Jupyter server


def _name(spec: str) -> str:
    return re.split(r"[<>=!~\[; ]", spec.strip(), maxsplit=1)[0].lower().replace("_", "-")


def package_requirements(extras: str) -> set[str]:
    """The distributions pyproject.toml names for ``aiayn_helpers`` with ``extras`` (e.g. "[reader]"):
    its dependencies and those extras, an extra that names the package's own extras followed."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names, todo, seen = {_name(s) for s in project["dependencies"]}, re.findall(r"[a-z]+", extras), set()
    while todo:
        extra = todo.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for spec in project["optional-dependencies"][extra]:
            if _name(spec) == "aiayn-helpers":
                todo += re.findall(r"[a-z]+", spec.split("[", 1)[1])
            else:
                names.add(_name(spec))
    return names


def installed_closure(names: set[str]) -> set[str]:
    """``names`` and what they require, transitively, as installed here (markers for this machine)."""
    import importlib.metadata

    from packaging.requirements import Requirement

    closure, todo = set(), list(names)
    while todo:
        name = todo.pop()
        if name in closure:
            continue
        closure.add(name)
        try:
            requires = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        for spec in requires:
            req = Requirement(spec)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name.lower().replace("_", "-"))
    return closure


def test_package_requirements_follow_the_extras_of_extras():
    reader, lab, dev = (package_requirements(f"[{e}]") for e in ("reader", "lab", "dev"))
    assert {"torch", "numpy", "jupyterquiz", "pooch"} <= reader
    assert lab - reader == {"ipykernel", "jupyterlab", "jupyterlab-myst"}
    assert reader < lab < dev and {"pytest", "nbgrader", "ruff", "playwright"} <= dev - lab


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_colab_install_gives_every_module_the_chapter_imports(path):
    """What the chapter's Colab cell installs (the package's dependencies and the extras the cell names, read from
    the cell) covers the chapter's imports, and leaves Colab's own Jupyter and IPython alone."""
    import importlib.metadata

    first = next(c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code")
    (extras, _, _), *others = set_repository_url.install_specs(first.source)
    assert not others, f"{path.name}: the Colab cell installs the package more than once"
    installed = package_requirements(extras) | {"aiayn-helpers", "ipython"}  # the package; Colab has IPython
    pulled = installed_closure(package_requirements(extras)) & COLAB_RUNTIME
    assert not pulled, f"{path.name}: the Colab cell would upgrade Colab's own {sorted(pulled)}"
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


def test_readme_links_point_at_the_configured_repository_and_release():
    readme = (ROOT / "README.md").read_text()
    links = set_repository_url.readme_links(readme)
    repo, tag = set_repository_url.owner_repo(set_repository_url.repository_url()), set_repository_url.release_tag()
    assert links, "the README links to no site, Colab, Binder or pip install"
    expected = {f"git+https://github.com/{repo}@{tag}", f"https://colab.research.google.com/github/{repo}/",
                f"https://mybinder.org/v2/gh/{repo}/", "https://{}.github.io/{}/".format(*repo.split("/"))}  # fmt: skip
    assert set(links) == expected, (
        f"run `python tools/editions/set_repository_url.py`: the README has {sorted(set(links))}"
    )
    # no placeholder for the address (the tool's usage line names its argument https://github.com/OWNER/REPO)
    assert not re.search(
        r"<(this repository|repository URL|URL)>|OWNER/REPO", readme.replace("github.com/OWNER/REPO", "")
    )


def test_set_repository_url_rewrites_the_readme_links(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text((ROOT / "README.md").read_text())
    assert set_repository_url.sync_readme("https://github.com/Someone/fork", readme)
    links = set(set_repository_url.readme_links(readme.read_text()))
    assert {"https://Someone.github.io/fork/", "https://mybinder.org/v2/gh/Someone/fork/"} <= links
    assert f"git+https://github.com/Someone/fork@{set_repository_url.release_tag()}" in links
    assert not set_repository_url.sync_readme("https://github.com/Someone/fork", readme)
    with pytest.raises(SystemExit, match="GitHub repository URL"):
        set_repository_url.owner_repo("https://gitlab.com/a/b")


def test_portable_target_uses_the_generic_kernels_and_one_thread():
    run = (ROOT / ".ci" / "run").read_text().splitlines()
    commands = [line.strip() for line in run if line.strip().startswith("make ")]
    # make test within its 12 minutes; the whole-class and JupyterLab runs after it, then the
    # exercise test; the generic kernels in the GitHub workflow (below), to keep .ci/run within
    # 45 minutes
    assert commands == ["make test", "make test-integration", "make test-exercises"]
    makefile = (ROOT / "Makefile").read_text()
    assert '-m "not exercises and not integration"' in makefile
    assert "-m integration" in makefile
    assert "-m exercises" in makefile
    assert "ATEN_CPU_CAPABILITY=default AIAYN_THREADS=1" in makefile


def test_readers_are_told_the_python_range_of_pyproject():
    """requires-python is the one statement of the range; the README and the introductions echo it."""
    import tomllib

    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    low, high = re.fullmatch(r">=3\.(\d+),<3\.(\d+)", requires).groups()
    stated = f"Python 3.{low} to 3.{int(high) - 1}"
    for page in ("README.md", "book/intro.md", "tools/editions/student_edition/intro.md"):
        assert stated in " ".join((ROOT / page).read_text().split()), f"{page} does not say {stated!r}"


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
    assert any(step.get("run") == "make test-integration" for step in job["steps"])
    assert any(step.get("run") == "make test-portable" for step in job["steps"])
    assert any(step.get("with", {}).get("cache") == "pip" for step in job["steps"])
    pages = yaml.safe_load((ROOT / ".github" / "workflows" / "pages.yml").read_text())
    trigger = pages[True] if True in pages else pages["on"]  # YAML 1.1 reads the key `on` as True
    assert trigger["workflow_run"]["workflows"] == ["test"]  # deploys only after the tests ...
    assert "conclusion == 'success'" in pages["jobs"]["build"]["if"]  # ... passed
    build = pages["jobs"]["build"]["steps"]
    assert any("make_student.py" in step.get("run", "") for step in build)
    assert any(step.get("with", {}).get("path") == "_student/_build/html" for step in build)
    full_install = re.compile(r"-r requirements\.txt|make (book|setup|test)|\[dev\]")  # the dev tools too: not here
    assert not any(full_install.search(step.get("run", "")) for step in build)
    # the build imports the package and its reader set (a build without pooch failed at the attention explorer)
    assert any('-e ".[reader]"' in step.get("run", "") for step in build)
    assert trigger["workflow_run"]["branches"] == ["main"]
    assert set(trigger) == {"workflow_run"}  # no manual trigger that would skip the tests
    # a fork's pull request from its own branch "main" matches `branches: [main]`: only pushes here publish
    assert "workflow_run.event == 'push'" in pages["jobs"]["build"]["if"]
    assert "head_repository.full_name == github.repository" in pages["jobs"]["build"]["if"]
    assert pages["permissions"] == {"contents": "read"}  # the build runs the repository's code: read only
    assert pages["jobs"]["deploy"]["permissions"] == {"pages": "write", "id-token": "write"}


def pins(path: Path) -> dict[str, str]:
    """``{name: version}`` of a requirements file's ``name==version`` lines."""
    lines = [ln.split("#")[0].strip() for ln in path.read_text().splitlines()]
    return dict(ln.lower().split("==") for ln in lines if "==" in ln)


def test_requirements_pin_every_package_of_the_reader_and_developer_sets():
    """requirements.txt, what `make setup` installs, is the full pinned set: [dev] with [lab] and [reader] in it."""
    assert package_requirements("[dev]") - set(pins(ROOT / "requirements.txt")) == set()
    assert "-e ." in (ROOT / "requirements.txt").read_text().splitlines()


def test_binder_installs_the_cpu_reader_set_at_the_pins_of_requirements():
    binder = ROOT / "binder"
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in (binder / "requirements.txt").read_text()
    ours, full = pins(binder / "requirements.txt"), pins(ROOT / "requirements.txt")
    assert all(full.get(name) == version for name, version in ours.items()), "binder pins differ from requirements.txt"
    names = package_requirements("[lab]")  # the reader set and JupyterLab, torch and numpy included
    assert set(ours) == names, f"binder installs {sorted(ours)}, the [lab] set is {sorted(names)}"
    assert not {"pytest", "nbgrader", "playwright", "ruff", "jupyter-book"} & set(ours)
    assert "pip install --no-deps -e ." in (binder / "postBuild").read_text()
    # the Binder button opens JupyterLab (lab/tree/...), which binder/ installs
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert config["launch_buttons"]["notebook_interface"] == "jupyterlab" and "jupyterlab" in ours
