"""Speed measurements, run by `make bench` (never by the tests).

    python tools/bench/bench.py

Each benchmark interleaves the implementations it compares, round after round, so
that a slow spell of the machine hits both alike, and reports medians.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

import torch
from torch import nn

import aiayn_helpers as ah
from aiayn_helpers.course.reference import copy_mha_from_torch

if str(Path(__file__).resolve().parents[1]) not in sys.path:  # tools/: its folders are packages
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _fwd_bwd(module, call, x):
    def step():
        x.grad = None
        module.zero_grad(set_to_none=True)
        call(x).sum().backward()

    return step


def bench_mha(batch=16, length=128, d_model=512, heads=8, rounds=30, warmup=5) -> None:
    """Forward + backward time of ah.MultiHeadAttention against nn.MultiheadAttention (self-attention)."""
    torch.manual_seed(0)
    ref = nn.MultiheadAttention(d_model, heads, batch_first=True)
    explicit = copy_mha_from_torch(ah.MultiHeadAttention(d_model, heads), ref)
    fused = copy_mha_from_torch(ah.MultiHeadAttention(d_model, heads, fused=True), ref)
    x = torch.randn(batch, length, d_model, requires_grad=True)
    steps = {
        "nn.MultiheadAttention": _fwd_bwd(ref, lambda t: ref(t, t, t, need_weights=False)[0], x),
        "ah.MultiHeadAttention (fused)": _fwd_bwd(fused, lambda t: fused(t, t, t), x),
        "ah.MultiHeadAttention (explicit)": _fwd_bwd(explicit, lambda t: explicit(t, t, t), x),
    }
    times: dict[str, list[float]] = {name: [] for name in steps}
    for r in range(warmup + rounds):
        for name, step in steps.items():
            start = time.perf_counter()
            step()
            if r >= warmup:
                times[name].append(time.perf_counter() - start)
    med = {name: statistics.median(t) for name, t in times.items()}
    base = med["nn.MultiheadAttention"]
    print(
        f"MultiHeadAttention forward+backward, B={batch} T={length} d_model={d_model} heads={heads}, "
        f"{torch.get_num_threads()} CPU threads, median of {rounds} interleaved rounds"
    )
    for name, t in med.items():
        print(f"  {name:34s} {t * 1e3:8.2f} ms   ratio to nn: {t / base:.3f}")


def bench_training_throughput(preset="multi30k", steps=None, warmup=3) -> None:
    """Training throughput (tokens/s) of a preset's model on real Multi30k batches, CPU.

    Uses the preset's model, vocabulary size and batch size (``max_tokens``); counts
    source + target tokens that are not padding. ``AIAYN_BENCH_STEPS`` (default 24)
    sets the number of timed steps. Needs the corpus ($AIAYN_DATA_DIR or a download).
    """
    import os

    from aiayn_helpers.config import PRESETS, build_model
    from aiayn_helpers.data import collate, encode_pairs, length_batches, load_multi30k, train_bpe
    from aiayn_helpers.training import label_smoothed_cross_entropy, make_noam_scheduler, make_optimizer

    steps = steps or int(os.environ.get("AIAYN_BENCH_STEPS", "24"))
    cfg = PRESETS[preset]
    pairs = load_multi30k("train")
    tok = train_bpe([s for p in pairs for s in p], cfg.vocab_size)
    ids = encode_pairs(tok, pairs, truncate_len=cfg.truncate_len)
    batches = length_batches(ids, cfg.max_tokens, seed=0)[: warmup + steps]
    torch.manual_seed(0)
    model = build_model(cfg, tok.get_vocab_size()).train()
    opt = make_optimizer(model)
    sched = make_noam_scheduler(opt, cfg.d_model, cfg.warmup, cfg.lr_scale)
    seconds, tokens = [], []
    for i, idx in enumerate(batches):
        src, tgt_in, tgt_out = collate([ids[j] for j in idx])
        start = time.perf_counter()
        loss = label_smoothed_cross_entropy(model(src, tgt_in), tgt_out, cfg.label_smoothing)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        if i >= warmup:
            seconds.append(time.perf_counter() - start)
            tokens.append(int((src != 0).sum() + (tgt_out != 0).sum()))
    n_params = sum(p.numel() for p in model.parameters())
    print(
        f"Training throughput, preset {preset} ({n_params / 1e6:.1f} M parameters, d_model={cfg.d_model}, "
        f"{cfg.num_layers}+{cfg.num_layers} layers, max_tokens={cfg.max_tokens}), "
        f"{torch.get_num_threads()} CPU threads, "
        f"{steps} steps after {warmup} warm-up steps"
    )
    print(
        f"  {sum(tokens) / sum(seconds):8.0f} tokens/s (source+target, no padding)   "
        f"median {statistics.median(seconds) * 1e3:.0f} ms/step   {statistics.mean(tokens):.0f} tokens/step"
    )


def _greedy_100(model: nn.Module, src: torch.Tensor, use_cache: bool) -> float:
    start = time.perf_counter()
    hyps = ah.greedy_decode(model, src, max_new_tokens=100, use_cache=use_cache)
    seconds = time.perf_counter() - start
    assert all(len(h) == 100 for h in hyps), "the benchmark model must not stop before 100 tokens"
    return seconds


def bench_decoding(rounds: int = 5, test_rounds: int = 1, threads: int = 2) -> dict:
    """Decoding speed, in one interleaved run (chapter 8).

    1. Greedy decoding of exactly 100 tokens with and without the key/value cache: an
       untrained model of the full recipe's size (d_model 256, 3+3 layers, 4 heads,
       d_ff 1024, shared vocabulary of 8,000), a batch of 8 sources of 20 tokens,
       ``threads`` CPU threads; the two alternate, ``rounds`` times, medians reported.
    2. Translating all of test2016 (1,000 sentences) with the shipped model
       (``ah.load_pretrained()``), beam 4, alpha 0.6, the cache on, in the first
       ``test_rounds`` rounds between the greedy runs; the median is reported, with the BLEU.
    """
    import platform

    import sacrebleu

    from aiayn_helpers.data import EOS_ID, load_multi30k

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = ah.Transformer(8000, 8000, d_model=256, num_heads=4, num_layers=3, d_ff=1024, share_embeddings=True)
    model.set_fused(True)
    model.eval()
    with torch.no_grad():  # never <eos>: every row decodes exactly 100 tokens
        model.generator.weight[EOS_ID] = -model.generator.weight.abs().max()
    src = torch.randint(4, 8000, (8, 20), generator=torch.Generator().manual_seed(0))
    shipped, tokenizer = ah.load_pretrained()
    pairs = load_multi30k("test2016")
    sources, references = [de for de, _ in pairs], [en for _, en in pairs]

    times: dict[str, list[float]] = {"uncached": [], "cached": [], "test2016": []}
    for use_cache in (True, False):  # warm-up
        _greedy_100(model, src, use_cache)
    for r in range(rounds):
        for name in ("uncached", "cached"):
            times[name].append(_greedy_100(model, src, name == "cached"))
        if r < test_rounds:  # the translation takes a while
            start = time.perf_counter()
            hyps = ah.translate(shipped, tokenizer, sources, beam_size=4, length_penalty=0.6)
            times["test2016"].append(time.perf_counter() - start)
    med = {name: statistics.median(t) for name, t in times.items()}
    bleu = sacrebleu.corpus_bleu(hyps, [references])
    result = {
        "greedy_100": {
            "model": "d_model 256, 3+3 layers, 4 heads, d_ff 1024, vocabulary 8000 (untrained)",
            "batch": 8,
            "tokens": 100,
            "uncached_s": round(med["uncached"], 3),
            "cached_s": round(med["cached"], 3),
            "speedup": round(med["uncached"] / med["cached"], 1),
            "rounds": {name: [round(t, 3) for t in times[name]] for name in ("uncached", "cached")},
        },
        "test2016_beam4": {
            "sentences": len(sources),
            "seconds": round(med["test2016"], 1),
            "rounds": [round(t, 1) for t in times["test2016"]],
            "bleu": round(bleu.score, 2),
        },
        "threads": threads,
        "cpu": platform.processor() or platform.machine(),
        "torch": torch.__version__,
    }
    print(f"Decoding, {threads} CPU threads, medians of interleaved rounds")
    g = result["greedy_100"]
    print(
        f"  greedy, 100 tokens, batch 8, d_model 256, 3+3 layers: {g['uncached_s'] * 1e3:.0f} ms without the cache, "
        f"{g['cached_s'] * 1e3:.0f} ms with it: {g['speedup']:.1f}x"
    )
    t = result["test2016_beam4"]
    print(f"  test2016 (1,000 sentences), shipped model, beam 4: {t['seconds']:.1f} s (BLEU {t['bleu']:.2f})")
    return result


def bench_export(threads: int = 2, batch: int = 32, rounds: int = 1) -> dict:
    """Four ways to translate all of test2016 with beam 4, interleaved, ``threads``.

    The book's ``ah.translate``, Transformers' ``generate`` on the Marian export, and
    CTranslate2 float32 and int8 on its conversion; sentences per second (median of
    ``rounds``) with the BLEU of each. The book and CTranslate2 normalise scores by
    length differently from Transformers (GNMT's ((5+n)/6)^0.6 against n^0.6).
    """
    import statistics
    import tempfile

    import sacrebleu
    from transformers import MarianMTModel

    import aiayn_helpers as ah
    from aiayn_helpers.data import EOS_ID, PAD_ID, load_multi30k
    from aiayn_helpers.export import (
        ctranslate2_translate,
        export_ctranslate2,
        export_marian,
    )

    torch.set_num_threads(threads)
    model, tok = ah.load_pretrained()
    model.eval()
    pairs = load_multi30k("test2016")
    src = [de for de, _ in pairs]
    refs = [en for _, en in pairs]
    tmp = Path(tempfile.mkdtemp(prefix="bench_export_"))
    marian = export_marian(model, tok, tmp / "marian")
    hf = MarianMTModel.from_pretrained(marian).eval()
    ct2 = {q: export_ctranslate2(marian, tmp / f"ct2_{q}", q) for q in (None, "int8")}

    def run_hf(sentences):
        out = []
        for i in range(0, len(sentences), batch):
            ids = [tok.encode(s).ids + [EOS_ID] for s in sentences[i : i + batch]]
            n = max(map(len, ids))
            x = torch.tensor([r + [PAD_ID] * (n - len(r)) for r in ids])
            with torch.no_grad():
                g = hf.generate(
                    input_ids=x,
                    attention_mask=(x != PAD_ID).long(),
                    num_beams=4,
                    length_penalty=0.6,
                    max_new_tokens=128,
                )
            out += [tok.decode(r) for r in g.tolist()]
        return out

    ways = {
        "aiayn_helpers (ah.translate)": lambda s: ah.translate(model, tok, s, beam_size=4, length_penalty=0.6),
        "Transformers generate (Marian)": run_hf,
        "CTranslate2 float32": lambda s: ctranslate2_translate(ct2[None], tok, s, beam_size=4, threads=threads),
        "CTranslate2 int8": lambda s: ctranslate2_translate(ct2["int8"], tok, s, beam_size=4, threads=threads),
    }
    times = {k: [] for k in ways}
    bleu = {}
    for _ in range(rounds):
        for name, fn in ways.items():
            t0 = time.perf_counter()
            hyps = fn(src)
            times[name].append(time.perf_counter() - t0)
            bleu[name] = sacrebleu.corpus_bleu(hyps, [refs]).score
    print(f"test2016, {len(src)} sentences, beam 4, {threads} threads")
    print("| way | sentences/s | BLEU |\n|---|---:|---:|")
    ways_result = {}
    for name in ways:
        sps = len(src) / statistics.median(times[name])
        ways_result[name] = {"sentences_per_s": round(sps, 1), "bleu": round(bleu[name], 2), "rounds": rounds}
        print(f"| {name} | {sps:.1f} | {bleu[name]:.2f} |")
    import platform

    import ctranslate2
    import transformers

    return {
        "ways": ways_result,
        "sentences": len(src),
        "beam_size": 4,
        "threads": threads,
        "batch_transformers": batch,
        "cpu": _cpu_name(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "ctranslate2": ctranslate2.__version__,
        "python": platform.python_version(),
        "load_average_after": os.getloadavg()[0],
        "weights_sha256": ah.pretrained.read_manifest(ah.pretrained.ROOT / "multi30k")["sha256"]["weights.safetensors"],
    }


def _cpu_name() -> str:
    """The CPU's model name as /proc/cpuinfo gives it (Linux), else the architecture."""
    import platform

    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main() -> None:
    import argparse
    import json

    parser = argparse.ArgumentParser(description="Speed measurements (make bench)")
    parser.add_argument("--only", choices=["mha", "training", "decoding", "export"], help="run one benchmark")
    parser.add_argument("--json", help="also write the decoding benchmark's numbers here")
    parser.add_argument("--export-json", help="also write the export benchmark's numbers here")
    parser.add_argument("--export-rounds", type=int, default=1, help="interleaved rounds of the export benchmark")
    args = parser.parse_args()
    torch.set_num_threads(max(1, torch.get_num_threads()))
    if args.only in (None, "mha"):
        bench_mha()
    if args.only in (None, "training"):
        bench_training_throughput()
    if args.only in (None, "decoding"):
        result = bench_decoding()
        if args.json:
            with open(args.json, "w") as f:
                json.dump(result, f, indent=1)
                f.write("\n")
    if args.only in (None, "decoding"):
        try:  # tools/bench/bench_decoding.py: the decoders' own speed table
            from bench import bench_decoding as decoders_bench
        except ImportError:
            decoders_bench = None
        if decoders_bench is not None:
            decoders_bench.main()
    if args.only in (None, "export"):
        load_before = os.getloadavg()[0]
        result = bench_export(rounds=args.export_rounds)
        result["load_average_before"] = load_before
        if args.export_json:
            with open(args.export_json, "w") as f:
                json.dump(result, f, indent=1)
                f.write("\n")


if __name__ == "__main__":
    main()
