"""``python -m aiayn_helpers.train``: checkpoints, exact resume, clear errors, and DDP on 2 CPU processes.

Everything uses the ``quick`` preset (a tiny model on 200 pairs of the local Multi30k copy).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from test_data import local_multi30k  # noqa: F401  (the corpus the tests read; test_evaluate imports it from here)

from aiayn_helpers import checkpoint, train

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def corpus() -> str:
    return str(local_multi30k())


def run(out: Path, corpus: str, *extra: str) -> dict:
    return train.main(
        ["--preset", "quick", "--out", str(out), "--data-dir", corpus, "--threads", "1", "--no-progress", *extra]
    )


@pytest.fixture(scope="module")
def full_run(tmp_path_factory, corpus):
    """Two uninterrupted epochs (26 updates), with a BLEU evaluation at the end."""
    out = tmp_path_factory.mktemp("full")
    summary = run(out, corpus, "--param-digest", "--eval-bleu")
    return out, summary


def test_run_writes_checkpoint_metrics_and_translations(full_run):
    out, summary = full_run
    assert summary["steps"] == 26 and summary["epochs_done"] == 2
    assert summary["tokens_per_s"] > 0
    assert summary["history"][-1]["val_loss"] < summary["history"][0]["train_loss"]
    assert summary["bleu_signature"].startswith("nrefs:1|case:mixed|eff:no|tok:13a")
    assert len((out / "test2016.hyp.en").read_text(encoding="utf-8").splitlines()) == 40
    assert json.loads((out / "metrics.json").read_text())["steps"] == 26
    # a checkpoint of tensors and plain types: torch.load(weights_only=True) reads it
    state = torch.load(out / "last.pt", weights_only=True)
    assert {"model", "optimizer", "scheduler", "step", "epoch", "rng_torch", "tokenizer", "config"} <= set(state)
    assert state["step"] == 26 and state["epoch"] == 2
    assert isinstance(state["tokenizer"], str) and json.loads(state["config"])["d_model"] == 32
    model, tok, cfg = checkpoint.load_model(out / "last.pt")
    assert cfg.preset == "quick" and tok.token_to_id("<eos>") == 2 and not model.training


def test_resume_gives_the_same_parameters_as_an_uninterrupted_run(full_run, tmp_path, corpus):
    out, _ = full_run
    first = run(tmp_path, corpus, "--max-steps", "17")  # stops in the middle of epoch 2
    assert first["steps"] == 17
    state = torch.load(tmp_path / "last.pt", weights_only=True)
    assert (state["step"], state["epoch"], state["batch_in_epoch"]) == (17, 1, 4)
    resumed = run(tmp_path, corpus, "--resume", "--param-digest")
    assert resumed["steps"] == 26 and resumed["epochs_done"] == 2
    # bitwise-identical parameters: model, Adam moments, schedule, RNG and batch order all restored
    assert (tmp_path / "param_digest.rank0.txt").read_text() == (out / "param_digest.rank0.txt").read_text()
    # the history continues where it stopped
    steps = [h["step"] for h in resumed["history"]]
    assert steps == [13, 17, 26]


def test_corrupt_or_mismatched_checkpoints_fail_clearly(full_run, tmp_path, corpus):
    out, _ = full_run
    good = (out / "last.pt").read_bytes()
    ckpt = tmp_path / "last.pt"

    ckpt.write_bytes(good[: len(good) // 2])  # truncated
    with pytest.raises(ValueError, match="truncated or not a checkpoint"):
        run(tmp_path, corpus, "--resume")

    torch.save({"weights": torch.zeros(3)}, ckpt)  # some other file
    with pytest.raises(ValueError, match="not an aiayn_helpers.train checkpoint"):
        run(tmp_path, corpus, "--resume")

    ckpt.write_bytes(good)
    with pytest.raises(ValueError, match=r"different model \(d_model: checkpoint 32, requested 64\)"):
        run(tmp_path, corpus, "--resume", "--d-model", "64")

    state = torch.load(out / "last.pt", weights_only=True)
    cfg = json.loads(state["config"])
    cfg["d_ff"] = 48  # a config that does not match the stored weights
    state["config"] = json.dumps(cfg)
    torch.save(state, ckpt)
    with pytest.raises(ValueError, match="does not fit this model"):
        run(tmp_path, corpus, "--resume")
    with pytest.raises(ValueError, match="does not exist"):
        run(tmp_path, corpus, "--resume", str(tmp_path / "missing.pt"))


def _env(corpus: str) -> dict:
    env = dict(os.environ, AIAYN_DATA_DIR=corpus, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    return env


def run_module(module: str, corpus: str, *args: str) -> subprocess.CompletedProcess:
    """``python -m module args`` in a fresh process, as a reader would type it."""
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        env=_env(corpus),
        cwd=ROOT,
        timeout=120,
    )


def test_command_line_reports_errors_without_a_traceback(tmp_path, corpus):
    proc = run_module("aiayn_helpers.train", corpus, "--out", str(tmp_path), "--resume")
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: checkpoint") and "Traceback" not in proc.stderr


def test_ddp_on_two_cpu_processes_keeps_ranks_identical(tmp_path, corpus):
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node=2",
        "-m",
        "aiayn_helpers.train",
        "--preset",
        "quick",
        "--out",
        str(tmp_path),
        "--threads",
        "1",
        "--no-progress",
        "--param-digest",
        "--epochs",
        "1",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=_env(corpus), cwd=ROOT, timeout=240)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    d0 = (tmp_path / "param_digest.rank0.txt").read_text()
    d1 = (tmp_path / "param_digest.rank1.txt").read_text()
    assert d0 == d1  # gradients were all-reduced: both replicas took the same updates
    assert proc.stdout.count("preset quick:") == 1  # only rank 0 prints
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["world_size"] == 2 and metrics["steps"] == 13 // 2  # each rank a shard of the 13 batches
    model, _, _ = checkpoint.load_model(tmp_path / "last.pt")
    assert checkpoint.param_digest(model) + "\n" == d0  # the checkpoint holds the synchronised weights
