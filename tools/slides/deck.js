// The slide decks of `make slides`: keys and clicks turn the pages, N shows the
// speaker notes under the slide, P opens the printable notes, F goes full screen.
// A slide whose content is taller or wider than the window gets a smaller font until it fits.
(function () {
  const slides = Array.from(document.querySelectorAll("section"));
  const panel = document.getElementById("notes-panel");
  let i = Math.max(0, Math.min(slides.length - 1, (parseInt(location.hash.slice(1)) || 1) - 1));
  // too tall for the window, or a formula wider than the slide
  function overflows(s) {
    const wide = Array.from(s.querySelectorAll(".math")).some((m) => m.scrollWidth > m.clientWidth + 1);
    return wide || s.scrollHeight > s.clientHeight + 1 || s.scrollWidth > s.clientWidth + 1;
  }
  function fit(s) {
    s.style.fontSize = "";
    let size = parseFloat(getComputedStyle(s).fontSize);
    const smallest = size * 0.55;
    while (overflows(s) && size > smallest) {
      size *= 0.93;
      s.style.fontSize = size + "px";
    }
  }
  function show(k) {
    i = Math.max(0, Math.min(slides.length - 1, k));
    slides.forEach((s, j) => s.classList.toggle("current", j === i));
    fit(slides[i]);
    const notes = slides[i].querySelector("aside.notes");
    panel.innerHTML = notes ? notes.innerHTML : "<p>(no notes for this slide)</p>";
    document.getElementById("n").textContent = i + 1;
    history.replaceState(null, "", "#" + (i + 1));
  }
  window.deck = { show, fit, overflows, slides, refit: () => show(i) };
  document.addEventListener("keydown", (e) => {
    if (["ArrowRight", "ArrowDown", "PageDown", " "].includes(e.key)) show(i + 1);
    else if (["ArrowLeft", "ArrowUp", "PageUp"].includes(e.key)) show(i - 1);
    else if (e.key === "Home") show(0);
    else if (e.key === "End") show(slides.length - 1);
    else if (e.key === "n" || e.key === "N") document.body.classList.toggle("show-notes");
    else if (e.key === "p" || e.key === "P") window.open(document.body.dataset.notes, "_blank");
    else if (e.key === "f" || e.key === "F") document.documentElement.requestFullscreen?.();
  });
  document.addEventListener("click", (e) => {
    if (!e.target.closest("a, #notes-panel")) show(i + 1);
  });
  window.addEventListener("resize", () => fit(slides[i]));
  show(i);
})();
