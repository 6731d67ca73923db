"""Checks for the chapters' exercises, in plain words.

Each exercise of the book ends with a cell that hands the student's answer to
:func:`check`. It compares the answer with what the book computes, and says
right or wrong, and why::

    >>> from aiayn_helpers.course.exercises import check
    >>> check("ch02-ex2", 1024.0, 1024.0, why="d_k sigma^4 = 64 * 16")
    ✓ Exercise 2.2: right. d_k sigma^4 = 64 * 16

* An answer left as ``...`` (the placeholder of the student edition) is
  "not answered yet": a message, no error, so the notebook still runs to the end.
* A wrong answer raises :class:`WrongAnswer` (an ``AssertionError``), so running
  the notebook stops there. The message says what differs (type, shape, the
  largest difference and where) and, when the answer equals one of the
  ``mistakes`` given, which mistake produces it.

A check cell never shows the answer. It compares with something the student
cannot read the answer off:

* a property (``check(label, properties=[...], given=...)``, that is
  :func:`check_that`: "the weights sum to one", "the output does not change when
  the positions are permuted"), named in the message when it fails;
* a computation with PyTorch or the package that is not the exercise's solution
  (``F.scaled_dot_product_attention``, ``ah.count_parameters``);
* a :class:`Reference`: the answer's SHA-256 digest (made once with
  :func:`reference`), compared after rounding, so the value is not in the cell::

    >>> reference("ch07-ex2", 16000)            # run once, by the author
    'sha256:int:...'
    >>> check("ch07-ex2", half_step, Reference("sha256:int:..."))

:func:`quiz` shows multiple-choice self-check questions with ``jupyterquiz``;
they work in Jupyter and on the static site.

Nothing a student reads before answering gives the answer away: the words a check
prints (``why``, ``hint``, the mistakes' and properties' names) and a quiz's
questions are kept in the cells as :func:`encode`'s text, which reads as noise, and
the check prints ``why`` only after a right answer; a quiz's options are shuffled
(the same way on every run, so the saved output does not change).
"""

from __future__ import annotations

import math
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from .answer_keys import (
    _LABEL,
    OneOf,
    Reference,
    _as_array,
    _describe,
    _require_label,
    decode,
    encode,
    reference,
)
from .quizzes import quiz

__all__ = [
    "OneOf",
    "Reference",
    "WrongAnswer",
    "check",
    "check_that",
    "decode",
    "encode",
    "exercise_name",
    "quiz",
    "reference",
]


class WrongAnswer(AssertionError):
    """Raised by :func:`check` when an answer is wrong; the message says why."""


_NOT_GIVEN = object()
_NOT_ANSWERED = "not answered yet. Replace the ... above with your answer, "
_NOT_ANSWERED += "run that cell, then this one."


def _unanswered(value: Any) -> bool:
    """``...``, or a tuple, list or dict holding a ``...``: the student has not
    answered yet."""
    if value is Ellipsis:
        return True
    if isinstance(value, tuple | list):
        return any(v is Ellipsis for v in value)
    if isinstance(value, dict):
        return any(v is Ellipsis for v in value.values())
    return False


def exercise_name(label: str) -> str:
    """``"ch03-ex1"`` -> ``"Exercise 3.1"``, ``"chA-ex2"`` -> ``"Exercise A.2"``, the
    site's numbering.

    Any other label is returned as it is.
    """
    m = _LABEL.match(label)
    if not m:
        return label
    chapter = str(int(m["chapter"])) if m["chapter"].isdigit() else m["chapter"]
    return f"Exercise {chapter}.{int(m['number'])}"


def _with_label(expected: Any, label: str) -> Any:
    """Tell every :class:`Reference` inside ``expected`` the exercise it belongs to."""
    if isinstance(expected, Reference):
        expected.label = label
    elif isinstance(expected, OneOf):
        _with_label(list(expected.alternatives), label)
    elif isinstance(expected, Mapping):
        for value in expected.values():
            _with_label(value, label)
    elif isinstance(expected, Sequence) and not isinstance(expected, str):
        for value in expected:
            _with_label(value, label)
    return expected


def _difference(answer: Any, expected: Any, rtol: float, atol: float) -> str | None:
    """None when ``answer`` matches ``expected``; otherwise what differs, in words."""
    if isinstance(expected, Reference):
        return expected.difference(answer)
    if isinstance(expected, OneOf):
        reasons = [_difference(answer, e, rtol, atol) for e in expected.alternatives]
        return None if None in reasons else reasons[0]
    want = _as_array(expected)
    if want is not None:
        return _array_difference(answer, want, rtol, atol)
    if isinstance(expected, bool):
        if not isinstance(answer, bool | np.bool_) and not (
            isinstance(answer, torch.Tensor) and answer.numel() == 1
        ):
            return f"expected True or False, got {_describe(answer)}"
        if bool(answer) == expected:
            return None
        return f"expected {expected}, got {bool(answer)}"
    if isinstance(expected, int | float):
        return _number_difference(answer, expected, rtol, atol)
    if isinstance(expected, str):
        if not isinstance(answer, str):
            return f"expected text, got {_describe(answer)}"
        if answer.strip().lower() == expected.strip().lower():
            return None
        return f"expected {expected!r}, got {answer!r}"
    if isinstance(expected, Mapping | Sequence):
        return _container_difference(answer, expected, rtol, atol)
    if answer == expected:
        return None
    return f"expected {_describe(expected)}, got {_describe(answer)}"


def _array_difference(
    answer: Any, want: np.ndarray, rtol: float, atol: float
) -> str | None:
    """:func:`_difference` for an expected tensor or array ``want``."""
    got = _as_array(answer)
    if got is None:
        return (
            f"expected a tensor of shape {tuple(want.shape)}, got {_describe(answer)}"
        )
    if got.shape != want.shape:
        return f"expected shape {tuple(want.shape)}, got shape {tuple(got.shape)}"
    if want.dtype == np.bool_ or got.dtype == np.bool_:
        if got.dtype != want.dtype:
            return f"expected a {want.dtype} tensor, got dtype {got.dtype}"
        wrong = np.argwhere(got != want)
        if not len(wrong):
            return None
        first = tuple(int(i) for i in wrong[0])
        return f"{len(wrong)} entries differ, the first at index {first}"
    if not np.issubdtype(got.dtype, np.number):
        return f"expected numbers, got dtype {got.dtype}"
    close = np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    if close.all():
        return None
    unexpected = np.isnan(got) & ~np.isnan(want)
    if unexpected.any():
        where = tuple(int(i) for i in np.argwhere(unexpected)[0])
        return (
            f"{int(unexpected.sum())} of {close.size} values are NaN (not a number), "
            f"the first at index {where}"
        )
    gap = np.abs(got.astype(np.float64) - want.astype(np.float64))
    gap = np.where(np.isnan(gap), np.inf, gap)
    where = tuple(int(i) for i in np.unravel_index(np.argmax(gap), gap.shape))
    return (
        f"{int((~close).sum())} of {close.size} values differ; the largest "
        f"difference is {float(gap.max()):.3g}, at index {where} "
        f"(expected {want[where]:.6g}, got {got[where]:.6g})"
    )


def _number_difference(
    answer: Any, expected: int | float, rtol: float, atol: float
) -> str | None:
    """:func:`_difference` for an expected int or float (never a bool)."""
    if isinstance(answer, torch.Tensor) and answer.numel() == 1:
        answer = answer.item()
    if isinstance(answer, np.generic):
        answer = answer.item()
    if not isinstance(answer, int | float) or isinstance(answer, bool):
        return f"expected a number, got {_describe(answer)}"
    if isinstance(answer, float) and math.isnan(answer):
        return "your value is NaN (not a number)"
    if isinstance(expected, int) and isinstance(answer, int):
        if answer == expected:
            return None
        return f"your value {answer:,} is not the right one (compared exactly)"
    if math.isclose(answer, expected, rel_tol=rtol, abs_tol=atol):
        return None
    relative = f"(compared to a relative {rtol:g})"
    return f"your value {answer:.6g} is not the right one {relative}"


def _container_difference(
    answer: Any, expected: Mapping | Sequence, rtol: float, atol: float
) -> str | None:
    """:func:`_difference` item by item, for an expected dict, list or tuple."""
    if isinstance(expected, Mapping):
        if not isinstance(answer, Mapping) or set(answer) != set(expected):
            keys = sorted(expected)
            return f"expected a dict with keys {keys}, got {_describe(answer)}"
        for key in expected:
            reason = _difference(answer[key], expected[key], rtol, atol)
            if reason:
                return f"[{key!r}]: {reason}"
        return None
    if (
        not isinstance(answer, Sequence)
        or isinstance(answer, str)
        or len(answer) != len(expected)
    ):
        n = len(expected)
        return f"expected a sequence of {n} items, got {_describe(answer)}"
    for i, (a, e) in enumerate(zip(answer, expected)):
        reason = _difference(a, e, rtol, atol)
        if reason:
            return f"item {i}: {reason}"
    return None


def check(
    label: str,
    answer: Any = _NOT_GIVEN,
    expected: Any = _NOT_GIVEN,
    *,
    properties: Sequence[tuple[str, Any]] | None = None,
    requires: Sequence[tuple[str, Any]] | None = None,
    why: str = "",
    hint: str = "",
    mistakes: Mapping[str, Any] | None = None,
    diagnose: Callable[[], Any] | None = None,
    given: Any = _NOT_GIVEN,
    against: str = "",
    rtol: float = 1e-6,
    atol: float = 1e-9,
) -> None:
    """Compare a student's ``answer`` with ``expected``; print one verdict, raise
    :class:`WrongAnswer` if wrong. Any text argument may be :func:`encode`'s.

    Args:
        label: the exercise's label, for example ``"ch03-ex1"`` ("Exercise 3.1").
        answer: what the student computed; ``...`` (or a tuple holding one) means not
            answered yet. A function (``lambda: swapped(x, x, x)``) is called first;
            an error in it is a wrong answer.
        expected: the right answer: a tensor or array (shape, then values within
            ``rtol``/``atol``), a number, a bool, a string (any case), a
            :class:`Reference` (a digest), a list, tuple or dict of those, or
            :class:`OneOf` them. A function is called first.
        why: one sentence said when the answer is right, and only then.
        hint: one sentence added when it is wrong and no mistake is named; it must
            not state the answer.
        mistakes: ``{"what the mistake is": the value it produces}``, named when the
            answer equals the value ("this is what you get when ...").
        diagnose: a function of no arguments called when the answer is wrong: the
            mistakes its properties show (texts, a text or nothing), named before
            ``mistakes`` are compared.
        properties: alone, what a right answer does (:func:`check_that`); beside
            ``answer`` and ``expected``, checked once the answer equals ``expected``.
        requires: properties checked before the comparison; the first missing one
            is named.
        given: the student's names a function ``answer`` reads: any still ``...``
            means not answered yet.
        against: what ``expected`` is, named when the answer differs from it.
        rtol, atol: tolerances for floating-point comparisons.

    Raises:
        WrongAnswer: the answer is wrong; the message says what differs and why.
    """
    if properties is not None and answer is _NOT_GIVEN and expected is _NOT_GIVEN:
        if given is _NOT_GIVEN:
            raise ValueError(
                "check(label, properties=[...], given=...) takes no answer or expected"
            )
        check_that(
            label, properties, given=given, why=why, hint=hint, diagnose=diagnose
        )
        return
    _check_arguments(label, answer, expected, properties, requires, diagnose, against)
    name = exercise_name(label)
    if _unanswered(answer if given is _NOT_GIVEN else given):
        print(f"○ {name}: {_NOT_ANSWERED}")
        return
    answer = _evaluated(name, answer, diagnose)
    if requires is not None:
        _properties_hold(name, requires, decode(hint), diagnose)
    expected = expected() if isinstance(expected, types.FunctionType) else expected
    _with_label([expected, *(mistakes or {}).values()], label)
    words = _Words(why, hint, decode(against))
    _verdict(name, answer, expected, words, mistakes or {}, diagnose, rtol, atol)
    if properties is not None:
        _properties_hold(name, properties, decode(hint), diagnose)
    print(f"✓ {name}: right." + (f" {decode(why)}" if why else ""))


def _check_arguments(
    label: Any,
    answer: Any,
    expected: Any,
    properties: Any,
    requires: Any,
    diagnose: Any,
    against: Any,
) -> None:
    """Raise ValueError unless :func:`check`'s arguments fit together."""
    if answer is _NOT_GIVEN or expected is _NOT_GIVEN:
        if properties is not None:
            raise ValueError(
                "check(label, properties=[...], given=...) takes no answer or expected"
                " (or both, with properties a right answer must also have)"
            )
        raise ValueError(
            "check() needs an answer and an expected value, or properties=[...]"
        )
    _require_label(label)
    if not isinstance(against, str):
        raise ValueError(f"against must be a phrase naming the reference: {against!r}")
    for extra in (properties, requires):
        if extra is not None:
            _require_properties(extra)
    if diagnose is not None and not callable(diagnose):
        raise ValueError(f"diagnose must be a function of no arguments: {diagnose!r}")


def _evaluated(name: str, answer: Any, diagnose: Callable[[], Any] | None) -> Any:
    """The answer, called first if it is a function; an error in it is a wrong
    answer (naming the slips ``diagnose`` finds)."""
    try:
        return answer() if isinstance(answer, types.FunctionType) else answer
    except Exception as error:
        failure = f"{type(error).__name__}: {error}"
        named = _diagnosed(diagnose)
        if named:
            raise WrongAnswer(
                f"✗ {name}: not right. This is what you get when {named}. (Using your "
                f"answer fails with {failure}.)"
            ) from error
        raise WrongAnswer(
            f"✗ {name}: not right: using your answer fails with {failure}"
        ) from error


class _Words:
    """What a check says: ``why`` when right, ``hint`` when wrong, ``against``."""

    def __init__(self, why: str, hint: str, against: str) -> None:
        self.why, self.hint, self.against = why, hint, against


def _diagnosed(diagnose: Callable[[], Any] | None) -> str:
    """The mistakes ``diagnose()`` finds, joined into one phrase ("" for none)."""
    if diagnose is None:
        return ""
    try:
        found = diagnose()
    except Exception:  # a diagnosis that cannot run (a student's odd objects) names
        # nothing; tests/test_diagnoses.py calls every diagnosis directly, so that a
        # bug of ours in one (an import pointing nowhere) fails there, not hides here
        return ""
    if not found:
        return ""
    if isinstance(found, str):
        found = [found]
    return " and ".join(decode(str(text)) for text in found)


def _verdict(
    name: str,
    answer: Any,
    expected: Any,
    words: _Words,
    mistakes: Mapping[str, Any],
    diagnose: Callable[[], Any] | None,
    rtol: float,
    atol: float,
) -> None:
    """:func:`check`'s comparison: return if the answer is right, or raise
    :class:`WrongAnswer` naming what differs, and the mistake that gives this answer,
    if the diagnosis or a known mistake's value finds one."""
    reason = _difference(answer, expected, rtol, atol)
    if reason is None:
        return
    if words.against:
        reason = f"not the same as {words.against}: {reason}"
    named = _diagnosed(diagnose)
    if not named:
        for mistake, value in mistakes.items():
            if _difference(answer, value, rtol, atol) is None:
                named = decode(mistake)
                break
    if named:
        raise WrongAnswer(
            f"✗ {name}: not right. This is what you get when {named}. ({reason}.)"
        )
    hint = decode(words.hint)
    raise WrongAnswer(f"✗ {name}: not right: {reason}." + (f" {hint}" if hint else ""))


def _is_property(pair: Any) -> bool:
    if not isinstance(pair, tuple) or len(pair) != 2:
        return False
    return isinstance(pair[0], str) and callable(pair[1])


def _require_properties(properties: Any) -> None:
    if (
        isinstance(properties, str | bytes)
        or not isinstance(properties, Sequence)
        or not properties
        or not all(_is_property(p) for p in properties)
    ):
        got = _describe(properties)
        raise ValueError(f"properties must be a list of (text, function) pairs: {got}")


def _properties_hold(
    name: str,
    properties: Sequence[tuple[str, Any]],
    hint: str,
    diagnose: Callable[[], Any] | None,
) -> None:
    """Raise :class:`WrongAnswer` naming the first property that does not hold."""
    for text, holds in properties:
        try:
            ok = holds()
            failure = ""
        except Exception as error:
            failure = f" (checking it fails with {type(error).__name__}: {error})"
            ok = False
        if isinstance(ok, torch.Tensor | np.ndarray):
            ok = bool(ok.all())
        if not ok:
            reason = f"this property does not hold: {decode(text)}{failure}"
            named = _diagnosed(diagnose)
            if named:
                raise WrongAnswer(
                    f"✗ {name}: not right. This is what you get when {named}. "
                    f"({reason}.)"
                )
            message = f"✗ {name}: not right: {reason}."
            raise WrongAnswer(message + (f" {hint}" if hint else ""))


def check_that(
    label: str,
    properties: Sequence[tuple[str, Any]],
    *,
    given: Any,
    why: str = "",
    hint: str = "",
    diagnose: Callable[[], Any] | None = None,
) -> None:
    """Check an answer by the properties a right answer has; name the first that fails.

    Args:
        label: the exercise's label, for example ``"ch06-ex4"``.
        properties: ``[(what a right answer does, a function: True if it does)]``,
            in order: shape first, then what it means ("the weights sum to one over the
            source", "the same output as PyTorch's"). Each function takes no argument,
            reads the student's objects; an error in it counts as the property failing.
        given: the student's names the properties read (a value or a tuple): any of them
            still ``...`` means not answered yet.
        why: one sentence said when every property holds, and only then.
        hint: one sentence added when a property fails and no mistake is named.
        diagnose: as in :func:`check`: called when a property fails, the mistakes
            the answer shows (texts), named instead of the hint.

    Texts may be :func:`encode`'s.

    Raises:
        WrongAnswer: a property does not hold; the message names it.
        ValueError: ``properties`` is empty or not a list of (text, function) pairs.
    """
    _require_label(label)
    _require_properties(properties)
    if diagnose is not None and not callable(diagnose):
        raise ValueError(f"diagnose must be a function of no arguments: {diagnose!r}")
    name = exercise_name(label)
    if _unanswered(given):
        print(f"○ {name}: {_NOT_ANSWERED}")
        return
    _properties_hold(name, properties, decode(hint), diagnose)
    print(f"✓ {name}: right." + (f" {decode(why)}" if why else ""))
