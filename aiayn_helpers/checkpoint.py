"""Checkpoints of a training run: save, load, resume, and average (paper, section 6.1).

``OUT/last.pt`` holds everything needed to continue exactly where a run stopped: the
model, Adam's moments, the schedule, the position in the run (a :class:`TrainState`),
the random number generators' states, the BPE tokenizer (as JSON) and the whole
:class:`~aiayn_helpers.config.Config`. Only tensors and plain types are stored, so
``torch.load(weights_only=True)`` reads it. ``OUT/epochNNN.pt`` (``--keep-epochs``)
holds one finished epoch's weights, for :func:`average_checkpoints`.

Format 2 is written; format 1 (the config fields ``layers``, ``heads`` and ``max_len``
under their old names) is still read.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import random
import re
from pathlib import Path

import torch
from torch import nn

from .config import FORMAT1_NAMES, Config, build_model, config_from_dict
from .model import Transformer

CHECKPOINT_FORMAT = 2
# the formats this module reads, with their old config names
_RENAMES = {1: FORMAT1_NAMES, 2: {}}
EPOCH_FILE = re.compile(r"epoch(\d+)\.pt$")


@dataclasses.dataclass
class TrainState:
    """Where a run stands. ``step`` is the one count of optimizer updates."""

    step: int = 0  # updates made so far
    epoch: int = 0  # epochs finished
    batch_in_epoch: int = 0  # batches of the current epoch already trained on
    # one record per (part of an) epoch
    history: list[dict] = dataclasses.field(default_factory=list)


def save_checkpoint(
    path: Path,
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler,
    state: TrainState,
    tokenizer,
    cfg: Config,
) -> None:
    """Write ``path`` atomically (a temporary file, then a rename: never a half-written
    checkpoint)."""
    checkpoint = {
        "format": CHECKPOINT_FORMAT,
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "step": state.step,
        "epoch": state.epoch,
        "batch_in_epoch": state.batch_in_epoch,
        "rng_torch": torch.get_rng_state(),
        "rng_python": json.dumps(random.getstate()),
        "rng_cuda": torch.cuda.get_rng_state() if torch.cuda.is_available() else None,
        "tokenizer": tokenizer.to_str(),
        "config": json.dumps(dataclasses.asdict(cfg)),
        "history": json.dumps(state.history),
    }
    tmp = path.with_name(path.name + ".tmp")
    torch.save(checkpoint, tmp)
    tmp.replace(path)


def load_checkpoint(path: str | os.PathLike) -> dict:
    """Read and check a checkpoint; ``"config"`` comes back as a :class:`Config`.

    A missing, corrupt or foreign file raises ``ValueError``.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"checkpoint {path} does not exist")
    try:
        checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # truncated zip, pickle errors, unsupported globals...
        raise ValueError(
            f"could not read checkpoint {path}: it is truncated or not a checkpoint "
            f"({err})"
        ) from err
    needed = (
        "format",
        "model",
        "optimizer",
        "scheduler",
        "step",
        "epoch",
        "tokenizer",
        "config",
    )
    if not isinstance(checkpoint, dict) or any(k not in checkpoint for k in needed):
        raise ValueError(
            f"{path} is not an aiayn_helpers.train checkpoint (missing keys)"
        )
    if checkpoint["format"] not in _RENAMES:
        raise ValueError(
            f"{path} has checkpoint format {checkpoint['format']}, expected one of "
            f"{sorted(_RENAMES)}"
        )
    try:
        stored = json.loads(checkpoint["config"])
    except (TypeError, json.JSONDecodeError) as err:
        raise ValueError(
            f"{path}: the stored config is not valid JSON ({err})"
        ) from err
    checkpoint["config"] = config_from_dict(stored, _RENAMES[checkpoint["format"]])
    checkpoint["path"] = str(path)
    return checkpoint


def load_weights(model: nn.Module, weights: dict, path: str | os.PathLike) -> None:
    """``model.load_state_dict(weights)``, with an error that names the checkpoint."""
    try:
        model.load_state_dict(weights)
    except RuntimeError as err:
        raise ValueError(
            f"checkpoint {path} does not fit this model (wrong config?): {err}"
        ) from err


def resume(
    checkpoint: dict,
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler,
    device: torch.device,
) -> TrainState:
    """Restore the model, optimizer, schedule and RNG states of ``checkpoint``; return
    its position.

    Restoring all of them makes the resumed run bitwise identical to an uninterrupted
    one.
    """
    load_weights(model, checkpoint["model"], checkpoint["path"])
    try:
        optimizer.load_state_dict(checkpoint["optimizer"])
        scheduler.load_state_dict(checkpoint["scheduler"])
    except (ValueError, KeyError, RuntimeError) as err:
        raise ValueError(
            f"the checkpoint's optimizer or scheduler state does not fit: {err}"
        ) from err
    torch.set_rng_state(checkpoint["rng_torch"])
    if device.type == "cuda" and checkpoint.get("rng_cuda") is not None:
        torch.cuda.set_rng_state(checkpoint["rng_cuda"], device)
    version, internal, gauss = json.loads(checkpoint["rng_python"])
    random.setstate((version, tuple(internal), gauss))
    return TrainState(
        step=int(checkpoint["step"]),
        epoch=int(checkpoint["epoch"]),
        batch_in_epoch=int(checkpoint.get("batch_in_epoch", 0)),
        history=json.loads(checkpoint.get("history", "[]")),
    )


def load_model(path: str | os.PathLike) -> tuple[Transformer, object, Config]:
    """``(model, tokenizer, config)`` from a checkpoint written by training, the model
    in eval mode."""
    from tokenizers import Tokenizer

    checkpoint = load_checkpoint(path)
    tokenizer = Tokenizer.from_str(checkpoint["tokenizer"])
    model = build_model(checkpoint["config"], tokenizer.get_vocab_size())
    load_weights(model, checkpoint["model"], path)
    return model.eval(), tokenizer, checkpoint["config"]


def save_epoch_weights(run_dir: Path, model: nn.Module, state: TrainState) -> Path:
    """Keep the weights after a finished epoch as ``run_dir/epochNNN.pt`` (for
    averaging)."""
    path = run_dir / f"epoch{state.epoch:03d}.pt"
    torch.save(
        {"model": model.state_dict(), "epoch": state.epoch, "step": state.step}, path
    )
    return path


def epoch_checkpoints(run_dir: str | Path) -> list[Path]:
    """The ``epochNNN.pt`` files of a run, oldest first."""
    files = [p for p in Path(run_dir).iterdir() if EPOCH_FILE.search(p.name)]
    return sorted(files, key=lambda p: int(EPOCH_FILE.search(p.name).group(1)))


def average_checkpoints(paths: list[str | Path]) -> dict[str, torch.Tensor]:
    """The element-wise mean of the model weights stored in ``paths`` (summed in
    float64).

    Every file must hold a ``"model"`` state dict with the same names, shapes and
    dtypes.
    """
    if not paths:
        raise ValueError("average_checkpoints needs at least one checkpoint, got none")
    total: dict[str, torch.Tensor] = {}
    reference: dict[str, tuple] = {}
    for path in paths:
        checkpoint = torch.load(path, map_location="cpu", weights_only=True)
        if not isinstance(checkpoint, dict) or "model" not in checkpoint:
            raise ValueError(f"{path} holds no 'model' state dict")
        weights = checkpoint["model"]
        layout = {k: (tuple(v.shape), v.dtype) for k, v in weights.items()}
        if not reference:
            reference = layout
            total = {k: v.to(torch.float64) for k, v in weights.items()}
            continue
        if layout != reference:
            diff = sorted(
                k
                for k in layout.keys() | reference.keys()
                if layout.get(k) != reference.get(k)
            )
            raise ValueError(
                f"{path} does not match the first checkpoint (names, shapes or dtypes "
                f"differ: {diff[:3]})"
            )
        for k, v in weights.items():
            total[k] += v.to(torch.float64)
    return {k: (v / len(paths)).to(reference[k][1]) for k, v in total.items()}


def param_digest(model: nn.Module) -> str:
    """SHA-256 of every parameter's bytes, in order: equal digests mean bitwise-equal
    models."""
    h = hashlib.sha256()
    for name, p in model.state_dict().items():
        h.update(name.encode())
        h.update(p.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()
