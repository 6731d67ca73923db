"""Turn a training checkpoint into the shipped model ``aiayn_helpers/pretrained/<name>/``.

    python tools/export_pretrained.py runs/ship/epoch016.pt --command "python -m ..." \
        --hardware "2-core AMD EPYC, shared" --time "9 h 10 min" --notes runs/ship/FINAL

``CHECKPOINT`` is a run's ``last.pt`` or one of its ``epochNNN.pt`` files (``--keep-epochs``);
the tokenizer and the config always come from the run's ``last.pt`` beside it. The
weights are stored in float16; then the exported model is loaded back exactly as
``aiayn_helpers.load_pretrained`` loads it (float32) and translates test2016 with
``aiayn_helpers.translate`` (beam 4, alpha 0.6), as chapter 8 does, and the manifest
records the score, the training details and the SHA-256 of every file.
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

from aiayn_helpers.checkpoint import load_checkpoint
from aiayn_helpers.pretrained import FILES, MANIFEST, ROOT, load_pretrained_dir, sha256

MAX_BYTES = 16 * 1024 * 1024


def export_weights(checkpoint: Path, out: Path) -> dict:
    """Write ``weights.pt``, ``tokenizer.json`` and ``config.json`` into ``out``; return facts for the manifest."""
    run = load_checkpoint(checkpoint.parent / "last.pt" if checkpoint.name != "last.pt" else checkpoint)
    weights_file = torch.load(checkpoint, map_location="cpu", weights_only=True)
    if not isinstance(weights_file, dict) or "model" not in weights_file:
        raise ValueError(f"{checkpoint} holds no 'model' state dict")
    # float16 halves the file; shared tensors (embeddings and generator) stay shared
    half = {}
    seen: dict[int, torch.Tensor] = {}
    for k, v in weights_file["model"].items():
        key = v.data_ptr()
        if key not in seen:
            seen[key] = v.to(torch.float16) if v.is_floating_point() else v
        half[k] = seen[key]
    out.mkdir(parents=True, exist_ok=True)
    torch.save(half, out / "weights.pt")
    (out / "tokenizer.json").write_text(run["tokenizer"], encoding="utf-8")
    (out / "config.json").write_text(json.dumps(dataclasses.asdict(run["config"]), indent=1) + "\n", encoding="utf-8")
    return {
        "checkpoint": checkpoint.name,
        "epoch": int(weights_file.get("epoch", run["epoch"])),
        "step": int(weights_file.get("step", run["step"])),
        "parameters": sum(v.numel() for v in seen.values() if v.is_floating_point()),
    }


def score_test2016(out: Path) -> dict:
    """The exported model's test2016 sacreBLEU, beam 4, alpha 0.6, float32 (as chapter 8 recomputes it)."""
    from aiayn_helpers.data import load_multi30k
    from aiayn_helpers.translate import translate_and_score

    model, tokenizer = load_pretrained_dir(out)
    pairs = load_multi30k("test2016")
    start = time.perf_counter()
    score, signature, _ = translate_and_score(model, tokenizer, pairs, beam_size=4, length_penalty=0.6)
    return {
        "score": round(score.score, 2),
        "full": str(score),
        "signature": signature,
        "sentences": len(pairs),
        "beam_size": 4,
        "length_penalty": 0.6,
        "dtype": "float32",
        "seconds": round(time.perf_counter() - start, 1),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", type=Path, help="a run's last.pt or epochNNN.pt")
    parser.add_argument("--name", default="multi30k", help="the folder under aiayn_helpers/pretrained")
    parser.add_argument("--out", type=Path, help="write here instead of aiayn_helpers/pretrained/NAME")
    parser.add_argument("--command", required=True, help="the training command")
    parser.add_argument("--hardware", required=True, help="where it trained")
    parser.add_argument("--time", required=True, help="how long it trained")
    parser.add_argument(
        "--notes", type=Path, help="a text file to keep verbatim in the manifest (e.g. runs/ship/FINAL)"
    )
    parser.add_argument("--no-bleu", action="store_true", help="skip the test2016 score (tests only)")
    args = parser.parse_args(argv)

    out = args.out or ROOT / args.name
    facts = export_weights(args.checkpoint, out)
    size = (out / "weights.pt").stat().st_size
    if size > MAX_BYTES:
        raise SystemExit(f"weights.pt is {size} bytes, more than the {MAX_BYTES} allowed")
    manifest = {
        "name": args.name,
        "sha256": {f: sha256(out / f) for f in FILES},
        "bytes": {f: (out / f).stat().st_size for f in FILES},
        "weights_dtype": "float16",
        **facts,
        "training": {"command": args.command, "hardware": args.hardware, "time": args.time, "epochs": facts["epoch"]},
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


if __name__ == "__main__":
    main()
