"""After the paper (chapter 10): the Transformer's descendants, from the same blocks.

* Rotary position embeddings, RoPE (Su et al., "RoFormer", arXiv 2021, Neurocomputing
  2024): :func:`apply_rotary` turns each pair of query and key features by an angle
  proportional to the position, so that a score depends on the two positions only
  through their difference.
* ALiBi (Press et al., "Train Short, Test Long", 2022): :func:`alibi_slopes` and
  :func:`alibi_bias`, no position in the embeddings, a penalty on the scores that grows
  linearly with the distance, with one slope per head.
* :class:`RelativeAttention`: :class:`MultiHeadAttention` with one of the two inside.
* :class:`CausalLM`: a decoder-only language model (GPT, Radford et al. 2018, 2019):
  the paper's encoder stack under a causal mask, with :func:`lm_loss` to train it and
  :meth:`CausalLM.generate` to sample from it.
* :func:`mask_tokens`: BERT's masked-language-model corruption (Devlin et al. 2019).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ._checks import (
    check_floating,
    check_int_in_range,
    check_positive_int,
    check_tensor,
    check_token_ids,
    is_int,
)
from .attention import MultiHeadAttention, causal_mask
from .layers import Encoder
from .model import init_weights
from .positional import PositionalEncoding

POSITIONAL = ("sinusoidal", "learned", "rope", "alibi")


# -- rotary position embedding (RoPE) --------------------------------------------------


def apply_rotary(
    x: torch.Tensor, positions: torch.Tensor | None = None, base: float = 10000.0
) -> torch.Tensor:
    """Rotary position embedding (Su et al. 2024, "RoFormer", equation 34).

    ``(batch, heads, T, d_k)`` -> the same shape.

    Features ``2j`` and ``2j + 1`` of the vector at position ``m`` are one point of the
    plane, turned by the angle ``m * theta_j`` with ``theta_j = base^(-2j / d_k)``: as
    complex numbers, ``x_j * exp(i m theta_j)``. Applied to queries and keys (never to
    values), it makes ``<RoPE(q, m), RoPE(k, n)>`` a function of ``m - n`` alone. The
    frequencies are the paper's sinusoid's (section 3.5), used as angles instead of
    added.

    Args:
        x: queries or keys ``(batch, heads, T, d_k)``, ``d_k`` even.
        positions: ``(T,)`` positions of the ``T`` rows (default ``0, 1, ..., T - 1``).
        base: the ``10000`` of the frequencies.
    """
    check_tensor("x", x, dim=4)
    check_floating("x", x)
    length, d_k = x.shape[-2], x.shape[-1]
    if d_k % 2 != 0:
        raise ValueError(
            "rotary embeddings turn pairs of features: d_k must be even, got shape "
            f"{tuple(x.shape)}"
        )
    if isinstance(base, bool) or not isinstance(base, (int, float)) or base <= 0:
        raise ValueError(f"base must be a number > 0, got {base!r}")
    if positions is None:
        positions = torch.arange(length, device=x.device)
    check_tensor("positions", positions, dim=1)
    if positions.shape[0] != length:
        raise ValueError(
            f"positions must have shape (T,) = ({length},) for x {tuple(x.shape)}, got "
            f"{tuple(positions.shape)}"
        )
    # the angles, at least in float32
    dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    # (d_k / 2,)
    theta = base ** (-torch.arange(0, d_k, 2, dtype=dtype, device=x.device) / d_k)
    angles = positions.to(dtype)[:, None] * theta  # (T, d_k / 2)
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    # the two coordinates of each pair, (batch, heads, T, d_k / 2)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)


# -- ALiBi -----------------------------------------------------------------------------


def alibi_slopes(num_heads: int) -> torch.Tensor:
    """ALiBi's head-specific slopes ``m`` (Press et al. 2022, section 3), float64.

    Shape ``(num_heads,)``.

    For ``n`` heads, a power of two, the geometric sequence that starts at ``2^(-8/n)``
    with that ratio: ``1/2, 1/4, ..., 1/256`` for 8 heads. For other head counts, the
    paper's rule: the slopes of the largest power of two below ``n``, then every other
    slope of twice that power for the heads left over (12 heads: the 8 slopes of 8
    heads, then ``2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5``).
    """
    check_positive_int("num_heads", num_heads)

    def geometric(n: int) -> torch.Tensor:  # n a power of two
        return 2.0 ** (-8.0 / n * torch.arange(1, n + 1, dtype=torch.float64))

    power = 2 ** math.floor(math.log2(num_heads))
    if power == num_heads:
        return geometric(num_heads)
    return torch.cat(
        [geometric(power), geometric(2 * power)[0::2][: num_heads - power]]
    )


def alibi_bias(
    num_heads: int,
    t_q: int,
    t_k: int,
    *,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """ALiBi's additive bias ``-m_h * (i - j)`` (Press et al. 2022, section 3).

    Shape ``(num_heads, t_q, t_k)``.

    Query ``i`` sits at position ``t_k - t_q + i`` (the last ``t_q`` of the ``t_k``
    keys, as in cached decoding; ``i`` itself when ``t_q == t_k``). The bias is 0 on the
    diagonal and falls by ``m_h`` per position into the past. It is meant for causal
    attention: the future (``j > i``) gets a positive bias that the causal mask must
    remove. It broadcasts over the batch as ``attn_bias`` of
    :class:`MultiHeadAttention`.
    """
    check_positive_int("num_heads", num_heads)
    check_positive_int("t_q", t_q)
    check_positive_int("t_k", t_k)
    if t_q > t_k:
        raise ValueError(
            f"t_q must be <= t_k (the queries are the last t_q keys), got t_q={t_q} "
            f"and t_k={t_k}"
        )
    query_pos = torch.arange(t_k - t_q, t_k, dtype=torch.float64)[:, None]  # (t_q, 1)
    key_pos = torch.arange(t_k, dtype=torch.float64)[None, :]  # (1, t_k)
    # (heads, t_q, t_k)
    bias = -alibi_slopes(num_heads)[:, None, None] * (query_pos - key_pos)
    return bias.to(dtype=dtype, device=device)


# -- attention with the positions inside -----------------------------------------------


class RelativeAttention(MultiHeadAttention):
    """:class:`MultiHeadAttention` whose scores see relative positions (chapter 10).

    RoPE or ALiBi.

    ``positional="rope"`` rotates every head's queries and keys with
    :func:`apply_rotary` before the scores; ``positional="alibi"`` adds
    :func:`alibi_bias` to them. The keys are at positions ``0 .. T_k - 1`` and the
    queries are the last ``T_q`` of them (self-attention, or a cached step). Same
    parameters, same ``forward(query, key, value, mask, *, attn_bias, need_weights)``.
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        dropout: float = 0.0,
        *,
        positional: str,
        fused: bool = False,
    ):
        super().__init__(d_model, num_heads, dropout, fused=fused)
        if positional not in ("rope", "alibi"):
            raise ValueError(
                f"positional must be 'rope' or 'alibi', got {positional!r}"
            )
        if positional == "rope" and self.d_k % 2 != 0:
            raise ValueError(
                "rotary embeddings need an even d_k = d_model / num_heads, got "
                f"d_k={self.d_k}"
            )
        self.positional = positional

    # The parameters repeat MultiHeadAttention.attend_heads's: an override keeps its
    # signature.
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
        """Rotate ``q`` and ``k``, or add ALiBi's bias, then attend.

        ``q`` ``(batch, heads, T_q, d_k)`` and ``k`` ``(batch, heads, T_k, d_k)``;
        then attend as :class:`MultiHeadAttention` does: -> ``(batch, T_q, d_model)``
        (and the weights with ``need_weights=True``)."""
        t_q, t_k = q.shape[2], k.shape[2]
        if self.positional == "rope":
            q = apply_rotary(q, torch.arange(t_k - t_q, t_k, device=q.device))
            k = apply_rotary(k)
        else:
            alibi = alibi_bias(self.num_heads, t_q, t_k, dtype=q.dtype, device=q.device)
            attn_bias = alibi if attn_bias is None else attn_bias + alibi
        return super().attend_heads(q, k, v, mask, attn_bias, need_weights=need_weights)


# -- a decoder-only language model (GPT) -----------------------------------------------


class CausalLM(nn.Module):
    """A decoder-only Transformer language model, as in GPT (Radford et al. 2018, 2019).

    ``forward(ids)`` takes token ids ``(batch, T)`` and returns logits
    ``(batch, T, vocab_size)``, position ``t``'s predicting token ``t + 1``. The body is
    the paper's :class:`Encoder`: self-attention under a causal mask, with no
    cross-attention, is all a decoder-only model needs. Embeddings are multiplied by
    sqrt(d_model) (section 3.4); with ``tie_embeddings`` the output projection shares
    their weight (Press and Wolf 2017).

    ``positional`` says where the positions come from: ``"sinusoidal"`` (the paper's
    table) or ``"learned"`` (GPT's embedding table), both added to the embeddings and
    limited to ``max_positions`` positions; or ``"rope"`` / ``"alibi"`` inside attention
    (:class:`RelativeAttention`), with no length limit. ``norm_first=True`` (pre-norm,
    GPT-2's choice) ends the stack with a LayerNorm. There is no padding mask: under the
    causal mask, padding at the end of a sequence is never seen by the tokens before it,
    and :func:`lm_loss` ignores the predictions of padding.
    """

    # The sizes are named, ordered and defaulted as Transformer's (the paper's base
    # model).
    def __init__(
        self,
        vocab_size: int,
        d_model: int = 512,
        num_heads: int = 8,
        num_layers: int = 6,
        d_ff: int = 2048,
        dropout: float = 0.1,
        max_positions: int = 1024,
        *,
        positional: str = "learned",
        norm_first: bool = True,
        tie_embeddings: bool = True,
        fused: bool = False,
    ):
        super().__init__()
        check_positive_int("vocab_size", vocab_size)
        check_positive_int("d_model", d_model)
        check_positive_int("max_positions", max_positions)
        if positional not in POSITIONAL:
            raise ValueError(
                f"positional must be one of {POSITIONAL}, got {positional!r}"
            )
        self.vocab_size = vocab_size
        self.d_model = d_model
        self.max_positions = max_positions
        self.positional = positional

        self.embed = nn.Embedding(vocab_size, d_model)
        if positional == "sinusoidal":
            self.pos_encoding = PositionalEncoding(d_model, 0.0, max_positions)
        elif positional == "learned":
            self.pos_embed = nn.Embedding(max_positions, d_model)
        self.dropout = nn.Dropout(dropout)
        self.encoder = Encoder(
            num_layers,
            d_model,
            num_heads,
            d_ff,
            dropout,
            norm_first=norm_first,
            fused=fused,
        )
        if positional in ("rope", "alibi"):
            for layer in self.encoder.layers:
                layer.self_attn = RelativeAttention(
                    d_model, num_heads, dropout, positional=positional, fused=fused
                )
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self._reset_parameters()
        if tie_embeddings:
            self.lm_head.weight = self.embed.weight

    def _reset_parameters(self) -> None:
        init_weights(self, self.d_model)  # as the package's Transformer

    @property
    def has_length_limit(self) -> bool:
        """True when the positions come from a table of ``max_positions`` rows."""
        return self.positional in ("sinusoidal", "learned")

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """``ids`` ``(batch, T)`` -> logits ``(batch, T, vocab_size)``."""
        check_token_ids("ids", ids, self.vocab_size)
        length = ids.shape[1]
        if self.has_length_limit and length > self.max_positions:
            raise ValueError(
                f"ids of length {length} exceed max_positions={self.max_positions} of "
                f"the {self.positional} positions; "
                "build CausalLM with a larger max_positions, or with positional='rope' "
                "or 'alibi'"
            )
        x = self.embed(ids) * math.sqrt(self.d_model)  # (batch, T, d_model)
        if self.positional == "sinusoidal":
            x = self.pos_encoding(x)
        elif self.positional == "learned":
            x = x + self.pos_embed(torch.arange(length, device=ids.device))
        x = self.encoder(self.dropout(x), causal_mask(length, device=ids.device))
        return self.lm_head(x)

    @torch.no_grad()
    def generate(
        self,
        ids: torch.Tensor,
        max_new_tokens: int,
        temperature: float = 1.0,
        top_k: int | None = None,
        generator: torch.Generator | None = None,
    ) -> torch.Tensor:
        """Sample ``max_new_tokens`` tokens after the prompt ``ids`` ``(batch, T)``.

        Returns ``(batch, T + max_new_tokens)``.

        Each step runs the model over the sequence so far (the last ``max_positions``
        tokens for the table positions), divides the last logits by ``temperature``,
        keeps the ``top_k`` largest (all if None) and draws from their softmax with
        ``generator``. ``top_k=1`` is greedy decoding. Call ``model.eval()`` first, as
        for any inference.
        """
        check_token_ids("ids", ids, self.vocab_size)
        if not is_int(max_new_tokens) or max_new_tokens < 0:
            raise ValueError(
                f"max_new_tokens must be an int >= 0, got {max_new_tokens!r}"
            )
        if (
            isinstance(temperature, bool)
            or not isinstance(temperature, (int, float))
            or temperature <= 0
        ):
            raise ValueError(f"temperature must be a number > 0, got {temperature!r}")
        if top_k is not None:
            check_positive_int("top_k", top_k)
        for _ in range(max_new_tokens):
            context = ids[:, -self.max_positions :] if self.has_length_limit else ids
            logits = self(context)[:, -1] / temperature  # (batch, vocab_size)
            if top_k is not None:
                # (batch, 1)
                kth = torch.topk(logits, min(top_k, self.vocab_size)).values[:, -1:]
                logits = logits.masked_fill(logits < kth, float("-inf"))
            # (batch, 1)
            next_id = torch.multinomial(
                torch.softmax(logits, dim=-1), 1, generator=generator
            )
            ids = torch.cat([ids, next_id], dim=1)
        return ids


def lm_loss(
    logits: torch.Tensor, ids: torch.Tensor, pad_id: int | None = None
) -> torch.Tensor:
    """Next-token cross-entropy of a causal language model, a scalar.

    Radford et al. 2018, equation 1.

    ``logits`` ``(batch, T, vocab_size)`` are :class:`CausalLM`'s for ``ids``
    ``(batch, T)``: position ``t`` predicts ``ids[:, t + 1]``, so the last position
    predicts nothing and the mean is over the ``T - 1`` targets of every row, those
    equal to ``pad_id`` left out.
    """
    check_tensor("logits", logits, dim=3)
    check_floating("logits", logits)
    check_tensor("ids", ids, dim=2)
    if logits.shape[:2] != ids.shape:
        raise ValueError(
            f"logits (batch, T, vocab_size) and ids (batch, T) must share batch and T, "
            f"got {tuple(logits.shape)} and {tuple(ids.shape)}"
        )
    if ids.shape[1] < 2:
        raise ValueError(
            "ids need at least 2 positions (one to read, one to predict), got "
            f"{tuple(ids.shape)}"
        )
    if pad_id is not None and not is_int(pad_id):
        raise ValueError(f"pad_id must be an int or None, got {pad_id!r}")
    vocab_size = logits.shape[-1]
    predictions = logits[:, :-1].reshape(-1, vocab_size)  # positions 0 .. T-2
    targets = ids[:, 1:].reshape(-1)  # tokens 1 .. T-1
    return F.cross_entropy(
        predictions, targets, ignore_index=-100 if pad_id is None else pad_id
    )


# -- BERT's masked language model ------------------------------------------------------


def mask_tokens(
    ids: torch.Tensor,
    vocab_size: int,
    mask_id: int,
    special_ids: list[int] | tuple[int, ...] = (),
    p: float = 0.15,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT's masked-LM corruption (Devlin et al. 2019, section 3.1).

    ``ids`` ``(batch, T)`` -> ``(inputs, labels)``.

    Each token that is not in ``special_ids`` is chosen for prediction with probability
    ``p`` (15% in the paper). A chosen token is replaced by ``mask_id`` 80% of the time,
    by a random token of the vocabulary 10% of the time, and left as it is 10% of the
    time. ``labels`` ``(batch, T)`` hold the original id where a token was chosen and
    ``-100`` (the ``ignore_index`` of ``F.cross_entropy``) elsewhere; ``inputs``
    ``(batch, T)`` is the corrupted sequence. ``generator`` must live on ``ids``'
    device.
    """
    check_token_ids("ids", ids, vocab_size)
    check_int_in_range("mask_id", mask_id, 0, vocab_size)
    for s in special_ids:
        check_int_in_range("each of special_ids", s, 0, vocab_size)
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
        raise ValueError(f"p must be a probability in [0, 1], got {p!r}")
    special = torch.tensor(list(special_ids), dtype=ids.dtype, device=ids.device)
    chosen = (
        torch.rand(ids.shape, generator=generator, device=ids.device) < p
    ) & ~torch.isin(ids, special)
    labels = ids.masked_fill(~chosen, -100)
    # which of the three fates
    r = torch.rand(ids.shape, generator=generator, device=ids.device)
    random_ids = torch.randint(
        vocab_size, ids.shape, generator=generator, device=ids.device, dtype=ids.dtype
    )
    inputs = torch.where(chosen & (r < 0.8), mask_id, ids)
    inputs = torch.where(chosen & (r >= 0.8) & (r < 0.9), random_ids, inputs)
    return inputs, labels
