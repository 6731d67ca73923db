"""Score a trained run with sacreBLEU, optionally averaging its last checkpoints (paper, section 6.1).

    python -m aiayn_helpers.evaluate runs/multi30k --average 5 --split val --length-penalty 0.6 1.0 1.4
    python -m aiayn_helpers.evaluate runs/multi30k --average 5 --split test2016 --length-penalty 1.0

The run folder is one written by ``python -m aiayn_helpers.train``: ``last.pt`` gives the
tokenizer and the config, and ``--average N`` replaces the weights by the mean of the last N
``epochNNN.pt`` files (written with ``--keep-epochs``). The paper averages the last 5 checkpoints
of its base models. Choose the length penalty on ``val`` and report ``test2016`` once with the
value chosen: tuning on the test set would make its score optimistic. Writes
``OUT/eval_<split>.json`` and ``OUT/<split>.hyp.en`` (the translations with the last penalty given).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

import torch

from .data import load_multi30k
from .train import bleu_on, load_model

EPOCH_FILE = re.compile(r"epoch(\d+)\.pt$")


def epoch_checkpoints(run_dir: str | Path) -> list[Path]:
    """The ``epochNNN.pt`` files of a run, oldest first."""
    files = [p for p in Path(run_dir).iterdir() if EPOCH_FILE.search(p.name)]
    return sorted(files, key=lambda p: int(EPOCH_FILE.search(p.name).group(1)))


def average_checkpoints(paths: list[str | Path]) -> dict[str, torch.Tensor]:
    """The element-wise mean of the model weights stored in ``paths`` (summed in float64).

    Every file must hold a ``"model"`` state dict with the same names, shapes and dtypes.
    """
    if not paths:
        raise ValueError("average_checkpoints needs at least one checkpoint, got none")
    total: dict[str, torch.Tensor] = {}
    reference: dict[str, tuple] = {}
    for path in paths:
        state = torch.load(path, map_location="cpu", weights_only=True)
        if not isinstance(state, dict) or "model" not in state:
            raise ValueError(f"{path} holds no 'model' state dict")
        weights = state["model"]
        layout = {k: (tuple(v.shape), v.dtype) for k, v in weights.items()}
        if not reference:
            reference = layout
            total = {k: v.to(torch.float64) for k, v in weights.items()}
            continue
        if layout != reference:
            diff = sorted(k for k in layout.keys() | reference.keys() if layout.get(k) != reference.get(k))
            raise ValueError(f"{path} does not match the first checkpoint (names, shapes or dtypes differ: {diff[:3]})")
        for k, v in weights.items():
            total[k] += v.to(torch.float64)
    return {k: (v / len(paths)).to(reference[k][1]) for k, v in total.items()}


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m aiayn_helpers.evaluate",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("run", type=Path, help="a folder written by aiayn_helpers.train (holds last.pt)")
    p.add_argument("--average", type=int, default=0, help="average the last N epochNNN.pt files (0: last.pt)")
    p.add_argument("--split", choices=["val", "test2016"], default="val")
    p.add_argument("--length-penalty", type=float, nargs="+", default=[0.6], metavar="ALPHA")
    p.add_argument("--beam-size", type=int, default=None, help="default: the run's")
    p.add_argument("--limit", type=int, default=None, help="only the first N sentences")
    p.add_argument("--data-dir", default=None, help="Multi30k folder (default $AIAYN_DATA_DIR or a download)")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--no-progress", action="store_true")
    return p.parse_args(argv)


def main(argv=None) -> dict:
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    model, tokenizer, cfg = load_model(args.run / "last.pt")
    used = [str(args.run / "last.pt")]
    if args.average:
        files = epoch_checkpoints(args.run)
        if len(files) < args.average:
            raise ValueError(
                f"--average {args.average} needs {args.average} epochNNN.pt files in {args.run}, found {len(files)} "
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
        score, signature, hyps = bleu_on(model, tokenizer, pairs, beam, alpha, progress=not args.no_progress)
        results.append(
            {
                "length_penalty": alpha,
                "bleu": round(score.score, 2),
                "detail": str(score),
                "brevity_penalty": round(score.bp, 3),
                "seconds": round(time.perf_counter() - t0, 1),
            }
        )
        print(f"{args.split} alpha {alpha}: sacreBLEU {score.score:.2f} ({score}), {results[-1]['seconds']} s")
        sys.stdout.flush()
    (args.run / f"{args.split}.hyp.en").write_text("\n".join(hyps) + "\n", encoding="utf-8")
    summary = {
        "split": args.split,
        "sentences": len(pairs),
        "beam_size": beam,
        "checkpoints": used,
        "signature": signature,
        "results": results,
    }
    (args.run / f"eval_{args.split}.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


if __name__ == "__main__":  # pragma: no cover - exercised through subprocess in the tests
    try:
        main()
    except ValueError as err:  # a clear one-line message instead of a traceback
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
