"""Encoder and decoder layers and stacks (paper, section 3.1 and 3.3).

Post-norm as in the paper: ``x = LayerNorm(x + Dropout(Sublayer(x)))``.
Pre-norm (``norm_first=True``), the modern default: ``x = x + Dropout(Sublayer(LayerNorm(x)))``.
Both are :func:`residual`, used by every sublayer of both layers.
Attribute names follow ``torch.nn.TransformerEncoderLayer`` so weights are easy to compare.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

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


def residual(
    x: torch.Tensor,
    sublayer: Callable[[torch.Tensor], torch.Tensor],
    norm: nn.Module,
    dropout: nn.Module,
    norm_first: bool,
) -> torch.Tensor:
    """One residual connection around a sublayer (sections 3.1 and 5.4), ``(batch, seq_len, d_model)`` in and out.

    Post-norm (the paper): ``norm(x + dropout(sublayer(x)))``.
    Pre-norm (``norm_first=True``): ``x + dropout(sublayer(norm(x)))``.
    """
    if norm_first:
        return x + dropout(sublayer(norm(x)))
    return norm(x + dropout(sublayer(x)))


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
        d_k: int | None = None,
    ):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout, fused=fused, d_k=d_k)
        self.ff = PositionwiseFeedForward(d_model, d_ff, dropout)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.norm_first = norm_first

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        x = residual(x, lambda h: self.self_attn(h, h, h, mask), self.norm1, self.dropout1, self.norm_first)
        return residual(x, self.ff, self.norm2, self.dropout2, self.norm_first)


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention over the encoder output, feed-forward.

    ``forward(x, memory, tgt_mask, memory_mask)``:
    ``x`` ``(batch, T, d_model)``, ``memory`` ``(batch, S, d_model)``;
    ``tgt_mask`` broadcastable to ``(batch, heads, T, T)`` (causal and target padding),
    ``memory_mask`` broadcastable to ``(batch, heads, T, S)`` (source padding).
    """

    # The same parameters as EncoderLayer's, as nn.TransformerDecoderLayer repeats
    # nn.TransformerEncoderLayer's: a layer is built by name in _LayerStack.
    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int,
        dropout: float = 0.1,
        *,
        norm_first: bool = False,
        fused: bool = False,
        d_k: int | None = None,
    ):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout, fused=fused, d_k=d_k)
        self.cross_attn = MultiHeadAttention(d_model, num_heads, dropout, fused=fused, d_k=d_k)
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
        x = residual(x, lambda h: self.self_attn(h, h, h, tgt_mask), self.norm1, self.dropout1, self.norm_first)
        x = residual(
            x, lambda h: self.cross_attn(h, memory, memory, memory_mask), self.norm2, self.dropout2, self.norm_first
        )
        return residual(x, self.ff, self.norm3, self.dropout3, self.norm_first)

    def step(
        self,
        x: torch.Tensor,
        past: tuple[torch.Tensor, torch.Tensor],
        cross: tuple[torch.Tensor, torch.Tensor],
        memory_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        """:meth:`forward` for one new position, with a key/value cache (chapter 8).

        ``x`` ``(batch, 1, d_model)`` is the new position; ``past`` the self-attention keys
        and values ``(batch, heads, t, d_k)`` of the ``t`` positions before it; ``cross``
        the cross-attention keys and values ``(batch, heads, S, d_k)`` of the memory.
        Returns the layer's output ``(batch, 1, d_model)`` and ``past`` with the new
        position appended. No causal mask is needed: every cached position comes before.
        """
        grown = []

        def self_attention(h: torch.Tensor) -> torch.Tensor:
            k, v = self.self_attn.project_kv(h, h)
            k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)
            grown.append((k, v))
            return self.self_attn.attend(h, k, v)

        x = residual(x, self_attention, self.norm1, self.dropout1, self.norm_first)
        x = residual(
            x, lambda h: self.cross_attn.attend(h, *cross, memory_mask), self.norm2, self.dropout2, self.norm_first
        )
        return residual(x, self.ff, self.norm3, self.dropout3, self.norm_first), grown[0]


@dataclasses.dataclass
class KVCache:
    """The keys and values a decoder has computed, kept between decoding steps (chapter 8).

    One entry per decoder layer, each ``(batch, heads, ., d_k)``:

    * ``self_k``, ``self_v``: the masked self-attention's keys and values of the ``length``
      positions generated so far; every step appends one position;
    * ``cross_k``, ``cross_v``: the cross-attention's keys and values of the encoder
      output ``(batch, heads, S, d_k)``, computed once;

    and ``memory_mask`` ``(batch, 1, 1, S)``, the source padding mask. Built by
    :meth:`aiayn_helpers.Transformer.init_cache`.
    """

    self_k: list[torch.Tensor]
    self_v: list[torch.Tensor]
    cross_k: list[torch.Tensor]
    cross_v: list[torch.Tensor]
    memory_mask: torch.Tensor

    @property
    def length(self) -> int:
        """Positions cached so far."""
        return self.self_k[0].shape[2]

    @property
    def batch_size(self) -> int:
        return self.memory_mask.shape[0]

    def numel_per_sequence(self) -> int:
        """Numbers the self-attention cache holds per sequence: 2 * layers * length * d_model."""
        return sum(t[0].numel() for t in self.self_k + self.self_v)

    def memory_numel_per_sequence(self) -> int:
        """Numbers the cross-attention cache holds per sequence: 2 * layers * S * d_model."""
        return sum(t[0].numel() for t in self.cross_k + self.cross_v)

    def index_select(self, rows: torch.Tensor) -> KVCache:
        """The cache of the sequences ``rows`` (``(n,)`` long), in that order: beam search
        reorders it with its beams and drops finished sentences with it."""

        def pick(ts: list[torch.Tensor]) -> list[torch.Tensor]:
            return [t.index_select(0, rows) for t in ts]

        return KVCache(
            pick(self.self_k), pick(self.self_v), pick(self.cross_k), pick(self.cross_v), self.memory_mask[rows]
        )


class _LayerStack(nn.Module):
    """``num_layers`` independent copies of ``layer_type`` and, for pre-norm, a final LayerNorm.

    The shared ``__init__`` of :class:`Encoder` and :class:`Decoder`: they differ only in
    the layer they stack and in what ``forward`` passes to it.
    """

    layer_type: type[nn.Module]

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
        d_k: int | None = None,
    ):
        super().__init__()
        check_positive_int("num_layers", num_layers)
        self.layers = nn.ModuleList(
            self.layer_type(d_model, num_heads, d_ff, dropout, norm_first=norm_first, fused=fused, d_k=d_k)
            for _ in range(num_layers)
        )
        final_norm = norm_first if final_norm is None else final_norm
        self.norm = nn.LayerNorm(d_model) if final_norm else nn.Identity()


class Encoder(_LayerStack):
    """A stack of ``num_layers`` independent :class:`EncoderLayer` s (N = 6 in the paper).

    With ``final_norm=True`` (the default for pre-norm) a LayerNorm follows the last layer.
    """

    layer_type = EncoderLayer

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """``x``: ``(batch, S, d_model)`` -> ``(batch, S, d_model)``."""
        for layer in self.layers:
            x = layer(x, mask)
        return self.norm(x)


class Decoder(_LayerStack):
    """A stack of ``num_layers`` independent :class:`DecoderLayer` s (N = 6 in the paper)."""

    layer_type = DecoderLayer

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

    def init_cache(self, memory: torch.Tensor, memory_mask: torch.Tensor) -> KVCache:
        """An empty :class:`KVCache` whose cross-attention keys and values are projected from ``memory``."""
        batch = memory.shape[0]
        cross = [layer.cross_attn.project_kv(memory, memory) for layer in self.layers]
        attns = [layer.self_attn for layer in self.layers]
        empty_k = [memory.new_zeros(batch, a.num_heads, 0, a.d_k) for a in attns]
        empty_v = [memory.new_zeros(batch, a.num_heads, 0, a.d_v) for a in attns]
        return KVCache(empty_k, empty_v, [k for k, _ in cross], [v for _, v in cross], memory_mask)

    def step(self, x: torch.Tensor, cache: KVCache) -> torch.Tensor:
        """One new position ``x`` ``(batch, 1, d_model)`` -> ``(batch, 1, d_model)``, appending to ``cache``."""
        for i, layer in enumerate(self.layers):
            x, (cache.self_k[i], cache.self_v[i]) = layer.step(
                x, (cache.self_k[i], cache.self_v[i]), (cache.cross_k[i], cache.cross_v[i]), cache.memory_mask
            )
        return self.norm(x)
