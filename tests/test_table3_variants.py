"""The two model variants of the paper's table 3 that change the code (chapter 9): narrower
queries and keys (row B, ``d_k``) and learned position embeddings (row E)."""

from __future__ import annotations

import pytest
import torch
from test_cli import corpus, run  # noqa: F401  (the quick preset on the local Multi30k copy)

import aiayn_helpers as ah
from aiayn_helpers.config import Config, build_model
from aiayn_helpers.decoding import beam_search, greedy_decode

PAD, BOS = 0, 1


# models this small run fastest on one thread, and suffer least on a busy machine
pytestmark = pytest.mark.usefixtures("one_thread")


def small(seed: int = 0, **kw) -> ah.Transformer:
    torch.manual_seed(seed)
    return ah.Transformer(13, 13, d_model=16, num_heads=2, num_layers=2, d_ff=32, dropout=0.0, **kw).double().eval()


def src_tgt(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    src, tgt = torch.randint(3, 13, (3, 7), generator=g), torch.randint(3, 13, (3, 6), generator=g)
    src[1, 4:] = PAD
    tgt[:, 0] = BOS
    return src, tgt


def test_d_k_narrows_queries_and_keys_only():
    mha = ah.MultiHeadAttention(24, 4, d_k=2)
    assert (mha.d_k, mha.d_v) == (2, 6)
    assert mha.w_q.weight.shape == mha.w_k.weight.shape == (8, 24)
    assert mha.w_v.weight.shape == mha.w_o.weight.shape == (24, 24)
    x = torch.randn(2, 5, 24)
    k, v = mha.project_kv(x, x)
    assert k.shape == (2, 4, 5, 2) and v.shape == (2, 4, 5, 6)
    assert mha(x, x, x).shape == (2, 5, 24)
    # the default is the paper's d_k = d_v = d_model / h, with the same parameters as before
    assert ah.MultiHeadAttention(24, 4, d_k=6).w_q.weight.shape == ah.MultiHeadAttention(24, 4).w_q.weight.shape


def test_d_k_equals_explicit_formula_and_fused_path():
    """Each head: softmax(q_i k_i^T / sqrt(d_k)) v_i with d_k = 3, computed by hand, in float64."""
    torch.manual_seed(0)
    mha = ah.MultiHeadAttention(8, 2, d_k=3).double()
    x = torch.randn(2, 4, 8, dtype=torch.float64)
    q, k, v = mha.w_q(x).view(2, 4, 2, 3), mha.w_k(x).view(2, 4, 2, 3), mha.w_v(x).view(2, 4, 2, 4)
    heads = [torch.softmax(q[:, :, i] @ k[:, :, i].transpose(1, 2) / 3**0.5, -1) @ v[:, :, i] for i in range(2)]
    expected = mha.w_o(torch.cat(heads, dim=-1))
    torch.testing.assert_close(mha(x, x, x), expected, rtol=0, atol=1e-12)
    mha.fused = True
    torch.testing.assert_close(mha(x, x, x), expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("kw", [{"d_k": 3}, {"positional": "learned", "max_positions": 40}])
def test_variant_cached_decoding_equals_uncached(kw):
    model = small(1, **kw)
    src, tgt = src_tgt(1)
    with torch.no_grad():
        memory, src_mask = model.encode(src)
        full = model.decode(tgt, memory, src_mask)
        cache = model.init_cache(memory, src_mask)
        for t in range(1, tgt.shape[1] + 1):
            step = model.next_token_logits(tgt[:, :t], memory, src_mask, cache)
            torch.testing.assert_close(step, full[:, t - 1], rtol=0, atol=1e-12)
    assert greedy_decode(model, src, max_new_tokens=9) == greedy_decode(model, src, max_new_tokens=9, use_cache=False)
    assert beam_search(model, src, beam_size=3, max_new_tokens=9) == beam_search(
        model, src, beam_size=3, max_new_tokens=9, use_cache=False
    )


def test_learned_positions_are_trained_parameters_with_no_rows_beyond_max_len():
    model = small(0, positional="learned", max_positions=8)
    table = model.positional.embedding.weight
    assert table.shape == (8, 16) and table.requires_grad
    assert any(p is table for p in model.parameters())
    sinusoidal = small(0)
    assert sum(p.numel() for p in model.parameters()) - sum(p.numel() for p in sinusoidal.parameters()) == 8 * 16
    src, _ = src_tgt()
    with pytest.raises(ValueError, match="exceeds max_len=8 of the learned position table"):
        model(torch.cat([src, src], dim=1), src[:, :2])
    # the position of a token changes its encoding: the table is used, and shifted by the decoding offset
    x = torch.zeros(1, 3, 16, dtype=torch.float64)
    torch.testing.assert_close(model.positional(x)[0], table[:3])
    torch.testing.assert_close(model.positional(x[:, :1], offset=5)[0, 0], table[5])


def test_bad_variants_are_rejected():
    with pytest.raises(ValueError, match="positional must be one of"):
        small(positional="rope")
    with pytest.raises(ValueError, match="d_k must be a positive int"):
        ah.MultiHeadAttention(8, 2, d_k=0)


def test_config_builds_the_variants():
    model = build_model(Config(d_model=16, num_layers=1, num_heads=2, d_ff=32, d_k=4, positional="learned"), 50)
    layer = model.encoder.layers[0].self_attn
    assert (layer.d_k, layer.d_v) == (4, 8)
    assert isinstance(model.positional, ah.LearnedPositionalEncoding)
    assert model.positional.max_len >= 128 + 50  # the longest kept sentence plus the decoding budget


def test_cli_trains_and_resumes_the_variants(tmp_path, corpus):  # noqa: F811
    summary = run(tmp_path, corpus, "--d-k", "4", "--positional", "learned", "--max-steps", "3")
    assert summary["steps"] == 3 and summary["config"]["d_k"] == 4 and summary["config"]["positional"] == "learned"
    resumed = run(tmp_path, corpus, "--resume", "--max-steps", "5")
    assert resumed["steps"] == 5 and resumed["config"]["positional"] == "learned"
    with pytest.raises(ValueError, match="different model"):
        run(tmp_path, corpus, "--resume", "--positional", "sinusoidal")
