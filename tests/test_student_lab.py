"""The student edition in JupyterLab, started as its README says, in Chromium.

The edition (tools/editions/make_student.py, built once per session by tests/test_student.py) is
copied to a temporary folder; the README's "Run" command is read and started there
(`jupyter lab` in the edition's folder, through tests/test_jupyterlab.py's launcher:
its own settings, a token, a free port). Then every chapter and every assignment is
opened from the folder that command serves: each opens, each image loads
(naturalWidth > 0), no link is an empty ``href="#"``. Assignment 1, answered with one
slip (the scores not divided by sqrt(d_k)), is run with *Run > Restart Kernel and Run
All Cells*, as its first cell and the README tell a student: the run reaches "Am I
done?", whose report names the slip by its cause. Screenshots land in
AIAYN_SCREENSHOTS (if set).
"""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import re
import shutil
import sys
import urllib.request
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
import test_assignments  # noqa: E402
import test_assignments_run_all  # noqa: E402
import test_jupyterlab  # noqa: E402
import test_student  # noqa: E402
from test_jupyterlab import _jupyter_lab, _require_lab_and_browser  # noqa: E402

# the chapters' test's fixture (one Chromium per module), not a second copy of it
browser = test_jupyterlab.browser

PlaywrightTimeout = pytest.importorskip("playwright.sync_api", reason="playwright is pinned").TimeoutError
pytestmark = pytest.mark.slow  # one JupyterLab, one page: 16 notebooks opened, one Run All

SLIP = "no sqrt(d_k)"  # assignment 1's slip for the Run All

_JS_NOTEBOOK = """() => {
  const nb = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook');
  const images = [...nb.querySelectorAll('img')];
  return {
    cells: nb.querySelectorAll('.jp-Cell').length,
    images: images.length,
    broken: images.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.getAttribute('src')),
    empty_links: [...nb.querySelectorAll('a[href="#"]')].map(a => a.textContent.trim().slice(0, 60)),
  };
}"""
_JS_IMAGES_SETTLED = """() => [...document.querySelectorAll('.jp-Notebook img')].every(i => i.complete)"""


def readme_command(readme: str) -> list[str]:
    """The command of the README's "Run" section (its one bash line)."""
    section = readme.split("## Run", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block, "the README's Run section has no command"
    lines = [line for line in block[1].splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert len(lines) == 1, lines
    return lines[0].split()


def _api(base: str, token: str, path: str, method: str = "GET"):
    request = urllib.request.Request(f"{base}{path}?token={token}", method=method)
    with urllib.request.urlopen(request, timeout=30) as answer:
        body = answer.read()
    return json.loads(body) if body else None


def _shut_down_kernels(base: str, token: str) -> None:
    for kernel in _api(base, token, "/api/kernels"):
        _api(base, token, f"/api/kernels/{kernel['id']}", "DELETE")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """``(base URL, token, root)``: JupyterLab started as the README says, in a copy of the edition."""
    _require_lab_and_browser()
    built, _ = test_student.built_edition(tmp_path_factory)
    command = readme_command((built / "README.md").read_text(encoding="utf-8"))
    assert command[:2] == ["jupyter", "lab"], f"the README starts {command}"
    edition = tmp_path_factory.mktemp("student-lab") / "edition"
    shutil.copytree(built, edition, ignore=shutil.ignore_patterns("_build"))
    # assignment 1 as a student with one slip saved it: the solutions, the scaling left out
    path = edition / "assignments" / "assignment1.ipynb"
    answers = test_assignments_run_all._answers("assignment1", SLIP)
    nbformat.write(test_assignments._fill(nbformat.read(path, as_version=4), answers), path)
    folders = [a for a in command[2:] if not a.startswith("-")]
    root = edition.joinpath(*folders)  # the folder it serves
    if "cwd" in inspect.signature(_jupyter_lab).parameters:  # `jupyter lab FOLDER` run in ``cwd``
        settings = tmp_path_factory.mktemp("student-lab-settings")
        lab = _jupyter_lab(edition, settings, folder=folders[0] if folders else ".")
    else:  # the launcher that serves a folder as JupyterLab's root
        lab = _jupyter_lab(root)
    with lab as (base, token):
        yield base, token, root


def expected_images(nb: nbformat.NotebookNode) -> int:
    """The images a notebook shows as <img>: Markdown and HTML images, PNG and JPEG outputs."""
    count = 0
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            count += len(re.findall(r"!\[[^\]]*\]\(|<img\b", cell.source))
        for output in cell.get("outputs", []):
            count += any(kind in output.get("data", {}) for kind in ("image/png", "image/jpeg"))
    return count


def _open(page, base: str, token: str, path: str, nb: nbformat.NotebookNode) -> None:
    """Open ``path`` and wait for its cells, rendered, and (up to 60 s, then it is measured as
    it is) for as many images as it holds."""
    test_jupyterlab.switch_to(page, base, token, path)
    page.wait_for_function(
        "n => { const nb = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook');"
        " return nb && nb.querySelectorAll('.jp-Cell').length >= n &&"
        " [...nb.querySelectorAll('.jp-MarkdownCell')].every(c => c.classList.contains('jp-mod-rendered')); }",
        arg=len(nb.cells),
    )
    with contextlib.suppress(PlaywrightTimeout):
        page.wait_for_function(
            "n => document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook img').length >= n",
            arg=expected_images(nb),
            timeout=60_000,
        )
    page.wait_for_function(_JS_IMAGES_SETTLED)


@pytest.fixture(scope="module")
def page(browser):
    """One browser page for every notebook of this file, opened in turn."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(180_000)
    yield context.new_page()
    context.close()


@pytest.fixture(scope="module")
def opened(lab, page):
    """Every chapter and assignment, opened from the folder the README's command serves: path -> report."""
    base, token, root = lab
    paths = sorted(p.relative_to(root).as_posix() for p in root.glob("*/*.ipynb") if "checkpoint" not in str(p))
    reports = {}
    shots = os.environ.get("AIAYN_SCREENSHOTS")
    for path in paths:
        nb = nbformat.read(root / path, as_version=4)
        _open(page, base, token, path, nb)
        reports[path] = page.evaluate(_JS_NOTEBOOK) | {"expected_cells": len(nb.cells), "expected": expected_images(nb)}
        if shots:
            Path(shots).mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(Path(shots) / f"student_lab_{Path(path).stem}.png"))
        _shut_down_kernels(base, token)  # opening a notebook starts its kernel: one at a time
    return reports


def test_the_readme_command_serves_chapters_and_assignments(lab, opened):
    _, _, root = lab
    folders = {path.split("/")[0] for path in opened}
    assert {"notebooks", "assignments"} <= folders, f"the README's command serves {sorted(folders)} only"
    chapters = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
    assert sorted(p.split("/")[1] for p in opened if p.startswith("notebooks/")) == chapters
    released = sorted(f"{p.name}.ipynb" for p in (ROOT / "book" / "autograder" / "source").iterdir() if p.is_dir())
    assert sorted(p.split("/")[1] for p in opened if p.startswith("assignments/")) == released


def test_every_chapter_and_assignment_opens(opened):
    short = {p: r["cells"] for p, r in opened.items() if r["cells"] < r["expected_cells"]}
    assert not short, f"notebooks that did not show every cell: {short}"


def test_every_image_loads(opened):
    assert sum(r["expected"] for r in opened.values()) >= 40  # the chapters' figures at least
    missing = {p: f"{r['images']} of {r['expected']}" for p, r in opened.items() if r["images"] < r["expected"]}
    assert not missing, f"notebooks that show fewer images than they hold: {missing}"
    broken = {p: r["broken"] for p, r in opened.items() if r["broken"]}
    assert not broken, f"images that do not load in JupyterLab started as the README says: {broken}"


def test_no_link_goes_nowhere(opened):
    empty = {p: r["empty_links"] for p, r in opened.items() if r["empty_links"]}
    assert not empty, f'links with href="#": {empty}'


def _wait_for_an_idle_kernel(base: str, token: str, path: str) -> None:
    import time

    deadline = time.time() + 120
    while time.time() < deadline:
        sessions = [s for s in _api(base, token, "/api/sessions") if s["path"] == path]
        if sessions and sessions[0]["kernel"]["execution_state"] == "idle":
            return
        time.sleep(0.5)
    pytest.fail(f"no idle kernel for {path} within 120 s")


@pytest.mark.timeout(600)
def test_restart_and_run_all_reaches_am_i_done_and_names_the_slip(lab, page):
    """The menu command a student is told to use, on assignment 1 with the sqrt(d_k) left out."""
    base, token, root = lab
    path = "assignments/assignment1.ipynb"
    nb = nbformat.read(root / path, as_version=4)
    _open(page, base, token, path, nb)
    _wait_for_an_idle_kernel(base, token, path)
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-itemLabel", has_text="Restart Kernel and Run All Cells").click()
    page.locator(".jp-Dialog .jp-mod-accept").click()
    last = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell").last
    last.locator(".jp-OutputArea-output", has_text="How to hand in").wait_for(timeout=400_000)
    report = last.locator(".jp-OutputArea").inner_text()
    shots = os.environ.get("AIAYN_SCREENSHOTS")
    if shots:
        Path(shots).mkdir(parents=True, exist_ok=True)
        last.screenshot(path=str(Path(shots) / "student_lab_am_i_done.png"))
    _shut_down_kernels(base, token)
    _, failing, words = test_assignments_run_all.SLIPS["assignment1"][SLIP]
    assert "Visible tests:" in report and "not defined" not in report, report
    title = next(c for c in nb.cells if test_assignments_run_all._grade_id(c) == failing).source.splitlines()[0]
    title = title.lstrip("# ").strip().rstrip(".")
    lines = [line.strip() for line in report.splitlines()]
    where = lines.index(f"FAILED  {title}")
    assert words in lines[where + 1], report
