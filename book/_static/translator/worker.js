// The translator's Web Worker: loads the model when the page asks, then translates,
// off the page's main thread (a long sentence never freezes the page). Messages in:
//   {type: "load"}                             load the runtime and the model
//   {type: "translate", id, text, greedy, beamSize}  translate one sentence (beamSize:
//                                              the model's own unless given)
//   {type: "stop"}                             stop the translation under way
// Messages out: {type: "progress", loaded, total}, {type: "ready", info, threads,
// seconds}, {type: "result", id, english, notes, record, seconds}, {type: "error", id,
// message}.
import { Tokenizer } from "./tokenizer.js";
import { Runner } from "./runner.js";
import { beamSearch, greedyDecode } from "./beam.js";

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
const stopped = async () => {
  await yieldToMessages();
  return stop;
};

async function load() {
  const start = performance.now();
  runner = await Runner.load(here + "model/", here + "ort/", (loaded, total) =>
    postMessage({ type: "progress", loaded, total }));
  tokenizer = new Tokenizer(runner.tokenizerJson);
  postMessage({ type: "ready", info: runner.info, threads: runner.threads, seconds: (performance.now() - start) / 1000 });
}

async function translate({ id, text, greedy, beamSize }) {
  const start = performance.now();
  const info = runner.info;
  const notes = [];
  let ids = tokenizer.encode(text);
  const unknown = ids.filter((i) => i === tokenizer.unk).length;
  if (unknown) notes.push(`${unknown} character(s) the model never saw in training (emoji, other alphabets) became <unk>.`);
  if (unknown * 2 > ids.length) notes.push("Most of this text is unknown to the model: it learned German image captions only.");
  const most = info.max_source_tokens - 1; // with <eos>
  if (ids.length > most) {
    ids = ids.slice(0, most);
    notes.push(`Only the first ${most} tokens were translated: the model's limit (it was trained on one-sentence captions).`);
  }
  const src = [...ids, info.eos_id];
  stop = false;
  const output = greedy
    ? await greedyDecode(runner, src, info, stopped)
    : await beamSearch(runner, src, info, beamSize || info.beam_size, info.length_penalty, stopped);
  const seconds = (performance.now() - start) / 1000; // tokenizing and decoding
  const english = tokenizer.decode(output);
  const maps = await runner.attention(src, output);
  const withMaps = (performance.now() - start) / 1000;
  const record = {
    german: text,
    english,
    source: src.map((i) => tokenizer.token(i)),
    target: ["<bos>", ...output.map((i) => tokenizer.token(i))],
    output: [...output.map((i) => tokenizer.token(i)), "<eos>"],
    maps,
  };
  postMessage({ type: "result", id, english, notes, record, seconds, withMaps, tokens: output.length, threads: runner.threads });
}

let queue = Promise.resolve();
onmessage = (event) => {
  const message = event.data;
  if (message.type === "stop") {
    stop = true;
    return;
  }
  queue = queue.then(async () => {
    try {
      if (message.type === "load") await load();
      else if (message.type === "translate") await translate(message);
    } catch (err) {
      postMessage({ type: "error", id: message.id, message: String(err && err.message ? err.message : err) });
    }
  });
};
