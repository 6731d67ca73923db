"""A student meets no answer before answering (issue #36, item 2).

Each chapter is read as JupyterLab shows it, every cell's source and every output, in
the book's edition and in the student edition (tools/editions/make_student.py's ``studentize``,
and ``_student/notebooks`` when ``make student`` has written it):

* a self-check quiz cell carries no answer key: its source hands ``quiz`` encoded
  questions, its input is hidden in JupyterLab (cell metadata) as on the site
  (``remove-input``), and its output holds the questions as base64, with no readable
  ``"correct": true``, question, option or feedback;
* a quiz's right answers are not all at one place, and over the book they sit at
  every place a question offers;
* a check cell's words (why, hint, mistakes, properties) are encoded; what it says
  when right appears nowhere before the solution in the book's edition and nowhere
  at all in the student edition, whose check cells have no output.
"""

from __future__ import annotations

import ast
import base64
import json
import os
import re
import sys
from collections import Counter
from pathlib import Path

import nbformat
import pytest

from aiayn_helpers.course.exercises import decode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from chapters import encode_checks  # noqa: E402
from editions import make_student  # noqa: E402

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
STUDENT = Path(os.environ.get("AIAYN_STUDENT_DIR", ROOT / "_student")) / "notebooks"
# chapters whose check and quiz cells are not encoded yet (their notebook was being edited for other
# work): strict, so this fails the day one is converted and must leave the list
NOT_YET: set[str] = set()  # every chapter is encoded
CHAPTERS = [
    pytest.param(p, marks=[pytest.mark.xfail(strict=True, reason="not encoded yet")] if p.name in NOT_YET else [])
    for p in NOTEBOOKS
]
KEY = re.compile(r"""["']correct["']\s*:\s*(true|True)""")


def _editions(path: Path):
    nb = nbformat.read(path, as_version=4)
    yield "book", nb
    yield "student", make_student.studentize(nb)[0]
    built = STUDENT / path.name
    if built.exists():
        yield "_student", nbformat.read(built, as_version=4)


def _code(nb, tag: str):
    return [c for c in nb.cells if c.cell_type == "code" and tag in c.metadata.get("tags", [])]


def _shown(cell) -> str:
    """Everything a cell's outputs put on the page or in the file: text, HTML, scripts."""
    parts = []
    for output in cell.get("outputs", []):
        parts.append(output.get("text", ""))
        for value in output.get("data", {}).values():
            parts.append(value if isinstance(value, str) else json.dumps(value))
    return "\n".join(parts)


def _page_questions(cell) -> list[dict]:
    """The questions the quiz's saved script hands to the page (base64 JSON)."""
    found = re.findall(r'window\.atob\("([A-Za-z0-9+/=]+)"\)', _shown(cell))
    assert len(found) == 1, f"{cell.id}: the saved output does not hand the page base64 questions"
    return json.loads(base64.b64decode(found[0]))


def _words(question: dict) -> list[str]:
    texts = [question["question"]]
    for answer in question["answers"]:
        texts += [answer["answer"], answer.get("feedback", "")]
    return [t for t in texts if len(t) >= 12]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_quiz_cells_show_no_answer_key(path):
    for edition, nb in _editions(path):
        quizzes = _code(nb, "exercise-quiz")
        assert quizzes, f"{edition} {path.name}: no self-check quiz"
        for cell in quizzes:
            where = f"{edition} {path.name} {cell.id}"
            assert cell.metadata.get("jupyter", {}).get("source_hidden") is True, f"{where}: input shown in JupyterLab"
            assert "remove-input" in cell.metadata.get("tags", []), f"{where}: input shown on the site"
            questions = encode_checks.quiz_questions(cell.source)
            page = _page_questions(cell)
            assert sorted(map(json.dumps, page)) != [] and len(page) == len(questions)
            for source_q, page_q in zip(questions, page):  # the output is the source's quiz, shuffled
                assert page_q["question"] == source_q["question"]
                assert sorted(map(json.dumps, page_q["answers"])) == sorted(map(json.dumps, source_q["answers"]))
            shown = _shown(cell)
            for text in (cell.source, shown):
                assert not KEY.search(text), f"{where}: a readable answer key"
                for words in (w for q in questions for w in _words(q)):
                    assert json.dumps(words)[1:-1] not in text and words not in text, f"{where}: shows {words!r}"


def test_quiz_right_answers_move():
    places: Counter[int] = Counter()
    offered: set[int] = set()
    for path in (p for p in NOTEBOOKS if p.name not in NOT_YET):
        for cell in _code(nbformat.read(path, as_version=4), "exercise-quiz"):
            page = _page_questions(cell)
            right = [next(i for i, a in enumerate(q["answers"]) if a["correct"]) for q in page]
            if len(page) > 1:
                assert len(set(right)) > 1, f"{path.name}: every right answer is option {right[0] + 1}"
            places.update(right)
            offered |= set(range(min(len(q["answers"]) for q in page)))
    assert set(places) >= offered, f"right answers at {dict(places)}: some place never holds one"


def _check_calls(source: str) -> list[ast.Call]:
    return [
        node
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") in ("check", "check_that")
    ]


def _why(call: ast.Call) -> str:
    for keyword in call.keywords:
        if keyword.arg == "why" and isinstance(keyword.value, ast.Constant):
            return decode(keyword.value.value)
    return ""


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_check_cells_say_nothing_before_an_answer(path):
    for edition, nb in _editions(path):
        checks = _code(nb, "exercise-check")
        assert checks, f"{edition} {path.name}: no check cell"
        for cell in checks:
            where = f"{edition} {path.name} {cell.id}"
            plain = [n.value for n in encode_checks.plain_texts(cell.source)]
            assert not plain, f"{where}: words not encoded: {plain}"
            whys = [w for w in map(_why, _check_calls(cell.source)) if w]
            assert whys, f"{where}: the check says nothing when right"
            if edition != "book":
                assert not cell.get("outputs"), f"{where}: the student edition keeps the book's verdict"
                seen = "\n".join(c.source + _shown(c) for c in nb.cells)
            else:  # the book shows the solution, then the check's verdict: nothing of it before the solution
                label = cell.id.removeprefix("check-")
                start = next(
                    i
                    for i, c in enumerate(nb.cells)
                    if c.cell_type == "markdown" and f"solution-start}} {label}" in c.source
                )
                seen = "\n".join(c.source + _shown(c) for c in nb.cells[:start])
            for why in whys:
                assert why not in seen, f"{where}: {why!r} is shown before an answer"


def test_the_student_introduction_says_so():
    """The student edition's intro page says what the checks and quizzes keep back."""
    intro = " ".join((ROOT / "tools" / "editions" / "student_edition" / "intro.md").read_text().split())
    for promise in (
        "appears only once your answer is right",
        "it never tells you the right one",
        "stored in the cells as encoded text",
        "The right answer is not always the first option",
        "not answered yet` while the placeholders are still there, and nothing more",
    ):
        assert promise in intro, promise
