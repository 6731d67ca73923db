// The print layout's last touches, run in Chromium on the assembled book before it prints
// (tools/pdf/build_pdf.py; the page is as wide as the printed column, print media on).
// Returns what the tests check: code boxes and tables still wider than the column.
() => {
  const px = (v) => parseFloat(v) || 0;
  const pageHeight = (297 - 38) / 25.4 * 96; // A4 less print.css's top and bottom margins

  // A code line longer than the column wraps (print.css: pre-wrap); each place where it
  // wraps gets a marker at the start of the continued line, found by the characters' boxes.
  let wrapped = 0;
  const markWraps = (pre) => {
    const cs = getComputedStyle(pre);
    const lineHeight = px(cs.lineHeight);
    const lines = pre.textContent.replace(/\n$/, "").split("\n").length;
    const inner = pre.clientHeight - px(cs.paddingTop) - px(cs.paddingBottom);
    if (inner <= lines * lineHeight + lineHeight / 2) return;
    const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
    const texts = [];
    for (let n = walker.nextNode(); n; n = walker.nextNode()) texts.push(n);
    const range = document.createRange();
    let lastTop = null;
    let previous = "\n";
    for (let node of texts) {
      let i = 0;
      while (i < node.length) {
        const ch = node.data[i];
        if (ch === "\n") { previous = ch; lastTop = null; i++; continue; }
        range.setStart(node, i);
        range.setEnd(node, i + 1);
        const rects = range.getClientRects();
        if (!rects.length) { i++; continue; }
        const top = rects[0].top;
        if (lastTop !== null && top > lastTop + lineHeight / 2 && previous !== "\n") {
          // the line wraps before character i: a marker there, then on after it
          const rest = i > 0 ? node.splitText(i) : node;
          const marker = document.createElement("span");
          marker.className = "wrap-marker";
          marker.textContent = "\u21aa\u00a0";
          rest.parentNode.insertBefore(marker, rest);
          wrapped += 1;
          lastTop = marker.getClientRects()[0].top;
          previous = "x";
          node = rest;
          i = 0;
          continue;
        }
        lastTop = top;
        previous = ch;
        i++;
      }
    }
  };
  let wrappedInput = 0;
  const wrappedInputs = [];
  for (const pre of document.querySelectorAll("section.pdf-chapter pre")) {
    const before = wrapped;
    markWraps(pre);
    if (!pre.closest(".cell_output, .output") && wrapped > before) {
      wrappedInput += wrapped - before;
      const chapter = pre.closest("section.pdf-chapter");
      const longest = pre.textContent.split("\n").reduce((a, b) => (b.length > a.length ? b : a), "");
      wrappedInputs.push({ chapter: chapter ? chapter.dataset.page : "", line: longest });
    }
  }

  // A table or display equation wider than the column shrinks, down to 70 %.
  const shrink = (el, box) => {
    for (const size of [90, 80, 70]) {
      if (box.scrollWidth <= box.clientWidth + 1) return;
      el.style.fontSize = size + "%";
    }
  };
  for (const table of document.querySelectorAll("section.pdf-chapter table")) {
    const box = table.closest(".pst-scrollable-table-container") || table.parentElement;
    const wide = () => table.scrollWidth > box.clientWidth + 1 || table.offsetWidth > box.clientWidth + 1;
    if (wide()) shrink(table, box);
    if (wide()) table.classList.add("pdf-tight");
  }
  for (const math of document.querySelectorAll('mjx-container[display="true"]')) {
    const column = math.parentElement.clientWidth;
    for (const size of [90, 80, 70]) {
      if (math.scrollWidth <= column + 1) break;
      math.style.fontSize = size + "%";
    }
  }

  // Small cells and boxes stay on one page; one taller than a page may break.
  for (const el of document.querySelectorAll("div.cell, .admonition, .exercise, .solution, figure")) {
    if (el.getBoundingClientRect().height < pageHeight * 0.45) el.classList.add("pdf-keep");
    else el.classList.add("pdf-too-tall");
  }

  const describe = (el) => {
    const chapter = el.closest("section.pdf-chapter");
    return { chapter: chapter ? chapter.dataset.page : "", text: el.textContent.slice(0, 80),
             scrollWidth: el.scrollWidth, clientWidth: el.clientWidth };
  };
  const column = document.querySelector("section.pdf-chapter").clientWidth;
  const widePre = [...document.querySelectorAll("pre")].filter((p) => p.scrollWidth > p.clientWidth + 1);
  const wideTables = [...document.querySelectorAll("table")].filter(
    (t) => t.getBoundingClientRect().width > column + 1);
  const wideMath = [...document.querySelectorAll('mjx-container[display="true"]')].filter(
    (m) => m.scrollWidth > column + 1);
  const ids = new Set([...document.querySelectorAll("[id]")].map((e) => e.id));
  const links = [...document.querySelectorAll('a[href^="#"]')];
  const broken = links.filter((a) => !ids.has(decodeURIComponent(a.getAttribute("href").slice(1))));
  const citations = [...document.querySelectorAll("section.pdf-chapter a")].filter(
    (a) => a.querySelector(".bibtex-citation, span.cite") || /bibliography--/.test(a.getAttribute("href") || ""));
  const headings = [...document.querySelectorAll("h1, h2, h3, h4, h5, h6")].map((h) => ({
    level: +h.tagName[1], text: h.textContent.trim() }));
  return {
    column, wrapped_lines: wrapped, wrapped_input_lines: wrappedInput, wrapped_inputs: wrappedInputs, pre_count: document.querySelectorAll("pre").length,
    wide_pre: widePre.map(describe), wide_tables: wideTables.map(describe), wide_math: wideMath.map(describe),
    links: links.length, broken_links: broken.map((a) => a.getAttribute("href")),
    citations: citations.map((a) => ({ href: a.getAttribute("href"), text: a.textContent.trim(),
      resolved: ids.has(decodeURIComponent(a.getAttribute("href").slice(1))) })),
    headings,
    unrendered_math: document.querySelectorAll("span.math, div.math").length -
      document.querySelectorAll("span.math mjx-container, div.math mjx-container").length,
  };
}
