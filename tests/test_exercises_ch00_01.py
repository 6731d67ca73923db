"""The exercise test of chapters 0 and 1: each chapter run with its answer cells filled, then its
typical wrong answers below (tests/exercise_runs.py says how)."""

from __future__ import annotations

from exercise_runs import exercise_test

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
}
# Answers that must pass although they differ from the solution: (exercise, [(in the solution, replaced by)]).
ALSO_RIGHT: dict[str, list[tuple[str, list[tuple[str, str]]]]] = {}


test_right_answers_pass_and_wrong_ones_are_reported = exercise_test(WRONG, ALSO_RIGHT)
