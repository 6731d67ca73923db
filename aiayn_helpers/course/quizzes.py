"""Self-check quizzes: multiple-choice questions shown with ``jupyterquiz``, in
Jupyter and on the static site.

The questions are :func:`~aiayn_helpers.course.answer_keys.encode`'s text of their
JSON, so the answer key is not readable in the cell; the options are shuffled by a
seed made from the chapter's key (the same on every run, so the saved output does not
change).
:mod:`aiayn_helpers.course.exercises` re-exports :func:`quiz`.
"""

from __future__ import annotations

import base64
import json
import random
from typing import Any

from .answer_keys import _describe, decode

__all__ = ["quiz"]

# What a front end that does not run the quiz's script shows instead of it: JupyterLab,
# VS Code and nbviewer run no JavaScript stored in a notebook until its cell is run
# again (an untrusted output), and fall back to the output's text/plain, which was
# "<IPython.core.display.Javascript object>".
RUN_TO_TAKE = "Self-check quiz: run this cell (Shift+Enter) to take it."


def _quiz_questions(questions: Any) -> list[dict]:
    """The questions a quiz shows: a list, or :func:`encode`'s text of its JSON."""
    if isinstance(questions, str):
        try:
            questions = json.loads(decode(questions))
        except json.JSONDecodeError as error:
            raise ValueError(
                "a quiz given as text is encode(json.dumps(questions))"
            ) from error
    if not isinstance(questions, list) or not all(
        isinstance(q, dict) for q in questions
    ):
        raise ValueError(
            f"questions must be a list of jupyterquiz's dicts: {_describe(questions)}"
        )
    if not questions or any(
        not q.get("answers") or not any(a.get("correct") for a in q["answers"])
        for q in questions
    ):
        raise ValueError("every question needs answers, at least one of them correct")
    return questions


def _shuffled(questions: Any, key: str) -> list[dict]:
    """The questions with their options shuffled, the same way for the same ``key``.

    With two or more questions, the right answers do not all sit at the same place
    (another shuffle is drawn while they do).
    """
    questions = _quiz_questions(questions)
    for attempt in range(1000):
        rng = random.Random(f"aiayn-quiz-{key}-{attempt}")
        result = []
        for q in questions:
            answers = list(q["answers"])
            rng.shuffle(answers)
            result.append({**q, "answers": answers})
        places = {
            tuple(i for i, a in enumerate(q["answers"]) if a.get("correct"))
            for q in result
        }
        if len(result) == 1 or len(places) > 1:
            return result
    raise ValueError("no shuffle puts the right answers at different places")


def quiz(questions: list[dict] | str, key: str) -> None:
    """Show multiple-choice self-check questions (``jupyterquiz``), in Jupyter and on
    the static site.

    ``questions`` follows jupyterquiz's format: ``{"question": ..., "type":
    "multiple_choice", "answers": [{"answer": ..., "correct": bool, "feedback": ...},
    ...]}``, or is :func:`encode`'s text of that list as JSON (the cell then does not
    show which answer is right). The options are shuffled by ``_shuffled``, the
    same way on every run; the output carries the questions as base64, not as
    readable JSON. ``key`` (the chapter, for example ``"ch02"``) fixes the shuffle and
    the element ids, so the saved output is the same on every run.
    """
    questions = _shuffled(questions, key)
    # optional at import time: only the notebooks need it
    import jupyterquiz.dynamic.display as jq_display
    from jupyterquiz import display_quiz

    plain = json.dumps(questions)
    hidden = base64.b64encode(json.dumps(questions, ensure_ascii=True).encode())
    build_script = jq_display.build_script

    def script(prefix: str, *args: Any, **kwargs: Any) -> str:
        # the questions as base64 that the page decodes, not as readable JSON
        if plain not in prefix:
            raise RuntimeError("jupyterquiz's script no longer starts with the JSON")
        prefix = prefix.replace(
            plain, f'JSON.parse(window.atob("{hidden.decode("ascii")}"))', 1
        )
        return _guard_mathjax(build_script(prefix, *args, **kwargs))

    # jupyterquiz reads MathJax.version[0] when a page defines MathJax's configuration
    # but the script has not loaded yet; on a slow page that throws.
    # String(undefined)[0] is "u": the quiz skips typesetting (MathJax typesets the
    # page when it loads).
    jq_display.build_script = script
    display_classes = jq_display.Javascript, jq_display.HTML
    jq_display.Javascript, jq_display.HTML = _display_classes()
    state = random.getstate()
    random.seed(
        f"aiayn-quiz-{key}"
    )  # jupyterquiz names its elements with random letters
    try:
        display_quiz(questions, shuffle_answers=False, max_width=800)
    finally:
        random.setstate(state)
        jq_display.build_script = build_script
        jq_display.Javascript, jq_display.HTML = display_classes


def _display_classes() -> tuple[type, type]:
    """jupyterquiz's two outputs, each with a text/plain of its own: the script's says
    to run the cell (not the class's repr), the container's is empty."""
    from IPython.display import HTML, Javascript

    class Script(Javascript):
        def __repr__(self) -> str:
            return RUN_TO_TAKE

    class Styled(HTML):
        def __repr__(self) -> str:
            return ""

    return Script, Styled


def _guard_mathjax(script: str) -> str:
    """jupyterquiz's script with every ``version[0]`` read made safe for an unloaded
    MathJax."""
    return script.replace("version[0]", "String(version)[0]")
