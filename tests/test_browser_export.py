"""tools/ship/export_browser.py: the ONNX files of the site's in-browser translator.

The files are written once per session (about 5 s). onnxruntime runs them in Python
with a beam search over the decoder step (tools/export_browser.OnnxTranslator, the
loop the page's beam.js repeats in JavaScript): the same tokens as ah.translate on the
first 200 sentences of test2016, greedy and with the shipped beam, and every attention
map equal to ah.capture_attention's within 1e-4 (float32).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import aiayn_helpers as ah
from aiayn_helpers.data import BOS_ID, MULTI30K_SHA256, cache_dir, load_multi30k
from aiayn_helpers.translation import encode_sources

pytest.importorskip("onnxruntime")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from ship import export_browser  # noqa: E402

N = 200


def corpus_sources(limit: int | None = None) -> list[str]:
    """test2016's German side from $AIAYN_DATA_DIR or the cache; skips (never downloads)
    where neither holds the corpus."""
    folder = Path(os.environ.get("AIAYN_DATA_DIR") or cache_dir())
    if not all((folder / name).is_file() for name in MULTI30K_SHA256 if "2016" in name):
        pytest.skip(f"Multi30k's test2016 is not in {folder} (make data): skipped")
    return [de for de, _ in load_multi30k("test2016", folder, limit=limit)]


@pytest.fixture(scope="session")
def exported(tmp_path_factory):
    folder = tmp_path_factory.mktemp("translator")
    export_browser.export(folder)
    return folder


@pytest.fixture(scope="module")
def runner(exported):
    return export_browser.OnnxTranslator(exported)


@pytest.fixture(scope="module")
def shipped():
    return ah.load_pretrained()


@pytest.fixture(scope="module")
def sources():
    return corpus_sources(N)


def test_files_and_what_the_page_reads(exported):
    import json

    info = json.loads((exported / "translator.json").read_text(encoding="utf-8"))
    cfg = json.loads((ROOT / "aiayn_helpers/pretrained/multi30k/config.json").read_text())
    assert (info["beam_size"], info["length_penalty"]) == (cfg["beam_size"], cfg["length_penalty"])
    assert info["weights"] == "float16"
    # every weight once: the float16 state dict (tied embedding stored once), the table
    # of positions (float32) and alignment
    state_bytes = 2 * 7_577_600 + 4 * export_browser.MAX_POSITIONS * cfg["d_model"]
    assert state_bytes <= info["bytes"]["weights.bin"] < state_bytes + 64 * 200
    assert info["bytes"]["encoder.onnx"] + info["bytes"]["decoder.onnx"] < 100_000


@pytest.fixture(scope="module")
def beam_ids(runner, sources):
    """The ONNX beam search's ids for each sentence, with the shipped beam settings."""
    k, alpha = runner.info["beam_size"], runner.info["length_penalty"]
    return [runner.beam(runner.source_ids(s), k, alpha) for s in sources]


def test_same_tokens_as_ah_translate_on_test2016(runner, shipped, sources, beam_ids):
    model, tokenizer = shipped
    beam = [runner.tokenizer.decode(ids, skip_special_tokens=True) for ids in beam_ids]
    assert beam == ah.translate(model, tokenizer, sources)
    greedy = [runner.translate(s, beam_size=1) for s in sources]
    assert greedy == ah.translate(model, tokenizer, sources, beam_size=1)
    assert beam != greedy  # the beam decides something on these sentences


def test_attention_equals_capture_attention(runner, shipped, sources, beam_ids):
    model, tokenizer = shipped
    layers = len(model.encoder.layers)
    worst = 0.0
    for sentence, output in zip(sources, beam_ids, strict=True):
        ids = runner.source_ids(sentence)
        ours = runner.attention(ids, output)
        src = encode_sources(tokenizer, [sentence])
        assert src[0].tolist() == ids
        with torch.no_grad(), ah.capture_attention(model) as maps:
            model(src, torch.tensor([[BOS_ID, *output]]))
        theirs = {
            kind: np.stack([maps[f"{part}.layers.{i}.{name}"][0].numpy() for i in range(layers)])
            for kind, part, name in (
                ("encoder", "encoder", "self_attn"),
                ("decoder", "decoder", "self_attn"),
                ("cross", "decoder", "cross_attn"),
            )
        }
        for kind in theirs:
            assert ours[kind].shape == theirs[kind].shape, kind
            worst = max(worst, float(np.abs(ours[kind] - theirs[kind]).max()))
    assert worst < 1e-4, worst


def test_int8_weights_about_halve_the_file_and_translate(tmp_path):
    """int8 only for the 2-D matrices (biases, LayerNorm and the positions' table stay):
    from the float16 file, about half the bytes, not a quarter."""
    info = export_browser.export(tmp_path, int8=True)
    assert info["weights"] == "int8 per channel"
    float16_bytes = 2 * 7_577_600
    assert 0.45 * float16_bytes < info["bytes"]["weights.bin"] < 0.55 * float16_bytes
    runner = export_browser.OnnxTranslator(tmp_path)
    assert runner.translate("Zwei Hunde spielen im Schnee.") == "Two dogs are playing in the snow."


def test_the_runners_length_penalty_is_the_packages():
    """onnx_translator's numpy length penalty (the page's JS has the same) equals
    ah.length_penalty_gnmt, the one the chapters and ah.translate use."""
    import math

    import aiayn_helpers as ah

    for length in (1, 2, 7, 40, 100):
        for alpha in (0.0, 0.6, 1.0, 1.4):
            ours = export_browser.length_penalty_gnmt(length, alpha)
            assert math.isclose(ours, float(ah.length_penalty_gnmt(length, alpha)), rel_tol=1e-12)
