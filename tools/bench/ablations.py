"""Table 3 of the paper at Multi30k scale: every variant trained by the training CLI, results as JSON.

    python tools/bench/ablations.py                 # every run not yet in book/ablations/, two at a time
    python tools/bench/ablations.py --only A-h1 base-s1 --force
    python tools/bench/ablations.py --list

Each run is ``python -m aiayn_helpers.train`` with the small base model below (BASE_FLAGS)
and one row's change, for the same number of steps (STEPS): a step budget rather than a
time budget, so that runs sharing the machine with others still get the same training
(the paper's rows are likewise all 100K steps). At the end the run scores the Multi30k
test2016 set with greedy decoding (beam 1, to keep the runs short). The CLI's
``metrics.json`` is reduced to ``book/ablations/<name>.json``: the row, the change, the
exact command, the hardware, the wall-clock time, the development (validation) perplexity
and the BLEU. Checkpoints stay in runs/ablations/ (never committed). Chapter 9 reads the
JSON files, and tests/test_ablations.py checks its tables against them.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "book" / "ablations"
RUNS = ROOT / "runs" / "ablations"
STEPS = 500
# The small base model: the multi30k-cpu preset (d_model 128, 4 heads, d_ff 512, vocabulary 6000,
# 2,500-token batches, dropout 0.1, label smoothing 0.1) with 2+2 layers and a 200-step warm-up.
BASE_FLAGS = {"preset": "multi30k-cpu", "layers": 2, "warmup": 200, "max-steps": STEPS, "beam-size": 1}

# (name, row of the paper's table 3, what changes, seed). The base model runs with three seeds: the noise;
# so does label smoothing, whose effect the paper reads in BLEU, where one seed is within that noise.
RUNS_TABLE: list[tuple[str, str, dict, int]] = [
    ("base-s0", "base", {}, 0),
    ("base-s1", "base", {}, 1),
    ("base-s2", "base", {}, 2),
    ("A-h1", "A", {"heads": 1}, 0),
    ("A-h8", "A", {"heads": 8}, 0),
    ("A-h16", "A", {"heads": 16}, 0),
    ("B-dk16", "B", {"d-k": 16}, 0),
    ("B-dk8", "B", {"d-k": 8}, 0),
    ("C-n1", "C", {"layers": 1}, 0),
    ("C-n4", "C", {"layers": 4}, 0),
    ("C-d64", "C", {"d-model": 64, "d-ff": 256}, 0),
    ("D-drop0", "D", {"dropout": 0.0}, 0),
    ("D-drop0.3", "D", {"dropout": 0.3}, 0),
    ("D-ls0", "D", {"label-smoothing": 0.0}, 0),
    ("D-ls0-s1", "D", {"label-smoothing": 0.0}, 1),  # its BLEU differs from the base's by less than the
    ("D-ls0-s2", "D", {"label-smoothing": 0.0}, 2),  # seeds' spread: two more seeds
    ("E-learned", "E", {"positional": "learned"}, 0),
]

# The settings each JSON file repeats from the run's config.
CONFIG_KEYS = ("d_model", "num_layers", "num_heads", "d_ff", "d_k", "dropout", "label_smoothing", "positional",
               "warmup", "lr_scale", "max_tokens", "vocab_size")  # fmt: skip


def command(name: str, change: dict, seed: int) -> list[str]:
    flags = {**BASE_FLAGS, **change, "seed": seed}
    cmd = ["python", "-m", "aiayn_helpers.train", "--out", f"runs/ablations/{name}", "--threads", "1"]
    for key, value in flags.items():
        cmd += [f"--{key}", str(value)]
    return cmd + ["--eval-bleu", "--no-progress"]


def hardware() -> str:
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores, CPU only"


def run_one(name: str, row: str, change: dict, seed: int, jobs: int) -> dict:
    """Train one row with the CLI (its output in runs/ablations/NAME.log), then write its JSON."""
    import torch

    cmd = command(name, change, seed)
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    start = time.perf_counter()
    log = RUNS / f"{name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as fh:
        subprocess.run([sys.executable, *cmd[1:]], cwd=ROOT, env=env, stdout=fh, stderr=subprocess.STDOUT, check=True)
    wall = time.perf_counter() - start
    run = {"hardware": hardware(), "torch": torch.__version__, "threads": 1, "runs_at_once": jobs,
           "date": date.today().isoformat(), "wall_seconds": round(wall, 1)}  # fmt: skip
    result = reduce(name, row, change, seed, run)
    print(f"{name}: val ppl {result['val_ppl']:.2f}, BLEU {result['bleu']:.2f}, {wall:.0f} s", flush=True)
    return result


def reduce(name: str, row: str, change: dict, seed: int, run: dict) -> dict:
    """``book/ablations/NAME.json`` from the run's metrics.json and ``run`` (where, when and how long)."""
    metrics = json.loads((RUNS / name / "metrics.json").read_text())
    history = metrics["history"]
    last = history[-1]
    first_epoch = next(h["step"] for h in history if h["complete"])
    result = {
        "name": name,
        "row": row,
        "change": change,
        "seed": seed,
        "command": shlex.join(command(name, change, seed)),
        **run,
        "steps": metrics["steps"],
        "epochs": round(metrics["steps"] / first_epoch, 2),
        "parameters": metrics["parameters"],
        "config": {k: metrics["config"][k] for k in CONFIG_KEYS},
        "val_loss": round(last["val_loss"], 4),
        "val_ppl": round(last["val_ppl"], 3),
        "history": [{"step": h["step"], "val_ppl": round(h["val_ppl"], 3)} for h in history],
        "bleu": metrics["bleu"],
        "bleu_signature": metrics["bleu_signature"],
        "beam_size": metrics["beam_size"],
    }
    (OUT / f"{name}.json").write_text(json.dumps(result, indent=1) + "\n")
    return result


RUN_KEYS = ("hardware", "torch", "threads", "runs_at_once", "date", "wall_seconds")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", help="run only these names")
    parser.add_argument("--force", action="store_true", help="run again even if the JSON exists")
    parser.add_argument("--jobs", type=int, default=2, help="runs at once (one thread each)")
    parser.add_argument("--list", action="store_true", help="print the commands and stop")
    parser.add_argument(
        "--reduce-only", action="store_true", help="rewrite the JSON of finished runs from runs/ablations/, no training"
    )
    args = parser.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    todo = [r for r in RUNS_TABLE if (not args.only or r[0] in args.only)]
    if not args.force:
        todo = [r for r in todo if not (OUT / f"{r[0]}.json").exists()]
    if args.reduce_only:
        for name, row, change, seed in RUNS_TABLE:
            if (OUT / f"{name}.json").exists() and (RUNS / name / "metrics.json").exists():
                old = json.loads((OUT / f"{name}.json").read_text())
                reduce(name, row, change, seed, {k: old[k] for k in RUN_KEYS})
        return
    if args.list:
        for name, _, change, seed in todo:
            print(name, shlex.join(command(name, change, seed)))
        return
    with ThreadPoolExecutor(args.jobs) as pool:
        for future in [pool.submit(run_one, *r, args.jobs) for r in todo]:
            future.result()


if __name__ == "__main__":
    main()
