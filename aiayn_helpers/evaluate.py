"""Score a trained run with sacreBLEU, optionally averaging its last checkpoints (paper,
section 6.1).

    python -m aiayn_helpers.evaluate runs/multi30k --average 5 --split val
    --length-penalty 0.6 1.0 1.4 python -m aiayn_helpers.evaluate runs/multi30k
    --average 5 --split test2016 --length-penalty 1.0

The run folder is one written by ``python -m aiayn_helpers.train``: ``last.pt`` gives
the tokenizer and the config, and ``--average N`` replaces the weights by the mean of
the last N ``epochNNN.pt`` files (written with ``--keep-epochs``). The paper averages
the last 5 checkpoints of its base models. Choose the length penalty on ``val`` and
report ``test2016`` once with the value chosen: tuning on the test set would make its
score optimistic. Writes ``OUT/eval_<split>.json`` and ``OUT/<split>.hyp.en`` (the
translations with the last penalty given).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from . import _cli
from .checkpoint import average_checkpoints, epoch_checkpoints, load_model
from .data import load_multi30k
from .translation import translate_and_score


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = _cli.make_parser("python -m aiayn_helpers.evaluate", __doc__)
    p.add_argument(
        "run", type=Path, help="a folder written by aiayn_helpers.train (holds last.pt)"
    )
    p.add_argument(
        "--average",
        type=int,
        default=0,
        help="average the last N epochNNN.pt files (0: last.pt)",
    )
    p.add_argument("--split", choices=["val", "test2016"], default="val")
    p.add_argument(
        "--length-penalty", type=float, nargs="+", default=[0.6], metavar="ALPHA"
    )
    p.add_argument("--beam-size", type=int, default=None, help="default: the run's")
    p.add_argument("--limit", type=int, default=None, help="only the first N sentences")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    model, tokenizer, cfg = load_model(args.run / "last.pt")
    used = [str(args.run / "last.pt")]
    if args.average:
        files = epoch_checkpoints(args.run)
        if len(files) < args.average:
            raise ValueError(
                f"--average {args.average} needs {args.average} epochNNN.pt files in "
                f"{args.run}, found {len(files)} "
                "(train with --keep-epochs)"
            )
        used = [str(p) for p in files[-args.average :]]
        model.load_state_dict(average_checkpoints(used))
    model.eval()
    beam = args.beam_size or cfg.beam_size
    pairs = load_multi30k(args.split, args.data_dir, limit=args.limit)
    results = []
    for alpha in args.length_penalty:
        t0 = time.perf_counter()
        score, signature, hyps = translate_and_score(
            model, tokenizer, pairs, beam, alpha, progress=not args.no_progress
        )
        results.append(
            {
                "length_penalty": alpha,
                "bleu": round(score.score, 2),
                "detail": str(score),
                "brevity_penalty": round(score.bp, 3),
                "seconds": round(time.perf_counter() - t0, 1),
            }
        )
        print(
            f"{args.split} alpha {alpha}: sacreBLEU {score.score:.2f} ({score}), "
            f"{results[-1]['seconds']} s"
        )
        sys.stdout.flush()
    (args.run / f"{args.split}.hyp.en").write_text(
        "\n".join(hyps) + "\n", encoding="utf-8"
    )
    summary = {
        "split": args.split,
        "sentences": len(pairs),
        "beam_size": beam,
        "checkpoints": used,
        "signature": signature,
        "results": results,
    }
    (args.run / f"eval_{args.split}.json").write_text(
        json.dumps(summary, indent=2) + "\n"
    )
    return summary


if (
    __name__ == "__main__"
):  # pragma: no cover - exercised through subprocess in the tests
    _cli.run(main)
