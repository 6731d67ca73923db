// The translator box on the page: a German sentence in, the shipped model's English
// out, computed in the reader's browser. Every element with class "aiayn-translator"
// becomes a box (data-explorer: the explorer page's address, for the link to the
// attention of the reader's sentence). Nothing here runs the model: worker.js does, in a
// Web Worker, loaded on the first Translate (never on a plain page view). Everything the
// reader types is shown with textContent, never inserted as HTML.
const here = new URL(".", import.meta.url).href;
const MAX_CHARACTERS = 2000;

let worker = null;
let ready = null; // a promise, once loading started
const waiting = new Map(); // translation id -> {resolve, reject}
let progressListeners = [];
let nextId = 1;

function startWorker() {
  worker = new Worker(new URL("./worker.js", import.meta.url), { type: "module" });
  ready = new Promise((resolve, reject) => {
    worker.onmessage = (event) => {
      const m = event.data;
      if (m.type === "progress") progressListeners.forEach((f) => f(m.loaded, m.total));
      else if (m.type === "ready") resolve(m);
      else if (m.type === "result") waiting.get(m.id)?.resolve(m);
      else if (m.type === "error") {
        if (m.id === undefined) reject(new Error(m.message));
        else waiting.get(m.id)?.reject(new Error(m.message));
      }
    };
    worker.onerror = (event) => reject(new Error(event.message || "the translator's worker failed to start"));
  });
  worker.postMessage({ type: "load" });
  return ready;
}

// One translation through the worker (loading it first if needed): the worker's result.
async function ask(text, options = {}) {
  if (!ready) startWorker();
  await ready;
  const message = nextId++;
  try {
    return await new Promise((resolve, reject) => {
      waiting.set(message, { resolve, reject });
      worker.postMessage({ type: "translate", id: message, text, ...options });
    });
  } finally {
    waiting.delete(message);
  }
}
// for tools/bench/bench_browser.py: load() (the worker's "ready": seconds, threads) and
// translate(text, {greedy, beamSize})
window.aiaynTranslator = { translate: ask, load: () => ready || startWorker() };

function element(tag, attrs = {}, text = "") {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text) e.textContent = text;
  return e;
}

// a message about the input, or null: empty text, too long, markup, unusual characters
export function inputNotes(text) {
  const notes = [];
  if (!text.trim()) return { error: "Type a German sentence first (the box is empty).", notes };
  if (text.length > MAX_CHARACTERS) {
    notes.push(`Your text had ${text.length} characters; only the first ${MAX_CHARACTERS} were read.`);
    text = text.slice(0, MAX_CHARACTERS);
  }
  if (/<\/?[a-z!][^>]*>/i.test(text)) notes.push("Markup such as <script> is translated as plain text: nothing you type is run or inserted as HTML.");
  if (/\p{Extended_Pictographic}/u.test(text)) notes.push("Emoji are not in the model's vocabulary: each becomes <unk>.");
  return { error: null, notes, text };
}

function box(root, index) {
  const id = `aiayn-tr-${index}`;
  root.replaceChildren();
  root.classList.add("tr-box");
  const label = element("label", { for: id }, "A German sentence to translate");
  const input = element("textarea", { id, rows: "2", lang: "de", spellcheck: "false",
    placeholder: "Zwei Hunde spielen im Schnee." });
  const translate = element("button", { type: "button", class: "tr-translate" }, "Translate");
  const stop = element("button", { type: "button", class: "tr-stop", disabled: "" }, "Stop");
  const greedy = element("input", { type: "checkbox", id: id + "-greedy" });
  const greedyLabel = element("label", { for: id + "-greedy", class: "tr-greedy" });
  greedyLabel.append(greedy, " greedy (beam of 1)");
  const buttons = element("div", { class: "tr-buttons" });
  buttons.append(translate, stop, greedyLabel);
  const progress = element("progress", { max: "1", value: "0", hidden: "", "aria-label": "Loading the model" });
  const status = element("p", { class: "tr-status", role: "status", "aria-live": "polite" });
  const output = element("p", { class: "tr-output", lang: "en", hidden: "" });
  const english = element("span", { class: "tr-english" });
  output.append(element("strong", {}, "English: "), english);
  const notes = element("ul", { class: "tr-notes" });
  const link = element("p", { class: "tr-link", hidden: "" });
  root.append(label, input, buttons, progress, status, output, notes, link);

  const say = (text) => { status.textContent = text; };
  const setNotes = (list) => notes.replaceChildren(...list.map((n) => element("li", {}, n)));

  // without the model files (a site built without Node.js) the box says how to build it
  // (built.json: the build's note, {"model": true} once make book copied the model in)
  fetch(here + "built.json").then((r) => r.json()).then((built) => {
    if (built.model) return;
    translate.disabled = true;
    say(built.how);
  }).catch(() => {});

  let current = null;
  async function run() {
    const checked = inputNotes(input.value);
    setNotes([]);
    if (checked.error) {
      say(checked.error);
      input.focus();
      return;
    }
    translate.disabled = true;
    stop.disabled = false;
    output.hidden = true;
    link.hidden = true;
    try {
      if (!ready) {
        progress.hidden = false;
        say("Loading the model and its runtime (once per visit)...");
        progressListeners.push((loaded, total) => {
          progress.value = total ? Math.min(1, loaded / total) : 0;
          say(`Loading the model and its runtime: ${(loaded / 1e6).toFixed(1)} of ${(total / 1e6).toFixed(1)} MB`);
        });
        startWorker();
      }
      await ready;
      progress.hidden = true;
      say(greedy.checked ? "Translating (greedy)..." : "Translating (beam search)...");
      current = true;
      const result = await ask(checked.text, { greedy: greedy.checked });
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
      progress.hidden = true;
      if (String(err.message) === "stopped") say("Stopped. Type another sentence or press Translate again.");
      else {
        say("The translator failed: " + err.message);
        ready = ready && err.message.includes("worker") ? null : ready;
      }
    } finally {
      translate.disabled = false;
      stop.disabled = true;
      current = null;
    }
  }
  translate.addEventListener("click", run);
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      run();
    }
  });
  stop.addEventListener("click", () => {
    if (!worker || current === null) return;
    worker.postMessage({ type: "stop" });
    say("Stopping...");
  });
  return { input, run };
}

function start() {
  if (!document.querySelector('link[href$="translator/translator.css"]')) {
    document.head.appendChild(element("link", { rel: "stylesheet", href: here + "translator.css" }));
  }
  const boxes = [...document.querySelectorAll(".aiayn-translator")].map(box);
  const match = location.hash.match(/^#translate=(.*)$/);
  if (match && boxes.length) {
    boxes[0].input.value = decodeURIComponent(match[1]);
    boxes[0].run(); // the reader followed a link that asked for this sentence's attention
  }
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
else start();
