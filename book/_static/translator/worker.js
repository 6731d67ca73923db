// The translator's Web Worker: loads the model when the page asks, then translates,
// off the page's main thread (a long sentence never freezes the page). Messages in:
//   {type: "load"}                             load the runtime and the model
//   {type: "translate", id, text, greedy, beamSize, alpha, maxLength, trace, maps}
//                                              translate one sentence (beamSize, alpha:
//                                              the model's own unless given; trace:
//                                              {layer, head}, every step of the beam
//                                              search in the result, with that head's
//                                              cross-attention; maps: false, no
//                                              attention maps in the record)
//   {type: "stop"}                             stop the translation under way (at its
//                                              next phase or decoding step)
// Messages out: {type: "progress", loaded, total}, {type: "ready", info, threads,
// seconds, cached}, {type: "phase", id, phase, step, limit} (phase: "encoding",
// "decoding", "maps"), {type: "result", id, english, notes, record, seconds},
// {type: "error", id, message, stopped}.
import { Tokenizer } from "./tokenizer.js";
import { Runner } from "./runner.js";
import { beamSearch, greedyDecode } from "./beam.js";
import { domainNote } from "./notes.js";

const here = new URL(".", import.meta.url).href;
let runner = null;
let tokenizer = null;
let stop = false;

// Lets the worker read a waiting "stop" message between two decoding steps: a message
// through a MessageChannel is a task, so the loop yields to the worker's queue.
const channel = new MessageChannel();
const pending = [];
channel.port1.onmessage = () => pending.shift()();
const yieldToMessages = () => new Promise((resolve) => { pending.push(resolve); channel.port2.postMessage(0); });

async function load() {
  const start = performance.now();
  runner = await Runner.load(here + "model/", here + "ort/", (loaded, total) =>
    postMessage({ type: "progress", loaded, total }));
  tokenizer = new Tokenizer(runner.tokenizerJson);
  // a first, short beam search (three steps of a sentence no reader is shown) while the
  // reader still types: the runtime's code for the model's shapes is compiled and warm
  // by the time they press Translate (the first translation was twice the later ones);
  // skipped when a translation already waits (it warms the code itself, and sooner)
  const warm = performance.now();
  const info = runner.info;
  if (!waitingTranslations) {
    await beamSearch(runner, [...tokenizer.encode("Ein Hund läuft."), info.eos_id], info, info.beam_size,
      info.length_penalty, async () => false, { trace: null, maxLength: 3 });
  }
  runner.timings.warmup = (performance.now() - warm) / 1000;
  postMessage({ type: "ready", info: runner.info, threads: runner.threads, cached: runner.cached,
    seconds: (performance.now() - start) / 1000, timings: runner.timings });
}

class Stopped extends Error {
  constructor(phase) {
    super("stopped");
    this.phase = phase;
  }
}

async function translate({ id, text, greedy, beamSize, alpha, maxLength, trace, maps: withMaps = true }) {
  const start = performance.now();
  const info = runner.info;
  stop = false;
  const phase = async (name, step = 0, limit = 0) => {
    postMessage({ type: "phase", id, phase: name, step, limit });
    await yieldToMessages();
    if (stop) throw new Stopped(name);
  };
  const notes = [];
  let ids = tokenizer.encode(text);
  const { unknown, total } = tokenizer.graphemes(text);
  if (unknown) notes.push(`${unknown} character(s) the model never saw in training (emoji, other alphabets) became <unk>.`);
  if (unknown * 2 > total) notes.push("Most of this text is unknown to the model: it learned German image captions only.");
  else {
    const note = domainNote(ids.map((i) => tokenizer.token(i)));
    if (note) notes.push(note);
  }
  const most = info.max_source_tokens - 1; // with <eos>
  if (ids.length > most) {
    ids = ids.slice(0, most);
    notes.push(`Only the first ${most} tokens were translated: the model's limit (it was trained on one-sentence captions).`);
  }
  const src = [...ids, info.eos_id];
  await phase("encoding");
  const limit = src.length + info.extra_tokens;
  const stopped = async (step) => {
    await phase("decoding", step, limit);
    return false;
  };
  // trace ({layer, head}): every step of the beam search, for the step-by-step view
  const steps = trace ? [] : null;
  const output = !trace && (greedy || beamSize === 1)
    ? await greedyDecode(runner, src, info, stopped)
    : await beamSearch(runner, src, info, beamSize || info.beam_size, alpha ?? info.length_penalty, stopped,
      { trace: steps, maxLength, layer: trace?.layer ?? 0, head: trace?.head ?? 0 });
  const seconds = (performance.now() - start) / 1000; // tokenizing and decoding
  const english = tokenizer.decode(output);
  // every attention map of the translation, for the explorer (maps: false, the pages
  // without one: the English comes a third sooner)
  let maps = null;
  if (withMaps) {
    await phase("maps");
    maps = await runner.attention(src, output);
  }
  const mapsSeconds = (performance.now() - start) / 1000;
  const record = {
    german: text,
    english,
    source: src.map((i) => tokenizer.token(i)),
    target: ["<bos>", ...output.map((i) => tokenizer.token(i))],
    output: [...output.map((i) => tokenizer.token(i)), "<eos>"],
    maps,
  };
  let words = null; // the token of every id the trace names
  if (steps) {
    words = {};
    for (const s of steps) {
      for (const [ids] of s.beams) for (const i of ids) words[i] = tokenizer.token(i);
      for (const row of s.next) for (const [i] of row) words[i] = tokenizer.token(i);
      for (const c of s.candidates) words[c[1]] = tokenizer.token(c[1]);
    }
  }
  postMessage({ type: "result", id, english, notes, record, seconds, withMaps: mapsSeconds, tokens: output.length,
    output, source: record.source, trace: steps, words, threads: runner.threads });
}

let queue = Promise.resolve();
let waitingTranslations = 0; // translations asked for and not yet started
onmessage = (event) => {
  const message = event.data;
  if (message.type === "stop") {
    stop = true;
    return;
  }
  if (message.type === "translate") waitingTranslations++;
  queue = queue.then(async () => {
    try {
      if (message.type === "load") await load();
      else if (message.type === "translate") {
        waitingTranslations--;
        await translate(message);
      }
    } catch (err) {
      postMessage({ type: "error", id: message.id, stopped: err instanceof Stopped ? err.phase : undefined,
        message: String(err && err.message ? err.message : err) });
    }
  });
};
