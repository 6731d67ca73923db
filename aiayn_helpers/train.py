"""Train a Transformer on Multi30k (German -> English) and score it with sacreBLEU.

    python -m aiayn_helpers.train --preset quick --out runs/quick          # seconds, a smoke test
    python -m aiayn_helpers.train --preset multi30k-cpu --out runs/cpu --eval-bleu
    python -m aiayn_helpers.train --preset multi30k --out runs/full --eval-bleu --keep-epochs  # the full recipe
    torchrun --nproc_per_node=2 -m aiayn_helpers.train --preset quick --out runs/ddp

Every run writes ``OUT/last.pt`` (model, optimizer, scheduler, step, epoch, RNG
states, the BPE tokenizer as JSON and the config), ``OUT/metrics.json`` and, with
``--eval-bleu``, ``OUT/test2016.hyp.en``. ``--resume`` continues from ``OUT/last.pt``
(or a given file) exactly where it stopped, with the checkpoint's config; flags
given again override it, except those that change the model's shape (a clear
error). ``--max-steps`` and ``--time-budget-min`` limit one invocation and are not
inherited. ``--time-budget-min`` stops training after that many minutes (the
``multi30k-cpu`` preset: 50) and still evaluates. Under ``torchrun`` every process
trains on its own shard of the batches with DistributedDataParallel (gloo on CPU,
nccl on GPU); only rank 0 writes files and prints. ``--keep-epochs`` also keeps each
epoch's weights (``OUT/epochNNN.pt``) for ``python -m aiayn_helpers.evaluate --average N``.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import random
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist

from .data import BOS_ID, EOS_ID, PAD_ID, encode_pairs, length_batches, load_multi30k, train_bpe
from .model import Transformer
from .training import evaluate_loss, make_noam_scheduler, make_optimizer, train_epoch

CHECKPOINT_FORMAT = 1


@dataclasses.dataclass
class Config:
    preset: str = "quick"
    # model
    d_model: int = 32
    layers: int = 1
    heads: int = 2
    d_ff: int = 64
    dropout: float = 0.1
    vocab_size: int = 400
    min_frequency: int = 2
    share_embeddings: bool = True
    # data and optimisation
    max_len: int = 128
    max_tokens: int = 600
    epochs: int = 2
    max_steps: int | None = None
    warmup: int = 20
    lr_scale: float = 1.0
    label_smoothing: float = 0.1
    clip_norm: float | None = None
    seed: int = 0
    limit: int | None = 200
    eval_limit: int | None = 40
    time_budget_min: float | None = None
    amp_bf16: bool = False
    # evaluation
    beam_size: int = 4
    length_penalty: float = 0.6


# Which fields fix the shape of the model (a checkpoint must agree on them).
ARCH_FIELDS = ("d_model", "layers", "heads", "d_ff", "vocab_size", "share_embeddings")
# Limits of one invocation: not inherited from the checkpoint on --resume (give them again if wanted).
RUN_FIELDS = ("max_steps", "time_budget_min")

PRESETS: dict[str, dict] = {
    # a tiny model on 200 pairs: a few seconds, for tests and for trying the CLI
    "quick": {},
    # the CPU recipe for readers without a GPU (see book/results.md)
    "multi30k-cpu": dict(
        d_model=128,
        layers=3,
        heads=4,
        d_ff=512,
        dropout=0.1,
        vocab_size=6000,
        max_tokens=2500,
        epochs=30,
        warmup=500,
        lr_scale=0.5,
        limit=None,
        eval_limit=None,
        beam_size=4,
        time_budget_min=50.0,
    ),
    # the full recipe: d_model 256, 3+3 layers, 7.6 M parameters; about 100 minutes on 2 CPU cores
    # (book/results.md), minutes on a GPU
    "multi30k": dict(
        d_model=256,
        layers=3,
        heads=4,
        d_ff=1024,
        dropout=0.2,
        vocab_size=8000,
        max_tokens=3000,
        epochs=40,
        warmup=1000,
        lr_scale=0.7,
        limit=None,
        eval_limit=None,
        beam_size=4,
    ),
    # the paper's base model (6+6 layers, d_model 512) with the heavier regularisation a
    # 29k-pair corpus needs (dropout 0.3, 4 heads, d_ff 1024): a GPU run, not yet made
    "multi30k-base": dict(
        d_model=512,
        layers=6,
        heads=4,
        d_ff=1024,
        dropout=0.3,
        vocab_size=10000,
        max_tokens=4096,
        epochs=60,
        warmup=4000,
        lr_scale=1.0,
        limit=None,
        eval_limit=None,
        beam_size=4,
    ),
}


# -- distributed helpers ----------------------------------------------------------------------
def _dist_info() -> tuple[int, int]:
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def _log(msg: str) -> None:
    if _dist_info()[0] == 0:
        from tqdm import tqdm

        tqdm.write(msg, file=sys.stdout)
        sys.stdout.flush()


# -- model, checkpoint ------------------------------------------------------------------------
def build_model(cfg: Config, vocab_size: int) -> Transformer:
    return Transformer(
        vocab_size,
        vocab_size,
        d_model=cfg.d_model,
        num_heads=cfg.heads,
        num_layers=cfg.layers,
        d_ff=cfg.d_ff,
        dropout=cfg.dropout,
        share_embeddings=cfg.share_embeddings,
        pad_id=PAD_ID,
        fused=True,
    )


def save_checkpoint(
    path: Path, *, model, optimizer, scheduler, step, epoch, batch_in_epoch, tokenizer, cfg, history
) -> None:
    """Write a checkpoint that ``torch.load(weights_only=True)`` can read (tensors and plain types only)."""
    state = {
        "format": CHECKPOINT_FORMAT,
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "step": step,
        "epoch": epoch,
        "batch_in_epoch": batch_in_epoch,
        "rng_torch": torch.get_rng_state(),
        "rng_python": json.dumps(random.getstate()),
        "rng_cuda": torch.cuda.get_rng_state() if torch.cuda.is_available() else None,
        "tokenizer": tokenizer.to_str(),
        "config": json.dumps(dataclasses.asdict(cfg)),
        "history": json.dumps(history),
    }
    tmp = path.with_name(path.name + ".tmp")
    torch.save(state, tmp)
    tmp.replace(path)  # never leave a half-written last.pt behind


def load_checkpoint(path: str | os.PathLike) -> dict:
    """Read a checkpoint with ``weights_only=True``; a corrupt or foreign file raises ``ValueError``."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"checkpoint {path} does not exist")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # truncated zip, pickle errors, unsupported globals...
        raise ValueError(f"could not read checkpoint {path}: it is truncated or not a checkpoint ({err})") from err
    needed = ("format", "model", "optimizer", "scheduler", "step", "epoch", "tokenizer", "config")
    if not isinstance(state, dict) or any(k not in state for k in needed):
        raise ValueError(f"{path} is not an aiayn_helpers.train checkpoint (missing keys)")
    if state["format"] != CHECKPOINT_FORMAT:
        raise ValueError(f"{path} has checkpoint format {state['format']}, expected {CHECKPOINT_FORMAT}")
    try:
        state["config"] = json.loads(state["config"])
    except (TypeError, json.JSONDecodeError) as err:
        raise ValueError(f"{path}: the stored config is not valid JSON ({err})") from err
    return state


def load_model(path: str | os.PathLike):
    """``(model, tokenizer, config)`` from a checkpoint written by this script, model in eval mode."""
    from tokenizers import Tokenizer

    state = load_checkpoint(path)
    cfg = Config(**state["config"])
    tok = Tokenizer.from_str(state["tokenizer"])
    model = build_model(cfg, tok.get_vocab_size())
    _load_state(model, state["model"], path)
    return model.eval(), tok, cfg


def _load_state(model, state_dict, path) -> None:
    try:
        model.load_state_dict(state_dict)
    except RuntimeError as err:
        raise ValueError(f"checkpoint {path} does not fit this model (wrong config?): {err}") from err


def param_digest(model) -> str:
    """SHA-256 of every parameter's bytes, in order: equal digests mean bitwise-equal models."""
    h = hashlib.sha256()
    for name, p in model.state_dict().items():
        h.update(name.encode())
        h.update(p.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


# -- decoding and BLEU --------------------------------------------------------------------------
def _greedy(model, src: torch.Tensor, max_len: int) -> list[list[int]]:
    """Fallback greedy decoder (used only if aiayn_helpers.decoding is missing)."""
    memory = model.encode(src)
    ys = torch.full((src.shape[0], 1), BOS_ID, dtype=torch.long, device=src.device)
    done = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
    for _ in range(max_len):
        nxt = model.decode(ys, memory, src)[:, -1].argmax(-1)
        nxt = nxt.masked_fill(done, PAD_ID)
        ys = torch.cat([ys, nxt[:, None]], dim=1)
        done |= nxt == EOS_ID
        if bool(done.all()):
            break
    out = []
    for row in ys[:, 1:].tolist():
        row = row[: row.index(EOS_ID)] if EOS_ID in row else row
        out.append([t for t in row if t != PAD_ID])
    return out


@torch.no_grad()
def translate(
    model,
    tokenizer,
    sentences: list[str],
    beam_size: int = 4,
    length_penalty: float = 0.6,
    batch_size: int = 64,
    progress: bool = False,
) -> list[str]:
    """Translate German sentences with beam search (greedy if ``beam_size == 1``)."""
    from tqdm import tqdm

    try:
        from .decoding import beam_search, greedy_decode
    except ImportError:  # pragma: no cover - decoding.py is written by chapter 7
        beam_search = greedy_decode = None
    model.eval()
    order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))
    result: list[str] = [""] * len(sentences)
    chunks = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    for chunk in tqdm(chunks, desc="translate", disable=not progress, file=sys.stderr, leave=False):
        enc = tokenizer.encode_batch([sentences[i] for i in chunk], add_special_tokens=False)
        ids = [e.ids + [EOS_ID] for e in enc]
        width = max(len(x) for x in ids)
        src = torch.tensor([x + [PAD_ID] * (width - len(x)) for x in ids], dtype=torch.long)
        src = src.to(next(model.parameters()).device)
        max_len = width + 50  # the paper: input length + 50
        if beam_size > 1 and beam_search is not None:
            # max_len=None: each sentence may grow to its own input length + 50
            hyps = beam_search(
                model,
                src,
                beam_size=beam_size,
                max_len=None,
                bos_id=BOS_ID,
                eos_id=EOS_ID,
                length_penalty=length_penalty,
            )
        elif greedy_decode is not None:
            hyps = greedy_decode(model, src, None, bos_id=BOS_ID, eos_id=EOS_ID)
        else:
            hyps = _greedy(model, src, max_len)
        for i, h in zip(chunk, hyps, strict=True):
            result[i] = tokenizer.decode(list(h), skip_special_tokens=True)
    return result


def bleu_on(model, tokenizer, pairs, beam_size: int, length_penalty: float, progress: bool = False):
    """sacreBLEU (default 13a tokenisation, cased) of the model's translations of ``pairs``."""
    from sacrebleu.metrics import BLEU

    hyps = translate(model, tokenizer, [de for de, _ in pairs], beam_size, length_penalty, progress=progress)
    metric = BLEU()
    score = metric.corpus_score(hyps, [[en for _, en in pairs]])
    return score, str(metric.get_signature()), hyps


# -- the command line -----------------------------------------------------------------------------
def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m aiayn_helpers.train",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--preset", choices=sorted(PRESETS), default="quick")
    p.add_argument("--out", type=Path, required=True, help="folder for last.pt, metrics.json, translations")
    p.add_argument(
        "--resume", nargs="?", const="", default=None, metavar="CKPT", help="continue from CKPT (default OUT/last.pt)"
    )
    p.add_argument("--data-dir", default=None, help="Multi30k folder (default $AIAYN_DATA_DIR or a download)")
    for flag, typ in [
        ("--epochs", int),
        ("--max-steps", int),
        ("--d-model", int),
        ("--layers", int),
        ("--heads", int),
        ("--d-ff", int),
        ("--dropout", float),
        ("--vocab-size", int),
        ("--max-tokens", int),
        ("--warmup", int),
        ("--lr-scale", float),
        ("--label-smoothing", float),
        ("--seed", int),
        ("--limit", int),
        ("--eval-limit", int),
        ("--beam-size", int),
        ("--length-penalty", float),
        ("--time-budget-min", float),
        ("--clip-norm", float),
    ]:
        p.add_argument(flag, type=typ, default=None)
    p.add_argument("--amp-bf16", action="store_true", default=None, help="bfloat16 autocast (CPU with AMX, GPU)")
    p.add_argument("--eval-bleu", action="store_true", help="translate test2016 at the end and report sacreBLEU")
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads per process")
    p.add_argument("--save-every", type=int, default=0, help="also checkpoint every N steps (0: end of epoch)")
    p.add_argument(
        "--keep-epochs",
        action="store_true",
        help="also keep each finished epoch's weights as OUT/epochNNN.pt (for checkpoint averaging)",
    )
    p.add_argument(
        "--param-digest",
        action="store_true",
        help="every rank writes OUT/param_digest.rank<R>.txt at the end (tests of DDP)",
    )
    p.add_argument("--no-progress", action="store_true", help="no tqdm bars")
    return p.parse_args(argv)


def _overrides(args) -> dict:
    names = [f.name for f in dataclasses.fields(Config)]
    return {k: v for k, v in vars(args).items() if k in names and v is not None and k != "preset"}


def resolve_config(args, checkpoint_config: dict | None = None) -> Config:
    """Preset, then (when resuming) the checkpoint's config, then the flags given on the command line."""
    over = _overrides(args)
    if checkpoint_config is not None:
        base = dict(checkpoint_config)
        for k in RUN_FIELDS:  # how long to run is decided anew by each invocation
            base[k] = PRESETS.get(base.get("preset"), {}).get(k) if k != "max_steps" else None
        clash = {k: (base[k], over[k]) for k in ARCH_FIELDS if k in over and over[k] != base.get(k)}
        if clash:
            detail = ", ".join(f"{k}: checkpoint {a!r}, requested {b!r}" for k, (a, b) in clash.items())
            raise ValueError(f"the checkpoint was trained with a different model ({detail})")
        base.update(over)
        return Config(**base)
    base = dataclasses.asdict(Config())
    base.update(PRESETS[args.preset])
    base["preset"] = args.preset
    base.update(over)
    return Config(**base)


def main(argv=None) -> dict:
    args = parse_args(argv)
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
    if world > 1 and not dist.is_initialized():
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    rank, world = _dist_info()
    if args.threads:
        torch.set_num_threads(args.threads)
    out: Path = args.out
    if rank == 0:
        out.mkdir(parents=True, exist_ok=True)

    state = None
    if args.resume is not None:
        ckpt = Path(args.resume) if args.resume else out / "last.pt"
        state = load_checkpoint(ckpt)
        cfg = resolve_config(args, state["config"])
    else:
        cfg = resolve_config(args)
    progress = rank == 0 and not args.no_progress

    # data and vocabulary (rank 0 trains the BPE, the others receive it)
    from tokenizers import Tokenizer

    t0 = time.perf_counter()
    train_pairs = load_multi30k("train", args.data_dir, limit=cfg.limit)
    val_pairs = load_multi30k("val", args.data_dir, limit=cfg.eval_limit)
    if state is not None:
        tok_json = state["tokenizer"]
    else:
        box = [
            train_bpe([s for p in train_pairs for s in p], cfg.vocab_size, cfg.min_frequency).to_str()
            if rank == 0
            else None
        ]
        if world > 1:
            dist.broadcast_object_list(box, src=0)
        tok_json = box[0]
    tokenizer = Tokenizer.from_str(tok_json)
    train_ids = encode_pairs(tokenizer, train_pairs, max_len=cfg.max_len)
    val_ids = encode_pairs(tokenizer, val_pairs, max_len=cfg.max_len)

    random.seed(cfg.seed)
    torch.manual_seed(cfg.seed)
    model = build_model(cfg, tokenizer.get_vocab_size()).to(device)
    n_params = sum(p.numel() for p in model.parameters())
    optimizer = make_optimizer(model)
    scheduler = make_noam_scheduler(optimizer, cfg.d_model, cfg.warmup, cfg.lr_scale)
    step = epoch = batch_in_epoch = 0
    history: list[dict] = []
    if state is not None:
        _load_state(model, state["model"], args.resume or out / "last.pt")
        try:
            optimizer.load_state_dict(state["optimizer"])
            scheduler.load_state_dict(state["scheduler"])
        except (ValueError, KeyError, RuntimeError) as err:
            raise ValueError(f"the checkpoint's optimizer or scheduler state does not fit: {err}") from err
        step, epoch, batch_in_epoch = int(state["step"]), int(state["epoch"]), int(state.get("batch_in_epoch", 0))
        torch.set_rng_state(state["rng_torch"])
        if device.type == "cuda" and state.get("rng_cuda") is not None:
            torch.cuda.set_rng_state(state["rng_cuda"], device)
        rs = json.loads(state["rng_python"])
        random.setstate((rs[0], tuple(rs[1]), rs[2]))
        history = json.loads(state.get("history", "[]"))
    train_model = model
    if world > 1:
        train_model = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[device.index] if device.type == "cuda" else None
        )
    _log(
        f"preset {cfg.preset}: {n_params:,} parameters, vocabulary {tokenizer.get_vocab_size()}, "
        f"{len(train_ids)} training pairs, {world} process(es) x {torch.get_num_threads()} thread(s), {device}"
        + (f", resuming at step {step} (epoch {epoch + 1}, batch {batch_in_epoch})" if state else "")
    )

    def checkpoint(ep: int, b_in_ep: int) -> None:
        if rank == 0:
            save_checkpoint(
                out / "last.pt",
                model=model,
                optimizer=optimizer,
                scheduler=scheduler,
                step=step,
                epoch=ep,
                batch_in_epoch=b_in_ep,
                tokenizer=tokenizer,
                cfg=cfg,
                history=history,
            )

    from tqdm import tqdm

    train_start = time.perf_counter()
    stop = False
    amp = torch.autocast(
        "cuda" if torch.cuda.is_available() else "cpu", dtype=torch.bfloat16, enabled=bool(cfg.amp_bf16)
    )
    while epoch < cfg.epochs and not stop:
        batches = length_batches(train_ids, cfg.max_tokens, shuffle=True, seed=cfg.seed + epoch)
        per_rank = len(batches) // world  # every rank the same number of updates (DDP needs it)
        mine = batches[rank::world][:per_rank]
        todo = mine[batch_in_epoch:]
        bar = tqdm(
            total=len(mine),
            initial=batch_in_epoch,
            desc=f"epoch {epoch + 1}/{cfg.epochs}",
            disable=not progress,
            file=sys.stderr,
            unit="batch",
            dynamic_ncols=True,
        )
        seen = {"n": batch_in_epoch, "tok": 0}
        ep_start = time.perf_counter()

        def on_step(info, _bar=bar, _seen=seen, _ep=epoch, _start=ep_start):
            nonlocal step, stop
            step += 1
            _seen["n"] += 1
            _seen["tok"] += info["tokens"] + info["src_tokens"]
            rate = _seen["tok"] * world / max(time.perf_counter() - _start, 1e-9)
            _bar.update(1)
            _bar.set_postfix(loss=f"{info['loss']:.3f}", lr=f"{info['lr']:.2e}", tok_s=f"{rate:.0f}")
            if args.save_every and step % args.save_every == 0:
                checkpoint(_ep, _seen["n"])
            if cfg.max_steps is not None and step >= cfg.max_steps:
                stop = True
            if cfg.time_budget_min is not None:
                over = time.perf_counter() - train_start > 60 * cfg.time_budget_min
                if world > 1:  # all ranks must agree to stop
                    flag = torch.tensor([int(over)], device=device)
                    dist.all_reduce(flag, op=dist.ReduceOp.MAX)
                    over = bool(flag.item())
                if over:
                    stop = True
            return stop

        with amp:
            stats = train_epoch(
                train_model,
                train_ids,
                todo,
                optimizer,
                scheduler,
                epsilon=cfg.label_smoothing,
                clip_norm=cfg.clip_norm,
                on_step=on_step,
            )
        bar.close()
        finished_epoch = seen["n"] >= len(mine)
        tok_s = (stats["tokens"] + stats["src_tokens"]) * world / max(stats["seconds"], 1e-9)
        with amp:
            val = evaluate_loss(model, val_ids, max_tokens=max(cfg.max_tokens, 1000)) if rank == 0 else {}
        record = {
            "epoch": epoch + 1,
            "step": step,
            "train_loss": stats["loss"],
            "val_loss": val.get("loss"),
            "val_ppl": val.get("ppl"),
            "tokens_per_s": tok_s,
            "epoch_seconds": stats["seconds"],
            "elapsed_s": time.perf_counter() - t0,
            "complete": finished_epoch,
        }
        history.append(record)
        _log(
            f"epoch {epoch + 1} step {step}: train loss {stats['loss']:.3f}, val loss "
            f"{val.get('loss', float('nan')):.3f} (ppl {val.get('ppl', float('nan')):.1f}), "
            f"{tok_s:.0f} tokens/s (source+target, all processes), {stats['seconds']:.0f} s"
        )
        if finished_epoch:
            epoch, batch_in_epoch = epoch + 1, 0
            if args.keep_epochs and rank == 0:
                torch.save({"model": model.state_dict(), "epoch": epoch, "step": step}, out / f"epoch{epoch:03d}.pt")
        else:
            batch_in_epoch = seen["n"]
        checkpoint(epoch, batch_in_epoch)
        if world > 1:
            dist.barrier()

    train_seconds = time.perf_counter() - train_start
    total_tokens = sum(h["tokens_per_s"] * h["epoch_seconds"] for h in history)
    summary = {
        "config": dataclasses.asdict(cfg),
        "parameters": n_params,
        "steps": step,
        "epochs_done": epoch,
        "train_seconds_this_run": train_seconds,
        "world_size": world,
        "threads": torch.get_num_threads(),
        "tokens_per_s": total_tokens / max(sum(h["epoch_seconds"] for h in history), 1e-9) if history else None,
        "history": history,
    }
    if args.param_digest:
        (out / f"param_digest.rank{rank}.txt").write_text(param_digest(model) + "\n")
    if args.eval_bleu and rank == 0:
        test_pairs = load_multi30k("test2016", args.data_dir, limit=cfg.eval_limit)
        e0 = time.perf_counter()
        with amp:
            score, signature, hyps = bleu_on(
                model, tokenizer, test_pairs, cfg.beam_size, cfg.length_penalty, progress=progress
            )
        (out / "test2016.hyp.en").write_text("\n".join(hyps) + "\n", encoding="utf-8")
        summary.update(
            bleu=round(score.score, 2),
            bleu_signature=signature,
            bleu_detail=str(score),
            decode_seconds=time.perf_counter() - e0,
            beam_size=cfg.beam_size,
        )
        _log(
            f"test2016 sacreBLEU {score.score:.2f} ({signature}), beam {cfg.beam_size}, "
            f"{summary['decode_seconds']:.0f} s to translate {len(test_pairs)} sentences"
        )
    summary["wall_seconds"] = time.perf_counter() - t0
    if rank == 0:
        (out / "metrics.json").write_text(json.dumps(summary, indent=2) + "\n")
        _log(
            f"done: {step} steps in {train_seconds:.0f} s of training, {summary['wall_seconds']:.0f} s in all; "
            f"files in {out}"
        )
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()
    return summary


if __name__ == "__main__":
    try:
        main()
    except ValueError as err:  # a clear one-line message instead of a traceback
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
