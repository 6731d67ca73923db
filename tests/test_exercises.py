"""Every exercise checks itself: aiayn_helpers.course.exercises (its unit tests here), and the
chapters' answer and check cells (every exercise has a stub, a check and typical wrong answers).

The exercise test proper, every chapter run with its answer cells filled and its typical
wrong answers (marker ``exercises``, ``make test-exercises``), is in tests/test_exercises_ch*.py,
by chapter group, each file with its chapters' wrong-answer table; tests/exercise_runs.py runs
a chapter; tests/test_exercises_leaks.py checks that no check cell gives its answer away.
"""

from __future__ import annotations

import json
import re

import nbformat
import pytest
import test_exercises_ch00_01
import test_exercises_ch02_03
import test_exercises_ch04_06_a
import test_exercises_ch07_09
import test_exercises_ch08_10
import torch
from exercise_runs import NOTEBOOKS, ROOT, answer_names, answer_slice, exercise_labels, make_student, solution_sources

from aiayn_helpers.course.exercises import (
    OneOf,
    Reference,
    WrongAnswer,
    check,
    check_that,
    decode,
    encode,
    exercise_name,
    quiz,
    reference,
)

# Every chapter's typical wrong answers and other right answers, from the files that run them.
GROUPS = [
    test_exercises_ch00_01,
    test_exercises_ch02_03,
    test_exercises_ch04_06_a,
    test_exercises_ch07_09,
    test_exercises_ch08_10,
]
WRONG = {name: entries for group in GROUPS for name, entries in group.WRONG.items()}
ALSO_RIGHT = {name: entries for group in GROUPS for name, entries in group.ALSO_RIGHT.items()}

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
    mistaken = r"when each product has variance sigma\^2\. \(your value 256 is not the right one"
    with pytest.raises(WrongAnswer, match=mistaken):
        check("ch02-ex2", 256.0, 1024.0, mistakes={"each product has variance sigma^2": 256.0})
    hinted = r"not right: your value 100 is not the right one \(compared to a relative 1e-06\)\. Think of d_k\."
    with pytest.raises(WrongAnswer, match=hinted):
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
    with pytest.raises(WrongAnswer, match=r"your value 3 is not the right one \(compared exactly\)"):
        check("ch04-ex4", 3, 2)
    check("ch07-ex2", "B ", "b")  # choices: case and spaces do not matter


def test_reference_hides_the_value_and_compares_after_rounding(capsys):
    digest = reference("ch07-ex2", 16000)
    assert "16000" not in digest and digest.startswith("sha256:int:")
    check("ch07-ex2", 16000, Reference(digest))
    check("ch07-ex2", 16000.0, Reference(digest))  # a whole float is the same number
    assert capsys.readouterr().out.count("right.") == 2
    with pytest.raises(
        WrongAnswer, match=r"when the rate falls like 1/step\. \(your value 8000 is not the right one"
    ) as e:
        check(
            "ch07-ex2",
            8000,
            Reference(digest),
            mistakes={"the rate falls like 1/step": Reference(reference("ch07-ex2", 8000))},
        )
    assert "16000" not in str(e.value) and "16,000" not in str(e.value)
    with pytest.raises(WrongAnswer, match="expected a whole number"):
        check("ch07-ex2", "16000", Reference(digest))
    with pytest.raises(WrongAnswer):  # the label is part of the digest
        check("ch07-ex3", 16000, Reference(digest))
    room = Reference(reference("ch06-ex3", 0.4605170185988091))
    check("ch06-ex3", 0.4605170185988091 * (1 + 1e-12), room)  # rounding errors pass
    with pytest.raises(WrongAnswer, match="compared to 6 significant digits"):
        check("ch06-ex3", 0.4605, room)
    table = torch.linspace(0, 1, 6, dtype=torch.float64).reshape(2, 3)
    check("ch04-ex4", table + 1e-13, Reference(reference("ch04-ex4", table)))
    with pytest.raises(WrongAnswer, match=r"expected shape \(2, 3\), got shape \(3, 2\)"):
        check("ch04-ex4", table.T, Reference(reference("ch04-ex4", table)))
    yes_no = (Reference(reference("ch04-ex2", True)), Reference(reference("ch04-ex2", False)))
    check("ch04-ex2", (True, False), yes_no)
    with pytest.raises(WrongAnswer, match="item 1: expected True or False"):
        check("ch04-ex2", (True, 0), yes_no)


def test_reference_within_accepts_a_small_difference_and_has_no_boundary():
    near = Reference(reference("ch09-ex3", 2.54, within=0.1))
    for close in (2.54, 2.45, 2.6, 2.63, 2.5 + 1e-12, 2.5 - 1e-12):  # across the grid too
        check("ch09-ex3", close, near)
    for far in (2.2, 2.36, 2.75, -2.54):
        with pytest.raises(WrongAnswer, match="is not within about 0.1 of the right one"):
            check("ch09-ex3", far, near)
    with pytest.raises(WrongAnswer, match="expected a number"):
        check("ch09-ex3", "2.54", near)
    with pytest.raises(WrongAnswer, match=r"your value is NaN \(not a number\)"):
        check("ch09-ex3", float("nan"), near)  # NaN said as NaN, not "expected a number"
    with pytest.raises(ValueError, match="within must be a positive number"):
        reference("ch09-ex3", 2.54, within=0)
    with pytest.raises(ValueError, match="a finite number"):
        reference("ch09-ex3", float("nan"), within=0.1)


def test_reference_rejects_what_it_cannot_compare_safely():
    with pytest.raises(ValueError, match="rounding boundary"):
        reference("ch01-ex1", 0.125, digits=2)  # 0.12 or 0.13: 1e-16 decides
    with pytest.raises(ValueError, match="too close to 0"):
        reference("ch01-ex1", 1e-11)
    with pytest.raises(ValueError, match="a bool, an int, a float, a str or a tensor"):
        reference("ch01-ex1", [1, 2])
    with pytest.raises(ValueError, match="digits must be an int from 1 to 15"):
        reference("ch01-ex1", 1.0, digits=0)
    with pytest.raises(ValueError, match="label must be an exercise label"):
        reference("", 1.0)
    with pytest.raises(ValueError, match="64 hex digits"):
        Reference("16000")
    with pytest.raises(ValueError, match="inside check"):
        Reference(reference("ch01-ex1", 1)).difference(1)


def test_check_names_the_reference_it_compares_with():
    with pytest.raises(WrongAnswer, match="not right: not the same as PyTorch's softmax: 1 of 2 values differ"):
        check("ch10-ex2", torch.tensor([0.5, 0.6]), torch.tensor([0.5, 0.5]), against="PyTorch's softmax")
    with pytest.raises(ValueError, match="against must be a phrase"):
        check("ch10-ex2", 1.0, 1.0, against=3)


def test_check_that_names_the_property_that_fails(capsys):
    weights = torch.tensor([[0.2, 0.8], [0.5, 0.5]])

    def sum_one():
        return torch.allclose(weights.sum(-1), torch.ones(2))

    sums_to_one = ("the weights sum to one over the source", sum_one)
    check_that("ch01-ex1", [sums_to_one], given=weights, why="A softmax.")
    assert capsys.readouterr().out == "✓ Exercise 1.1: right. A softmax.\n"
    check_that("ch01-ex1", [sums_to_one], given=(weights, ...))
    assert "not answered yet" in capsys.readouterr().out
    weights = torch.tensor([[0.2, 0.7], [0.5, 0.5]])
    shape = ("shape (B, T_x) = (2, 2)", lambda: weights.shape == (2, 2))
    failed = "this property does not hold: the weights sum to one over the source. Hint."
    with pytest.raises(WrongAnswer, match=failed):
        check_that("ch01-ex1", [shape, sums_to_one], given=weights, hint="Hint.")
    with pytest.raises(WrongAnswer, match=r"does not hold: shape \(checking it fails with ZeroDivisionError"):
        check_that("ch01-ex1", [("shape", lambda: 1 / 0)], given=weights)
    for bad in ([], "shape", [("shape", True)], [(1, lambda: True)]):
        with pytest.raises(ValueError, match="properties must be a list of"):
            check_that("ch01-ex1", bad, given=weights)


def test_check_takes_properties_instead_of_an_expected_value(capsys):
    mask = torch.ones(3, 3, dtype=torch.bool).tril()
    causal = [("no position attends to a later one", lambda: not mask.triu(1).any())]
    check("ch06-ex1", properties=causal, given=mask, why="Causal.")
    assert capsys.readouterr().out == "✓ Exercise 6.1: right. Causal.\n"
    mask = torch.ones(3, 3, dtype=torch.bool)
    with pytest.raises(WrongAnswer, match="does not hold: no position attends to a later one"):
        check("ch06-ex1", properties=causal, given=mask)
    with pytest.raises(ValueError, match="takes no answer or expected"):
        check("ch06-ex1", mask, properties=causal, given=mask)
    with pytest.raises(ValueError, match="takes no answer or expected"):
        check("ch06-ex1", properties=causal)  # given= says what the student answered
    with pytest.raises(ValueError, match="needs an answer and an expected value"):
        check("ch06-ex1", mask)


def _quiz_outputs(monkeypatch, questions, key="chX") -> list[list[str]]:
    pytest.importorskip("jupyterquiz")
    import jupyterquiz.dynamic.display as shown

    runs: list[list[str]] = []
    monkeypatch.setattr(shown, "display", lambda obj: runs[-1].append(obj.data))
    for _ in range(2):
        runs.append([])
        quiz(questions, key=key)
    return runs


def _shown_questions(script: str) -> list[dict]:
    """The questions a quiz's saved script hands to the page (base64 JSON)."""
    import base64
    import json

    return json.loads(base64.b64decode(re.search(r'window\.atob\("([A-Za-z0-9+/=]+)"\)', script)[1]))


def test_quiz_output_is_the_same_every_run_and_hides_the_key(monkeypatch):
    questions = [{"question": "Q?", "type": "multiple_choice", "answers": [{"answer": "a", "correct": True}]}]
    runs = _quiz_outputs(monkeypatch, encode(json.dumps(questions)))
    assert runs[0] == runs[1] and len(runs[0]) == 2, "the saved output must not change between runs (nbval)"
    for shown in runs[0]:
        assert "Q?" not in shown and not re.search(r'"correct"\s*:\s*true', shown), "no readable key in the output"
    assert _shown_questions(runs[0][1]) == questions
    assert _quiz_outputs(monkeypatch, questions)[0] == runs[0], "a plain list: the same shuffled, hidden quiz"
    with pytest.raises(ValueError, match="at least one of them correct"):
        quiz([{"question": "Q?", "answers": [{"answer": "a", "correct": False}]}], key="chX")
    with pytest.raises(ValueError, match=r"encode\(json.dumps\(questions\)\)"):
        quiz(encode("not json"), key="chX")


def test_quiz_options_are_shuffled_the_same_way_every_run(monkeypatch):
    def question(i):
        answers = [{"answer": f"right {i}", "correct": True, "feedback": "Right."}]
        answers += [{"answer": f"wrong {i}.{j}", "correct": False, "feedback": "No."} for j in range(2)]
        return {"question": f"Q{i}?", "type": "multiple_choice", "answers": answers}

    for n in (2, 3, 5):
        questions = [question(i) for i in range(n)]
        runs = _quiz_outputs(monkeypatch, encode(json.dumps(questions)), key=f"ch{n}")
        shown = _shown_questions(runs[0][1])
        assert runs[0] == runs[1]
        places = [next(i for i, a in enumerate(q["answers"]) if a["correct"]) for q in shown]
        assert len(set(places)) > 1, f"{n} questions: the right answer is always option {places[0]}"
        for before, after in zip(questions, shown):  # the same options, feedback kept with its answer
            assert sorted(map(json.dumps, before["answers"])) == sorted(map(json.dumps, after["answers"]))


def test_encoded_texts_are_unreadable_and_come_back():
    for text in ("Var(q . k) = d_k sigma^4", "rank at most d_k = 4 √ — ü", ""):
        coded = encode(text)
        assert coded.startswith("aiayn:") and (not text or text not in coded) and decode(coded) == text
    assert decode("plain words") == "plain words"
    with pytest.raises(ValueError, match="not a text made by encode"):
        decode("aiayn:not base64!")
    with pytest.raises(ValueError, match="takes a str"):
        encode(3)


def test_check_says_why_only_when_right_and_decodes_its_words(capsys):
    why, hint = encode("d_k sigma^4."), encode("Think of d_k.")
    check("ch02-ex2", ..., 1024.0, why=why, hint=hint)
    unanswered = capsys.readouterr().out
    assert "not answered yet" in unanswered and "sigma" not in unanswered and "d_k" not in unanswered
    check("ch02-ex2", 1024.0, 1024.0, why=why, hint=hint)
    assert capsys.readouterr().out == "✓ Exercise 2.2: right. d_k sigma^4.\n"
    with pytest.raises(WrongAnswer, match=r"not right: your value 100 is not the right one .*\. Think of d_k\.$") as e:
        check("ch02-ex2", 100.0, 1024.0, why=why, hint=hint)
    assert "sigma" not in str(e.value) and "1024" not in str(e.value), "a wrong answer is not told the answer"
    with pytest.raises(WrongAnswer, match="This is what you get when one product is counted"):
        check("ch02-ex2", 16.0, 1024.0, mistakes={encode("one product is counted"): 16.0})
    with pytest.raises(WrongAnswer, match="does not hold: the sum is one"):
        check_that("ch01-ex1", [(encode("the sum is one"), lambda: False)], given=1)


def test_requires_names_a_missing_property_before_comparing(capsys):
    weights = torch.tensor([[0.2, 0.7], [0.5, 0.5]])
    sums = [("the weights sum to one", lambda: torch.allclose(weights.sum(-1), torch.ones(2)))]
    right = Reference(reference("ch01-ex1", torch.tensor([[0.2, 0.8], [0.5, 0.5]])))
    with pytest.raises(WrongAnswer, match="does not hold: the weights sum to one. Softmax."):
        check("ch01-ex1", weights, right, requires=sums, hint="Softmax.", why="Uniform.")
    weights = torch.tensor([[0.3, 0.7], [0.5, 0.5]])
    with pytest.raises(WrongAnswer, match="is not the right one"):
        check("ch01-ex1", weights, right, requires=sums)
    assert capsys.readouterr().out == "", "one verdict: no 'right' for the properties alone"
    weights = torch.tensor([[0.2, 0.8], [0.5, 0.5]])
    check("ch01-ex1", weights, right, requires=sums, why="Uniform.")
    assert capsys.readouterr().out == "✓ Exercise 1.1: right. Uniform.\n"


def test_one_of_several_right_answers():
    both = OneOf(Reference(reference("ch02-ex3", 2809)), Reference(reference("ch02-ex3", 2807)))
    for right in (2809, 2807, 2807.0):
        check("ch02-ex3", right, both)
    with pytest.raises(WrongAnswer, match=r"your value 2808 is not the right one \(compared exactly\)"):
        check("ch02-ex3", 2808, both)
    with pytest.raises(WrongAnswer, match="when one head is counted"):
        check("ch02-ex3", 7938, both, mistakes={"one head is counted": OneOf(7943, 7938)})
    with pytest.raises(ValueError, match="two or more right answers"):
        OneOf(1)


def test_nan_is_reported_as_nan():
    with pytest.raises(WrongAnswer, match=r"2 of 4 values are NaN \(not a number\), the first at index \(0, 1\)"):
        check("ch02-ex4", torch.tensor([[1.0, float("nan")], [float("nan"), 2.0]]), torch.ones(2, 2))
    with pytest.raises(WrongAnswer, match=r"your value is NaN \(not a number\)"):
        check("ch02-ex2", float("nan"), 1024.0)
    with pytest.raises(WrongAnswer, match=r"your value is NaN \(not a number\)"):
        check("ch02-ex2", torch.tensor(float("nan")), Reference(reference("ch02-ex2", 1024.0)))
    with pytest.raises(WrongAnswer, match=r"1 of 2 values are NaN"):
        check("ch04-ex4", torch.tensor([1.0, float("nan")]), Reference(reference("ch04-ex4", torch.ones(2))))
    for wrong in (float("nan"), torch.tensor([float("nan")])):
        try:
            check("ch02-ex2", wrong, 1.0)
        except WrongAnswer as error:
            assert "inf" not in str(error)


def test_diagnose_names_only_the_mistakes_it_finds():
    found: list[str] = []
    with pytest.raises(WrongAnswer, match=r"not right: your value 3 is not the right one .*\. Hint\.$"):
        check("ch05-ex1", 3, 2, diagnose=lambda: found, hint="Hint.")  # nothing found: the hint
    found = [encode("the bias is left out"), "the weight is transposed"]
    with pytest.raises(WrongAnswer, match="when the bias is left out and the weight is transposed. "):
        check("ch05-ex1", 3, 2, diagnose=lambda: found, mistakes={"a value mistake": 3})
    with pytest.raises(WrongAnswer, match="This is what you get when one slip"):
        check("ch05-ex1", 3, 2, diagnose=lambda: "one slip")
    with pytest.raises(WrongAnswer, match=r"when a value mistake\. "):  # a failing diagnosis names nothing
        check("ch05-ex1", 3, 2, diagnose=lambda: 1 / 0, mistakes={"a value mistake": 3})
    with pytest.raises(ValueError, match="diagnose must be a function"):
        check("ch05-ex1", 3, 2, diagnose="x")


def test_properties_beside_an_answer_give_one_verdict(capsys):
    measured = 1024.0 / 64
    agrees = [(encode("your sample agrees with your formula"), lambda: abs(measured / 1024.0 - 1) < 0.05)]
    with pytest.raises(WrongAnswer, match="does not hold: your sample agrees with your formula") as e:
        check("ch02-ex2", 1024.0, 1024.0, properties=agrees, why="Right formula.")
    assert capsys.readouterr().out == "", "no 'right' before the 'not right'"
    assert "Right formula" not in str(e.value)
    measured = 1000.0
    check("ch02-ex2", 1024.0, 1024.0, properties=agrees, why="Right formula.")
    assert capsys.readouterr().out == "✓ Exercise 2.2: right. Right formula.\n"
    with pytest.raises(WrongAnswer, match="your value 256"):  # the answer first
        check("ch02-ex2", 256.0, 1024.0, properties=agrees)


# ---------------------------------------------------------------------------- the chapters


def test_every_chapter_is_run_by_one_exercise_file():
    runs = [set(group.WRONG) for group in GROUPS]
    assert sorted(name for names in runs for name in names) == sorted(p.name for p in NOTEBOOKS)
    assert all(set(group.ALSO_RIGHT) <= set(group.WRONG) for group in GROUPS), "an also-right answer run elsewhere"


def test_a_slip_of_a_sliced_exercise_runs_only_what_its_answer_depends_on():
    solution = (
        "n = count(model)\ntorch.manual_seed(0)\nwide = Wide()\n_ = train(wide)\nratio = count(wide) / n\nprint(n)"
    )
    assert answer_slice(solution, {"n"}) == "n = count(model)"
    assert answer_slice("a = 1\nb = a + 1\nc = 5\nanswer = b * 2\nassert answer", {"answer"}) == (
        "a = 1\nb = a + 1\nanswer = b * 2"
    )
    loop = "peaks = {}\nfor k in (1, 2):\n    peaks[k] = f(k)\nother = g()"
    assert answer_slice(loop, {"peaks"}) == "peaks = {}\nfor k in (1, 2):\n    peaks[k] = f(k)"
    assert answer_slice("x = torch.zeros(3)\nx.add_(1)\ny = x.sum()", {"x"}) == "x = torch.zeros(3)\nx.add_(1)"
    nb = nbformat.read(ROOT / "notebooks" / "01_history_of_attention.ipynb", as_version=4)
    slice_12 = answer_slice(solution_sources(nb)["ch01-ex2"], answer_names(nb)["ch01-ex2"])
    assert (
        "alignment_model = " in slice_12 and "train(" not in slice_12 and "train(" in solution_sources(nb)["ch01-ex2"]
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_exercise_has_a_stub_and_a_check(path):
    nb = nbformat.read(path, as_version=4)
    labels = exercise_labels(nb)
    checks = {c.id.removeprefix("check-") for c in nb.cells if "exercise-check" in c.metadata.get("tags", [])}
    assert set(labels) <= checks, f"exercises without a check cell: {sorted(set(labels) - checks)}"
    student, _ = make_student.studentize(nb)
    stubs = [c.source for c in student.cells if c.id.startswith("stub-")]
    assert all("= ..." in s for s in stubs), "every answer cell names what the check reads, set to ..."
    assert path.name in WRONG and len(WRONG[path.name]) >= 2, "at least two typical wrong answers per chapter"
    untested = set(labels) - {entry[0] for entry in WRONG[path.name]}
    assert not untested, f"checks never fed a wrong answer: {sorted(untested)}"
