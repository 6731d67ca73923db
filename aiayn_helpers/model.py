"""The full encoder-decoder Transformer (paper, figure 1)."""

from __future__ import annotations

import math

import torch
from torch import nn

from ._checks import check_positive_int, check_token_ids
from .attention import MultiHeadAttention, causal_mask, padding_mask
from .layers import Decoder, Encoder
from .positional import PositionalEncoding


class Transformer(nn.Module):
    """Encoder-decoder Transformer that returns logits.

    ``forward(src, tgt)`` takes token ids ``src`` ``(batch, S)`` and ``tgt`` ``(batch, T)``
    (the decoder input, i.e. the target shifted right), builds the padding and
    causal masks itself and returns logits ``(batch, T, tgt_vocab_size)``.
    Never probabilities: the loss (cross-entropy) applies the log-softmax.

    Embeddings are multiplied by sqrt(d_model) (section 3.4). With
    ``share_embeddings=True`` the source embedding, the target embedding and the
    pre-softmax projection share one weight matrix, which requires one shared
    vocabulary (``src_vocab_size == tgt_vocab_size``).
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
        max_len: int = 5000,
        fused: bool = False,
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
        if (
            isinstance(pad_id, bool)
            or not isinstance(pad_id, int)
            or not (0 <= pad_id < min(src_vocab_size, tgt_vocab_size))
        ):
            raise ValueError(f"pad_id must be an int in [0, {min(src_vocab_size, tgt_vocab_size)}), got {pad_id!r}")
        self.src_vocab_size = src_vocab_size
        self.tgt_vocab_size = tgt_vocab_size
        self.d_model = d_model
        self.pad_id = pad_id
        self.share_embeddings = share_embeddings

        self.src_embed = nn.Embedding(src_vocab_size, d_model)
        self.tgt_embed = nn.Embedding(tgt_vocab_size, d_model)
        self.positional = PositionalEncoding(d_model, dropout, max_len)
        kw = dict(norm_first=norm_first, fused=fused)
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff, dropout, **kw)
        self.decoder = Decoder(num_layers, d_model, num_heads, d_ff, dropout, **kw)
        self.generator = nn.Linear(d_model, tgt_vocab_size, bias=False)
        self._reset_parameters()
        if share_embeddings:
            self.tgt_embed.weight = self.src_embed.weight
            self.generator.weight = self.src_embed.weight

    def _reset_parameters(self) -> None:
        # Xavier for every matrix, N(0, d_model^-1/2) for embeddings so that the
        # embedding times sqrt(d_model) has unit variance (as in tensor2tensor).
        for name, p in self.named_parameters():
            if p.dim() > 1:
                if "embed" in name:
                    nn.init.normal_(p, mean=0.0, std=self.d_model**-0.5)
                else:
                    nn.init.xavier_uniform_(p)

    # -- the three entry points -------------------------------------------------
    def encode(self, src: torch.Tensor) -> torch.Tensor:
        """``src`` ``(batch, S)`` ids -> memory ``(batch, S, d_model)``."""
        check_token_ids("src", src, self.src_vocab_size)
        x = self.positional(self.src_embed(src) * math.sqrt(self.d_model))
        return self.encoder(x, padding_mask(src, self.pad_id))

    def decode(self, tgt: torch.Tensor, memory: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
        """Logits ``(batch, T, tgt_vocab_size)`` for decoder input ``tgt`` ``(batch, T)``.

        ``memory`` is :meth:`encode` of ``src``; ``src`` is needed for its padding mask.
        """
        check_token_ids("tgt", tgt, self.tgt_vocab_size)
        check_token_ids("src", src, self.src_vocab_size)
        if memory.dim() != 3 or memory.shape[:2] != src.shape or memory.shape[-1] != self.d_model:
            raise ValueError(
                f"memory must have shape (batch, S, d_model) = {(*src.shape, self.d_model)}, got {tuple(memory.shape)}"
            )
        if tgt.shape[0] != src.shape[0]:
            raise ValueError(f"src and tgt must share the batch size, got {src.shape[0]} and {tgt.shape[0]}")
        length = tgt.shape[1]
        tgt_mask = padding_mask(tgt, self.pad_id) & causal_mask(length, device=tgt.device)  # (B, 1, T, T)
        y = self.positional(self.tgt_embed(tgt) * math.sqrt(self.d_model))
        y = self.decoder(y, memory, tgt_mask, padding_mask(src, self.pad_id))
        return self.generator(y)

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        """``src`` ``(batch, S)``, ``tgt`` ``(batch, T)`` -> logits ``(batch, T, tgt_vocab_size)``."""
        return self.decode(tgt, self.encode(src), src)

    def set_fused(self, fused: bool) -> None:
        """Switch every attention module between the explicit and the fused path."""
        for m in self.modules():
            if isinstance(m, MultiHeadAttention):
                m.fused = fused
