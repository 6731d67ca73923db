"""Every exercise checks itself: aiayn_helpers.course.exercises, and the chapters' check cells on filled-in stubs.

The notebook test builds the student edition of a chapter (tools/editions/make_student.py), fills
every answer cell with the book's solution (its own asserts removed: a student's answer
has none) and runs the chapter: every check cell must say "right". Then, in the same
kernel, it runs typical wrong answers (the solution with one planted mistake) and their
check cells: each must be reported wrong (``WrongAnswer``), so no wrong answer runs silently.
"""

from __future__ import annotations

import ast
import json
import os
import re
import sys
from pathlib import Path

import nbformat
import pytest
import torch
from nbclient import NotebookClient

from aiayn_helpers.course.exercises import (
    OneOf,
    Reference,
    WrongAnswer,
    check,
    check_that,
    decode,
    encode,
    exercise_name,
    quiz,
    reference,
)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from editions import make_student  # noqa: E402

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))

# exercise 3.1's attention step in the solution, replaced by hand-written attention in its slips
_SDPA_03 = (
    "heads, _ = ah.scaled_dot_product_attention(\n    split(ours.w_q(x)), split(ours.w_k(x)), split(ours.w_v(x))\n)"
)
_SDPA_03_QKV = "q, k, v = (split(ours.w_q(x)), split(ours.w_k(x)), split(ours.w_v(x)))\n"

# Typical wrong answers, at least two per chapter: (exercise, [(in the solution, replaced by), ...], the message
# it must get). Every slip of issue #36 is here, with the message that names it; an entry without a message
# only has to be reported wrong.
WRONG: dict[str, list[tuple[str, list[tuple[str, str]]]]] = {
    "00_a_first_look.ipynb": [
        ("ch00-ex1", [("share_embeddings=True", "share_embeddings=False")], "the vocabulary matrices are not shared"),
        ("ch00-ex1", [("d_ff=4096", "d_ff=2048")], "d_ff is 2,048, not Table 3's 4,096"),  # the base model's d_ff
        ("ch00-ex1", [("d_model=1024, ", "")], "d_model is 512, not Table 3's 1,024"),
        (
            "ch00-ex1",
            [("n_big = ah.count_parameters(big)", "n_big = sum(t.numel() for t in big.state_dict().values())")],
            "the count is taken over state_dict()",
        ),  # shared, but listed under three names: never told "not shared"
        (
            "ch00-ex1",
            [("n_big = ah.count_parameters(big)", "n_big = ah.count_parameters(big) / 1e6")],
            "a whole number",
        ),
    ],
    "02_scaled_dot_product_attention.ipynb": [
        ("ch02-ex1", [("((keys @ query) / tau)", "((keys @ query) * tau)")], "the scores are multiplied by tau"),
        (
            "ch02-ex1",
            [
                ("weights = ((keys @ query) / tau).softmax(0)", "weights = ((keys @ query[:, None]) / tau).softmax(1)"),
                ("(weights @ values).item()", "(weights.T @ values).item()"),
            ],
            "the weights do not sum to one over the keys",
        ),  # a softmax over the wrong axis: every weight 1, never told to "divide by tau"
        (
            "ch02-ex2",
            [("predicted_variance = d_k * sigma**4", "predicted_variance = d_k * sigma**2")],
            "given variance sigma^2 instead of sigma^2 * sigma^2",
        ),  # 256
        (
            "ch02-ex2",
            [
                (
                    "measured_variance = (q * k).sum(-1).var().item()",
                    "measured_variance = ((q * k).sum(-1) / math.sqrt(d_k)).var().item()",
                )
            ],
            "the sampled dot products are divided by sqrt(d_k)",
        ),  # the formula right, the sample scaled: one verdict, "not right", no "right" before it
        ("ch02-ex3", [("math.isqrt(n_params // 8) + 1", "math.isqrt(n_params) + 1")], "one head are counted"),
        ("ch02-ex3", [("math.isqrt(n_params // 8) + 1", "math.isqrt(n_params // 8)")], "check T and T - 1"),  # 2,808
        ("ch02-ex4", [('~bool_mask, float("-inf")', 'bool_mask, float("-inf")')], "A float mask is added"),
        ("ch02-ex4", [('~bool_mask, float("-inf")', "~bool_mask, -1.0")], "A float mask is added"),  # not -inf
        (
            "ch02-ex4",
            [('~bool_mask, float("-inf")', '~bool_mask, float("nan")')],
            "values are NaN (not a number)",
        ),  # reported as NaN, not as "difference is inf"
    ],
    "03_multi_head_attention.ipynb": [
        (
            "ch03-ex1",
            [("t.view(B, T, h, d_k).transpose(1, 2)", "t.view(B, h, T, d_k)")],
            "split into heads by a single view",
        ),
        (
            "ch03-ex1",
            [("heads.transpose(1, 2).reshape(B, T, d_model)", "heads.reshape(B, T, d_model)")],
            "the heads are merged by a reshape to (batch, T, d_model) straight from",
        ),
        (
            "ch03-ex1",
            [
                (
                    "by_hand = ours.w_o(heads.transpose(1, 2).reshape(B, T, d_model))",
                    "by_hand = heads.transpose(1, 2).reshape(B, T, d_model)",
                )
            ],
            "output projection w_o is not applied",
        ),
        (
            "ch03-ex1",
            [(_SDPA_03, _SDPA_03_QKV + "heads = (q @ k.transpose(-2, -1)).softmax(-1) @ v")],
            "not divided by sqrt(d_k)",
        ),
        (
            "ch03-ex1",
            [(_SDPA_03, _SDPA_03_QKV + "heads = (q @ k.transpose(-2, -1) / math.sqrt(d_k)).softmax(-2) @ v")],
            "softmax runs over the queries (dim -2)",
        ),
        (
            "ch03-ex1",
            [
                (
                    _SDPA_03,
                    _SDPA_03.replace("ours.w_q(x)", "x @ ours.w_q.weight + ours.w_q.bias")
                    .replace("ours.w_k(x)", "x @ ours.w_k.weight + ours.w_k.bias")
                    .replace("ours.w_v(x)", "x @ ours.w_v.weight + ours.w_v.bias"),
                )
            ],
            "multiplied by w_q, w_k and w_v's weights as stored (x @ W",
        ),
        (
            "ch03-ex1",
            [
                (
                    _SDPA_03,
                    _SDPA_03.replace("ours.w_q(x)", "x @ ours.w_q.weight.T")
                    .replace("ours.w_k(x)", "x @ ours.w_k.weight.T")
                    .replace("ours.w_v(x)", "x @ ours.w_v.weight.T"),
                )
            ],
            "the biases of w_q, w_k and w_v are left out",
        ),
        (
            "ch03-ex1",
            [
                ("t.view(B, T, h, d_k).transpose(1, 2)", "t.view(B, h, T, d_k)"),
                (
                    "by_hand = ours.w_o(heads.transpose(1, 2).reshape(B, T, d_model))",
                    "by_hand = heads.transpose(1, 2).reshape(B, T, d_model)",
                ),
            ],
            "single view to (batch, h, T, d_k), which deals the features of several positions out to one head and the "
            "output projection w_o is not applied",
        ),  # two slips, both named
        ("ch03-ex1", [("by_hand = ours.w_o(", "by_hand = 2 * ours.w_o(")], "Follow the module step by step"),  # no slip
        ("ch03-ex2", [("ours.w_o.weight[:, idx]", "ours.w_o.weight[idx]")], "the rows of w_o.weight (its outputs) are"),
        ("ch03-ex2", [("order = [2, 1, 0, 3]", "order = [1, 0, 2, 3]")], "heads 0 and 1 are swapped, not 0 and 2"),
        (
            "ch03-ex2",
            [("getattr(ours, name).bias[idx]", "getattr(ours, name).bias")],
            "the biases of w_q, w_k and w_v are not permuted with their rows",
        ),
        (
            "ch03-ex2",
            [("getattr(swapped, name).bias.copy_(getattr(ours, name).bias[idx])", "pass")],
            "the biases of w_q, w_k and w_v are not copied from ours",
        ),  # nonzero biases: a forgotten one shows
        ("ch03-ex3", [("key_padding_mask=~keep[:, 0, 0]", "key_padding_mask=keep[:, 0, 0]")], "True = blocked"),
        ("ch03-ex4", [("scores = q4[0, 0] @ k4[0, 0].T", "scores = x4[0] @ x4[0].T")], "a rank of 20 is full rank"),
        (
            "ch03-ex4",
            [("scores = q4[0, 0] @ k4[0, 0].T", "scores = narrow.w_q(x4)[0] @ narrow.w_k(x4)[0].T")],
            "a rank of 20 is full rank",
        ),  # another way to 20: the same property, no named computation
        # last: it edits ours in place, as the student did
        (
            "ch03-ex2",
            [("swapped = ah.MultiHeadAttention(d_model, h).double().eval()", "swapped = ours")],
            "swapped is ours, or shares its tensors",
        ),
    ],
    "04_positional_encoding.ipynb": [
        (
            "ch04-ex1",
            [("shift_matrix(-5, 64), shift_matrix(5, 64)", "shift_matrix(5, 64), shift_matrix(5, 64)")],
            "M_back steps forward: back_shifted holds PE_{pos+5}",
        ),
        (
            "ch04-ex1",
            [("back_shifted = pe64[5:] @ M_back.T", "back_shifted = pe64[5:] @ M_back")],
            "a row vector times a matrix applies its transpose",
        ),  # no transpose: a step forward, the round trip still the identity
        (
            "ch04-ex1",
            [("back_shifted = pe64[5:] @ M_back.T", "back_shifted = pe64[:-5] @ M_back.T")],
            "the table's first rows are mapped, PE_0 to PE_294",
        ),
        (
            "ch04-ex1",
            [("back_shifted = pe64[5:] @ M_back.T", "back_shifted = pe64 @ M_back.T")],
            "expected shape (295, 64), got shape (300, 64)",
        ),
        (
            "ch04-ex1",
            [("round_trip = M_back @ M_fwd", "round_trip = M_back.T @ M_fwd")],
            "round_trip steps 10 positions forward instead of none",
        ),
        (
            "ch04-ex1",
            [("round_trip = M_back @ M_fwd", "round_trip = M_back * M_fwd")],
            "Row pos of PE maps to the row vector",
        ),  # entry by entry: no slip named, the hint
        (
            "ch04-ex2",
            [
                (
                    "W_q, W_k = (\n    torch.randn(64, 64, dtype=torch.float64),\n"
                    "    torch.randn(64, 64, dtype=torch.float64),\n)",
                    "W_q = W_k = torch.randn(64, 64, dtype=torch.float64)",
                )
            ],
            "W_q and W_k are the same matrix",
        ),  # fmt: skip
        (
            "ch04-ex2",
            [("    not asymmetric,\n", "    asymmetric,\n")],
            "Look along the diagonal of the score matrix",
        ),  # the answer inverted: the hint
        (
            "ch04-ex2",
            [("[[c, -s], [s, c]], dtype=torch.float64", "[[c, -s], [s, 2 * c]], dtype=torch.float64")],
            "W's 2 x 2 blocks are not scaled rotations",
        ),
        (
            "ch04-ex2",
            [("W = torch.block_diag(*blocks)", "W = torch.randn(64, 64, dtype=torch.float64)")],
            "W is not block-diagonal",
        ),
        ("ch04-ex3", [("X, Y = tab[:-1], tab[1:]", "X, Y = tab[:-1], tab[:-1]")], "to the next one"),  # the identity
        (
            "ch04-ex3",
            [
                (
                    "tab = ah.sinusoidal_encoding(501, d_odd_or_even, dtype=torch.float64)",
                    "tab = ah.sinusoidal_encoding(501, d_odd_or_even)",
                )
            ],
            "the table is float32",
        ),
        ("ch04-ex4", [("math.log(10000.0) / (half - 1)", "math.log(10000.0) / half")], "the paper's spacing is used"),
        (
            "ch04-ex4",
            [
                (
                    "omega_t2t = torch.exp(-increment * torch.arange(half, dtype=torch.float64))",
                    "omega_t2t = torch.linspace(1.0, 1e-4, half, dtype=torch.float64)",
                )
            ],
            "the frequencies are evenly spaced",
        ),  # linear frequencies, from 1 to 1/10000: the weak check of issue #25 accepted them
        (
            "ch04-ex4",
            [
                (
                    "omega_t2t = torch.exp(-increment * torch.arange(half, dtype=torch.float64))",
                    "omega_t2t = torch.exp(increment * torch.arange(half, dtype=torch.float64))",
                )
            ],
            "those are Tensor2Tensor's timescales",
        ),
        (
            "ch04-ex4",
            [
                (
                    "omega_t2t = torch.exp(-increment * torch.arange(half, dtype=torch.float64))",
                    "omega_t2t = torch.exp(-increment * torch.arange(half))",
                )
            ],
            "omega_t2t is torch.float32",
        ),  # geometric to float32's rounding: not told it is not geometric
        (
            "ch04-ex4",
            [
                (
                    "omega_t2t = torch.exp(-increment * torch.arange(half, dtype=torch.float64))",
                    "omega_t2t = torch.exp(-increment * torch.arange(0, d, 2, dtype=torch.float64))",
                )
            ],
            "the exponent runs over the column index 0, 2, 4, ... (that is 2i)",
        ),  # the chapter's own box: 2i where i is meant
        (
            "ch04-ex4",
            [("math.log(10000.0) / (half - 1)", "math.log(10000.0) / (half - 1) * math.nan")],
            "64 of the 64 frequencies are NaN (not a number)",
        ),
        (
            "ch04-ex4",
            [("shared_columns = len(paper_cols & t2t_cols)", "shared_columns = len(t2t_cols)")],
            "Compare the sets of columns",
        ),
        (
            "ch04-ex4",
            [("shared_columns = len(paper_cols & t2t_cols)", "shared_columns = len(paper_cols & t2t_cols) // 2")],
            "Compare the sets of columns",
        ),  # the shared frequencies, not columns
    ],
    "01_history_of_attention.ipynb": [
        ("ch01-ex1", [("torch.zeros(n_align)", "torch.ones(n_align)")], "Follow the three steps"),  # not v_a = 0: hint
        (
            "ch01-ex1",
            [("alpha_zero = e_zero.softmax(dim=-1)", "alpha_zero = e_zero")],
            "alpha_zero is not a softmax over the source: its rows sum to 0, not 1",
        ),  # scores, not weights; the context is then consistent with them: no second slip named
        (
            "ch01-ex1",
            [("alpha_zero = e_zero.softmax(dim=-1)", "alpha_zero = e_zero.softmax(dim=0)")],
            "the softmax is taken over the batch (dim 0)",
        ),  # the chapter's common mistake: a softmax over the wrong axis
        (
            "ch01-ex1",
            [("context_zero = (alpha_zero.unsqueeze(-1) * h).sum(1)", "context_zero = h.sum(1)")],
            "context_zero is the plain sum of the annotations",
        ),
        (
            "ch01-ex1",
            [
                (
                    "context_zero = (alpha_zero.unsqueeze(-1) * h).sum(1)",
                    "context_zero = (alpha_zero.unsqueeze(-1) * h).mean(1)",
                )
            ],
            "context_zero is the mean of the weighted annotations",
        ),
        (
            "ch01-ex2",
            [("for m in (attentive.W_a, attentive.U_a, attentive.v_a)", "for m in (attentive.W_a,)")],
            "Count W_a, U_a and v_a",
        ),  # no slip named: the hint
        (
            "ch01-ex2",
            [
                (
                    "total = ah.count_parameters(attentive)",
                    "total = ah.count_parameters(attentive)\nalignment_model, total = total, alignment_model",
                )
            ],
            "alignment_model is larger than total",
        ),
        (
            "ch01-ex2",
            [
                (
                    "    p.numel()\n    for m in (attentive.W_a, attentive.U_a, attentive.v_a)\n"
                    "    for p in m.parameters()",
                    "    m.weight.numel()\n    for m in (attentive.W_a, attentive.U_a, attentive.v_a)",
                )
            ],
            "the bias of U_a is left out",
        ),
        (
            "ch01-ex3",
            [("s_rect = score_general(h_small, h_bar, W_rect)", "s_rect = score_general(h_small, h_bar, W_rect).T")],
            "s_rect is transposed: (T_x, B)",
        ),
        (
            "ch01-ex3",
            [
                (
                    "s_rect = score_general(h_small, h_bar, W_rect)",
                    "s_rect = score_general(h_small, h_bar, W_rect).softmax(-1)",
                )
            ],
            "s_rect holds the weights, the softmax of the scores",
        ),
        (
            "ch01-ex3",
            [("W_rect = torch.randn(16, 32)", "W_rect = torch.randn(32, 16)"), ("h_bar, W_rect)", "h_bar, W_rect.T)")],
            "W_rect is stored as (source size, decoder size)",
        ),  # the score is right, W_a's shape is not
        (
            "ch01-ex4",
            [("weights.max(dim=-1).values.mean()", "weights.mean(dim=-1).mean()")],
            "peaks holds a row's mean weight, which is 1/T_x",
        ),
        (
            "ch01-ex4",
            [(".topk(2, dim=-1).values.sum(dim=-1)", ".topk(2, dim=-1).values[..., 1]")],
            "the two largest weights together hold more than the largest alone",
        ),  # the second largest only: the property it breaks
        (
            "ch01-ex4",
            [
                ("weights.max(dim=-1).values.mean()", "weights.max(dim=1).values.mean()"),
                (".topk(2, dim=-1).values.sum(dim=-1)", ".topk(2, dim=1).values.sum(dim=1)"),
            ],
            "the largest weights are taken over the target axis (dim 1",
        ),  # the chapter's wrong-axis mistake: passed as right before
    ],
    "05_encoder.ipynb": [
        ("ch05-ex1", [(" + 2 * 2 * dm", "")], "or the two LayerNorms (a gain and a bias each) are left out (the count"),
        ("ch05-ex1", [("4 * (dm * dm + dm)", "4 * dm * dm")], "the biases of W_Q, W_K, W_V and W_O are left out, or"),
        (
            "ch05-ex1",
            [("(2 * dm * dff + dff + dm)", "(2 * dm * dff + dm)")],
            "or the feed-forward bias b_1 is left out",
        ),
        (
            "ch05-ex1",
            [("(2 * dm * dff + dff + dm)", "(2 * dm * dff)")],
            "the feed-forward biases b_1 and b_2 are left out",
        ),
        ("ch05-ex1", [("(2 * dm * dff + dff + dm)", "(2 * dm * dff + dff)")], "the feed-forward bias b_2 is left out"),
        (
            "ch05-ex1",
            [("4 * (dm * dm + dm) + (2 * dm * dff + dff + dm)", "4 * dm * dm + 2 * dm * dff")],
            "the biases (of W_Q, W_K, W_V, W_O and of the feed-forward network) are left out. (",
        ),
        (
            "ch05-ex1",
            [("4 * (dm * dm + dm) + (2 * dm * dff + dff + dm) + 2 * 2 * dm", "4 * dm * dm + 2 * dm * dff")],
            "network) are left out and the two LayerNorms (a gain and a bias each) are left out",
        ),  # weights only
        ("ch05-ex1", [("+ 2 * 2 * dm", "+ 2 * dm")], "half of the LayerNorms' numbers are counted"),  # one per layer
        ("ch05-ex1", [("4 * (dm * dm + dm)", "3 * (dm * dm + dm)")], "the output projection W_O is left out"),
        (
            "ch05-ex1",
            [("formula = n_layers * per_layer", "formula = per_layer")],
            "one layer is counted, not the stack",
        ),
        (
            "ch05-ex1",
            [("formula = n_layers * per_layer", "formula = n_layers * per_layer + 2 * dm")],
            "a final LayerNorm is counted",
        ),
        ("ch05-ex1", [("formula = n_layers * per_layer", "formula = n_layers * per_layer + 6")], "Count weights and"),
        (
            "ch05-ex1",
            [("formula = n_layers * per_layer", 'formula = float("nan")')],
            "your value is NaN (not a number)",
        ),
        ("ch05-ex2", [("permuted_out = enc(xs[:, perm])", "permuted_out = enc(xs)")], "the input is not permuted"),
        (
            "ch05-ex2",
            [("permuted_out = enc(xs[:, perm])", "permuted_out = enc(xs[:, perm])[:, perm.argsort()]")],
            "(or the output is permuted back)",
        ),
        (
            "ch05-ex2",
            [("permuted_out = enc(xs[:, perm])", "permuted_out = enc(xs[:, perm])\nperm = torch.randperm(8)")],
            "another order than perm's",
        ),  # perm drawn again after the output was computed
        (
            "ch05-ex2",
            [("ah.Encoder(2, 32, 4, 64, dropout=0.0).double().eval()", "ah.Encoder(2, 32, 4, 64).double()")],
            "training mode with dropout",
        ),
        (
            "ch05-ex2",
            [
                (
                    "ah.Encoder(2, 32, 4, 64, dropout=0.0).double().eval()",
                    "ah.Encoder(2, 32, 4, 64, dropout=0.0).eval()",
                ),
                ("xs = torch.randn(2, 8, 32, dtype=torch.float64)", "xs = torch.randn(2, 8, 32)"),
            ],
            "the encoder runs in torch.float32",
        ),
        ("ch05-ex2", [("permuted_out = enc(xs[:, perm])", "permuted_out = 2 * enc(xs[:, perm])")], "in float64 with"),
        ("ch05-ex3", [("norm_first=True", "norm_first=False")], "both stacks end in a LayerNorm"),  # post-norm
        ("ch05-ex3", [("final_norm=final_norm", "final_norm=True")], "both stacks end in a LayerNorm"),
        (
            "ch05-ex3",
            [
                (
                    "rms_without, rms_with = out_rms[False], out_rms[True]",
                    "rms_without, rms_with = out_rms[True], out_rms[False]",
                )
            ],
            "the two are swapped",
        ),
        (
            "ch05-ex3",
            [("out_rms[final_norm] = rms(enc(xs))", "out_rms[final_norm] = enc(xs).abs().mean().item()")],
            "the mean of the absolute values is taken",
        ),
        (
            "ch05-ex3",
            [("out_rms[final_norm] = rms(enc(xs))", "out_rms[final_norm] = enc(xs).pow(2).mean().item()")],
            "the square root of the mean of squares is not taken",
        ),  # passed before: 23 against 1
        ("ch05-ex3", [("enc = xavier_(", "enc = (")], "Xavier-initialised"),  # PyTorch's init: 1.8 against 1.0
        (
            "ch05-ex3",
            [
                (
                    "rms_without, rms_with = out_rms[False], out_rms[True]",
                    'rms_without, rms_with = float("nan"), out_rms[True]',
                )
            ],
            "neither is NaN (not a number)",
        ),
        ("ch05-ex4", [("layer.load_state_dict(shared.state_dict())", "pass")], "or dropout is still on"),  # not copied
        (
            "ch05-ex4",
            [("EncoderLayer(32, 4, 64, dropout=0.0).eval()", "EncoderLayer(32, 4, 64)")],
            "or dropout is still on",
        ),
        (
            "ch05-ex4",
            [
                (
                    "ah.count_parameters(shared), ah.count_parameters(stack)",
                    "ah.count_parameters(stack), ah.count_parameters(shared)",
                )
            ],
            "the two counts are swapped",
        ),
        (
            "ch05-ex4",
            [
                (
                    "n_shared, n_stack = ah.count_parameters(shared)",
                    "n_shared, n_stack = 6 * ah.count_parameters(shared)",
                )
            ],
            "the shared layer is counted once per use",
        ),
        (
            "ch05-ex4",
            [("ah.count_parameters(stack)", "ah.count_parameters(nn.ModuleList([shared] * 6))")],
            "holds one layer object six times",
        ),
        (
            "ch05-ex4",
            [
                ("EncoderLayer(32, 4, 64", "EncoderLayer(64, 4, 64"),
                ("ah.Encoder(6, 32, 4, 64", "ah.Encoder(6, 64, 4, 64"),
                ("xs = torch.randn(2, 5, 32)", "xs = torch.randn(2, 5, 64)"),
            ],
            "other sizes than the exercise's",
        ),
        (
            "ch05-ex4",
            [
                (
                    "same_output = torch.allclose(shared_encoder(xs), stack(xs), rtol=1e-5, atol=1e-6)",
                    "same_output = shared_encoder(xs) == stack(xs)",
                )
            ],
            "using your answer fails with RuntimeError",
        ),  # a tensor of booleans, not one
    ],
    "06_decoder.ipynb": [
        (
            "ch06-ex1",
            [("ours = float_mask == 0", "ours = float_mask.bool()")],
            "the mask is inverted: True where PyTorch blocks",
        ),  # nonzero read as allowed
        (
            "ch06-ex1",
            [("ours = float_mask == 0", "ours = float_mask")],
            "still PyTorch's additive float mask",
        ),  # not converted
        ("ch06-ex1", [("ours = float_mask == 0", "ours = (float_mask == 0).int()")], "the right entries as numbers"),
        ("ch06-ex1", [("ours = float_mask == 0", "ours = (float_mask == 0).T")], "the wrong triangle is kept"),
        (
            "ch06-ex1",
            [("ours = float_mask == 0", "ours = float_mask > 0")],
            "entries differ, the first at index (0, 0). Our masks are boolean",
        ),  # no slip
        ("ch06-ex2", [("src_changed[0, -2]", "src_changed[1, -2]")], "a token of another sentence is changed"),
        (
            "ch06-ex2",
            [('src_vocab.index("die")', 'src_vocab.index("schnell")')],
            "no token is changed",
        ),  # the same word
        (
            "ch06-ex2",
            [("(model(src_changed, tgt_in)[0] - logits[0])", "(model(src_changed, tgt_in) - logits)")],
            "change holds every sentence's positions",
        ),
        ("ch06-ex2", [(".abs().amax(dim=-1)", ".abs().amax(dim=0)")], "taken over the target positions"),
        ("ch06-ex2", [(".abs().amax(dim=-1)", ".abs().max()")], "change is one number"),
        (
            "ch06-ex3",
            [("floor_big = math.log(1 + (V_big - 1) / math.e)", "floor_big = math.log(V_big - 1)")],
            "the floor is taken as log(V - 1)",
        ),
        ("ch06-ex3", [("room = math.log(V_big) - floor_big", "room = floor_big")], "room is the floor itself"),
        (
            "ch06-ex3",
            [("room = math.log(V_big) - floor_big", "room = floor_big - math.log(V_big)")],
            "room is negative",
        ),
        ("ch06-ex3", [("V_big = 37000", "V_big = 1000")], "V is the chapter's 1000"),
        ("ch06-ex3", [("(V_big - 1) / math.e", "V_big / math.e")], "the floor counts V wrong tokens, not V - 1"),
        ("ch06-ex3", [("room = math.log(V_big) - floor_big", "room = 1.0")], "its limit as V grows"),
        (
            "ch06-ex3",
            [
                ("z_big = torch.zeros(1, V_big, dtype=torch.float64)", "z_big = torch.zeros(1, V_big)"),
                ("room = math.log(V_big) - floor_big", "room = math.log(V_big) - measured"),
            ],
            "(compared to 6 significant digits). A second softmax over p (one entry 1, the others 0)",
        ),  # measured in float32: off in the fifth digit; no slip named, the hint says float64
        (
            "ch06-ex4",
            [("torch.cat([tgt_out, pads], 1),", "torch.cat([pads, tgt_out], 1),")],
            "tgt_out is padded at the front",
        ),
        (
            "ch06-ex4",
            [("torch.cat([tgt_in, pads], 1),", "torch.cat([pads, tgt_in], 1),")],
            "the pads are put before tgt_in's",
        ),
        # the pads never used: every gap is 0, which the weak check of issue #25 accepted
        (
            "ch06-ex4",
            [("logits_padded = model(src, tgt_in_padded)", "logits_padded = model(src, tgt_in)")],
            "without pads",
        ),
        ("ch06-ex4", [("    ignore_index=PAD,\n", "")], "the pad positions are counted in the loss"),
        (
            "ch06-ex4",
            [("    ignore_index=PAD,\n", '    ignore_index=PAD,\n    reduction="sum",\n')],
            "summed over the tokens",
        ),
        (
            "ch06-ex4",
            [("logit_gap = (logits_padded[:, :T] - logits)", "logit_gap = (logits_padded[:, -T:] - logits)")],
            "does not hold: logit_gap is the largest change",
        ),  # the last T positions: no slip of the logits or the loss, the property named
        (
            "ch06-ex4",
            [
                ("logit_gap = (logits_padded[:, :T] - logits).abs().max().item()", "logit_gap = 0.0"),
                ("loss_gap = abs(loss_padded.item() - loss.item())", "loss_gap = 0.0"),
                ("logits_padded = model(src, tgt_in_padded)", "logits_padded = model(src, tgt_in)"),
            ],
            "without pads",
        ),
        # last: it edits src in place
        ("ch06-ex2", [("src_changed = src.clone()", "src_changed = src")], "src_changed is src itself (no .clone())"),
    ],
    "07_full_model.ipynb": [
        ("ch07-ex1", [("share_embeddings=False", "share_embeddings=True")], "built with share_embeddings=True"),  # tied
        ("ch07-ex1", [("vocab_share = 3 * 37000 * 512", "vocab_share = 37000 * 512")], "only one vocabulary matrix"),
        ("ch07-ex1", [("vocab_share = 3 * 37000 * 512", "vocab_share = 2 * 37000 * 512")], "two vocabulary matrices"),
        ("ch07-ex1", [("vocab_share = 3 * 37000 * 512", "vocab_share = 100 * 3 * 37000 * 512")], "is a percentage"),
        ("ch07-ex2", [("half_step = 4 * 4000", "half_step = 2 * 4000")], "fall like 1/step"),  # not 1/sqrt(step)
        ("ch07-ex2", [("half_step = 4 * 4000", "half_step = 4000")], "the peak's step"),
        ("ch07-ex2", [("half_step = 4 * 4000", "half_step = 4000 // 2")], "on the way up, in the warm-up"),
        ("ch07-ex2", [("half_step = 4 * 4000", "half_step = 3 * 4000")], "counted from the peak"),
        (
            "ch07-ex3",
            [("zip(hyps, references[:100])", "zip(hyps, references[1:101])")],
            "compared with another sentence's reference",
        ),  # references off by one
        (
            "ch07-ex3",
            [("float(np.mean(ah.score_hypotheses", "float(np.sum(ah.score_hypotheses")],
            "summed over the 100 sentences",
        ),  # a sum, not a mean
        ("ch07-ex3", [("references[:100])) / 100", "references[:100]))")], "the exact matches are counted"),
        ("ch07-ex4", [("len(b) * max(len(train_ids[i][side]) for i in b)", "len(b)")], "counts sentences"),
        (
            "ch07-ex4",
            [("used = sorted(i for b in bucketed for i in b)", "used = sorted(b[0] for b in bucketed)")],
            "used holds one index per batch",
        ),
        (
            "ch07-ex4",
            [("used = sorted(i for b in bucketed for i in b)", "used = [i for b in bucketed for i in b]")],
            "used is not sorted",
        ),
        (
            "ch07-ex4",
            [("used = sorted(i for b in bucketed for i in b)", "used = {i for b in bucketed for i in b}")],
            "used is a set",
        ),
        # largest from one side only, or counted before padding: both give the right 2,500 here (no check can tell)
    ],
    "08_using_the_model.ipynb": [
        (
            "ch08-ex1",
            [("cache_bytes = 2 * 6 * 100 * 1024 * 32 * 4 * 4", "cache_bytes = 6 * 100 * 1024 * 32 * 4 * 4")],
            "a factor 2 is left out",
        ),  # the keys only
        (
            "ch08-ex1",
            [("cache_bytes = 2 * 6 * 100 * 1024 * 32 * 4 * 4", "cache_bytes = 2 * 6 * 100 * 1024 * 32 * 4")],
            "a factor 4 is left out: the 4 beams, or the 4 bytes",
        ),
        (
            "ch08-ex1",
            [("cache_bytes = 2 * 6 * 100 * 1024 * 32 * 4 * 4", "cache_bytes = 2 * 12 * 100 * 1024 * 32 * 4 * 4")],
            "a factor 2 too many: only the decoder's self-attention is cached",
        ),  # the encoder's layers counted too
        (
            "ch08-ex1",
            [("cache_bytes = 2 * 6 * 100 * 1024 * 32 * 4 * 4", "cache_bytes = 2 * 6 * 100 * 64 * 32 * 4 * 4")],
            "each position is given one head's d_k",
        ),
        (
            "ch08-ex1",
            [("cache_bytes = 2 * 6 * 100 * 1024 * 32 * 4 * 4", "cache_bytes = 2 * 6 * 100 * 16 * 1024 * 32 * 4 * 4")],
            "the heads are counted on top of d_model",
        ),
        (
            "ch08-ex1",
            [("cache_bytes = 2 * 6 * 100 * 1024 * 32 * 4 * 4", "cache_bytes = 2 * 6 * 100 * 1024 * 32 * 4 * 4 / 1e6")],
            "the size is given in megabytes",
        ),
        (
            "ch08-ex2",
            [('"beam" if b > g else "greedy"', '"beam" if b < g else "greedy"')],
            "the lower score is taken as the better one, or the two scores are read in the wrong order",
        ),  # more negative = better
        (
            "ch08-ex2",
            [("ids([greedy_hyps[i], beam_hyps[i]])", "ids([beam_hyps[i], greedy_hyps[i]])")],
            "the two scores are read in the wrong order",
        ),  # the hypotheses handed over in the other order: not told it took the lower score
        (
            "ch08-ex3",
            [("model.decoder.layers[0].cross_attn", "model.decoder.layers[1].cross_attn")],
            "another decoder layer's cross-attention is used",
        ),
        (
            "ch08-ex3",
            [("model.decoder.layers[0].cross_attn", "model.decoder.layers[0].self_attn")],
            "self-attention projects the memory, not its cross-attention",
        ),
        ("ch08-ex3", [("cross_k, cross_v = model", "cross_v, cross_k = model")], "the keys and values are swapped"),
        (
            "ch08-ex3",
            [
                (
                    "model.decoder.layers[0].cross_attn.project_kv(memory, memory)",
                    "model.decoder.layers[0].cross_attn.w_k(memory), model.decoder.layers[0].cross_attn.w_v(memory)",
                )
            ],
            "the keys are not split into heads",
        ),
    ],
    "09_what_the_paper_measured.ipynb": [
        ("ch09-ex1", [("h[0, -1].sum().backward()", "h[0, 1].sum().backward()")]),  # a position next to the first
        (
            "ch09-ex1",
            [("restricted_layers = next(L for L in range(1, 21) if restricted_reaches(L))", "restricted_layers = 5")],
            "the distance is divided by r",
        ),  # ceil(n / r), Table 1's O(n/r) read without its constant
        (
            "ch09-ex1",
            [("restricted_layers = next(L for L in range(1, 21) if restricted_reaches(L))", "restricted_layers = 8")],
            "2(n - 1)/r: a layer reaches floor(r/2) = (r - 1)/2 positions a side",
        ),
        (
            "ch09-ex1",
            [
                (
                    "restricted_layers = next(L for L in range(1, 21) if restricted_reaches(L))",
                    "restricted_layers = next(L for L in range(21) if restricted_reaches(L + 1))",
                )
            ],
            "if you measured it: look for the smallest stack",
        ),  # counted from 0: one too few, told so without being told it used 2n/r
        ("ch09-ex2", [('8 * TFLOPS["P100"]', 'TFLOPS["P100"]')], "one GPU counted instead of 8"),
        (
            "ch09-ex2",
            [('TFLOPS["P100"] * 1e12\n    for steps', 'TFLOPS["K80"] * 1e12\n    for steps')],
            "another GPU's rate is used",
        ),
        (
            "ch09-ex2",
            [('TFLOPS["P100"] * 1e12\n    for steps', 'TFLOPS["M40"] * 1e12\n    for steps')],
            "another GPU's rate is used",
        ),
        (
            "ch09-ex2",
            [("[(100_000, 0.4), (300_000, 1.0)]", "[(300_000, 1.0), (100_000, 0.4)]")],
            "the pair is in the order (big, base)",
        ),
        (
            "ch09-ex2",
            [('steps * seconds * 8 * TFLOPS["P100"] * 1e12', 'steps * seconds * 8 * TFLOPS["P100"]')],
            "9.5 TFLOPS is taken as 9.5 FLOP/s",
        ),
        (
            "ch09-ex2",
            [("[(100_000, 0.4), (300_000, 1.0)]", "[(1, 12 * 3600), (1, 3.5 * 86_400)]")],
            "the quoted training times (12 hours, 3.5 days) are used",
        ),
        (
            "ch09-ex3",
            [("[pre_tokenized(sub_refs)]", "[sub_refs]")],
            "only the outputs are pre-tokenized",
        ),  # the references left untokenized
        ("ch09-ex3", [("pre_tokenized(sub_hyps)", "sub_hyps")], "only the references are pre-tokenized"),
        ("ch09-ex3", [(', tokenize="none", force=True\n', ", force=True\n")], "a second time"),
        (
            "ch09-ex3",
            [("compound_gain = (", "compound_gain = -(")],
            "the difference is taken the other way round",
        ),
        (
            "ch09-ex3",
            [
                ("[hyps[i] for i in with_compound]", "hyps"),
                ("[references[i] for i in with_compound]", "references"),
            ],
            "the whole test set is scored",
        ),
        ("ch09-ex3", [("- sacrebleu.corpus_bleu(sub_hyps, [sub_refs]).score", "")], "the tokenized score itself"),
    ],
    "10_after_the_paper.ipynb": [
        (
            "ch10-ex1",
            [("2 ** (-8 / n_heads * (head + 1))", "2 ** (-8 / n_heads * head)")],
            "the slope used is 2^-2, that of head 0 of 4 heads (heads count from 0), or that of head 1 of 8 heads",
        ),  # heads counted from 1 (it was told 'head 1 given the first slope, ... or the slopes of 8 heads')
        (
            "ch10-ex1",
            [("bias_10_4 = -slope * (10 - 4)", "bias_10_4 = slope * (10 - 4)")],
            "the bias comes out positive",
        ),  # a bonus, not a penalty
        (
            "ch10-ex1",
            [("bias_10_4 = -slope * (10 - 4)", "bias_10_4 = -slope * (10 - 4 + 1)")],
            "the distance is counted as 7, not as i - j",
        ),  # off by one
        (
            "ch10-ex1",
            [("bias_10_4 = -slope * (10 - 4)", "bias_10_4 = -slope * (4 - 10)")],
            "the bias comes out positive",
        ),  # the distance j - i: positive too, never told it added with a plus sign
        (
            "ch10-ex1",
            [("2 ** (-8 / n_heads * (head + 1))", "2 ** (-8 * (head + 1))")],
            "the exponent -8 (i + 1) is not divided by the number of heads",
        ),
        ("ch10-ex1", [("bias_10_4 = -slope * (10 - 4)", "bias_10_4 = -slope")], "the slope alone is given"),
        (
            "ch10-ex2",
            [
                ("ell = np.exp(m_a - m) * l_a + np.exp(m_b - m) * l_b", "ell = l_a + l_b"),
                ("o = np.exp(m_a - m) * o_a + np.exp(m_b - m) * o_b", "o = o_a + o_b"),
            ],
            "the halves' ell and o are added as they are, not first rescaled to the common maximum m",
        ),
        (
            "ch10-ex2",
            [("merged = o / ell", "merged = o")],
            "the merged o is not divided by the merged ell",
        ),  # it was told to rescale, which it did
        (
            "ch10-ex2",
            [("np.exp(m_a - m)", "np.exp(m - m_a)"), ("np.exp(m_b - m)", "np.exp(m - m_b)")],
            "each half is multiplied by exp(m - m_half) instead of exp(m_half - m)",
        ),
        (
            "ch10-ex2",
            [("merged = o / ell", "merged = (o_a / l_a + o_b / l_b) / 2")],
            "the halves' outputs o / ell are averaged with equal weights",
        ),
        (
            "ch10-ex2",
            [("ell = np.exp(m_a - m) * l_a + np.exp(m_b - m) * l_b", "ell = l_a + l_b")],
            "the o are rescaled but the ell are not",
        ),
        (
            "ch10-ex3",
            [
                (
                    '"mask": p * 0.8, "random": p * 0.1, "unchanged": p * 0.1',
                    '"mask": 0.8, "random": 0.1, "unchanged": 0.1',
                )
            ],
            "80/10/10 are taken as shares of all tokens, not of the chosen 15%",
        ),
        (
            "ch10-ex3",
            [('"predicted": p}', '"predicted": p * 0.8}')],
            "only the [MASK]ed tokens are counted as predicted",
        ),
        (
            "ch10-ex3",
            [('"predicted": p}', '"predicted": 1.0}')],
            "the loss is computed on every token, not only on the chosen ones",
        ),  # the second shortcut of the chapter's common-mistake box
        (
            "ch10-ex3",
            [
                (
                    '"mask": p * 0.8, "random": p * 0.1, "unchanged": p * 0.1',
                    '"mask": p, "random": 0.0, "unchanged": 0.0',
                )
            ],
            "every chosen token becomes [MASK]",
        ),  # the first shortcut of the box
        ("ch10-ex3", [("p = 0.15\n", "p = 15\n")], "the fractions are given in percent"),
        (
            "ch10-ex3",
            [('"unchanged": p * 0.1', '"unchanged": 1 - p + p * 0.1')],
            "the tokens never chosen are counted as unchanged",
        ),
    ],
    "A_forward_pass_numpy.ipynb": [
        (
            "chA-ex1",
            [("total = sum(a.size for a in params.values())", "total = len(params)")],
            "the arrays of params are counted, not the numbers they hold",
        ),
        (
            "chA-ex1",
            [('attn = {name.rsplit(".", 2)[0] for name', "attn = {name for name")],
            "the attention modules' arrays are counted (8 per module",
        ),
        (
            "chA-ex1",
            [('for name in params if "attn." in name}', 'for name in params if "self_attn." in name}')],
            "the decoder's cross-attention modules are left out",
        ),
        (
            "chA-ex2",
            [("tgt_changed[:, -1] = (tgt[:, -1]", "tgt_changed[:, 0] = (tgt[:, 0]")],
            "the tokens at position 0 are changed, not the last one",
        ),
        (
            "chA-ex2",
            [("changed = forward(src, tgt_changed, params)", "changed = forward(src, tgt, params)")],
            "changed is computed from tgt, not from tgt_changed",
        ),
        (
            "chA-ex2",
            [
                (
                    "changed = forward(src, tgt_changed, params)",
                    "changed = decode(tgt_changed, encode(src, params), src, params)",
                )
            ],
            "changed holds the logits (decode's output)",
        ),  # it used to be told that the causal mask failed
        (
            "chA-ex3",
            [("decode(out, memory, src, params)[:, -1]", "decode(out, memory, src, params)[:, 0]")],
            "each step appends the most probable token at the first position",
        ),
        (
            "chA-ex3",
            [("    return out\n\n\ndef greedy_torch", "    return out[:, 1:]\n\n\ndef greedy_torch")],
            "the start token 1 is left out of the output",
        ),
        (
            "chA-ex3",
            [
                (
                    "decode(out, memory, src, params)[:, -1].argmax(-1)",
                    "decode(out, memory, src, params).argmax(1)[:, -1]",
                )
            ],
            "the argmax is taken over the positions",
        ),
        (
            "chA-ex4",
            [
                (
                    'return x + feed_forward(layer_norm(x, p, "norm2"), sub(p, "ff."))',
                    'return layer_norm(x + feed_forward(x, sub(p, "ff.")), p, "norm2")',
                )
            ],
            "the feed-forward sub-layer is post-norm",
        ),  # fmt: skip
        (
            "chA-ex4",
            [('"norm1"', '"normX"'), ('"norm2"', '"norm1"'), ('"normX"', '"norm2"')],
            "norm1 and norm2 are swapped",
        ),  # invisible while the LayerNorms' weights were 1 and biases 0
        ("chA-ex4", [("            src_mask,\n", "            None,\n")], "the padding mask is not passed"),
        (
            "chA-ex4",
            [("layer_norm(", "layer_norm_wrong(")],
            "the LayerNorms divide by std + eps instead of sqrt(var + eps)",
        ),  # the appendix's own common mistake
        (
            "chA-ex4",
            [("layer_norm(", "(lambda x, p, name: x_hat(x))(")],
            "the LayerNorms' learned scale and shift (weight and bias) are left out",
        ),  # the body's x_hat: a layer norm without gamma and beta
        # last: it edits tgt in place, which later cells read
        ("chA-ex2", [("tgt_changed = tgt.copy()", "tgt_changed = tgt")], "tgt_changed is tgt itself"),
    ],
}
# Answers that must pass although they differ from the solution: (exercise, [(in the solution, replaced by)]).
ALSO_RIGHT: dict[str, list[tuple[str, list[tuple[str, str]]]]] = {
    "02_scaled_dot_product_attention.ipynb": [  # the text's "about 63 M" gives 2,807, the exact count 2,809
        ("ch02-ex3", [("math.isqrt(n_params // 8) + 1", "math.isqrt(63_000_000 // 8) + 1")]),
    ],
    "06_decoder.ipynb": [  # the floor measured in float64 instead of computed from the formula
        ("ch06-ex3", [("room = math.log(V_big) - floor_big", "room = math.log(V_big) - measured")]),
    ],
    "10_after_the_paper.ipynb": [  # a random draw gives the token back 1 time in 1,001: counted as unchanged
        (
            "ch10-ex3",
            [
                (
                    '"random": p * 0.1, "unchanged": p * 0.1',
                    '"random": p * 0.1 * 1000 / 1001, "unchanged": p * 0.1 * 1002 / 1001',
                )
            ],
        ),
    ],
}
# chapters whose exercises do not have check cells yet (each is a known gap, listed in the issue)
PENDING: set[str] = set()  # every chapter has its check cells

# ---------------------------------------------------------------------------- the helper


def test_exercise_names_match_the_site():
    assert exercise_name("ch03-ex1") == "Exercise 3.1"
    assert exercise_name("ch00-ex4") == "Exercise 0.4"
    assert exercise_name("chA-ex2") == "Exercise A.2"
    assert exercise_name("something-else") == "something-else"


def test_check_right_unanswered_and_wrong(capsys):
    check("ch02-ex2", 1024.0, 1024.0, why="d_k sigma^4.")
    assert capsys.readouterr().out == "✓ Exercise 2.2: right. d_k sigma^4.\n"
    check("ch02-ex2", ..., 1024.0)
    assert "○ Exercise 2.2: not answered yet" in capsys.readouterr().out
    mistaken = r"when each product has variance sigma\^2\. \(your value 256 is not the right one"
    with pytest.raises(WrongAnswer, match=mistaken):
        check("ch02-ex2", 256.0, 1024.0, mistakes={"each product has variance sigma^2": 256.0})
    hinted = r"not right: your value 100 is not the right one \(compared to a relative 1e-06\)\. Think of d_k\."
    with pytest.raises(WrongAnswer, match=hinted):
        check("ch02-ex2", 100.0, 1024.0, hint="Think of d_k.")
    assert isinstance(WrongAnswer("x"), AssertionError), "a wrong answer stops the notebook like an assert"


def test_check_answers_computed_from_the_students_objects(capsys):
    check("ch03-ex2", lambda: 1 / 0, 1.0, given=(..., 2))  # not answered: the function is never called
    assert "not answered yet" in capsys.readouterr().out
    check("ch03-ex2", lambda: 2.0, lambda: 2.0, given=3)
    assert "right" in capsys.readouterr().out
    with pytest.raises(WrongAnswer, match="using your answer fails with ZeroDivisionError: division by zero"):
        check("ch03-ex2", lambda: 1 / 0, 1.0, given=3)
    check("ch01-ex4", {10: ..., 25: 0.9}, {10: True, 25: True})
    assert "not answered yet" in capsys.readouterr().out


def test_check_tensors_say_what_differs():
    expected = torch.arange(6.0).reshape(2, 3)
    check("ch03-ex1", expected.clone().double(), expected)  # dtype does not matter, values do
    with pytest.raises(WrongAnswer, match=r"expected shape \(2, 3\), got shape \(3, 2\)"):
        check("ch03-ex1", expected.T, expected)
    wrong = expected.clone()
    wrong[1, 2] += 0.5
    with pytest.raises(WrongAnswer, match=r"1 of 6 values differ; the largest difference is 0.5, at index \(1, 2\)"):
        check("ch03-ex1", wrong, expected)
    with pytest.raises(WrongAnswer, match="expected a tensor"):
        check("ch03-ex1", 3.0, expected)
    with pytest.raises(WrongAnswer, match="1 entries differ"):
        check("ch06-ex1", torch.tensor([True, False]), torch.tensor([True, True]))
    with pytest.raises(WrongAnswer, match=r"item 1: expected False, got True"):
        check("ch04-ex2", (True, True), (True, False))
    with pytest.raises(WrongAnswer, match=r"\[7\]: expected False"):
        check("ch04-ex3", {6: True, 7: True}, {6: True, 7: False})
    with pytest.raises(WrongAnswer, match=r"your value 3 is not the right one \(compared exactly\)"):
        check("ch04-ex4", 3, 2)
    check("ch07-ex2", "B ", "b")  # choices: case and spaces do not matter


def test_reference_hides_the_value_and_compares_after_rounding(capsys):
    digest = reference("ch07-ex2", 16000)
    assert "16000" not in digest and digest.startswith("sha256:int:")
    check("ch07-ex2", 16000, Reference(digest))
    check("ch07-ex2", 16000.0, Reference(digest))  # a whole float is the same number
    assert capsys.readouterr().out.count("right.") == 2
    with pytest.raises(
        WrongAnswer, match=r"when the rate falls like 1/step\. \(your value 8000 is not the right one"
    ) as e:
        check(
            "ch07-ex2",
            8000,
            Reference(digest),
            mistakes={"the rate falls like 1/step": Reference(reference("ch07-ex2", 8000))},
        )
    assert "16000" not in str(e.value) and "16,000" not in str(e.value)
    with pytest.raises(WrongAnswer, match="expected a whole number"):
        check("ch07-ex2", "16000", Reference(digest))
    with pytest.raises(WrongAnswer):  # the label is part of the digest
        check("ch07-ex3", 16000, Reference(digest))
    room = Reference(reference("ch06-ex3", 0.4605170185988091))
    check("ch06-ex3", 0.4605170185988091 * (1 + 1e-12), room)  # rounding errors pass
    with pytest.raises(WrongAnswer, match="compared to 6 significant digits"):
        check("ch06-ex3", 0.4605, room)
    table = torch.linspace(0, 1, 6, dtype=torch.float64).reshape(2, 3)
    check("ch04-ex4", table + 1e-13, Reference(reference("ch04-ex4", table)))
    with pytest.raises(WrongAnswer, match=r"expected shape \(2, 3\), got shape \(3, 2\)"):
        check("ch04-ex4", table.T, Reference(reference("ch04-ex4", table)))
    yes_no = (Reference(reference("ch04-ex2", True)), Reference(reference("ch04-ex2", False)))
    check("ch04-ex2", (True, False), yes_no)
    with pytest.raises(WrongAnswer, match="item 1: expected True or False"):
        check("ch04-ex2", (True, 0), yes_no)


def test_reference_within_accepts_a_small_difference_and_has_no_boundary():
    near = Reference(reference("ch09-ex3", 2.54, within=0.1))
    for close in (2.54, 2.45, 2.6, 2.63, 2.5 + 1e-12, 2.5 - 1e-12):  # across the grid too
        check("ch09-ex3", close, near)
    for far in (2.2, 2.36, 2.75, -2.54):
        with pytest.raises(WrongAnswer, match="is not within about 0.1 of the right one"):
            check("ch09-ex3", far, near)
    with pytest.raises(WrongAnswer, match="expected a number"):
        check("ch09-ex3", "2.54", near)
    with pytest.raises(WrongAnswer, match=r"your value is NaN \(not a number\)"):
        check("ch09-ex3", float("nan"), near)  # NaN said as NaN, not "expected a number"
    with pytest.raises(ValueError, match="within must be a positive number"):
        reference("ch09-ex3", 2.54, within=0)
    with pytest.raises(ValueError, match="a finite number"):
        reference("ch09-ex3", float("nan"), within=0.1)


def test_reference_rejects_what_it_cannot_compare_safely():
    with pytest.raises(ValueError, match="rounding boundary"):
        reference("ch01-ex1", 0.125, digits=2)  # 0.12 or 0.13: 1e-16 decides
    with pytest.raises(ValueError, match="too close to 0"):
        reference("ch01-ex1", 1e-11)
    with pytest.raises(ValueError, match="a bool, an int, a float, a str or a tensor"):
        reference("ch01-ex1", [1, 2])
    with pytest.raises(ValueError, match="digits must be an int from 1 to 15"):
        reference("ch01-ex1", 1.0, digits=0)
    with pytest.raises(ValueError, match="label must be an exercise label"):
        reference("", 1.0)
    with pytest.raises(ValueError, match="64 hex digits"):
        Reference("16000")
    with pytest.raises(ValueError, match="inside check"):
        Reference(reference("ch01-ex1", 1)).difference(1)


def test_check_names_the_reference_it_compares_with():
    with pytest.raises(WrongAnswer, match="not right: not the same as PyTorch's softmax: 1 of 2 values differ"):
        check("ch10-ex2", torch.tensor([0.5, 0.6]), torch.tensor([0.5, 0.5]), against="PyTorch's softmax")
    with pytest.raises(ValueError, match="against must be a phrase"):
        check("ch10-ex2", 1.0, 1.0, against=3)


def test_check_that_names_the_property_that_fails(capsys):
    weights = torch.tensor([[0.2, 0.8], [0.5, 0.5]])

    def sum_one():
        return torch.allclose(weights.sum(-1), torch.ones(2))

    sums_to_one = ("the weights sum to one over the source", sum_one)
    check_that("ch01-ex1", [sums_to_one], given=weights, why="A softmax.")
    assert capsys.readouterr().out == "✓ Exercise 1.1: right. A softmax.\n"
    check_that("ch01-ex1", [sums_to_one], given=(weights, ...))
    assert "not answered yet" in capsys.readouterr().out
    weights = torch.tensor([[0.2, 0.7], [0.5, 0.5]])
    shape = ("shape (B, T_x) = (2, 2)", lambda: weights.shape == (2, 2))
    failed = "this property does not hold: the weights sum to one over the source. Hint."
    with pytest.raises(WrongAnswer, match=failed):
        check_that("ch01-ex1", [shape, sums_to_one], given=weights, hint="Hint.")
    with pytest.raises(WrongAnswer, match=r"does not hold: shape \(checking it fails with ZeroDivisionError"):
        check_that("ch01-ex1", [("shape", lambda: 1 / 0)], given=weights)
    for bad in ([], "shape", [("shape", True)], [(1, lambda: True)]):
        with pytest.raises(ValueError, match="properties must be a list of"):
            check_that("ch01-ex1", bad, given=weights)


def test_check_takes_properties_instead_of_an_expected_value(capsys):
    mask = torch.ones(3, 3, dtype=torch.bool).tril()
    causal = [("no position attends to a later one", lambda: not mask.triu(1).any())]
    check("ch06-ex1", properties=causal, given=mask, why="Causal.")
    assert capsys.readouterr().out == "✓ Exercise 6.1: right. Causal.\n"
    mask = torch.ones(3, 3, dtype=torch.bool)
    with pytest.raises(WrongAnswer, match="does not hold: no position attends to a later one"):
        check("ch06-ex1", properties=causal, given=mask)
    with pytest.raises(ValueError, match="takes no answer or expected"):
        check("ch06-ex1", mask, properties=causal, given=mask)
    with pytest.raises(ValueError, match="takes no answer or expected"):
        check("ch06-ex1", properties=causal)  # given= says what the student answered
    with pytest.raises(ValueError, match="needs an answer and an expected value"):
        check("ch06-ex1", mask)


def _quiz_outputs(monkeypatch, questions, key="chX") -> list[list[str]]:
    pytest.importorskip("jupyterquiz")
    import jupyterquiz.dynamic.display as shown

    runs: list[list[str]] = []
    monkeypatch.setattr(shown, "display", lambda obj: runs[-1].append(obj.data))
    for _ in range(2):
        runs.append([])
        quiz(questions, key=key)
    return runs


def _shown_questions(script: str) -> list[dict]:
    """The questions a quiz's saved script hands to the page (base64 JSON)."""
    import base64
    import json

    return json.loads(base64.b64decode(re.search(r'window\.atob\("([A-Za-z0-9+/=]+)"\)', script)[1]))


def test_quiz_output_is_the_same_every_run_and_hides_the_key(monkeypatch):
    questions = [{"question": "Q?", "type": "multiple_choice", "answers": [{"answer": "a", "correct": True}]}]
    runs = _quiz_outputs(monkeypatch, encode(json.dumps(questions)))
    assert runs[0] == runs[1] and len(runs[0]) == 2, "the saved output must not change between runs (nbval)"
    for shown in runs[0]:
        assert "Q?" not in shown and not re.search(r'"correct"\s*:\s*true', shown), "no readable key in the output"
    assert _shown_questions(runs[0][1]) == questions
    assert _quiz_outputs(monkeypatch, questions)[0] == runs[0], "a plain list: the same shuffled, hidden quiz"
    with pytest.raises(ValueError, match="at least one of them correct"):
        quiz([{"question": "Q?", "answers": [{"answer": "a", "correct": False}]}], key="chX")
    with pytest.raises(ValueError, match=r"encode\(json.dumps\(questions\)\)"):
        quiz(encode("not json"), key="chX")


def test_quiz_options_are_shuffled_the_same_way_every_run(monkeypatch):
    def question(i):
        answers = [{"answer": f"right {i}", "correct": True, "feedback": "Right."}]
        answers += [{"answer": f"wrong {i}.{j}", "correct": False, "feedback": "No."} for j in range(2)]
        return {"question": f"Q{i}?", "type": "multiple_choice", "answers": answers}

    for n in (2, 3, 5):
        questions = [question(i) for i in range(n)]
        runs = _quiz_outputs(monkeypatch, encode(json.dumps(questions)), key=f"ch{n}")
        shown = _shown_questions(runs[0][1])
        assert runs[0] == runs[1]
        places = [next(i for i, a in enumerate(q["answers"]) if a["correct"]) for q in shown]
        assert len(set(places)) > 1, f"{n} questions: the right answer is always option {places[0]}"
        for before, after in zip(questions, shown):  # the same options, feedback kept with its answer
            assert sorted(map(json.dumps, before["answers"])) == sorted(map(json.dumps, after["answers"]))


def test_encoded_texts_are_unreadable_and_come_back():
    for text in ("Var(q . k) = d_k sigma^4", "rank at most d_k = 4 √ — ü", ""):
        coded = encode(text)
        assert coded.startswith("aiayn:") and (not text or text not in coded) and decode(coded) == text
    assert decode("plain words") == "plain words"
    with pytest.raises(ValueError, match="not a text made by encode"):
        decode("aiayn:not base64!")
    with pytest.raises(ValueError, match="takes a str"):
        encode(3)


def test_check_says_why_only_when_right_and_decodes_its_words(capsys):
    why, hint = encode("d_k sigma^4."), encode("Think of d_k.")
    check("ch02-ex2", ..., 1024.0, why=why, hint=hint)
    unanswered = capsys.readouterr().out
    assert "not answered yet" in unanswered and "sigma" not in unanswered and "d_k" not in unanswered
    check("ch02-ex2", 1024.0, 1024.0, why=why, hint=hint)
    assert capsys.readouterr().out == "✓ Exercise 2.2: right. d_k sigma^4.\n"
    with pytest.raises(WrongAnswer, match=r"not right: your value 100 is not the right one .*\. Think of d_k\.$") as e:
        check("ch02-ex2", 100.0, 1024.0, why=why, hint=hint)
    assert "sigma" not in str(e.value) and "1024" not in str(e.value), "a wrong answer is not told the answer"
    with pytest.raises(WrongAnswer, match="This is what you get when one product is counted"):
        check("ch02-ex2", 16.0, 1024.0, mistakes={encode("one product is counted"): 16.0})
    with pytest.raises(WrongAnswer, match="does not hold: the sum is one"):
        check_that("ch01-ex1", [(encode("the sum is one"), lambda: False)], given=1)


def test_requires_names_a_missing_property_before_comparing(capsys):
    weights = torch.tensor([[0.2, 0.7], [0.5, 0.5]])
    sums = [("the weights sum to one", lambda: torch.allclose(weights.sum(-1), torch.ones(2)))]
    right = Reference(reference("ch01-ex1", torch.tensor([[0.2, 0.8], [0.5, 0.5]])))
    with pytest.raises(WrongAnswer, match="does not hold: the weights sum to one. Softmax."):
        check("ch01-ex1", weights, right, requires=sums, hint="Softmax.", why="Uniform.")
    weights = torch.tensor([[0.3, 0.7], [0.5, 0.5]])
    with pytest.raises(WrongAnswer, match="is not the right one"):
        check("ch01-ex1", weights, right, requires=sums)
    assert capsys.readouterr().out == "", "one verdict: no 'right' for the properties alone"
    weights = torch.tensor([[0.2, 0.8], [0.5, 0.5]])
    check("ch01-ex1", weights, right, requires=sums, why="Uniform.")
    assert capsys.readouterr().out == "✓ Exercise 1.1: right. Uniform.\n"


def test_one_of_several_right_answers():
    both = OneOf(Reference(reference("ch02-ex3", 2809)), Reference(reference("ch02-ex3", 2807)))
    for right in (2809, 2807, 2807.0):
        check("ch02-ex3", right, both)
    with pytest.raises(WrongAnswer, match=r"your value 2808 is not the right one \(compared exactly\)"):
        check("ch02-ex3", 2808, both)
    with pytest.raises(WrongAnswer, match="when one head is counted"):
        check("ch02-ex3", 7938, both, mistakes={"one head is counted": OneOf(7943, 7938)})
    with pytest.raises(ValueError, match="two or more right answers"):
        OneOf(1)


def test_nan_is_reported_as_nan():
    with pytest.raises(WrongAnswer, match=r"2 of 4 values are NaN \(not a number\), the first at index \(0, 1\)"):
        check("ch02-ex4", torch.tensor([[1.0, float("nan")], [float("nan"), 2.0]]), torch.ones(2, 2))
    with pytest.raises(WrongAnswer, match=r"your value is NaN \(not a number\)"):
        check("ch02-ex2", float("nan"), 1024.0)
    with pytest.raises(WrongAnswer, match=r"your value is NaN \(not a number\)"):
        check("ch02-ex2", torch.tensor(float("nan")), Reference(reference("ch02-ex2", 1024.0)))
    with pytest.raises(WrongAnswer, match=r"1 of 2 values are NaN"):
        check("ch04-ex4", torch.tensor([1.0, float("nan")]), Reference(reference("ch04-ex4", torch.ones(2))))
    for wrong in (float("nan"), torch.tensor([float("nan")])):
        try:
            check("ch02-ex2", wrong, 1.0)
        except WrongAnswer as error:
            assert "inf" not in str(error)


def test_diagnose_names_only_the_mistakes_it_finds():
    found: list[str] = []
    with pytest.raises(WrongAnswer, match=r"not right: your value 3 is not the right one .*\. Hint\.$"):
        check("ch05-ex1", 3, 2, diagnose=lambda: found, hint="Hint.")  # nothing found: the hint
    found = [encode("the bias is left out"), "the weight is transposed"]
    with pytest.raises(WrongAnswer, match="when the bias is left out and the weight is transposed. "):
        check("ch05-ex1", 3, 2, diagnose=lambda: found, mistakes={"a value mistake": 3})
    with pytest.raises(WrongAnswer, match="This is what you get when one slip"):
        check("ch05-ex1", 3, 2, diagnose=lambda: "one slip")
    with pytest.raises(WrongAnswer, match=r"when a value mistake\. "):  # a failing diagnosis names nothing
        check("ch05-ex1", 3, 2, diagnose=lambda: 1 / 0, mistakes={"a value mistake": 3})
    with pytest.raises(ValueError, match="diagnose must be a function"):
        check("ch05-ex1", 3, 2, diagnose="x")


def test_properties_beside_an_answer_give_one_verdict(capsys):
    measured = 1024.0 / 64
    agrees = [(encode("your sample agrees with your formula"), lambda: abs(measured / 1024.0 - 1) < 0.05)]
    with pytest.raises(WrongAnswer, match="does not hold: your sample agrees with your formula") as e:
        check("ch02-ex2", 1024.0, 1024.0, properties=agrees, why="Right formula.")
    assert capsys.readouterr().out == "", "no 'right' before the 'not right'"
    assert "Right formula" not in str(e.value)
    measured = 1000.0
    check("ch02-ex2", 1024.0, 1024.0, properties=agrees, why="Right formula.")
    assert capsys.readouterr().out == "✓ Exercise 2.2: right. Right formula.\n"
    with pytest.raises(WrongAnswer, match="your value 256"):  # the answer first
        check("ch02-ex2", 256.0, 1024.0, properties=agrees)


# ---------------------------------------------------------------------------- the chapters


def _labels(nb) -> list[str]:
    return re.findall(r":label:\s*(ch\w+-ex\w+)", "\n".join(c.source for c in nb.cells if c.cell_type == "markdown"))


def _solution_sources(nb) -> dict[str, str]:
    """label -> the code of its solution cells, joined."""
    found: dict[str, list[str]] = {}
    current = None
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for m in re.finditer(r"\{solution-start\}\s*(\S+)|\{solution-end\}", cell.source):
                current = m[1]
                if current:
                    found.setdefault(current, [])
        elif current:
            found[current].append(cell.source)
    return {label: "\n\n".join(sources) for label, sources in found.items()}


class _DropAsserts(ast.NodeTransformer):
    """A student's answer has no asserts of the book's: remove ``assert`` and ``assert_close``-like calls."""

    def visit_Assert(self, node):
        return None

    def visit_Expr(self, node):
        call = node.value
        if isinstance(call, ast.Call):
            func = call.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name.startswith("assert_"):
                return None
        return node

    def generic_visit(self, node):
        super().generic_visit(node)
        for field in ("body", "orelse"):
            if isinstance(getattr(node, field, None), list) and not getattr(node, field) and field == "body":
                setattr(node, field, [ast.Pass()])
        return node


def answer_from(solution: str) -> str:
    """The solution as a student would hand it in: the same code without the book's asserts."""
    return ast.unparse(_DropAsserts().visit(ast.parse(solution)))


def _chapters_with_checks():
    for path in NOTEBOOKS:
        marks = [pytest.mark.xfail(reason="check cells not written yet", strict=False)] if path.name in PENDING else []
        yield pytest.param(path, marks=marks, id=path.name)


@pytest.mark.parametrize("path", list(_chapters_with_checks()))
def test_every_exercise_has_a_stub_and_a_check(path):
    nb = nbformat.read(path, as_version=4)
    labels = _labels(nb)
    checks = {c.id.removeprefix("check-") for c in nb.cells if "exercise-check" in c.metadata.get("tags", [])}
    assert set(labels) <= checks, f"exercises without a check cell: {sorted(set(labels) - checks)}"
    student, _ = make_student.studentize(nb)
    stubs = [c.source for c in student.cells if c.id.startswith("stub-")]
    assert all("= ..." in s for s in stubs), "every answer cell names what the check reads, set to ..."
    assert path.name in WRONG and len(WRONG[path.name]) >= 2, "at least two typical wrong answers per chapter"
    untested = set(labels) - {entry[0] for entry in WRONG[path.name]}
    assert not untested, f"checks never fed a wrong answer: {sorted(untested)}"


def _run(client, cell) -> list:
    client.execute_cell(cell, 0)
    return cell.outputs


# Chapters 7 to 10 train and decode for minutes: their runs are in tests/test_exercises_long.py
# and tests/test_exercises_long_2.py, files of their own, because pytest-xdist (--dist loadfile)
# gives a whole file to one worker.
LONG = {"07_full_model.ipynb", "08_using_the_model.ipynb", "09_what_the_paper_measured.ipynb"}
LONG |= {"10_after_the_paper.ipynb"}


@pytest.mark.exercises  # runs every chapter a second time: in make test-portable, to keep make test within 15 min
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if p.name not in PENDING | LONG], ids=lambda p: p.name)
def test_right_answers_pass_and_wrong_ones_are_reported(path):
    right_answers_pass_and_wrong_ones_are_reported(path)


def right_answers_pass_and_wrong_ones_are_reported(path):
    """The chapter run with its answer cells filled: every cell runs (a check says right),
    every unanswered stub says so, every typical wrong answer is reported wrong."""
    original = nbformat.read(path, as_version=4)
    solutions = _solution_sources(original)
    student, _ = make_student.studentize(original)
    for cell in student.cells:  # fill every answer cell with the solution, its asserts removed
        if cell.cell_type == "code" and cell.id.startswith("stub-"):
            label = re.search(r"\((ch\w+-ex\w+)\)", cell.source)[1]
            cell.source = answer_from(solutions[label])
    os.environ.setdefault("PYTHONHASHSEED", "0")
    os.environ.setdefault("AIAYN_THREADS", "1")
    client = NotebookClient(
        student,
        timeout=900,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(ROOT / "notebooks")}},
    )
    with client.setup_kernel():
        verdicts = {}
        for i, cell in enumerate(student.cells):
            if cell.cell_type != "code":
                continue
            client.execute_cell(cell, i)
            errors = [o for o in cell.outputs if o.output_type == "error"]
            if "raises-exception" not in cell.metadata.get("tags", []):  # a common mistake shown failing
                assert not errors, f"{path.name}: {cell.id} fails with the solution filled in: {errors[0].evalue}"
            if cell.id.startswith("check-"):
                verdicts[cell.id.removeprefix("check-")] = "".join(o.get("text", "") for o in cell.outputs)
        for label in _labels(original):
            assert f"✓ {exercise_name(label)}: right." in verdicts[label], f"{label}: {verdicts[label]!r}"

        unanswered, _ = make_student.studentize(original)  # the stubs as handed out: every check runs
        for label in _labels(original):
            stub = next(c for c in unanswered.cells if c.id == f"stub-{label}")
            checker = next(c for c in unanswered.cells if c.id == f"check-{label}")
            outputs = _run(client, nbformat.from_dict(stub)) + _run(client, nbformat.from_dict(checker))
            text = "".join(o.get("text", "") for o in outputs)
            assert f"○ {exercise_name(label)}: not answered yet" in text, f"{label} unanswered: {outputs}"

        for label, changes, *message in WRONG[path.name]:
            wrong = solutions[label]
            for old, new in changes:
                assert old in wrong, f"{label}: {old!r} is not in the solution any more"
                wrong = wrong.replace(old, new)
            answer = nbformat.v4.new_code_cell(answer_from(wrong))
            checker = nbformat.v4.new_code_cell(next(c.source for c in student.cells if c.id == f"check-{label}"))
            outputs = _run(client, answer) + _run(client, checker)
            errors = [o for o in outputs if o.output_type == "error"]
            assert errors, f"{label}: the wrong answer {changes} passed its check"
            assert errors[-1].ename == "WrongAnswer", f"{label} {changes}: {errors[-1].ename}: {errors[-1].evalue}"
            assert f"✗ {exercise_name(label)}: not right" in errors[-1].evalue
            if message:
                assert message[0] in errors[-1].evalue, f"{label} {changes}: told {errors[-1].evalue!r}"
            said = "".join(o.get("text", "") for o in outputs)
            if len(re.findall(r"\bcheck\(", checker.source)) == 1:  # one answer checked: one verdict
                assert "✓" not in said, f"{label} {changes}: one verdict per check, yet it printed {said!r}"

        for label, changes in ALSO_RIGHT.get(path.name, []):
            other = solutions[label]
            for old, new in changes:
                assert old in other, f"{label}: {old!r} is not in the solution any more"
                other = other.replace(old, new)
            answer = nbformat.v4.new_code_cell(answer_from(other))
            checker = nbformat.v4.new_code_cell(next(c.source for c in student.cells if c.id == f"check-{label}"))
            outputs = _run(client, answer) + _run(client, checker)
            said = "".join(o.get("text", "") for o in outputs)
            assert f"✓ {exercise_name(label)}: right." in said, f"{label} {changes}: {outputs}"


# ------------------------------------------------------- check cells give nothing away
#
# A check cell is read by the student (the student edition keeps it). It must not
# show the answer: the expected value of check() (and a named mistake's value) is
# never a literal (a number, a bool, a list, tuple, dict or torch.tensor/np.array of
# them, math functions of them, or arithmetic on numbers only: "2 * 6 * 100"); the
# cell holds no arithmetic on numbers alone; and it holds none of the solution's
# code: no statement of the code that computes the answer (compared as syntax trees,
# variable names ignored), no call of that code with two or more arguments, and none
# of its calls' text in a string (a hint). Chapter 8's checks are rewritten once its
# new section is in (a known gap: the strict xfail fails the day they are fixed).

_LEAK_GAPS: set[str] = set()  # every chapter passes
_ARRAY_MAKERS = {"tensor", "array", "asarray", "as_tensor", "full", "Tensor"}


def _literal_value(node: ast.AST) -> bool:
    """A number or bool, or a container, operation, array maker, math function of them."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, bool | int | float | complex)
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return bool(node.elts) and all(_literal_value(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return bool(node.values) and all(_literal_value(v) for v in node.values)
    if isinstance(node, ast.UnaryOp):
        return _literal_value(node.operand)
    if isinstance(node, ast.BinOp):
        return _literal_value(node.left) and _literal_value(node.right)
    if isinstance(node, ast.Lambda):
        return _literal_value(node.body)
    if isinstance(node, ast.Attribute):  # math.e, math.pi
        return getattr(node.value, "id", "") == "math"
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        module = getattr(getattr(func, "value", None), "id", "")
        maker = name in _ARRAY_MAKERS or module == "math"
        return maker and bool(node.args) and all(_literal_value(a) for a in node.args)
    return False


class _Anonymous(ast.NodeTransformer):
    """Variable names replaced by ``_`` (a called function's and a module's kept)."""

    def visit_Call(self, node):
        node.args = [self.visit(a) for a in node.args]
        node.keywords = [self.visit(k) for k in node.keywords]
        if not isinstance(node.func, ast.Name):
            node.func = self.visit(node.func)
        return node

    def visit_Attribute(self, node):
        if not isinstance(node.value, ast.Name):
            node.value = self.visit(node.value)
        return node

    def visit_Name(self, node):
        return ast.copy_location(ast.Name(id="_", ctx=node.ctx), node)

    def visit_arg(self, node):
        return ast.arg(arg="_")


def _shape(node: ast.AST) -> str:
    import copy

    return ast.dump(_Anonymous().visit(copy.deepcopy(node)), annotate_fields=False)


def _assigned(stmt: ast.stmt) -> set[str]:
    names = set()
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
    return names


def answer_code(solution: str, answers: set[str]) -> list[ast.stmt]:
    """The solution's top-level statements the answers depend on (asserts removed)."""
    statements = ast.parse(answer_from(solution)).body
    needed, kept = set(answers), []
    for stmt in reversed(statements):
        if _assigned(stmt) & needed:
            kept.append(stmt)
            needed |= {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)}
    return kept[::-1]


def _called(node: ast.Call) -> str:
    return getattr(node.func, "id", getattr(node.func, "attr", ""))


def leaks(check_source: str, solution: str, answers: set[str]) -> list[str]:
    """What a check cell gives away, in words (empty: nothing)."""
    found = []
    tree = ast.parse(check_source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _called(node) == "check":
            expected = node.args[2] if len(node.args) > 2 else None
            for keyword in node.keywords:
                if keyword.arg == "expected":
                    expected = keyword.value
                if keyword.arg == "mistakes" and isinstance(keyword.value, ast.Dict):
                    for value in keyword.value.values:
                        if _literal_value(value):
                            found.append(f"mistake value is a literal: {ast.unparse(value)}")
            if expected is not None and _literal_value(expected):
                found.append(f"expected value is a literal: {ast.unparse(expected)}")
        if isinstance(node, ast.BinOp) and _literal_value(node):
            found.append(f"arithmetic on numbers alone: {ast.unparse(node)}")
    code = [node for stmt in answer_code(solution, answers) for node in ast.walk(stmt)]
    statements = {_shape(node) for node in code if isinstance(node, ast.stmt)}
    calls = {_shape(node): ast.unparse(node) for node in code if isinstance(node, ast.Call)}
    skipped = ast.Import | ast.ImportFrom | ast.Pass
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and not isinstance(node, skipped):
            if _shape(node) in statements:
                found.append(f"solution statement: {ast.unparse(node)[:80]}")
        if isinstance(node, ast.Call) and len(node.args) + len(node.keywords) >= 2:
            if _shape(node) in calls:
                found.append(f"solution call: {ast.unparse(node)[:80]}")
    texts = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)]
    strings = " ".join(text for text in texts if isinstance(text, str))
    for text in sorted(set(calls.values())):
        if len(text) >= 15 and text in strings:
            found.append(f"solution code in a string: {text}")
    return found


def _answers(nb) -> dict[str, set[str]]:
    """label -> the names its answer cell sets (from the student_stub metadata)."""
    result = {}
    for cell in nb.cells:
        stub = cell.metadata.get("student_stub")
        if stub:
            label = next(label for label, code in _solution_sources(nb).items() if cell.source in code)
            result[label] = set().union(*(_assigned(s) for s in ast.parse(stub).body))
    return result


def test_the_leak_rules_catch_what_they_are_for():
    solution = "pads = torch.full((2, 3), PAD)\nlogits_padded = model(src, torch.cat([tgt_in, pads], 1))\nx = 3"
    answers = {"logits_padded"}
    assert leaks('check("ch06-ex4", gap, 0.0)', solution, answers) == ["expected value is a literal: 0.0"]
    assert leaks('check("a", x, [30.0, 25.0])', solution, answers)
    assert leaks('check("a", x, torch.tensor([1.0, 1e-4]))', solution, answers)
    assert leaks('check("a", x, lambda: (True, False))', solution, answers)
    assert leaks('check("a", x, R, mistakes={"m": 2 * 6 * 100})', solution, answers)
    assert leaks("n = 64 // 16", solution, answers) == ["arithmetic on numbers alone: 64 // 16"]
    assert leaks('check("a", x, math.log(37000) - math.log(1 + 36999 / math.e))', solution, answers)
    assert leaks("p = torch.full((2, 3), PAD)", solution, answers)  # renamed, still the solution's statement
    assert leaks("f = lambda: model(src, torch.cat([tgt_in, q], 1))", solution, answers)  # the solution's call
    assert leaks('check("a", x, R, hint="use torch.full((2, 3), PAD)")', solution, answers)
    fine = 'check("a", x, Reference("sha256:..."), mistakes={"m": ~ah.causal_mask(4)}, rtol=1e-6)\ny = f(x, 3)'
    assert leaks(fine, solution, answers) == []
    assert leaks("x = 3", solution, answers) == []  # x is not part of the answer


@pytest.mark.parametrize(
    "path",
    [pytest.param(p, marks=[pytest.mark.xfail(strict=True, reason="rewritten later")] if p.name in _LEAK_GAPS else [])
     for p in NOTEBOOKS],
    ids=lambda p: p.name,
)  # fmt: skip
def test_no_check_cell_gives_the_answer_away(path):
    nb = nbformat.read(path, as_version=4)
    solutions, answers = _solution_sources(nb), _answers(nb)
    found = {}
    for cell in nb.cells:
        if "exercise-check" in cell.metadata.get("tags", []):
            label = cell.id.removeprefix("check-")
            found[label] = leaks(cell.source, solutions[label], answers[label])
    assert found and not any(found.values()), {label: f for label, f in found.items() if f}
