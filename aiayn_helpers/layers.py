"""Encoder and decoder layers and stacks (paper, section 3.1 and 3.3).

Post-norm as in the paper: ``x = LayerNorm(x + Dropout(Sublayer(x)))``.
Pre-norm (``norm_first=True``), the modern default: ``x = x + Dropout(Sublayer(LayerNorm(x)))``.
Attribute names follow ``torch.nn.TransformerEncoderLayer`` so weights are easy to compare.
"""

from __future__ import annotations

import torch
from torch import nn

from ._checks import check_positive_int
from .attention import MultiHeadAttention


class PositionwiseFeedForward(nn.Module):
    """FFN(x) = max(0, x W_1 + b_1) W_2 + b_2, applied at each position (section 3.3).

    ``(batch, seq_len, d_model) -> (batch, seq_len, d_model)``; dropout sits on the hidden layer.
    """

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.1):
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_int("d_ff", d_ff)
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear2(self.dropout(torch.relu(self.linear1(x))))


class EncoderLayer(nn.Module):
    """Self-attention then feed-forward, each wrapped in residual + LayerNorm.

    ``forward(x, mask)``: ``x`` ``(batch, S, d_model)``, ``mask`` boolean broadcastable to
    ``(batch, heads, S, S)`` (True = may attend), e.g. :func:`padding_mask` of the source.
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int,
        dropout: float = 0.1,
        *,
        norm_first: bool = False,
        fused: bool = False,
    ):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout, fused=fused)
        self.ff = PositionwiseFeedForward(d_model, d_ff, dropout)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.norm_first = norm_first

    def _sa(self, x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        return self.dropout1(self.self_attn(x, x, x, mask))

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        if self.norm_first:
            x = x + self._sa(self.norm1(x), mask)
            return x + self.dropout2(self.ff(self.norm2(x)))
        x = self.norm1(x + self._sa(x, mask))
        return self.norm2(x + self.dropout2(self.ff(x)))


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention over the encoder output, feed-forward.

    ``forward(x, memory, tgt_mask, memory_mask)``:
    ``x`` ``(batch, T, d_model)``, ``memory`` ``(batch, S, d_model)``;
    ``tgt_mask`` broadcastable to ``(batch, heads, T, T)`` (causal and target padding),
    ``memory_mask`` broadcastable to ``(batch, heads, T, S)`` (source padding).
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int,
        dropout: float = 0.1,
        *,
        norm_first: bool = False,
        fused: bool = False,
    ):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout, fused=fused)
        self.cross_attn = MultiHeadAttention(d_model, num_heads, dropout, fused=fused)
        self.ff = PositionwiseFeedForward(d_model, d_ff, dropout)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.norm3 = nn.LayerNorm(d_model)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.dropout3 = nn.Dropout(dropout)
        self.norm_first = norm_first

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor,
        tgt_mask: torch.Tensor | None = None,
        memory_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        def sa(h: torch.Tensor) -> torch.Tensor:
            return self.dropout1(self.self_attn(h, h, h, tgt_mask))

        def ca(h: torch.Tensor) -> torch.Tensor:
            return self.dropout2(self.cross_attn(h, memory, memory, memory_mask))

        def ff(h: torch.Tensor) -> torch.Tensor:
            return self.dropout3(self.ff(h))

        if self.norm_first:
            x = x + sa(self.norm1(x))
            x = x + ca(self.norm2(x))
            return x + ff(self.norm3(x))
        x = self.norm1(x + sa(x))
        x = self.norm2(x + ca(x))
        return self.norm3(x + ff(x))


class Encoder(nn.Module):
    """A stack of ``num_layers`` independent :class:`EncoderLayer` s (N = 6 in the paper).

    With ``final_norm=True`` (the default for pre-norm) a LayerNorm follows the last layer.
    """

    def __init__(
        self,
        num_layers: int,
        d_model: int,
        num_heads: int,
        d_ff: int,
        dropout: float = 0.1,
        *,
        norm_first: bool = False,
        final_norm: bool | None = None,
        fused: bool = False,
    ):
        super().__init__()
        check_positive_int("num_layers", num_layers)
        self.layers = nn.ModuleList(
            EncoderLayer(d_model, num_heads, d_ff, dropout, norm_first=norm_first, fused=fused)
            for _ in range(num_layers)
        )
        final_norm = norm_first if final_norm is None else final_norm
        self.norm = nn.LayerNorm(d_model) if final_norm else nn.Identity()

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """``x``: ``(batch, S, d_model)`` -> ``(batch, S, d_model)``."""
        for layer in self.layers:
            x = layer(x, mask)
        return self.norm(x)


class Decoder(nn.Module):
    """A stack of ``num_layers`` independent :class:`DecoderLayer` s."""

    def __init__(
        self,
        num_layers: int,
        d_model: int,
        num_heads: int,
        d_ff: int,
        dropout: float = 0.1,
        *,
        norm_first: bool = False,
        final_norm: bool | None = None,
        fused: bool = False,
    ):
        super().__init__()
        check_positive_int("num_layers", num_layers)
        self.layers = nn.ModuleList(
            DecoderLayer(d_model, num_heads, d_ff, dropout, norm_first=norm_first, fused=fused)
            for _ in range(num_layers)
        )
        final_norm = norm_first if final_norm is None else final_norm
        self.norm = nn.LayerNorm(d_model) if final_norm else nn.Identity()

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor,
        tgt_mask: torch.Tensor | None = None,
        memory_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """``x``: ``(batch, T, d_model)``, ``memory``: ``(batch, S, d_model)`` -> ``(batch, T, d_model)``."""
        for layer in self.layers:
            x = layer(x, memory, tgt_mask, memory_mask)
        return self.norm(x)
