"""Notebook hygiene: what strict nbval needs to be meaningful, and what a reader needs to run it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
MACHINE_PATH = re.compile(r"(/work/|/root/|/home/[a-z]|/Users/[A-Za-z]|/tmp/ipykernel|[A-Z]:\\\\Users)")


def code_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code" and c.source.strip()]


def test_there_are_notebooks():
    assert NOTEBOOKS, "no notebooks found in notebooks/"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_valid_and_named(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert re.fullmatch(r"(\d\d|[A-Z])_[a-z0-9_]+\.ipynb", path.name), "name chapters NN_snake_case.ipynb"
    assert nb.metadata.get("kernelspec", {}).get("name") == "python3"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_code_cell_executed_in_order(path):
    nb = nbformat.read(path, as_version=4)
    counts = [c.execution_count for c in code_cells(nb)]
    assert None not in counts, "a code cell has no stored execution: strict nbval would check nothing there"
    assert counts == list(range(1, len(counts) + 1)), "cells were not executed top to bottom in one kernel"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_unexpected_errors_or_timing(path):
    nb = nbformat.read(path, as_version=4)
    for cell in code_cells(nb):
        tags = cell.metadata.get("tags", [])
        has_error = any(o.output_type == "error" for o in cell.outputs)
        assert not has_error or "raises-exception" in tags, f"stored error in an untagged cell:\n{cell.source}"
        assert "execution" not in cell.metadata, "nbclient timing metadata is committed"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_machine_paths_or_svg(path):
    text = path.read_text()
    assert not MACHINE_PATH.search(text), f"a machine-specific path is stored: {MACHINE_PATH.search(text)[0]}"
    assert "image/svg+xml" not in text, "SVG outputs embed random ids; use PNG"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_in_the_table_of_contents(path):
    toc = (ROOT / "_toc.yml").read_text()
    assert f"file: notebooks/{path.stem}" in toc


def test_makefile_runs_strict_nbval():
    makefile = (ROOT / "Makefile").read_text()
    assert "--nbval " in makefile and "--nbval-lax" not in makefile


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_chapter_has_objectives_summary_and_checks(path):
    nb = nbformat.read(path, as_version=4)
    markdown = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "Learning objectives" in markdown
    assert "## Summary" in markdown
    asserting = [c for c in code_cells(nb) if re.search(r"\bassert\b|assert_close|assert_allclose", c.source)]
    assert len(asserting) >= 1 if path.name.startswith("00") else len(asserting) >= 3
    json.dumps(nb)  # serialisable
