"""The exercise test of chapters 7 and 9: each chapter run with its answer cells filled, then its
typical wrong answers below (tests/exercise_runs.py says how).

Chapters 7 to 10 train and decode for minutes, as long as the other eight together:
pytest-xdist (--dist loadfile) gives a whole file to one worker, so they come in two files
(chapters 8 and 10: tests/test_exercises_ch08_10.py) that run side by side.
"""

from __future__ import annotations

from exercise_runs import exercise_test

# Typical wrong answers, at least two per chapter: (exercise, [(in the solution, replaced by), ...], the message
# it must get). Every slip of issue #36 is here, with the message that names it; an entry without a message
# only has to be reported wrong.
WRONG: dict[str, list[tuple[str, list[tuple[str, str]]]]] = {
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
}
# Answers that must pass although they differ from the solution: (exercise, [(in the solution, replaced by)]).
ALSO_RIGHT: dict[str, list[tuple[str, list[tuple[str, str]]]]] = {}


test_right_answers_pass_and_wrong_ones_are_reported = exercise_test(WRONG, ALSO_RIGHT)
