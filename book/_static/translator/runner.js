// The model's part of translating, with ONNX Runtime Web (WebAssembly, on the CPU):
// the two graphs tools/ship/export_browser.py writes from the shipped weights.
//   encode(ids)      encoder.onnx: the source once -> every decoder layer's
//                    cross-attention keys and values (chapter 8's cache), and the
//                    encoder's self-attention weights
//   step(...)        decoder.onnx: the newest token of each row -> next-token logits,
//                    the key/value cache one position longer, the step's attention
//   reorder(...)     beam search hands a beam's cache to its children (KVCache.reorder)
// Runs inside the Web Worker (worker.js), never on the page's main thread.
import { widen } from "./widen.js";

const nameOf = (url) => url.split("/").pop();

const get = async (url, onBytes) => {
  let response;
  try {
    response = await fetch(url);
  } catch (err) {
    throw new Error(`${nameOf(url)} could not be downloaded (${err.message})`);
  }
  if (!response.ok) throw new Error(`${nameOf(url)}: HTTP ${response.status}`);
  if (!onBytes || !response.body) return new Uint8Array(await response.arrayBuffer());
  const reader = response.body.getReader();
  const parts = [];
  let size = 0;
  for (;;) {
    let chunk;
    try {
      chunk = await reader.read();
    } catch (err) {
      throw new Error(`${nameOf(url)}: the download broke off after ${size} bytes (${err.message})`);
    }
    const { done, value } = chunk;
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

// The browser's Cache Storage keeps the runtime and the model between visits, each
// file under its address and version (the model's SHA-256 from translator.json, the
// runtime's size and ETag or Last-Modified), so a second visit downloads nothing; a
// file is stored only once it arrived whole (its size checked), and a newer version
// replaces the older. Where Cache Storage is missing (an insecure origin) or full,
// the files are simply downloaded.
const CACHE = "aiayn-translator";
const keyOf = (url, version) => `${url}?v=${encodeURIComponent(version)}`;

// The runtime's version: its size and ETag (or Last-Modified), from a HEAD request.
async function runtimeVersion(wasmUrl) {
  const head = await fetch(wasmUrl, { method: "HEAD", cache: "no-cache" }).catch((err) => {
    throw new Error(`the runtime could not be reached (${err.message})`);
  });
  const size = +(head.headers.get("content-length") || 0);
  return { size, version: `${size}-${head.headers.get("etag") || head.headers.get("last-modified") || ""}` };
}

const readInfo = (base) => fetch(base + "translator.json", { cache: "no-cache" }).catch((err) => {
  throw new Error(`translator.json could not be downloaded (${err.message})`);
}).then((r) => {
  if (!r.ok) throw new Error(`translator.json: HTTP ${r.status}`);
  return r.json();
});

// True when Cache Storage holds this version of every file the load would download (a
// returning reader's box may then load while the page is idle: nothing is downloaded
// but translator.json and a HEAD of the runtime); false otherwise, never an error.
export async function allCached(base, ortBase) {
  try {
    if (!self.caches || !(await caches.has(CACHE))) return false;
    const cache = await caches.open(CACHE);
    const wasmUrl = ortBase + "ort-wasm-simd-threaded.wasm";
    const [info, wasm] = await Promise.all([readInfo(base), runtimeVersion(wasmUrl)]);
    const keys = [keyOf(wasmUrl, wasm.version), ...info.page_files.map((f) => keyOf(base + f, info.sha256[f]))];
    const hits = await Promise.all(keys.map((k) => cache.match(k)));
    return hits.every(Boolean);
  } catch {
    return false;
  }
}

async function fetchOnce(url, version, size, onBytes) {
  let cache = null;
  try {
    cache = await caches.open(CACHE);
  } catch {
    cache = null;
  }
  const key = keyOf(url, version);
  if (cache) {
    const hit = await cache.match(key).catch(() => null);
    if (hit) {
      const bytes = new Uint8Array(await hit.arrayBuffer());
      if (!size || bytes.length === size) {
        onBytes(bytes.length);
        return { bytes, cached: true };
      }
    }
  }
  const bytes = await get(url, onBytes);
  if (size && bytes.length !== size) {
    throw new Error(`${nameOf(url)} arrived incomplete: ${bytes.length} of ${size} bytes`);
  }
  if (cache) {
    try {
      for (const old of await cache.keys()) if (old.url.split("?")[0] === url) await cache.delete(old);
      await cache.put(key, new Response(bytes));
    } catch {
      // a full or refused cache: the next visit downloads again
    }
  }
  return { bytes, cached: false };
}

export class Runner {
  // base: the folder of the model files; ortBase: the runtime's folder.
  // onProgress(loaded, total) in bytes.
  static async load(base, ortBase, onProgress = () => {}) {
    const t0 = performance.now();
    const wasmUrl = ortBase + "ort-wasm-simd-threaded.wasm";
    // the runtime's module, the model's description and the runtime's size at once
    const [ort, info, { size: wasmSize, version: wasmVersion }] = await Promise.all([
      import(ortBase + "ort.wasm.min.mjs"),
      readInfo(base),
      runtimeVersion(wasmUrl),
    ]);
    const pageFiles = info.page_files;
    const total = pageFiles.reduce((a, f) => a + info.bytes[f], 0) + wasmSize;
    let loaded = 0;
    const tick = (n) => onProgress((loaded += n), total);
    const model = (f) => fetchOnce(base + f, info.sha256[f], info.bytes[f], tick);
    const timings = {};
    const since = (t) => (performance.now() - t) / 1000;
    // the runtime is compiled as soon as it arrives, while the model still downloads
    const runtime = fetchOnce(wasmUrl, wasmVersion, wasmSize, tick).then(async (file) => {
      const t = performance.now();
      const module = await WebAssembly.compile(file.bytes);
      timings.compile = since(t);
      return { ...file, module };
    });
    // the page's float32 weights, widened from weights.bin as soon as it arrives
    const weights = model("weights.bin").then((file) => {
      const t = performance.now();
      const widened = widen(file.bytes, info.widened);
      timings.widen = since(t);
      return { ...file, widened };
    });
    const files = await Promise.all([runtime, weights, ...pageFiles.filter((f) => f !== "weights.bin").map(model)]);
    const [wasm, w] = files;
    const graphs = Object.fromEntries(pageFiles.filter((f) => f !== "weights.bin").map((f, i) => [f, files[i + 2].bytes]));
    timings.files = since(t0);
    const t1 = performance.now();
    // one thread unless the page is cross-origin isolated (GitHub Pages is not)
    ort.env.wasm.numThreads = self.crossOriginIsolated ? Math.min(4, navigator.hardwareConcurrency || 1) : 1;
    ort.env.wasm.wasmBinary = wasm.bytes.buffer;
    ort.env.wasm.wasmPaths = ortBase;
    ort.env.logLevel = "error";
    // the runtime instantiates its binary: the module compiled above is used instead of
    // compiling the same bytes again (this worker's WebAssembly, for that buffer only)
    const instantiate = WebAssembly.instantiate;
    WebAssembly.instantiate = (what, imports) => (what?.buffer ?? what) === wasm.bytes.buffer
      ? instantiate(wasm.module, imports).then((instance) => ({ instance, module: wasm.module }))
      : instantiate(what, imports);
    // "basic": the graphs' few constants folded, no fusions; with the weights widened
    // already, the fusions of "all" (the default) cost more while the sessions are
    // created than they save on a sentence (tools/bench/bench_browser.py's phases)
    const options = {
      executionProviders: ["wasm"],
      graphOptimizationLevel: "basic",
      externalData: [{ path: "weights.bin", data: w.bytes }, { path: "widened.bin", data: w.widened }],
    };
    const runner = new Runner(ort, info);
    try {
      runner.encoder = await ort.InferenceSession.create(graphs["encoder.widened.onnx"], options);
      runner.decoder = await ort.InferenceSession.create(graphs["decoder.widened.onnx"], options);
    } finally {
      WebAssembly.instantiate = instantiate;
    }
    timings.sessions = since(t1);
    runner.tokenizerJson = JSON.parse(new TextDecoder().decode(graphs["tokenizer.json"]));
    runner.threads = ort.env.wasm.numThreads;
    runner.cached = files.every((f) => f.cached);
    runner.timings = timings;
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
      crossQuery: out.cross_q,
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
