"""Scaled dot-product attention, masks and multi-head attention (paper, section 3.2).

Mask convention throughout the package: a boolean tensor where **True means
"may attend"**, the convention of ``torch.nn.functional.scaled_dot_product_attention``.
(``nn.MultiheadAttention``'s boolean masks mean the opposite: True = blocked.)
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator

import torch
import torch.nn.functional as F
from torch import nn

from ._checks import (
    check_bias,
    check_floating,
    check_mask,
    check_positive_int,
    check_tensor,
    is_int,
)


def causal_mask(size: int, device: torch.device | str | None = None) -> torch.Tensor:
    """Boolean ``(size, size)`` mask, True on and below the diagonal.

    Row ``i`` is query position ``i``; it may attend to key positions ``0..i``.
    """
    check_positive_int("size", size)
    return torch.ones(size, size, dtype=torch.bool, device=device).tril()


def padding_mask(tokens: torch.Tensor, pad_id: int) -> torch.Tensor:
    """Boolean ``(batch, 1, 1, seq_len)`` mask, True where ``tokens`` is not padding.

    The two singleton dimensions broadcast over heads and query positions, so the
    mask can be passed straight to :class:`MultiHeadAttention`.
    """
    check_tensor("tokens", tokens, dim=2)
    if tokens.is_floating_point() or tokens.dtype == torch.bool:
        raise ValueError(f"tokens must hold integer ids, got dtype {tokens.dtype}")
    if not is_int(pad_id):
        raise ValueError(f"pad_id must be an int, got {pad_id!r}")
    return (tokens != pad_id)[:, None, None, :]


def _check_qkv(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor) -> None:
    for name, t in (("query", query), ("key", key), ("value", value)):
        check_tensor(name, t, min_dim=2)
        check_floating(name, t)
    if not (query.dtype == key.dtype == value.dtype):
        raise ValueError(
            f"query, key and value must share a dtype, got {query.dtype}, {key.dtype}, "
            f"{value.dtype}"
        )
    if query.shape[-1] != key.shape[-1]:
        raise ValueError(
            "query and key must have the same last dimension d_k, got query (..., "
            f"{query.shape[-1]}) "
            f"and key (..., {key.shape[-1]})"
        )
    if key.shape[-2] != value.shape[-2]:
        raise ValueError(
            "key and value must have the same number of positions T_k, got key "
            f"{tuple(key.shape)} "
            f"and value {tuple(value.shape)}"
        )


def scaled_dot_product_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor | None = None,
    *,
    bias: torch.Tensor | None = None,
    dropout_p: float = 0.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V, equation (1) of the paper.

    Args:
        query: ``(..., T_q, d_k)``.
        key: ``(..., T_k, d_k)``.
        value: ``(..., T_k, d_v)``.
        mask: optional boolean tensor broadcastable to ``(..., T_q, T_k)``;
            True = may attend. A query row that may attend to nothing gets all-zero
            weights and a zero output (never NaN).
        bias: optional float tensor broadcastable to ``(..., T_q, T_k)``, of the scores'
            dtype, added to the scaled scores before the mask and the softmax (ALiBi's
            linear biases, chapter 10). None in the paper.
        dropout_p: dropout applied to the attention weights (0 by default).

    Returns:
        ``(output, weights)`` with shapes ``(..., T_q, d_v)`` and ``(..., T_q, T_k)``.
        ``weights`` are the ones used for the output (after dropout, if any).
    """
    _check_qkv(query, key, value)
    d_k = query.shape[-1]
    scores = query @ key.transpose(-2, -1) / math.sqrt(d_k)  # (..., T_q, T_k)
    batch_shape = torch.broadcast_shapes(
        query.shape[:-2], key.shape[:-2], value.shape[:-2]
    )
    target = (*batch_shape, query.shape[-2], key.shape[-2])
    if bias is not None:
        scores = scores + check_bias(bias, target, scores.dtype)
    if mask is not None:
        check_mask(mask, target)
        # The most negative finite number, not -inf: a fully masked row then gives a
        # uniform softmax instead of NaN, and we zero it explicitly below.
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p)
    return weights @ value, weights


class MultiHeadAttention(nn.Module):
    """MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O (paper, section 3.2.2).

    ``head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)`` with
    ``d_k = d_v = d_model / num_heads``. The ``h`` per-head projections are stored as
    one ``(d_model, d_model)`` linear layer each for Q, K and V; a reshape splits them
    into heads.

    ``d_k`` given (table 3, row B of the paper) makes the queries and keys of each head
    ``d_k`` wide instead: ``W^Q`` and ``W^K`` are then ``(d_model, num_heads * d_k)``,
    while the values keep ``d_v = d_model / num_heads``.

    Two paths compute the same thing:

    * the explicit path (``fused=False``, the default) follows the equations;
    * the fused path (``fused=True``) calls ``F.scaled_dot_product_attention``,
      which is faster and lighter on memory but never forms the weights.

    The module keeps nothing from a forward pass. Ask for the attention weights as
    ``nn.MultiheadAttention`` does: ``forward(..., need_weights=True)`` returns
    ``(output, weights)``, the weights ``(batch, num_heads, T_q, T_k)`` per head (that
    call takes the explicit path, fused or not). :func:`capture_attention` asks every
    attention module of a model for them during one forward pass.
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        dropout: float = 0.0,
        *,
        fused: bool = False,
        d_k: int | None = None,
    ):
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_int("num_heads", num_heads)
        if d_k is not None:
            check_positive_int("d_k", d_k)
        if d_model % num_heads != 0:
            raise ValueError(
                f"d_model must be divisible by num_heads, got d_model={d_model} and "
                f"num_heads={num_heads} "
                f"(d_model % num_heads = {d_model % num_heads})"
            )
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_v = d_model // num_heads
        self.d_k = self.d_v if d_k is None else d_k
        self.w_q = nn.Linear(d_model, num_heads * self.d_k)
        self.w_k = nn.Linear(d_model, num_heads * self.d_k)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)
        self.dropout = dropout
        self.fused = fused

    def _split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """(batch, T, num_heads * width) -> (batch, num_heads, T, width).

        The width is d_k for Q and K, d_v for V.
        """
        batch, length, _ = x.shape
        return x.view(batch, length, self.num_heads, -1).transpose(1, 2)

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        mask: torch.Tensor | None = None,
        *,
        attn_bias: torch.Tensor | None = None,
        need_weights: bool = False,
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """Attend from ``query`` to ``key``/``value``.

        Args:
            query: ``(batch, T_q, d_model)``.
            key, value: ``(batch, T_k, d_model)``.
            mask: boolean, True = may attend, broadcastable to
                ``(batch, num_heads, T_q, T_k)``. A 3-D mask ``(batch, T_q, T_k)`` is
                read as one mask per batch element and shared across heads.
            attn_bias: optional float tensor of the inputs' dtype, broadcastable to
                ``(batch, num_heads, T_q, T_k)``, added to the scaled scores before the
                softmax (e.g. :func:`alibi_bias`, chapter 10). None in the paper.
            need_weights: also return the attention weights (see the class docstring).

        Returns:
            ``(batch, T_q, d_model)``; with ``need_weights=True``, that and the weights
            ``(batch, num_heads, T_q, T_k)``.
        """
        for name, t in (("query", query), ("key", key), ("value", value)):
            check_tensor(name, t, dim=3)
            check_floating(name, t)
            if t.shape[-1] != self.d_model:
                raise ValueError(
                    f"{name} must have last dimension d_model={self.d_model}, got "
                    f"shape {tuple(t.shape)} "
                    "(inputs are batch-first: (batch, seq_len, d_model))"
                )
        if not (query.shape[0] == key.shape[0] == value.shape[0]):
            raise ValueError(
                "query, key and value must share the batch size, "
                f"got {query.shape[0]}, {key.shape[0]}, {value.shape[0]}"
            )
        if key.shape[1] != value.shape[1]:
            raise ValueError(
                f"key and value must have the same length, got {tuple(key.shape)} and "
                f"{tuple(value.shape)}"
            )
        batch, t_q, t_k = query.shape[0], query.shape[1], key.shape[1]
        if mask is not None:
            if isinstance(mask, torch.Tensor) and mask.dim() == 3:
                # (batch, 1, T_q, T_k): same mask for every head
                mask = mask.unsqueeze(1)
            mask = check_mask(mask, (batch, self.num_heads, t_q, t_k))
        if attn_bias is not None:
            check_bias(attn_bias, (batch, self.num_heads, t_q, t_k), query.dtype)
        if not isinstance(need_weights, bool):
            raise ValueError(
                f"need_weights must be True or False, got {need_weights!r}"
            )

        k, v = self.project_kv(key, value)  # (batch, heads, T_k, d_k) each
        return self.attend(query, k, v, mask, attn_bias, need_weights=need_weights)

    def project_kv(
        self, key: torch.Tensor, value: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The keys and values of every head.

        ``(batch, T_k, d_model)`` -> ``(batch, heads, T_k, d_k)`` and
        ``(batch, heads, T_k, d_v)`` (``d_k = d_v`` unless ``d_k`` was given).

        What a key/value cache stores (chapter 8): the decoder's self-attention appends
        one position per step, its cross-attention projects the encoder output once.
        """
        return self._split_heads(self.w_k(key)), self._split_heads(self.w_v(value))

    def attend(
        self,
        query: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        mask: torch.Tensor | None = None,
        attn_bias: torch.Tensor | None = None,
        *,
        need_weights: bool = False,
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """``query`` ``(batch, T_q, d_model)`` attends to projected ``k`` and ``v``.

        ``k`` and ``v`` are ``(batch, heads, T_k, d_k)``.

        The second half of :meth:`forward`; the mask and the bias are used as given
        (already checked or built by the caller). Returns ``(batch, T_q, d_model)`` (and
        the weights with ``need_weights=True``).
        """
        q = self._split_heads(self.w_q(query))  # (batch, heads, T_q, d_k)
        return self.attend_heads(q, k, v, mask, attn_bias, need_weights=need_weights)

    # forward, attend and attend_heads share their trailing parameters: each is one
    # stage of the same computation and each is called on its own (the key/value cache
    # calls attend, a descendant overrides attend_heads).
    def attend_heads(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        mask: torch.Tensor | None = None,
        attn_bias: torch.Tensor | None = None,
        *,
        need_weights: bool = False,
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """Every head's attention, then W^O.

        ``q`` ``(batch, heads, T_q, d_k)`` and ``k``, ``v`` ``(batch, heads, T_k, d_k)``
        -> ``(batch, T_q, d_model)`` (and the weights ``(batch, heads, T_q, T_k)`` with
        ``need_weights=True``).

        The part of :meth:`attend` after the query projection, where a descendant can
        change the projected queries and keys first (rotary embeddings, chapter 10).
        """
        batch, t_q = q.shape[0], q.shape[2]
        p = self.dropout if self.training else 0.0

        weights = None
        if self.fused and not need_weights:
            attn_mask = mask
            # one additive float mask: the bias, and the most negative number where
            # masked
            if attn_bias is not None:
                blocked = torch.finfo(attn_bias.dtype).min
                attn_mask = (
                    attn_bias if mask is None else torch.where(mask, attn_bias, blocked)
                )
            out = F.scaled_dot_product_attention(
                q, k, v, attn_mask=attn_mask, dropout_p=p
            )
            if mask is not None:  # rows with nothing to attend to: zeros, not NaN
                out = out.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
        else:
            out, weights = scaled_dot_product_attention(
                q, k, v, mask, bias=attn_bias, dropout_p=p
            )

        # concatenate the heads
        out = out.transpose(1, 2).reshape(batch, t_q, self.d_model)
        return (self.w_o(out), weights) if need_weights else self.w_o(out)


@contextlib.contextmanager
def capture_attention(model: nn.Module) -> Iterator[dict[str, torch.Tensor]]:
    """Collect the attention weights of every :class:`MultiHeadAttention` in ``model``.

    Inside ``with capture_attention(model) as maps:`` each forward pass of an attention
    module is asked for its weights (``need_weights=True``, through a forward hook) and
    returns only its output as usual, so the model runs unchanged. ``maps`` then maps
    each module's name in ``model.named_modules()`` (for example
    ``"decoder.layers.0.cross_attn"``) to its last weights ``(batch, heads, T_q, T_k)``,
    detached. Nothing is recorded outside the ``with`` block: the hooks are removed on
    exit, also after an error.
    """
    if not isinstance(model, nn.Module):
        raise ValueError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    modules = {
        n: m for n, m in model.named_modules() if isinstance(m, MultiHeadAttention)
    }
    if not modules:
        raise ValueError(
            f"model has no MultiHeadAttention module ({type(model).__name__})"
        )
    maps: dict[str, torch.Tensor] = {}
    handles = []

    def ask(module, args, kwargs):
        return args, {**kwargs, "need_weights": True}

    for name, module in modules.items():

        def keep(module, args, kwargs, output, name=name):
            out, weights = output
            maps[name] = weights.detach()
            return out

        handles.append(module.register_forward_pre_hook(ask, with_kwargs=True))
        handles.append(module.register_forward_hook(keep, with_kwargs=True))
    try:
        yield maps
    finally:
        for handle in handles:
            handle.remove()
