"""The grader's own path from a submission to a score, in this process: the properties'
harness (tests/test_grading_properties.py).

``grade(name, submission)`` does what ``make grade`` does to one notebook, less the
sandbox and nbgrader's database: the released notebook's cells found again
(repair.recover_cells, as RecoverCells), the locked cells restored from the course's
source by grade id (as nbgrader's OverwriteCells), the copy the kernel runs
(verdict.kernel_copy), every code cell of it executed in one namespace as a kernel
would (errors kept as outputs, the run going on), the outputs merged back
(outputs.merge_outputs) and each test cell judged from the course's source
(verdict.judge_notebook). The score is the sum of the points of the test cells that
passed. A notebook costs about 0.1-0.5 s here instead of 5-17 s in the sandbox, so
Hypothesis can try many. What only the sandbox does (isolation, limits) is tested by
the whole-class tests (marker integration); here the kernel's search of memory for
the book's package (``gc.get_objects``) sees an empty heap, so that a run does not
scan this process's millions of objects.

``released(name)`` is the notebook a student gets: the source with each solution
replaced as nbgrader's ClearSolutions does and the hidden tests removed.

Not a test file (pytest collects only ``test_*.py``).
"""

from __future__ import annotations

import builtins
import contextlib
import copy
import functools
import gc
import io
import os
import re
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from unittest import mock

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from grading import outputs, repair, verdict  # noqa: E402

try:
    from grading import kernel
except ImportError:  # the code before issue 51
    kernel = None

SOURCE = ROOT / "book" / "autograder" / "source"
ASSIGNMENTS = sorted(p.name for p in SOURCE.iterdir() if (p / f"{p.name}.ipynb").is_file())
SOLUTION = re.compile(r"^([ \t]*)### BEGIN SOLUTION\n.*?^[ \t]*### END SOLUTION[^\n]*\n?", re.M | re.S)


def meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader") or {}


def grade_id(cell) -> str | None:
    return meta(cell).get("grade_id")


@functools.cache
def _source(name: str) -> nbformat.NotebookNode:
    return nbformat.read(SOURCE / name / f"{name}.ipynb", as_version=4)


def source(name: str) -> nbformat.NotebookNode:
    return copy.deepcopy(_source(name))


@functools.cache
def _released(name: str) -> nbformat.NotebookNode:
    nb = source(name)
    for cell in nb.cells:
        stub = r"\1# YOUR CODE HERE\n\1raise NotImplementedError()\n"
        cell.source = SOLUTION.sub(stub, cell.source)
        cell.source = verdict.HIDDEN.sub("", cell.source).rstrip("\n")
    return nb


def released(name: str) -> nbformat.NotebookNode:
    return copy.deepcopy(_released(name))


def solutions(name: str) -> dict[str, str]:
    """grade_id -> the course's answer, its solution markers taken out."""
    found = {}
    for cell in _source(name).cells:
        if meta(cell).get("solution"):
            found[grade_id(cell)] = re.sub(r"^[ \t]*### (BEGIN|END) SOLUTION\n?", "", cell.source, flags=re.M)
    return found


def filled(name: str, answers: dict[str, str] | None = None) -> nbformat.NotebookNode:
    """The released notebook with ``answers`` (default: the course's) in its answer cells."""
    answers = solutions(name) if answers is None else answers
    nb = released(name)
    for cell in nb.cells:
        if grade_id(cell) in answers:
            cell.source = answers[grade_id(cell)]
    return nb


@functools.cache
def points(name: str) -> dict[str, int]:
    """{test cell's grade_id: its points} of the graded cells."""
    return {grade_id(c): meta(c)["points"] for c in _source(name).cells if meta(c).get("points")}


@functools.cache
def parts(name: str) -> dict[str, list[str]]:
    """{answer cell's grade_id: the graded test cells after it, before the next answer}."""
    found: dict[str, list[str]] = {}
    current = None
    for cell in _source(name).cells:
        if meta(cell).get("solution"):
            current = grade_id(cell)
            found[current] = []
        elif meta(cell).get("points") and current:
            found[current].append(grade_id(cell))
    return found


@dataclass
class Graded:
    score: float
    failures: dict[str, str | None]  # test cell -> why it failed, None if it passed
    records: dict[str, object] = field(default_factory=dict)  # test cell -> what its kernel half sent
    notes: list[str] = field(default_factory=list)


def _restore(nb: nbformat.NotebookNode, name: str) -> nbformat.NotebookNode:
    """The locked and test cells as the source has them (nbgrader's OverwriteCells)."""
    by_id = {grade_id(c): c for c in _source(name).cells if grade_id(c)}
    for cell in nb.cells:
        original = by_id.get(grade_id(cell))
        if original is not None and (meta(original).get("locked") or meta(original).get("grade")):
            cell.source, cell.cell_type = original.source, original.cell_type
            cell.metadata["nbgrader"] = copy.deepcopy(original.metadata["nbgrader"])
            if cell.cell_type == "code":
                cell.setdefault("outputs", [])
                cell.setdefault("execution_count", None)
        elif original is not None:  # an answer cell keeps its source, gets its metadata
            cell.metadata["nbgrader"] = copy.deepcopy(original.metadata["nbgrader"])
    return nb


def run_cells(nb: nbformat.NotebookNode, seed: int = 0) -> list[dict]:
    """Every code cell of ``nb`` executed in one namespace, as a kernel runs a notebook;
    one frame per cell, as the sandbox's runner sends them."""
    namespace: dict = {"__name__": "__main__"}
    frames = []
    # a kernel of its own: the book's package not imported yet (the own-work check reads
    # sys.modules), whatever this process imported before
    ours = {k: sys.modules.pop(k) for k in list(sys.modules) if k.split(".")[0] == "aiayn_helpers"}
    modules, names = set(sys.modules), dict(vars(builtins))  # what a notebook may add or change
    try:
        return _run_cells(nb, seed, namespace, frames)
    finally:
        for k in [k for k in sys.modules if k.split(".")[0] == "aiayn_helpers" or k not in modules]:
            if k.split(".")[0] == "aiayn_helpers" or k == "_grading_runner":
                del sys.modules[k]
        sys.modules.update(ours)
        for k in set(vars(builtins)) - set(names):
            delattr(builtins, k)
        for k, v in names.items():
            if vars(builtins).get(k) is not v:
                setattr(builtins, k, v)


def _run_cells(nb, seed, namespace, frames):
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or not cell.source.strip():
            continue
        outs: list = []

        def display(*objs, metadata=None, raw=False, outs=outs, **kw):
            for obj in objs:
                if raw and isinstance(obj, dict):
                    outs.append(nbformat.v4.new_output("display_data", data=obj, metadata=metadata or {}))
                else:
                    outs.append(nbformat.v4.new_output("display_data", data={"text/plain": repr(obj)}))

        printed = io.StringIO()
        with (
            mock.patch("IPython.display.display", display),
            mock.patch.object(gc, "get_objects", lambda *a: []),
            mock.patch.dict(os.environ, {verdict.SEED_ENV: str(seed)}),
            contextlib.redirect_stdout(printed),
            contextlib.redirect_stderr(printed),
        ):
            try:
                code = "\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!")))
                exec(compile(code, f"<cell {index}>", "exec"), namespace)
            except BaseException as err:  # noqa: BLE001 (a kernel keeps going)
                if isinstance(err, (SystemExit, KeyboardInterrupt)) and not isinstance(err, SystemExit):
                    raise
                outs.append(
                    nbformat.v4.new_output(
                        "error",
                        ename=type(err).__name__,
                        evalue=str(err)[:2000],
                        traceback=traceback.format_exception_only(type(err), err)[-1:],
                    )
                )
        if printed.getvalue():
            outs.insert(0, nbformat.v4.new_output("stream", name="stdout", text=printed.getvalue()[:20000]))
        frames.append({"index": index, "id": cell.get("id"), "outputs": outs, "execution_count": index})
    return frames


def grade(name: str, submission: nbformat.NotebookNode, seed: int = 1234) -> Graded:
    """``submission`` of assignment ``name`` graded as ``make grade`` grades it (see the module)."""
    src = _source(name)
    nb = repair.drop_check_cell(copy.deepcopy(submission), _released(name))
    nb, notes = repair.recover_cells(nb, _released(name))
    nb = _restore(nb, name)
    nb = nbformat.reads(nbformat.writes(nbformat.from_dict(nb)), as_version=4)  # as read from disk
    judges = _judges(name)
    sent = _kernel_copy(nb, judges, src)
    frames = run_cells(sent, seed)
    frames = _unshift(sent, nb, frames)
    nb = outputs.merge_outputs(nb, frames, "this cell did not run")
    records = {}
    for cell in nb.cells:
        if grade_id(cell) in judges:
            rec = [o for o in cell.outputs if verdict._is_record(o)]
            records[grade_id(cell)] = rec[0]["data"][verdict.MIME] if len(rec) == 1 else None
    failures = verdict.judge_notebook(nb, judges, seed)
    for gid in judges:
        failures.setdefault(gid, f"{gid}: no such test cell in the notebook")
    score = sum(points(name).get(g, 0) for g, why in failures.items() if why is None)
    return Graded(score, failures, records, notes)


@functools.cache
def _judges(name: str):
    return verdict.load_judges(_source(name))


def _kernel_copy(nb, judges, src):
    """verdict.kernel_copy, as the grader calls it."""
    if kernel is not None:
        return kernel.kernel_copy(nb, judges, kernel.course_plan(src))
    return verdict.kernel_copy(nb, judges, verdict.load_references(src))


def _unshift(sent, nb, frames):
    """The frames of ``sent`` as frames of ``nb`` (the grader's setup cell left out)."""
    if kernel is not None:
        return kernel.unshift(sent, frames)
    return frames


def full(name: str) -> int:
    return sum(points(name).values())
