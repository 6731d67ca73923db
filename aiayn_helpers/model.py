"""The full encoder-decoder Transformer (paper, figure 1)."""

from __future__ import annotations

import math

import torch
from torch import nn

from ._checks import (
    check_int_in_range,
    check_positive_int,
    check_tensor,
    check_token_ids,
)
from .attention import MultiHeadAttention, causal_mask, padding_mask
from .layers import Decoder, Encoder, KVCache
from .positional import LearnedPositionalEncoding, PositionalEncoding

# where the Transformer's positions come from (table 3, row E)
POSITIONAL = ("sinusoidal", "learned")


def init_weights(model: nn.Module, d_model: int) -> None:
    """Xavier for every matrix, N(0, d_model^-1/2) for the embeddings (parameters whose
    name contains ``embed``), so that an embedding times sqrt(d_model) has unit variance
    (as in tensor2tensor). Biases and LayerNorms keep PyTorch's initialisation.
    """
    for name, p in model.named_parameters():
        if p.dim() > 1:
            if "embed" in name:
                nn.init.normal_(p, mean=0.0, std=d_model**-0.5)
            else:
                nn.init.xavier_uniform_(p)


class Transformer(nn.Module):
    """Encoder-decoder Transformer that returns logits.

    ``forward(src, tgt)`` takes token ids ``src`` ``(batch, S)`` and ``tgt``
    ``(batch, T)`` (the decoder input, i.e. the target shifted right), builds the
    padding and causal masks itself and returns logits ``(batch, T, tgt_vocab_size)``.
    Never probabilities: the loss (cross-entropy) applies the log-softmax.

    Embeddings are multiplied by sqrt(d_model) (section 3.4). With
    ``share_embeddings=True`` the source embedding, the target embedding and the
    pre-softmax projection share one weight matrix, which requires one shared
    vocabulary (``src_vocab_size == tgt_vocab_size``).

    Two variants of the paper's table 3: ``d_k`` (row B) narrows each head's queries and
    keys, and ``positional="learned"`` (row E) replaces the sinusoidal table with a
    trained one of ``max_positions`` rows (:class:`LearnedPositionalEncoding`).
    """

    def __init__(
        self,
        src_vocab_size: int,
        tgt_vocab_size: int,
        d_model: int = 512,
        num_heads: int = 8,
        num_layers: int = 6,
        d_ff: int = 2048,
        dropout: float = 0.1,
        share_embeddings: bool = False,
        pad_id: int = 0,
        *,
        norm_first: bool = False,
        max_positions: int = 5000,
        fused: bool = False,
        d_k: int | None = None,
        positional: str = "sinusoidal",
    ):
        super().__init__()
        check_positive_int("src_vocab_size", src_vocab_size)
        check_positive_int("tgt_vocab_size", tgt_vocab_size)
        check_positive_int("d_model", d_model)
        if share_embeddings and src_vocab_size != tgt_vocab_size:
            raise ValueError(
                "share_embeddings=True needs one shared vocabulary, got "
                f"src_vocab_size={src_vocab_size} and tgt_vocab_size={tgt_vocab_size}"
            )
        check_int_in_range("pad_id", pad_id, 0, min(src_vocab_size, tgt_vocab_size))
        if positional not in POSITIONAL:
            raise ValueError(
                f"positional must be one of {POSITIONAL}, got {positional!r}"
            )
        self.src_vocab_size = src_vocab_size
        self.tgt_vocab_size = tgt_vocab_size
        self.d_model = d_model
        self.pad_id = pad_id
        self.share_embeddings = share_embeddings

        self.src_embed = nn.Embedding(src_vocab_size, d_model)
        self.tgt_embed = nn.Embedding(tgt_vocab_size, d_model)
        if positional == "learned":
            self.positional = LearnedPositionalEncoding(d_model, dropout, max_positions)
        else:
            self.positional = PositionalEncoding(d_model, dropout, max_positions)
        kw = dict(norm_first=norm_first, fused=fused, d_k=d_k)
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff, dropout, **kw)
        self.decoder = Decoder(num_layers, d_model, num_heads, d_ff, dropout, **kw)
        self.generator = nn.Linear(d_model, tgt_vocab_size, bias=False)
        self._reset_parameters()
        if share_embeddings:
            self.tgt_embed.weight = self.src_embed.weight
            self.generator.weight = self.src_embed.weight

    def _reset_parameters(self) -> None:
        init_weights(self, self.d_model)

    # -- the entry points ---------------------------------------------------------
    # encode and decode check the token ids they are given (a host synchronisation);
    # next_token_logits, the step of a decoding loop, checks nothing: the loop built its
    # input.
    def encode(self, src: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Everything decoding needs from the source ``src`` ``(batch, S)`` ids.

        Returns ``(memory, src_mask)``: the encoder output ``(batch, S, d_model)`` and
        the source padding mask ``(batch, 1, 1, S)`` (True = a real token) that the
        cross-attention applies to it.
        """
        check_token_ids("src", src, self.src_vocab_size)
        src_mask = padding_mask(src, self.pad_id)
        x = self.positional(self.src_embed(src) * math.sqrt(self.d_model))
        return self.encoder(x, src_mask), src_mask

    def decode(
        self, tgt: torch.Tensor, memory: torch.Tensor, src_mask: torch.Tensor
    ) -> torch.Tensor:
        """Logits ``(batch, T, tgt_vocab_size)`` for decoder input ``tgt``
        ``(batch, T)``.

        ``memory`` ``(batch, S, d_model)`` and ``src_mask`` ``(batch, 1, 1, S)`` are
        what :meth:`encode` returns.
        """
        check_token_ids("tgt", tgt, self.tgt_vocab_size)
        self._check_memory(tgt, memory, src_mask)
        return self._decode(tgt, memory, src_mask)

    def init_cache(self, memory: torch.Tensor, src_mask: torch.Tensor) -> KVCache:
        """An empty key/value cache for decoding from
        ``memory, src_mask = encode(src)``.

        The cross-attention keys and values of every decoder layer are projected from
        ``memory`` here, once; the self-attention part starts empty and grows by one
        position per :meth:`next_token_logits` call.
        """
        self._check_memory(None, memory, src_mask)
        return self.decoder.init_cache(memory, src_mask)

    def next_token_logits(
        self,
        tgt: torch.Tensor,
        memory: torch.Tensor,
        src_mask: torch.Tensor,
        cache: KVCache | None = None,
    ) -> torch.Tensor:
        """One decoding step: logits ``(batch, tgt_vocab_size)`` of the token that
        follows ``tgt``.

        ``tgt`` ``(batch, T)`` is every token generated so far, ``<bos>`` first. Without
        a ``cache`` the decoder is re-run over the whole prefix and the last position is
        read. With a ``cache`` (from :meth:`init_cache`, holding the first ``T - 1``
        positions) only the last token is run: its self-attention reads the cached keys
        and values, which it extends in place, and its cross-attention the cached memory
        projections. The two give the same logits. Unlike :meth:`decode` no token ids
        are checked (no host synchronisation per step): the decoding loop validated the
        source once and built ``tgt`` itself.
        """
        if cache is None:
            return self._decode(tgt, memory, src_mask)[:, -1]
        t = tgt.shape[1]
        if cache.length != t - 1 or cache.batch_size != tgt.shape[0]:
            raise ValueError(
                f"the cache must hold the {t - 1} positions before the last of tgt "
                f"{tuple(tgt.shape)} "
                f"for {tgt.shape[0]} sequences, it holds {cache.length} positions for "
                f"{cache.batch_size}"
            )
        # (batch, 1, d_model)
        y = self.positional(
            self.tgt_embed(tgt[:, -1:]) * math.sqrt(self.d_model), offset=t - 1
        )
        return self.generator(self.decoder.step(y, cache))[:, -1]

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        """``src`` ``(batch, S)``, ``tgt`` ``(batch, T)`` -> logits
        ``(batch, T, tgt_vocab_size)``."""
        memory, src_mask = self.encode(src)
        check_token_ids("tgt", tgt, self.tgt_vocab_size)
        if tgt.shape[0] != src.shape[0]:
            raise ValueError(
                f"src and tgt must share the batch size, got {src.shape[0]} and "
                f"{tgt.shape[0]}"
            )
        return self._decode(tgt, memory, src_mask)

    def _decode(
        self, tgt: torch.Tensor, memory: torch.Tensor, src_mask: torch.Tensor
    ) -> torch.Tensor:
        # (B, 1, T, T)
        tgt_mask = padding_mask(tgt, self.pad_id) & causal_mask(
            tgt.shape[1], device=tgt.device
        )
        y = self.positional(self.tgt_embed(tgt) * math.sqrt(self.d_model))
        return self.generator(self.decoder(y, memory, tgt_mask, src_mask))

    def _check_memory(
        self, tgt: torch.Tensor | None, memory: object, src_mask: object
    ) -> None:
        check_tensor("src_mask", src_mask, dim=4)
        assert isinstance(src_mask, torch.Tensor)
        batch, length = src_mask.shape[0], src_mask.shape[-1]
        if src_mask.dtype != torch.bool or src_mask.shape[1:3] != (1, 1):
            raise ValueError(
                "src_mask must be the boolean (batch, 1, 1, S) padding mask that "
                "encode() returns, "
                f"got dtype {src_mask.dtype} and shape {tuple(src_mask.shape)}"
            )
        check_tensor("memory", memory, dim=3)
        assert isinstance(memory, torch.Tensor)
        if memory.shape != (batch, length, self.d_model):
            raise ValueError(
                "memory must have shape (batch, S, d_model) = "
                f"{(batch, length, self.d_model)} "
                f"(from src_mask and d_model), got {tuple(memory.shape)}"
            )
        if tgt is not None and tgt.shape[0] != batch:
            raise ValueError(
                f"tgt and memory must share the batch size, got {tgt.shape[0]} and "
                f"{batch}"
            )

    def set_fused(self, fused: bool) -> None:
        """Switch every attention module between the explicit and the fused path
        (chapter 3)."""
        for m in self.modules():
            if isinstance(m, MultiHeadAttention):
                m.fused = fused
