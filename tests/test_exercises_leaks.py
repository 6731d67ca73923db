"""Check cells give nothing away: the rules, and every chapter's check cells against them
(split from tests/test_exercises.py, the same tests)."""

from __future__ import annotations

import ast

import nbformat
import pytest
from exercise_runs import NOTEBOOKS, _assigned, answer_from, answer_names, solution_sources

# ------------------------------------------------------- check cells give nothing away
#
# A check cell is read by the student (the student edition keeps it). It must not
# show the answer: the expected value of check() (and a named mistake's value) is
# never a literal (a number, a bool, a list, tuple, dict or torch.tensor/np.array of
# them, math functions of them, or arithmetic on numbers only: "2 * 6 * 100"); the
# cell holds no arithmetic on numbers alone; and it holds none of the solution's
# code: no statement of the code that computes the answer (compared as syntax trees,
# variable names ignored), no call of that code with two or more arguments, and none
# of its calls' text in a string (a hint). Chapter 8's checks are rewritten once its
# new section is in (a known gap: the strict xfail fails the day they are fixed).

_LEAK_GAPS: set[str] = set()  # every chapter passes
_ARRAY_MAKERS = {"tensor", "array", "asarray", "as_tensor", "full", "Tensor"}


def _literal_value(node: ast.AST) -> bool:
    """A number or bool, or a container, operation, array maker, math function of them."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, bool | int | float | complex)
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return bool(node.elts) and all(_literal_value(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return bool(node.values) and all(_literal_value(v) for v in node.values)
    if isinstance(node, ast.UnaryOp):
        return _literal_value(node.operand)
    if isinstance(node, ast.BinOp):
        return _literal_value(node.left) and _literal_value(node.right)
    if isinstance(node, ast.Lambda):
        return _literal_value(node.body)
    if isinstance(node, ast.Attribute):  # math.e, math.pi
        return getattr(node.value, "id", "") == "math"
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        module = getattr(getattr(func, "value", None), "id", "")
        maker = name in _ARRAY_MAKERS or module == "math"
        return maker and bool(node.args) and all(_literal_value(a) for a in node.args)
    return False


class _Anonymous(ast.NodeTransformer):
    """Variable names replaced by ``_`` (a called function's and a module's kept)."""

    def visit_Call(self, node):
        node.args = [self.visit(a) for a in node.args]
        node.keywords = [self.visit(k) for k in node.keywords]
        if not isinstance(node.func, ast.Name):
            node.func = self.visit(node.func)
        return node

    def visit_Attribute(self, node):
        if not isinstance(node.value, ast.Name):
            node.value = self.visit(node.value)
        return node

    def visit_Name(self, node):
        return ast.copy_location(ast.Name(id="_", ctx=node.ctx), node)

    def visit_arg(self, node):
        return ast.arg(arg="_")


def _shape(node: ast.AST) -> str:
    import copy

    return ast.dump(_Anonymous().visit(copy.deepcopy(node)), annotate_fields=False)


def answer_code(solution: str, answers: set[str]) -> list[ast.stmt]:
    """The solution's top-level statements the answers depend on (asserts removed)."""
    statements = ast.parse(answer_from(solution)).body
    needed, kept = set(answers), []
    for stmt in reversed(statements):
        if _assigned(stmt) & needed:
            kept.append(stmt)
            needed |= {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)}
    return kept[::-1]


def _called(node: ast.Call) -> str:
    return getattr(node.func, "id", getattr(node.func, "attr", ""))


def leaks(check_source: str, solution: str, answers: set[str]) -> list[str]:
    """What a check cell gives away, in words (empty: nothing)."""
    found = []
    tree = ast.parse(check_source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _called(node) == "check":
            expected = node.args[2] if len(node.args) > 2 else None
            for keyword in node.keywords:
                if keyword.arg == "expected":
                    expected = keyword.value
                if keyword.arg == "mistakes" and isinstance(keyword.value, ast.Dict):
                    for value in keyword.value.values:
                        if _literal_value(value):
                            found.append(f"mistake value is a literal: {ast.unparse(value)}")
            if expected is not None and _literal_value(expected):
                found.append(f"expected value is a literal: {ast.unparse(expected)}")
        if isinstance(node, ast.BinOp) and _literal_value(node):
            found.append(f"arithmetic on numbers alone: {ast.unparse(node)}")
    code = [node for stmt in answer_code(solution, answers) for node in ast.walk(stmt)]
    statements = {_shape(node) for node in code if isinstance(node, ast.stmt)}
    calls = {_shape(node): ast.unparse(node) for node in code if isinstance(node, ast.Call)}
    skipped = ast.Import | ast.ImportFrom | ast.Pass
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and not isinstance(node, skipped):
            if _shape(node) in statements:
                found.append(f"solution statement: {ast.unparse(node)[:80]}")
        if isinstance(node, ast.Call) and len(node.args) + len(node.keywords) >= 2:
            if _shape(node) in calls:
                found.append(f"solution call: {ast.unparse(node)[:80]}")
    texts = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)]
    strings = " ".join(text for text in texts if isinstance(text, str))
    for text in sorted(set(calls.values())):
        if len(text) >= 15 and text in strings:
            found.append(f"solution code in a string: {text}")
    return found


def test_the_leak_rules_catch_what_they_are_for():
    solution = "pads = torch.full((2, 3), PAD)\nlogits_padded = model(src, torch.cat([tgt_in, pads], 1))\nx = 3"
    answers = {"logits_padded"}
    assert leaks('check("ch06-ex4", gap, 0.0)', solution, answers) == ["expected value is a literal: 0.0"]
    assert leaks('check("a", x, [30.0, 25.0])', solution, answers)
    assert leaks('check("a", x, torch.tensor([1.0, 1e-4]))', solution, answers)
    assert leaks('check("a", x, lambda: (True, False))', solution, answers)
    assert leaks('check("a", x, R, mistakes={"m": 2 * 6 * 100})', solution, answers)
    assert leaks("n = 64 // 16", solution, answers) == ["arithmetic on numbers alone: 64 // 16"]
    assert leaks('check("a", x, math.log(37000) - math.log(1 + 36999 / math.e))', solution, answers)
    assert leaks("p = torch.full((2, 3), PAD)", solution, answers)  # renamed, still the solution's statement
    assert leaks("f = lambda: model(src, torch.cat([tgt_in, q], 1))", solution, answers)  # the solution's call
    assert leaks('check("a", x, R, hint="use torch.full((2, 3), PAD)")', solution, answers)
    fine = 'check("a", x, Reference("sha256:..."), mistakes={"m": ~ah.causal_mask(4)}, rtol=1e-6)\ny = f(x, 3)'
    assert leaks(fine, solution, answers) == []
    assert leaks("x = 3", solution, answers) == []  # x is not part of the answer


@pytest.mark.parametrize(
    "path",
    [pytest.param(p, marks=[pytest.mark.xfail(strict=True, reason="rewritten later")] if p.name in _LEAK_GAPS else [])
     for p in NOTEBOOKS],
    ids=lambda p: p.name,
)  # fmt: skip
def test_no_check_cell_gives_the_answer_away(path):
    nb = nbformat.read(path, as_version=4)
    solutions, answers = solution_sources(nb), answer_names(nb)
    found = {}
    for cell in nb.cells:
        if "exercise-check" in cell.metadata.get("tags", []):
            label = cell.id.removeprefix("check-")
            found[label] = leaks(cell.source, solutions[label], answers[label])
    assert found and not any(found.values()), {label: f for label, f in found.items() if f}
