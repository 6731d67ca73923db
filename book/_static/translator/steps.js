// "Watch the decoder think": the explorer page's step-by-step view of one translation.
// Every element with class "aiayn-steps" becomes the view. It asks the translator's
// worker (view.js, worker.js) for a translation with a trace: beam.js records, at each
// output step, the beams going in with their summed log-probabilities, each live beam's
// five most probable next tokens, the best 2k candidates with their length-penalised
// scores and what became of them (kept as a beam, finished with <eos>, dropped), and for
// beam 0 one layer's and head's cross-attention: its query, the source's keys, the
// scaled scores q.k/sqrt(d_k) before the softmax and the weights after it (chapter 2's
// formula on live numbers). tools/ship/export_browser.py's OnnxTranslator.beam writes
// the same trace in Python; tests/test_browser_steps.py compares the two.
// Every control re-runs the translation; everything is text (textContent), in tables
// that scroll inside named regions, usable by keyboard and at 390 px.
import "./view.js";

const fmt = (x, digits = 3) => (x === -Infinity ? "−∞" : Number(x).toFixed(digits).replace("-", "−"));
const show = (token) => (token ?? "?").replaceAll("\u2581", "_");

function element(tag, attrs = {}, text = "") {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== "") e.textContent = text;
  return e;
}

function table(caption, head, rows) {
  const t = element("table", { class: "st-table" });
  t.append(element("caption", {}, caption));
  const thead = element("thead");
  const tr = element("tr");
  head.forEach((h) => tr.append(element("th", { scope: "col" }, h)));
  thead.append(tr);
  const tbody = element("tbody");
  for (const row of rows) {
    const r = element("tr", row.fate ? { class: `st-${row.fate}` } : {});
    row.cells.forEach((c) => r.append(element("td", {}, String(c))));
    tbody.append(r);
  }
  t.append(thead, tbody);
  const box = element("div", { class: "st-scroll", role: "region", tabindex: "0", "aria-label": caption });
  box.append(t);
  return box;
}

function number(label, attrs) {
  const l = element("label", { class: "st-control" }, label + " ");
  const input = element("input", { type: "number", ...attrs });
  l.append(input);
  return [l, input];
}

function select(label, options, value) {
  const l = element("label", { class: "st-control" }, label + " ");
  const s = element("select");
  options.forEach(([v, text]) => s.append(element("option", { value: String(v) }, text)));
  s.value = String(value);
  l.append(s);
  return [l, s];
}

async function view(root) {
  const info = await (await fetch(new URL("./model/translator.json", import.meta.url))).json();
  root.replaceChildren();
  root.classList.add("st-box");
  const sentenceLabel = element("label", { for: "st-sentence" }, "A German sentence to watch");
  const sentence = element("input", { id: "st-sentence", type: "text", lang: "de", dir: "auto",
    value: "Zwei Hunde spielen im Schnee." });
  const controls = element("div", { class: "st-controls" });
  const beams = Array.from({ length: 8 }, (_, i) => [i + 1, i === 0 ? "1 (one beam)" : String(i + 1)]);
  const [beamLabel, beam] = select("Beam size", beams, info.beam_size);
  const [alphaLabel, alpha] = number("Length penalty α", { min: "0", max: "3", step: "0.1", value: String(info.length_penalty) });
  const [maxLabel, maxLength] = number("Maximum length", { min: "1", max: "150", step: "1", placeholder: "source + 50" });
  const [layerLabel, layer] = select("Layer", Array.from({ length: info.num_layers }, (_, i) => [i, String(i + 1)]), info.num_layers - 1);
  const [headLabel, head] = select("Head", Array.from({ length: info.num_heads }, (_, i) => [i, String(i)]), 0);
  const go = element("button", { type: "button", class: "st-run" }, "Run step by step");
  controls.append(beamLabel, alphaLabel, maxLabel, layerLabel, headLabel, go);
  const nav = element("div", { class: "st-nav", hidden: "" });
  const prev = element("button", { type: "button" }, "Previous step");
  const next = element("button", { type: "button" }, "Next step");
  const slider = element("input", { type: "range", min: "1", max: "1", value: "1", "aria-label": "Step" });
  const where = element("span", { class: "st-where", "aria-live": "polite" });
  nav.append(prev, slider, next, where);
  const status = element("p", { class: "st-status", role: "status" });
  const panels = element("div", { class: "st-panels" });
  root.append(sentenceLabel, sentence, controls, nav, status, panels);

  let result = null;
  let runs = 0;
  async function run() {
    const mine = ++runs;
    const text = sentence.value.trim();
    if (!text) {
      status.textContent = "Type a German sentence first.";
      return;
    }
    status.textContent = "Translating with a trace of every step...";
    try {
      const options = {
        beamSize: +beam.value,
        alpha: Math.max(0, +alpha.value || 0),
        maxLength: maxLength.value ? Math.max(1, Math.floor(+maxLength.value)) : null,
        trace: { layer: +layer.value, head: +head.value },
        maps: false, // the view shows the trace, not the maps
      };
      const r = await window.aiaynTranslator.translate(text, options);
      if (mine !== runs) return; // a newer run replaced this one
      result = { ...r, options };
      slider.max = String(r.trace.length);
      slider.value = "1";
      nav.hidden = false;
      status.textContent = `English: ${r.english} (${r.trace.length} steps, beam ${options.beamSize}, α ${options.alpha}).`;
      draw();
    } catch (err) {
      if (mine === runs) status.textContent = "The translator failed: " + (err && err.message ? err.message : err);
    }
  }

  function draw() {
    const t = +slider.value;
    const s = result.trace[t - 1];
    const w = result.words;
    const src = result.source;
    const { layer: l, head: h } = result.options.trace;
    where.textContent = `Step ${t} of ${result.trace.length}: lp(${t}) = ((5 + ${t}) / 6)^α = ${fmt(s.penalty, 4)}`;
    const live = s.beams.map(([ids, score], r) => ({ r, ids, score })).filter((b) => b.score !== -Infinity);
    const beamRows = live.map((b) => ({ cells: [b.r, ["<bos>", ...b.ids.map((i) => w[i])].map(show).join(" "), fmt(b.score)] }));
    const nextRows = live.map((b) => ({
      cells: [b.r, s.next[b.r].map(([i, lp]) => `${show(w[i])} ${(Math.exp(lp) * 100).toFixed(1)} %`).join(", ")],
    }));
    const candRows = s.candidates.map(([r, tok, score, pen, fate]) => ({
      fate,
      cells: [r, show(w[tok]), fmt(score), fmt(pen), fate],
    }));
    const attRows = src.map((token, i) => ({ cells: [show(token), fmt(s.scores[i]), fmt(s.weights[i])] }));
    const q = s.query.map((x) => fmt(x, 2)).join(" ");
    const keyRows = src.map((token, i) => ({ cells: [show(token), s.keys[i].map((x) => fmt(x, 2)).join(" ")] }));
    const open = panels.querySelector("details.st-vectors")?.open ?? false;
    const vectors = element("details", { class: "st-vectors" });
    vectors.append(
      element("summary", {}, `The query q and the keys k (${s.query.length} numbers each: d_k)`),
      element("p", { class: "st-query" }, `Query q of beam 0: ${q}`),
      table(`The keys k of the source tokens, layer ${l + 1}, head ${h}`, ["source token", "key"], keyRows),
    );
    panels.replaceChildren(
      table(`Beams going into step ${t} (summed log-probability)`, ["beam", "tokens so far", "log-prob"], beamRows),
      table(`Each beam's five most probable next tokens at step ${t}`, ["beam", "next token: probability"], nextRows),
      table(`The best ${2 * result.options.beamSize} candidates at step ${t}: score ÷ lp(${t}); kept, finished or dropped`,
        ["from beam", "+ token", "log-prob", "÷ lp", "fate"], candRows),
      table(`Beam 0's cross-attention, layer ${l + 1}, head ${h}: q·k/√d_k, then softmax`,
        ["source token", "scaled score", "weight"], attRows),
      vectors,
    );
    vectors.open = open;
  }

  slider.addEventListener("input", () => result && draw());
  prev.addEventListener("click", () => {
    slider.value = String(Math.max(1, +slider.value - 1));
    draw();
  });
  next.addEventListener("click", () => {
    slider.value = String(Math.min(+slider.max, +slider.value + 1));
    draw();
  });
  go.addEventListener("click", run);
  sentence.addEventListener("keydown", (e) => {
    if (e.key === "Enter") run();
  });
  for (const c of [beam, alpha, maxLength, layer, head]) c.addEventListener("change", () => result && run());
}

function start() {
  document.querySelectorAll(".aiayn-steps").forEach((root) => view(root));
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
else start();
