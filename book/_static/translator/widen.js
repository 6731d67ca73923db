// The page's float32 weights from the int8 (or float16) ones of weights.bin, widened
// here, in JavaScript, before the sessions are created: the page's graphs
// (encoder.widened.onnx, decoder.widened.onnx) read them as float32, so onnxruntime has
// no Cast and Mul of every weight to fold when it loads them (the slowest part of
// creating the sessions). Each value is the one that folding gives: an int8 value times
// its channel's float32 scale, rounded once to float32 (the product of two float32
// numbers is exact in a double, so Float32Array's rounding is IEEE float32
// multiplication), a float16 value as float32 (exact). tools/ship/export_browser.py
// writes the recipe into translator.json (_Widened.recipe) and widen() in Python does
// the same; tests/test_browser_widen.py compares the two, byte for byte.

// float16 bits -> float32 value (exact: normal, subnormal, infinities, NaN)
function half(bits) {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >> 10) & 0x1f;
  const fraction = bits & 0x3ff;
  if (exponent === 0) return sign * fraction * 2 ** -24;
  if (exponent === 31) return fraction ? NaN : sign * Infinity;
  return sign * (1024 + fraction) * 2 ** (exponent - 25);
}

// n float32 values at byte `at` of `buffer` (a view where aligned, else a copy)
const floats = (buffer, at, n) =>
  at % 4 ? new Float32Array(buffer.slice(at, at + 4 * n)) : new Float32Array(buffer, at, n);

// weights: the bytes of weights.bin (an ArrayBuffer or Uint8Array); recipe: {bytes,
// tensors: [[offset, kind, count, source, scale, columns, axis], ...]} (translator.json's
// "widened"). Returns the bytes of widened.bin as a Uint8Array.
export function widen(weights, recipe) {
  if (!recipe || !Array.isArray(recipe.tensors) || !(recipe.bytes > 0)) {
    throw new Error(`expected translator.json's "widened" recipe (bytes, tensors), got ${JSON.stringify(recipe)?.slice(0, 80)}`);
  }
  const bytes = weights instanceof Uint8Array ? weights : new Uint8Array(weights);
  const buffer = bytes.buffer;
  const base = bytes.byteOffset;
  const out = new Float32Array(recipe.bytes / 4);
  let table = null; // the 65,536 float16 values, made once when needed
  for (const [offset, kind, count, source, scale, columns, axis] of recipe.tensors) {
    const at = offset / 4;
    if (source + count * (kind === "int8" ? 1 : 2) > bytes.length) {
      throw new Error(`weights.bin is too short for the recipe: ${bytes.length} bytes`);
    }
    if (kind === "int8") {
      const q = new Int8Array(buffer, base + source, count);
      const rows = count / columns;
      const s = floats(buffer, base + scale, axis === 1 ? columns : rows);
      if (axis === 1) {
        for (let r = 0, i = 0; r < rows; r++) for (let c = 0; c < columns; c++, i++) out[at + i] = q[i] * s[c];
      } else {
        for (let r = 0, i = 0; r < rows; r++) {
          const k = s[r];
          for (let c = 0; c < columns; c++, i++) out[at + i] = q[i] * k;
        }
      }
    } else if (kind === "float16") {
      if (!table) {
        table = new Float32Array(65536);
        for (let b = 0; b < 65536; b++) table[b] = half(b);
      }
      const bits = (base + source) % 2 ? new Uint16Array(buffer.slice(base + source, base + source + 2 * count))
        : new Uint16Array(buffer, base + source, count); // little-endian, as every browser
      for (let i = 0; i < count; i++) out[at + i] = table[bits[i]];
    } else throw new Error(`expected int8 or float16 weights in the recipe, got ${kind}`);
  }
  return new Uint8Array(out.buffer);
}
