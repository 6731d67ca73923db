// The translator box on the page: a German sentence in, the shipped model's English
// out, computed in the reader's browser. Every element with class "aiayn-translator"
// becomes a box (data-explorer: the explorer page's address, for the link to the
// attention of the reader's sentence). Nothing here runs the model: worker.js does, in a
// Web Worker, loaded when the reader first clicks into a box or presses Translate
// (never on a first visit's plain page view, never by a link; a returning reader's,
// already in the browser's cache, loads while the page is idle: whenReturning).
// Everything the reader types is shown with textContent, never inserted as HTML.
//
// One translation at a time on the page: while one loads or runs, Translate and
// Ctrl+Enter say so instead of starting a second. Stop works in every phase: while the
// model loads it ends the worker (the next press starts the download again from the
// start), while a sentence is encoded or decoded it tells the worker, which stops at its
// next step; either way the box says what it stopped. A failed or incomplete download
// is reported and forgotten: the next press starts again from scratch.
import { inputNotes, MAX_CHARACTERS } from "./notes.js";

export { inputNotes, MAX_CHARACTERS };
const here = new URL(".", import.meta.url).href;

// -- the worker: one per page, started on demand, thrown away when loading fails ------
let worker = null;
let ready = null; // a promise, once loading started; null again after a failure or Stop
let loading = null; // {loaded, total} while the model loads
const waiting = new Map(); // translation id -> {resolve, reject, onPhase}
const progressListeners = new Set();
let nextId = 1;

function forget(reason) {
  if (worker) worker.terminate();
  worker = null;
  ready = null;
  loading = null;
  for (const w of waiting.values()) w.reject(reason);
  waiting.clear();
}

function startWorker() {
  const mine = new Worker(new URL("./worker.js", import.meta.url), { type: "module" });
  worker = mine;
  loading = { loaded: 0, total: 0 };
  const started = performance.now();
  ready = new Promise((resolve, reject) => {
    mine.onmessage = (event) => {
      if (worker !== mine) return; // a worker given up (Stop, failure) is not heard
      const m = event.data;
      if (m.type === "progress") {
        loading = { loaded: m.loaded, total: m.total };
        progressListeners.forEach((f) => f(m.loaded, m.total));
      } else if (m.type === "ready") {
        loading = null;
        resolve({ ...m, pageSeconds: (performance.now() - started) / 1000 });
      } else if (m.type === "phase") waiting.get(m.id)?.onPhase?.(m);
      else if (m.type === "result") waiting.get(m.id)?.resolve(m);
      else if (m.type === "error") {
        if (m.id === undefined) {
          const error = new Error(m.message);
          forget(error);
          reject(error);
        } else waiting.get(m.id)?.reject(Object.assign(new Error(m.message), { stopped: m.stopped }));
      }
    };
    mine.onerror = (event) => {
      event.preventDefault?.();
      if (worker !== mine) return;
      const error = new Error(event.message || "the translator's worker failed to start");
      forget(error);
      reject(error);
    };
  });
  ready.catch(() => {}); // a failure is reported by whoever waits for it
  mine.postMessage({ type: "load" });
  return ready;
}

const load = () => ready || startWorker();

// One translation through the worker (loading it first if needed): the worker's result.
// The sentence is sent at once, loading or not: the worker translates it as soon as it
// is ready (and skips its warm-up, since a translation waits).
async function ask(text, options = {}, onPhase = null) {
  const loaded = load();
  const id = nextId++;
  const answer = new Promise((resolve, reject) => {
    waiting.set(id, { resolve, reject, onPhase });
    worker.postMessage({ type: "translate", id, text, ...options });
  });
  try {
    // a failed load rejects both (forget): Promise.all hears the first and handles both
    return (await Promise.all([loaded, answer]))[1];
  } finally {
    waiting.delete(id);
  }
}
// for tools/bench/bench_browser.py and the tests: load() (the worker's "ready":
// seconds, threads, cached, timings), translate(text, {greedy, beamSize, alpha,
// maxLength, trace, maps}), loaded() (true once the worker is ready: it never loads)
window.aiaynTranslator = { translate: ask, load, busy: () => busy !== null, loaded: () => Boolean(ready) && !loading };

function element(tag, attrs = {}, text = "") {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text) e.textContent = text;
  return e;
}

const MB = (bytes) => (bytes / 1e6).toFixed(1);

// A returning reader, whose browser keeps the runtime and the model from an earlier
// visit (Cache Storage, runner.js), downloads nothing more: their box gets ready while
// the page is idle (compiling, widening the weights, creating the sessions: a second or
// two of one core), so that Translate answers at once. A first visit still waits for
// the reader's click into the box.
// Only when every file of this version is in the cache (after an update of the model or
// the runtime, the next download waits for the click again).
let preloading = false;
function whenReturning() {
  if (preloading || ready || !self.caches) return;
  preloading = true;
  const idle = (f) => (self.requestIdleCallback ? requestIdleCallback(f, { timeout: 3000 }) : setTimeout(f, 500));
  caches.has("aiayn-translator")
    .then(async (has) => has && (await import("./runner.js")).allCached(here + "model/", here + "ort/"))
    .then((returning) => { if (returning) idle(() => { if (!ready) load(); }); })
    .catch(() => {});
}
let busy = null; // the box translating now: one translation at a time on the page

function box(root, index) {
  const id = `aiayn-tr-${index}`;
  root.replaceChildren();
  root.classList.add("tr-box");
  const label = element("label", { for: id }, "A German sentence to translate");
  const hint = element("p", { class: "tr-hint", id: id + "-hint" },
    "Ctrl+Enter (⌘+Enter on a Mac) translates from the box. The model and its runtime (about 23 MB, less where the server compresses them) are fetched from this site when you first click into the box.");
  const input = element("textarea", { id, rows: "2", lang: "de", dir: "auto", spellcheck: "false",
    placeholder: "Zwei Hunde spielen im Schnee.", "aria-describedby": id + "-hint" });
  const translate = element("button", { type: "button", class: "tr-translate" }, "Translate");
  const stop = element("button", { type: "button", class: "tr-stop", "aria-disabled": "true" }, "Stop");
  const greedy = element("input", { type: "checkbox", id: id + "-greedy" });
  const greedyLabel = element("label", { for: id + "-greedy", class: "tr-greedy" });
  greedyLabel.append(greedy, " greedy (beam of 1)");
  const buttons = element("div", { class: "tr-buttons" });
  buttons.append(translate, stop, greedyLabel);
  const progress = element("progress", { max: "1", value: "0", hidden: "", "aria-label": "Loading the model" });
  const progressText = element("p", { class: "tr-progress", hidden: "" });
  // the live region: what happened (status), the English and its notes, announced
  // together when a translation arrives
  const live = element("div", { class: "tr-live", "aria-live": "polite", "aria-atomic": "true" });
  const status = element("p", { class: "tr-status" });
  const output = element("p", { class: "tr-output", hidden: "" });
  const english = element("span", { class: "tr-english", lang: "en", dir: "auto" });
  output.append(element("strong", {}, "English: "), english);
  const notes = element("ul", { class: "tr-notes" });
  live.append(status, output, notes);
  const link = element("p", { class: "tr-link", hidden: "" });
  root.append(label, hint, input, buttons, progress, progressText, live, link);

  const say = (text) => { status.textContent = text; };
  const setNotes = (list) => notes.replaceChildren(...list.map((n) => element("li", {}, n)));
  const setRunning = (on) => {
    translate.setAttribute("aria-disabled", on ? "true" : "false");
    stop.setAttribute("aria-disabled", on ? "false" : "true");
    root.dataset.state = on ? "running" : "idle";
  };
  setRunning(false);

  // without the model files (a site built without Node.js) the box says how to build it
  // (built.json: the build's note, {"model": true} once make book copied the model in)
  let unavailable = null;
  fetch(here + "built.json").then((r) => r.json()).then((built) => {
    if (built.model) return whenReturning();
    unavailable = built.how;
    translate.setAttribute("aria-disabled", "true");
    say(built.how);
  }).catch(() => {});

  const showProgress = (loaded, total) => {
    progress.value = total ? Math.min(1, loaded / total) : 0;
    progressText.textContent = `Loading the model and its runtime: ${MB(loaded)} of ${MB(total)} MB`;
  };
  // the reader's click into the box starts the download (and the runtime's compilation)
  input.addEventListener("focus", () => { if (!unavailable && !ready) load(); }, { once: true });

  let current = null; // {phase, step, limit, stopped} of this box's translation
  async function run() {
    if (unavailable) return say(unavailable);
    if (busy) {
      say(busy === root
        ? "A translation is already running: wait for it, or press Stop."
        : "Another box on this page is translating: wait for it, or press its Stop.");
      return;
    }
    const checked = inputNotes(input.value);
    setNotes([]);
    if (checked.error) {
      say(checked.error);
      input.focus();
      return;
    }
    busy = root;
    const mine = { phase: "loading", step: 0, limit: 0, stopped: false };
    current = mine;
    root.dataset.phase = mine.phase; // the phase Stop would end (data-phase: for the tests)
    setRunning(true);
    output.hidden = true;
    link.hidden = true;
    delete root.dataset.english;
    try {
      const needsLoading = !ready || loading;
      // the attention maps only where the explorer shows them (elsewhere the link to
      // the explorer translates again there)
      const options = { greedy: greedy.checked, maps: Boolean(window.aiaynExplorer) };
      // asked at once: the worker translates the moment it is ready
      const asked = ask(checked.text, options, (m) => {
        Object.assign(mine, m);
        root.dataset.phase = mine.phase;
      });
      asked.catch(() => {}); // heard below, or ended by Stop
      if (needsLoading) {
        progress.hidden = false;
        progressText.hidden = false;
        say("Loading the model and its runtime (once per visit)...");
        progressListeners.add(showProgress);
        if (loading) showProgress(loading.loaded, loading.total);
        await load();
      }
      if (mine.stopped) return;
      if (mine.phase === "loading") mine.phase = root.dataset.phase = "encoding";
      say(greedy.checked ? "Translating (greedy)..." : "Translating (beam search)...");
      const result = await asked;
      if (mine.stopped) return;
      english.textContent = result.english;
      output.hidden = false;
      setNotes([...checked.notes, ...result.notes]);
      say(`Translated in ${result.seconds.toFixed(2)} s in your browser (${greedy.checked ? "greedy" : "beam search"}, ${result.tokens} tokens).`);
      root.dataset.english = result.english;
      if (window.aiaynExplorer) {
        window.aiaynExplorer.add(result.record);
        link.replaceChildren(element("a", { href: "#ae-root" },
          "Its attention, every layer and head, is now the explorer's first sentence, marked [yours]"));
        link.hidden = false;
      } else if (root.dataset.explorer) {
        const a = element("a", { href: root.dataset.explorer + "#translate=" + encodeURIComponent(checked.text) },
          "See every head's attention for this sentence in the attention explorer");
        link.replaceChildren(a);
        link.hidden = false;
      }
    } catch (err) {
      if (mine.stopped) return; // Stop already said what it stopped
      const message = String(err && err.message ? err.message : err);
      say(`The translator failed: ${message}. Press Translate to try again (it starts from the beginning).`);
    } finally {
      // a run that Stop ended was tidied up by Stop, and the box may run another by now
      if (current === mine) {
        current = null;
        progressListeners.delete(showProgress);
        progress.hidden = true;
        progressText.hidden = true;
        if (busy === root) busy = null;
        setRunning(false);
        // focus stays where the reader is: on the button they pressed, or the box
        if (document.activeElement === document.body || document.activeElement === null) input.focus();
      }
    }
  }
  translate.addEventListener("click", () => {
    if (translate.getAttribute("aria-disabled") === "true") {
      if (busy) say("A translation is already running: wait for it, or press Stop.");
      else if (unavailable) say(unavailable);
      return;
    }
    run();
  });
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      run();
    }
  });
  stop.addEventListener("click", () => {
    const mine = current;
    if (!mine || mine.stopped) return;
    mine.stopped = true;
    if (mine.phase === "loading") {
      const got = loading ? ` (${MB(loading.loaded)} of ${MB(loading.total)} MB had arrived)` : "";
      forget(new Error("stopped"));
      say(`Stopped loading the model${got}. Press Translate to start again; the download starts from the beginning.`);
    } else {
      worker?.postMessage({ type: "stop" });
      const where = mine.phase === "decoding"
        ? `decoding, at step ${mine.step} of at most ${mine.limit}`
        : mine.phase === "maps" ? "computing the attention maps" : "encoding the sentence";
      say(`Stopped while ${where}: nothing was translated. Type another sentence or press Translate again.`);
    }
    progressListeners.delete(showProgress);
    progress.hidden = true;
    progressText.hidden = true;
    current = null;
    if (busy === root) busy = null;
    setRunning(false);
  });
  return { input, run, say };
}

// "#translate=..." (the link from another page's box): the sentence is put in the box,
// and nothing starts until the reader presses Translate
export function sentenceFromHash(hash) {
  const match = /^#translate=(.*)$/s.exec(hash || "");
  if (!match) return null;
  try {
    return decodeURIComponent(match[1]).slice(0, MAX_CHARACTERS);
  } catch {
    return { error: "The link's sentence could not be read (it is not valid percent-encoded text)." };
  }
}

function start() {
  if (!document.querySelector('link[href$="translator/translator.css"]')) {
    document.head.appendChild(element("link", { rel: "stylesheet", href: here + "translator.css" }));
  }
  const boxes = [...document.querySelectorAll(".aiayn-translator")].map(box);
  const linked = sentenceFromHash(location.hash);
  if (linked !== null && boxes.length) {
    if (typeof linked === "string") {
      boxes[0].input.value = linked;
      boxes[0].say("The link put this sentence in the box: press Translate to translate it and see its attention.");
    } else boxes[0].say(linked.error);
  }
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
else start();
