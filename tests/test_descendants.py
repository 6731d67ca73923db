"""Chapter 10's pieces (RoPE, ALiBi, a causal language model, BERT's masking) against their papers and PyTorch."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import aiayn_helpers as ah
from aiayn_helpers.course.reference import copy_stack_from_torch

TOL = dict(rtol=1e-12, atol=1e-12)
D, H, FF, V = 32, 4, 64, 11
SCHEMES = ["sinusoidal", "learned", "rope", "alibi"]


def f64(*shape):
    return torch.randn(*shape, dtype=torch.float64)


def tiny_lm(positional, norm_first=True, **kw):
    kw = dict(dropout=0.0, max_positions=16, positional=positional, norm_first=norm_first) | kw
    return ah.CausalLM(V, D, H, 2, FF, **kw).double().eval()


# -- RoPE --------------------------------------------------------------------------------------


def test_rotary_equals_the_complex_formulation():
    x, positions = f64(2, 3, 5, 8), torch.tensor([0, 3, 1, 9, 40])
    theta = 10000.0 ** (-torch.arange(0, 8, 2, dtype=torch.float64) / 8)  # (4,)
    z = torch.view_as_complex(x.reshape(2, 3, 5, 4, 2))  # pairs (x_2j, x_2j+1) as x_2j + i x_2j+1
    rotated = z * torch.polar(torch.ones(5, 4, dtype=torch.float64), positions[:, None] * theta)
    expected = torch.view_as_real(rotated).reshape(2, 3, 5, 8)
    torch.testing.assert_close(ah.apply_rotary(x, positions), expected, **TOL)
    torch.testing.assert_close(ah.apply_rotary(x), ah.apply_rotary(x, torch.arange(5)), **TOL)


def test_rotary_scores_depend_only_on_the_offset():
    q, k = f64(2, 3, 6, 16), f64(2, 3, 6, 16)
    m, n = torch.tensor([0, 1, 2, 5, 9, 30]), torch.tensor([4, 0, 7, 2, 2, 11])

    def scores(shift):
        return ah.apply_rotary(q, m + shift) @ ah.apply_rotary(k, n + shift).transpose(-2, -1)

    for shift in (1, 17, 250):
        torch.testing.assert_close(scores(shift), scores(0), **TOL)
    assert not torch.allclose(scores(0), q @ k.transpose(-2, -1))  # the positions do change the scores


def test_rotary_preserves_norms():
    x = f64(2, 3, 7, 8)
    torch.testing.assert_close(ah.apply_rotary(x, torch.arange(7) * 13).norm(dim=-1), x.norm(dim=-1), **TOL)


@pytest.mark.parametrize(
    "x, positions, message",
    [
        (torch.randn(1, 2, 5, 7), None, "even"),
        (torch.randn(2, 5, 8), None, "4 dimensions"),
        (torch.randn(1, 2, 5, 8), torch.arange(4), r"shape \(T,\) = \(5,\)"),
        (torch.randn(1, 2, 5, 8), torch.zeros(1, 5), "1 dimensions"),
        (torch.ones(1, 2, 5, 8, dtype=torch.long), None, "floating-point"),
    ],
)
def test_rotary_rejects_bad_input(x, positions, message):
    with pytest.raises(ValueError, match=message):
        ah.apply_rotary(x, positions)


# -- ALiBi -------------------------------------------------------------------------------------


def test_alibi_slopes_for_a_power_of_two():
    assert ah.alibi_slopes(8).tolist() == [1 / 2**i for i in range(1, 9)]
    sixteen = torch.tensor([2 ** (-i / 2) for i in range(1, 17)], dtype=torch.float64)
    torch.testing.assert_close(ah.alibi_slopes(16), sixteen, **TOL)
    assert ah.alibi_slopes(1).tolist() == [2**-8]


def test_alibi_slopes_for_other_head_counts():
    # The paper's rule: the 8 slopes of 8 heads, then every other slope of 16 heads for the 4 left.
    expected = [1 / 2**i for i in range(1, 9)] + [2**-0.5, 2**-1.5, 2**-2.5, 2**-3.5]
    torch.testing.assert_close(ah.alibi_slopes(12), torch.tensor(expected, dtype=torch.float64), **TOL)
    assert ah.alibi_slopes(6).tolist()[:4] == [1 / 4, 1 / 16, 1 / 64, 1 / 256]
    assert len(ah.alibi_slopes(6)) == 6


def test_alibi_bias_values():
    bias = ah.alibi_bias(8, 5, 5, dtype=torch.float64)
    assert bias.shape == (8, 5, 5)
    slopes = ah.alibi_slopes(8)
    for h, i, j in [(0, 4, 0), (3, 2, 1), (7, 4, 2), (5, 3, 3)]:
        assert bias[h, i, j] == -slopes[h] * (i - j)
    assert (bias.diagonal(dim1=-2, dim2=-1) == 0).all()
    # queries are the last t_q keys: the rows of a shorter query block are the last rows of the square bias
    torch.testing.assert_close(ah.alibi_bias(8, 2, 5, dtype=torch.float64), bias[:, 3:], **TOL)
    assert ah.alibi_bias(3, 2, 4).dtype == torch.float32


@pytest.mark.parametrize(
    "args, message",
    [((0, 4, 4), "num_heads"), ((4, 5, 3), "t_q must be <= t_k"), ((4, 0, 3), "t_q"), ((True, 2, 2), "num_heads")],
)
def test_alibi_rejects_bad_input(args, message):
    with pytest.raises(ValueError, match=message):
        ah.alibi_bias(*args)


def test_alibi_slopes_reject_bad_input():
    with pytest.raises(ValueError, match="num_heads"):
        ah.alibi_slopes(2.0)


# -- attention with a bias, rotary and ALiBi attention --------------------------------------------


@pytest.mark.parametrize("fused", [False, True])
def test_attention_bias_is_added_to_the_scores(fused):
    mha = ah.MultiHeadAttention(D, H, fused=fused).double().eval()
    x, bias, mask = f64(2, 6, D), f64(H, 6, 6), ah.causal_mask(6)
    q, k, v = (mha._split_heads(lin(x)) for lin in (mha.w_q, mha.w_k, mha.w_v))
    scores = (q @ k.transpose(-2, -1) / math.sqrt(D // H) + bias).masked_fill(~mask, float("-inf"))
    heads = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(2, 6, D)
    torch.testing.assert_close(mha(x, x, x, mask, attn_bias=bias), mha.w_o(heads), **TOL)
    torch.testing.assert_close(
        mha(x, x, x, mask, attn_bias=torch.zeros(1, 1, 1, 1, dtype=torch.float64)), mha(x, x, x, mask)
    )


@pytest.mark.parametrize(
    "bias, message",
    [
        (torch.zeros(H, 6, 6), "dtype"),
        (torch.zeros(H + 1, 6, 6, dtype=torch.float64), "does not broadcast"),
        ([0.0], "Tensor"),
    ],
)
def test_attention_rejects_a_bad_bias(bias, message):
    mha = ah.MultiHeadAttention(D, H).double()
    x = f64(2, 6, D)
    with pytest.raises(ValueError, match=message):
        mha(x, x, x, attn_bias=bias)


def test_alibi_attention_is_attention_with_the_alibi_bias():
    plain = ah.MultiHeadAttention(D, H).double().eval()
    alibi = ah.RelativeAttention(D, H, positional="alibi").double().eval()
    alibi.load_state_dict(plain.state_dict())
    x, mask = f64(2, 6, D), ah.causal_mask(6)
    want = plain(x, x, x, mask, attn_bias=ah.alibi_bias(H, 6, 6, dtype=torch.float64))
    torch.testing.assert_close(alibi(x, x, x, mask), want, **TOL)


def test_rotary_attention_rotates_queries_and_keys():
    rope = ah.RelativeAttention(D, H, positional="rope").double().eval()
    x, mask = f64(2, 6, D), ah.causal_mask(6)
    q, k, v = (rope._split_heads(lin(x)) for lin in (rope.w_q, rope.w_k, rope.w_v))
    heads, _ = ah.scaled_dot_product_attention(ah.apply_rotary(q), ah.apply_rotary(k), v, mask)
    torch.testing.assert_close(rope(x, x, x, mask), rope.w_o(heads.transpose(1, 2).reshape(2, 6, D)), **TOL)


@pytest.mark.parametrize("positional", ["rope", "alibi"])
def test_relative_attention_fused_and_explicit_paths_are_equal(positional):
    explicit = ah.RelativeAttention(D, H, positional=positional).double().eval()
    fused = ah.RelativeAttention(D, H, positional=positional, fused=True).double().eval()
    fused.load_state_dict(explicit.state_dict())
    x, mask = f64(2, 7, D), ah.causal_mask(7)
    torch.testing.assert_close(explicit(x, x, x, mask), fused(x, x, x, mask), **TOL)


def test_relative_attention_rejects_bad_settings():
    with pytest.raises(ValueError, match="'rope' or 'alibi'"):
        ah.RelativeAttention(D, H, positional="sinusoidal")
    with pytest.raises(ValueError, match="even d_k"):
        ah.RelativeAttention(12, 4, positional="rope")


# -- the causal language model -------------------------------------------------------------------


@pytest.mark.parametrize("positional", SCHEMES)
def test_causal_lm_is_causal(positional):
    model = tiny_lm(positional)
    ids = torch.randint(V, (2, 10))
    changed = ids.clone()
    changed[:, 6] = (ids[:, 6] + 1) % V
    a, b = model(ids), model(changed)
    assert a.shape == (2, 10, V)
    torch.testing.assert_close(a[:, :6], b[:, :6], **TOL)
    assert not torch.allclose(a[:, 6:], b[:, 6:])


@pytest.mark.parametrize("positional", ["sinusoidal", "learned"])
@pytest.mark.parametrize("norm_first", [False, True])
def test_causal_lm_matches_nn_transformer_encoder(positional, norm_first):
    model = tiny_lm(positional, norm_first)
    layer = nn.TransformerEncoderLayer(D, H, FF, 0.0, "relu", batch_first=True, norm_first=norm_first)
    norm = nn.LayerNorm(D) if norm_first else None  # our pre-norm stack ends with a LayerNorm
    ref = nn.TransformerEncoder(layer, 2, norm=norm, enable_nested_tensor=False).double().eval()
    copy_stack_from_torch(model.encoder, ref)
    ids = torch.randint(V, (3, 9))
    x = model.embed(ids) * math.sqrt(D)
    if positional == "sinusoidal":
        x = x + ah.sinusoidal_encoding(9, D, torch.float64)
    else:
        x = x + model.pos_embed.weight[:9]
    h = ref(x, mask=~ah.causal_mask(9), is_causal=True)  # nn's boolean masks: True = blocked
    torch.testing.assert_close(model(ids), h @ model.embed.weight.T, rtol=1e-10, atol=1e-10)
    assert model.lm_head.weight is model.embed.weight  # tied


def test_untied_lm_head():
    model = ah.CausalLM(V, D, H, 1, FF, tie_embeddings=False)
    assert model.lm_head.weight is not model.embed.weight


@pytest.mark.parametrize("positional", SCHEMES)
def test_causal_lm_overfits_a_repeating_sequence(positional):
    # After a 1, the next token depends on the token before it: the model must use the context.
    ids = torch.tensor([[1, 2, 1, 3, 1, 4] * 5])
    model = ah.CausalLM(8, 32, 8, 2, 64, dropout=0.0, max_positions=32, positional=positional)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    first = ah.lm_loss(model(ids), ids).item()
    for _ in range(300):  # a cap; typically 20 to 90 steps
        loss = ah.lm_loss(model(ids), ids)
        if loss.item() < 0.05:
            break
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert first > 1.5
    assert loss.item() < 0.25, f"{positional}: the loss fell from {first:.3f} only to {loss.item():.3f}"


def greedy(model, ids, steps):
    for _ in range(steps):
        ids = torch.cat([ids, model(ids)[:, -1].argmax(-1, keepdim=True)], dim=1)
    return ids


@pytest.mark.parametrize("positional", ["learned", "alibi"])
def test_generate_with_top_k_1_is_greedy(positional):
    model = tiny_lm(positional)
    prompt = torch.randint(V, (3, 4))
    a = model.generate(prompt, 6, top_k=1, generator=torch.Generator().manual_seed(1))
    b = model.generate(prompt, 6, top_k=1, temperature=0.5, generator=torch.Generator().manual_seed(2))
    assert a.shape == (3, 10) and torch.equal(a[:, :4], prompt)
    assert torch.equal(a, b) and torch.equal(a, greedy(model, prompt, 6))


def test_generate_samples_reproducibly_and_crops_to_max_len():
    model = tiny_lm("learned", max_positions=8)
    prompt = torch.randint(V, (2, 6))
    a = model.generate(prompt, 5, generator=torch.Generator().manual_seed(0))
    b = model.generate(prompt, 5, generator=torch.Generator().manual_seed(0))
    assert a.shape == (2, 11) and torch.equal(a, b)  # past max_positions the context is the last max_positions tokens
    assert torch.equal(model.generate(prompt, 0), prompt)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(max_new_tokens=-1), "max_new_tokens"),
        (dict(max_new_tokens=2, temperature=0.0), "temperature"),
        (dict(max_new_tokens=2, top_k=0), "top_k"),
    ],
)
def test_generate_rejects_bad_settings(kwargs, message):
    with pytest.raises(ValueError, match=message):
        tiny_lm("learned").generate(torch.zeros(1, 3, dtype=torch.long), **kwargs)


@pytest.mark.parametrize("positional", SCHEMES)
def test_causal_lm_rejects_bad_ids(positional):
    model = tiny_lm(positional)
    with pytest.raises(ValueError, match=r"ids in \[0, 11\)"):
        model(torch.tensor([[1, 2, V]]))
    with pytest.raises(ValueError, match=r"ids in \[0, 11\)"):
        model(torch.tensor([[-1, 2]]))
    with pytest.raises(ValueError, match="2 dimensions"):
        model(torch.tensor([1, 2]))
    long = torch.zeros(1, 17, dtype=torch.long)
    if positional in ("sinusoidal", "learned"):
        with pytest.raises(ValueError, match="exceed max_positions=16"):
            model(long)
    else:  # positions inside attention have no table to run out of
        assert model(long).shape == (1, 17, V)


def test_causal_lm_rejects_bad_settings():
    with pytest.raises(ValueError, match="positional must be one of"):
        ah.CausalLM(V, D, H, 1, FF, positional="relative")
    with pytest.raises(ValueError, match="vocab_size"):
        ah.CausalLM(0, D, H, 1, FF)


def test_lm_loss_is_shifted_cross_entropy():
    logits, ids = f64(2, 5, V), torch.randint(1, V, (2, 5))
    ids[1, 3:] = 0  # padding
    want = F.cross_entropy(logits[:, :-1].reshape(-1, V), ids[:, 1:].reshape(-1))
    torch.testing.assert_close(ah.lm_loss(logits, ids), want, **TOL)
    keep = ids[:, 1:] != 0
    want = F.cross_entropy(logits[:, :-1][keep], ids[:, 1:][keep])
    torch.testing.assert_close(ah.lm_loss(logits, ids, pad_id=0), want, **TOL)
    with pytest.raises(ValueError, match="share batch and T"):
        ah.lm_loss(logits, ids[:, :4])
    with pytest.raises(ValueError, match="at least 2 positions"):
        ah.lm_loss(logits[:, :1], ids[:, :1])


# -- BERT's masking --------------------------------------------------------------------------------


def test_mask_tokens_follows_berts_recipe():
    vocab, mask_id, specials = 1000, 3, (0, 1, 2, 3)
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(4, vocab, (100, 500), generator=g)
    ids[:, 0], ids[:, -1], ids[:, 250] = 1, 2, 0  # [CLS], [SEP], padding
    inputs, labels = ah.mask_tokens(ids, vocab, mask_id, specials, generator=g)
    chosen = labels != -100
    assert torch.equal(labels[chosen], ids[chosen])
    assert not chosen[:, [0, 250, -1]].any() and torch.equal(inputs[:, [0, 250, -1]], ids[:, [0, 250, -1]])
    assert torch.equal(inputs[~chosen], ids[~chosen])  # only chosen tokens change
    n = chosen.sum().item()
    assert abs(n / (100 * 497) - 0.15) < 0.01
    masked = (inputs[chosen] == mask_id).float().mean().item()
    replaced = ((inputs[chosen] != mask_id) & (inputs[chosen] != ids[chosen])).float().mean().item()
    assert abs(masked - 0.8) < 0.02 and abs(replaced - 0.1) < 0.02  # the other 10%: left as they are


def test_mask_tokens_rejects_bad_input():
    ids = torch.randint(5, (2, 6))
    with pytest.raises(ValueError, match="mask_id"):
        ah.mask_tokens(ids, 5, 5)
    with pytest.raises(ValueError, match="probability"):
        ah.mask_tokens(ids, 5, 4, p=1.5)
    with pytest.raises(ValueError, match=r"ids in \[0, 3\)"):
        ah.mask_tokens(ids + 3, 3, 0)
