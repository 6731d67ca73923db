"""The shipped model (aiayn_helpers/pretrained): loading, checks, translation, export, and the results page."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import aiayn_helpers as ah
from aiayn_helpers.pretrained import (
    FILES,
    MANIFEST,
    ROOT,
    load_pretrained_dir,
    read_manifest,
    read_safetensors,
    sha256,
)

REPO = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "multi30k"
RESULTS = REPO / "book" / "results.md"
BENCH = REPO / "book" / "metrics" / "bench_decoding.json"

# Multi30k-style sentences written for the book; none is in train, val or test2016 (see the last test)
NEW_SENTENCES = {
    "Zwei Hunde spielen im Schnee.": ("two", "dogs", "snow"),
    "Eine Frau liest ein Buch auf einer Bank.": ("woman", "book", "bench"),
    "Ein schwarzer Hund rennt über eine grüne Wiese.": ("black", "dog", "green"),
}


@pytest.fixture(scope="module")
def shipped():
    return ah.load_pretrained()


def test_load_pretrained_eval_cpu_float32(shipped):
    model, tokenizer = shipped
    assert isinstance(model, ah.Transformer) and not model.training
    assert {p.device.type for p in model.parameters()} == {"cpu"}
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    assert tokenizer.get_vocab_size() == model.tgt_vocab_size


def test_translates_new_sentences(shipped):
    model, tokenizer = shipped
    sentences = list(NEW_SENTENCES)
    out = ah.translate(model, tokenizer, sentences)
    assert len(out) == len(sentences) and all(isinstance(s, str) for s in out)
    for english, words in zip(out, NEW_SENTENCES.values(), strict=True):
        assert all(w in english.lower() for w in words), english
        assert "▁" not in english and "<" not in english  # detokenized, no special tokens
    assert ah.translate(model, tokenizer, sentences, beam_size=1)[0].lower().startswith("two dogs")
    assert ah.translate(model, tokenizer, []) == []


def test_translate_validates(shipped):
    model, tokenizer = shipped
    with pytest.raises(ValueError, match="list of strings"):
        ah.translate(model, tokenizer, "Ein Hund.")
    with pytest.raises(ValueError, match="list of strings"):
        ah.translate(model, tokenizer, ["Ein Hund.", 3])
    with pytest.raises(ValueError, match="beam_size"):
        ah.translate(model, tokenizer, ["Ein Hund."], beam_size=0)
    with pytest.raises(ValueError, match="length_penalty"):
        ah.translate(model, tokenizer, ["Ein Hund."], length_penalty=-1.0)


def test_manifest_hashes_size_and_details():
    manifest = read_manifest(SHIPPED)
    assert sorted(p.name for p in SHIPPED.iterdir()) == sorted([*FILES, MANIFEST])
    for file in FILES:
        assert manifest["sha256"][file] == sha256(SHIPPED / file)
    assert (SHIPPED / "weights.safetensors").stat().st_size <= 16 * 1024 * 1024
    assert not list(SHIPPED.glob("*.pt")), "the shipped weights are safetensors, never a pickle"
    weights = read_safetensors(SHIPPED / "weights.safetensors")
    assert {v.dtype for v in weights.values() if v.is_floating_point()} == {torch.float16}
    training = manifest["training"]
    assert all(training[k] for k in ("command", "hardware", "time", "epochs"))
    assert "aiayn_helpers.train" in training["command"]
    bleu = manifest["test2016_bleu"]
    config = json.loads((SHIPPED / "config.json").read_text())
    assert bleu["sentences"] == 1000  # scored with the decoding settings that ah.translate uses by default
    assert (bleu["beam_size"], bleu["length_penalty"]) == (config["beam_size"], config["length_penalty"])
    assert bleu["full"].startswith(f"BLEU = {bleu['score']:.2f} ")


def test_unknown_name_and_bad_files(tmp_path):
    with pytest.raises(ValueError, match="unknown pretrained model"):
        ah.load_pretrained("wmt14")
    with pytest.raises(ValueError, match="unknown pretrained model"):
        ah.load_pretrained("../pretrained/multi30k")
    for file in FILES:
        bad = tmp_path / file
        shutil.copytree(SHIPPED, bad)
        data = bytearray((bad / file).read_bytes())
        data[len(data) // 2] ^= 0xFF  # one flipped byte
        (bad / file).write_bytes(bytes(data))
        with pytest.raises(ValueError, match="corrupt"):
            load_pretrained_dir(bad)
    truncated = tmp_path / "truncated"
    shutil.copytree(SHIPPED, truncated)
    (truncated / "weights.safetensors").write_bytes((SHIPPED / "weights.safetensors").read_bytes()[:1000])
    with pytest.raises(ValueError, match="corrupt"):
        load_pretrained_dir(truncated)
    (truncated / MANIFEST).unlink()
    with pytest.raises(ValueError, match="manifest"):
        load_pretrained_dir(truncated)
    with pytest.raises(ValueError, match="dtype"):
        load_pretrained_dir(SHIPPED, dtype=torch.float16)


def test_float64_load_matches_float32(shipped):
    model, tokenizer = shipped
    model64, _ = ah.load_pretrained(dtype=torch.float64)
    for (name, a), b in zip(model.state_dict().items(), model64.state_dict().values(), strict=True):
        assert torch.equal(a.double(), b), name  # float16 values are exact in both


def test_pyproject_ships_the_model_as_package_data():
    text = (REPO / "pyproject.toml").read_text()
    table = re.search(r"^\[tool\.setuptools\.package-data\]\n(.*?)(?:^\[|\Z)", text, re.MULTILINE | re.DOTALL)
    assert table, "pyproject.toml has no [tool.setuptools.package-data] table"
    line = re.search(r"^aiayn_helpers\s*=\s*\[(.*?)\]", table[1], re.MULTILINE)
    patterns = re.findall(r'"([^"]+)"', line[1])
    shipped = {str(p.relative_to(REPO / "aiayn_helpers")) for p in SHIPPED.iterdir()}
    assert all(any(Path(f).match(p) for p in patterns) for f in shipped), (patterns, shipped)


def test_export_tool_round_trip(tmp_path):
    """tools/ship/export_pretrained.py on a tiny run: float16 weights, hashes, and load_pretrained_dir reads it."""
    from aiayn_helpers.checkpoint import TrainState, save_checkpoint, save_epoch_weights
    from aiayn_helpers.config import PRESETS, build_model
    from aiayn_helpers.data import train_bpe
    from aiayn_helpers.training import make_noam_scheduler, make_optimizer

    cfg = PRESETS["quick"]
    tok = train_bpe(["ein Hund läuft", "a dog runs", "zwei Hunde", "two dogs"] * 20, 60)
    torch.manual_seed(0)
    model = build_model(cfg, tok.get_vocab_size())
    opt = make_optimizer(model)
    state = TrainState(step=3, epoch=1)
    run = tmp_path / "run"
    run.mkdir()
    save_checkpoint(run / "last.pt", model, opt, make_noam_scheduler(opt, cfg.d_model, cfg.warmup), state, tok, cfg)
    save_epoch_weights(run, model, state)
    first = {k: v.clone() for k, v in model.state_dict().items()}
    with torch.no_grad():  # a second epoch's weights, for --average
        for p in model.parameters():
            p.add_(1.0)
    save_epoch_weights(run, model, TrainState(step=6, epoch=2))
    loadavg = tmp_path / "loadavg.log"
    loadavg.write_text("10:00:00 2.05 1.90 1.20 3/85 100\n10:01:00 2.31 2.00 1.30 3/85 101\n")
    out = tmp_path / "exported"
    cmd = [
        sys.executable,
        str(REPO / "tools" / "ship" / "export_pretrained.py"),
        str(run / "epoch001.pt"),
        "--out",
        str(out),
    ]
    cmd += ["--command", "python -m aiayn_helpers.train --preset quick", "--hardware", "test", "--time", "1 s"]
    cmd += ["--beam-size", "3", "--length-penalty", "1.2", "--loadavg", str(loadavg)]
    subprocess.run([*cmd, "--no-bleu"], check=True, capture_output=True, cwd=REPO)
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["epoch"] == 1 and manifest["training"]["epochs"] == 1
    assert manifest["training"]["load_average"]["one_minute_max"] == 2.31
    assert manifest["checkpoints"] == ["epoch001.pt"]
    loaded, tokenizer = load_pretrained_dir(out)
    assert tokenizer.to_str() == tok.to_str()
    assert loaded.decoding_defaults == {"beam_size": 3, "length_penalty": 1.2}
    for (name, a), b in zip(first.items(), loaded.state_dict().values(), strict=True):
        torch.testing.assert_close(b, a.half().float(), rtol=0, atol=0, msg=name)
    stored = read_safetensors(out / "weights.safetensors")  # tied weights: one tensor, three names
    assert stored["generator.weight"] is stored["src_embed.weight"] is stored["tgt_embed.weight"]
    # --average 2: the mean of the two epoch files, the position of the last
    subprocess.run([*cmd, "--no-bleu", "--average", "2"], check=True, capture_output=True, cwd=REPO)
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["checkpoints"] == ["epoch001.pt", "epoch002.pt"] and manifest["epoch"] == 2
    averaged, _ = load_pretrained_dir(out)
    for (name, a), b in zip(first.items(), averaged.state_dict().values(), strict=True):
        torch.testing.assert_close(b, (a + 0.5).half().float(), rtol=1e-3, atol=1e-3, msg=name)


def bold_figures(text: str) -> list[str]:
    return re.findall(r"\*\*([0-9][0-9,.]*)[^*]*\*\*", text)


def test_results_page_bold_figures_are_backed():
    """Every bold figure on book/results.md comes from a committed metrics file: the shipped
    model's manifest or the decoding benchmark's JSON (the numbers tools/bench/bench.py printed)."""
    page = RESULTS.read_text(encoding="utf-8")
    manifest = read_manifest(SHIPPED)
    bench = json.loads(BENCH.read_text())
    backed = {f"{manifest['test2016_bleu']['score']:.2f}"}
    backed.add(f"{manifest['validation_choice']['best']['bleu']:.2f}")  # the choice on val
    backed |= {f"{bench['greedy_100']['speedup']:.1f}", f"{bench['test2016_beam4']['seconds']:.1f}"}
    figures = bold_figures(page)
    assert f"{manifest['test2016_bleu']['score']:.2f}" in figures
    assert set(figures) <= backed, sorted(set(figures) - backed)


def test_new_sentences_are_not_in_the_corpus():
    pytest.importorskip("tokenizers")
    from aiayn_helpers.data import load_multi30k

    try:
        corpus = {de.strip() for split in ("train", "val", "test2016") for de, _ in load_multi30k(split)}
    except Exception as err:  # no corpus here (no download in CI without a cache)
        pytest.skip(f"Multi30k not available: {err}")
    assert not corpus & set(NEW_SENTENCES)
