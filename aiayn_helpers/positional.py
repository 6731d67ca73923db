"""Sinusoidal positional encoding (paper, section 3.5).

PE(pos, 2i)   = sin(pos / 10000^(2i / d_model))
PE(pos, 2i+1) = cos(pos / 10000^(2i / d_model))
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ._checks import check_floating, check_positive_int, check_tensor


def sinusoidal_encoding(
    length: int, d_model: int, dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    """The paper's ``(length, d_model)`` table, interleaved: even columns sin, odd cos.

    Computed in float64 and cast to ``dtype``. The frequencies are written as
    ``exp(-ln(10000) * 2i / d_model)``, which equals ``1 / 10000^(2i / d_model)``.
    """
    check_positive_int("length", length)
    check_positive_int("d_model", d_model)
    position = torch.arange(length, dtype=torch.float64)[:, None]  # (length, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # 0, 2, 4, ...
    inv_freq = torch.exp(-math.log(10000.0) * two_i / d_model)  # (ceil(d_model / 2),)
    angles = position * inv_freq  # (length, ceil(d_model / 2))
    pe = torch.zeros(length, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angles)
    pe[:, 1::2] = torch.cos(angles[:, : d_model // 2])
    return pe.to(dtype)


class PositionalEncoding(nn.Module):
    """Adds the sinusoidal table to embeddings, then applies dropout.

    The table is a non-persistent buffer: it moves with the module (``.to(device)``)
    and is not stored in checkpoints.

    Args:
        d_model: embedding size.
        dropout: dropout rate applied to the sum (0.1 in the paper).
        max_len: length of the precomputed table.
        extend: what to do with a sequence longer than ``max_len``: if True,
            recompute a longer table; if False (default), raise ``ValueError``.
    """

    def __init__(
        self,
        d_model: int,
        dropout: float = 0.1,
        max_len: int = 5000,
        *,
        extend: bool = False,
    ):
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_int("max_len", max_len)
        self.d_model = d_model
        self.extend = extend
        self.dropout = nn.Dropout(dropout)
        self.register_buffer(
            "pe", sinusoidal_encoding(max_len, d_model), persistent=False
        )
        # A float64 copy on the CPU, outside the buffers (some devices have no float64):
        # `.double()` would only widen the rounded float32 table.
        self._pe64 = sinusoidal_encoding(max_len, d_model, torch.float64)

    @property
    def max_len(self) -> int:
        return self.pe.shape[0]

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """``x``: ``(batch, seq_len, d_model)`` -> same shape.

        ``offset`` is the position of ``x``'s first row (a cached decoding step adds the
        encoding of position ``t`` to a single new token).
        """
        check_tensor("x", x, dim=3)
        check_floating("x", x)
        length = offset + x.shape[1]
        if x.shape[-1] != self.d_model:
            raise ValueError(
                f"x must have last dimension d_model={self.d_model}, got shape "
                f"{tuple(x.shape)}"
            )
        if length > self.max_len:
            if not self.extend:
                raise ValueError(
                    f"sequence length {length} exceeds max_len={self.max_len} of the "
                    "positional table; "
                    "build PositionalEncoding with a larger max_len or extend=True"
                )
            self.pe = sinusoidal_encoding(length, self.d_model, self.pe.dtype).to(
                self.pe.device
            )
            self._pe64 = sinusoidal_encoding(length, self.d_model, torch.float64)
        # exact table for float64 work (the equivalence tests)
        if x.dtype == torch.float64:
            return self.dropout(x + self._pe64[offset:length].to(x.device))
        return self.dropout(x + self.pe[offset:length].to(x.dtype))


class LearnedPositionalEncoding(nn.Module):
    """Adds a trained ``(max_len, d_model)`` table of position embeddings, then dropout.

    The alternative the paper tried in table 3, row (E) ("we also experimented with
    using learned positional embeddings instead, and found that the two versions
    produced nearly identical results", section 3.5). Unlike the sinusoidal table it has
    no rows beyond ``max_len``: a longer sequence is a ``ValueError``. Same
    ``forward(x, offset)`` as :class:`PositionalEncoding`.
    """

    def __init__(self, d_model: int, dropout: float = 0.1, max_len: int = 256):
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_int("max_len", max_len)
        self.d_model = d_model
        self.max_len = max_len
        self.embedding = nn.Embedding(max_len, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """``x`` ``(batch, seq_len, d_model)`` -> same shape; ``offset`` as above."""
        check_tensor("x", x, dim=3)
        check_floating("x", x)
        if x.shape[-1] != self.d_model:
            raise ValueError(
                f"x must have last dimension d_model={self.d_model}, got shape "
                f"{tuple(x.shape)}"
            )
        length = offset + x.shape[1]
        if length > self.max_len:
            raise ValueError(
                f"sequence length {length} exceeds max_len={self.max_len} of the "
                "learned position table, "
                "which has no rows beyond it; build it with a larger max_len"
            )
        positions = torch.arange(offset, length, device=x.device)
        return self.dropout(x + self.embedding(positions).to(x.dtype))
