"""The shipped translator as ONNX, for the site's in-browser translator.

    python tools/ship/export_browser.py --out _build/translator [--int8] [--check N]

writes the files the page loads (``book/_static/translator/``) and runs them with
onnxruntime-web:

* ``encoder.onnx``: source ids ``src`` ``(B, S)`` -> the cross-attention keys and
  values of every decoder layer, ``cross_k`` and ``cross_v`` ``(L, B, H, S, d_k)``
  (chapter 8's cache, projected once per sentence), and the encoder's self-attention
  weights ``enc_attn`` ``(L, B, H, S, S)``;
* ``decoder.onnx``: one decoding step with a key/value cache. Inputs: the newest token
  of each row ``token`` ``(N, 1)``, its position ``position`` ``(1,)``, the cache of the
  positions before it ``past_k``, ``past_v`` ``(L, N, H, T, d_k)`` and the encoder's
  ``cross_k``, ``cross_v`` (batch 1 or N: one sentence's are shared by its beams).
  Outputs: ``logits`` ``(N, V)``, the cache with the new position ``present_k``,
  ``present_v`` ``(L, N, H, T + 1, d_k)``, the step's attention weights
  ``self_attn`` ``(L, N, H, 1, T + 1)`` and ``cross_attn`` ``(L, N, H, 1, S)``, and
  the cross-attention's queries ``cross_q`` ``(L, N, H, 1, d_k)`` (the explorer's
  step-by-step view shows one head's query, keys, scores and weights);
* ``weights.bin``: every weight once, read by both graphs (ONNX external data); the
  shared embedding is the source and target embedding and the output projection;
* ``encoder.widened.onnx``, ``decoder.widened.onnx``: the same two graphs as the page
  runs them, every weight read as float32 from ``widened.bin``, which the page computes
  from ``weights.bin`` (``widen.js``; :func:`widen` here, recipe in translator.json) so
  that onnxruntime-web has no Cast and Mul to fold while it loads them (_Widened).

The graphs are written out operation by operation from the book's equations (not
traced), so each node is one line of chapters 3 to 8: post-norm residuals, the
embedding times sqrt(d_model) plus the sinusoidal table, softmax(Q K^T / sqrt(d_k)) V.
The shipped weights are float16; they are stored as float16 and widened to float32 in
the graph (exact), or with ``--int8`` quantised per output channel (symmetric int8,
one float32 scale per row of the embedding and per column of each matrix); only the
2-D matrices are quantised, the biases, LayerNorm weights and the table of positions
stay as they are, so from the float16 file int8 about halves the size (7.96 MB
against 15.42, as the Makefile says). A sentence is decoded alone, so no padding is ever attended to
inside the decoder; the encoder masks padding as the book does.

:class:`OnnxTranslator` runs the files with onnxruntime in Python: greedy decoding and
a beam search that follow :func:`aiayn_helpers.greedy_decode` and
:func:`aiayn_helpers.beam_search` for one sentence (the page's ``beam.js`` is the same
loop in JavaScript), and :meth:`OnnxTranslator.attention`, every attention map of a
translation, as :func:`aiayn_helpers.explorer.attention_maps` computes them.
``--check N`` compares the files with ``ah.translate`` on the first N sentences of
test2016 and prints its BLEU on the whole split.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

OPSET = 17
# positions of the sinusoidal table in the graphs: a source of at most
# MAX_SOURCE_TOKENS ids (the page cuts longer input) and its output of source + 50
MAX_SOURCE_TOKENS = 100
MAX_POSITIONS = 256
FILES = ("encoder.onnx", "decoder.onnx", "weights.bin")
# the same two graphs as the page runs them: float32 weights from widened.bin (_Widened)
PAGE_GRAPHS = ("encoder.widened.onnx", "decoder.widened.onnx")


# -- the weights --------------------------------------------------------------------
def _state(name: str = "multi30k") -> tuple[dict[str, np.ndarray], dict, object]:
    """The shipped float16 state dict as NumPy, its config and its tokenizer."""
    import aiayn_helpers as ah
    from aiayn_helpers.pretrained import ROOT as PRETRAINED
    from aiayn_helpers.pretrained import read_safetensors

    model, tokenizer = ah.load_pretrained(name)  # checks every SHA-256
    folder = PRETRAINED / name
    cfg = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    if cfg.get("positional", "sinusoidal") != "sinusoidal" or cfg.get("d_k"):
        raise ValueError("the browser export handles the paper's model only")
    if getattr(model.encoder.layers[0], "norm_first", False):
        raise ValueError("the browser export handles post-norm models only")
    weights = read_safetensors(folder / "weights.safetensors")
    state = {k: v.numpy() for k, v in weights.items()}
    return state, cfg, tokenizer


class _Store:
    """The initialisers of both graphs, each written once to ``weights.bin``."""

    def __init__(self, int8: bool):
        self.int8 = int8
        self.arrays: dict[str, np.ndarray] = {}

    def add(self, name: str, array: np.ndarray) -> str:
        if name not in self.arrays:
            self.arrays[name] = np.ascontiguousarray(array)
        return name

    def write(self, path: Path) -> dict[str, tuple[int, int]]:
        places, offset = {}, 0
        with open(path, "wb") as f:
            for name, array in self.arrays.items():
                pad = (-offset) % 64  # aligned, as onnxruntime maps it
                f.write(b"\0" * pad)
                offset += pad
                data = array.tobytes()
                f.write(data)
                places[name] = (offset, len(data))
                offset += len(data)
        return places


def _quantise(w: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 per channel along ``axis``: ``w ~ q * scale``."""
    w = w.astype(np.float32)
    reduce = 1 - axis
    scale = np.abs(w).max(axis=reduce) / 127.0
    scale = np.where(scale == 0, 1.0, scale).astype(np.float32)
    shape = [1, 1]
    shape[axis] = -1
    q = np.clip(np.rint(w / scale.reshape(shape)), -127, 127).astype(np.int8)
    return q, scale


class _Widened:
    """The page's graphs read their weights as float32 from ``widened.bin``, a file that
    is never downloaded: the page widens it from ``weights.bin`` itself (``widen.js``:
    each int8 value times its channel's scale, each float16 value as float32), the same
    numbers as the Cast and Mul that onnxruntime folds when it loads ``encoder.onnx`` and
    ``decoder.onnx`` (a float32 product of two float32 numbers, rounded once), but
    without that folding, the slowest part of creating the sessions in the browser.
    ``recipe`` (in translator.json) says where each tensor's float32 values go and
    where they come from in weights.bin."""

    FILE = "widened.bin"

    def __init__(self):
        self.tensors: dict[str, dict] = {}  # name -> kind, shape, axis, offset
        self.size = 0

    def add(self, key: str, kind: str, shape: tuple[int, ...], axis: int, graph: _Graph) -> str:
        name = key + ".f32"
        if name not in self.tensors:
            self.size += (-self.size) % 64
            count = int(np.prod(shape))
            self.tensors[name] = {"key": key, "kind": kind, "shape": list(shape), "axis": axis, "offset": self.size}
            self.size += 4 * count
        graph.widened_used.add(name)
        return name

    def initialiser(self, name: str):
        from onnx import TensorProto

        t = self.tensors[name]
        tensor = TensorProto()
        tensor.name = name
        tensor.data_type = TensorProto.FLOAT
        tensor.dims.extend(t["shape"])
        tensor.data_location = TensorProto.EXTERNAL
        length = 4 * int(np.prod(t["shape"]))
        for k, v in (("location", self.FILE), ("offset", str(t["offset"])), ("length", str(length))):
            entry = tensor.external_data.add()
            entry.key, entry.value = k, v
        return tensor

    def recipe(self, places: dict[str, tuple[int, int]]) -> dict:
        """``bytes`` of widened.bin and, per tensor, ``[offset, kind, count, source,
        scale, columns, axis]``: float32 values from byte ``offset`` of widened.bin,
        ``count`` of them, from byte ``source`` of weights.bin (int8 or float16 values,
        rows times ``columns``); for int8 the float32 scales at byte ``scale``, one per
        column (axis 1) or per row (axis 0)."""
        rows = []
        for t in self.tensors.values():
            count = int(np.prod(t["shape"]))
            columns = t["shape"][-1] if len(t["shape"]) == 2 else count
            if t["kind"] == "int8":
                source, scale = places[t["key"] + ".int8"][0], places[t["key"] + ".scale"][0]
            else:
                source, scale = places[t["key"]][0], -1
            rows.append([t["offset"], t["kind"], count, source, scale, columns, t["axis"]])
        return {"bytes": self.size + (-self.size) % 64, "tensors": rows}


def widen(weights: bytes, recipe: dict) -> np.ndarray:
    """widened.bin's float32 values from weights.bin (what the page's widen.js does):
    ``recipe`` is translator.json's ``widened``."""
    if not isinstance(recipe, dict) or not {"bytes", "tensors"} <= recipe.keys():
        raise ValueError(f"expected translator.json's widened recipe (bytes, tensors), got {recipe!r:.80}")
    out = np.zeros(recipe["bytes"] // 4, dtype=np.float32)
    for offset, kind, count, source, scale, columns, axis in recipe["tensors"]:
        if kind == "int8":
            q = np.frombuffer(weights, np.int8, count, source).reshape(-1, columns).astype(np.float32)
            rows = count // columns
            s = np.frombuffer(weights, np.float32, columns if axis == 1 else rows, scale)
            values = q * (s[None, :] if axis == 1 else s[:, None])
        elif kind == "float16":
            values = np.frombuffer(weights, np.float16, count, source).astype(np.float32)
        else:
            raise ValueError(f"expected int8 or float16 weights in the recipe, got {kind!r}")
        out[offset // 4 : offset // 4 + count] = values.reshape(-1)
    return out


class _Graph:
    """A small builder: each method adds one ONNX node and returns its output."""

    def __init__(self, store: _Store, state: dict[str, np.ndarray]):
        from onnx import helper

        self.h = helper
        self.store, self.state = store, state
        self.nodes, self.used, self.consts = [], set(), {}
        self.count = 0
        self.widened: _Widened | None = None  # set: the page's graph (widened.bin)
        self.widened_used: set[str] = set()

    def op(self, kind: str, *inputs: str, **attrs) -> str:
        self.count += 1
        out = f"{kind.lower()}_{self.count}"
        self.nodes.append(self.h.make_node(kind, list(inputs), [out], **attrs))
        return out

    def const(self, value, dtype=np.int64) -> str:
        """A small constant (shapes, indices, scalars) kept inside the graph."""
        array = np.asarray(value, dtype=dtype)
        key = (array.dtype.str, array.shape, array.tobytes())
        if key not in self.consts:
            from onnx import numpy_helper

            name = f"const_{len(self.consts)}"
            self.consts[key] = numpy_helper.from_array(array, name)
        return self.consts[key].name

    def stored(self, name: str, array: np.ndarray) -> str:
        self.used.add(self.store.add(name, array))
        return name

    def weight(self, key: str, transpose: bool = False, axis: int = 1) -> str:
        """A float32 weight of the state dict: float16 widened, or int8 dequantised."""
        w = self.state[key]
        if transpose:
            w = w.T
        if self.store.int8 and w.ndim == 2:
            # q * scale as Cast and Mul, which onnxruntime computes once, when it loads
            # the graph (constant folding); a DequantizeLinear would be fused into
            # int8 matrix products instead, slower here and not the same numbers
            q, scale = _quantise(w, axis)
            shape = (1, -1) if axis == 1 else (-1, 1)
            if self.widened is not None:
                self.store.add(key + ".int8", q)
                self.store.add(key + ".scale", scale.reshape(shape))
                return self.widened.add(key, "int8", q.shape, axis, self)
            widened = self.op("Cast", self.stored(key + ".int8", q), to=1)
            return self.op("Mul", widened, self.stored(key + ".scale", scale.reshape(shape)))
        if self.widened is not None:
            self.store.add(key, w.astype(np.float16))
            return self.widened.add(key, "float16", w.shape, 0, self)
        return self.op("Cast", self.stored(key, w.astype(np.float16)), to=1)

    def linear(self, x: str, prefix: str) -> str:
        """``x W^T + b`` (``nn.Linear``): W stored transposed, ``(in, out)``."""
        y = self.op("MatMul", x, self.weight(prefix + ".weight", transpose=True))
        return self.op("Add", y, self.weight(prefix + ".bias"))

    def layer_norm(self, x: str, prefix: str) -> str:
        scale, bias = self.weight(prefix + ".weight"), self.weight(prefix + ".bias")
        return self.op("LayerNormalization", x, scale, bias, axis=-1, epsilon=1e-5)

    def heads(self, x: str, num_heads: int) -> str:
        """``(B, T, H * d) -> (B, H, T, d)`` (``MultiHeadAttention._split_heads``)."""
        shape = self.const([0, 0, num_heads, -1])
        return self.op("Transpose", self.op("Reshape", x, shape), perm=[0, 2, 1, 3])

    def merge(self, x: str, d_model: int) -> str:
        """``(B, H, T, d) -> (B, T, H * d)``: the heads concatenated."""
        x = self.op("Transpose", x, perm=[0, 2, 1, 3])
        return self.op("Reshape", x, self.const([0, 0, d_model]))

    def attend(self, q: str, k: str, v: str, d_k: int, mask: str | None = None):
        """``softmax(q k^T / sqrt(d_k)) v`` per head; returns (output, weights)."""
        scores = self.op("MatMul", q, self.op("Transpose", k, perm=[0, 1, 3, 2]))
        scores = self.op("Div", scores, self.const(math.sqrt(d_k), np.float32))
        if mask is not None:  # the most negative float where masked, as the book
            lowest = self.const(np.finfo(np.float32).min, np.float32)
            scores = self.op("Where", mask, scores, lowest)
        weights = self.op("Softmax", scores, axis=-1)
        return self.op("MatMul", weights, v), weights

    def feed_forward(self, x: str, prefix: str) -> str:
        hidden = self.op("Relu", self.linear(x, prefix + ".linear1"))
        return self.linear(hidden, prefix + ".linear2")

    def stack(self, tensors: list[str]) -> str:
        """``L`` tensors of one shape -> ``(L, ...)``."""
        axis0 = self.const([0])
        return self.op("Concat", *[self.op("Unsqueeze", t, axis0) for t in tensors], axis=0)

    def embed(self, ids: str, positions: str, d_model: int) -> str:
        """``embedding * sqrt(d_model) + PE`` (chapter 4), rows ``positions`` of PE."""
        table = self.shared_embedding()
        x = self.op("Mul", self.op("Gather", table, ids), self.const(math.sqrt(d_model), np.float32))
        return self.op("Add", x, self.op("Gather", self.pe(d_model), positions))

    def shared_embedding(self) -> str:
        if not hasattr(self, "_embedding"):
            self._embedding = self.weight("src_embed.weight", axis=0)
        return self._embedding

    def pe(self, d_model: int) -> str:
        if not hasattr(self, "_pe"):
            from aiayn_helpers.positional import sinusoidal_encoding

            table = sinusoidal_encoding(MAX_POSITIONS, d_model).numpy()  # float32, as the model
            self._pe = self.stored("positional.pe", table.astype(np.float32))
        return self._pe

    def model(self, name: str, inputs, outputs, places):
        from onnx import TensorProto, helper

        initialisers = list(self.consts.values())
        for key in sorted(self.used):
            array = self.store.arrays[key]
            tensor = TensorProto()
            tensor.name = key
            tensor.data_type = helper.np_dtype_to_tensor_dtype(array.dtype)
            tensor.dims.extend(array.shape)
            tensor.data_location = TensorProto.EXTERNAL
            offset, length = places[key]
            for k, v in (("location", "weights.bin"), ("offset", str(offset)), ("length", str(length))):
                entry = tensor.external_data.add()
                entry.key, entry.value = k, v
            initialisers.append(tensor)
        for key in sorted(self.widened_used):
            initialisers.append(self.widened.initialiser(key))
        graph = helper.make_graph(self.nodes, name, inputs, outputs, initialisers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
        model.ir_version = 8  # what onnxruntime(-web) reads
        model.producer_name = "aiayn_helpers tools/ship/export_browser.py"
        return model


def _encoder(g: _Graph, cfg: dict) -> tuple[list, list]:
    from onnx import TensorProto, helper

    d, h, layers = cfg["d_model"], cfg["num_heads"], cfg["num_layers"]
    d_k = d // h
    src = "src"
    # positions 0 .. S-1: a Range over the source's length
    length = g.op("Gather", g.op("Shape", src), g.const(1), axis=0)
    positions = g.op("Range", g.const(0), length, g.const(1))
    x = g.embed(src, positions, d)
    # (B, 1, 1, S): True where a real token (padding_mask)
    mask = g.op("Unsqueeze", g.op("Not", g.op("Equal", src, g.const(0))), g.const([1, 2]))
    maps = []
    for i in range(layers):
        p = f"encoder.layers.{i}"
        q, k, v = (g.heads(g.linear(x, f"{p}.self_attn.w_{n}"), h) for n in "qkv")
        out, weights = g.attend(q, k, v, d_k, mask)
        maps.append(weights)
        out = g.linear(g.merge(out, d), f"{p}.self_attn.w_o")
        x = g.layer_norm(g.op("Add", x, out), f"{p}.norm1")  # post-norm residual
        x = g.layer_norm(g.op("Add", x, g.feed_forward(x, f"{p}.ff")), f"{p}.norm2")
    # the decoder's cross-attention keys and values, projected once (KVCache.from_memory)
    cross_k = [g.heads(g.linear(x, f"decoder.layers.{i}.cross_attn.w_k"), h) for i in range(layers)]
    cross_v = [g.heads(g.linear(x, f"decoder.layers.{i}.cross_attn.w_v"), h) for i in range(layers)]
    named = {"cross_k": g.stack(cross_k), "cross_v": g.stack(cross_v), "enc_attn": g.stack(maps)}
    for out, node in named.items():
        g.nodes.append(helper.make_node("Identity", [node], [out]))
    f32 = TensorProto.FLOAT
    inputs = [helper.make_tensor_value_info("src", TensorProto.INT64, ["B", "S"])]
    outputs = [
        helper.make_tensor_value_info("cross_k", f32, [layers, "B", h, "S", d_k]),
        helper.make_tensor_value_info("cross_v", f32, [layers, "B", h, "S", d_k]),
        helper.make_tensor_value_info("enc_attn", f32, [layers, "B", h, "S", "S"]),
    ]
    return inputs, outputs


def _decoder(g: _Graph, cfg: dict) -> tuple[list, list]:
    from onnx import TensorProto, helper

    d, h, layers = cfg["d_model"], cfg["num_heads"], cfg["num_layers"]
    d_k = d // h
    x = g.embed("token", "position", d)  # (N, 1, d): Gather of (1,) positions is (1, d)
    keys, values, self_maps, cross_maps, cross_queries = [], [], [], [], []
    for i in range(layers):
        p = f"decoder.layers.{i}"
        index = g.const(i)
        # masked self-attention: the cache's keys and values and the new position's
        q = g.heads(g.linear(x, f"{p}.self_attn.w_q"), h)
        k = g.op(
            "Concat", g.op("Gather", "past_k", index, axis=0), g.heads(g.linear(x, f"{p}.self_attn.w_k"), h), axis=2
        )
        v = g.op(
            "Concat", g.op("Gather", "past_v", index, axis=0), g.heads(g.linear(x, f"{p}.self_attn.w_v"), h), axis=2
        )
        keys.append(k)
        values.append(v)
        out, weights = g.attend(q, k, v, d_k)  # no mask: every cached position is earlier
        self_maps.append(weights)
        x = g.layer_norm(g.op("Add", x, g.linear(g.merge(out, d), f"{p}.self_attn.w_o")), f"{p}.norm1")
        # cross-attention over the encoder's keys and values, projected once
        q = g.heads(g.linear(x, f"{p}.cross_attn.w_q"), h)
        cross_queries.append(q)
        ck = g.op("Gather", "cross_k", index, axis=0)
        cv = g.op("Gather", "cross_v", index, axis=0)
        out, weights = g.attend(q, ck, cv, d_k)
        cross_maps.append(weights)
        x = g.layer_norm(g.op("Add", x, g.linear(g.merge(out, d), f"{p}.cross_attn.w_o")), f"{p}.norm2")
        x = g.layer_norm(g.op("Add", x, g.feed_forward(x, f"{p}.ff")), f"{p}.norm3")
    # the output projection is the shared embedding, transposed (tied weights)
    logits = g.op("MatMul", x, g.op("Transpose", g.shared_embedding(), perm=[1, 0]))
    logits = g.op("Squeeze", logits, g.const([1]))
    named = {
        "logits": logits,
        "present_k": g.stack(keys),
        "present_v": g.stack(values),
        "self_attn": g.stack(self_maps),
        "cross_attn": g.stack(cross_maps),
        "cross_q": g.stack(cross_queries),
    }
    for out, node in named.items():
        g.nodes.append(helper.make_node("Identity", [node], [out]))
    f32, i64 = TensorProto.FLOAT, TensorProto.INT64
    cache = [layers, "N", h, "T", d_k]
    cross = [layers, "M", h, "S", d_k]
    inputs = [
        helper.make_tensor_value_info("token", i64, ["N", 1]),
        helper.make_tensor_value_info("position", i64, [1]),
        helper.make_tensor_value_info("past_k", f32, cache),
        helper.make_tensor_value_info("past_v", f32, cache),
        helper.make_tensor_value_info("cross_k", f32, cross),
        helper.make_tensor_value_info("cross_v", f32, cross),
    ]
    vocab = g.state["src_embed.weight"].shape[0]
    outputs = [
        helper.make_tensor_value_info("logits", f32, ["N", vocab]),
        helper.make_tensor_value_info("present_k", f32, [layers, "N", h, "T1", d_k]),
        helper.make_tensor_value_info("present_v", f32, [layers, "N", h, "T1", d_k]),
        helper.make_tensor_value_info("self_attn", f32, [layers, "N", h, 1, "T1"]),
        helper.make_tensor_value_info("cross_attn", f32, [layers, "N", h, 1, "S"]),
        helper.make_tensor_value_info("cross_q", f32, [layers, "N", h, 1, d_k]),
    ]
    return inputs, outputs


def export(out: str | Path, *, int8: bool = False, name: str = "multi30k") -> dict:
    """Write ``encoder.onnx``, ``decoder.onnx``, ``weights.bin``, ``tokenizer.json`` and
    ``translator.json`` (what the page needs to know) into ``out``; returns the latter."""
    import onnx

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    state, cfg, tokenizer = _state(name)
    store, widened = _Store(int8), _Widened()
    graphs = {file: _Graph(store, state) for file in FILES[:2] + PAGE_GRAPHS}
    for file in PAGE_GRAPHS:
        graphs[file].widened = widened
    ios = {file: (_encoder if file.startswith("encoder") else _decoder)(g, cfg) for file, g in graphs.items()}
    places = store.write(out / "weights.bin")
    # widened.bin is the page's, never shipped: written for the checker, then removed
    (out / _Widened.FILE).write_bytes(widen((out / "weights.bin").read_bytes(), widened.recipe(places)).tobytes())
    for file, graph in graphs.items():
        model = graph.model(file.split(".")[0], *ios[file], places)
        onnx.save(model, out / file)
        onnx.checker.check_model(str(out / file))  # with its external data
    (out / _Widened.FILE).unlink()
    from aiayn_helpers.pretrained import ROOT as PRETRAINED

    (out / "tokenizer.json").write_bytes((PRETRAINED / name / "tokenizer.json").read_bytes())
    files = (*FILES, *PAGE_GRAPHS, "tokenizer.json")
    info = {
        "model": name,
        "weights": "int8 per channel" if int8 else "float16",
        "num_layers": cfg["num_layers"],
        "num_heads": cfg["num_heads"],
        "d_model": cfg["d_model"],
        "vocab_size": int(state["src_embed.weight"].shape[0]),
        "beam_size": cfg["beam_size"],
        "length_penalty": cfg["length_penalty"],
        "pad_id": 0,
        "bos_id": tokenizer.token_to_id("<bos>"),
        "eos_id": tokenizer.token_to_id("<eos>"),
        "max_source_tokens": MAX_SOURCE_TOKENS,
        "extra_tokens": 50,
        "bytes": {f: (out / f).stat().st_size for f in files},
        "sha256": {f: hashlib.sha256((out / f).read_bytes()).hexdigest() for f in files},
        # what the page downloads (PAGE_GRAPHS read weights.bin and widened.bin) and how
        # it widens the weights (_Widened.recipe)
        "page_files": [*PAGE_GRAPHS, "weights.bin", "tokenizer.json"],
        "widened": widened.recipe(places),
    }
    (out / "translator.json").write_text(json.dumps(info, indent=1) + "\n", encoding="utf-8")
    return info


# -- running the files in Python -----------------------------------------------------
if str(ROOT / "tools") not in sys.path:  # tools/: its folders are packages
    sys.path.insert(0, str(ROOT / "tools"))
from ship.onnx_translator import OnnxTranslator, _log_softmax, length_penalty_gnmt  # noqa: E402, F401


def _check(folder: Path, n: int, bleu: bool) -> None:
    """Tokens of the first ``n`` test2016 sentences against ah.translate; with ``bleu``
    the sacreBLEU of the files on the whole split."""
    import aiayn_helpers as ah
    from aiayn_helpers.data import load_multi30k

    pairs = load_multi30k("test2016")
    runner = OnnxTranslator(folder)
    sources = [de for de, _ in pairs]
    if n:
        model, tokenizer = ah.load_pretrained()
        ours = [runner.translate(s) for s in sources[:n]]
        same = sum(a == b for a, b in zip(ours, ah.translate(model, tokenizer, sources[:n]), strict=True))
        print(f"{folder}: {same} of {n} translations equal ah.translate's")
    if bleu:
        from sacrebleu.metrics import BLEU

        start = time.perf_counter()
        ours = [runner.translate(s) for s in sources]
        took = time.perf_counter() - start
        score = BLEU().corpus_score(ours, [[en for _, en in pairs]])
        print(f"{folder}: test2016 BLEU {score.score:.2f} ({len(sources)} sentences, {took:.0f} s, one thread)")


def compare_int8(folder: Path, limit: int | None = None) -> dict:
    """How many test2016 translations of the int8 files in ``folder`` equal those of
    the float16 export (written to a temporary folder), both run by
    :class:`OnnxTranslator` with the model's beam size and length penalty."""
    import tempfile

    from aiayn_helpers.data import load_multi30k

    sources = [de for de, _ in load_multi30k("test2016", limit=limit)]
    with tempfile.TemporaryDirectory() as exact:
        export(exact)
        float16 = OnnxTranslator(exact)
        theirs = [float16.translate(s) for s in sources]
    int8 = OnnxTranslator(folder)
    if int8.info["weights"] == "float16":
        raise ValueError(f"{folder} holds float16 weights: expected an --int8 export")
    ours = [int8.translate(s) for s in sources]
    same = sum(a == b for a, b in zip(ours, theirs, strict=True))
    return {"equal": same, "of": len(sources)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="folder for the files")
    parser.add_argument("--int8", action="store_true", help="int8 weights (per channel)")
    parser.add_argument(
        "--check", type=int, default=0, metavar="N", help="compare with ah.translate on the first N test2016 sentences"
    )
    parser.add_argument("--bleu", action="store_true", help="print the files' test2016 BLEU")
    parser.add_argument(
        "--equal-to-float16",
        action="store_true",
        help="(with --int8) count the test2016 translations equal to the float16 export's",
    )
    args = parser.parse_args(argv)
    info = export(args.out, int8=args.int8)
    print(f"{args.out}: " + ", ".join(f"{f} {b / 1e6:.2f} MB" for f, b in info["bytes"].items()))
    if args.check or args.bleu:
        _check(Path(args.out), args.check, args.bleu)
    if args.equal_to_float16:
        same = compare_int8(Path(args.out))
        print(f"{args.out}: {same['equal']} of {same['of']} test2016 translations equal the float16 export's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
