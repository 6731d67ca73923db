"""Run the browser's exported files in Python: OnnxTranslator runs encoder.onnx and
decoder.onnx with onnxruntime and the same beam search the page runs (book/_static/translator),
so that tests and ``export_browser.py --check`` compare the page's files with ``ah.translate``
and the step view's trace with Python's. Written by the export (tools/ship/export_browser.py),
which re-exports these names.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def length_penalty_gnmt(length: int, alpha: float) -> float:
    """``((5 + |Y|) / 6) ** alpha``, as :func:`aiayn_helpers.length_penalty_gnmt`."""
    return ((5.0 + length) / 6.0) ** alpha


def _log_softmax(x: np.ndarray) -> np.ndarray:
    """Log-softmax over the last axis in float64 (``-inf`` entries stay ``-inf``)."""
    top = x.max(axis=-1, keepdims=True)
    return x - top - np.log(np.exp(x - top).sum(axis=-1, keepdims=True))


class OnnxTranslator:
    """The exported files in onnxruntime, one sentence at a time, one thread."""

    def __init__(self, folder: str | Path, threads: int = 1):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        folder = Path(folder)
        self.info = json.loads((folder / "translator.json").read_text(encoding="utf-8"))
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        providers = ["CPUExecutionProvider"]
        self.encoder = ort.InferenceSession(str(folder / "encoder.onnx"), options, providers=providers)
        self.decoder = ort.InferenceSession(str(folder / "decoder.onnx"), options, providers=providers)
        i = self.info
        self.shape = (i["num_layers"], i["num_heads"], i["d_model"] // i["num_heads"])
        self.banned = np.zeros(i["vocab_size"])
        self.banned[[i["pad_id"], i["bos_id"]]] = -np.inf

    def source_ids(self, sentence: str) -> list[int]:
        """BPE ids and ``<eos>``, as :func:`aiayn_helpers.translation.encode_sources`."""
        return self.tokenizer.encode(sentence, add_special_tokens=False).ids + [self.info["eos_id"]]

    def encode(self, ids: list[int]):
        cross_k, cross_v, enc_attn = self.encoder.run(None, {"src": np.array([ids], dtype=np.int64)})
        return cross_k, cross_v, enc_attn

    def empty_cache(self, rows: int):
        layers, heads, d_k = self.shape
        empty = np.zeros((layers, rows, heads, 0, d_k), dtype=np.float32)
        return empty, empty

    OUTPUTS = ("logits", "present_k", "present_v", "self_attn", "cross_attn")

    def step(self, tokens, position, cache, cross, queries: bool = False):
        """One decoding step: logits, the new cache, the self- and cross-attention
        weights (and, with ``queries``, the cross-attention's queries)."""
        names = [*self.OUTPUTS, "cross_q"] if queries else list(self.OUTPUTS)
        logits, k, v, self_attn, cross_attn, *q = self.decoder.run(
            names,
            {
                "token": np.asarray(tokens, dtype=np.int64).reshape(-1, 1),
                "position": np.array([position], dtype=np.int64),
                "past_k": cache[0],
                "past_v": cache[1],
                "cross_k": cross[0],
                "cross_v": cross[1],
            },
        )
        if queries:
            return logits, (k, v), self_attn, cross_attn, q[0]
        return logits, (k, v), self_attn, cross_attn

    def greedy(self, ids: list[int]) -> list[int]:
        """:func:`aiayn_helpers.greedy_decode` for one sentence."""
        bos, eos = self.info["bos_id"], self.info["eos_id"]
        cross = self.encode(ids)[:2]
        cache, out = self.empty_cache(1), [bos]
        for step in range(1, len(ids) + self.info["extra_tokens"] + 1):
            logits, cache, _, _ = self.step([out[-1]], step - 1, cache, cross)
            scores = logits[0] + self.banned.astype(np.float32)  # float32, as greedy_decode
            token = int(np.argmax(scores))
            if token == eos:
                break
            out.append(token)
        return out[1:]

    def beam(
        self,
        ids: list[int],
        k: int,
        alpha: float,
        trace: list | None = None,
        max_length: int | None = None,
        layer: int = 0,
        head: int = 0,
        top: int = 5,
    ) -> list[int]:
        """:func:`aiayn_helpers.beam_search` for one sentence (``_beam_search``, n = 1).

        ``trace`` (a list) receives one record per step, what the explorer's
        step-by-step view shows (``beam.js`` writes the same): the beams going in with
        their summed log-probabilities, each live beam's ``top`` next tokens and their
        log-probabilities, the best 2k candidates with their penalised scores and fate
        (``finished``, ``kept`` or ``dropped``), and for beam 0 the cross-attention of
        ``layer``/``head``: its query, the source's keys, the scaled scores and the
        softmax weights. ``max_length`` lowers the limit of source length + 50."""
        bos, eos, vocab = self.info["bos_id"], self.info["eos_id"], self.info["vocab_size"]
        layers, heads, _ = self.shape
        if not (0 <= layer < layers and 0 <= head < heads):
            raise ValueError(f"layer in 0..{layers - 1} and head in 0..{heads - 1} expected, got {layer}, {head}")
        if max_length is not None and (
            isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 1
        ):
            raise ValueError(f"max_length must be a positive int or None, got {max_length!r}")
        limit = len(ids) + self.info["extra_tokens"]  # source length + 50
        if max_length is not None:
            limit = min(limit, max_length)
        cross = self.encode(ids)[:2]
        cache = self.empty_cache(k)
        seqs = [[bos] for _ in range(k)]  # every beam's <bos> and tokens so far
        scores = np.full(k, -np.inf)
        scores[0] = 0.0  # only beam 0 is real at the start
        fin = [(-np.inf, [])] * k  # the k best finished hypotheses, best first
        for step in range(1, limit + 1):
            logits, cache, _, cross_attn, *query = self.step(
                [s[-1] for s in seqs], step - 1, cache, cross, queries=trace is not None
            )
            logp = _log_softmax(logits.astype(np.float64) + self.banned)  # (k, V)
            cand = (scores[:, None] + logp).reshape(-1)  # (k * V,)
            # the best 2k, best first (equal scores: the lower index first)
            best = np.argpartition(-cand, 2 * k)[: 2 * k]
            top_idx = best[np.lexsort((best, -cand[best]))]
            top_scores = cand[top_idx]
            top_tok, top_row = top_idx % vocab, top_idx // vocab
            is_eos = top_tok == eos
            penalty = length_penalty_gnmt(step, alpha)
            going_in = [(s[1:], float(scores[r])) for r, s in enumerate(seqs)]
            # 1) finished hypotheses: the <eos> candidates ranked within the best k
            new = [(top_scores[j] / penalty, seqs[top_row[j]][1:]) for j in range(k) if is_eos[j]]
            # 2) the new beams: the best k candidates that do not end in <eos>
            order = np.argsort(is_eos, kind="stable")[:k]
            if trace is not None:
                trace.append(
                    self._step_record(
                        step,
                        penalty,
                        going_in,
                        logp,
                        top,
                        top_scores,
                        top_tok,
                        top_row,
                        is_eos,
                        order,
                        k,
                        (cross[0], cross_attn, query[0]),
                        layer,
                        head,
                    )
                )
            scores = top_scores[order]
            parent = top_row[order]
            seqs = [seqs[p] + [int(top_tok[j])] for p, j in zip(parent, order, strict=True)]
            cache = (cache[0][:, parent], cache[1][:, parent])  # each inherits its parent's
            # 3) at its limit the sentence finishes its open beams as they are
            at_limit = step >= limit
            if at_limit:
                new += [(scores[j] / penalty, seqs[j][1:]) for j in range(k)]
            # 4) keep the k best finished hypotheses (a stable sort: older first on ties)
            fin = sorted(fin + new, key=lambda f: -f[0])[:k]
            # 5) done at the limit, or when the best open beam can no longer win
            worst = fin[k - 1][0]
            if at_limit or (worst > -np.inf and scores[0] / penalty <= worst):
                break
        return fin[0][1]

    def _step_record(
        self, step, penalty, going_in, logp, top, top_scores, top_tok, top_row, is_eos, order, k, attention, layer, head
    ) -> dict:
        """One step of :meth:`beam`'s trace (see there), as plain numbers."""
        cross_k, cross_attn, cross_q = attention
        kept = set(int(j) for j in order)
        fates = []
        for j in range(len(top_scores)):
            if is_eos[j]:
                fates.append("finished" if j < k else "dropped")
            else:
                fates.append("kept" if j in kept else "dropped")
        nexts = []
        for r, (_, score) in enumerate(going_in):
            if score == -np.inf:
                nexts.append([])
                continue
            best = np.argsort(-logp[r], kind="stable")[:top]
            nexts.append([[int(v), float(logp[r, v])] for v in best])
        q = cross_q[layer, 0, head, 0].astype(np.float64)  # beam 0's query
        keys = cross_k[layer, 0, head].astype(np.float64)  # (S, d_k)
        scaled = keys @ q / math.sqrt(q.shape[0])
        return {
            "step": step,
            "penalty": penalty,
            "beams": [[toks, score] for toks, score in going_in],
            "next": nexts,
            "candidates": [
                [int(top_row[j]), int(top_tok[j]), float(top_scores[j]), float(top_scores[j] / penalty), fates[j]]
                for j in range(len(top_scores))
            ],
            "query": q.tolist(),
            "keys": keys.tolist(),
            "scores": scaled.tolist(),
            "weights": cross_attn[layer, 0, head, 0].astype(np.float64).tolist(),
        }

    def translate(self, sentence: str, beam_size: int | None = None, length_penalty: float | None = None) -> str:
        k = self.info["beam_size"] if beam_size is None else beam_size
        alpha = self.info["length_penalty"] if length_penalty is None else length_penalty
        ids = self.source_ids(sentence)
        out = self.greedy(ids) if k == 1 else self.beam(ids, k, alpha)
        return self.tokenizer.decode(out, skip_special_tokens=True)

    def attention(self, ids: list[int], output: list[int]) -> dict[str, np.ndarray]:
        """Every attention map of the translation ``output`` of source ``ids``, run
        again with the step model on its own tokens (teacher forcing, as
        :func:`aiayn_helpers.explorer.attention_maps`): ``encoder`` ``(L, H, S, S)``,
        ``decoder`` ``(L, H, T, T)`` and ``cross`` ``(L, H, T, S)``, ``T`` counting the
        final ``<eos>``; a decoder row is zero beyond its step (the causal mask)."""
        cross_k, cross_v, enc_attn = self.encode(ids)
        tokens = [self.info["bos_id"], *output]
        t = len(tokens)
        layers, heads, _ = self.shape
        dec = np.zeros((layers, heads, t, t), dtype=np.float32)
        crs = np.zeros((layers, heads, t, len(ids)), dtype=np.float32)
        cache = self.empty_cache(1)
        for step, token in enumerate(tokens):
            _, cache, self_attn, cross_attn = self.step([token], step, cache, (cross_k, cross_v))
            dec[:, :, step, : step + 1] = self_attn[:, 0, :, 0]
            crs[:, :, step] = cross_attn[:, 0, :, 0]
        return {"encoder": enc_attn[:, 0], "decoder": dec, "cross": crs}


# -- the command line ----------------------------------------------------------------
