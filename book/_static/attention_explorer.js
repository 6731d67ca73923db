// The attention explorer (book/attention_explorer.md): draws one attention map of the
// shipped model, chosen by sentence, kind, layer and head, from the data that the book's
// Sphinx extension wrote beside this file at build time (attention_explorer_data.js sets
// window.ATTENTION_EXPLORER). No kernel, no other host.
(function () {
  "use strict";
  const data = window.ATTENTION_EXPLORER;
  const root = document.getElementById("ae-root");
  if (!root) return;
  if (!data) {
    root.textContent = "The attention data was not built (run `make book`).";
    return;
  }
  const $ = (id) => document.getElementById(id);
  const kinds = {
    encoder: "encoder self-attention (source attends to source)",
    decoder: "decoder self-attention (output attends to earlier output)",
    cross: "cross-attention (output attends to source)",
  };
  const option = (select, value, text) => {
    const o = document.createElement("option");
    o.value = value;
    o.textContent = text;
    select.appendChild(o);
  };
  data.records.forEach((r, i) => option($("ae-sentence"), i, (i < data.held_out ? "[new] " : "") + r.german));
  Object.entries(kinds).forEach(([k, text]) => option($("ae-kind"), k, text));
  for (let l = 0; l < data.layers; l++) option($("ae-layer"), l, "layer " + (l + 1));
  for (let h = 0; h < data.heads; h++) option($("ae-head"), h, "head " + (h + 1));

  const SVG = "http://www.w3.org/2000/svg";
  const el = (name, attrs) => {
    const e = document.createElementNS(SVG, name);
    Object.entries(attrs).forEach(([k, v]) => e.setAttribute(k, v));
    return e;
  };
  const show = (t) => t.replace(/\u2581/g, "_");

  function draw() {
    const r = data.records[+$("ae-sentence").value];
    const kind = $("ae-kind").value;
    const layer = +$("ae-layer").value;
    const head = +$("ae-head").value;
    const rows = r.maps[kind][layer][head];
    const queries = kind === "encoder" ? r.source : r.output;
    const keys = kind === "encoder" ? r.source : kind === "decoder" ? r.target : r.source;
    $("ae-german").textContent = r.german;
    $("ae-english").textContent = r.english;
    const cell = 28, left = 110, top = 110;
    const width = left + cell * keys.length + 4, height = top + cell * queries.length + 4;
    const svg = el("svg", {
      id: "ae-map", viewBox: `0 0 ${width} ${height}`, width: "100%", role: "img",
      "data-kind": kind, "data-layer": layer, "data-head": head, style: `max-width:${width}px`,
      "aria-label": `Attention weights of ${kinds[kind]}, layer ${layer + 1}, head ${head + 1}: ` +
        `${queries.length} query rows by ${keys.length} key columns.`,
    });
    svg.appendChild(el("rect", { x: 0, y: 0, width, height, fill: "#ffffff" }));
    keys.forEach((t, j) => {
      const x = left + cell * j + cell / 2;
      const label = el("text", { x, y: top - 6, transform: `rotate(-60 ${x} ${top - 6})`,
        "font-size": 12, fill: "#222222", "font-family": "sans-serif" });
      label.textContent = show(t);
      svg.appendChild(label);
    });
    queries.forEach((t, i) => {
      const label = el("text", { x: left - 6, y: top + cell * i + cell * 0.65, "text-anchor": "end",
        "font-size": 12, fill: "#222222", "font-family": "sans-serif" });
      label.textContent = show(t);
      svg.appendChild(label);
      rows[i].forEach((w, j) => {
        const rect = el("rect", {
          x: left + cell * j, y: top + cell * i, width: cell - 1, height: cell - 1,
          fill: `rgba(29, 78, 216, ${(w / data.scale).toFixed(3)})`, stroke: "#dddddd",
          "data-q": i, "data-k": j, "data-w": w, class: "ae-cell",
        });
        rect.addEventListener("mouseover", () => {
          $("ae-hover").textContent =
            `${show(queries[i])} \u2192 ${show(keys[j])}: ${(w / data.scale).toFixed(2)}`;
        });
        svg.appendChild(rect);
      });
    });
    const old = $("ae-map");
    old.replaceWith(svg);
    $("ae-hover").textContent = "Hover over a square to see its token pair and weight.";
  }
  ["ae-sentence", "ae-kind", "ae-layer", "ae-head"].forEach((id) => $(id).addEventListener("change", draw));
  draw();
})();
