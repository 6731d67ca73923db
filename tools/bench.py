"""Speed measurements, run by `make bench` (never by the tests).

    python tools/bench.py

Each benchmark interleaves the implementations it compares, round after round, so
that a slow spell of the machine hits both alike, and reports medians.
"""

from __future__ import annotations

import statistics
import time

import torch
from torch import nn

import aiayn_helpers as ah
from aiayn_helpers.reference import copy_mha_from_torch


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
    ids = encode_pairs(tok, pairs, max_len=cfg.truncate_len)
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


def main() -> None:
    torch.set_num_threads(max(1, torch.get_num_threads()))
    bench_mha()
    bench_training_throughput()


if __name__ == "__main__":
    main()
