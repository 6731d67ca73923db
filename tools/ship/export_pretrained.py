"""Turn a training run into the shipped model ``aiayn_helpers/pretrained/<name>/``.

    python tools/ship/export_pretrained.py runs/ship/last.pt --average 5 --beam-size 4 --length-penalty 1.0 \
        --command "python -m ..." --hardware "2-core AMD EPYC, alone" --time "1 h 35 min" \
        --loadavg runs/ship/loadavg.log --notes runs/ship/FINAL

``CHECKPOINT`` is a run's ``last.pt`` or one of its ``epochNNN.pt`` files (``--keep-epochs``);
``--average N`` exports instead the mean of the run's last N ``epochNNN.pt`` files
(the paper's section 6.1). The tokenizer and the config always come from the run's
``last.pt``; ``--beam-size`` and ``--length-penalty`` (chosen on the validation split
with ``python -m aiayn_helpers.evaluate``) are written into ``config.json``, where
``aiayn_helpers.translate`` (in ``aiayn_helpers/translation.py``) takes its defaults. The weights are stored as float16
safetensors; then the exported model is loaded back exactly as
``aiayn_helpers.load_pretrained`` loads it (float32) and translates test2016 with
``aiayn_helpers.translate`` and its defaults, as chapter 8 does, once; the manifest
records the score with its brevity penalty, the training details (with the load
average sampled during training) and the SHA-256 of every file.
Needs the Multi30k corpus ($AIAYN_DATA_DIR or the download cache).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import platform
import time
from pathlib import Path

import torch

from aiayn_helpers.checkpoint import average_checkpoints, epoch_checkpoints, load_checkpoint
from aiayn_helpers.config import build_model
from aiayn_helpers.pretrained import FILES, MANIFEST, ROOT, load_pretrained_dir, sha256, write_safetensors

MAX_BYTES = 16 * 1024 * 1024


def export_weights(checkpoint: Path, out: Path, average: int, beam_size: int, length_penalty: float) -> dict:
    """Write the weights, ``tokenizer.json`` and ``config.json`` into ``out``; return facts for the manifest."""
    run = load_checkpoint(checkpoint.parent / "last.pt" if checkpoint.name != "last.pt" else checkpoint)
    if average:
        paths = epoch_checkpoints(checkpoint.parent)[-average:]
        if len(paths) < average:
            raise SystemExit(f"--average {average}: {checkpoint.parent} holds only {len(paths)} epoch files")
        weights, used = average_checkpoints(paths), [p.name for p in paths]
        position = torch.load(paths[-1], map_location="cpu", weights_only=True)
    else:
        position = torch.load(checkpoint, map_location="cpu", weights_only=True)
        if not isinstance(position, dict) or "model" not in position:
            raise ValueError(f"{checkpoint} holds no 'model' state dict")
        weights, used = position["model"], [checkpoint.name]
    cfg = dataclasses.replace(run["config"], beam_size=beam_size, length_penalty=length_penalty)
    from tokenizers import Tokenizer

    model = build_model(cfg, Tokenizer.from_str(run["tokenizer"]).get_vocab_size())
    model.load_state_dict(weights)  # the model ties its shared weights; the file stores them once
    out.mkdir(parents=True, exist_ok=True)
    for stale in ("weights.pt",):  # the pickled format of earlier exports
        (out / stale).unlink(missing_ok=True)
    write_safetensors(model.state_dict(), out / "weights.safetensors", dtype=torch.float16)
    (out / "tokenizer.json").write_text(run["tokenizer"], encoding="utf-8")
    (out / "config.json").write_text(json.dumps(dataclasses.asdict(cfg), indent=1) + "\n", encoding="utf-8")
    return {
        "checkpoints": used,
        "averaged": len(used),
        "epoch": int(position.get("epoch", run["epoch"])),
        "step": int(position.get("step", run["step"])),
        "parameters": sum(p.numel() for p in model.parameters()),
    }


def load_average(log: Path) -> dict:
    """Summary of a file of ``HH:MM:SS l1 l5 l15 ...`` lines (``/proc/loadavg`` sampled each minute)."""
    one = [float(line.split()[1]) for line in log.read_text().splitlines() if len(line.split()) >= 4]
    if not one:
        raise SystemExit(f"{log} holds no load-average samples")
    return {
        "samples": len(one),
        "one_minute_min": min(one),
        "one_minute_median": sorted(one)[len(one) // 2],
        "one_minute_max": max(one),
    }


def score_test2016(out: Path, split: str = "test2016", data_dir: Path | None = None) -> dict:
    """The exported model's sacreBLEU on ``split`` through ``aiayn_helpers.translate`` and its defaults (float32)."""
    from sacrebleu.metrics import BLEU

    from aiayn_helpers.data import load_multi30k
    from aiayn_helpers.translation import translate

    model, tokenizer = load_pretrained_dir(out)
    pairs = load_multi30k(split, data_dir)
    start = time.perf_counter()
    hyps = translate(model, tokenizer, [de for de, _ in pairs])
    metric = BLEU()
    score = metric.corpus_score(hyps, [[en for _, en in pairs]])
    return {
        "score": round(score.score, 2),
        "brevity_penalty": round(score.bp, 3),
        "full": str(score),
        "signature": str(metric.get_signature()),
        "sentences": len(pairs),
        **model.decoding_defaults,
        "dtype": "float32",
        "seconds": round(time.perf_counter() - start, 1),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", type=Path, nargs="?", help="a run's last.pt or epochNNN.pt")
    parser.add_argument(
        "--rescore",
        type=Path,
        help="score an exported folder instead (test2016 once, then the held-out sets) and update its manifest",
    )
    parser.add_argument(
        "--heldout-dir", type=Path, help="a folder with the 2017/2018 test sets (default: the data folder)"
    )
    parser.add_argument("--average", type=int, default=0, help="export the mean of the run's last N epoch files")
    parser.add_argument("--beam-size", type=int, help="chosen on the validation split")
    parser.add_argument("--length-penalty", type=float, help="chosen on the validation split")
    parser.add_argument("--loadavg", type=Path, help="the load average sampled during training (one line a minute)")
    parser.add_argument("--name", default="multi30k", help="the folder under aiayn_helpers/pretrained")
    parser.add_argument("--out", type=Path, help="write here instead of aiayn_helpers/pretrained/NAME")
    parser.add_argument("--command", help="the training command")
    parser.add_argument("--hardware", help="where it trained")
    parser.add_argument("--time", help="how long it trained")
    parser.add_argument(
        "--notes", type=Path, help="a text file to keep verbatim in the manifest (e.g. runs/ship/FINAL)"
    )
    parser.add_argument("--no-bleu", action="store_true", help="skip the test2016 score (tests only)")
    args = parser.parse_args(argv)
    if args.rescore:
        return rescore(args.rescore, args.heldout_dir)
    missing = [
        f
        for f in ("checkpoint", "beam_size", "length_penalty", "command", "hardware", "time")
        if getattr(args, f) is None
    ]
    if missing:
        parser.error(f"exporting needs {', '.join(missing)}")

    out = args.out or ROOT / args.name
    facts = export_weights(args.checkpoint, out, args.average, args.beam_size, args.length_penalty)
    size = (out / "weights.safetensors").stat().st_size
    if size > MAX_BYTES:
        raise SystemExit(f"weights.safetensors is {size} bytes, more than the {MAX_BYTES} allowed")
    manifest = {
        "name": args.name,
        "sha256": {f: sha256(out / f) for f in FILES},
        "bytes": {f: (out / f).stat().st_size for f in FILES},
        "weights_dtype": "float16",
        **facts,
        "training": {
            "command": args.command,
            "hardware": args.hardware,
            "time": args.time,
            "epochs": facts["epoch"],
            **({"load_average": load_average(args.loadavg)} if args.loadavg else {}),
        },
        "notes": args.notes.read_text(encoding="utf-8").strip() if args.notes else "",
        "exported": datetime.date.today().isoformat(),
        "torch": torch.__version__,
        "python": platform.python_version(),
    }
    (out / MANIFEST).write_text(
        json.dumps(manifest, indent=1) + "\n", encoding="utf-8"
    )  # hashes first: scoring loads it
    if not args.no_bleu:
        manifest["test2016_bleu"] = score_test2016(out)
        (out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({k: manifest[k] for k in ("epoch", "step", "parameters", "bytes")}, indent=1))
    if "test2016_bleu" in manifest:
        print(manifest["test2016_bleu"]["full"])


def rescore(out: Path, heldout_dir: Path | None) -> None:
    """Score an exported model on test2016 and the held-out 2017/2018 sets; record each in its manifest."""
    from aiayn_helpers.data import HELDOUT_SPLITS

    manifest = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    manifest["test2016_bleu"] = score_test2016(out)
    manifest["scored_on"] = f"{platform.processor() or platform.machine()}, PyTorch {torch.__version__}, " + (
        f"{torch.get_num_threads()} thread(s)"
    )
    print(manifest["test2016_bleu"]["full"], flush=True)
    manifest["heldout_bleu"] = {}
    for split in HELDOUT_SPLITS:
        manifest["heldout_bleu"][split] = score_test2016(out, split, heldout_dir)
        print(split, manifest["heldout_bleu"][split]["full"], flush=True)
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
