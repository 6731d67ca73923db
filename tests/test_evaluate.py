"""``python -m aiayn_helpers.evaluate``: checkpoint averaging and BLEU for several length penalties."""

from __future__ import annotations

import json

import pytest
import torch
from test_cli import local_multi30k, run_module

from aiayn_helpers import checkpoint, evaluate, train


@pytest.fixture(scope="module")
def kept_run(tmp_path_factory):
    """The ``quick`` preset for 3 epochs, keeping each epoch's weights."""
    corpus = str(local_multi30k())
    out = tmp_path_factory.mktemp("kept")
    args = ["--preset", "quick", "--out", str(out), "--data-dir", corpus, "--threads", "1", "--no-progress"]
    train.main([*args, "--epochs", "3", "--keep-epochs"])
    return out, corpus


def test_keep_epochs_writes_one_loadable_file_per_epoch(kept_run):
    out, _ = kept_run
    files = checkpoint.epoch_checkpoints(out)
    assert [p.name for p in files] == ["epoch001.pt", "epoch002.pt", "epoch003.pt"]
    last = torch.load(files[-1], weights_only=True)
    assert last["epoch"] == 3 and last["step"] == 39
    # the last epoch file holds exactly the weights of last.pt (both written after epoch 3)
    final = torch.load(out / "last.pt", weights_only=True)["model"]
    assert all(torch.equal(final[k], v) for k, v in last["model"].items())


def test_average_is_the_elementwise_mean(kept_run):
    out, _ = kept_run
    files = checkpoint.epoch_checkpoints(out)[-2:]
    avg = checkpoint.average_checkpoints(files)
    a, b = (torch.load(f, weights_only=True)["model"] for f in files)
    assert set(avg) == set(a)
    for k in a:
        expected = (a[k].double() + b[k].double()) / 2
        torch.testing.assert_close(avg[k].double(), expected, rtol=0, atol=1e-7)
        assert avg[k].dtype == a[k].dtype
    # two different checkpoints: the mean differs from both
    assert any(not torch.equal(avg[k], a[k]) for k in a) and any(not torch.equal(avg[k], b[k]) for k in b)


def test_average_rejects_empty_and_mismatched_inputs(kept_run, tmp_path):
    out, _ = kept_run
    with pytest.raises(ValueError, match="at least one checkpoint"):
        checkpoint.average_checkpoints([])
    good = checkpoint.epoch_checkpoints(out)[0]
    state = torch.load(good, weights_only=True)
    name = next(iter(state["model"]))
    state["model"][name] = torch.zeros(3)
    bad = tmp_path / "epoch009.pt"
    torch.save(state, bad)
    with pytest.raises(ValueError, match="does not match the first checkpoint"):
        checkpoint.average_checkpoints([good, bad])
    torch.save({"weights": torch.zeros(2)}, bad)
    with pytest.raises(ValueError, match="holds no 'model'"):
        checkpoint.average_checkpoints([good, bad])


def test_evaluate_scores_each_length_penalty_and_writes_json(kept_run):
    out, corpus = kept_run
    argv = [str(out), "--average", "2", "--split", "val", "--limit", "16", "--data-dir", corpus, "--no-progress"]
    summary = evaluate.main([*argv, "--length-penalty", "0.0", "1.0", "--threads", "1"])
    assert [r["length_penalty"] for r in summary["results"]] == [0.0, 1.0]
    assert summary["sentences"] == 16 and len(summary["checkpoints"]) == 2
    assert summary["signature"].startswith("nrefs:1|case:mixed|eff:no|tok:13a")
    assert all(0.0 <= r["bleu"] <= 100.0 and 0.0 < r["brevity_penalty"] <= 1.0 for r in summary["results"])
    assert json.loads((out / "eval_val.json").read_text()) == summary
    assert len((out / "val.hyp.en").read_text(encoding="utf-8").splitlines()) == 16


def test_too_few_epoch_files_is_a_clear_error(kept_run):
    out, corpus = kept_run
    proc = run_module("aiayn_helpers.evaluate", corpus, str(out), "--average", "5", "--limit", "4")
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: --average 5 needs 5 epochNNN.pt files") and "Traceback" not in proc.stderr
