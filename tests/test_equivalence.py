"""Each module of the package equals its PyTorch reference in float64, by weight copying."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import aiayn_helpers as ah
from aiayn_helpers.course.reference import (
    copy_decoder_layer_from_torch,
    copy_encoder_layer_from_torch,
    copy_mha_from_torch,
    copy_stack_from_torch,
)

TOL = dict(rtol=1e-10, atol=1e-10)
D, H, FF = 32, 4, 64


def f64(*shape):
    return torch.randn(*shape, dtype=torch.float64)


def lengths_to_pad(lengths, total):
    """True = padding, the convention of nn.MultiheadAttention and nn.Transformer*."""
    return torch.arange(total)[None, :] >= torch.tensor(lengths)[:, None]


def nn_transformer(ref, src, tgt, src_pad, tgt_pad):
    """nn.Transformer with causal and padding masks, given in its own True = blocked convention."""
    return ref(
        src,
        tgt,
        tgt_mask=~ah.causal_mask(tgt.shape[1]),
        src_key_padding_mask=src_pad,
        tgt_key_padding_mask=tgt_pad,
        memory_key_padding_mask=src_pad,
    )


@pytest.mark.parametrize("mask_kind", [None, "causal", "random"])
def test_sdpa_matches_torch(mask_kind):
    q, k, v = f64(2, 3, 5, 8), f64(2, 3, 7, 8), f64(2, 3, 7, 6)
    mask = None
    if mask_kind == "causal":
        q, k, v = f64(2, 3, 7, 8), f64(2, 3, 7, 8), f64(2, 3, 7, 6)
        mask = ah.causal_mask(7)
    elif mask_kind == "random":
        mask = torch.rand(2, 1, 5, 7) > 0.3
        mask[..., 0] = True  # every query may attend somewhere
    out, w = ah.scaled_dot_product_attention(q, k, v, mask)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(out, ref, **TOL)
    torch.testing.assert_close(w.sum(-1), torch.ones_like(w.sum(-1)), **TOL)


def test_sdpa_matches_formula():
    q, k, v = f64(4, 5), f64(6, 5), f64(6, 3)
    expected = torch.softmax(q @ k.T / 5**0.5, dim=-1) @ v
    torch.testing.assert_close(ah.scaled_dot_product_attention(q, k, v)[0], expected, **TOL)


@pytest.mark.parametrize("fused", [False, True])
def test_mha_matches_nn_multiheadattention(fused):
    ours = ah.MultiHeadAttention(D, H, fused=fused).double().eval()
    ref = nn.MultiheadAttention(D, H, batch_first=True).double().eval()
    copy_mha_from_torch(ours, ref)
    q, kv = f64(3, 5, D), f64(3, 9, D)
    pad = lengths_to_pad([9, 6, 2], 9)
    got = ours(q, kv, kv, mask=~pad[:, None, None, :])
    want, _ = ref(q, kv, kv, key_padding_mask=pad)
    torch.testing.assert_close(got, want, **TOL)
    # self-attention with a causal mask (nn: True = blocked, so the complement)
    x = f64(2, 6, D)
    got = ours(x, x, x, mask=ah.causal_mask(6))
    want, _ = ref(x, x, x, attn_mask=~ah.causal_mask(6))
    torch.testing.assert_close(got, want, **TOL)


def test_fused_and_explicit_paths_are_equal():
    explicit = ah.MultiHeadAttention(D, H).double().eval()
    fused = ah.MultiHeadAttention(D, H, fused=True).double().eval()
    fused.load_state_dict(explicit.state_dict())
    x = f64(2, 7, D).requires_grad_()
    mask = ah.causal_mask(7)
    a, b = explicit(x, x, x, mask), fused(x, x, x, mask)
    torch.testing.assert_close(a, b, **TOL)
    (ga,) = torch.autograd.grad(a.square().sum(), x)
    (gb,) = torch.autograd.grad(b.square().sum(), x)
    torch.testing.assert_close(ga, gb, **TOL)
    assert not any(isinstance(v, torch.Tensor) for v in vars(explicit).values()), "the module keeps nothing"


@pytest.mark.parametrize("fused", [False, True])
def test_need_weights_returns_torchs_per_head_weights(fused):
    """``need_weights=True`` as in nn.MultiheadAttention (per head): same output, same weights."""
    torch.manual_seed(0)
    ref = nn.MultiheadAttention(D, H, batch_first=True).double().eval()
    ours = copy_mha_from_torch(ah.MultiHeadAttention(D, H, fused=fused), ref).double().eval()
    q, kv = f64(2, 5, D), f64(2, 7, D)
    keep = torch.rand(2, 5, 7, generator=torch.Generator().manual_seed(1)) > 0.3
    keep[..., 0] = True  # every query may attend somewhere
    out, weights = ours(q, kv, kv, keep, need_weights=True)
    ref_out, ref_weights = ref(
        q, kv, kv, attn_mask=~keep.repeat_interleave(H, 0), need_weights=True, average_attn_weights=False
    )
    torch.testing.assert_close(out, ref_out, **TOL)
    torch.testing.assert_close(weights, ref_weights, **TOL)
    torch.testing.assert_close(out, ours(q, kv, kv, keep), **TOL)  # asking changes nothing else
    with pytest.raises(ValueError, match="need_weights must be True or False"):
        ours(q, kv, kv, need_weights="yes")


def test_capture_attention_collects_every_map_and_leaves_no_hook():
    model = ah.Transformer(11, 11, d_model=D, num_heads=H, num_layers=2, d_ff=FF, dropout=0.0, fused=True)
    model = model.double().eval()
    src, tgt = torch.tensor([[4, 5, 6, 2, 0]]), torch.tensor([[1, 7, 8]])
    plain = model(src, tgt)
    with ah.capture_attention(model) as maps:
        captured = model(src, tgt)
    torch.testing.assert_close(captured, plain, **TOL)
    assert sorted(maps) == sorted(
        f"{side}.layers.{i}.{kind}"
        for i in range(2)
        for side, kind in [("encoder", "self_attn"), ("decoder", "self_attn"), ("decoder", "cross_attn")]
    )
    assert maps["encoder.layers.0.self_attn"].shape == (1, H, 5, 5)
    assert maps["decoder.layers.1.cross_attn"].shape == (1, H, 3, 5)
    assert torch.all(maps["decoder.layers.1.cross_attn"][..., 4] == 0), "<pad> gets no weight"
    assert torch.all(maps["decoder.layers.0.self_attn"].triu(1) == 0), "no look at the future"
    sums = maps["decoder.layers.0.self_attn"].sum(-1)
    torch.testing.assert_close(sums, torch.ones_like(sums), **TOL)
    assert not any(m._forward_hooks or m._forward_pre_hooks for m in model.modules())
    with pytest.raises(ValueError, match="no MultiHeadAttention"):
        with ah.capture_attention(nn.Linear(2, 2)):
            pass


def test_encoder_layer_matches_torch():
    ours = ah.EncoderLayer(D, H, FF, dropout=0.0).double().eval()
    ref = nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, batch_first=True).double().eval()
    copy_encoder_layer_from_torch(ours, ref)
    x = f64(3, 8, D)
    pad = lengths_to_pad([8, 5, 3], 8)
    got = ours(x, ~pad[:, None, None, :])
    want = ref(x, src_key_padding_mask=pad)
    keep = ~pad  # nn's fast path may zero padded rows; compare real positions
    torch.testing.assert_close(got[keep], want[keep], **TOL)


def test_pre_norm_encoder_layer_matches_torch():
    ours = ah.EncoderLayer(D, H, FF, dropout=0.0, norm_first=True).double().eval()
    ref = nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, batch_first=True, norm_first=True).double().eval()
    copy_encoder_layer_from_torch(ours, ref)
    x = f64(2, 5, D)
    torch.testing.assert_close(ours(x), ref(x), **TOL)


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_matches_torch(norm_first):
    ours = ah.DecoderLayer(D, H, FF, dropout=0.0, norm_first=norm_first).double().eval()
    ref = nn.TransformerDecoderLayer(D, H, FF, dropout=0.0, batch_first=True, norm_first=norm_first)
    ref = ref.double().eval()
    copy_decoder_layer_from_torch(ours, ref)
    y, mem = f64(2, 6, D), f64(2, 9, D)
    src_pad = lengths_to_pad([9, 4], 9)
    got = ours(y, mem, ah.causal_mask(6), ~src_pad[:, None, None, :])
    want = ref(y, mem, tgt_mask=~ah.causal_mask(6), memory_key_padding_mask=src_pad)
    torch.testing.assert_close(got, want, **TOL)


def test_encoder_decoder_stack_matches_nn_transformer():
    n = 3
    ref = nn.Transformer(D, H, n, n, FF, dropout=0.0, batch_first=True).double().eval()
    # nn.Transformer always ends each stack with a LayerNorm; so do ours with final_norm=True.
    enc = ah.Encoder(n, D, H, FF, dropout=0.0, final_norm=True).double().eval()
    dec = ah.Decoder(n, D, H, FF, dropout=0.0, final_norm=True).double().eval()
    copy_stack_from_torch(enc, ref.encoder)
    copy_stack_from_torch(dec, ref.decoder)
    src, tgt = f64(2, 7, D), f64(2, 5, D)
    src_pad, tgt_pad = lengths_to_pad([7, 4], 7), lengths_to_pad([5, 3], 5)
    memory = enc(src, ~src_pad[:, None, None, :])
    got = dec(tgt, memory, ah.causal_mask(5) & ~tgt_pad[:, None, None, :], ~src_pad[:, None, None, :])
    want = nn_transformer(ref, src, tgt, src_pad, tgt_pad)
    keep = ~tgt_pad
    torch.testing.assert_close(got[keep], want[keep], **TOL)


def test_transformer_equals_its_parts_and_nn_transformer():
    """The full model = embeddings * sqrt(d) + PE, the stacks, then the generator; stacks equal nn.Transformer."""
    n, vocab = 2, 50
    model = ah.Transformer(vocab, vocab, D, H, n, FF, dropout=0.0).double().eval()
    ref = nn.Transformer(D, H, n, n, FF, dropout=0.0, batch_first=True).double().eval()
    ref.encoder.norm = nn.Identity()  # the paper's post-norm model has no final LayerNorm
    ref.decoder.norm = nn.Identity()
    copy_stack_from_torch(model.encoder, ref.encoder)
    copy_stack_from_torch(model.decoder, ref.decoder)
    src = torch.tensor([[5, 6, 7, 8, 9], [3, 4, 0, 0, 0]])
    tgt = torch.tensor([[1, 11, 12, 13], [1, 14, 15, 0]])
    pe = ah.sinusoidal_encoding(10, D, dtype=torch.float64)
    emb_src = model.src_embed(src) * D**0.5 + pe[:5]
    emb_tgt = model.tgt_embed(tgt) * D**0.5 + pe[:4]
    src_pad, tgt_pad = src == 0, tgt == 0
    want = nn_transformer(ref, emb_src, emb_tgt, src_pad, tgt_pad) @ model.generator.weight.T
    got = model(src, tgt)
    torch.testing.assert_close(got[~tgt_pad], want[~tgt_pad], **TOL)


def test_feed_forward_formula():
    ff = ah.PositionwiseFeedForward(D, FF, dropout=0.0).double()
    x = f64(2, 3, D)
    want = torch.relu(x @ ff.linear1.weight.T + ff.linear1.bias) @ ff.linear2.weight.T + ff.linear2.bias
    torch.testing.assert_close(ff(x), want, **TOL)
