"""Bad input fails loudly with a ValueError that names what was expected and what was given."""

from __future__ import annotations

import pytest
import torch

import aiayn_helpers as ah


def model(**kw):
    kw = dict(d_model=16, num_heads=2, num_layers=1, d_ff=32) | kw
    return ah.Transformer(20, 30, **kw)


def test_d_model_not_divisible_by_heads():
    with pytest.raises(ValueError, match=r"divisible.*d_model=10.*num_heads=3"):
        ah.MultiHeadAttention(10, 3)
    with pytest.raises(ValueError, match="divisible"):
        ah.Transformer(10, 10, d_model=30, num_heads=4)


@pytest.mark.parametrize("bad", [0, -2, 2.5, True, "8"])
def test_non_positive_sizes(bad):
    with pytest.raises(ValueError, match="positive int"):
        ah.MultiHeadAttention(bad, 1)


def test_mismatched_d_k():
    with pytest.raises(ValueError, match=r"d_k.*query \(\.\.\., 4\).*key \(\.\.\., 5\)"):
        ah.scaled_dot_product_attention(torch.randn(3, 4), torch.randn(6, 5), torch.randn(6, 2))


def test_mismatched_key_value_lengths():
    with pytest.raises(ValueError, match="T_k"):
        ah.scaled_dot_product_attention(torch.randn(3, 4), torch.randn(6, 4), torch.randn(5, 2))


def test_integer_or_mixed_dtypes():
    with pytest.raises(ValueError, match="floating-point"):
        ah.scaled_dot_product_attention(torch.ones(3, 4, dtype=torch.long), torch.ones(3, 4), torch.ones(3, 4))
    with pytest.raises(ValueError, match="share a dtype"):
        ah.scaled_dot_product_attention(torch.randn(3, 4), torch.randn(3, 4).double(), torch.randn(3, 4))


def test_mask_that_does_not_broadcast():
    q = torch.randn(2, 3, 4)
    with pytest.raises(ValueError, match=r"mask of shape \(4, 3\) does not broadcast.*\(2, 3, 3\)"):
        ah.scaled_dot_product_attention(q, q, q, torch.ones(4, 3, dtype=torch.bool))


def test_mask_that_would_grow_the_output_is_rejected():
    """A (B, 1, T) mask against unbatched scores would silently create a batch: refused."""
    q = torch.randn(3, 4)
    with pytest.raises(ValueError, match="does not broadcast"):
        ah.scaled_dot_product_attention(q, q, q, torch.ones(5, 3, 3, dtype=torch.bool))


def test_float_mask_is_rejected():
    q = torch.randn(3, 4)
    with pytest.raises(ValueError, match="torch.bool"):
        ah.scaled_dot_product_attention(q, q, q, torch.zeros(3, 3))


def test_mha_rejects_sequence_first_or_wrong_width():
    mha = ah.MultiHeadAttention(8, 2)
    with pytest.raises(ValueError, match=r"d_model=8.*\(batch, seq_len, d_model\)"):
        mha(torch.randn(2, 8, 5), torch.randn(2, 8, 5), torch.randn(2, 8, 5))
    with pytest.raises(ValueError, match="3 dimensions"):
        x = torch.randn(5, 8)
        mha(x, x, x)
    with pytest.raises(ValueError, match="batch size"):
        mha(torch.randn(2, 3, 8), torch.randn(3, 3, 8), torch.randn(3, 3, 8))


def test_mha_rejects_a_mask_for_another_batch():
    mha = ah.MultiHeadAttention(8, 2)
    x = torch.randn(2, 3, 8)
    with pytest.raises(ValueError, match="does not broadcast"):
        mha(x, x, x, torch.ones(3, 1, 1, 3, dtype=torch.bool))


@pytest.mark.parametrize("bad", [torch.tensor([[1, 2, 20]]), torch.tensor([[-1, 2, 3]])])
def test_source_ids_outside_the_vocabulary(bad):
    with pytest.raises(ValueError, match=r"src must hold ids in \[0, 20\)"):
        model()(bad, torch.tensor([[1, 2]]))


def test_target_ids_outside_the_vocabulary():
    with pytest.raises(ValueError, match=r"tgt must hold ids in \[0, 30\), got values in \[1, 30\]"):
        model()(torch.tensor([[1, 2]]), torch.tensor([[1, 30]]))


def test_token_ids_must_be_integer_and_2d():
    with pytest.raises(ValueError, match="integer token ids"):
        model()(torch.tensor([[1.0, 2.0]]), torch.tensor([[1, 2]]))
    with pytest.raises(ValueError, match="2 dimensions"):
        model()(torch.tensor([1, 2]), torch.tensor([[1, 2]]))


def test_share_embeddings_needs_equal_vocabularies():
    with pytest.raises(ValueError, match=r"src_vocab_size=20 and tgt_vocab_size=30"):
        model(share_embeddings=True)


def test_bad_pad_id():
    with pytest.raises(ValueError, match="pad_id"):
        model(pad_id=25)


def test_positional_encoding_beyond_max_len():
    pe = ah.PositionalEncoding(8, max_len=10)
    with pytest.raises(ValueError, match=r"length 12 exceeds max_len=10.*extend=True"):
        pe(torch.zeros(1, 12, 8))
    with pytest.raises(ValueError, match="d_model=8"):
        pe(torch.zeros(1, 5, 6))


def test_causal_and_padding_mask_inputs():
    with pytest.raises(ValueError, match="positive int"):
        ah.causal_mask(0)
    with pytest.raises(ValueError, match="integer ids"):
        ah.padding_mask(torch.zeros(2, 3), 0)
    with pytest.raises(ValueError, match="2 dimensions"):
        ah.padding_mask(torch.zeros(3, dtype=torch.long), 0)


def test_decode_checks_memory_shape_and_source_mask():
    m = model()
    src_mask = ah.padding_mask(torch.tensor([[1, 2, 3]]), 0)
    with pytest.raises(ValueError, match="memory must have shape"):
        m.decode(torch.tensor([[1]]), torch.zeros(1, 4, 16), src_mask)
    with pytest.raises(ValueError, match="src_mask must be the boolean"):
        m.decode(torch.tensor([[1]]), torch.zeros(1, 3, 16), src_mask.long())
    with pytest.raises(ValueError, match=r"tgt must hold ids in \[0, 30\)"):
        m.decode(torch.tensor([[30]]), torch.zeros(1, 3, 16), src_mask)
