"""The grader's rules as properties of every notebook, checked on generated ones (issue 51).

Each property is checked with Hypothesis on notebooks made from the course's reference
answers, the released blanks and the planted slips, and graded by the grader's own path
(tests/grading_harness.py: repair, restore, verdict.kernel_copy, a kernel's run, judge):

(a) honest invariance: a change that keeps the answers' meaning (private names of the
    student's own, including every name the grader uses; float32 or float64 constants;
    prints and comments; an extra helper cell; independent answer cells in another
    order; the notebook saved by Colab, VS Code or as nbformat 4.4) keeps full marks;
(b) no free points: deleting, emptying or moving an answer cell never raises a score,
    and a blank notebook scores 0 whatever the order of its cells;
(c) part isolation: breaking one part's answer loses that part's points only (a planted
    slip: some of them, never another part's; a blank or deleted answer: all of them);
(d) report integrity: nothing a submission writes (cell metadata, names, outputs) starts
    a line of the student's report or sets NOT GRADED.

Derandomized, no example database: the same notebooks on every run. ``make test`` runs
a few examples of each (QUICK); the integration tier (``make test-integration``) runs
LONG examples of each. The margin table of the tolerances (the largest error of an
honest float32 answer against the smallest error of a planted slip, per test) is
printed by test_tolerances_pass_float32_and_fail_every_slip (pytest -s).
"""

from __future__ import annotations

import copy
import os

import grading_harness as h
import nbformat
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("torch")

QUICK = int(os.environ.get("AIAYN_PROPERTY_EXAMPLES", "4"))
LONG = 40


def _profile(n: int):
    return settings(
        max_examples=n,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )


# Meaning-preserving rewrites of the reference answers: (answer cell, text, alternatives)
CONSTANTS = {
    "assignment1": [
        (
            "sdpa_answer",
            "math.sqrt(q.size(-1))",
            [
                "torch.sqrt(torch.tensor(q.size(-1)))",  # float32, as many tutorials write it
                "torch.tensor(q.size(-1), dtype=torch.float32).sqrt()",
                "torch.tensor(q.size(-1), dtype=torch.float64).sqrt()",
                "q.size(-1) ** 0.5",
                "float(torch.tensor(float(q.size(-1))).sqrt())",
            ],
        ),
    ],
    "assignment2": [
        ("pe_answer", "torch.arange(length, dtype=torch.float64)", ["torch.arange(length, dtype=torch.float32)"]),
        (
            "pe_answer",
            "10000.0 ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)",
            [
                "torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32)"
                " * (-torch.log(torch.tensor(10000.0)) / d_model))",
                "1.0 / 10000.0 ** (torch.arange(0, d_model, 2, dtype=torch.float32) / d_model)",
            ],
        ),
        ("pe_answer", "torch.zeros(length, d_model, dtype=torch.float64)", ["torch.zeros(length, d_model)"]),
    ],
    "assignment3": [
        ("padding_answer", "(tokens != pad_id)[:, None, None, :]", ["tokens.ne(pad_id).unsqueeze(1).unsqueeze(2)"]),
        (
            "causal_answer",
            "torch.ones(size, size, dtype=torch.bool).tril()",
            ["torch.tril(torch.ones(size, size)) > 0"],
        ),
    ],
    "assignment4": [
        (
            "noam_answer",
            "d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)",
            ["min(step**-0.5, step * warmup**-1.5) / d_model**0.5"],
        ),
        ("loss_answer", "(1 - epsilon) * nll + epsilon * smooth", ["nll - epsilon * (nll - smooth)"]),
    ],
}
# names the grader uses in the kernel (its helpers, its records): a student may use any
GRADER_NAMES = sorted(
    set().union(*(h.verdict.hidden_names(h.source(a)) for a in h.ASSIGNMENTS))
    | {"_aiayn_run", "_aiayn_setup", "_aiayn_missing", "_aiayn_gone", "_aiayn_forget", "_AIAYN_NOTEBOOK", "_display"}
)
JUNK = ["None", "lambda *a, **k: None", "'mine'", "0"]
FORMATS = ["as is", "nbformat 4.4", "colab", "vscode"]


def _answer_index(nb, gid: str) -> int:
    return next(i for i, c in enumerate(nb.cells) if h.grade_id(c) == gid)


def save_as(nb: nbformat.NotebookNode, how: str) -> nbformat.NotebookNode:
    """``nb`` as an editor saves it: nbformat 4.4 (no cell ids), Colab (no cell
    metadata but its own, new ids), VS Code (its own metadata beside nbgrader's)."""
    nb = copy.deepcopy(nb)
    if how == "nbformat 4.4":
        nb.nbformat_minor = 4
        for cell in nb.cells:
            cell.pop("id", None)
    elif how == "colab":
        nb.metadata = {"colab": {"provenance": []}, "kernelspec": {"name": "python3", "display_name": "Python 3"}}
        for i, cell in enumerate(nb.cells):
            cell.metadata = {"id": f"colab{i:04d}"}
            cell["id"] = f"colab{i:04d}"
    elif how == "vscode":
        nb.metadata["vscode"] = {"interpreter": {"hash": "0" * 64}}
        for cell in nb.cells:
            cell.metadata["vscode"] = {"languageId": "python"}
    return nb


def honest_notebook(data, name: str) -> nbformat.NotebookNode:
    """The reference answers of ``name`` changed in ways that keep their meaning."""
    answers = h.solutions(name)
    for gid, old, alternatives in CONSTANTS[name]:
        if data.draw(st.booleans(), label=f"rewrite {old}"):
            assert old in answers[gid], (name, old)
            answers[gid] = answers[gid].replace(old, data.draw(st.sampled_from(alternatives)))
    shadowed = data.draw(st.lists(st.sampled_from(GRADER_NAMES), max_size=8, unique=True), label="names")
    junk = data.draw(st.sampled_from(JUNK))
    own = "".join(f"{n} = {junk}\n" for n in shadowed)
    for gid in answers:
        if data.draw(st.booleans(), label=f"prints in {gid}"):
            answers[gid] = f"# my answer to {gid}\nprint('working on {gid}')\n{answers[gid]}\nprint('done')\n"
    in_answer = data.draw(st.sampled_from(sorted(answers)), label="names in")
    answers[in_answer] += "\n" + own
    nb = h.filled(name, answers)
    imports = _answer_index(nb, "imports")
    if data.draw(st.booleans(), label="helper cell"):
        at = data.draw(st.integers(imports + 1, len(nb.cells)), label="at")
        nb.cells.insert(at, nbformat.v4.new_code_cell("def _mine(x):\n    return x\n\n\n" + own))
    if data.draw(st.booleans(), label="reorder"):  # an answer moved earlier, still after the imports
        gid = data.draw(st.sampled_from(sorted(answers)))
        i = _answer_index(nb, gid)
        to = data.draw(st.integers(imports + 1, i))
        nb.cells.insert(to, nb.cells.pop(i))
    return save_as(nb, data.draw(st.sampled_from(FORMATS), label="saved as"))


def check_honest(data):
    name = data.draw(st.sampled_from(h.ASSIGNMENTS), label="assignment")
    nb = honest_notebook(data, name)
    graded = h.grade(name, nb)
    lost = {g: why for g, why in graded.failures.items() if why}
    assert graded.score == h.full(name), f"{name}: {graded.score}/{h.full(name)}: {lost}"


@_profile(QUICK)
@given(st.data())
def test_honest_changes_keep_full_marks(data):
    check_honest(data)


@pytest.mark.integration
@_profile(LONG)
@given(st.data())
def test_honest_changes_keep_full_marks_long(data):
    check_honest(data)


def partly_done(data, name: str) -> nbformat.NotebookNode:
    """The released notebook with some parts answered (by the course's answers)."""
    answers = h.solutions(name)
    done = data.draw(st.lists(st.sampled_from(sorted(answers)), unique=True), label="answered")
    return h.filled(name, {g: answers[g] for g in done})


def check_no_free_points(data):
    name = data.draw(st.sampled_from(h.ASSIGNMENTS), label="assignment")
    nb = partly_done(data, name)
    before = h.grade(name, nb).score
    how = data.draw(st.sampled_from(["move", "delete", "empty"]), label="how")
    saved = data.draw(st.sampled_from(FORMATS), label="saved as")
    for gid in sorted(h.parts(name)):  # each answer cell in turn
        i = _answer_index(nb, gid)
        changed = copy.deepcopy(nb)
        if how == "delete":
            del changed.cells[i]
        elif how == "empty":
            changed.cells[i].source = ""
        else:
            cell = changed.cells.pop(i)
            changed.cells.insert(data.draw(st.integers(0, len(changed.cells)), label=f"{gid} to"), cell)
        after = h.grade(name, save_as(changed, saved))
        assert after.score <= before, f"{name}: {how} {gid}: {before} -> {after.score}: {after.failures}"


@_profile(QUICK)
@given(st.data())
def test_deleting_emptying_or_moving_an_answer_never_raises_a_score(data):
    check_no_free_points(data)


@pytest.mark.integration
@_profile(LONG)
@given(st.data())
def test_deleting_emptying_or_moving_an_answer_never_raises_a_score_long(data):
    check_no_free_points(data)


def check_blank_permutation(data):
    saved = data.draw(st.sampled_from(FORMATS), label="saved as")
    for name in h.ASSIGNMENTS:  # a blank is cheap to grade: every assignment
        nb = h.released(name)
        nb.cells = data.draw(st.permutations(nb.cells), label=f"{name} order")
        graded = h.grade(name, save_as(nb, saved))
        assert graded.score == 0, f"{name}: a blank notebook scored {graded.score}: {graded.failures}"


@_profile(QUICK)
@given(st.data())
def test_a_blank_notebook_scores_0_in_any_order(data):
    check_blank_permutation(data)


@pytest.mark.integration
@_profile(LONG)
@given(st.data())
def test_a_blank_notebook_scores_0_in_any_order_long(data):
    check_blank_permutation(data)


# one planted slip per answer cell (the slips tests/test_grading.py and
# tests/test_assignments.py grade in the sandbox)
SLIPS = {
    "assignment1": {
        "sdpa_answer": [
            ("/ math.sqrt(q.size(-1))", "/ q.size(-1)"),
            ("scores.softmax(dim=-1)", "scores.softmax(dim=-2)"),
            ("masked_fill(~mask,", "masked_fill(mask,"),
        ],
        "mha_answer": [
            (
                ".view(x.size(0), -1, self.num_heads, self.d_k).transpose(1, 2)",
                ".view(x.size(0), self.num_heads, -1, self.d_k)",
            )
        ],
    },
    "assignment2": {
        "pe_answer": [("10000.0 ** (-torch", "1 - (torch")],
        "ff_answer": [("torch.relu(self.linear1(x))", "self.linear1(x)")],
        "encoder_answer": [("self.norm2(x + self.ff(x))", "x + self.ff(self.norm2(x))")],
    },
    "assignment3": {
        "padding_answer": [("tokens != pad_id", "tokens == pad_id")],
        "causal_answer": [(".tril()", ".triu()")],
        "decoder_answer": [("memory, memory, memory_mask)", "memory, memory)")],
    },
    "assignment4": {
        "loss_answer": [("logits.log_softmax(dim=-1)", "logits.softmax(dim=-1).log()")],
        "noam_answer": [("d_model**-0.5 * ", "")],
        "step_answer": [("optimizer.zero_grad()", "pass")],
    },
}


def check_isolation(data):
    name = data.draw(st.sampled_from(h.ASSIGNMENTS), label="assignment")
    answers = h.solutions(name)
    broken = data.draw(st.lists(st.sampled_from(sorted(answers)), min_size=1, max_size=1), label="broken")
    how = data.draw(st.sampled_from(["slip", "blank", "delete"]), label="how")
    for gid in broken:
        if how == "slip":
            old, new = data.draw(st.sampled_from(SLIPS[name][gid]), label="slip")
            assert old in answers[gid], (name, old)
            answers[gid] = answers[gid].replace(old, new)
        else:
            answers[gid] = "# YOUR CODE HERE\nraise NotImplementedError()\n"
    nb = h.filled(name, answers)
    if how == "delete":
        nb.cells = [c for c in nb.cells if h.grade_id(c) not in broken]
    graded = h.grade(name, nb)
    lost = {g for g, why in graded.failures.items() if why}
    part = {t for gid in broken for t in h.parts(name)[gid]}
    where = f"{name}: {how} {broken}: lost {sorted(lost)}, the part's tests {sorted(part)}"
    if how == "slip":  # a slip is caught by some of its part's tests, and costs no other
        assert lost and lost <= part, where
    else:  # a blank or missing answer loses all its part's tests, and no other
        assert lost == part, where


@_profile(QUICK)
@given(st.data())
def test_breaking_one_part_loses_that_parts_points_only(data):
    check_isolation(data)


@pytest.mark.integration
@_profile(LONG)
@given(st.data())
def test_breaking_one_part_loses_that_parts_points_only_long(data):
    check_isolation(data)


# the slips each tolerance must still catch (the four for attention among them)
MARGIN_SLIPS = {name: [(gid, old, new) for gid, pairs in SLIPS[name].items() for old, new in pairs] for name in SLIPS}
MARGIN_SLIPS["assignment1"].append(("sdpa_answer", "/ math.sqrt(q.size(-1))", ""))  # no scaling at all


def _leaves(value, path=""):
    """{path: number or tensor} of a decoded record (the own-work facts left out)."""
    import torch

    if isinstance(value, dict):
        return {k: v for key, item in value.items() if key != "own" for k, v in _leaves(item, f"{path}/{key}").items()}
    if isinstance(value, list):
        return {k: v for i, item in enumerate(value) for k, v in _leaves(item, f"{path}/{i}").items()}
    if isinstance(value, (torch.Tensor, float, int)) and not isinstance(value, bool):
        return {path: value}
    return {}


def _error(got, reference) -> float:
    """The largest difference between two records' numbers (inf where they differ in kind)."""
    import torch

    if got is None:
        return float("inf")
    a, b = _leaves(h.verdict.decode(got)), _leaves(h.verdict.decode(reference))
    if a.keys() != b.keys():
        return float("inf")
    worst = 0.0
    for key, x in a.items():
        y = b[key]
        if isinstance(x, torch.Tensor) != isinstance(y, torch.Tensor):
            return float("inf")
        if isinstance(x, torch.Tensor):
            if x.shape != y.shape or x.is_complex() or x.dtype == torch.bool:
                if x.shape != y.shape or not torch.equal(x, y):
                    return float("inf")
                continue
            diff = (x.double() - y.double()).abs().nan_to_num(float("inf"))
            worst = max(worst, diff.max().item() if diff.numel() else 0.0)
        else:
            worst = max(worst, abs(float(x) - float(y)))
    return worst


def _scale(record) -> float:
    leaves = _leaves(h.verdict.decode(record))
    sizes = [
        v.double().abs().max().item() if hasattr(v, "double") and v.numel() else abs(float(v)) for v in leaves.values()
    ]
    return max(sizes, default=0.0)


@pytest.mark.parametrize("name", h.ASSIGNMENTS)
def test_tolerances_pass_float32_and_fail_every_slip(name):
    """Per test cell: the largest error of a correct answer written with float32 or
    float64 constants, the tolerance (_close's default: 64 float32 epsilons at the size
    of the values) and the smallest error of a planted slip the test catches."""
    import torch

    reference = h.grade(name, h.filled(name))
    assert reference.score == h.full(name)
    honest: dict[str, float] = dict.fromkeys(h.points(name), 0.0)
    for gid, old, alternatives in CONSTANTS[name]:
        for alternative in alternatives:
            answers = h.solutions(name)
            answers[gid] = answers[gid].replace(old, alternative)
            graded = h.grade(name, h.filled(name, answers))
            assert graded.score == h.full(name), (name, alternative, graded.failures)
            for test in honest:
                honest[test] = max(honest[test], _error(graded.records[test], reference.records[test]))
    slips: dict[str, float] = dict.fromkeys(h.points(name), float("inf"))
    for gid, old, new in MARGIN_SLIPS[name]:
        answers = h.solutions(name)
        answers[gid] = answers[gid].replace(old, new)
        graded = h.grade(name, h.filled(name, answers))
        caught = [t for t, why in graded.failures.items() if why]
        assert caught, (name, old, new)
        for test in caught:
            slips[test] = min(slips[test], _error(graded.records[test], reference.records[test]))
    eps = 64 * torch.finfo(torch.float32).eps
    print(f"\n{name}: test cell | largest honest error | tolerance | smallest slip error")
    for test in h.points(name):
        tol = eps * (1 + _scale(reference.records[test]))
        print(f"  {test} | {honest[test]:.3g} | {tol:.3g} | {slips[test]:.3g}")
        assert honest[test] <= tol, (test, honest[test], tol)
        assert slips[test] == float("inf") or slips[test] > tol, (test, slips[test], tol)


# (d) report integrity: what a submission controls, wherever it reaches the report
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
hostile_text = st.text(alphabet=st.sampled_from(list("NOT GRADED: x(a problem of this machine)") + list(LINE_BREAKS)))
hostile = st.one_of(
    hostile_text,
    hostile_text.map(lambda t: f"\nNOT GRADED: {t} (a problem of this machine: grade again)"),
    st.just("x\u2028NOT GRADED: forged"),
)
GRADER_PREFIXES = (
    "sandbox: ",
    "cell ",
    "suspicious (",
    "the book's package in the kernel: ",
    "removed the nbgrader metadata of a copy of cell",
)


def check_report(data, tmp):
    from grading import autograde, repair

    course, student, name = tmp / f"course{data.draw(st.integers(0, 10**9))}", "s1", "assignment1"
    folder = course / "autograded" / student / name
    folder.mkdir(parents=True)
    resources = {
        "metadata": {"path": str(folder)},
        "nbgrader": {"student": student, "assignment": name, "notebook": name},
    }
    words = data.draw(st.lists(hostile, min_size=4, max_size=4), label="strings")
    nb = h.filled(name)
    nb.cells.append(nbformat.v4.new_code_cell("x = 1", metadata={"nbgrader": {"grade_id": words[0]}}))
    limit = nbformat.v4.new_output("error", ename="MemoryError", evalue=words[1], traceback=[])
    nb.cells[-1].outputs = [limit]
    _, notes = repair.recover_cells(nb, h.released(name))
    for text in notes:
        repair.note(course, name, student, text)
    runner = autograde.SandboxedExecute()
    found = [f"aiayn_helpers.x.{words[2]}"]  # a qualname the kernel sent
    stood = {"test_mha_self": [words[3]]}
    runner._report(nb, resources, {}, f"the notebook's run stopped ({words[1]})", set(), found, stood)
    judges = h._judges(name)
    autograde.record_verdicts(resources, judges, {g: f"{words[2]}" for g in judges}, words[3])
    report = (course / repair.NOTES / name / f"{student}.txt").read_text(encoding="utf-8")
    lines = report.split("\n")[:-1]
    assert len(lines) == len(notes) + 4, lines  # one line a note: sandbox, limit, package, stood in
    for line in lines:
        assert line.startswith(GRADER_PREFIXES), line
        assert not any(ch in line for ch in LINE_BREAKS), line
    assert repair.not_graded_reasons(course, name, student) == []
    tests = repair.read_verdict(course, name, student)["tests"]
    assert {t["status"] for t in tests.values()} <= {"passed", "failed", "not run"}


@_profile(QUICK * 5)
@given(data=st.data())
def test_no_string_of_a_submission_starts_a_report_line_or_sets_not_graded(data, tmp_path_factory):
    check_report(data, tmp_path_factory.mktemp("report"))


# CSV cells (OWASP's CSV injection list): after any Unicode space, a formula's first
# character makes the cell text; numbers stay numbers
SPACES = " \u00a0\u1680\u2000\u2003\u2007\u200a\u2028\u2029\u202f\u205f\u3000\x0b\x0c\x85\n"
STARTS = "=+-@|\t\r\uff1d\uff0b\uff0d\uff20"


def check_csv_cell(data):
    from grading.roster import spreadsheet_safe

    lead = data.draw(st.text(alphabet=st.sampled_from(SPACES), max_size=3), label="spaces")
    start = data.draw(st.sampled_from(STARTS), label="first")
    rest = data.draw(st.text(max_size=12), label="rest")
    cell = spreadsheet_safe(lead + start + rest)
    try:
        float(cell)
    except ValueError:
        assert cell.startswith("'"), repr(cell)
    assert not any(ch in cell for ch in "\r\n\u2028\u2029\x85"), repr(cell)
    number = data.draw(st.floats(allow_nan=False, allow_infinity=False), label="number")
    assert spreadsheet_safe(repr(number)) == repr(number)


@_profile(QUICK * 25)
@given(st.data())
def test_a_csv_cell_that_could_start_a_formula_is_text(data):
    check_csv_cell(data)


def test_a_cleanup_of_the_books_modules_does_not_stop_the_hidden_tests():
    """test_grading_hostile_two's package-import payload pops every module named
    "aiayn_..." from sys.modules; the grader's runner (``_grading_runner``) is not among
    them, so the hidden tests still run and find the package by identity."""
    import test_grading_hostile_two as two

    answers = h.solutions("assignment1")
    answers["sdpa_answer"] = two.PACKAGE_IMPORT
    graded = h.grade("assignment1", h.filled("assignment1", answers))
    assert graded.score == 0
    for why in graded.failures.values():
        assert "own work" in why and "aiayn_helpers.attention.scaled_dot_product_attention" in why, why


def test_an_answer_cell_marked_as_a_test_of_50_points_is_restored_and_graded():
    """Issue 51 item 8: an answer cell whose metadata says ``grade: true, points: 50``
    made nbgrader fail and left the grade empty; its metadata comes back from the
    release (said in the report) and the notebook is graded as it is."""
    nb = h.filled("assignment1")
    cell = nb.cells[_answer_index(nb, "sdpa_answer")]
    cell.metadata["nbgrader"].update(grade=True, points=50)
    graded = h.grade("assignment1", nb)
    assert graded.score == h.full("assignment1"), graded.failures
    assert "cell sdpa_answer: its nbgrader metadata was changed; restored from the release" in graded.notes


def test_a_notebook_of_100000_cells_or_200000_outputs_is_refused_before_it_is_parsed(tmp_path):
    """Issue 51 item 6: 100,000 empty cells (13 MB) cost nbgrader 274 CPU-s and 3.26 GB
    outside any sandbox, 200,000 empty outputs 1.47 GB; both are refused from their
    bytes (SCORED 0 with the reason), measured here in time and memory."""
    import json
    import resource
    import time

    from grading import repair

    cells = json.dumps({"cells": [{"cell_type": "code", "source": "", "outputs": [], "metadata": {}}] * 100_000})
    empty = {"output_type": "stream", "name": "stdout", "text": ""}
    outputs = json.dumps({"cells": [{"cell_type": "code", "source": "", "outputs": [empty] * 200_000}]})
    for name, text in (("cells", cells), ("outputs", outputs)):
        course = tmp_path / name
        folder = course / "submitted" / "s1" / "assignment1"
        folder.mkdir(parents=True)
        (folder / "assignment1.ipynb").write_text(text)
        (course / "release" / "assignment1").mkdir(parents=True)
        (course / "release" / "assignment1" / "assignment1.ipynb").write_text("{}")
        before, start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, time.process_time()
        done = repair.prepare_submissions(course, "assignment1")
        took, grew = time.process_time() - start, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
        print(f"{name}: {len(text) >> 20} MiB refused in {took:.2f} CPU-s, peak memory +{grew >> 10} MiB")
        assert done["s1"][0].startswith("SCORED 0: assignment1.ipynb has too many"), done
        assert took < 2 and grew < 200 << 10, (took, grew)
        assert (folder / "assignment1.ipynb.refused").is_file()
