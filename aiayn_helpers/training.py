"""Training pieces of the paper (section 5): label smoothing, Adam and the warmup schedule.

* :func:`label_smoothed_cross_entropy`: cross-entropy against a target that puts
  ``1 - epsilon`` on the right token and spreads ``epsilon`` uniformly over the
  vocabulary (section 5.4, epsilon_ls = 0.1), computed from ``log_softmax``.
* :func:`noam_lr` / :func:`make_noam_scheduler`: equation (3),
  ``lrate = d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)``.
* :func:`make_optimizer`: Adam with beta1 = 0.9, beta2 = 0.98, eps = 1e-9 and lr = 1
  (the scheduler supplies the whole learning rate).
* :func:`train_epoch`, :func:`evaluate_loss`: the loops used by ``python -m aiayn_helpers.train``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from .data import PAD_ID, collate


def label_smoothed_cross_entropy(
    logits: torch.Tensor,
    target: torch.Tensor,
    epsilon: float = 0.1,
    ignore_index: int = PAD_ID,
    reduction: str = "mean",
) -> torch.Tensor:
    """Label-smoothed cross-entropy, the mean over the non-ignored target tokens.

    ``logits`` ``(..., V)`` (never probabilities), ``target`` ``(...)`` integer ids.
    The smoothed target is ``(1 - epsilon) * one_hot + epsilon / V``, so

        loss = (1 - epsilon) * (-log p[target]) + epsilon * mean_v(-log p[v])

    which is exactly ``F.cross_entropy(logits, target, label_smoothing=epsilon,
    ignore_index=ignore_index)``. Log-probabilities come from ``log_softmax`` (never
    ``log(softmax)``, which gives ``log(0) = -inf`` for a confident prediction). A
    class whose logit is ``-inf`` (deliberately forbidden) is left out of the
    smoothing term, so the loss stays finite where ``F.cross_entropy`` returns inf.
    ``reduction="sum"`` returns the sum instead of the mean (for token-weighted averages).
    """
    if not isinstance(logits, torch.Tensor) or not logits.is_floating_point():
        raise ValueError("logits must be a floating-point tensor")
    if not isinstance(target, torch.Tensor) or target.is_floating_point() or target.dtype == torch.bool:
        raise ValueError("target must be an integer tensor of class ids")
    if logits.shape[:-1] != target.shape:
        raise ValueError(
            f"logits (..., V) and target (...) must agree, got {tuple(logits.shape)} and {tuple(target.shape)}"
        )
    if not 0.0 <= epsilon < 1.0:
        raise ValueError(f"epsilon must be in [0, 1), got {epsilon}")
    if reduction not in ("mean", "sum"):
        raise ValueError(f"reduction must be 'mean' or 'sum', got {reduction!r}")
    vocab = logits.shape[-1]
    logp = F.log_softmax(logits.float().reshape(-1, vocab), dim=-1)
    target = target.reshape(-1)
    keep = target != ignore_index
    safe_target = target.masked_fill(~keep, 0)
    if keep.any():
        valid = target[keep]
        if int(valid.min()) < 0 or int(valid.max()) >= vocab:
            raise ValueError(f"target ids must be in [0, {vocab}) (or ignore_index={ignore_index})")
    nll = -logp.gather(-1, safe_target[:, None]).squeeze(-1)
    smooth = -logp.masked_fill(torch.isneginf(logp), 0.0).sum(-1) / vocab
    loss = ((1.0 - epsilon) * nll + epsilon * smooth) * keep
    total = loss.sum()
    if reduction == "sum":
        return total
    return total / keep.sum().clamp(min=1)


def noam_lr(step: int, d_model: int, warmup: int) -> float:
    """Equation (3): ``d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)``; ``step`` counts from 1.

    It rises linearly for ``warmup`` steps, peaks at ``(d_model * warmup)^-0.5`` and
    then decays as ``step^-0.5``.
    """
    for name, v in (("step", step), ("d_model", d_model), ("warmup", warmup)):
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            raise ValueError(f"{name} must be a positive int (steps count from 1), got {v!r}")
    return d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def make_optimizer(model: nn.Module) -> torch.optim.Adam:
    """Adam as in section 5.3 (beta1 = 0.9, beta2 = 0.98, eps = 1e-9), lr = 1 for the scheduler."""
    return torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)


def make_noam_scheduler(
    optimizer: torch.optim.Optimizer, d_model: int, warmup: int, scale: float = 1.0
) -> torch.optim.lr_scheduler.LambdaLR:
    """A ``LambdaLR`` that sets the learning rate to ``scale * noam_lr(step, d_model, warmup)``.

    Build the optimizer with ``lr=1.0`` (see :func:`make_optimizer`): LambdaLR
    multiplies the base rate by the lambda. Call ``scheduler.step()`` after every
    ``optimizer.step()``; the first update uses step 1.
    """
    for group in optimizer.param_groups:
        if group.get("initial_lr", group["lr"]) != 1.0:
            raise ValueError(
                f"build the optimizer with lr=1.0 for the Noam schedule (the schedule is the whole rate), "
                f"got lr={group['lr']}"
            )
    if not scale > 0:
        raise ValueError(f"scale must be positive, got {scale}")
    noam_lr(1, d_model, warmup)  # validates the arguments
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda i: scale * noam_lr(i + 1, d_model, warmup))


def _unwrap(model: nn.Module) -> nn.Module:
    return model.module if hasattr(model, "module") else model


def train_epoch(
    model: nn.Module,
    pairs_ids: Sequence[tuple[Sequence[int], Sequence[int]]],
    batches: Iterable[Sequence[int]],
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler | None = None,
    *,
    epsilon: float = 0.1,
    clip_norm: float | None = None,
    on_step: Callable[[dict], bool | None] | None = None,
) -> dict:
    """One pass over ``batches`` (lists of indices into ``pairs_ids``).

    Batches are moved to the device of the model's parameters. After every update
    ``on_step(info)`` is called with the step's loss, token counts and learning rate;
    if it returns True the epoch stops early.
    Returns ``{"loss": mean loss per target token, "tokens": target tokens,
    "src_tokens": ..., "steps": ..., "seconds": ...}``.
    """
    model.train()
    device = next(model.parameters()).device
    pad = getattr(_unwrap(model), "pad_id", PAD_ID)
    total_loss = 0.0
    total_tgt = total_src = steps = 0
    start = time.perf_counter()
    for idx in batches:
        src, tgt_in, tgt_out = (t.to(device) for t in collate([pairs_ids[i] for i in idx], pad_id=pad))
        logits = model(src, tgt_in)
        loss = label_smoothed_cross_entropy(logits, tgt_out, epsilon, ignore_index=pad)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if clip_norm:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm)
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        n_tgt = int((tgt_out != pad).sum())
        n_src = int((src != pad).sum())
        value = float(loss.detach())
        if not math.isfinite(value):
            raise FloatingPointError(f"the loss became {value} at step {steps + 1} of this epoch")
        total_loss += value * n_tgt
        total_tgt += n_tgt
        total_src += n_src
        steps += 1
        if on_step is not None:
            info = {"loss": value, "tokens": n_tgt, "src_tokens": n_src, "lr": optimizer.param_groups[0]["lr"]}
            if on_step(info):
                break
    return {
        "loss": total_loss / max(total_tgt, 1),
        "tokens": total_tgt,
        "src_tokens": total_src,
        "steps": steps,
        "seconds": time.perf_counter() - start,
    }


@torch.no_grad()
def evaluate_loss(
    model: nn.Module,
    pairs_ids: Sequence[tuple[Sequence[int], Sequence[int]]],
    max_tokens: int = 4000,
    epsilon: float = 0.0,
) -> dict:
    """Mean loss per target token over ``pairs_ids`` in eval mode (no dropout).

    ``epsilon=0`` (default) gives the plain cross-entropy, whose exponential is the
    perplexity; returns ``{"loss": ..., "ppl": ..., "tokens": ...}``.
    """
    from .data import length_batches

    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    pad = getattr(_unwrap(model), "pad_id", PAD_ID)
    total, count = 0.0, 0
    for idx in length_batches(pairs_ids, max_tokens, shuffle=False):
        src, tgt_in, tgt_out = (t.to(device) for t in collate([pairs_ids[i] for i in idx], pad_id=pad))
        loss = label_smoothed_cross_entropy(model(src, tgt_in), tgt_out, epsilon, ignore_index=pad, reduction="sum")
        total += float(loss)
        count += int((tgt_out != pad).sum())
    model.train(was_training)
    mean = total / max(count, 1)
    return {"loss": mean, "ppl": math.exp(min(mean, 50.0)), "tokens": count}
