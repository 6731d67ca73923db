"""Key/value caching in decoding (chapter 8): the cached path equals the uncached one."""

from __future__ import annotations

import pytest
import torch

import aiayn_helpers as ah
from aiayn_helpers.decoding import beam_search, greedy_decode

PAD, BOS, EOS = 0, 1, 2


# models this small run fastest on one thread, and suffer least on a busy machine
pytestmark = pytest.mark.usefixtures("one_thread")


def random_model(seed: int, vocab: int = 11, norm_first: bool = False, fused: bool = False) -> ah.Transformer:
    """A small untrained float64 model, nudged to emit <eos> now and then."""
    torch.manual_seed(seed)
    model = ah.Transformer(
        vocab, vocab, d_model=16, num_heads=2, num_layers=2, d_ff=32, dropout=0.1, norm_first=norm_first, fused=fused
    ).double()
    with torch.no_grad():
        model.generator.weight[EOS] += 0.3 * model.generator.weight[4:].mean(0)
    return model


def random_src(seed: int, batch: int = 6, length: int = 7, vocab: int = 11) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, vocab, (batch, length), generator=g)
    src[1, 3:] = PAD  # padded sentences
    src[4, 5:] = PAD
    return src


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("fused", [False, True])
def test_greedy_cached_equals_uncached(seed, norm_first, fused):
    model, src = random_model(seed, norm_first=norm_first, fused=fused), random_src(seed)
    cached = greedy_decode(model, src, max_new_tokens=15, use_cache=True)
    assert cached == greedy_decode(model, src, max_new_tokens=15, use_cache=False)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("beam_size", [1, 2, 4])
def test_beam_cached_equals_uncached_tokens_and_scores(seed, beam_size):
    model, src = random_model(seed, norm_first=bool(seed % 2)), random_src(seed)
    hyps_c, scores_c = beam_search(model, src, beam_size=beam_size, max_new_tokens=15, return_scores=True)
    hyps_u, scores_u = beam_search(
        model, src, beam_size=beam_size, max_new_tokens=15, return_scores=True, use_cache=False
    )
    assert hyps_c == hyps_u
    torch.testing.assert_close(torch.tensor(scores_c), torch.tensor(scores_u), rtol=0, atol=1e-12)


def test_default_uses_the_cache():
    model, src = random_model(0), random_src(0)
    calls = []
    original = model.next_token_logits
    model.next_token_logits = lambda *a: calls.append(a[3] is not None) or original(*a)
    greedy_decode(model, src, max_new_tokens=4)
    beam_search(model, src, max_new_tokens=4)
    assert calls and all(calls)


def test_step_logits_equal_full_decoder():
    """Every cached step's logits equal the uncached decoder's at that position, in float64."""
    model, src = random_model(1).eval(), random_src(1)
    tgt = torch.cat([torch.full((src.shape[0], 1), BOS), random_src(5, length=9)[:, :9].clamp(min=3)], dim=1)
    with torch.no_grad():
        memory, src_mask = model.encode(src)
        full = model.decode(tgt, memory, src_mask)  # (batch, T, V)
        cache = model.init_cache(memory, src_mask)
        for t in range(1, tgt.shape[1] + 1):
            step = model.next_token_logits(tgt[:, :t], memory, src_mask, cache)
            torch.testing.assert_close(step, full[:, t - 1], rtol=0, atol=1e-12)
            assert cache.length == t


@pytest.mark.parametrize("layers, d_model, length, batch", [(2, 16, 5, 3), (3, 32, 9, 2)])
def test_cache_size_is_2_layers_length_d_model(layers, d_model, length, batch):
    torch.manual_seed(0)
    model = ah.Transformer(13, 13, d_model=d_model, num_heads=4, num_layers=layers, d_ff=16).eval()
    src = torch.randint(3, 13, (batch, 6))
    tgt = torch.randint(3, 13, (batch, length))
    with torch.no_grad():
        memory, src_mask = model.encode(src)
        cache = model.init_cache(memory, src_mask)
        assert cache.numel_per_sequence() == 0
        for t in range(1, length + 1):
            model.next_token_logits(tgt[:, :t], memory, src_mask, cache)
    assert cache.numel_per_sequence() == 2 * layers * length * d_model
    assert cache.memory_numel_per_sequence() == 2 * layers * 6 * d_model


def test_index_select_reorders_every_tensor():
    model, src = random_model(2).eval(), random_src(2)
    with torch.no_grad():
        memory, src_mask = model.encode(src)
        cache = model.init_cache(memory, src_mask)
        model.next_token_logits(torch.full((src.shape[0], 1), BOS), memory, src_mask, cache)
    rows = torch.tensor([3, 3, 0])
    picked = cache.index_select(rows)
    assert picked.batch_size == 3 and picked.length == 1
    for a, b in zip(picked.self_k + picked.cross_v, cache.self_k + cache.cross_v, strict=True):
        assert torch.equal(a, b[rows])
    assert torch.equal(picked.memory_mask, src_mask[rows])


def test_bad_input_raises():
    model, src = random_model(0), random_src(0)
    with pytest.raises(ValueError, match="use_cache"):
        greedy_decode(model, src, max_new_tokens=3, use_cache="yes")
    with pytest.raises(ValueError, match="use_cache"):
        beam_search(model, src, max_new_tokens=3, use_cache=1)
    with torch.no_grad():
        memory, src_mask = model.encode(src)
        cache = model.init_cache(memory, src_mask)
        with pytest.raises(ValueError, match="cache must hold"):
            model.next_token_logits(torch.full((src.shape[0], 3), BOS), memory, src_mask, cache)
        with pytest.raises(ValueError, match="cache must hold"):
            model.next_token_logits(torch.full((2, 1), BOS), memory, src_mask, cache)
        with pytest.raises(ValueError, match="memory"):
            model.init_cache(memory[:, :, :4], src_mask)
        with pytest.raises(ValueError, match="src_mask"):
            model.init_cache(memory, src_mask.long())


def test_model_without_init_cache_needs_use_cache_false():
    class NoCache(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner
            self.pad_id, self.src_vocab_size, self.tgt_vocab_size = inner.pad_id, 11, 11

        def encode(self, src):
            return self.inner.encode(src)

        def next_token_logits(self, tgt, memory, src_mask, cache=None):
            return self.inner.next_token_logits(tgt, memory, src_mask)

    model, src = NoCache(random_model(0)), random_src(0)
    with pytest.raises(ValueError, match="init_cache"):
        greedy_decode(model, src, max_new_tokens=3)
    assert greedy_decode(model, src, max_new_tokens=5, use_cache=False) == greedy_decode(
        model.inner, src, max_new_tokens=5
    )


def _cache_after(model, src, steps: int):
    with torch.no_grad():
        memory, src_mask = model.encode(src)
        cache = model.init_cache(memory, src_mask)
        for t in range(1, steps + 1):
            prefix = torch.full((src.shape[0], t), BOS)
            model.next_token_logits(prefix, memory, src_mask, cache)
    return cache, memory, src_mask


def test_reorder_is_in_place_and_index_select_copies():
    model, src = random_model(3).eval(), random_src(3)
    cache, _, src_mask = _cache_after(model, src, 2)
    tensors = lambda c: c.self_k + c.self_v + c.cross_k + c.cross_v
    before = [t.clone() for t in tensors(cache)]
    rows = torch.tensor([5, 0, 0, 2])
    copy = cache.index_select(rows)
    for a, b in zip(tensors(cache), before, strict=True):
        assert torch.equal(a, b)  # index_select left the original as it was
    assert cache.reorder(rows) is cache
    assert cache.batch_size == 4 and cache.length == 2
    for a, b, c in zip(tensors(cache), before, tensors(copy), strict=True):
        assert torch.equal(a, b[rows]) and torch.equal(a, c)
    assert torch.equal(cache.memory_mask, src_mask[rows])


def test_reorder_without_cross_leaves_the_memory_projections():
    model, src = random_model(4).eval(), random_src(4)
    cache, _, _ = _cache_after(model, src, 1)
    cross = cache.cross_k[:]
    swap = torch.tensor([1, 0, 2, 3, 4, 5])
    old_self = cache.self_v[0].clone()
    cache.reorder(swap, cross=False)
    assert all(a is b for a, b in zip(cache.cross_k, cross, strict=True))
    assert torch.equal(cache.self_v[0], old_self[swap])
    with pytest.raises(ValueError, match="1-D"):
        cache.reorder([1, 0])
    with pytest.raises(ValueError, match="1-D"):
        cache.reorder(torch.tensor([1.0, 0.0]))


def test_nbytes_counts_every_tensor():
    layers, d_model, length, S = 2, 16, 3, 7
    model, src = random_model(5).eval(), random_src(5)
    cache, _, _ = _cache_after(model, src, length)
    batch, eight = src.shape[0], torch.float64.itemsize
    keys_values = 2 * layers * batch * (length + S) * d_model * eight
    # and the boolean source mask, one byte a position
    assert cache.nbytes == keys_values + batch * S
    cache.reorder(torch.tensor([0, 1]))
    assert cache.nbytes == (keys_values + batch * S) // 3
    float32 = random_model(5).float().eval()
    assert _cache_after(float32, src, length)[0].nbytes == keys_values // 2 + batch * S
