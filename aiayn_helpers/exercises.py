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

import base64
import hashlib
import json
import math
import random
import re
import types
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

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

_LABEL = re.compile(r"^ch(?P<chapter>[0-9]+|[A-Z])-ex(?P<number>[0-9]+)$")


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


_ENCODED = "aiayn:"


def encode(text: str) -> str:
    """``text`` in a form a reader cannot read at a glance, for a check or quiz cell.

    ``"aiayn:"`` and the base64 of the zlib-compressed UTF-8 text; :func:`check`,
    :func:`check_that` and :func:`quiz` take it wherever they take words, and
    :func:`decode` gives the text back. It hides an answer from the eye, not from a
    student who decodes it on purpose.
    """
    if not isinstance(text, str):
        raise ValueError(f"encode() takes a str, got {_describe(text)}")
    packed = base64.b64encode(zlib.compress(text.encode("utf-8"), 9)).decode("ascii")
    return _ENCODED + packed


def decode(text: str) -> str:
    """The text :func:`encode` encoded; any other string is returned as it is."""
    if not isinstance(text, str):
        raise ValueError(f"decode() takes a str, got {_describe(text)}")
    if not text.startswith(_ENCODED):
        return text
    try:
        packed = base64.b64decode(text[len(_ENCODED) :], validate=True)
        return zlib.decompress(packed).decode("utf-8")
    except (ValueError, zlib.error) as error:
        raise ValueError(f"not a text made by encode(): {text[:40]!r}") from error


def _as_array(x: Any) -> np.ndarray | None:
    if isinstance(x, torch.Tensor):
        return (
            x.detach().cpu().to(torch.float64).numpy()
            if x.is_floating_point()
            else x.detach().cpu().numpy()
        )
    if isinstance(x, np.ndarray):
        return x
    return None


def _describe(x: Any) -> str:
    if isinstance(x, torch.Tensor | np.ndarray):
        return f"{type(x).__name__} of shape {tuple(x.shape)}"
    text = repr(x)
    return text if len(text) <= 60 else text[:57] + "..."


_KINDS = ("bool", "int", "float", "str", "tensor", "near")
# a float reference must round the same when moved by this relative amount
_MARGIN = 1e-10


def _number(x: Any) -> Any:
    """A Python bool, int or float for a number, a 0-d array or a one-element tensor."""
    if isinstance(x, torch.Tensor) and x.numel() == 1:
        return x.item()
    if isinstance(x, np.ndarray) and x.size == 1 and x.ndim == 0:
        return x.item()
    if isinstance(x, np.generic):
        return x.item()
    return x


def _kind(value: Any) -> str:
    if isinstance(value, torch.Tensor | np.ndarray) and getattr(value, "ndim", 0) > 0:
        return "tensor"
    value = _number(value)
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    expected = "a bool, an int, a float, a str or a tensor of numbers"
    raise ValueError(f"a reference is {expected}; got {_describe(value)}")


# a float of smaller size is rounded to 0 (a rounding error of an exact 0)
_ZERO = 1e-12


def _require_label(label: Any) -> None:
    if not isinstance(label, str) or not label:
        raise ValueError(f"label must be an exercise label like 'ch02-ex1': {label!r}")


def _float_text(x: float, digits: int) -> str:
    if abs(x) < _ZERO:
        return "0"
    text = f"{x:.{digits}g}"
    return "0" if text == "-0" else text


def _canonical(value: Any, kind: str, digits: int) -> str | None:
    """The text the digest is made of, or None if ``value`` is not of ``kind``."""
    if kind == "tensor":
        array = _as_array(value)
        if array is None or not np.issubdtype(array.dtype, np.number):
            return None
        flat = array.astype(np.float64).ravel()
        return ";".join(_float_text(float(v), digits) for v in flat)
    value = _number(value)
    if kind == "bool":
        return str(value) if isinstance(value, bool) else None
    if kind == "str":
        return value.strip().lower() if isinstance(value, str) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if kind == "int":
        if isinstance(value, float) and not value.is_integer():
            return None
        return str(int(value))
    return _float_text(float(value), digits)


def _hash(label: str, kind: str, digits: int, shape: tuple, text: str) -> str:
    data = f"{label}|{kind}|{digits}|{shape}|{text}".encode()
    return hashlib.sha256(data).hexdigest()


def reference(
    label: str, value: Any, *, digits: int = 6, within: float | None = None
) -> str:
    """The digest of a right answer, to paste into a check cell as ``Reference("...")``.

    Args:
        label: the exercise's label (part of the digest, so equal answers of two
            exercises have different digests).
        value: the right answer: a bool, an int (compared exactly), a float or a tensor
            (compared after rounding to ``digits`` significant digits), or a string
            (compared without case and surrounding spaces).
        digits: significant digits kept for floats and tensors, 1 to 15.
        within: for a number that may differ a little from one machine to another (a
            BLEU score of decoded text): an answer within ``within`` of ``value`` is
            right, one more than ``2 * within`` away is wrong (no rounding boundary).

    Returns:
        ``"sha256:<kind>:<digits>:<shape or within>:<hex digest>"``.

    Raises:
        ValueError: for another type of value, ``digits`` out of range, or a float
            that lies so close to a rounding boundary that an answer differing only by
            rounding errors could round the other way (choose other ``digits``).
    """
    _require_label(label)
    if not isinstance(digits, int) or isinstance(digits, bool) or not 1 <= digits <= 15:
        raise ValueError(f"digits must be an int from 1 to 15, got {digits!r}")
    if within is not None:
        return _reference_near(label, value, within)
    kind = _kind(value)
    if kind in ("float", "tensor"):
        numbers = _as_array(value) if kind == "tensor" else np.array([_number(value)])
        for v in np.asarray(numbers, dtype=np.float64).ravel():
            if not math.isfinite(v):
                raise ValueError(f"a reference must be finite, got {v}")
            if 0 < abs(v) < 1e3 * _ZERO:
                raise ValueError(f"{v!r} is too close to 0 to be rounded reliably")
            low = _float_text(v * (1 - _MARGIN), digits)
            high = _float_text(v * (1 + _MARGIN), digits)
            if low != high:
                raise ValueError(
                    f"{v!r} is within a relative {_MARGIN} of a rounding boundary at "
                    f"{digits} digits; choose other digits"
                )
    shape = tuple(value.shape) if kind == "tensor" else ()
    text = _canonical(value, kind, digits)
    digest = _hash(label, kind, digits, shape, text)
    return f"sha256:{kind}:{digits}:{','.join(map(str, shape))}:{digest}"


def _grid(value: Any, within: float) -> int | None:
    value = _number(value)
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
    ):
        return None
    return math.floor(value / within)


def _reference_near(label: str, value: Any, within: Any) -> str:
    finite = (
        isinstance(within, int | float)
        and not isinstance(within, bool)
        and math.isfinite(within)
    )
    if not finite or within <= 0:
        raise ValueError(f"within must be a positive number, got {within!r}")
    cell = _grid(value, float(within))
    if cell is None:
        raise ValueError(
            f"a reference with within= is a finite number, got {_describe(value)}"
        )
    digest = _hash(label, "near", 0, (), str(cell))
    return f"sha256:near:0:{float(within)!r}:{digest}"


_WANTED = {"bool": "True or False", "int": "a whole number", "float": "a number"}
_WANTED["str"] = "text"


class Reference:
    """A right answer (or a mistake's value) kept as a digest made by :func:`reference`.

    :func:`check` compares an answer with it by rounding the answer the same way and
    comparing digests, so the check cell holds no value a student could read.
    """

    def __init__(self, digest: str) -> None:
        parts = digest.split(":") if isinstance(digest, str) else []
        if (
            len(parts) != 5
            or parts[0] != "sha256"
            or parts[1] not in _KINDS
            or not parts[2].isdigit()
            or not re.fullmatch(r"[0-9a-f]{64}", parts[4])
        ):
            raise ValueError(
                "a Reference is made from reference(label, value)'s text, "
                f"'sha256:<kind>:<digits>:<shape>:<64 hex digits>'; got {digest!r}"
            )
        self.kind, self.digits, self.hexdigest = parts[1], int(parts[2]), parts[4]
        try:
            self.within = float(parts[3]) if self.kind == "near" else None
            self.shape = (
                ()
                if self.kind == "near"
                else tuple(int(n) for n in parts[3].split(",") if n)
            )
        except ValueError:
            raise ValueError(
                f"a Reference's fourth field is a shape or a number: {digest!r}"
            ) from None
        self.label: str | None = None  # set by check()

    def __repr__(self) -> str:
        return f"Reference({self.kind}, {self.digits} digits)"

    def difference(self, answer: Any) -> str | None:
        """None when ``answer`` rounds to the reference; else what differs, in words."""
        if self.label is None:
            raise ValueError("a Reference is compared inside check(), with a label")
        if self.kind == "near":
            cell = _grid(answer, self.within)
            if cell is None:
                return f"expected a number, got {_describe(answer)}"
            digests = {
                _hash(self.label, "near", 0, (), str(cell + j)) for j in (-1, 0, 1)
            }
            if self.hexdigest in digests:
                return None
            shown = _describe(_number(answer))
            near = f"{self.within:g}"
            return f"your value {shown} is not within about {near} of the right one"
        if self.kind == "tensor":
            got = _as_array(answer)
            if got is None:
                got = _describe(answer)
                return f"expected a tensor of shape {self.shape}, got {got}"
            if tuple(got.shape) != self.shape:
                return f"expected shape {self.shape}, got shape {tuple(got.shape)}"
        nan = _nan_reason(answer)
        if nan:
            return nan
        text = _canonical(answer, self.kind, self.digits)
        if text is None:
            wanted = _WANTED.get(self.kind, "a tensor of numbers")
            return f"expected {wanted}, got {_describe(answer)}"
        shape = self.shape if self.kind == "tensor" else ()
        if _hash(self.label, self.kind, self.digits, shape, text) == self.hexdigest:
            return None
        shown = "" if self.kind == "tensor" else f" {_describe(_number(answer))}"
        compared = {"int": "exactly", "bool": "exactly", "str": "as text"}.get(
            self.kind, f"to {self.digits} significant digits"
        )
        return f"your value{shown} is not the right one (compared {compared})"


class OneOf:
    """Several right answers: an answer is right when it matches any of them.

    For an exercise whose text leads to one answer and whose exact data to another
    (an estimate "about 63 M" and the exact count). Each alternative is what
    ``expected`` may be (a :class:`Reference`, a number, ...); a wrong answer is told
    how it differs from the first.
    """

    def __init__(self, *alternatives: Any) -> None:
        if len(alternatives) < 2:
            raise ValueError(
                f"OneOf takes two or more right answers, got {len(alternatives)}"
            )
        self.alternatives = alternatives

    def __repr__(self) -> str:
        return f"OneOf({len(self.alternatives)} answers)"


def _nan_reason(answer: Any) -> str | None:
    """What a NaN in a numeric answer is called in a message (None: no NaN)."""
    array = _as_array(answer)
    if array is None or array.ndim == 0 or array.size == 1 and array.ndim == 0:
        value = _number(answer)
        if isinstance(value, float) and math.isnan(value):
            return "your value is NaN (not a number)"
        return None
    if not np.issubdtype(array.dtype, np.floating) or not np.isnan(array).any():
        return None
    where = tuple(int(i) for i in np.argwhere(np.isnan(array))[0])
    count = int(np.isnan(array).sum())
    return (
        f"{count} of {array.size} values are NaN (not a number), the first at {where}"
    )


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
    except Exception:  # a diagnosis that cannot run names nothing
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
    state = random.getstate()
    random.seed(
        f"aiayn-quiz-{key}"
    )  # jupyterquiz names its elements with random letters
    try:
        display_quiz(questions, shuffle_answers=False, max_width=800)
    finally:
        random.setstate(state)
        jq_display.build_script = build_script


def _guard_mathjax(script: str) -> str:
    """jupyterquiz's script with every ``version[0]`` read made safe for an unloaded
    MathJax."""
    return script.replace("version[0]", "String(version)[0]")
