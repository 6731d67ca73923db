"""Decoding speed of the shipped model, before and after issue #26's KV cache.

    python tools/bench/bench_decoding.py                # measure now, print beside "before"
    git archive 3aeecc6 aiayn_helpers | tar -x -C TREE   # the code before
    python tools/bench/bench_decoding.py --paired TREE --before-commit 3aeecc6
        # record before (the package in TREE) and after, timed in the same rounds,
        # in --restarts pairs of worker processes, the side that goes first alternating

Four settings are timed: greedy decoding and the book's cached beam search (beam 4,
alpha 0.6), each on one sentence at a time (batch 1) and on 32 sentences at once
(batch 32), all on the first sentences of test2016 with ``ah.load_pretrained()``, on
2 CPU threads. The settings alternate, round after round, so that a slow spell of the
machine hits them alike; each reports the median of its rounds in sentences per second.

The "before" numbers come from ``book/metrics/bench_decoding_before.json``: the
code of the commit named there, timed with ``--paired`` in the same rounds as the
code after the change (``bench_decoding_after.json``), so that both saw the same
machine. ``main()`` measures "after" now and prints it beside them; on a shared
machine compare the recorded pair, or run ``--paired`` again. ``tools/bench/bench.py``
(``make bench``) calls :func:`main`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import torch

import aiayn_helpers as ah

ROOT = Path(__file__).resolve().parents[2]
METRICS = ROOT / "book" / "metrics"
BEFORE = METRICS / "bench_decoding_before.json"
AFTER = METRICS / "bench_decoding_after.json"
THREADS = 2
BATCH_1_SENTENCES = 8  # batch 1: this many sentences, one call each, per round
PAUSE_S = 0.05  # --paired: the pause before each timing


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


def _setup() -> dict[str, tuple[Work, int]]:
    from aiayn_helpers.data import load_multi30k

    torch.set_num_threads(int(os.environ.get("AIAYN_BENCH_THREADS", THREADS)))
    model, tokenizer = ah.load_pretrained()
    sources = [de for de, _ in load_multi30k("test2016", limit=32)]
    src_32 = ah.encode_sources(tokenizer, sources)
    src_1 = [ah.encode_sources(tokenizer, [s]) for s in sources[:BATCH_1_SENTENCES]]
    return _settings(model, src_1, src_32)


def _timed(work: Work) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def measure(rounds: int = 7, warmup: int = 1) -> dict:
    """Sentences per second of the four settings, medians of ``rounds`` rounds."""
    settings = _setup()
    times: dict[str, list[float]] = {name: [] for name in settings}
    for r in range(warmup + rounds):
        for name, (work, _) in settings.items():
            t = _timed(work)
            if r >= warmup:
                times[name].append(t)
    sentences = {name: n for name, (_, n) in settings.items()}
    return _result(times, sentences, rounds, _commit())


def _worker() -> None:
    """``--worker``: time the setting named on each line of stdin, print seconds."""
    settings = _setup()
    print(json.dumps({name: n for name, (_, n) in settings.items()}), flush=True)
    for line in sys.stdin:
        print(_timed(settings[line.strip()][0]), flush=True)


def measure_paired(tree: Path, rounds: int = 7, warmup: int = 1) -> tuple[dict, dict]:
    """Before and after in the same rounds: the package in ``tree`` (the old code,
    for example ``git archive 3aeecc6 aiayn_helpers | tar -x -C TREE``) and this one,
    each in a worker process, timed in turn, setting by setting, round after round.
    """
    workers = {}
    for side, path in (("before", tree), ("after", ROOT)):
        env = dict(os.environ, PYTHONPATH=str(path))
        cmd = [sys.executable, str(Path(__file__).resolve()), "--worker"]
        workers[side] = subprocess.Popen(
            cmd,
            cwd=tree,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
    sentences = {side: json.loads(w.stdout.readline()) for side, w in workers.items()}
    times = {side: {name: [] for name in sentences[side]} for side in workers}
    try:
        for r in range(warmup + rounds):
            for name in sentences["after"]:
                # before first in even rounds, after first in odd ones: neither side
                # always runs right after the other
                for side in ("before", "after")[:: 1 if r % 2 == 0 else -1]:
                    w = workers[side]
                    time.sleep(PAUSE_S)  # the other worker's threads go idle
                    w.stdin.write(name + "\n")
                    w.stdin.flush()
                    t = float(w.stdout.readline())
                    if r >= warmup:
                        times[side][name].append(t)
    finally:
        for w in workers.values():
            w.stdin.close()
            w.wait()
    before = _result(times["before"], sentences["before"], rounds, "unknown")
    after = _result(times["after"], sentences["after"], rounds, _commit())
    return before, after


def _paired_speedup(before_s: list[float], after_s: list[float]) -> float:
    """Median over the rounds of before's time / after's time in the same round: a
    slow spell of the machine that hits one round hits both sides of its ratio."""
    ratios = [b / a for b, a in zip(before_s, after_s, strict=True)]
    return round(statistics.median(ratios), 3)


def _pooled(results: list[dict]) -> dict:
    """One result from several, their rounds put together."""
    pooled = dict(results[0])
    names = list(results[0]["settings"])
    times = {}
    for n in names:
        times[n] = [t for r in results for t in r["settings"][n]["round_s"]]
    sentences = {n: results[0]["settings"][n]["sentences"] for n in names}
    rounds = sum(r["rounds"] for r in results)
    pooled.update(_result(times, sentences, rounds, pooled["commit"]))
    pooled["worker_processes"] = len(results)
    return pooled


def _result(times: dict, sentences: dict, rounds: int, commit: str) -> dict:
    result = {
        name: {
            "sentences_per_s": round(sentences[name] / statistics.median(t), 2),
            "sentences": sentences[name],
            "round_s": [round(x, 4) for x in t],
        }
        for name, t in times.items()
    }
    return {
        "settings": result,
        "model": "ah.load_pretrained() (multi30k), float32",
        "sentences": "the first 32 of test2016; batch 1: the first 8, one by one",
        "rounds": rounds,
        "threads": torch.get_num_threads(),
        "commit": commit,
        "cpu": platform.processor() or platform.machine(),
        "torch": torch.__version__,
    }


def report(before: dict | None, paired_after: dict | None, now: dict | None) -> None:
    """A table: the recorded before and after (timed in the same rounds), their ratio,
    and the speed measured now (on this machine, at this moment)."""
    some = now or paired_after
    if some is None:
        return
    print(f"Decoding speed, shipped model, {some['threads']} CPU threads, sentences/s")
    print("(medians of interleaved rounds; ratio: after / before, the median of the")
    print(" ratios of rounds timed together when the two were recorded with --paired)")
    print(f"  {'setting':16s} {'before':>9s} {'after':>9s} {'ratio':>7s} {'now':>9s}")

    def speed(data: dict | None, name: str) -> float | None:
        return data["settings"][name]["sentences_per_s"] if data else None

    for name in some["settings"]:
        old, new = speed(before, name), speed(paired_after, name)
        current = speed(now, name)
        cells = [f"{x:9.2f}" if x else f"{'-':>9s}" for x in (old, new)]
        paired = paired_after["settings"][name].get("speedup_paired") if new else None
        ratio = paired or (new / old if old and new else None)
        cells.append(f"{ratio:6.2f}x" if ratio else f"{'-':>7s}")
        cells.append(f"{current:9.2f}" if current else f"{'-':>9s}")
        print(f"  {name:16s} " + " ".join(cells))
    for label, data in (("before", before), ("after", paired_after), ("now", now)):
        if data:
            print(f"  {label}: commit {data['commit'][:10]}")


def main(argv: Sequence[str] = ()) -> dict:
    """Measure now and print beside the recorded "before"; ``argv``: the options."""
    parser = argparse.ArgumentParser(description="Decoding speed, before and after")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds")
    parser.add_argument(
        "--paired",
        metavar="TREE",
        help="also time the package in TREE (the old code), round by round with this"
        " one, and write both to book/metrics (the recorded before and after)",
    )
    parser.add_argument("--before-commit", help="with --paired: the commit TREE holds")
    parser.add_argument("--threads", type=int, default=THREADS, help="CPU threads (2)")
    parser.add_argument(
        "--restarts",
        type=int,
        default=4,
        help="with --paired: pairs of worker processes",
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(list(argv))
    if args.worker:
        _worker()
        return {}
    if args.rounds < 1:
        raise ValueError(f"--rounds must be at least 1, got {args.rounds}")
    if args.restarts < 1:
        raise ValueError(f"--restarts must be at least 1, got {args.restarts}")
    if args.threads < 1:
        raise ValueError(f"--threads must be at least 1, got {args.threads}")
    os.environ["AIAYN_BENCH_THREADS"] = str(args.threads)  # (the workers inherit it)
    if args.paired:
        # a process's speed can differ from the next one's by several per cent (its
        # memory layout, its core): each pair of workers runs rounds / restarts rounds
        tree, each = Path(args.paired).resolve(), -(-args.rounds // args.restarts)
        pairs = [measure_paired(tree, rounds=each) for _ in range(args.restarts)]
        before, after = (_pooled([pair[i] for pair in pairs]) for i in (0, 1))
        before["commit"] = args.before_commit or "unknown"
        note = "timed in the same rounds as the other file (--paired)"
        for name, timing in after["settings"].items():
            old = before["settings"][name]["round_s"]
            timing["speedup_paired"] = _paired_speedup(old, timing["round_s"])
        for data, path in ((before, BEFORE), (after, AFTER)):
            data["paired"] = note
            path.write_text(json.dumps(data, indent=2) + "\n")
            print(f"wrote {path.relative_to(ROOT)}")
        report(before, after, None)
        return after
    now = measure(rounds=args.rounds)
    files = (BEFORE, AFTER)
    before, after = (json.loads(f.read_text()) if f.exists() else None for f in files)
    report(before, after, now)
    return now


if __name__ == "__main__":
    main(sys.argv[1:])
