// The book's BPE tokenizer (chapter 7) in JavaScript: the same ids as the Python
// `tokenizers` library gives for the shipped model's tokenizer.json, which this module
// reads. Its steps are that file's, in order (tests/test_browser.py compares the ids on
// the whole test2016 source side, under node):
//   1. the special tokens (<pad>, <bos>, <eos>, <unk>) typed as text are cut out first
//      and become their own ids, as the library's "added tokens" are;
//   1b. the file's normalizer on the rest: NFC (a decomposed "a" + U+0308 becomes "ä")
//      and its Replace of the zero-width characters by nothing (aiayn_helpers.data's
//      ZERO_WIDTH_CHARACTERS), read from the file, so both sides apply the same steps;
//   2. Metaspace: every space becomes "▁", and "▁" is put before the text;
//      the text is split before each "▁" (a word keeps its "▁");
//   3. Punctuation, isolated: each punctuation character becomes a piece of its own;
//   4. BPE: each piece starts as its characters (one not in the vocabulary is <unk>),
//      then the adjacent pair with the earliest merge in the file's list is merged,
//      leftmost first, until no listed pair is left.
// decode() reverses it: special tokens dropped, "▁" back to spaces, the first removed.

const SPACE = "\u2581";

// Rust's char::is_ascii_punctuation() or a Unicode punctuation category (P*), which
// is how the library's Punctuation pre-tokenizer decides
const ASCII_PUNCTUATION = new Set("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~");
const isPunctuation = (ch) => ASCII_PUNCTUATION.has(ch) || /\p{P}/u.test(ch);

export class Tokenizer {
  constructor(json) {
    const model = json.model;
    if (!model || model.type !== "BPE") throw new Error("tokenizer.json: a BPE model expected");
    this.vocab = new Map(Object.entries(model.vocab));
    this.tokens = [];
    for (const [token, id] of this.vocab) this.tokens[id] = token;
    this.unk = this.vocab.get(model.unk_token);
    // a merge "a b" -> its rank (earlier merges first)
    this.ranks = new Map();
    model.merges.forEach((m, rank) => {
      const pair = Array.isArray(m) ? m : m.split(" ");
      this.ranks.set(pair[0] + " " + pair[1], rank);
    });
    this.special = new Map();
    for (const t of json.added_tokens || []) {
      this.special.set(t.content, t.id);
      this.tokens[t.id] = t.content;
    }
    this.specialIds = new Set(this.special.values());
    this.cache = new Map();
    this.normalize = normalizer(json.normalizer);
  }

  // text -> ids (no <eos>: the runner appends it, as encode_sources does)
  encode(text) {
    const ids = [];
    for (const [segment, special] of this.splitSpecial(text)) {
      if (special) ids.push(this.special.get(segment));
      else for (const piece of this.preTokenize(this.normalize(segment))) ids.push(...this.bpe(piece));
    }
    return ids;
  }

  // [text, isSpecial] segments, the special tokens cut out (leftmost, longest first)
  splitSpecial(text) {
    const out = [];
    let start = 0;
    let i = 0;
    while (i < text.length) {
      let found = null;
      for (const s of this.special.keys()) {
        if (text.startsWith(s, i) && (!found || s.length > found.length)) found = s;
      }
      if (found) {
        if (i > start) out.push([text.slice(start, i), false]);
        out.push([found, true]);
        i += found.length;
        start = i;
      } else {
        i += 1;
      }
    }
    if (start < text.length) out.push([text.slice(start), false]);
    return out;
  }

  preTokenize(text) {
    let s = text.replaceAll(" ", SPACE);
    if (!s.startsWith(SPACE)) s = SPACE + s;
    const words = [];
    let word = "";
    for (const ch of s) {
      if (ch === SPACE && word !== "") {
        words.push(word);
        word = "";
      }
      word += ch;
    }
    if (word !== "") words.push(word);
    const pieces = [];
    for (const w of words) {
      let run = "";
      for (const ch of w) {
        if (isPunctuation(ch)) {
          if (run) pieces.push(run);
          pieces.push(ch);
          run = "";
        } else {
          run += ch;
        }
      }
      if (run) pieces.push(run);
    }
    return pieces;
  }

  bpe(piece) {
    const cached = this.cache.get(piece);
    if (cached) return cached;
    let symbols = Array.from(piece);
    for (;;) {
      let best = -1;
      let bestRank = Infinity;
      for (let i = 0; i + 1 < symbols.length; i++) {
        const rank = this.ranks.get(symbols[i] + " " + symbols[i + 1]);
        if (rank !== undefined && rank < bestRank) {
          bestRank = rank;
          best = i;
        }
      }
      if (best < 0) break;
      symbols = [...symbols.slice(0, best), symbols[best] + symbols[best + 1], ...symbols.slice(best + 2)];
    }
    const ids = symbols.map((s) => (this.vocab.has(s) ? this.vocab.get(s) : this.unk));
    if (this.cache.size < 20000) this.cache.set(piece, ids);
    return ids;
  }

  // ids -> text, as tokenizer.decode(ids, skip_special_tokens=True)
  decode(ids) {
    const words = ids.filter((id) => !this.specialIds.has(id)).map((id) => this.tokens[id]);
    return words
      .map((t, i) => {
        const w = t.replaceAll(SPACE, " ");
        return i === 0 && w.startsWith(" ") ? w.slice(1) : w;
      })
      .join("");
  }

  token(id) {
    return this.tokens[id];
  }

  // {unknown, total}: the grapheme clusters of `text` (what a reader sees as one
  // character: an emoji joined by U+200D is one) that are not spaces, and those of them
  // the model cannot read (a character of it, normalised, is not in the vocabulary)
  graphemes(text) {
    const segmenter = new Intl.Segmenter(undefined, { granularity: "grapheme" });
    let unknown = 0;
    let total = 0;
    for (const { segment } of segmenter.segment(text)) {
      const chars = Array.from(this.normalize(segment)).filter((c) => !/\s/u.test(c));
      if (!chars.length) continue;
      total += 1;
      if (chars.some((c) => !this.vocab.has(c))) unknown += 1;
    }
    return { unknown, total };
  }
}

// the file's normalizer as a function of a string (the types the book's files use)
function normalizer(spec) {
  if (!spec) return (s) => s;
  if (spec.type === "Sequence") {
    const steps = spec.normalizers.map(normalizer);
    return (s) => steps.reduce((t, f) => f(t), s);
  }
  if (spec.type === "NFC") return (s) => s.normalize("NFC");
  if (spec.type === "Replace") {
    const p = spec.pattern;
    const re = p.Regex !== undefined ? new RegExp(p.Regex, "gu") : new RegExp(p.String.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), "gu");
    return (s) => s.replace(re, spec.content);
  }
  throw new Error(`tokenizer.json: normalizer ${spec.type} is not supported here`);
}
