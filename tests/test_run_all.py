"""Jupyter's Run All reaches the end of every chapter (issue #28): no cell raises on purpose.

A cell that shows a mistake failing wraps it in ``ah.expect_error``, which prints the
error's type and message and fails when nothing is raised; strict nbval compares that
printed line, so the error is still checked, and says what it said when the outputs were
stored. A ``raises-exception`` tag would let a cell raise under nbval, but Run All stops at
it, so none is allowed.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def expected_errors(source: str) -> list[str]:
    """The exception names of the ``ah.expect_error(...)`` blocks in ``source``."""
    lines = source.splitlines()  # an IPython magic becomes `pass`, keeping the indentation
    source = "\n".join(ln[: len(ln) - len(ln.lstrip())] + "pass" if ln.lstrip()[:1] in "%!" and ln.strip() else ln
                       for ln in lines)  # fmt: skip
    names = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.With):
            for item in node.items:
                call = item.context_expr
                if isinstance(call, ast.Call) and ast.unparse(call.func) == "ah.expect_error":
                    names.append(ast.unparse(call.args[0]) if call.args else "")
    return names


def test_expected_errors_reads_the_exception_of_each_block():
    source = "x = 1\nwith ah.expect_error(AssertionError):\n    assert x == 2\n%timeit x\n"
    assert expected_errors(source) == ["AssertionError"]
    assert expected_errors("with open('f') as f:\n    pass\n") == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_cell_stops_run_all(path):
    nb = nbformat.read(path, as_version=4)
    for cell in (c for c in nb.cells if c.cell_type == "code"):
        assert "raises-exception" not in cell.metadata.get("tags", []), (
            f"{path.name}: a raises-exception cell stops Run All; wrap the mistake in ah.expect_error:\n{cell.source}"
        )
        assert not any(o.output_type == "error" for o in cell.outputs), f"{path.name}: stored error in\n{cell.source}"


def test_chapters_still_show_their_deliberate_errors():
    """Chapters 1 to 3 show mistakes failing (issue #28 counted 2, 5 and 1 such cells)."""
    counts = {}
    for path in NOTEBOOKS:
        cells = nbformat.read(path, as_version=4).cells
        counts[path.stem[:2]] = sum(bool(expected_errors(c.source)) for c in cells if c.cell_type == "code")
    assert counts["01"] >= 2 and counts["02"] >= 5 and counts["03"] >= 1, counts


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_each_expected_error_is_printed_with_its_type(path):
    """The stored output of an ``ah.expect_error`` block names the error, so nbval checks its message."""
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type != "code":
            continue
        printed = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
        for name in expected_errors(cell.source):
            short = name.split(".")[-1].strip("()")
            assert re.search(rf"^{re.escape(short)}\b.*: \S", printed, re.MULTILINE), (
                f"{path.name}: no '{short}: message' line stored for\n{cell.source}"
            )
