// The model's part of translating, with ONNX Runtime Web (WebAssembly, on the CPU):
// the two graphs tools/ship/export_browser.py writes from the shipped weights.
//   encode(ids)      encoder.onnx: the source once -> every decoder layer's
//                    cross-attention keys and values (chapter 8's cache), and the
//                    encoder's self-attention weights
//   step(...)        decoder.onnx: the newest token of each row -> next-token logits,
//                    the key/value cache one position longer, the step's attention
//   reorder(...)     beam search hands a beam's cache to its children (KVCache.reorder)
// Runs inside the Web Worker (worker.js), never on the page's main thread.

const get = async (url, onBytes) => {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  if (!onBytes || !response.body) return new Uint8Array(await response.arrayBuffer());
  const reader = response.body.getReader();
  const parts = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    parts.push(value);
    size += value.length;
    onBytes(value.length);
  }
  const all = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    all.set(p, at);
    at += p.length;
  }
  return all;
};

export class Runner {
  // base: the folder of the model files; ortBase: the runtime's folder.
  // onProgress(loaded, total) in bytes.
  static async load(base, ortBase, onProgress = () => {}) {
    const ort = await import(ortBase + "ort.wasm.min.mjs");
    const info = await (await fetch(base + "translator.json")).json();
    const wasmUrl = ortBase + "ort-wasm-simd-threaded.wasm";
    const wasmSize = +((await fetch(wasmUrl, { method: "HEAD" })).headers.get("content-length") || 0);
    const total = Object.values(info.bytes).reduce((a, b) => a + b, 0) + wasmSize;
    let loaded = 0;
    const tick = (n) => onProgress((loaded += n), total);
    const [wasm, weights, encoder, decoder, tokenizer] = await Promise.all([
      get(wasmUrl, tick),
      get(base + "weights.bin", tick),
      get(base + "encoder.onnx", tick),
      get(base + "decoder.onnx", tick),
      get(base + "tokenizer.json", tick),
    ]);
    // one thread unless the page is cross-origin isolated (GitHub Pages is not)
    ort.env.wasm.numThreads = self.crossOriginIsolated ? Math.min(4, navigator.hardwareConcurrency || 1) : 1;
    ort.env.wasm.wasmBinary = wasm.buffer;
    ort.env.wasm.wasmPaths = ortBase;
    ort.env.logLevel = "error";
    const options = { executionProviders: ["wasm"], externalData: [{ path: "weights.bin", data: weights }] };
    const runner = new Runner(ort, info);
    runner.encoder = await ort.InferenceSession.create(encoder, options);
    runner.decoder = await ort.InferenceSession.create(decoder, options);
    runner.tokenizerJson = JSON.parse(new TextDecoder().decode(tokenizer));
    runner.threads = ort.env.wasm.numThreads;
    return runner;
  }

  constructor(ort, info) {
    this.ort = ort;
    this.info = info;
    this.layers = info.num_layers;
    this.heads = info.num_heads;
    this.dk = info.d_model / info.num_heads;
  }

  async encode(ids) {
    const src = new this.ort.Tensor("int64", BigInt64Array.from(ids, BigInt), [1, ids.length]);
    const out = await this.encoder.run({ src });
    return { k: out.cross_k, v: out.cross_v, attention: out.enc_attn, length: ids.length };
  }

  // an empty self-attention cache of `rows` rows: (L, rows, H, 0, d_k)
  emptyCache(rows) {
    const dims = [this.layers, rows, this.heads, 0, this.dk];
    const empty = () => new this.ort.Tensor("float32", new Float32Array(0), dims);
    return { k: empty(), v: empty() };
  }

  async step(tokens, position, cache, cross) {
    const T = this.ort.Tensor;
    const out = await this.decoder.run({
      token: new T("int64", BigInt64Array.from(tokens, BigInt), [tokens.length, 1]),
      position: new T("int64", BigInt64Array.from([position], BigInt), [1]),
      past_k: cache.k,
      past_v: cache.v,
      cross_k: cross.k,
      cross_v: cross.v,
    });
    return {
      logits: out.logits.data,
      cache: { k: out.present_k, v: out.present_v },
      selfAttention: out.self_attn,
      crossAttention: out.cross_attn,
    };
  }

  // rows `parent` of the cache (L, N, H, T, d_k), in that order: row j <- row parent[j]
  reorder(cache, parent) {
    const pick = (tensor) => {
      const [L, N, H, T, D] = tensor.dims;
      const block = H * T * D;
      const from = tensor.data;
      const to = new Float32Array(L * parent.length * block);
      for (let l = 0; l < L; l++) {
        parent.forEach((p, j) => {
          to.set(from.subarray((l * N + p) * block, (l * N + p + 1) * block), (l * parent.length + j) * block);
        });
      }
      return new this.ort.Tensor("float32", to, [L, parent.length, H, T, D]);
    };
    return { k: pick(cache.k), v: pick(cache.v) };
  }

  // Every attention map of a translation: the step model run again on its own tokens
  // (teacher forcing, as aiayn_helpers.explorer.attention_maps does), each weight times
  // `scale` and rounded. maps[kind][layer][head] is a list of rows.
  async attention(src, output, scale = 100) {
    const cross = await this.encode(src);
    const tokens = [this.info.bos_id, ...output];
    const S = src.length;
    const t = tokens.length;
    const L = this.layers;
    const H = this.heads;
    const grid = (rows, cols) =>
      Array.from({ length: L }, () => Array.from({ length: H }, () => Array.from({ length: rows }, () => new Array(cols).fill(0))));
    const encoder = grid(S, S);
    const decoder = grid(t, t);
    const crossMaps = grid(t, S);
    const e = cross.attention.data; // (L, 1, H, S, S)
    for (let l = 0; l < L; l++)
      for (let h = 0; h < H; h++)
        for (let i = 0; i < S; i++)
          for (let j = 0; j < S; j++) encoder[l][h][i][j] = Math.round(e[((l * H + h) * S + i) * S + j] * scale);
    let cache = this.emptyCache(1);
    for (let step = 0; step < t; step++) {
      const out = await this.step([tokens[step]], step, cache, cross);
      cache = out.cache;
      const a = out.selfAttention.data; // (L, 1, H, 1, step + 1)
      const c = out.crossAttention.data; // (L, 1, H, 1, S)
      for (let l = 0; l < L; l++)
        for (let h = 0; h < H; h++) {
          for (let j = 0; j <= step; j++) decoder[l][h][step][j] = Math.round(a[(l * H + h) * (step + 1) + j] * scale);
          for (let j = 0; j < S; j++) crossMaps[l][h][step][j] = Math.round(c[(l * H + h) * S + j] * scale);
        }
    }
    return { encoder, decoder, cross: crossMaps };
  }
}
