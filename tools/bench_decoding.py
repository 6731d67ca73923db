"""Decoding speed of the shipped model, before and after issue #26's KV cache.

    python tools/bench_decoding.py                  # measure now, print beside "before"
    python tools/bench_decoding.py --save before    # (once, on the old code) record it

Four settings are timed: greedy decoding and the book's cached beam search (beam 4,
alpha 0.6), each on one sentence at a time (batch 1) and on 32 sentences at once
(batch 32), all on the first sentences of test2016 with ``ah.load_pretrained()``, on
2 CPU threads. The settings alternate, round after round, so that a slow spell of the
machine hits them alike; each reports the median of its rounds in sentences per second.

The "before" numbers come from ``book/metrics/bench_decoding_before.json`` (measured
on the commit named there, on the same kind of machine); ``main()`` measures "after"
now and prints both. ``tools/bench.py`` (``make bench``) calls :func:`main`.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import torch

import aiayn_helpers as ah

ROOT = Path(__file__).resolve().parent.parent
METRICS = ROOT / "book" / "metrics"
BEFORE = METRICS / "bench_decoding_before.json"
AFTER = METRICS / "bench_decoding_after.json"
THREADS = 2
BATCH_1_SENTENCES = 8  # batch 1: this many sentences, one call each, per round


def _commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


Work = Callable[[], object]


def _settings(
    model,
    src_1: list[torch.Tensor],
    src_32: torch.Tensor,
) -> dict[str, tuple[Work, int]]:
    """name -> (one round's work, sentences it translates)."""

    def greedy(srcs):
        return lambda: [ah.greedy_decode(model, s) for s in srcs]

    def beam(srcs):
        return lambda: [ah.beam_search(model, s, 4, length_penalty=0.6) for s in srcs]

    return {
        "greedy_batch1": (greedy(src_1), len(src_1)),
        "greedy_batch32": (greedy([src_32]), src_32.shape[0]),
        "beam4_batch1": (beam(src_1), len(src_1)),
        "beam4_batch32": (beam([src_32]), src_32.shape[0]),
    }


def measure(rounds: int = 7, warmup: int = 1) -> dict:
    """Sentences per second of the four settings, medians of ``rounds`` rounds."""
    from aiayn_helpers.data import load_multi30k

    torch.set_num_threads(THREADS)
    model, tokenizer = ah.load_pretrained()
    sources = [de for de, _ in load_multi30k("test2016", limit=32)]
    src_32 = ah.encode_sources(tokenizer, sources)
    src_1 = [ah.encode_sources(tokenizer, [s]) for s in sources[:BATCH_1_SENTENCES]]
    settings = _settings(model, src_1, src_32)
    times: dict[str, list[float]] = {name: [] for name in settings}
    for r in range(warmup + rounds):
        for name, (work, _) in settings.items():
            start = time.perf_counter()
            work()
            if r >= warmup:
                times[name].append(time.perf_counter() - start)
    result = {
        name: {
            "sentences_per_s": round(settings[name][1] / statistics.median(t), 2),
            "round_s": [round(x, 4) for x in t],
        }
        for name, t in times.items()
    }
    return {
        "settings": result,
        "model": "ah.load_pretrained() (multi30k), float32",
        "sentences": "the first 32 of test2016; batch 1: the first 8, one by one",
        "rounds": rounds,
        "threads": THREADS,
        "commit": _commit(),
        "cpu": platform.processor() or platform.machine(),
        "torch": torch.__version__,
    }


def report(before: dict | None, after: dict) -> None:
    threads = after["threads"]
    print(f"Decoding speed, shipped model, {threads} CPU threads, sentences/s")
    print("(medians of interleaved rounds)")
    header = f"  {'setting':16s} {'before':>9s} {'after':>9s} {'ratio':>7s}"
    print(header)
    for name, a in after["settings"].items():
        b = before["settings"].get(name) if before else None
        if b:
            ratio = a["sentences_per_s"] / b["sentences_per_s"]
            old, new = b["sentences_per_s"], a["sentences_per_s"]
            print(f"  {name:16s} {old:9.2f} {new:9.2f} {ratio:6.2f}x")
        else:
            print(f"  {name:16s} {'-':>9s} {a['sentences_per_s']:9.2f}")
    if before:
        old, new = before["commit"][:10], after["commit"][:10]
        print(f"  before: commit {old}; after: commit {new} (and the working tree)")


def main(argv: Sequence[str] = ()) -> dict:
    """Measure now and print beside the recorded "before"; ``argv``: the options."""
    parser = argparse.ArgumentParser(description="Decoding speed, before and after")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds")
    parser.add_argument(
        "--save",
        choices=["before", "after"],
        help="write the measurement to book/metrics",
    )
    parser.add_argument("--json", help="also write the measurement to this file")
    args = parser.parse_args(list(argv))
    if args.rounds < 1:
        raise ValueError(f"--rounds must be at least 1, got {args.rounds}")
    after = measure(rounds=args.rounds)
    if args.save:
        path = BEFORE if args.save == "before" else AFTER
        path.write_text(json.dumps(after, indent=2) + "\n")
        print(f"wrote {path.relative_to(ROOT)}")
    if args.json:
        Path(args.json).write_text(json.dumps(after, indent=2) + "\n")
    before = None
    if BEFORE.exists() and args.save != "before":
        before = json.loads(BEFORE.read_text())
    report(before, after)
    return after


if __name__ == "__main__":
    main(sys.argv[1:])
