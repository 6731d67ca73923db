"""The page's own float32 weights (issue 54, the first translation's speed).

The page runs ``encoder.widened.onnx`` and ``decoder.widened.onnx``: the same graphs as
``encoder.onnx`` and ``decoder.onnx`` with every weight read as float32 from
``widened.bin``, a file the page never downloads but computes from ``weights.bin``
(``widen.js``), so that onnxruntime has no Cast and Mul of every weight to fold when the
sessions are created. Checked, under node and onnxruntime in Python (no browser):

* ``widen.js`` gives, byte for byte, what ``export_browser.widen`` gives, for the int8
  export (int8 times per-channel scales, float16 vectors) and the float16 one;
* the page's graphs on those bytes give exactly the outputs of the graphs Python runs
  (every output of the encoder and of three decoder steps, three sentences): the page
  computes the numbers the tests compare with Python, only sooner;
* ``widen`` and ``widen.js`` refuse a recipe that is not one, saying what they expected.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from ship import export_browser  # noqa: E402

pytestmark = pytest.mark.rendering
WIDEN_JS = ROOT / "book" / "_static" / "translator" / "widen.js"
SENTENCES = ["Zwei Hunde spielen im Schnee.", "Eine Frau liest ein Buch im Park.", "Ein Mann fährt Fahrrad."]

_DRIVER = """
import { readFileSync, writeFileSync } from "node:fs";
import { widen } from "./widen.mjs";
const [, , folder, out] = process.argv;
const info = JSON.parse(readFileSync(folder + "/translator.json", "utf8"));
writeFileSync(out, widen(readFileSync(folder + "/weights.bin"), info.widened));
try { widen(new Uint8Array(8), {tensors: "no"}); } catch (err) { console.log(err.message); }
"""


@pytest.fixture(scope="module", params=["int8", "float16"])
def export(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(f"translator_{request.param}")
    info = export_browser.export(folder, int8=request.param == "int8")
    return folder, info


def _node_widen(folder: Path, tmp_path: Path) -> tuple[bytes, str]:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node not found: widen.js is not tested")
    shutil.copy(WIDEN_JS, tmp_path / "widen.mjs")  # an ES module of its own
    (tmp_path / "driver.mjs").write_text(_DRIVER, encoding="utf-8")
    out = tmp_path / "widened.bin"
    done = subprocess.run(
        [node, str(tmp_path / "driver.mjs"), str(folder), str(out)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return out.read_bytes(), done.stdout


def test_widen_js_gives_pythons_bytes(export, tmp_path):
    folder, info = export
    ours, refused = _node_widen(folder, tmp_path)
    theirs = export_browser.widen((folder / "weights.bin").read_bytes(), info["widened"])
    assert len(ours) == info["widened"]["bytes"] == theirs.nbytes
    assert ours == theirs.tobytes()
    kinds = {row[1] for row in info["widened"]["tensors"]}
    assert kinds == ({"int8", "float16"} if info["weights"] == "int8 per channel" else {"float16"})
    assert 'expected translator.json\'s "widened" recipe' in refused, refused


def test_widen_refuses_what_is_not_a_recipe():
    with pytest.raises(ValueError, match="expected translator.json's widened recipe"):
        export_browser.widen(b"", {"tensors": []})
    with pytest.raises(ValueError, match="expected int8 or float16"):
        export_browser.widen(b"\0" * 64, {"bytes": 64, "tensors": [[0, "int4", 1, 0, -1, 1, 0]]})


def test_the_pages_graphs_give_pythons_numbers(export, tmp_path):
    import onnxruntime as ort

    folder, info = export
    ours, _ = _node_widen(folder, tmp_path)
    page = tmp_path / "page"
    page.mkdir()
    for name in (*export_browser.PAGE_GRAPHS, "weights.bin"):
        shutil.copy(folder / name, page / name)
    (page / "widened.bin").write_bytes(ours)
    assert info["page_files"] == [*export_browser.PAGE_GRAPHS, "weights.bin", "tokenizer.json"]
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1

    def session(path):
        return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    python = export_browser.OnnxTranslator(folder)
    encoder, decoder = session(page / "encoder.widened.onnx"), session(page / "decoder.widened.onnx")
    layers, heads, d_k = python.shape
    for sentence in SENTENCES:
        src = np.array([python.source_ids(sentence)], dtype=np.int64)
        theirs = python.encoder.run(None, {"src": src})
        mine = encoder.run(None, {"src": src})
        assert all(np.array_equal(a, b) for a, b in zip(mine, theirs, strict=True)), sentence
        cross_k, cross_v, _ = theirs
        past = np.zeros((layers, 1, heads, 0, d_k), dtype=np.float32)
        feeds = {"past_k": past, "past_v": past, "cross_k": cross_k, "cross_v": cross_v}
        token = info["bos_id"]
        for position in range(3):
            feeds |= {"token": np.array([[token]], dtype=np.int64), "position": np.array([position], dtype=np.int64)}
            theirs = python.decoder.run(None, feeds)
            mine = decoder.run(None, feeds)
            assert all(np.array_equal(a, b) for a, b in zip(mine, theirs, strict=True)), (sentence, position)
            token = int(theirs[0][0].argmax())
            feeds |= {"past_k": theirs[1], "past_v": theirs[2]}
    assert json.loads((folder / "translator.json").read_text())["widened"] == info["widened"]
