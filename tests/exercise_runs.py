"""How the exercise test runs a chapter (tests/test_exercises_ch*.py, marker ``exercises``).

The notebook test builds the student edition of a chapter (tools/editions/make_student.py), fills
every answer cell with the book's solution (its own asserts removed: a student's answer
has none) and runs the chapter: every check cell must say "right". Then, in the same
kernel, it runs typical wrong answers (the solution with one planted mistake) and their
check cells: each must be reported wrong (``WrongAnswer``), so no wrong answer runs silently.
The typical wrong answers of each chapter are in the file that runs it, by chapter group:
tests/test_exercises_ch00_01.py, _ch02_03.py, _ch04_06_a.py, _ch07_09.py and _ch08_10.py
(grouped so that pytest-xdist's two workers, which take whole files, end about together).
"""

from __future__ import annotations

import ast
import os
import re
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from aiayn_helpers.course.exercises import exercise_name

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from editions import make_student  # noqa: E402

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def exercise_labels(nb) -> list[str]:
    return re.findall(r":label:\s*(ch\w+-ex\w+)", "\n".join(c.source for c in nb.cells if c.cell_type == "markdown"))


def solution_sources(nb) -> dict[str, str]:
    """label -> the code of its solution cells, joined."""
    found: dict[str, list[str]] = {}
    current = None
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for m in re.finditer(r"\{solution-start\}\s*(\S+)|\{solution-end\}", cell.source):
                current = m[1]
                if current:
                    found.setdefault(current, [])
        elif current:
            found[current].append(cell.source)
    return {label: "\n\n".join(sources) for label, sources in found.items()}


class _DropAsserts(ast.NodeTransformer):
    """A student's answer has no asserts of the book's: remove ``assert`` and ``assert_close``-like calls."""

    def visit_Assert(self, node):
        return None

    def visit_Expr(self, node):
        call = node.value
        if isinstance(call, ast.Call):
            func = call.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name.startswith("assert_"):
                return None
        return node

    def generic_visit(self, node):
        super().generic_visit(node)
        for field in ("body", "orelse"):
            if isinstance(getattr(node, field, None), list) and not getattr(node, field) and field == "body":
                setattr(node, field, [ast.Pass()])
        return node


def answer_from(solution: str) -> str:
    """The solution as a student would hand it in: the same code without the book's asserts."""
    return ast.unparse(_DropAsserts().visit(ast.parse(solution)))


def _run(client, cell) -> list:
    client.execute_cell(cell, 0)
    return cell.outputs


def _assigned(stmt: ast.stmt) -> set[str]:
    names = set()
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
    return names


def answer_names(nb) -> dict[str, set[str]]:
    """label -> the names its answer cell sets (from the student_stub metadata)."""
    result = {}
    for cell in nb.cells:
        stub = cell.metadata.get("student_stub")
        if stub:
            label = next(label for label, code in solution_sources(nb).items() if cell.source in code)
            result[label] = set().union(*(_assigned(s) for s in ast.parse(stub).body))
    return result


# The exercises whose typical wrong answers run as their slice (answer_slice): those whose
# solution trains after computing the answer. Exercise 1.2 counts the alignment model's
# parameters, then trains a plain model twice as wide (the chapter's third training): its
# three slips, all in the count, ran that training three more times.
SLICED = {"ch01-ex2"}
# methods that change their object in place (PyTorch's trailing underscore, and the containers')
_IN_PLACE = {"append", "extend", "insert", "update", "setdefault", "pop", "popitem", "remove", "clear", "sort"}


def _changed(stmt: ast.stmt) -> set[str]:
    """The names a statement binds, or whose object it changes: under a subscript or an
    attribute it assigns or deletes, or by an in-place method (``x.add_(1)``, ``d.update()``)."""
    names = _assigned(stmt)
    for node in ast.walk(stmt):
        base = None
        if isinstance(node, ast.Subscript | ast.Attribute) and isinstance(node.ctx, ast.Store | ast.Del):
            base = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            method = node.func.attr
            if method in _IN_PLACE or (method.endswith("_") and not method.startswith("_")):
                base = node.func.value
        while isinstance(base, ast.Subscript | ast.Attribute):
            base = base.value
        if isinstance(base, ast.Name):
            names.add(base.id)
    return names


def answer_slice(solution: str, answers: set[str]) -> str:
    """The statements of a solution (asserts removed) that its answers depend on: those that
    bind or change an answer, then, backwards, those that bind or change what they read. A
    typical wrong answer of an exercise in SLICED runs as this slice."""
    statements = ast.parse(answer_from(solution)).body
    needed, kept = set(answers), []
    for stmt in reversed(statements):
        if _changed(stmt) & needed:
            kept.append(stmt)
            needed |= {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)}
    return "\n".join(ast.unparse(stmt) for stmt in kept[::-1])


def right_answers_pass_and_wrong_ones_are_reported(path, slips, also_right):
    """The chapter run with its answer cells filled: every cell runs (a check says right),
    every unanswered stub says so, every typical wrong answer (``slips``: a chapter's entries
    of a WRONG table) is reported wrong, every other right answer (``also_right``) passes."""
    original = nbformat.read(path, as_version=4)
    solutions = solution_sources(original)
    student, _ = make_student.studentize(original)
    for cell in student.cells:  # fill every answer cell with the solution, its asserts removed
        if cell.cell_type == "code" and cell.id.startswith("stub-"):
            label = re.search(r"\((ch\w+-ex\w+)\)", cell.source)[1]
            cell.source = answer_from(solutions[label])
    os.environ.setdefault("PYTHONHASHSEED", "0")
    os.environ.setdefault("AIAYN_THREADS", "1")
    client = NotebookClient(
        student,
        timeout=900,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(ROOT / "notebooks")}},
    )
    with client.setup_kernel():
        verdicts = {}
        for i, cell in enumerate(student.cells):
            if cell.cell_type != "code":
                continue
            client.execute_cell(cell, i)
            errors = [o for o in cell.outputs if o.output_type == "error"]
            if "raises-exception" not in cell.metadata.get("tags", []):  # a common mistake shown failing
                assert not errors, f"{path.name}: {cell.id} fails with the solution filled in: {errors[0].evalue}"
            if cell.id.startswith("check-"):
                verdicts[cell.id.removeprefix("check-")] = "".join(o.get("text", "") for o in cell.outputs)
        for label in exercise_labels(original):
            assert f"✓ {exercise_name(label)}: right." in verdicts[label], f"{label}: {verdicts[label]!r}"

        unanswered, _ = make_student.studentize(original)  # the stubs as handed out: every check runs
        for label in exercise_labels(original):
            stub = next(c for c in unanswered.cells if c.id == f"stub-{label}")
            checker = next(c for c in unanswered.cells if c.id == f"check-{label}")
            outputs = _run(client, nbformat.from_dict(stub)) + _run(client, nbformat.from_dict(checker))
            text = "".join(o.get("text", "") for o in outputs)
            assert f"○ {exercise_name(label)}: not answered yet" in text, f"{label} unanswered: {outputs}"

        # A typical wrong answer of an exercise in SLICED runs as its slice (answer_slice) where
        # the slice is shorter than the solution, holds the slip, and its right version alone
        # gets "right" from the check (what the slice leaves out does not change the answer);
        # else, and for every other exercise, the whole answer runs.
        names, sliced = answer_names(original), {}
        for label, changes, *message in slips:
            wrong = solutions[label]
            for old, new in changes:
                assert old in wrong, f"{label}: {old!r} is not in the solution any more"
                wrong = wrong.replace(old, new)
            checker = nbformat.v4.new_code_cell(next(c.source for c in student.cells if c.id == f"check-{label}"))
            if label not in sliced:
                right = answer_slice(solutions[label], names[label])
                whole = ast.unparse(ast.parse(answer_from(solutions[label])))
                shorter = label in SLICED and right.count("\n") < whole.count("\n")
                if shorter:
                    said = _run(client, nbformat.v4.new_code_cell(right)) + _run(client, nbformat.from_dict(checker))
                    shorter = f"✓ {exercise_name(label)}: right." in "".join(o.get("text", "") for o in said)
                sliced[label] = right if shorter else None
            code = answer_slice(wrong, names[label]) if sliced[label] is not None else None
            answer = nbformat.v4.new_code_cell(code if code not in (None, sliced[label]) else answer_from(wrong))
            outputs = _run(client, answer) + _run(client, checker)
            errors = [o for o in outputs if o.output_type == "error"]
            assert errors, f"{label}: the wrong answer {changes} passed its check"
            assert errors[-1].ename == "WrongAnswer", f"{label} {changes}: {errors[-1].ename}: {errors[-1].evalue}"
            assert f"✗ {exercise_name(label)}: not right" in errors[-1].evalue
            if message:
                assert message[0] in errors[-1].evalue, f"{label} {changes}: told {errors[-1].evalue!r}"
            said = "".join(o.get("text", "") for o in outputs)
            if len(re.findall(r"\bcheck\(", checker.source)) == 1:  # one answer checked: one verdict
                assert "✓" not in said, f"{label} {changes}: one verdict per check, yet it printed {said!r}"

        for label, changes in also_right:
            other = solutions[label]
            for old, new in changes:
                assert old in other, f"{label}: {old!r} is not in the solution any more"
                other = other.replace(old, new)
            answer = nbformat.v4.new_code_cell(answer_from(other))
            checker = nbformat.v4.new_code_cell(next(c.source for c in student.cells if c.id == f"check-{label}"))
            outputs = _run(client, answer) + _run(client, checker)
            said = "".join(o.get("text", "") for o in outputs)
            assert f"✓ {exercise_name(label)}: right." in said, f"{label} {changes}: {outputs}"


def exercise_test(wrong: dict, also_right: dict):
    """The exercise test of one group of chapters, for its file to assign to a ``test_`` name:
    each chapter of ``wrong`` run with its answer cells filled, then its wrong answers."""

    @pytest.mark.exercises
    @pytest.mark.timeout(1800)
    @pytest.mark.parametrize("path", [p for p in NOTEBOOKS if p.name in wrong], ids=lambda p: p.name)
    def test(path):
        right_answers_pass_and_wrong_ones_are_reported(path, wrong[path.name], also_right.get(path.name, []))

    return test
