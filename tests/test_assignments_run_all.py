"""A student's Run All over a released assignment: one slip, and "Am I done?" still reports it, by its cause.

JupyterLab's *Run All* stops at the first cell that raises, unless the cell is tagged
``raises-exception``: JupyterLab 4 then sends that cell's execute request with
``stop_on_error`` false (``CodeCell.execute`` in @jupyterlab/cells), and the kernel runs
the cells queued after it. nbclient follows the same rule (``allow_errors`` false, the
tag honoured), so a Run All here is nbclient's run with its defaults. Every visible test
cell of book/autograder/source is tagged, and make student tags every answer cell of the
released notebooks (tools/grading/handin.py), so a failing test or a typo in an answer
shows its error and the notebook goes on to "Am I done?", which runs every visible test
again, names what failed, and names a cell Python could not read (its number, first line,
the error and its line).

Each common slip of an assignment (the missing sqrt(d_k), the mask's direction, the
softmax's axis, ...) is planted in the solution, and the visible test under it must fail
with a message that names the cause, not only the symptom, and "Am I done?" must name it
too. Those run in this process (the released cells, "Am I done?" included, executed in
order in a fresh namespace, as the kernel would); one slip of one assignment runs in a
kernel as a Run All (tests/test_student_lab.py runs another in JupyterLab). The released notebooks come from
make student's course (nbgrader generate_assignment), built once per session.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tools"))
import grading_courses  # noqa: E402
import test_assignments  # noqa: E402

pytest.importorskip("nbgrader", reason="nbgrader is pinned in requirements.txt")

SOURCE = ROOT / "book" / "autograder" / "source"
ASSIGNMENTS = [f"assignment{i}" for i in range(1, 5)]
SQRT = "/ math.sqrt(q.size(-1))"

# assignment -> slip -> ({answer cell: [(in the solution, replaced by)]}, the visible test that must fail,
# words its message must contain: the function, the property and the cause)
SLIPS = {
    "assignment1": {
        "no sqrt(d_k)": (
            {"sdpa_answer": [(SQRT, "")]},
            "test_sdpa_values",
            "scaled_dot_product_attention fails the scaling check: your weights are softmax(q k^T): divide the scores"
            " by sqrt(d_k)",
        ),
        "divides by d_k": (
            {"sdpa_answer": [(SQRT, "/ q.size(-1)")]},
            "test_sdpa_values",
            "divide by sqrt(d_k), not d_k",
        ),
        "softmax over the queries": (
            {"sdpa_answer": [("scores.softmax(dim=-1)", "scores.softmax(dim=-2)")]},
            "test_sdpa_values",
            "the softmax runs over the queries (dim=-2): it must run over the keys (dim=-1)",
        ),
        "inverted mask": (
            {"sdpa_answer": [("masked_fill(~mask,", "masked_fill(mask,")]},
            "test_sdpa_mask",
            "scaled_dot_product_attention fails the masking convention check: the mask is inverted",
        ),
        "ignores the mask": (
            {"sdpa_answer": [("if mask is not None:", "if False:")]},
            "test_sdpa_mask",
            "the mask is ignored",
        ),
        "a finite fill": (
            {"sdpa_answer": [('float("-inf")', "-20.0")]},
            "test_sdpa_mask",
            "fill with float('-inf'), not a finite number",
        ),
        "heads split without the transpose": (
            {
                "mha_answer": [
                    (
                        ".view(x.size(0), -1, self.num_heads, self.d_k).transpose(1, 2)",
                        ".view(x.size(0), self.num_heads, -1, self.d_k)",
                    )
                ]
            },
            "test_mha_self",
            "right with 1 head, not with 4: split with .view(batch, T, h, d_k).transpose(1, 2)",
        ),  # fmt: skip
        "the mask not passed on": (
            {"mha_answer": [("scaled_dot_product_attention(q, k, v, mask)", "scaled_dot_product_attention(q, k, v)")]},
            "test_mha_causal",
            "MultiHeadAttention fails the masking check: the output is the one without a mask",
        ),
    },
    "assignment2": {
        "sin and cos swapped": (
            {
                "pe_answer": [
                    ("torch.sin(position", "torch.COS(position"),
                    ("torch.cos(position", "torch.sin(position"),
                    ("torch.COS(position", "torch.cos(position"),
                ]
            },
            "test_positional_encoding",
            "positional_encoding fails the sin and cos check: the even columns hold cos and the odd ones sin",
        ),  # fmt: skip
        "exponent i / d_model": (
            {
                "pe_answer": [
                    (
                        "torch.arange(0, d_model, 2, dtype=torch.float64)",
                        "torch.arange(d_model // 2, dtype=torch.float64)",
                    )
                ]
            },
            "test_positional_encoding",
            "the exponent is i / d_model: it is 2i / d_model",
        ),  # fmt: skip
        "no ReLU": (
            {"ff_answer": [("torch.relu(self.linear1(x))", "self.linear1(x)")]},
            "test_FeedForward",
            "FeedForward fails the activation check: there is no ReLU between the two layers",
        ),
        "pre-norm": (
            {
                "encoder_answer": [
                    ("self.norm1(x + self.self_attn(x, x, x, mask))", "x + self.self_attn(*[self.norm1(x)] * 3, mask)"),
                    ("self.norm2(x + self.ff(x))", "x + self.ff(self.norm2(x))"),
                ]
            },
            "test_EncoderLayer",
            "EncoderLayer fails the post-norm check: the norms come before the sublayers (pre-norm)",
        ),  # fmt: skip
        "the mask not passed on": (
            {"encoder_answer": [("self.self_attn(x, x, x, mask)", "self.self_attn(x, x, x)")]},
            "test_EncoderLayer",
            "EncoderLayer fails the masking check: the mask is not passed on to self_attn",
        ),
    },
    "assignment3": {
        "inverted padding mask": (
            {"padding_answer": [("tokens != pad_id", "tokens == pad_id")]},
            "test_padding_mask",
            "padding_mask fails the masking convention check: your mask is True at the pads",
        ),
        "no broadcast axes": (
            {"padding_answer": [("[:, None, None, :]", "")]},
            "test_padding_mask",
            "add the two axes with [:, None, None, :]",
        ),
        "pads compared with 0": (
            {"padding_answer": [("tokens != pad_id", "tokens != 0")]},
            "test_padding_mask",
            "compare with pad_id, not with 0",
        ),
        "causal mask upside down": (
            {"causal_answer": [(".tril()", ".triu()")]},
            "test_causal_mask",
            "causal_mask fails the no peeking check: it is upside down",
        ),
        "PyTorch's convention": (
            {"causal_answer": [(".tril()", ".triu(1)")]},
            "test_causal_mask",
            "causal_mask fails the masking convention check: True marks the blocked positions",
        ),
        "tgt_mask not passed on": (
            {"decoder_answer": [("self.self_attn(x, x, x, tgt_mask)", "self.self_attn(x, x, x)")]},
            "test_DecoderLayer",
            "DecoderLayer fails the masking (tgt_mask) check: tgt_mask is not passed on to self_attn",
        ),
        "memory_mask not passed on": (
            {"decoder_answer": [("memory, memory, memory_mask)", "memory, memory)")]},
            "test_DecoderLayer",
            "DecoderLayer fails the masking (memory_mask) check: memory_mask is not passed on to cross_attn",
        ),
        "cross-attention over x": (
            {"decoder_answer": [("self.cross_attn(x, memory, memory, memory_mask)", "self.cross_attn(x, x, x)")]},
            "test_DecoderLayer",
            "DecoderLayer fails the cross-attention check: cross_attn attends over x",
        ),
    },
    "assignment4": {
        "log of softmax": (
            {"loss_answer": [("logits.log_softmax(dim=-1)", "logits.softmax(dim=-1).log()")]},
            "test_label_smoothed_loss",
            "label_smoothed_loss fails the numerical stability check",
        ),
        "pads counted": (
            {"loss_answer": [("loss[keep].sum() / keep.sum()", "loss.mean()")]},
            "test_label_smoothed_loss",
            "label_smoothed_loss fails the padding check: the pad tokens count in the loss",
        ),
        "smoothing over V - 1 classes": (
            {
                "loss_answer": [
                    ("smooth = -logp.mean(dim=-1)", "smooth = -(logp.sum(-1) + nll) / (logits.size(-1) - 1)")
                ]
            },
            "test_label_smoothed_loss",
            "epsilon is spread over the V - 1 other classes",
        ),  # fmt: skip
        "no d_model^-0.5": (
            {"noam_answer": [("d_model**-0.5 * ", "")]},
            "test_noam_lr",
            "noam_lr fails the scaling check: the factor d_model^-0.5 is missing",
        ),
        "gradients accumulate": (
            {"step_answer": [("optimizer.zero_grad()", "pass")]},
            "test_train_step",
            "call optimizer.zero_grad() before loss.backward()",
        ),
        "no training mode": (
            {"step_answer": [("model.train()", "pass")]},
            "test_train_step",
            "train_step fails the training mode check: call model.train()",
        ),
        "no schedule step": (
            {"step_answer": [("scheduler.step()", "pass")]},
            "test_train_step",
            "train_step fails the schedule check: the scheduler must step once per update, it stepped 0 times",
        ),
    },
}
# the assignment and slip of the Run All in a kernel (assignment 1's runs in JupyterLab: tests/test_student_lab.py)
RUN_ALL = ("assignment3", "inverted padding mask")


@pytest.fixture(scope="module")
def released(tmp_path_factory) -> dict[str, nbformat.NotebookNode]:
    """The released notebooks, as make student writes them (with the "Am I done?" cell)."""
    course = tmp_path_factory.mktemp("run-all") / "course"
    assert grading_courses.course_of(tmp_path_factory, course, ASSIGNMENTS) == ASSIGNMENTS
    return {n: nbformat.read(course / "release" / n / f"{n}.ipynb", as_version=4) for n in ASSIGNMENTS}


def _answers(name: str, slip: str | None) -> dict[str, str]:
    correct = test_assignments._solutions(test_assignments._read(name))
    if slip is None:
        return correct
    return test_assignments._with_bug(correct, SLIPS[name][slip][0], f"{name}, {slip}")


def _grade_id(cell) -> str | None:
    return cell.metadata.get("nbgrader", {}).get("grade_id")


def _run_in_order(nb: nbformat.NotebookNode) -> tuple[dict[str, str], str]:
    """``(errors, report)``: each code cell's error (grade_id, or the cell's index, -> 'ename: evalue'), running
    the cells in order in one namespace, as a kernel's Run All does with the tagged test cells (a cell that raises
    is recorded and the next one runs), and what the last cell, "Am I done?", printed."""
    namespace = {"__name__": "__main__"}
    errors, report = {}, io.StringIO()
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        try:
            with contextlib.redirect_stdout(report if cell.get("id") == "am-i-done" else io.StringIO()):
                exec(compile(cell.source, f"<cell {i}>", "exec"), namespace)
        except Exception as error:  # the cell's error, as the notebook would show it
            errors[_grade_id(cell) or str(i)] = f"{type(error).__name__}: {error}"
    return errors, report.getvalue()


def _names_the_slip(nb: nbformat.NotebookNode, report: str, failing: str, words: str) -> None:
    """The report says the visible test ``failing`` FAILED and, on the next line, why (``words``)."""
    assert "Visible tests:" in report and "not defined" not in report, report
    cell = next(c for c in nb.cells if _grade_id(c) == failing)
    title = cell.source.splitlines()[0].lstrip("# ").strip().rstrip(".")
    lines = report.splitlines()
    where = lines.index(f"  FAILED  {title}")  # the failing test, and on the next line why
    assert words in lines[where + 1], report


@pytest.fixture(autouse=True)
def _not_grading(monkeypatch):
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)  # "Am I done?" is silent while nbgrader grades


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_every_visible_test_goes_on_after_a_failure(released, name):
    """Every test cell with visible code and every answer cell is tagged raises-exception (Run All goes on after
    it, to "Am I done?", which names an answer cell Python could not read)."""
    tested = 0
    for cell in released[name].cells:
        meta = cell.metadata.get("nbgrader", {})
        tags = cell.metadata.get("tags", [])
        if meta.get("solution") and cell.cell_type == "code":
            assert "raises-exception" in tags, f"{name}/{meta['grade_id']}: an answer's error would stop Run All"
        elif meta.get("grade") and meta.get("points"):
            assert "raises-exception" in tags, f"{name}/{meta['grade_id']} would stop Run All when it fails"
            tested += 1
    assert tested >= 3


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_the_solution_passes_every_visible_test(released, name):
    errors, report = _run_in_order(test_assignments._fill(released[name], _answers(name, None)))
    assert errors == {}
    passed = report.count("  passed  ")
    assert f"Visible tests: {passed} of {passed} passed." in report and "FAILED" not in report, report
    assert passed >= 3, report


@pytest.mark.parametrize(("name", "slip"), [(n, s) for n, slips in SLIPS.items() for s in slips])
def test_a_slip_fails_its_visible_test_and_am_i_done_names_the_cause(released, name, slip):
    """Every slip, run through to "Am I done?" (in this process: the cells in order, as Run All runs them)."""
    _, failing, words = SLIPS[name][slip]
    nb = test_assignments._fill(released[name], _answers(name, slip))
    errors, report = _run_in_order(nb)
    assert failing in errors, f"{slip}: {failing} passed; errors: {errors}"
    assert words in errors[failing], errors[failing]
    assert all(gid.startswith("test_") for gid in errors), f"{slip}: a cell other than a test failed: {errors}"
    _names_the_slip(nb, report, failing, words)


@pytest.mark.timeout(600)
def test_run_all_with_a_slip_reaches_am_i_done(released, tmp_path):
    """Run All (stop at the first error, tagged cells excepted) in a kernel; the last cell reports the slip.
    One assignment runs in a kernel (the mechanism: the tag, stop_on_error, the kernel going on); every slip of
    every assignment reaches "Am I done?" in this process above, and tests/test_student_lab.py runs assignment 1's
    Run All in JupyterLab."""
    name, slip = RUN_ALL
    _, failing, words = SLIPS[name][slip]
    nb = test_assignments._fill(released[name], _answers(name, slip))
    env = {k: v for k, v in os.environ.items() if k != "NBGRADER_EXECUTION"}
    client = NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    client.execute(env=env)  # raises CellExecutionError at a cell that errs without the tag: the test fails there
    done = nb.cells[-1]
    assert done.get("id") == "am-i-done" and done.outputs, "Run All did not reach the Am I done? cell"
    report = "".join(o.get("text", "") for o in done.outputs if o.output_type == "stream")
    _names_the_slip(nb, report, failing, words)
    cell = next(c for c in nb.cells if _grade_id(c) == failing)
    assert any(words in o.get("evalue", "") for o in cell.outputs if o.output_type == "error")


def _answer_cells(nb: nbformat.NotebookNode) -> list[str]:
    return [_grade_id(c) for c in nb.cells if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("solution")]


def _with_syntax_error(source: str) -> tuple[str, int]:
    """``source`` with its first call left unclosed (``super().__init__(``, as a student might type it),
    and the line of the error Python reports for it; a cell without a call gets ``x = (`` added at its end."""
    lines = source.splitlines()
    broken = source + "\nx = ("
    for i, line in enumerate(lines):
        if line.rstrip().endswith(")") and "(" in line and not line.lstrip().startswith("#"):
            broken = "\n".join(lines[:i] + [line.rstrip()[:-1]] + lines[i + 1 :])
            break
    try:
        compile(broken, "<answer>", "exec")
    except SyntaxError as error:
        return broken, error.lineno
    raise AssertionError(f"no syntax error in {broken!r}")


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_run_all_goes_on_past_a_syntax_error_in_each_answer_cell(released, name, tmp_path):
    """Run All (nbclient with its defaults, as JupyterLab's Run All: it stops at a cell that raises, unless the cell
    is tagged raises-exception) with a syntax error in one answer cell at a time, the other answers right: it reaches
    "Am I done?", which names that answer cell (its first line) and the error with its line."""
    env = {k: v for k, v in os.environ.items() if k != "NBGRADER_EXECUTION"}
    answers = _answers(name, None)
    cells = _answer_cells(released[name])
    assert cells, f"{name}: no answer cell"
    for grade_id in cells:
        broken, line = _with_syntax_error(answers[grade_id])
        nb = test_assignments._fill(released[name], answers | {grade_id: broken})
        client = NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
        try:
            client.execute(env=env)
        except Exception as error:  # nbclient's CellExecutionError: Run All stopped there
            pytest.fail(f"{name}/{grade_id}: Run All stopped at the syntax error: {str(error)[-300:]}")
        done = nb.cells[-1]
        report = "".join(o.get("text", "") for o in done.outputs if o.output_type == "stream")
        assert done.get("id") == "am-i-done" and "Visible tests:" in report, f"{name}/{grade_id}: {report}"
        first = next(ln for ln in broken.splitlines() if ln.strip()).strip()
        assert "did not run" in report and first[:40] in report, f"{name}/{grade_id}: {report}"
        assert "SyntaxError" in report and f"line {line}" in report, f"{name}/{grade_id}: {report}"
