// On a copy of the site opened from disk (file://), browsers refuse the translator's
// module scripts and its Web Worker, so view.js never runs and the box would stay
// empty. This classic script (on every page, through book/_ext/aiayn_book.py) says
// instead, in one line, how to serve the site.
(function () {
  if (location.protocol !== "file:") return;
  function notice() {
    document.querySelectorAll(".aiayn-translator").forEach(function (box) {
      var p = document.createElement("p");
      p.className = "tr-file-notice";
      p.textContent = "The translator needs the site served, not opened from disk: run " +
        "`python -m http.server` in _build/html and open http://localhost:8000/ instead.";
      box.replaceChildren(p);
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", notice);
  else notice();
})();
