"""The verdict out of the student's reach (issue #35): tools/grading/verdict.py alone.

Every graded test cell of the four assignments has a judge that runs in the grader's
process; a record from the kernel is read as plain data (no pickle, a short list of
dtypes, shapes checked); a cell that sends no record, two records or a malformed one
fails, with its reason; the suspicious-construct scan names what a hostile answer
uses and stays silent on the solutions. No sandbox, no nbgrader run: a few seconds.
"""

from __future__ import annotations

import base64
import re
import sys
from pathlib import Path

import nbformat
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from grading import kernel, verdict  # noqa: E402

torch = pytest.importorskip("torch")
SOURCE = ROOT / "book" / "autograder" / "source"
ASSIGNMENTS = sorted(p.name for p in SOURCE.iterdir() if (p / f"{p.name}.ipynb").is_file())


def _read(name: str) -> nbformat.NotebookNode:
    return nbformat.read(SOURCE / name / f"{name}.ipynb", as_version=4)


def _tensor(array: np.ndarray) -> dict:
    data = base64.b64encode(array.tobytes()).decode()
    return {"__tensor__": str(array.dtype), "shape": list(array.shape), "b64": data}


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_every_graded_cell_is_judged_outside_the_kernel(name):
    nb = _read(name)
    graded = [c.metadata["nbgrader"]["grade_id"] for c in nb.cells if c.metadata.get("nbgrader", {}).get("points")]
    judges = verdict.load_judges(nb)
    assert sorted(judges) == sorted(graded)
    sent = kernel.kernel_copy(nb, judges, kernel.course_plan(nb))
    setup = sent.cells[0]
    assert setup.get("id") == kernel.SETUP_ID and setup.metadata.get(kernel.HIDDEN_FLAG)
    assert len(sent.cells) == len(nb.cells) + 1
    for cell in sent.cells[1:]:  # a judged cell is one line: no hidden source reaches the kernel
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in judges:
            assert cell.source == kernel.STUB.format(key=gid), cell.source[:80]
        hidden = cell.cell_type == "code" and bool(verdict.HIDDEN.search(nb.cells[sent.cells.index(cell) - 1].source))
        assert bool(cell.metadata.get(kernel.HIDDEN_FLAG)) == hidden, cell.source[:80]
    for cell in sent.cells:  # no line of a hidden test, as source, anywhere; the answer
        if cell.metadata.get("nbgrader", {}).get("solution"):  # cells are the submission's
            continue
        assert "BEGIN HIDDEN TESTS" not in cell.source and "def _judge" not in cell.source
        assert "_collect" not in cell.source and "_own_work" not in cell.source


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_parts_and_answer_names_come_from_the_course(name):
    nb = _read(name)
    plan = kernel.course_plan(nb)
    answers = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]
    assert len(answers) >= 2
    for cell in answers:  # the names the answers define, and only those, reach the notebook
        first = re.search(r"^(?:def|class) (\w+)", cell.source, re.M)[1]
        assert first in plan["answers"], (first, plan["answers"])
    assert not any(n.startswith("_") for n in plan["answers"])
    assert plan["helpers"] == ["grader_helpers"]
    with pytest.raises(ValueError, match="expected the course's source notebook"):
        kernel.course_plan([])


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_the_solutions_raise_no_suspicion(name):
    nb = _read(name)
    hidden = verdict.hidden_names(nb)
    assert {"_grade", "_fail"} <= hidden
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("solution"):
            source = re.sub(r"^[ \t]*### (BEGIN|END) SOLUTION\n?", "", cell.source, flags=re.M)
            assert verdict.suspicious(source, hidden) == [], cell.source[:80]


def test_the_scan_names_what_a_hostile_answer_uses():
    hidden = verdict.hidden_names(_read("assignment1"))
    cases = {
        "get_ipython().input_transformers_cleanup.append(f)": "an IPython input transformer",
        "get_ipython().ast_transformers.append(W())": "an IPython AST transformer",
        "class T(torch.Tensor):\n    pass": "a tensor subclass",
        "x = y.as_subclass(T)": "a tensor subclass",
        "torch.testing.assert_close = f": "torch.testing.assert_close",
        "import sys\ndel sys.modules['aiayn_helpers']": "sys.modules",
        "import os\nos.sys.modules.pop(name)": "sys.modules",
        "m = __import__('sys').modules": "sys.modules",
        "importlib.import_module('aiayn_' + 'helpers')": "importlib",
        "f = getattr(F, 'scaled_dot_' + 'product_attention')": "getattr with a computed name",
        "exec(base64.b64decode(s))": "exec",
        "import ctypes": "import ctypes",
    }
    for source, words in cases.items():
        found = "; ".join(verdict.suspicious(source, hidden))
        assert words in found, (source, found)


def test_a_record_is_plain_data_checked_before_use():
    array = np.arange(6, dtype=np.float64).reshape(2, 3)
    got = verdict.decode({"out": _tensor(array), "n": 3, "x": {"__float__": "nan"}, "f": {"__type__": "module"}})
    assert torch.equal(got["out"], torch.from_numpy(array)) and got["n"] == 3
    assert got["x"] != got["x"] and got["f"].type_name == "module"
    bad = [
        {**_tensor(array), "__tensor__": "object"},  # numpy would unpickle objects
        {**_tensor(array), "shape": [4, 3]},
        {**_tensor(array), "shape": [-2, -3]},
        {**_tensor(array), "b64": "not base64!"},
        {"__float__": "1e999999"},
        {**_tensor(array), "shape": [2**64]},  # once an OverflowError: NOT GRADED
        {**_tensor(array), "shape": [2**32, 2**32, 0, 2**64]},
        {**_tensor(array), "shape": [1] * 100},
    ]
    for value in bad:
        with pytest.raises(ValueError):
            verdict.decode(value)


def _cell(*outputs) -> nbformat.NotebookNode:
    return nbformat.v4.new_code_cell("", outputs=[nbformat.from_dict(o) for o in outputs])


def _record(value) -> dict:
    return {"output_type": "display_data", "data": {verdict.MIME: value}, "metadata": {}}


def test_a_test_passes_only_on_one_readable_record_its_judge_accepts():
    def judge(got, seed):
        assert got["answer"] == seed * 2, "f fails the doubling check"

    printed = {"output_type": "stream", "name": "stdout", "text": "hello\n"}
    error = {"output_type": "error", "ename": "NotExecuted", "evalue": "the sandbox stopped", "traceback": []}
    cases = [
        ((printed, _record({"answer": 14})), None),
        ((printed, _record({"answer": 13})), "f fails the doubling check"),
        ((printed,), "f: its hidden tests did not run (the cell sent no result)"),
        ((error,), "f: its hidden tests did not run (NotExecuted: the sandbox stopped)"),
        ((_record({"answer": 14}), _record({"answer": 14})), "f: the cell sent 2 results, not one"),
        ((_record({"answer": {"__tensor__": "object"}}),), "f: its result could not be read"),
        ((_record({"answer": {"__tensor__": "float64", "shape": [2**64], "b64": ""}}),), "f: its result could not"),
        ((_record({"__error__": "ValueError: no"}),), "f fails the runs without error check: ValueError: no"),
        ((_record([1, 2]),), "f fails the kind of result check"),
        # a kernel error beside a good record is the kernel's word, not the verdict
        ((_record({"answer": 14}), {**error, "ename": "AssertionError"}), None),
    ]
    for outputs, expected in cases:
        cell = _cell(*outputs)
        failure = verdict.judge_cell(cell, "f", judge, 7)
        if expected is None:
            assert failure is None, (outputs, failure)
            # nothing printed while the hidden tests ran is kept (it may quote them)
            assert cell.outputs == [], (outputs, cell.outputs)
        else:
            assert failure is not None and failure.startswith(expected), (outputs, failure)
            errors = [o for o in cell.outputs if o.output_type == "error"]
            assert len(errors) == 1 and errors[0].evalue == failure


def test_the_books_objects_the_kernel_found_fail_the_own_work_check_where_imports_do():
    def judge(got, seed):
        if got["own"]["imported"]:  # as assignment 1's _check_own_work
            raise AssertionError(f"f fails the own work check: {got['own']['imported'][0]} was imported")

    found: list = []
    record = _record({"own": {"imported": []}})
    record["metadata"] = {verdict.MIME: {"package": ["aiayn_helpers.attention.scaled_dot_product_attention"]}}
    failure = verdict.judge_cell(_cell(record), "f", judge, 7, found)
    assert failure == "f fails the own work check: aiayn_helpers.attention.scaled_dot_product_attention was imported"
    assert found == ["aiayn_helpers.attention.scaled_dot_product_attention"]
    assert verdict.judge_cell(_cell(_record({"own": {"imported": []}})), "f", judge, 7) is None
