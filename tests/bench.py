"""Speed measurements, run by `make bench` (never by the tests).

    python tests/bench.py

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


def main() -> None:
    torch.set_num_threads(max(1, torch.get_num_threads()))
    bench_mha()


if __name__ == "__main__":
    main()
