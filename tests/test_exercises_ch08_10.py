"""The exercise test of chapters 8 and 10: each chapter run with its answer cells filled, then its
typical wrong answers below (tests/exercise_runs.py says how).

Chapters 7 and 9 are in tests/test_exercises_ch07_09.py (why two files: its docstring).
"""

from __future__ import annotations

from exercise_runs import exercise_test

# Typical wrong answers, at least two per chapter: (exercise, [(in the solution, replaced by), ...], the message
# it must get). Every slip of issue #36 is here, with the message that names it; an entry without a message
# only has to be reported wrong.
WRONG: dict[str, list[tuple[str, list[tuple[str, str]]]]] = {
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
}
# Answers that must pass although they differ from the solution: (exercise, [(in the solution, replaced by)]).
ALSO_RIGHT: dict[str, list[tuple[str, list[tuple[str, str]]]]] = {
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


test_right_answers_pass_and_wrong_ones_are_reported = exercise_test(WRONG, ALSO_RIGHT)
