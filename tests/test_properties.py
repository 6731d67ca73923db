"""Properties the book claims: no peeking at the future, padding is inert, permutation equivariance."""

from __future__ import annotations

import math

import torch

import aiayn_helpers as ah


def small_model(**kw):
    kw = dict(d_model=32, num_heads=4, num_layers=2, d_ff=64, dropout=0.0) | kw
    return ah.Transformer(40, 40, **kw).double().eval()


def test_decoder_cannot_see_the_future():
    model = small_model()
    src = torch.randint(1, 40, (2, 6))
    tgt = torch.randint(1, 40, (2, 8))
    base = model(src, tgt)
    for t in range(8):
        changed = tgt.clone()
        changed[:, t + 1 :] = torch.randint(1, 40, changed[:, t + 1 :].shape)
        torch.testing.assert_close(model(src, changed)[:, : t + 1], base[:, : t + 1], rtol=0, atol=1e-12)


def test_gradient_wrt_future_inputs_is_zero():
    dec = ah.Decoder(2, 32, 4, 64, dropout=0.0).double().eval()
    y = torch.randn(1, 6, 32, dtype=torch.float64, requires_grad=True)
    mem = torch.randn(1, 4, 32, dtype=torch.float64)
    out = dec(y, mem, ah.causal_mask(6))
    probe = torch.randn(32, dtype=torch.float64)  # a plain .sum() of a LayerNorm output has zero gradient
    for t in range(6):
        (g,) = torch.autograd.grad(out[0, t] @ probe, y, retain_graph=True)
        assert (g[0, t + 1 :] == 0).all()
        assert (g[0, : t + 1].abs().amax(dim=-1) > 0).all()


def test_inverted_causal_mask_is_caught():
    """The same check fails for a mask with the triangle the wrong way round."""
    mha = ah.MultiHeadAttention(16, 2).double().eval()
    x = torch.randn(1, 5, 16, dtype=torch.float64)
    wrong = ~ah.causal_mask(5) | torch.eye(5, dtype=torch.bool)  # upper triangle: sees the future
    base = mha(x, x, x, wrong)
    x2 = x.clone()
    x2[:, 4] += 1.0
    assert not torch.allclose(mha(x2, x2, x2, wrong)[:, 0], base[:, 0])


def test_source_padding_leaves_outputs_unchanged():
    model = small_model()
    src = torch.randint(1, 40, (1, 5))
    tgt = torch.randint(1, 40, (1, 4))
    padded = torch.cat([src, torch.zeros(1, 3, dtype=torch.long)], dim=1)
    torch.testing.assert_close(model(padded, tgt), model(src, tgt), rtol=0, atol=1e-12)
    # and in a batch with a longer sentence that needs no padding
    batch = torch.cat([padded, torch.randint(1, 40, (1, 8))], dim=0)
    torch.testing.assert_close(model(batch, tgt.repeat(2, 1))[0], model(src, tgt)[0], rtol=0, atol=1e-12)


def test_target_padding_does_not_change_real_positions():
    model = small_model()
    src = torch.randint(1, 40, (1, 5))
    tgt = torch.randint(1, 40, (1, 4))
    padded = torch.cat([tgt, torch.zeros(1, 2, dtype=torch.long)], dim=1)
    torch.testing.assert_close(model(src, padded)[:, :4], model(src, tgt), rtol=0, atol=1e-12)


def test_self_attention_without_positions_is_permutation_equivariant():
    enc = ah.Encoder(2, 32, 4, 64, dropout=0.0).double().eval()
    x = torch.randn(2, 7, 32, dtype=torch.float64)
    perm = torch.randperm(7)
    torch.testing.assert_close(enc(x)[:, perm], enc(x[:, perm]), rtol=1e-10, atol=1e-10)


def test_fully_masked_row_gives_zeros_not_nan():
    q, k, v = torch.randn(3, 4), torch.randn(5, 4), torch.randn(5, 2)
    mask = torch.ones(3, 5, dtype=torch.bool)
    mask[1] = False
    out, w = ah.scaled_dot_product_attention(q, k, v, mask)
    assert torch.isfinite(out).all() and torch.isfinite(w).all()
    assert (out[1] == 0).all() and (w[1] == 0).all()
    mha = ah.MultiHeadAttention(8, 2, fused=True).eval()
    x = torch.randn(1, 3, 8)
    assert torch.isfinite(mha(x, x, x, torch.zeros(1, 1, 1, 3, dtype=torch.bool))).all()


def test_masks_and_float16_constants():
    assert ah.causal_mask(3).tolist() == [[True, False, False], [True, True, False], [True, True, True]]
    m = ah.padding_mask(torch.tensor([[4, 5, 0], [0, 0, 0]]), pad_id=0)
    assert m.shape == (2, 1, 1, 3) and m.dtype == torch.bool
    assert m[0, 0, 0].tolist() == [True, True, False]
    q = torch.randn(2, 4, dtype=torch.float16)
    out, _ = ah.scaled_dot_product_attention(q, q, q, ah.causal_mask(2))
    assert torch.isfinite(out).all()


def test_sinusoidal_encoding_formula_and_layout():
    pe = ah.sinusoidal_encoding(50, 16, dtype=torch.float64)
    for pos in (0, 7, 49):
        for i in range(8):
            angle = pos / 10000 ** (2 * i / 16)
            assert math.isclose(pe[pos, 2 * i].item(), math.sin(angle), abs_tol=1e-12)
            assert math.isclose(pe[pos, 2 * i + 1].item(), math.cos(angle), abs_tol=1e-12)
    odd = ah.sinusoidal_encoding(5, 7)
    assert odd.shape == (5, 7)


def test_positional_encoding_lengths():
    pe = ah.PositionalEncoding(8, dropout=0.0, max_len=10).eval()
    assert pe(torch.zeros(2, 4, 8)).shape == (2, 4, 8)
    grow = ah.PositionalEncoding(8, dropout=0.0, max_len=10, extend=True).eval()
    out = grow(torch.zeros(1, 25, 8))
    torch.testing.assert_close(out[0], ah.sinusoidal_encoding(25, 8))
    assert "pe" not in grow.state_dict()  # not persisted in checkpoints


def test_shared_embeddings_are_one_tensor():
    model = ah.Transformer(30, 30, d_model=16, num_heads=2, num_layers=1, d_ff=32, share_embeddings=True)
    assert model.src_embed.weight is model.tgt_embed.weight is model.generator.weight
    untied = ah.Transformer(30, 30, d_model=16, num_heads=2, num_layers=1, d_ff=32)
    assert ah.count_parameters(untied) - ah.count_parameters(model) == 2 * 30 * 16


def test_embeddings_are_scaled_by_sqrt_d_model():
    model = small_model()
    src = torch.tensor([[3, 4, 5]])
    captured = {}
    model.encoder.layers[0].register_forward_pre_hook(lambda m, args: captured.setdefault("x", args[0]))
    model.encode(src)
    want = model.src_embed(src) * math.sqrt(32) + ah.sinusoidal_encoding(3, 32, torch.float64)
    torch.testing.assert_close(captured["x"], want)


def test_base_model_parameter_count_is_close_to_the_paper():
    n = ah.count_parameters(ah.Transformer(37000, 37000, share_embeddings=True))
    assert abs(n - 65e6) / 65e6 < 0.05


def test_layers_are_independent():
    enc = ah.Encoder(3, 16, 2, 32)
    ids = {id(layer) for layer in enc.layers}
    assert len(ids) == 3
    assert enc.layers[0].ff.linear1.weight.data_ptr() != enc.layers[1].ff.linear1.weight.data_ptr()
