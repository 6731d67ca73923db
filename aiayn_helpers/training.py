"""Training pieces of the paper (section 5): label smoothing, Adam and the warmup
schedule.

* :func:`label_smoothed_cross_entropy`: cross-entropy against a target that puts
  ``1 - epsilon`` on the right token and spreads ``epsilon`` uniformly over the
  vocabulary (section 5.4, epsilon_ls = 0.1), computed from ``log_softmax``.
* :func:`noam_lr` / :func:`make_noam_scheduler`: equation (3),
  ``lrate = d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)``.
* :func:`make_optimizer`: Adam with beta1 = 0.9, beta2 = 0.98, eps = 1e-9 and lr = 1
  (the scheduler supplies the whole learning rate).
* :func:`train_step`: one update (forward, loss, backward, Adam, schedule), the body of
  ``python -m aiayn_helpers.train``'s loop; :func:`train_epoch` runs it over an epoch's
  batches (chapter 7) and :func:`evaluate_loss` measures the held-out loss.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Iterable, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from ._checks import check_positive_int
from .data import PAD_ID, collate, length_batches


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
    ignore_index=ignore_index)``.
    Log-probabilities come from ``log_softmax`` (never ``log(softmax)``, which gives
    ``log(0) = -inf`` for a confident prediction). A class whose logit is ``-inf``
    (deliberately forbidden) is left out of the smoothing term, so the loss stays finite
    where ``F.cross_entropy`` returns inf. ``reduction="sum"`` returns the sum instead
    of the mean (for token-weighted averages).
    """
    if not isinstance(logits, torch.Tensor) or not logits.is_floating_point():
        raise ValueError("logits must be a floating-point tensor")
    if (
        not isinstance(target, torch.Tensor)
        or target.is_floating_point()
        or target.dtype == torch.bool
    ):
        raise ValueError("target must be an integer tensor of class ids")
    if logits.shape[:-1] != target.shape:
        raise ValueError(
            f"logits (..., V) and target (...) must agree, got {tuple(logits.shape)} "
            f"and {tuple(target.shape)}"
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
            raise ValueError(
                f"target ids must be in [0, {vocab}) (or ignore_index={ignore_index})"
            )
    nll = -logp.gather(-1, safe_target[:, None]).squeeze(-1)
    smooth = -logp.masked_fill(torch.isneginf(logp), 0.0).sum(-1) / vocab
    loss = ((1.0 - epsilon) * nll + epsilon * smooth) * keep
    total = loss.sum()
    if reduction == "sum":
        return total
    return total / keep.sum().clamp(min=1)


def noam_lr(step: int, d_model: int, warmup: int) -> float:
    """Equation (3): ``d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)``; ``step``
    counts from 1.

    It rises linearly for ``warmup`` steps, peaks at ``(d_model * warmup)^-0.5`` and
    then decays as ``step^-0.5``.
    """
    check_positive_int("step", step, note="steps count from 1")
    check_positive_int("d_model", d_model)
    check_positive_int("warmup", warmup)
    return d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def make_optimizer(model: nn.Module) -> torch.optim.Adam:
    """Adam as in section 5.3 (beta1 = 0.9, beta2 = 0.98, eps = 1e-9), lr = 1 for the
    scheduler."""
    return torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)


def make_noam_scheduler(
    optimizer: torch.optim.Optimizer, d_model: int, warmup: int, scale: float = 1.0
) -> torch.optim.lr_scheduler.LambdaLR:
    """A ``LambdaLR`` that sets the learning rate to
    ``scale * noam_lr(step, d_model, warmup)``.

    Build the optimizer with ``lr=1.0`` (see :func:`make_optimizer`): LambdaLR
    multiplies the base rate by the lambda. Call ``scheduler.step()`` after every
    ``optimizer.step()``; the first update uses step 1.
    """
    for group in optimizer.param_groups:
        if group.get("initial_lr", group["lr"]) != 1.0:
            raise ValueError(
                "build the optimizer with lr=1.0 for the Noam schedule (the schedule "
                "is the whole rate), "
                f"got lr={group['lr']}"
            )
    if not scale > 0:
        raise ValueError(f"scale must be positive, got {scale}")
    noam_lr(1, d_model, warmup)  # validates the arguments
    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda i: scale * noam_lr(i + 1, d_model, warmup)
    )


def _pad_id(model: nn.Module) -> int:
    """The model's ``pad_id``, also through a ``DistributedDataParallel`` wrapper
    (``.module``)."""
    return getattr(getattr(model, "module", model), "pad_id", PAD_ID)


def make_batch(
    pairs_ids: Sequence[tuple[Sequence[int], Sequence[int]]],
    indices: Sequence[int],
    device: torch.device | str,
    pad_id: int = PAD_ID,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """:func:`~aiayn_helpers.data.collate` the pairs at ``indices`` and move them to
    ``device``.

    Returns ``src`` ``(batch, S)``, ``tgt_in`` and ``tgt_out`` ``(batch, T)``.
    """
    src, tgt_in, tgt_out = collate([pairs_ids[i] for i in indices], pad_id=pad_id)
    return src.to(device), tgt_in.to(device), tgt_out.to(device)


def train_step(
    model: nn.Module,
    batch: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler | None = None,
    *,
    epsilon: float = 0.1,
    clip_norm: float | None = None,
) -> dict:
    """One update: forward, label-smoothed loss, backward, (clipping,) Adam step,
    schedule step.

    ``batch`` is ``(src, tgt_in, tgt_out)`` from :func:`make_batch`, on the model's
    device; the model is put in training mode (dropout on). Returns ``{"loss": mean
    loss per target token, "tokens": target tokens, "src_tokens": source tokens, "lr":
    the learning rate of the next update}`` and raises ``FloatingPointError`` if the
    loss is not finite.
    """
    src, tgt_in, tgt_out = batch
    pad = _pad_id(model)
    model.train()
    loss = label_smoothed_cross_entropy(
        model(src, tgt_in), tgt_out, epsilon, ignore_index=pad
    )
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if clip_norm:
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm)
    optimizer.step()
    if scheduler is not None:
        scheduler.step()
    value = float(loss.detach())
    if not math.isfinite(value):
        raise FloatingPointError(
            f"the loss became {value} (learning rate "
            f"{optimizer.param_groups[0]['lr']:.3g})"
        )
    return {
        "loss": value,
        "tokens": int((tgt_out != pad).sum()),
        "src_tokens": int((src != pad).sum()),
        "lr": optimizer.param_groups[0]["lr"],
    }


@dataclasses.dataclass
class EpochStats:
    """Running totals over the steps of one epoch, fed with :func:`train_step`'s
    results."""

    loss_sum: float = 0.0  # loss per target token, times target tokens, summed
    tokens: int = 0  # target tokens
    src_tokens: int = 0
    steps: int = 0
    start: float = dataclasses.field(default_factory=time.perf_counter)

    def add(self, info: dict) -> None:
        self.loss_sum += info["loss"] * info["tokens"]
        self.tokens += info["tokens"]
        self.src_tokens += info["src_tokens"]
        self.steps += 1

    @property
    def seconds(self) -> float:
        return time.perf_counter() - self.start

    def summary(self) -> dict:
        """``{"loss", "tokens", "src_tokens", "steps", "seconds"}``, the loss per target
        token."""
        loss = self.loss_sum / max(self.tokens, 1)
        return {
            "loss": loss,
            "tokens": self.tokens,
            "src_tokens": self.src_tokens,
            "steps": self.steps,
            "seconds": self.seconds,
        }


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
    """One pass over ``batches`` (lists of indices into ``pairs_ids``), one
    :func:`train_step` each.

    Batches are moved to the device of the model's parameters. After every update
    ``on_step(info)`` is called with :func:`train_step`'s result; if it returns True
    the epoch stops early. Returns :meth:`EpochStats.summary`: ``{"loss": mean loss
    per target token, "tokens": target tokens, "src_tokens": ..., "steps": ...,
    "seconds": ...}``.
    """
    device = next(model.parameters()).device
    stats = EpochStats()
    for indices in batches:
        batch = make_batch(pairs_ids, indices, device, _pad_id(model))
        info = train_step(
            model, batch, optimizer, scheduler, epsilon=epsilon, clip_norm=clip_norm
        )
        stats.add(info)
        if on_step is not None and on_step(info):
            break
    return stats.summary()


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
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    pad = _pad_id(model)
    total, count = 0.0, 0
    for indices in length_batches(pairs_ids, max_tokens, shuffle=False):
        src, tgt_in, tgt_out = make_batch(pairs_ids, indices, device, pad)
        loss = label_smoothed_cross_entropy(
            model(src, tgt_in), tgt_out, epsilon, ignore_index=pad, reduction="sum"
        )
        total += float(loss)
        count += int((tgt_out != pad).sum())
    model.train(was_training)
    mean = total / max(count, 1)
    return {"loss": mean, "ppl": math.exp(min(mean, 50.0)), "tokens": count}
