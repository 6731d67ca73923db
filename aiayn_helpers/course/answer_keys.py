"""Answer keys a student cannot read: the words of a check, and the values it compares.

* :func:`encode` and :func:`decode`: a check's words (``why``, ``hint``, the names of
  mistakes and properties) and a quiz's questions are kept in the cells as this text,
  which reads as noise.
* :func:`reference` and :class:`Reference`: an answer's SHA-256 digest, compared after
  rounding, so the value is not in the cell; :class:`OneOf` accepts any of several.

:mod:`aiayn_helpers.course.exercises` checks answers with them and re-exports every
public name, so chapters import from there.
"""

from __future__ import annotations

import base64
import hashlib
import math
import re
import zlib
from typing import Any

import numpy as np
import torch

__all__ = ["OneOf", "Reference", "decode", "encode", "reference"]

_LABEL = re.compile(r"^ch(?P<chapter>[0-9]+|[A-Z])-ex(?P<number>[0-9]+)$")


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
            nan = _nan_reason(answer)
            if nan:
                return nan
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
