"""Train a Transformer on Multi30k (German -> English) and score it with sacreBLEU.

    python -m aiayn_helpers.train --preset quick --out runs/quick  # a smoke test
    python -m aiayn_helpers.train --preset multi30k-cpu --out runs/cpu --eval-bleu
    python -m aiayn_helpers.train --preset multi30k --out runs/full --eval-bleu \
        --keep-epochs  # the full recipe
    torchrun --nproc_per_node=2 -m aiayn_helpers.train --preset quick --out runs/ddp

Every setting lives in one :class:`~aiayn_helpers.config.Config`: a preset, then the
flags given (``--d-model 64``, ``--num-layers 2`` or ``--layers 2``, ...). Every run
writes ``OUT/last.pt`` (:mod:`aiayn_helpers.checkpoint`), ``OUT/metrics.json`` and, with
``--eval-bleu``, ``OUT/test2016.hyp.en``. ``--resume`` continues from ``OUT/last.pt``
(or a given file) exactly where it stopped, with the checkpoint's config; flags
given again override it, except those that change the model's shape (a clear
error). ``--max-steps`` and ``--time-budget-min`` limit one invocation and are not
inherited. ``--time-budget-min`` stops training after that many minutes (the
``multi30k-cpu`` preset: 50) and still evaluates. Under ``torchrun`` every process
trains on its own shard of the batches with DistributedDataParallel (gloo on CPU,
nccl on GPU); only rank 0 writes files and prints. ``--keep-epochs`` also keeps each
epoch's weights (``OUT/epochNNN.pt``) for ``python -m aiayn_helpers.evaluate
--average N``. The loop itself is :func:`aiayn_helpers.training.train_epoch`, the one
chapter 7 uses; this script adds the data, checkpoints, logging and ``torchrun``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist

from . import _cli
from .checkpoint import (
    TrainState,
    load_checkpoint,
    param_digest,
    resume,
    save_checkpoint,
    save_epoch_weights,
)
from .config import PRESETS, Config, build_model, resolve_config
from .data import encode_pairs, length_batches, load_multi30k, train_bpe
from .model import Transformer
from .training import (
    evaluate_loss,
    make_noam_scheduler,
    make_optimizer,
    train_epoch,
)
from .translation import translate_and_score


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    run = start_run(args)  # 1. data, model, Adam and the schedule (or --resume's)
    amp = torch.autocast(
        run.device.type, dtype=torch.bfloat16, enabled=run.cfg.amp_bf16
    )
    with amp:  # 2. the loop: training.train_epoch, epoch after epoch
        while run.state.epoch < run.cfg.epochs:
            if not train_one_epoch(run, progress=not args.no_progress):
                break  # --max-steps or --time-budget-min
    # 3. results: metrics.json and, with --eval-bleu, test2016 translated and scored
    summary = run_summary(
        run.cfg, run.state, run.model, time.perf_counter() - run.train_start, run.world
    )
    if args.param_digest:
        digest = run.out / f"param_digest.rank{run.rank}.txt"
        digest.write_text(param_digest(run.model) + "\n")
    if run.cfg.eval_bleu and run.rank == 0:
        with amp:
            bleu = score_test_set(
                run.model, run.tokenizer, run.cfg, run.out, not args.no_progress
            )
        summary.update(bleu)
    summary["wall_seconds"] = time.perf_counter() - run.started
    if run.rank == 0:
        write_metrics(summary, run.out)
    leave_process_group(run.world)
    return summary


# -- the command line -----------------------------------------------------------------
# The Config fields that have a flag of their own (--d-model sets d_model), and older
# spellings.
CONFIG_FLAGS = [
    ("epochs", int), ("max_steps", int), ("d_model", int), ("num_layers", int),
    ("num_heads", int), ("d_ff", int), ("dropout", float), ("vocab_size", int),
    ("min_frequency", int), ("truncate_len", int), ("max_tokens", int), ("warmup", int),
    ("lr_scale", float), ("label_smoothing", float), ("clip_norm", float),
    ("seed", int), ("limit", int), ("eval_limit", int), ("beam_size", int),
    ("length_penalty", float), ("time_budget_min", float), ("save_every", int),
    ("d_k", int), ("positional", str),
]  # fmt: skip
FLAG_ALIASES = {"num_layers": ["--layers"], "num_heads": ["--heads"]}
SWITCHES = {
    "amp_bf16": "bfloat16 autocast (CPU with AMX, GPU)",
    "eval_bleu": "translate test2016 at the end and report sacreBLEU",
    "keep_epochs": "also keep each finished epoch's weights as OUT/epochNNN.pt "
    "(for checkpoint averaging)",
}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = _cli.make_parser("python -m aiayn_helpers.train", __doc__)
    p.add_argument("--preset", choices=sorted(PRESETS), default="quick")
    p.add_argument(
        "--out",
        type=Path,
        required=True,
        help="folder for last.pt, metrics.json, translations",
    )
    p.add_argument(
        "--resume",
        nargs="?",
        const="",
        default=None,
        metavar="CKPT",
        help="continue from CKPT (default OUT/last.pt)",
    )
    for name, typ in CONFIG_FLAGS:
        p.add_argument(
            "--" + name.replace("_", "-"),
            *FLAG_ALIASES.get(name, []),
            dest=name,
            type=typ,
            default=None,
        )
    for name, text in SWITCHES.items():
        p.add_argument(
            "--" + name.replace("_", "-"),
            action=argparse.BooleanOptionalAction,
            default=None,
            help=text,
        )
    p.add_argument(
        "--device", default=None, help="cpu or cuda (default: cuda when available)"
    )
    p.add_argument(
        "--param-digest",
        action="store_true",
        help="every rank writes OUT/param_digest.rank<R>.txt at the end (tests of DDP)",
    )
    return p.parse_args(argv)


def config_flags(args: argparse.Namespace) -> dict:
    """The Config fields given on the command line (a flag not given is None)."""
    names = [f.name for f in dataclasses.fields(Config) if f.name != "preset"]
    return {k: getattr(args, k) for k in names if getattr(args, k, None) is not None}


# -- the pieces of main(), in the order it uses them ----------------------------------
def setup_process(
    device_name: str | None, threads: int | None
) -> tuple[int, int, torch.device]:
    """``(rank, world size, device)``; under ``torchrun`` this joins the process
    group."""
    device = torch.device(
        device_name or ("cuda" if torch.cuda.is_available() else "cpu")
    )
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
    if int(os.environ.get("WORLD_SIZE", "1")) > 1 and not dist.is_initialized():
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    if threads:
        torch.set_num_threads(threads)
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size(), device
    return 0, 1, device


def log(message: str, rank: int) -> None:
    """Print on rank 0 only, above any progress bar."""
    if rank == 0:
        from tqdm import tqdm

        tqdm.write(message, file=sys.stdout)
        sys.stdout.flush()


def load_data(cfg: Config, checkpoint: dict | None, rank: int, world: int) -> tuple:
    """``(tokenizer, train_ids, val_ids)``: Multi30k's training and validation pairs
    as token ids.

    The BPE tokenizer is the checkpoint's when resuming; else rank 0 trains it and
    sends it to the others.
    """
    from tokenizers import Tokenizer

    train_pairs = load_multi30k("train", cfg.data_dir, limit=cfg.limit)
    val_pairs = load_multi30k("val", cfg.data_dir, limit=cfg.eval_limit)
    if checkpoint is not None:
        box = [checkpoint["tokenizer"]]
    elif rank == 0:
        box = [
            train_bpe(
                [s for pair in train_pairs for s in pair],
                cfg.vocab_size,
                cfg.min_frequency,
            ).to_str()
        ]
    else:
        box = [None]
    if checkpoint is None and world > 1:
        dist.broadcast_object_list(box, src=0)
    tokenizer = Tokenizer.from_str(box[0])
    train_ids = encode_pairs(tokenizer, train_pairs, truncate_len=cfg.truncate_len)
    return (
        tokenizer,
        train_ids,
        encode_pairs(tokenizer, val_pairs, truncate_len=cfg.truncate_len),
    )


def wrap_ddp(
    model: torch.nn.Module, device: torch.device, world: int
) -> torch.nn.Module:
    """Under ``torchrun``, DistributedDataParallel: the backward pass all-reduces the
    gradients."""
    if world == 1:
        return model
    return torch.nn.parallel.DistributedDataParallel(
        model, device_ids=[device.index] if device.type == "cuda" else None
    )


def describe_run(
    cfg: Config,
    model: Transformer,
    tokenizer,
    train_ids: list,
    world: int,
    device: torch.device,
    resumed: TrainState | None,
) -> str:
    n_params = sum(p.numel() for p in model.parameters())
    text = (
        f"preset {cfg.preset}: {n_params:,} parameters, "
        f"vocabulary {tokenizer.get_vocab_size()}, {len(train_ids)} training pairs, "
        f"{world} process(es) x {torch.get_num_threads()} thread(s), {device}"
    )
    if resumed is not None:
        text += (
            f", resuming at step {resumed.step} (epoch {resumed.epoch + 1}, "
            f"batch {resumed.batch_in_epoch})"
        )
    return text


@dataclasses.dataclass
class Run:
    """What one invocation trains with: the config, the data, the model, Adam, the
    schedule, the position reached (``state``) and the process's place under
    ``torchrun``."""

    cfg: Config
    out: Path
    rank: int
    world: int
    device: torch.device
    tokenizer: object
    train_ids: list
    val_ids: list
    model: Transformer
    ddp_model: torch.nn.Module  # the model itself in a single process
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    state: TrainState
    started: float  # when the invocation started (perf_counter)
    train_start: float  # when its training loop started

    def save(self) -> None:
        """Write ``OUT/last.pt``: everything ``--resume`` needs to continue exactly."""
        save_checkpoint(
            self.out / "last.pt",
            self.model,
            self.optimizer,
            self.scheduler,
            self.state,
            self.tokenizer,
            self.cfg,
        )


def start_run(args: argparse.Namespace) -> Run:
    """Set up the process, the config, the data, the model, Adam and the schedule.

    With ``--resume`` the checkpoint gives the config (flags override all but the
    model's shape), the tokenizer, the weights, Adam's moments, the schedule, the RNG
    states and the position in the epoch.
    """
    started = time.perf_counter()
    rank, world, device = setup_process(args.device, args.threads)
    if rank == 0:
        args.out.mkdir(parents=True, exist_ok=True)
    checkpoint = None
    if args.resume is not None:
        checkpoint = load_checkpoint(Path(args.resume or args.out / "last.pt"))
    stored = checkpoint["config"] if checkpoint else None
    cfg = resolve_config(args.preset, config_flags(args), stored)
    # data: sentence pairs, one BPE vocabulary for both languages, token ids
    tokenizer, train_ids, val_ids = load_data(cfg, checkpoint, rank, world)
    random.seed(cfg.seed)
    torch.manual_seed(cfg.seed)
    model = build_model(cfg, tokenizer.get_vocab_size()).to(device)
    optimizer = make_optimizer(model)
    scheduler = make_noam_scheduler(optimizer, cfg.d_model, cfg.warmup, cfg.lr_scale)
    state = TrainState()
    if checkpoint:
        state = resume(checkpoint, model, optimizer, scheduler, device)
    resumed = state if checkpoint else None
    log(describe_run(cfg, model, tokenizer, train_ids, world, device, resumed), rank)
    return Run(
        cfg, args.out, rank, world, device, tokenizer, train_ids, val_ids, model,
        wrap_ddp(model, device, world), optimizer, scheduler, state, started,
        train_start=time.perf_counter(),
    )  # fmt: skip


def train_one_epoch(run: Run, progress: bool) -> bool:
    """Train one epoch (after ``--resume``, the rest of one) with
    :func:`~aiayn_helpers.training.train_epoch`, then validate, log and save
    ``last.pt``. Returns False if ``--max-steps`` or ``--time-budget-min`` stopped it.
    """
    cfg, state = run.cfg, run.state
    batches = epoch_batches(run.train_ids, cfg, state.epoch, run.rank, run.world)
    bar = progress_bar(state, len(batches), cfg.epochs, progress and run.rank == 0)
    after_step = StepHook(run, bar)
    train = train_epoch(
        run.ddp_model,
        run.train_ids,
        batches[state.batch_in_epoch :],
        run.optimizer,
        run.scheduler,
        epsilon=cfg.label_smoothing,
        clip_norm=cfg.clip_norm,
        on_step=after_step,
    )
    bar.close()
    end_epoch(run, train, len(batches))
    if run.rank == 0:
        run.save()
    if run.world > 1:
        dist.barrier()
    return not after_step.stopped


class StepHook:
    """Called by ``train_epoch`` after every update: count it, show it on the progress
    bar, save ``last.pt`` every ``save_every`` steps, and say whether to stop."""

    def __init__(self, run: Run, bar) -> None:
        self.run, self.bar, self.stopped = run, bar, False
        self.tokens, self.start = 0, time.perf_counter()

    def __call__(self, info: dict) -> bool:
        run, state = self.run, self.run.state
        state.step, state.batch_in_epoch = state.step + 1, state.batch_in_epoch + 1
        self.tokens += info["tokens"] + info["src_tokens"]
        rate = self.tokens * run.world / max(time.perf_counter() - self.start, 1e-9)
        self.bar.update(1)
        self.bar.set_postfix(
            loss=f"{info['loss']:.3f}", lr=f"{info['lr']:.2e}", tok_s=f"{rate:.0f}"
        )
        if (
            run.rank == 0
            and run.cfg.save_every
            and state.step % run.cfg.save_every == 0
        ):
            run.save()
        self.stopped = out_of_budget(
            run.cfg, state.step, run.train_start, run.device, run.world
        )
        return self.stopped


def epoch_batches(
    train_ids: list, cfg: Config, epoch: int, rank: int, world: int
) -> list[list[int]]:
    """This process's batches for ``epoch``: every process shuffles alike and takes an
    equal share."""
    batches = length_batches(
        train_ids, cfg.max_tokens, shuffle=True, seed=cfg.seed + epoch
    )
    per_rank = (
        len(batches) // world
    )  # every rank the same number of updates (DDP needs it)
    return batches[rank::world][:per_rank]


def progress_bar(state: TrainState, total: int, epochs: int, enabled: bool):
    from tqdm import tqdm

    return tqdm(
        total=total,
        initial=state.batch_in_epoch,
        desc=f"epoch {state.epoch + 1}/{epochs}",
        disable=not enabled,
        file=sys.stderr,
        unit="batch",
        dynamic_ncols=True,
    )


def out_of_budget(
    cfg: Config, step: int, train_start: float, device: torch.device, world: int
) -> bool:
    """Whether to stop now: ``max_steps`` reached or ``time_budget_min`` spent (all
    ranks agree)."""
    stop = cfg.max_steps is not None and step >= cfg.max_steps
    if cfg.time_budget_min is not None:
        over = time.perf_counter() - train_start > 60 * cfg.time_budget_min
        if world > 1:  # all ranks must agree to stop
            flag = torch.tensor([int(over)], device=device)
            dist.all_reduce(flag, op=dist.ReduceOp.MAX)
            over = bool(flag.item())
        stop = stop or over
    return stop


def end_epoch(run: Run, train: dict, num_batches: int) -> None:
    """Record the (part of an) epoch just trained, ``train`` being
    :func:`~aiayn_helpers.training.train_epoch`'s summary, in the history and log it.

    Rank 0 also measures the validation loss. A finished epoch advances the state to
    the next one and, with ``keep_epochs``, keeps its weights in ``OUT``.
    """
    state, cfg = run.state, run.cfg
    finished = state.batch_in_epoch >= num_batches
    val = {}
    if run.rank == 0:
        val = evaluate_loss(run.model, run.val_ids, max(cfg.max_tokens, 1000))
    seconds = max(train["seconds"], 1e-9)
    record = {
        "epoch": state.epoch + 1,
        "step": state.step,
        "train_loss": train["loss"],
        "val_loss": val.get("loss"),
        "val_ppl": val.get("ppl"),
        "tokens_per_s": (train["tokens"] + train["src_tokens"]) * run.world / seconds,
        "epoch_seconds": train["seconds"],
        "elapsed_s": time.perf_counter() - run.started,
        "complete": finished,
    }
    state.history.append(record)
    log(describe_epoch(record), run.rank)
    if finished:
        state.epoch, state.batch_in_epoch = state.epoch + 1, 0
        if run.rank == 0 and cfg.keep_epochs:
            save_epoch_weights(run.out, run.model, state)


def describe_epoch(record: dict) -> str:
    val_loss, val_ppl = (
        float("nan") if v is None else v
        for v in (record["val_loss"], record["val_ppl"])
    )
    return (
        f"epoch {record['epoch']} step {record['step']}: "
        f"train loss {record['train_loss']:.3f}, val loss "
        f"{val_loss:.3f} (ppl {val_ppl:.1f}), {record['tokens_per_s']:.0f} tokens/s "
        "(source+target, all processes), "
        f"{record['epoch_seconds']:.0f} s"
    )


def run_summary(
    cfg: Config, state: TrainState, model: Transformer, train_seconds: float, world: int
) -> dict:
    history = state.history
    seconds = sum(h["epoch_seconds"] for h in history)
    tokens = sum(h["tokens_per_s"] * h["epoch_seconds"] for h in history)
    return {
        "config": dataclasses.asdict(cfg),
        "parameters": sum(p.numel() for p in model.parameters()),
        "steps": state.step,
        "epochs_done": state.epoch,
        "train_seconds_this_run": train_seconds,
        "world_size": world,
        "threads": torch.get_num_threads(),
        "tokens_per_s": tokens / max(seconds, 1e-9) if history else None,
        "history": history,
    }


def leave_process_group(world: int) -> None:
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()


def write_metrics(summary: dict, out: Path) -> None:
    (out / "metrics.json").write_text(json.dumps(summary, indent=2) + "\n")
    log(
        f"done: {summary['steps']} steps in "
        f"{summary['train_seconds_this_run']:.0f} s of training, "
        f"{summary['wall_seconds']:.0f} s in all; files in {out}",
        0,
    )


def score_test_set(
    model: Transformer, tokenizer, cfg: Config, out: Path, progress: bool
) -> dict:
    """Translate test2016 with beam search, write ``OUT/test2016.hyp.en``, return the
    BLEU entries of metrics.json."""
    test_pairs = load_multi30k("test2016", cfg.data_dir, limit=cfg.eval_limit)
    start = time.perf_counter()
    score, signature, hyps = translate_and_score(
        model,
        tokenizer,
        test_pairs,
        cfg.beam_size,
        cfg.length_penalty,
        progress=progress,
    )
    (out / "test2016.hyp.en").write_text("\n".join(hyps) + "\n", encoding="utf-8")
    seconds = time.perf_counter() - start
    log(
        f"test2016 sacreBLEU {score.score:.2f} ({signature}), beam {cfg.beam_size}, "
        f"{seconds:.0f} s to translate {len(test_pairs)} sentences",
        0,
    )
    return {
        "bleu": round(score.score, 2),
        "bleu_signature": signature,
        "bleu_detail": str(score),
        "decode_seconds": seconds,
        "beam_size": cfg.beam_size,
    }


if __name__ == "__main__":
    _cli.run(main)
