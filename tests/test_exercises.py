"""Every exercise checks itself: aiayn_helpers.exercises, and the chapters' check cells on filled-in stubs.

The notebook test builds the student edition of a chapter (tools/make_student.py), fills
every answer cell with the book's solution (its own asserts removed: a student's answer
has none) and runs the chapter: every check cell must say "right". Then, in the same
kernel, it runs typical wrong answers (the solution with one planted mistake) and their
check cells: each must be reported wrong (``WrongAnswer``), so no wrong answer runs silently.
"""

from __future__ import annotations

import ast
import os
import re
import sys
from pathlib import Path

import nbformat
import pytest
import torch
from nbclient import NotebookClient

from aiayn_helpers.exercises import WrongAnswer, check, exercise_name, quiz

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import make_student  # noqa: E402

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))

# Typical wrong answers, at least two per chapter: (exercise, [(in the solution, replaced by), ...]).
WRONG: dict[str, list[tuple[str, list[tuple[str, str]]]]] = {
    "00_a_first_look.ipynb": [
        ("ch00-ex1", [("share_embeddings=True", "share_embeddings=False")]),  # three vocabulary matrices
        ("ch00-ex1", [("d_ff=4096", "d_ff=2048")]),  # the base model's d_ff
    ],
    "02_scaled_dot_product_attention.ipynb": [
        ("ch02-ex1", [("((keys @ query) / tau)", "((keys @ query) * tau)")]),  # the inverse temperature
        ("ch02-ex2", [("predicted_variance = d_k * sigma**4", "predicted_variance = d_k * sigma**2")]),  # 256
        ("ch02-ex3", [("math.isqrt(n_params // 8) + 1", "math.isqrt(n_params) + 1")]),  # one head
        ("ch02-ex4", [('masked_fill(~bool_mask, float("-inf"))', 'masked_fill(bool_mask, float("-inf"))')]),
        ("ch02-ex4", [('masked_fill(~bool_mask, float("-inf"))', "masked_fill(~bool_mask, -1.0)")]),  # not -inf
    ],
    "03_multi_head_attention.ipynb": [
        ("ch03-ex1", [("t.view(B, T, h, d_k).transpose(1, 2)", "t.view(B, h, T, d_k)")]),  # split: no transpose
        ("ch03-ex1", [("heads.transpose(1, 2).reshape(B, T, d_model)", "heads.reshape(B, T, d_model)")]),  # merge
        ("ch03-ex2", [("ours.w_o.weight[:, idx]", "ours.w_o.weight[idx]")]),  # permutes the rows of W^O
        ("ch03-ex2", [("order = [2, 1, 0, 3]", "order = [1, 0, 2, 3]")]),  # other heads swapped
        ("ch03-ex3", [("key_padding_mask=~keep[:, 0, 0]", "key_padding_mask=keep[:, 0, 0]")]),  # PyTorch's convention
        ("ch03-ex4", [("scores = q4[0, 0] @ k4[0, 0].T", "scores = x4[0] @ x4[0].T")]),  # the inputs, not a head
    ],
    "04_positional_encoding.ipynb": [
        ("ch04-ex1", [("shift_matrix(-5, 64), shift_matrix(5, 64)", "shift_matrix(5, 64), shift_matrix(5, 64)")]),
        ("ch04-ex1", [("back_shifted = pe64[5:] @ M_back.T", "back_shifted = pe64[5:] @ M_back")]),  # no transpose
        (
            "ch04-ex2",
            [
                (
                    "W_q, W_k = torch.randn(64, 64, dtype=torch.float64), torch.randn(64, 64, dtype=torch.float64)",
                    "W_q = W_k = torch.randn(64, 64, dtype=torch.float64)",
                )
            ],
        ),  # fmt: skip
        ("ch04-ex3", [("X, Y = tab[:-1], tab[1:]", "X, Y = tab[:-1], tab[:-1]")]),  # fits the identity
        ("ch04-ex4", [("math.log(10000.0) / (half - 1)", "math.log(10000.0) / half")]),  # the paper's spacing
    ],
    "01_history_of_attention.ipynb": [
        ("ch01-ex1", [("torch.zeros(n_align)", "torch.ones(n_align)")]),  # not v_a = 0
        ("ch01-ex1", [("alpha_zero = e_zero.softmax(dim=-1)", "alpha_zero = e_zero")]),  # scores, not weights
        ("ch01-ex2", [("for m in (attentive.W_a, attentive.U_a, attentive.v_a)", "for m in (attentive.W_a,)")]),
        ("ch01-ex4", [("weights.max(dim=-1).values.mean()", "weights.mean(dim=-1).mean()")]),  # the mean weight
    ],
    "05_encoder.ipynb": [
        ("ch05-ex1", [(" + 2 * 2 * dm", "")]),  # the LayerNorms forgotten
        ("ch05-ex1", [("4 * (dm * dm + dm) + (2 * dm * dff + dff + dm)", "4 * dm * dm + 2 * dm * dff")]),  # no biases
        ("ch05-ex2", [("permuted_out = enc(xs[:, perm])", "permuted_out = enc(xs)")]),  # the input not permuted
        ("ch05-ex3", [("norm_first=True", "norm_first=False")]),  # post-norm ends in a LayerNorm anyway
        ("ch05-ex3", [("final_norm=final_norm", "final_norm=True")]),  # both with the final norm
        ("ch05-ex4", [("layer.load_state_dict(shared.state_dict())", "pass")]),  # weights not copied
    ],
    "06_decoder.ipynb": [
        ("ch06-ex1", [("ours = float_mask == 0", "ours = float_mask.bool()")]),  # nonzero read as allowed
        ("ch06-ex2", [("src_changed[0, -2]", "src_changed[1, -2]")]),  # the other sentence changed
        ("ch06-ex3", [("floor_big = math.log(1 + (V_big - 1) / math.e)", "floor_big = math.log(V_big - 1)")]),
        (
            "ch06-ex4",
            [
                (
                    "torch.cat([tgt_in, pads], 1), torch.cat([tgt_out, pads], 1)",
                    "torch.cat([tgt_in, pads], 1), torch.cat([pads, tgt_out], 1)",
                )
            ],
        ),
    ],
    "07_full_model.ipynb": [
        ("ch07-ex1", [("share_embeddings=False", "share_embeddings=True")]),  # the tied model counted
        ("ch07-ex1", [("vocab_share = 3 * 37000 * 512", "vocab_share = 37000 * 512")]),  # one matrix of three
        ("ch07-ex2", [("half_step = 4 * 4000", "half_step = 2 * 4000")]),  # as if the rate fell like 1/step
        ("ch07-ex3", [("zip(hyps, references[:100])", "zip(hyps, references[1:101])")]),  # references off by one
        ("ch07-ex3", [("float(np.mean(ah.score_hypotheses", "float(np.sum(ah.score_hypotheses")]),  # a sum, not a mean
        ("ch07-ex4", [("largest = max(len(b) * max(len(train_ids[i][side]) for i in b)", "largest = max(len(b)")]),
        ("ch07-ex4", [("used = sorted(i for b in bucketed for i in b)", "used = sorted(b[0] for b in bucketed)")]),
    ],
    "08_using_the_model.ipynb": [
        ("ch08-ex1", [("cache_bytes = 2 * 6 * 100 * 1024 * 32 * 4 * 4", "cache_bytes = 6 * 100 * 1024 * 32 * 4 * 4")]),
        ("ch08-ex1", [("cache_bytes = 2 * 6 * 100 * 1024 * 32 * 4 * 4", "cache_bytes = 2 * 6 * 100 * 1024 * 32 * 4")]),
        ("ch08-ex2", [('"beam" if b > g else "greedy"', '"beam" if b < g else "greedy"')]),  # more negative = better
        ("ch08-ex3", [("model.decoder.layers[0].cross_attn", "model.decoder.layers[1].cross_attn")]),  # another layer
    ],
    "09_what_the_paper_measured.ipynb": [
        ("ch09-ex1", [("h[0, -1].sum().backward()", "h[0, 1].sum().backward()")]),  # a position next to the first
        ("ch09-ex2", [('8 * TFLOPS["P100"]', 'TFLOPS["P100"]')]),  # one GPU
        ("ch09-ex2", [('TFLOPS["P100"] * 1e12 for steps', 'TFLOPS["K80"] * 1e12 for steps')]),  # another GPU's rate
        ("ch09-ex3", [("[pre_tokenized(sub_refs)]", "[sub_refs]")]),  # the references left untokenized
    ],
    "10_after_the_paper.ipynb": [
        ("ch10-ex1", [("2 ** (-8 / n_heads * (head + 1))", "2 ** (-8 / n_heads * head)")]),  # heads from 1
        ("ch10-ex1", [("bias_10_4 = -slope * (10 - 4)", "bias_10_4 = slope * (10 - 4)")]),  # a bonus, not a penalty
        (
            "ch10-ex2",
            [
                ("ell = np.exp(m_a - m) * l_a + np.exp(m_b - m) * l_b", "ell = l_a + l_b"),
                ("o = np.exp(m_a - m) * o_a + np.exp(m_b - m) * o_b", "o = o_a + o_b"),
            ],
        ),  # no rescaling to the common maximum
        (
            "ch10-ex3",
            [
                (
                    '"mask": p * 0.8, "random": p * 0.1, "unchanged": p * 0.1',
                    '"mask": 0.8, "random": 0.1, "unchanged": 0.1',
                )
            ],
        ),
        ("ch10-ex3", [('"predicted": p}', '"predicted": p * 0.8}')]),  # only the [MASK]ed ones
    ],
    "A_forward_pass_numpy.ipynb": [
        ("chA-ex1", [("total = sum(a.size for a in params.values())", "total = len(params)")]),  # arrays, not numbers
        ("chA-ex1", [('attn = {name.rsplit(".", 2)[0] for name', "attn = {name for name")]),  # arrays, not modules
        ("chA-ex2", [("tgt_changed[:, -1] = (tgt[:, -1]", "tgt_changed[:, 0] = (tgt[:, 0]")]),  # the first token
        ("chA-ex3", [("decode(out, memory, src, params)[:, -1]", "decode(out, memory, src, params)[:, 0]")]),
        (
            "chA-ex4",
            [
                (
                    'return x + feed_forward(layer_norm(x, p, "norm2"), sub(p, "ff."))',
                    'return layer_norm(x + feed_forward(x, sub(p, "ff.")), p, "norm2")',
                )
            ],
        ),  # fmt: skip
    ],
}
# chapters whose exercises do not have check cells yet (each is a known gap, listed in the issue)
PENDING: set[str] = set()  # every chapter has its check cells

# ---------------------------------------------------------------------------- the helper


def test_exercise_names_match_the_site():
    assert exercise_name("ch03-ex1") == "Exercise 3.1"
    assert exercise_name("ch00-ex4") == "Exercise 0.4"
    assert exercise_name("chA-ex2") == "Exercise A.2"
    assert exercise_name("something-else") == "something-else"


def test_check_right_unanswered_and_wrong(capsys):
    check("ch02-ex2", 1024.0, 1024.0, why="d_k sigma^4.")
    assert capsys.readouterr().out == "✓ Exercise 2.2: right. d_k sigma^4.\n"
    check("ch02-ex2", ..., 1024.0)
    assert "○ Exercise 2.2: not answered yet" in capsys.readouterr().out
    with pytest.raises(WrongAnswer, match=r"when each product has variance sigma\^2\. \(expected 1024, got 256\.\)"):
        check("ch02-ex2", 256.0, 1024.0, mistakes={"each product has variance sigma^2": 256.0})
    with pytest.raises(WrongAnswer, match="not right: expected 1024, got 100. Think of d_k."):
        check("ch02-ex2", 100.0, 1024.0, hint="Think of d_k.")
    assert isinstance(WrongAnswer("x"), AssertionError), "a wrong answer stops the notebook like an assert"


def test_check_answers_computed_from_the_students_objects(capsys):
    check("ch03-ex2", lambda: 1 / 0, 1.0, given=(..., 2))  # not answered: the function is never called
    assert "not answered yet" in capsys.readouterr().out
    check("ch03-ex2", lambda: 2.0, lambda: 2.0, given=3)
    assert "right" in capsys.readouterr().out
    with pytest.raises(WrongAnswer, match="using your answer fails with ZeroDivisionError: division by zero"):
        check("ch03-ex2", lambda: 1 / 0, 1.0, given=3)
    check("ch01-ex4", {10: ..., 25: 0.9}, {10: True, 25: True})
    assert "not answered yet" in capsys.readouterr().out


def test_check_tensors_say_what_differs():
    expected = torch.arange(6.0).reshape(2, 3)
    check("ch03-ex1", expected.clone().double(), expected)  # dtype does not matter, values do
    with pytest.raises(WrongAnswer, match=r"expected shape \(2, 3\), got shape \(3, 2\)"):
        check("ch03-ex1", expected.T, expected)
    wrong = expected.clone()
    wrong[1, 2] += 0.5
    with pytest.raises(WrongAnswer, match=r"1 of 6 values differ; the largest difference is 0.5, at index \(1, 2\)"):
        check("ch03-ex1", wrong, expected)
    with pytest.raises(WrongAnswer, match="expected a tensor"):
        check("ch03-ex1", 3.0, expected)
    with pytest.raises(WrongAnswer, match="1 entries differ"):
        check("ch06-ex1", torch.tensor([True, False]), torch.tensor([True, True]))
    with pytest.raises(WrongAnswer, match=r"item 1: expected False, got True"):
        check("ch04-ex2", (True, True), (True, False))
    with pytest.raises(WrongAnswer, match=r"\[7\]: expected False"):
        check("ch04-ex3", {6: True, 7: True}, {6: True, 7: False})
    with pytest.raises(WrongAnswer, match="expected 2, got 3"):
        check("ch04-ex4", 3, 2)
    check("ch07-ex2", "B ", "b")  # choices: case and spaces do not matter


def test_quiz_output_is_the_same_every_run(monkeypatch):
    pytest.importorskip("jupyterquiz")
    import jupyterquiz.dynamic.display as shown

    runs: list[list[str]] = []
    monkeypatch.setattr(shown, "display", lambda obj: runs[-1].append(obj.data))
    questions = [{"question": "Q?", "type": "multiple_choice", "answers": [{"answer": "a", "correct": True}]}]
    for _ in range(2):
        runs.append([])
        quiz(questions, key="chX")
    assert runs[0] == runs[1] and len(runs[0]) == 2, "the saved output must not change between runs (nbval)"
    assert '"question": "Q?"' in runs[0][1]
    with pytest.raises(ValueError, match="at least one of them correct"):
        quiz([{"question": "Q?", "answers": [{"answer": "a", "correct": False}]}], key="chX")


# ---------------------------------------------------------------------------- the chapters


def _labels(nb) -> list[str]:
    return re.findall(r":label:\s*(ch\w+-ex\w+)", "\n".join(c.source for c in nb.cells if c.cell_type == "markdown"))


def _solution_sources(nb) -> dict[str, str]:
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


def _chapters_with_checks():
    for path in NOTEBOOKS:
        marks = [pytest.mark.xfail(reason="check cells not written yet", strict=False)] if path.name in PENDING else []
        yield pytest.param(path, marks=marks, id=path.name)


@pytest.mark.parametrize("path", list(_chapters_with_checks()))
def test_every_exercise_has_a_stub_and_a_check(path):
    nb = nbformat.read(path, as_version=4)
    labels = _labels(nb)
    checks = {c.id.removeprefix("check-") for c in nb.cells if "exercise-check" in c.metadata.get("tags", [])}
    assert set(labels) <= checks, f"exercises without a check cell: {sorted(set(labels) - checks)}"
    student, _ = make_student.studentize(nb)
    stubs = [c.source for c in student.cells if c.id.startswith("stub-")]
    assert all("= ..." in s for s in stubs), "every answer cell names what the check reads, set to ..."
    assert path.name in WRONG and len(WRONG[path.name]) >= 2, "at least two typical wrong answers per chapter"


def _run(client, cell) -> list:
    client.execute_cell(cell, 0)
    return cell.outputs


@pytest.mark.exercises  # runs every chapter a second time: in make test-portable, to keep make test within 15 min
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if p.name not in PENDING], ids=lambda p: p.name)
def test_right_answers_pass_and_wrong_ones_are_reported(path):
    original = nbformat.read(path, as_version=4)
    solutions = _solution_sources(original)
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
        for label in _labels(original):
            assert f"✓ {exercise_name(label)}: right." in verdicts[label], f"{label}: {verdicts[label]!r}"

        unanswered, _ = make_student.studentize(original)  # the stubs as handed out: every check runs
        for label in _labels(original):
            stub = next(c for c in unanswered.cells if c.id == f"stub-{label}")
            checker = next(c for c in unanswered.cells if c.id == f"check-{label}")
            outputs = _run(client, nbformat.from_dict(stub)) + _run(client, nbformat.from_dict(checker))
            text = "".join(o.get("text", "") for o in outputs)
            assert f"○ {exercise_name(label)}: not answered yet" in text, f"{label} unanswered: {outputs}"

        for label, changes in WRONG[path.name]:
            wrong = solutions[label]
            for old, new in changes:
                assert old in wrong, f"{label}: {old!r} is not in the solution any more"
                wrong = wrong.replace(old, new)
            answer = nbformat.v4.new_code_cell(answer_from(wrong))
            checker = nbformat.v4.new_code_cell(next(c.source for c in student.cells if c.id == f"check-{label}"))
            outputs = _run(client, answer) + _run(client, checker)
            errors = [o for o in outputs if o.output_type == "error"]
            assert errors, f"{label}: the wrong answer {changes} passed its check"
            assert errors[-1].ename == "WrongAnswer", f"{label} {changes}: {errors[-1].ename}: {errors[-1].evalue}"
            assert f"✗ {exercise_name(label)}: not right" in errors[-1].evalue
