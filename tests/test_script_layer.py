"""The layer above the model: one Config, checkpoints old and new, the decoding entry points, the code's shape."""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path

import pytest
import torch
from test_cli import local_multi30k

import aiayn_helpers as ah
from aiayn_helpers import checkpoint, config, train

PACKAGE = Path(__file__).resolve().parents[1] / "aiayn_helpers"


# -- the configuration ----------------------------------------------------------------------------
def test_presets_are_replacements_of_the_base():
    assert config.Config() == config.BASE
    for name, cfg in config.PRESETS.items():
        assert cfg.preset == name and cfg != config.BASE
    changed = {
        f.name
        for f in dataclasses.fields(config.Config)
        if getattr(config.PRESETS["multi30k-base"], f.name) != getattr(config.BASE, f.name)
    }
    assert changed == {"preset", "num_heads", "d_ff", "dropout"}


def test_flags_set_config_fields_and_the_old_spellings_still_work():
    args = train.parse_args(["--out", "x", "--layers", "2", "--heads", "4", "--d-model", "64", "--eval-bleu"])
    over = train.config_flags(args)
    assert over == {"num_layers": 2, "num_heads": 4, "d_model": 64, "eval_bleu": True}
    cfg = config.resolve_config(args.preset, over)
    assert (cfg.preset, cfg.num_layers, cfg.num_heads, cfg.vocab_size) == ("quick", 2, 4, 400)
    args = train.parse_args(
        ["--out", "x", "--num-layers", "3", "--no-keep-epochs", "--data-dir", "d", "--save-every", "5"]
    )
    assert train.config_flags(args) == {"num_layers": 3, "keep_epochs": False, "data_dir": "d", "save_every": 5}


def test_resuming_restores_every_setting_but_the_limits_of_one_invocation():
    stored = dataclasses.replace(
        config.PRESETS["multi30k-cpu"],
        eval_bleu=True,
        keep_epochs=True,
        save_every=7,
        max_steps=9,
        time_budget_min=600.0,
    )
    cfg = config.resolve_config("quick", {}, stored)
    assert (cfg.eval_bleu, cfg.keep_epochs, cfg.save_every) == (True, True, 7)
    assert (cfg.max_steps, cfg.time_budget_min) == (None, 50.0)  # the preset's budget, not the stored one
    with pytest.raises(ValueError, match=r"different model \(num_layers: checkpoint 3, requested 2\)"):
        config.resolve_config("quick", {"num_layers": 2}, stored)
    with pytest.raises(ValueError, match="unknown config fields"):
        config.config_from_dict({"d_model": 8, "colour": "blue"})


# -- checkpoints ----------------------------------------------------------------------------------
def test_format_1_checkpoints_are_read_and_resumed(tmp_path):
    """Runs trained before the Config rename stored ``layers``, ``heads`` and ``max_len`` (format 1)."""
    corpus = str(local_multi30k())
    common = ["--out", str(tmp_path), "--data-dir", corpus, "--threads", "1", "--no-progress"]
    train.main(["--preset", "quick", "--max-steps", "3", *common])
    state = torch.load(tmp_path / "last.pt", weights_only=True)
    stored = json.loads(state["config"])
    for old, new in config.FORMAT1_NAMES.items():
        stored[old] = stored.pop(new)
    for new_field in ("data_dir", "save_every", "keep_epochs", "eval_bleu"):
        del stored[new_field]
    state.update(format=1, config=json.dumps(stored))
    torch.save(state, tmp_path / "last.pt")

    model, _, cfg = checkpoint.load_model(tmp_path / "last.pt")
    assert (cfg.num_layers, cfg.num_heads, cfg.truncate_len, cfg.keep_epochs) == (1, 2, 128, False)
    assert all(torch.equal(v, state["model"][k]) for k, v in model.state_dict().items())
    summary = train.main(["--resume", "--max-steps", "5", *common])
    assert summary["steps"] == 5 and summary["config"]["num_layers"] == 1


# -- the decoding entry points ----------------------------------------------------------------------
def test_encode_returns_what_decode_needs_and_the_step_matches_decode():
    torch.manual_seed(0)
    model = ah.Transformer(20, 20, d_model=16, num_heads=2, num_layers=2, d_ff=32, dropout=0.0).double().eval()
    src = torch.tensor([[4, 5, 6, 2], [7, 2, 0, 0]])
    tgt = torch.tensor([[1, 8, 9], [1, 10, 0]])
    memory, src_mask = model.encode(src)
    assert memory.shape == (2, 4, 16) and torch.equal(src_mask, ah.padding_mask(src, 0))
    logits = model.decode(tgt, memory, src_mask)
    torch.testing.assert_close(logits, model(src, tgt), rtol=0, atol=0)
    torch.testing.assert_close(model.next_token_logits(tgt, memory, src_mask), logits[:, -1], rtol=0, atol=0)


def test_decoding_checks_token_ids_once_not_at_every_step(monkeypatch):
    torch.manual_seed(0)
    model = ah.Transformer(12, 12, d_model=16, num_heads=2, num_layers=1, d_ff=32)
    src = torch.randint(4, 12, (3, 5))
    calls = []
    for module in (ah.model, ah.decoding):
        original = module.check_token_ids
        monkeypatch.setattr(module, "check_token_ids", lambda *a, _f=original: calls.append(a[0]) or _f(*a))
    for decode in (ah.greedy_decode, ah.beam_search):
        calls.clear()
        decode(model, src, max_new_tokens=20)
        assert calls == ["src", "src"]  # on entry and in encode, never for the 20 steps


def test_set_fused_switches_every_attention_module():
    model = ah.Transformer(12, 12, d_model=16, num_heads=2, num_layers=2, d_ff=32)
    model.set_fused(True)
    assert all(m.fused for m in model.modules() if isinstance(m, ah.MultiHeadAttention))


# -- the shape of the code --------------------------------------------------------------------------
def _functions(path: Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node.name, node.end_lineno - node.lineno + 1


def test_no_function_is_longer_than_80_lines_and_train_main_fits_a_screen():
    long = [f"{p.name}:{name} ({n} lines)" for p in PACKAGE.glob("*.py") for name, n in _functions(p) if n > 80]
    assert not long
    assert dict(_functions(PACKAGE / "train.py"))["main"] <= 60


def test_a_cli_never_imports_the_other():
    tree = ast.parse((PACKAGE / "evaluate.py").read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert "train" not in imported and "aiayn_helpers.train" not in imported


def test_the_script_has_no_training_loop_of_its_own():
    """One training loop in the package: train.py runs training.train_epoch and never calls backward() or
    an optimizer step itself, so a fix to the loop reaches the script and chapter 7 alike."""
    source = (PACKAGE / "train.py").read_text()
    assert "train_epoch(" in source
    for call in (".backward(", ".step()", "train_step(", "clip_grad_norm_("):
        assert call not in source, call
