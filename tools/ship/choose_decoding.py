"""Choose the shipped model's weights and decoding settings on the validation split.

    python tools/ship/choose_decoding.py runs/ship --average 0 5 --beam-size 4 6 \
        --length-penalty 0.6 1.0 1.4 2.0 --out runs/ship/choice.json

For each candidate (the run's last weights, or the mean of its last N epoch files, the
paper's section 6.1), each beam size and each length penalty, translate the whole
validation split with ``aiayn_helpers.translate`` and score it with sacreBLEU. The
highest BLEU wins; ties go to fewer averaged files, then the smaller beam. test2016 is
not touched: it is scored once, after this choice, by ``tools/ship/export_pretrained.py``.
Runs on a GPU when one is there.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from aiayn_helpers.checkpoint import average_checkpoints, epoch_checkpoints, load_model
from aiayn_helpers.data import load_multi30k
from aiayn_helpers.translation import translate_and_score


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("run", type=Path, help="a folder written by aiayn_helpers.train --keep-epochs")
    p.add_argument("--average", type=int, nargs="+", default=[0, 5], help="0: last.pt alone")
    p.add_argument("--beam-size", type=int, nargs="+", default=[4])
    p.add_argument("--length-penalty", type=float, nargs="+", default=[0.6, 1.0, 1.4])
    p.add_argument("--out", type=Path, required=True, help="where to write the table (JSON)")
    p.add_argument("--limit", type=int, default=None, help="only the first N sentences (tests)")
    args = p.parse_args(argv)

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model, tokenizer, _ = load_model(args.run / "last.pt")
    last = {k: v.clone() for k, v in model.state_dict().items()}
    pairs = load_multi30k("val", limit=args.limit)
    rows = []
    for n in args.average:
        files = epoch_checkpoints(args.run)[-n:] if n else []
        model.load_state_dict(average_checkpoints(files) if n else last)
        model.to(device).eval()
        for beam in args.beam_size:
            for alpha in args.length_penalty:
                t0 = time.perf_counter()
                score, _, _ = translate_and_score(model, tokenizer, pairs, beam, alpha)
                rows.append(
                    {
                        "average": n,
                        "checkpoints": [f.name for f in files] or ["last.pt"],
                        "beam_size": beam,
                        "length_penalty": alpha,
                        "bleu": round(score.score, 2),
                        "brevity_penalty": round(score.bp, 3),
                        "seconds": round(time.perf_counter() - t0, 1),
                    }
                )
                print(json.dumps(rows[-1]), flush=True)
        model.to("cpu")
    best = max(rows, key=lambda r: (r["bleu"], -r["average"], -r["beam_size"]))
    table = {"split": "val", "sentences": len(pairs), "device": str(device), "rows": rows, "best": best}
    args.out.write_text(json.dumps(table, indent=1) + "\n")
    print("best:", json.dumps(best))
    return table


if __name__ == "__main__":
    main()
