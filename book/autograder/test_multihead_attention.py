"""Autograder for the multi-head attention assignment (chapter 3).

A submission is a Python module that defines ``MultiHeadAttention(d_model, num_heads)``
with four ``nn.Linear(d_model, d_model)`` layers ``w_q, w_k, w_v, w_o`` and
``forward(query, key, value, mask=None) -> (batch, T_q, d_model)``, where ``mask`` is
boolean with True = may attend. Put the submission next to this file (or on
PYTHONPATH) and run

    STUDENT_MODULE=submission pytest -q test_multihead_attention.py

Each test copies the weights of PyTorch's ``nn.MultiheadAttention`` into the
student's module and compares the outputs in float64, so only a correct
implementation passes. The grade is the fraction of tests passed.
"""

from __future__ import annotations

import importlib
import os

import pytest
import torch
from torch import nn

student = importlib.import_module(os.environ.get("STUDENT_MODULE", "submission"))
TOL = {"rtol": 1e-10, "atol": 1e-10}


@torch.no_grad()
def make_pair(d_model: int, num_heads: int) -> tuple[nn.Module, nn.MultiheadAttention]:
    """The student's module and PyTorch's, with the same weights, in float64."""
    torch.manual_seed(0)
    ref = nn.MultiheadAttention(d_model, num_heads, batch_first=True).double().eval()
    ours = student.MultiHeadAttention(d_model, num_heads).double().eval()
    # PyTorch packs W^Q, W^K, W^V into one (3 d_model, d_model) matrix.
    for lin, w, b in zip((ours.w_q, ours.w_k, ours.w_v), ref.in_proj_weight.chunk(3), ref.in_proj_bias.chunk(3)):
        lin.weight.copy_(w)
        lin.bias.copy_(b)
    ours.w_o.weight.copy_(ref.out_proj.weight)
    ours.w_o.bias.copy_(ref.out_proj.bias)
    return ours, ref


@pytest.mark.parametrize("num_heads", [1, 2, 4, 8])
def test_self_attention_matches_pytorch(num_heads):
    ours, ref = make_pair(16, num_heads)
    x = torch.randn(2, 5, 16, dtype=torch.float64)
    expected, _ = ref(x, x, x, need_weights=False)
    torch.testing.assert_close(ours(x, x, x), expected, **TOL)


def test_cross_attention_with_different_lengths():
    ours, ref = make_pair(16, 4)
    q = torch.randn(3, 4, 16, dtype=torch.float64)
    kv = torch.randn(3, 7, 16, dtype=torch.float64)
    expected, _ = ref(q, kv, kv, need_weights=False)
    torch.testing.assert_close(ours(q, kv, kv), expected, **TOL)


def test_causal_mask():
    ours, ref = make_pair(16, 4)
    x = torch.randn(2, 6, 16, dtype=torch.float64)
    may_attend = torch.ones(6, 6, dtype=torch.bool).tril()
    # nn.MultiheadAttention's boolean masks mean the opposite: True = blocked.
    expected, _ = ref(x, x, x, attn_mask=~may_attend, need_weights=False)
    torch.testing.assert_close(ours(x, x, x, mask=may_attend), expected, **TOL)


def test_padding_mask():
    ours, ref = make_pair(16, 4)
    x = torch.randn(2, 5, 16, dtype=torch.float64)
    is_pad = torch.tensor([[False] * 5, [False, False, False, True, True]])
    expected, _ = ref(x, x, x, key_padding_mask=is_pad, need_weights=False)
    may_attend = (~is_pad)[:, None, None, :]  # (batch, 1, 1, T_k): broadcast over heads and queries
    torch.testing.assert_close(ours(x, x, x, mask=may_attend), expected, **TOL)


def test_gradients_reach_every_projection():
    ours, _ = make_pair(16, 4)
    x = torch.randn(2, 5, 16, dtype=torch.float64)
    ours(x, x, x).square().sum().backward()
    for name in ("w_q", "w_k", "w_v", "w_o"):
        grad = getattr(ours, name).weight.grad
        assert grad is not None and grad.abs().sum() > 0, f"no gradient reaches {name}"
