"""Input validation shared by the package.

Every public function checks what it is given and raises ``ValueError`` with a
message that names what was expected and what was given. Nothing is allowed to
broadcast silently into a wrong answer.
"""

from __future__ import annotations

import torch


def is_int(value: object) -> bool:
    """True for an ``int`` that is not a ``bool`` (``True`` is an ``int`` in Python)."""
    return isinstance(value, int) and not isinstance(value, bool)


def check_positive_int(name: str, value: object, note: str = "") -> None:
    """Raise unless ``value`` is a positive ``int`` (not a bool); ``note`` is added."""
    if not is_int(value) or value <= 0:
        raise ValueError(
            f"{name} must be a positive int{f' ({note})' if note else ''}, got "
            f"{value!r}"
        )


def check_int_in_range(name: str, value: object, low: int, high: int) -> None:
    """Raise unless ``value`` is an ``int`` in ``[low, high)`` (bools are rejected)."""
    if not is_int(value) or not low <= value < high:
        raise ValueError(f"{name} must be an int in [{low}, {high}), got {value!r}")


def check_non_negative_number(name: str, value: object) -> None:
    """Raise unless ``value`` is an ``int`` or ``float`` >= 0 (bools are rejected)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ValueError(f"{name} must be a float >= 0, got {value!r}")


def check_tensor(
    name: str, x: object, *, min_dim: int | None = None, dim: int | None = None
) -> None:
    """Raise unless ``x`` is a tensor with the requested number of dimensions."""
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if dim is not None and x.dim() != dim:
        raise ValueError(
            f"{name} must have {dim} dimensions, got shape {tuple(x.shape)}"
        )
    if min_dim is not None and x.dim() < min_dim:
        raise ValueError(
            f"{name} must have at least {min_dim} dimensions, got shape "
            f"{tuple(x.shape)}"
        )


def check_floating(name: str, x: torch.Tensor) -> None:
    if not x.is_floating_point():
        raise ValueError(f"{name} must be a floating-point tensor, got dtype {x.dtype}")


def check_token_ids(name: str, tokens: object, vocab_size: int) -> None:
    """Raise unless ``tokens`` is a ``(batch, seq_len)`` tensor of ids, each <
    vocab_size.

    The range check reads the smallest and largest id back from the device (one
    synchronisation): call it once where ids enter, never inside a decoding loop.
    """
    check_tensor(name, tokens, dim=2)
    assert isinstance(tokens, torch.Tensor)
    if tokens.dtype not in (
        torch.int64,
        torch.int32,
        torch.int16,
        torch.int8,
        torch.uint8,
    ):
        raise ValueError(
            f"{name} must hold integer token ids, got dtype {tokens.dtype}"
        )
    if tokens.shape[1] == 0:
        raise ValueError(
            f"{name} must have at least one position, got shape {tuple(tokens.shape)}"
        )
    if tokens.numel() > 0:
        lo, hi = int(tokens.min()), int(tokens.max())
        if lo < 0 or hi >= vocab_size:
            raise ValueError(
                f"{name} must hold ids in [0, {vocab_size}), got values in [{lo}, {hi}]"
            )


def check_mask(mask: object, target_shape: tuple[int, ...]) -> torch.Tensor:
    """Check a boolean attention mask (True = may attend) against ``target_shape``.

    ``target_shape`` is the shape of the attention scores, ``(..., T_q, T_k)``.
    The mask must broadcast to it *without* growing the scores: a mask whose
    broadcast would change the shape of the result is rejected.
    """
    if not isinstance(mask, torch.Tensor):
        raise ValueError(f"mask must be a torch.Tensor, got {type(mask).__name__}")
    if mask.dtype != torch.bool:
        raise ValueError(
            f"mask must have dtype torch.bool (True = may attend), got {mask.dtype}; "
            "convert an additive float mask with `mask == 0` or build it with "
            "causal_mask()/padding_mask()"
        )
    _check_broadcasts_to_scores("mask", mask, target_shape)
    return mask


def check_bias(
    bias: object, target_shape: tuple[int, ...], dtype: torch.dtype
) -> torch.Tensor:
    """Check an additive float attention bias (ALiBi, chapter 10) against its scores.

    ``target_shape`` is the shape of the attention scores, ``(..., T_q, T_k)``, and
    ``dtype`` their dtype. Like a mask, the bias must broadcast to the scores without
    growing them.
    """
    if not isinstance(bias, torch.Tensor):
        raise ValueError(f"attn_bias must be a torch.Tensor, got {type(bias).__name__}")
    if bias.dtype != dtype:
        raise ValueError(
            f"attn_bias must be a float tensor of the scores' dtype {dtype} (it is "
            f"added to them), got {bias.dtype}"
        )
    _check_broadcasts_to_scores("attn_bias", bias, target_shape)
    return bias


def _check_broadcasts_to_scores(
    name: str, t: torch.Tensor, target_shape: tuple[int, ...]
) -> None:
    try:
        shape = torch.broadcast_shapes(tuple(t.shape), target_shape)
    except RuntimeError:
        shape = None
    if shape != torch.Size(target_shape):
        raise ValueError(
            f"{name} of shape {tuple(t.shape)} does not broadcast to the attention "
            "scores' shape "
            f"{tuple(target_shape)} (expected (..., T_q, T_k) = (..., "
            f"{target_shape[-2]}, {target_shape[-1]}))"
        )
