"""Encoder and decoder layers and stacks (paper, section 3.1 and 3.3).

Post-norm as in the paper: ``x = LayerNorm(x + Dropout(Sublayer(x)))``. Pre-norm
(``norm_first=True``), the modern default: ``x = x + Dropout(Sublayer(LayerNorm(x)))``.
Both are :func:`residual`, used by every sublayer of both layers. Attribute names follow
``torch.nn.TransformerEncoderLayer`` so weights are easy to compare.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import torch
from torch import nn

from ._checks import check_positive_int
from .attention import MultiHeadAttention


class PositionwiseFeedForward(nn.Module):
    """``FFN(x) = max(0, x W_1 + b_1) W_2 + b_2`` at each position (section 3.3).

    ``(batch, seq_len, d_model) -> (batch, seq_len, d_model)``; dropout sits on the
    hidden layer.
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
    """One residual connection around a sublayer (sections 3.1 and 5.4),
    ``(batch, seq_len, d_model)`` in and out.

    Post-norm (the paper): ``norm(x + dropout(sublayer(x)))``.
    Pre-norm (``norm_first=True``): ``x + dropout(sublayer(norm(x)))``.
    """
    if norm_first:
        return x + dropout(sublayer(norm(x)))
    return norm(x + dropout(sublayer(x)))


class EncoderLayer(nn.Module):
    """Self-attention then feed-forward, each wrapped in residual + LayerNorm.

    ``forward(x, mask)``: ``x`` ``(batch, S, d_model)``, ``mask`` boolean broadcastable
    to ``(batch, heads, S, S)`` (True = may attend), e.g. :func:`padding_mask` of the
    source.
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
        self.self_attn = MultiHeadAttention(
            d_model, num_heads, dropout, fused=fused, d_k=d_k
        )
        self.ff = PositionwiseFeedForward(d_model, d_ff, dropout)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.norm_first = norm_first

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        x = residual(
            x,
            lambda h: self.self_attn(h, h, h, mask),
            self.norm1,
            self.dropout1,
            self.norm_first,
        )
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
        self.self_attn = MultiHeadAttention(
            d_model, num_heads, dropout, fused=fused, d_k=d_k
        )
        self.cross_attn = MultiHeadAttention(
            d_model, num_heads, dropout, fused=fused, d_k=d_k
        )
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
        x = residual(
            x,
            lambda h: self.self_attn(h, h, h, tgt_mask),
            self.norm1,
            self.dropout1,
            self.norm_first,
        )
        x = residual(
            x,
            lambda h: self.cross_attn(h, memory, memory, memory_mask),
            self.norm2,
            self.dropout2,
            self.norm_first,
        )
        return residual(x, self.ff, self.norm3, self.dropout3, self.norm_first)

    def step(self, x: torch.Tensor, cache: KVCache, index: int) -> torch.Tensor:
        """:meth:`forward` for one new position, with a key/value cache (chapter 8).

        ``x`` ``(batch, 1, d_model)`` is the new position, ``cache`` holds layer
        ``index``'s self-attention keys and values of the positions before it and its
        cross-attention keys and values of the memory. The new position's key and value
        are appended to the cache. Returns the layer's output ``(batch, 1, d_model)``.
        No causal mask is needed: every cached position comes before.
        """

        def self_attention(h: torch.Tensor) -> torch.Tensor:
            k, v = cache.append(index, *self.self_attn.project_kv(h, h))
            return self.self_attn.attend(h, k, v)

        def cross_attention(h: torch.Tensor) -> torch.Tensor:
            k, v = cache.cross_k[index], cache.cross_v[index]
            return self.cross_attn.attend(h, k, v, cache.memory_mask)

        x = residual(x, self_attention, self.norm1, self.dropout1, self.norm_first)
        x = residual(x, cross_attention, self.norm2, self.dropout2, self.norm_first)
        return residual(x, self.ff, self.norm3, self.dropout3, self.norm_first)


@dataclasses.dataclass
class KVCache:
    """The keys and values a decoder has computed, kept between decoding steps (chapter
    8).

    The one object that holds a decoder's cache. One entry per decoder layer, each
    ``(batch, heads, ., d_k)``:

    * ``self_k``, ``self_v``: the masked self-attention's keys and values of the
      ``length`` positions generated so far; every step appends one position
      (:meth:`append`);
    * ``cross_k``, ``cross_v``: the cross-attention's keys and values of the encoder
      output ``(batch, heads, S, d_k)``, computed once per sentence
      (:meth:`from_memory`);

    and ``memory_mask`` ``(batch, 1, 1, S)``, the source padding mask. Beam search
    reorders it with its beams (:meth:`reorder`); :attr:`nbytes` is its size. Built by
    :meth:`aiayn_helpers.Transformer.init_cache`.
    """

    self_k: list[torch.Tensor]
    self_v: list[torch.Tensor]
    cross_k: list[torch.Tensor]
    cross_v: list[torch.Tensor]
    memory_mask: torch.Tensor

    @classmethod
    def from_memory(
        cls,
        decoder: Decoder,
        memory: torch.Tensor,
        memory_mask: torch.Tensor,
    ) -> KVCache:
        """An empty cache for ``decoder``: the cross-attention keys and values of every
        layer are projected from ``memory`` ``(batch, S, d_model)`` here, once."""
        batch = memory.shape[0]
        cross = [lay.cross_attn.project_kv(memory, memory) for lay in decoder.layers]
        attns = [layer.self_attn for layer in decoder.layers]
        empty_k = [memory.new_zeros(batch, a.num_heads, 0, a.d_k) for a in attns]
        empty_v = [memory.new_zeros(batch, a.num_heads, 0, a.d_v) for a in attns]
        cross_k, cross_v = [k for k, _ in cross], [v for _, v in cross]
        return cls(empty_k, empty_v, cross_k, cross_v, memory_mask)

    @property
    def length(self) -> int:
        """Positions cached so far."""
        return self.self_k[0].shape[2]

    @property
    def batch_size(self) -> int:
        return self.memory_mask.shape[0]

    @property
    def nbytes(self) -> int:
        """Bytes held by every tensor of the cache (keys, values and the mask)."""
        tensors = self.self_k + self.self_v + self.cross_k + self.cross_v
        tensors.append(self.memory_mask)
        return sum(t.numel() * t.element_size() for t in tensors)

    def numel_per_sequence(self) -> int:
        """Numbers the self-attention cache holds per sequence: 2 * layers * length *
        d_model."""
        return sum(t[0].numel() for t in self.self_k + self.self_v)

    def memory_numel_per_sequence(self) -> int:
        """Numbers the cross-attention cache holds per sequence: 2 * layers * S *
        d_model."""
        return sum(t[0].numel() for t in self.cross_k + self.cross_v)

    def append(
        self,
        layer: int,
        k: torch.Tensor,
        v: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Append one step's keys and values ``(batch, heads, 1, d_k)`` to the
        self-attention cache of layer ``layer``; returns that layer's keys and values,
        the new position included."""
        self.self_k[layer] = torch.cat([self.self_k[layer], k], dim=2)
        self.self_v[layer] = torch.cat([self.self_v[layer], v], dim=2)
        return self.self_k[layer], self.self_v[layer]

    def reorder(self, index: torch.Tensor, *, cross: bool = True) -> KVCache:
        """Keep the sequences ``index`` (``(n,)`` long, on the cache's device), in that
        order, in place; returns the cache.

        Beam search calls it at every step with each new beam's parent (a beam inherits
        its parent's keys and values) and when it drops finished sentences. A parent is
        always a beam of the same sentence, whose cross-attention keys and values are
        the same: ``cross=False`` then leaves those (and the mask) as they are.
        """
        if not isinstance(index, torch.Tensor):
            got = type(index).__name__
            raise ValueError(f"index must be a 1-D integer tensor, got {got}")
        if index.dim() != 1 or index.dtype not in (torch.long, torch.int):
            raise ValueError(
                "index must be a 1-D tensor of int64 (or int32) rows, got "
                f"dtype {index.dtype}, shape {tuple(index.shape)}"
            )
        self.self_k = [t.index_select(0, index) for t in self.self_k]
        self.self_v = [t.index_select(0, index) for t in self.self_v]
        if cross:
            self.cross_k = [t.index_select(0, index) for t in self.cross_k]
            self.cross_v = [t.index_select(0, index) for t in self.cross_v]
            self.memory_mask = self.memory_mask.index_select(0, index)
        return self

    def index_select(self, rows: torch.Tensor) -> KVCache:
        """A new cache of the sequences ``rows`` (``(n,)`` long), in that order; this
        one is left as it is (:meth:`reorder` changes it in place)."""
        lists = self.self_k[:], self.self_v[:], self.cross_k[:], self.cross_v[:]
        copy = KVCache(*lists, self.memory_mask)
        return copy.reorder(rows)


class _LayerStack(nn.Module):
    """``num_layers`` independent copies of ``layer_type`` and, for pre-norm, a final
    LayerNorm.

    The shared ``__init__`` of :class:`Encoder` and :class:`Decoder`: they differ only
    in the layer they stack and in what ``forward`` passes to it.
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
            self.layer_type(
                d_model,
                num_heads,
                d_ff,
                dropout,
                norm_first=norm_first,
                fused=fused,
                d_k=d_k,
            )
            for _ in range(num_layers)
        )
        final_norm = norm_first if final_norm is None else final_norm
        self.norm = nn.LayerNorm(d_model) if final_norm else nn.Identity()


class Encoder(_LayerStack):
    """A stack of ``num_layers`` independent :class:`EncoderLayer` s (N = 6 in the
    paper).

    With ``final_norm=True`` (the default for pre-norm) a LayerNorm follows the last
    layer.
    """

    layer_type = EncoderLayer

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """``x``: ``(batch, S, d_model)`` -> ``(batch, S, d_model)``."""
        for layer in self.layers:
            x = layer(x, mask)
        return self.norm(x)


class Decoder(_LayerStack):
    """A stack of ``num_layers`` independent :class:`DecoderLayer` s (N = 6 in the
    paper)."""

    layer_type = DecoderLayer

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor,
        tgt_mask: torch.Tensor | None = None,
        memory_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """``x``: ``(batch, T, d_model)``, ``memory``: ``(batch, S, d_model)`` ->
        ``(batch, T, d_model)``."""
        for layer in self.layers:
            x = layer(x, memory, tgt_mask, memory_mask)
        return self.norm(x)

    def init_cache(self, memory: torch.Tensor, memory_mask: torch.Tensor) -> KVCache:
        """An empty :class:`KVCache` whose cross-attention keys and values are projected
        from ``memory``."""
        return KVCache.from_memory(self, memory, memory_mask)

    def step(self, x: torch.Tensor, cache: KVCache) -> torch.Tensor:
        """One new position ``x`` ``(batch, 1, d_model)`` -> ``(batch, 1, d_model)``,
        appending to ``cache``."""
        for i, layer in enumerate(self.layers):
            x = layer.step(x, cache, i)
        return self.norm(x)
