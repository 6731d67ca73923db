"""Copy weights from PyTorch's reference modules into ours.

Used by the tests and the chapters to prove, in float64, that our modules compute
exactly what ``torch.nn`` computes. Each function copies in place and returns ``ours``.
"""

from __future__ import annotations

import torch
from torch import nn

from ..attention import MultiHeadAttention
from ..layers import (
    Decoder,
    DecoderLayer,
    Encoder,
    EncoderLayer,
    PositionwiseFeedForward,
)


def _copy(dst: torch.Tensor, src: torch.Tensor) -> None:
    if dst.shape != src.shape:
        raise ValueError(
            f"cannot copy a weight of shape {tuple(src.shape)} into one of shape "
            f"{tuple(dst.shape)}"
        )
    dst.copy_(src)


@torch.no_grad()
def copy_mha_from_torch(
    ours: MultiHeadAttention, ref: nn.MultiheadAttention
) -> MultiHeadAttention:
    """Copy ``nn.MultiheadAttention``'s weights into ours.

    It packs W^Q, W^K, W^V into one ``in_proj_weight`` (3 d_model, d_model).
    """
    if ref.in_proj_weight is None or ref.in_proj_bias is None:
        raise ValueError(
            "only nn.MultiheadAttention with equal q/k/v sizes and bias=True is "
            "supported"
        )
    if ref.num_heads != ours.num_heads:
        raise ValueError(
            f"head counts differ: ours {ours.num_heads}, reference {ref.num_heads}"
        )
    for lin, w, b in zip(
        (ours.w_q, ours.w_k, ours.w_v),
        ref.in_proj_weight.chunk(3),
        ref.in_proj_bias.chunk(3),
    ):
        _copy(lin.weight, w)
        _copy(lin.bias, b)
    _copy(ours.w_o.weight, ref.out_proj.weight)
    _copy(ours.w_o.bias, ref.out_proj.bias)
    return ours


@torch.no_grad()
def _copy_linear_norms(ours: nn.Module, ref: nn.Module, names: tuple[str, ...]) -> None:
    for name in names:
        _copy(getattr(ours, name).weight, getattr(ref, name).weight)
        _copy(getattr(ours, name).bias, getattr(ref, name).bias)


@torch.no_grad()
def _copy_ff(ours: PositionwiseFeedForward, ref: nn.Module) -> None:
    _copy_linear_norms(ours, ref, ("linear1", "linear2"))


@torch.no_grad()
def copy_encoder_layer_from_torch(
    ours: EncoderLayer, ref: nn.TransformerEncoderLayer
) -> EncoderLayer:
    copy_mha_from_torch(ours.self_attn, ref.self_attn)
    _copy_ff(ours.ff, ref)
    _copy_linear_norms(ours, ref, ("norm1", "norm2"))
    return ours


@torch.no_grad()
def copy_decoder_layer_from_torch(
    ours: DecoderLayer, ref: nn.TransformerDecoderLayer
) -> DecoderLayer:
    copy_mha_from_torch(ours.self_attn, ref.self_attn)
    copy_mha_from_torch(ours.cross_attn, ref.multihead_attn)
    _copy_ff(ours.ff, ref)
    _copy_linear_norms(ours, ref, ("norm1", "norm2", "norm3"))
    return ours


@torch.no_grad()
def copy_stack_from_torch(
    ours: Encoder | Decoder, ref: nn.TransformerEncoder | nn.TransformerDecoder
) -> Encoder | Decoder:
    """Copy every layer of an ``nn.TransformerEncoder``/``Decoder``.

    And its final norm, if both have one.
    """
    if len(ours.layers) != len(ref.layers):
        raise ValueError(
            f"layer counts differ: ours {len(ours.layers)}, reference {len(ref.layers)}"
        )
    copy_layer = (
        copy_encoder_layer_from_torch
        if isinstance(ours, Encoder)
        else copy_decoder_layer_from_torch
    )
    for mine, theirs in zip(ours.layers, ref.layers):
        copy_layer(mine, theirs)
    if isinstance(ours.norm, nn.LayerNorm) != isinstance(ref.norm, nn.LayerNorm):
        raise ValueError("one stack has a final LayerNorm and the other does not")
    if isinstance(ours.norm, nn.LayerNorm):
        _copy_linear_norms(ours, ref, ("norm",))
    return ours
