// The attention explorer (book/attention_explorer.md): the attention maps of the shipped
// model, chosen by sentence, kind, layer and head, from the data that the book's Sphinx
// extension wrote beside this file at build time (attention_explorer_data.js sets
// window.ATTENTION_EXPLORER). No kernel, no other host.
//
// What a reader gets: every head of the chosen layer as a small map (a button each), one
// of them enlarged with its tokens; a colour scale; the weight under the mouse or under
// the keyboard's cursor (arrow keys on the focused map) in a live region; and the same
// weights as a table. Layers are numbered from 1 and heads from 0, as chapter 8 numbers
// them. The map is drawn at its natural size (labels 12 px) and its cells shrink to fit
// the page's width down to 14 px; a longer sentence scrolls inside its own box.
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
  const layerName = (l) => "layer " + (l + 1);
  const headName = (h) => "head " + h;
  const option = (select, value, text) => {
    const o = document.createElement("option");
    o.value = value;
    o.textContent = text;
    select.appendChild(o);
  };
  // the reader's own sentences, translated on the page (translator/view.js), come first
  let yours = 0;
  const sentences = () => {
    $("ae-sentence").replaceChildren();
    data.records.forEach((r, i) => option($("ae-sentence"), i,
      (i < yours ? "[yours] " : i < yours + data.held_out ? "[new] " : "") + r.german));
  };
  sentences();
  Object.entries(kinds).forEach(([k, text]) => option($("ae-kind"), k, text));
  for (let l = 0; l < data.layers; l++) option($("ae-layer"), l, layerName(l));
  for (let h = 0; h < data.heads; h++) option($("ae-head"), h, headName(h));

  const SVG = "http://www.w3.org/2000/svg";
  const el = (name, attrs) => {
    const e = document.createElementNS(SVG, name);
    Object.entries(attrs).forEach(([k, v]) => e.setAttribute(k, v));
    return e;
  };
  const show = (t) => t.replace(/\u2581/g, "_");
  const BLUE = "29, 78, 216";
  const colour = (w) => `rgba(${BLUE}, ${(w / data.scale).toFixed(3)})`;
  const weight = (w) => (w / data.scale).toFixed(2);

  // The colour scale: weight 0 (white) to 1 (full blue), the same function as the cells.
  (function legend() {
    const width = 160, height = 40, bar = 12;
    const svg = el("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img",
      "aria-label": "Colour scale: white is weight 0, full blue is weight 1; " +
        "the shade grows in proportion to the weight." });
    const grad = el("linearGradient", { id: "ae-gradient" });
    grad.appendChild(el("stop", { offset: "0", "stop-color": `rgb(${BLUE})`, "stop-opacity": 0 }));
    grad.appendChild(el("stop", { offset: "1", "stop-color": `rgb(${BLUE})`, "stop-opacity": 1 }));
    const defs = el("defs", {});
    defs.appendChild(grad);
    svg.appendChild(defs);
    // on white, as the map is (the site's dark mode keeps the map's white background)
    svg.appendChild(el("rect", { x: 6, y: 2, width: width - 12, height: bar, fill: "#ffffff" }));
    svg.appendChild(el("rect", { x: 6, y: 2, width: width - 12, height: bar,
      fill: "url(#ae-gradient)", stroke: "#888888" }));
    [0, 0.25, 0.5, 0.75, 1].forEach((v) => {
      const x = 6 + v * (width - 12);
      svg.appendChild(el("line", { x1: x, x2: x, y1: 2 + bar, y2: 6 + bar, stroke: "#444444" }));
      const t = el("text", { x, y: 18 + bar, "text-anchor": "middle", "font-size": 12,
        fill: "currentColor", "font-family": "sans-serif" });
      t.textContent = String(v);
      svg.appendChild(t);
    });
    $("ae-legend").appendChild(svg);
  })();

  function selection() {
    const r = data.records[+$("ae-sentence").value];
    const kind = $("ae-kind").value;
    const queries = kind === "encoder" ? r.source : r.output;
    const keys = kind === "encoder" ? r.source : kind === "decoder" ? r.target : r.source;
    return { r, kind, layer: +$("ae-layer").value, head: +$("ae-head").value, queries, keys };
  }

  // Every head of the chosen layer, small; a click (or Enter) enlarges it.
  function drawHeads(s) {
    const box = $("ae-heads");
    box.replaceChildren();
    const n = Math.max(s.queries.length, s.keys.length);
    const cell = Math.max(2, Math.floor(72 / n));
    for (let h = 0; h < data.heads; h++) {
      const rows = s.r.maps[s.kind][s.layer][h];
      const button = document.createElement("button");
      button.type = "button";
      button.className = "ae-head-button";
      button.dataset.head = h;
      button.setAttribute("aria-pressed", String(h === s.head));
      button.setAttribute("aria-label", `Enlarge ${headName(h)} of ${layerName(s.layer)}`);
      const w = cell * s.keys.length, hgt = cell * s.queries.length;
      const svg = el("svg", { width: w, height: hgt, viewBox: `0 0 ${w} ${hgt}`, "aria-hidden": "true" });
      svg.appendChild(el("rect", { x: 0, y: 0, width: w, height: hgt, fill: "#ffffff" }));
      rows.forEach((row, i) => row.forEach((v, j) => {
        if (v > 0) svg.appendChild(el("rect", { x: cell * j, y: cell * i, width: cell, height: cell, fill: colour(v) }));
      }));
      const label = document.createElement("span");
      label.textContent = headName(h);
      button.append(svg, label);
      button.addEventListener("click", () => {
        $("ae-head").value = String(h);
        draw();
        $("ae-heads").querySelector(`[data-head="${h}"]`).focus();
      });
      box.appendChild(button);
    }
  }

  function drawTable(s, rows) {
    const table = $("ae-table");
    table.replaceChildren();
    const caption = document.createElement("caption");
    caption.textContent = `${kinds[s.kind]}, ${layerName(s.layer)}, ${headName(s.head)}: ` +
      "one row per query, one column per key; each row sums to 1 (to rounding).";
    const head = document.createElement("tr");
    const corner = document.createElement("th");
    corner.textContent = "query \\ key";
    head.appendChild(corner);
    s.keys.forEach((k) => {
      const th = document.createElement("th");
      th.scope = "col";
      th.textContent = show(k);
      head.appendChild(th);
    });
    const thead = document.createElement("thead");
    thead.appendChild(head);
    const tbody = document.createElement("tbody");
    rows.forEach((row, i) => {
      const tr = document.createElement("tr");
      const th = document.createElement("th");
      th.scope = "row";
      th.textContent = show(s.queries[i]);
      tr.appendChild(th);
      row.forEach((w) => {
        const td = document.createElement("td");
        td.textContent = weight(w);
        tr.appendChild(td);
      });
      tbody.appendChild(tr);
    });
    table.append(caption, thead, tbody);
  }

  let cursor = [0, 0];
  function say(s, rows, i, j) {
    $("ae-hover").textContent = `${show(s.queries[i])} \u2192 ${show(s.keys[j])}: ${weight(rows[i][j])}`;
  }

  function draw() {
    const s = selection();
    const rows = s.r.maps[s.kind][s.layer][s.head];
    $("ae-german").textContent = s.r.german;
    $("ae-english").textContent = s.r.english;
    $("ae-title").textContent = `${kinds[s.kind]}, ${layerName(s.layer)}, ${headName(s.head)}`;
    drawHeads(s);
    drawTable(s, rows);
    const left = 96, top = 84;
    const room = $("ae-map-box").clientWidth - left - 6;
    const cell = Math.max(14, Math.min(28, Math.floor(room / s.keys.length)));
    const width = left + cell * s.keys.length + 4, height = top + cell * s.queries.length + 4;
    const svg = el("svg", {
      id: "ae-map", viewBox: `0 0 ${width} ${height}`, width, height, role: "img", tabindex: 0,
      "data-kind": s.kind, "data-layer": s.layer, "data-head": s.head, "data-cell": cell,
      "aria-label": `Attention weights of ${kinds[s.kind]}, ${layerName(s.layer)}, ` +
        `${headName(s.head)}: ${s.queries.length} query rows by ${s.keys.length} key columns. ` +
        "Arrow keys move between squares and read each weight; the table below lists them all.",
    });
    svg.appendChild(el("rect", { x: 0, y: 0, width, height, fill: "#ffffff" }));
    s.keys.forEach((t, j) => {
      const x = left + cell * j + cell / 2;
      const label = el("text", { x, y: top - 6, transform: `rotate(-60 ${x} ${top - 6})`,
        "font-size": 12, fill: "#222222", "font-family": "sans-serif" });
      label.textContent = show(t);
      svg.appendChild(label);
    });
    s.queries.forEach((t, i) => {
      const label = el("text", { x: left - 6, y: top + cell * i + cell * 0.5 + 4, "text-anchor": "end",
        "font-size": 12, fill: "#222222", "font-family": "sans-serif" });
      label.textContent = show(t);
      svg.appendChild(label);
      rows[i].forEach((w, j) => {
        const rect = el("rect", {
          x: left + cell * j, y: top + cell * i, width: cell - 1, height: cell - 1,
          fill: colour(w), stroke: "#dddddd",
          "data-q": i, "data-k": j, "data-w": w, class: "ae-cell",
        });
        rect.addEventListener("mouseover", () => say(s, rows, i, j));
        svg.appendChild(rect);
      });
    });
    const mark = el("rect", { id: "ae-cursor", x: left, y: top, width: cell - 1, height: cell - 1,
      fill: "none", stroke: "#d97706", "stroke-width": 2.5, visibility: "hidden" });
    svg.appendChild(mark);
    const move = (i, j) => {
      cursor = [i, j];
      mark.setAttribute("x", left + cell * j);
      mark.setAttribute("y", top + cell * i);
      mark.setAttribute("visibility", "visible");
      say(s, rows, i, j);
    };
    svg.addEventListener("focus", () => move(Math.min(cursor[0], s.queries.length - 1),
      Math.min(cursor[1], s.keys.length - 1)));
    svg.addEventListener("blur", () => mark.setAttribute("visibility", "hidden"));
    svg.addEventListener("keydown", (e) => {
      const step = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] }[e.key];
      if (!step) return;
      e.preventDefault();
      move(Math.max(0, Math.min(s.queries.length - 1, cursor[0] + step[0])),
        Math.max(0, Math.min(s.keys.length - 1, cursor[1] + step[1])));
    });
    $("ae-map").replaceWith(svg);
    $("ae-hover").textContent =
      "Hover over a square, or focus the map (Tab) and use the arrow keys, to read a weight.";
  }
  ["ae-sentence", "ae-kind", "ae-layer", "ae-head"].forEach((id) =>
    $(id).addEventListener("change", () => { cursor = [0, 0]; draw(); }));
  let lastWidth = $("ae-map-box").clientWidth;
  window.addEventListener("resize", () => {
    if ($("ae-map-box").clientWidth !== lastWidth) {
      lastWidth = $("ae-map-box").clientWidth;
      draw();
    }
  });
  draw();

  // The translator on this page hands over each sentence it translated: its tokens and
  // every map, in percent, the layout aiayn_helpers.explorer.attention_maps writes.
  window.aiaynExplorer = {
    add(record) {
      const rescale = (x) => (Array.isArray(x) ? x.map(rescale) : Math.round((x * data.scale) / 100));
      const maps = {};
      Object.keys(kinds).forEach((k) => { maps[k] = rescale(record.maps[k]); });
      data.records.unshift({ ...record, maps });
      yours += 1;
      sentences();
      $("ae-sentence").value = "0";
      cursor = [0, 0];
      draw();
    },
  };
})();
