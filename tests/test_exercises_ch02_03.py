"""The exercise test of chapters 2 and 3: each chapter run with its answer cells filled, then its
typical wrong answers below (tests/exercise_runs.py says how)."""

from __future__ import annotations

from exercise_runs import exercise_test

# exercise 3.1's attention step in the solution, replaced by hand-written attention in its slips
_SDPA_03 = (
    "heads, _ = ah.scaled_dot_product_attention(\n    split(ours.w_q(x)), split(ours.w_k(x)), split(ours.w_v(x))\n)"
)
_SDPA_03_QKV = "q, k, v = (split(ours.w_q(x)), split(ours.w_k(x)), split(ours.w_v(x)))\n"

# Typical wrong answers, at least two per chapter: (exercise, [(in the solution, replaced by), ...], the message
# it must get). Every slip of issue #36 is here, with the message that names it; an entry without a message
# only has to be reported wrong.
WRONG: dict[str, list[tuple[str, list[tuple[str, str]]]]] = {
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
}
# Answers that must pass although they differ from the solution: (exercise, [(in the solution, replaced by)]).
ALSO_RIGHT: dict[str, list[tuple[str, list[tuple[str, str]]]]] = {
    "02_scaled_dot_product_attention.ipynb": [  # the text's "about 63 M" gives 2,807, the exact count 2,809
        ("ch02-ex3", [("math.isqrt(n_params // 8) + 1", "math.isqrt(63_000_000 // 8) + 1")]),
    ],
}


test_right_answers_pass_and_wrong_ones_are_reported = exercise_test(WRONG, ALSO_RIGHT)
