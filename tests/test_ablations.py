"""Chapter 9's Table 3 comes from the committed runs: book/ablations/*.json, written by tools/bench/ablations.py.

Every run the tool lists has its JSON (and no JSON is stale), each names the command that
produced it, the hardware and the time it took, and the table the chapter prints shows
the JSON's numbers.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from bench import ablations  # noqa: E402

CHAPTER = ROOT / "notebooks" / "09_what_the_paper_measured.ipynb"
RESULTS = {p.stem: json.loads(p.read_text()) for p in sorted(ablations.OUT.glob("*.json"))}


def test_every_listed_run_has_its_results_and_nothing_else():
    assert sorted(RESULTS) == sorted(name for name, *_ in ablations.RUNS_TABLE)


@pytest.mark.parametrize("name, row, change, seed", ablations.RUNS_TABLE, ids=lambda v: str(v))
def test_each_result_names_its_command_hardware_and_time(name, row, change, seed):
    r = RESULTS[name]
    assert r["command"] == shlex.join(ablations.command(name, change, seed))
    assert (r["row"], r["change"], r["seed"]) == (row, change, seed)
    assert r["steps"] == ablations.STEPS
    assert r["hardware"] and r["torch"] and r["date"] and r["wall_seconds"] > 0
    assert r["bleu_signature"].startswith("nrefs:1|case:mixed|eff:no|tok:13a")
    assert 1 < r["val_ppl"] < 6000 and 0 <= r["bleu"] <= 100
    # the change is the run's config: e.g. {"heads": 1} means num_heads 1
    names = {"heads": "num_heads", "layers": "num_layers", "d-k": "d_k", "d-model": "d_model", "d-ff": "d_ff",
             "label-smoothing": "label_smoothing"}  # fmt: skip
    for flag, value in change.items():
        assert r["config"][names.get(flag, flag)] == value


def _output_text(tag: str) -> str:
    nb = nbformat.read(CHAPTER, as_version=4)
    cells = [c for c in nb.cells if c.cell_type == "code" and tag in c.metadata.get("tags", [])]
    assert len(cells) == 1, f"chapter 9 must have one code cell tagged {tag!r}"
    return "".join(o.get("text", "") for o in cells[0].outputs if o.output_type == "stream")


def _groups() -> dict[tuple, list[dict]]:
    """The runs of each variant (the same row and change), several when it ran with several seeds."""
    groups: dict[tuple, list[dict]] = {}
    for r in RESULTS.values():
        groups.setdefault((r["row"], json.dumps(r["change"], sort_keys=True)), []).append(r)
    return groups


def test_the_chapters_table_shows_the_committed_numbers():
    table, noise = _output_text("table3-ours"), _output_text("table3-noise")
    for (row, _), rs in _groups().items():
        for r in rs if len(rs) > 1 else []:  # every seed of a variant that ran with several, in the noise cell
            assert f"{r['name']:9s} seed {r['seed']}: dev perplexity {r['val_ppl']:.2f}, BLEU {r['bleu']:.1f}" in noise
        ppl = sum(r["val_ppl"] for r in rs) / len(rs)  # the table shows the mean over the seeds
        bleu = sum(r["bleu"] for r in rs) / len(rs)
        if row == "base":
            lines = [ln for ln in table.splitlines() if f"base ({len(rs)} seeds)" in ln[:30]]
        else:
            lines = [ln for ln in table.splitlines() if re.search(rf"\b{re.escape(row)}\b", ln[:4])]
        line = next((ln for ln in lines if f"{ppl:6.2f}" in ln and f"{rs[0]['parameters']:,d}" in ln), None)
        assert line is not None, f"{rs[0]['name']}: no row of the chapter's table shows perplexity {ppl:.2f}"
        assert f"{bleu:5.1f}" in line


def _paper_names(config: dict) -> dict:
    """A record's config in the names of the paper's Table 3 (d_v is d_model / h)."""
    d_v = config["d_model"] // config["num_heads"]
    return {"N": config["num_layers"], "d_model": config["d_model"], "d_ff": config["d_ff"],
            "h": config["num_heads"], "d_k": config["d_k"] or d_v, "d_v": d_v,
            "P_drop": config["dropout"], "eps_ls": config["label_smoothing"],
            "positions": config["positional"]}  # fmt: skip


def test_the_chapters_settings_table_shows_each_records_change():
    """Chapter 9 lists, beside the paper's rows, every setting a variant changes; the list
    must be the difference between the variant's record and the base's, setting by setting."""
    text = _output_text("table3-settings")
    base = _paper_names(RESULTS["base-s0"]["config"])
    for name, r in RESULTS.items():
        if r["row"] == "base" or r["seed"] != 0:
            continue
        line = next((ln for ln in text.splitlines() if f" {name} " in ln and "ours:" in ln), None)
        assert line is not None, f"{name}: no 'ours:' line in the chapter's settings table"
        variant = _paper_names(r["config"])
        changed = [k for k in base if variant[k] != base[k]]
        assert changed, f"{name}: the record changes nothing"
        listed = re.findall(r"(\w+) ([\w.]+)->([\w.]+)", line.split("ours:", 1)[1])
        assert [(k, str(base[k]), str(variant[k])) for k in changed] == listed, name
