// Greedy decoding and beam search for one sentence, written to follow the book's
// Python line by line: aiayn_helpers/decoding.py, greedy_decode and _beam_search (the
// batch there is one sentence here, so "n" is 1 and a sentence's rows are its beams).
// tools/ship/export_browser.py's OnnxTranslator.greedy and .beam are the same loops in
// Python over the same ONNX step; the tests check both against ah.translate.
//
// `runner` does the model's work (runner.js): encode(ids) once, then step(tokens,
// position, cache, cross) per position with a key/value cache, and reorder(cache,
// parent) when beams change hands. `stopped()` is asked between steps (the Stop button).

// lp(Y) = ((5 + |Y|) / 6) ** alpha, as ah.length_penalty_gnmt
export const lengthPenaltyGnmt = (length, alpha) => ((5 + length) / 6) ** alpha;

// log_softmax(logits.double() + banned) of row `r`: <pad> and <bos> never proposed
function logSoftmaxRow(logits, r, vocab, banned) {
  const out = new Float64Array(vocab);
  let top = -Infinity;
  for (let v = 0; v < vocab; v++) {
    out[v] = logits[r * vocab + v] + banned[v];
    if (out[v] > top) top = out[v];
  }
  let sum = 0;
  for (let v = 0; v < vocab; v++) sum += Math.exp(out[v] - top);
  const logSum = top + Math.log(sum);
  for (let v = 0; v < vocab; v++) out[v] -= logSum;
  return out;
}

function bannedIds(vocab, ids) {
  const banned = new Float64Array(vocab);
  for (const id of ids) banned[id] = -Infinity;
  return banned;
}

// the paper's rule: at most the source length (with <eos>) + 50 new tokens
const limitOf = (src, cfg) => src.length + cfg.extra_tokens;

export async function greedyDecode(runner, src, cfg, stopped = () => false) {
  const limit = limitOf(src, cfg);
  const cross = await runner.encode(src); // computed once
  let cache = runner.emptyCache(1);
  const ys = [cfg.bos_id];
  const banned = bannedIds(cfg.vocab_size, [cfg.pad_id, cfg.bos_id]);
  for (let step = 1; step <= limit; step++) {
    if (await stopped(step)) throw new Error("stopped");
    const out = await runner.step([ys[ys.length - 1]], step - 1, cache, cross);
    cache = out.cache;
    // argmax of log_softmax(logits + banned) in float32 = argmax of logits + banned
    let next = 0;
    let best = -Infinity;
    for (let v = 0; v < cfg.vocab_size; v++) {
      const s = Math.fround(out.logits[v] + banned[v]);
      if (s > best) {
        best = s;
        next = v;
      }
    }
    if (next === cfg.eos_id) break;
    ys.push(next);
  }
  return ys.slice(1);
}

// options.trace (an array) receives one record per step, as OnnxTranslator.beam's trace
// in tools/ship/export_browser.py (the explorer's step-by-step view shows it): the
// beams going in and their summed log-probabilities, each live beam's `top` next tokens,
// the best 2k candidates with their penalised scores and fate, and beam 0's
// cross-attention in options.layer / options.head (query, keys, scaled scores,
// weights). options.maxLength lowers the limit of source length + 50.
// the `n` largest entries of a row of log-probabilities, [id, logp], largest first
// (equal values: the lower id first, as NumPy's stable argsort of -logp)
function topOf(logp, n) {
  const best = [];
  for (let v = 0; v < logp.length; v++) {
    if (best.length === n && logp[v] <= best[n - 1][1]) continue;
    let at = best.length;
    while (at > 0 && logp[v] > best[at - 1][1]) at--;
    best.splice(at, 0, [v, logp[v]]);
    if (best.length > n) best.pop();
  }
  return best;
}

// beam 0's cross-attention in one layer and head at this step: its query (d_k), the
// source's keys (S x d_k), the scaled scores q.k / sqrt(d_k) and the softmax weights
function crossOfStep(runner, cross, out, layer, head) {
  const H = runner.heads;
  const D = runner.dk;
  const S = cross.length;
  const N = out.crossAttention.dims[1];
  const qAt = ((layer * N + 0) * H + head) * D; // cross_q (L, N, H, 1, d_k)
  const query = Array.from(out.crossQuery.data.subarray(qAt, qAt + D));
  const kAt = (layer * H + head) * S * D; // cross_k (L, 1, H, S, d_k)
  const keys = Array.from({ length: S }, (_, i) => Array.from(cross.k.data.subarray(kAt + i * D, kAt + (i + 1) * D)));
  const scores = keys.map((key) => key.reduce((sum, x, d) => sum + x * query[d], 0) / Math.sqrt(D));
  const wAt = ((layer * N + 0) * H + head) * S; // cross_attn (L, N, H, 1, S)
  const weights = Array.from(out.crossAttention.data.subarray(wAt, wAt + S));
  return { query, keys, scores, weights };
}

export async function beamSearch(runner, src, cfg, k, alpha, stopped = () => false, options = {}) {
  const vocab = cfg.vocab_size;
  const { trace = null, maxLength = null, layer = 0, head = 0, top: topN = 5 } = options;
  const limit = maxLength ? Math.min(limitOf(src, cfg), maxLength) : limitOf(src, cfg);
  // encode and project the cross-attention keys and values once per sentence
  const cross = await runner.encode(src);
  let cache = runner.emptyCache(k);
  let seqs = Array.from({ length: k }, () => [cfg.bos_id]); // every row's <bos> and tokens
  // only beam 0 is real at the start, so that the k beams do not pick the same tokens
  let scores = Array.from({ length: k }, (_, i) => (i === 0 ? 0 : -Infinity));
  let fin = Array.from({ length: k }, () => [-Infinity, []]); // k best finished, best first
  const banned = bannedIds(vocab, [cfg.pad_id, cfg.bos_id]);
  for (let step = 1; step <= limit; step++) {
    if (await stopped(step)) throw new Error("stopped");
    const out = await runner.step(seqs.map((s) => s[s.length - 1]), step - 1, cache, cross);
    // cand = scores[:, :, None] + logp, over k * V; the best 2k, sorted best first
    const top = []; // [score, index], at most 2k
    const nexts = [];
    for (let r = 0; r < k; r++) {
      if (scores[r] === -Infinity) {
        nexts.push([]);
        continue;
      }
      const logp = logSoftmaxRow(out.logits, r, vocab, banned);
      if (trace) nexts.push(topOf(logp, topN));
      for (let v = 0; v < vocab; v++) {
        const s = scores[r] + logp[v];
        if (top.length === 2 * k && s <= top[2 * k - 1][0]) continue;
        let at = top.length;
        while (at > 0 && s > top[at - 1][0]) at--; // equal scores keep the lower index first
        top.splice(at, 0, [s, r * vocab + v]);
        if (top.length > 2 * k) top.pop();
      }
    }
    const topScores = top.map((t) => t[0]);
    const topTok = top.map((t) => t[1] % vocab);
    const topRow = top.map((t) => Math.floor(t[1] / vocab));
    const isEos = topTok.map((t) => t === cfg.eos_id);
    const penalty = lengthPenaltyGnmt(step, alpha);
    // 1) finished hypotheses: the <eos> candidates ranked within the best k
    const fresh = [];
    for (let j = 0; j < k && j < top.length; j++) {
      if (isEos[j]) fresh.push([topScores[j] / penalty, seqs[topRow[j]].slice(1)]);
    }
    // 2) the new beams: the best k candidates that do not end in <eos>, in rank order
    const order = top.map((_, j) => j).filter((j) => !isEos[j]).slice(0, k);
    if (trace) {
      const kept = new Set(order);
      const fate = (j) => (isEos[j] ? (j < k ? "finished" : "dropped") : kept.has(j) ? "kept" : "dropped");
      trace.push({
        step,
        penalty,
        beams: seqs.map((s, r) => [s.slice(1), scores[r]]),
        next: nexts,
        candidates: top.map((t, j) => [topRow[j], topTok[j], topScores[j], topScores[j] / penalty, fate(j)]),
        ...crossOfStep(runner, cross, out, layer, head),
      });
    }
    scores = order.map((j) => topScores[j]);
    const parent = order.map((j) => topRow[j]);
    seqs = order.map((j) => [...seqs[topRow[j]], topTok[j]]); // each row extends its parent
    cache = runner.reorder(out.cache, parent); // ... and inherits its parent's keys and values
    // 3) a sentence out of budget finishes its open beams as they are (no <eos>)
    const atLimit = step >= limit;
    if (atLimit) seqs.forEach((s, j) => fresh.push([scores[j] / penalty, s.slice(1)]));
    // 4) the sentence keeps its k best finished hypotheses (a stable sort: older first)
    fin = [...fin, ...fresh].sort((a, b) => (b[0] > a[0] ? 1 : b[0] < a[0] ? -1 : 0)).slice(0, k);
    // 5) done at its limit, or when it holds k finished hypotheses and its best open
    // beam, penalised now, scores no better than the worst of them
    const worst = fin[k - 1][0];
    if (atLimit || (worst > -Infinity && scores[0] / penalty <= worst)) break;
  }
  return fin[0][1];
}
