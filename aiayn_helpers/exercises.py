"""Checks for the chapters' exercises, in plain words.

Each exercise of the book ends with a cell that hands the student's answer to
:func:`check`. It compares the answer with what the book computes, and says
right or wrong, and why::

    >>> from aiayn_helpers.exercises import check
    >>> check("ch02-ex2", 1024.0, 1024.0, why="d_k sigma^4 = 64 * 16")
    ✓ Exercise 2.2: right. d_k sigma^4 = 64 * 16

* An answer left as ``...`` (the placeholder of the student edition) is
  "not answered yet": a message, no error, so the notebook still runs to the end.
* A wrong answer raises :class:`WrongAnswer` (an ``AssertionError``), so running
  the notebook stops there. The message says what differs (type, shape, the
  largest difference and where) and, when the answer equals one of the
  ``mistakes`` given, which mistake produces it.

:func:`quiz` shows multiple-choice self-check questions with ``jupyterquiz``;
they work in Jupyter and on the static site.
"""

from __future__ import annotations

import math
import random
import re
import types
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

__all__ = ["WrongAnswer", "check", "exercise_name", "quiz"]

_LABEL = re.compile(r"^ch(?P<chapter>[0-9]+|[A-Z])-ex(?P<number>[0-9]+)$")


class WrongAnswer(AssertionError):
    """Raised by :func:`check` when an answer is wrong; the message says why."""


_NOT_GIVEN = object()


def _unanswered(value: Any) -> bool:
    """``...``, or a tuple, list or dict holding a ``...``: the student has not answered yet."""
    if value is Ellipsis:
        return True
    if isinstance(value, tuple | list):
        return any(v is Ellipsis for v in value)
    if isinstance(value, dict):
        return any(v is Ellipsis for v in value.values())
    return False


def exercise_name(label: str) -> str:
    """``"ch03-ex1"`` -> ``"Exercise 3.1"``, ``"chA-ex2"`` -> ``"Exercise A.2"``, the site's numbering.

    Any other label is returned as it is.
    """
    m = _LABEL.match(label)
    if not m:
        return label
    chapter = str(int(m["chapter"])) if m["chapter"].isdigit() else m["chapter"]
    return f"Exercise {chapter}.{int(m['number'])}"


def _as_array(x: Any) -> np.ndarray | None:
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().to(torch.float64).numpy() if x.is_floating_point() else x.detach().cpu().numpy()
    if isinstance(x, np.ndarray):
        return x
    return None


def _describe(x: Any) -> str:
    if isinstance(x, torch.Tensor | np.ndarray):
        return f"{type(x).__name__} of shape {tuple(x.shape)}"
    text = repr(x)
    return text if len(text) <= 60 else text[:57] + "..."


def _difference(answer: Any, expected: Any, rtol: float, atol: float) -> str | None:
    """None when ``answer`` matches ``expected``; otherwise what differs, in words."""
    want = _as_array(expected)
    if want is not None:
        got = _as_array(answer)
        if got is None:
            return f"expected a tensor of shape {tuple(want.shape)}, got {_describe(answer)}"
        if got.shape != want.shape:
            return f"expected shape {tuple(want.shape)}, got shape {tuple(got.shape)}"
        if want.dtype == np.bool_ or got.dtype == np.bool_:
            if got.dtype != want.dtype:
                return f"expected a {want.dtype} tensor, got dtype {got.dtype}"
            wrong = np.argwhere(got != want)
            return (
                f"{len(wrong)} entries differ, the first at index {tuple(int(i) for i in wrong[0])}"
                if len(wrong)
                else None
            )
        if not np.issubdtype(got.dtype, np.number):
            return f"expected numbers, got dtype {got.dtype}"
        close = np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
        if close.all():
            return None
        gap = np.abs(got.astype(np.float64) - want.astype(np.float64))
        gap = np.where(np.isnan(gap), np.inf, gap)
        where = tuple(int(i) for i in np.unravel_index(np.argmax(gap), gap.shape))
        return (
            f"{int((~close).sum())} of {close.size} values differ; the largest difference is "
            f"{float(gap.max()):.3g}, at index {where} (expected {want[where]:.6g}, got {got[where]:.6g})"
        )
    if isinstance(expected, bool):
        if not isinstance(answer, bool | np.bool_) and not (isinstance(answer, torch.Tensor) and answer.numel() == 1):
            return f"expected True or False, got {_describe(answer)}"
        return None if bool(answer) == expected else f"expected {expected}, got {bool(answer)}"
    if isinstance(expected, int | float) and not isinstance(expected, bool):
        if isinstance(answer, torch.Tensor) and answer.numel() == 1:
            answer = answer.item()
        if isinstance(answer, np.generic):
            answer = answer.item()
        if not isinstance(answer, int | float) or isinstance(answer, bool):
            return f"expected a number, got {_describe(answer)}"
        if isinstance(expected, int) and isinstance(answer, int):
            return None if answer == expected else f"expected {expected:,}, got {answer:,}"
        if math.isclose(answer, expected, rel_tol=rtol, abs_tol=atol):
            return None
        return f"expected {expected:.6g}, got {answer:.6g}"
    if isinstance(expected, str):
        if not isinstance(answer, str):
            return f"expected text, got {_describe(answer)}"
        return None if answer.strip().lower() == expected.strip().lower() else f"expected {expected!r}, got {answer!r}"
    if isinstance(expected, Mapping):
        if not isinstance(answer, Mapping) or set(answer) != set(expected):
            return f"expected a dict with keys {sorted(expected)}, got {_describe(answer)}"
        for key in expected:
            reason = _difference(answer[key], expected[key], rtol, atol)
            if reason:
                return f"[{key!r}]: {reason}"
        return None
    if isinstance(expected, Sequence):
        if not isinstance(answer, Sequence) or isinstance(answer, str) or len(answer) != len(expected):
            return f"expected a sequence of {len(expected)} items, got {_describe(answer)}"
        for i, (a, e) in enumerate(zip(answer, expected)):
            reason = _difference(a, e, rtol, atol)
            if reason:
                return f"item {i}: {reason}"
        return None
    return None if answer == expected else f"expected {_describe(expected)}, got {_describe(answer)}"


def check(
    label: str,
    answer: Any,
    expected: Any,
    *,
    why: str = "",
    hint: str = "",
    mistakes: Mapping[str, Any] | None = None,
    given: Any = _NOT_GIVEN,
    rtol: float = 1e-6,
    atol: float = 1e-9,
) -> None:
    """Compare a student's ``answer`` with ``expected``; print the verdict, raise :class:`WrongAnswer` if wrong.

    Args:
        label: the exercise's label, for example ``"ch03-ex1"`` (shown as "Exercise 3.1").
        answer: what the student computed. ``...`` (Ellipsis), or a tuple holding one, means
            not answered yet. A function (``lambda: swapped(x, x, x)``) is called first, so a
            check can use the student's objects; an error in it is reported as a wrong answer.
        expected: the right answer: a tensor or array (compared by shape, then values with
            ``rtol``/``atol``), a number, a bool, a string (case-insensitive), or a list,
            tuple or dict of those.
        why: one sentence said when the answer is right (what it shows).
        hint: one sentence added when the answer is wrong and matches no known mistake.
        mistakes: ``{"what the mistake is": the value it produces}``; a wrong answer equal to
            one of these values is named ("this is what you get when ...").
        given: the student's names the answer is computed from (a value or a tuple), when
            ``answer`` is a function: any of them still ``...`` means not answered yet.
        rtol, atol: tolerances for floating-point comparisons.

    Prints the verdict and returns nothing (so a notebook cell shows only the sentence).

    Raises:
        WrongAnswer: the answer is wrong; the message says what differs and why.
    """
    name = exercise_name(label)
    if _unanswered(answer if given is _NOT_GIVEN else given):
        print(f"○ {name}: not answered yet. Replace the ... above with your answer, run that cell, then this one.")
        return
    try:
        answer = answer() if isinstance(answer, types.FunctionType) else answer
    except Exception as error:
        failure = f"{type(error).__name__}: {error}"
        raise WrongAnswer(f"✗ {name}: not right: using your answer fails with {failure}") from error
    expected = expected() if isinstance(expected, types.FunctionType) else expected
    reason = _difference(answer, expected, rtol, atol)
    if reason is None:
        print(f"✓ {name}: right." + (f" {why}" if why else ""))
        return
    for mistake, value in (mistakes or {}).items():
        if _difference(answer, value, rtol, atol) is None:
            raise WrongAnswer(f"✗ {name}: not right. This is what you get when {mistake}. ({reason}.)")
    raise WrongAnswer(f"✗ {name}: not right: {reason}." + (f" {hint}" if hint else ""))


def quiz(questions: list[dict], key: str) -> None:
    """Show multiple-choice self-check questions (``jupyterquiz``), in Jupyter and on the static site.

    ``questions`` follows jupyterquiz's format: ``{"question": ..., "type": "multiple_choice",
    "answers": [{"answer": ..., "correct": bool, "feedback": ...}, ...]}``. ``key`` (the
    chapter, for example ``"ch02"``) fixes the element ids, so the saved output is the same
    on every run.
    """
    from jupyterquiz import display_quiz  # optional at import time: only the notebooks need it

    if not questions or any(not q.get("answers") or not any(a.get("correct") for a in q["answers"]) for q in questions):
        raise ValueError("every question needs answers, at least one of them correct")
    import jupyterquiz.dynamic.display as jq_display

    # jupyterquiz reads MathJax.version[0] when a page defines MathJax's configuration but
    # the script has not loaded yet; on a slow page that throws. String(undefined)[0] is
    # "u": the quiz skips typesetting (MathJax typesets the page when it loads).
    build_script = jq_display.build_script
    jq_display.build_script = lambda *args, **kwargs: _guard_mathjax(build_script(*args, **kwargs))
    state = random.getstate()
    random.seed(f"aiayn-quiz-{key}")  # jupyterquiz names its elements with random letters
    try:
        display_quiz(questions, shuffle_answers=False, max_width=800)
    finally:
        random.setstate(state)
        jq_display.build_script = build_script


def _guard_mathjax(script: str) -> str:
    """jupyterquiz's script with every ``version[0]`` read made safe for an unloaded MathJax."""
    return script.replace("version[0]", "String(version)[0]")
