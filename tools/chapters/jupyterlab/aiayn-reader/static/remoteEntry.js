// aiayn-reader: a JupyterLab 4 extension written by hand (no build step), installed by
// `make setup` from tools/chapters/jupyterlab/. JupyterLab loads it as a federated
// extension: this file registers a container in window._JUPYTERLAB whose module
// "./extension" exports one plugin. The plugin requires no token; it uses app.shell.
//
// 1. Links that land. JupyterLab's sanitizer turns <a id="x"> into
//    <a data-jupyter-id="x">, and it asks a page to scroll to a link's anchor before
//    jupyterlab-myst has drawn the page. So, after a click on a link with an anchor
//    (#x or file#x), the plugin waits until the page the link opens is current and holds
//    an element whose id or data-jupyter-id is x, scrolls it (or the box it opens, with
//    the box's title) to the top, and scrolls again while the page above it is still
//    being drawn (images, math), until it stays put for a second, the reader scrolls,
//    or 20 s pass.
// 2. A phone's width. Below 700 px the left sidebar (the file browser) is closed when
//    JupyterLab starts and each time a document opens, so the document gets the screen.
(function () {
  "use strict";
  var NARROW = 700;
  var plugin = {
    id: "aiayn-reader:plugin",
    description: "Links land on their anchor; the sidebar closes at a phone's width.",
    autoStart: true,
    requires: [],
    activate: function (app) {
      var shell = app.shell;
      var narrow = function () { return window.innerWidth < NARROW; };
      var closeLeft = function () {
        if (narrow() && typeof shell.collapseLeft === "function") shell.collapseLeft();
      };
      app.restored.then(closeLeft);
      if (shell.currentChanged) shell.currentChanged.connect(closeLeft);
      var job = null;
      var stop = function () { if (job) { window.clearInterval(job.timer); job = null; } };
      ["wheel", "touchmove", "keydown"].forEach(function (kind) {
        window.addEventListener(kind, function (e) { if (e.isTrusted) stop(); }, true);
      });
      var pathOf = function (widget) {
        return widget && widget.context && widget.context.path ? widget.context.path : "";
      };
      document.addEventListener("click", function (event) {
        var link = event.target && event.target.closest ? event.target.closest("a[href]") : null;
        if (!link || !link.closest(".lm-DockPanel-widget")) return;  // in a document
        var href = link.getAttribute("href") || "";
        var url = new URL(link.href, window.location.href);
        if (url.origin !== window.location.origin || url.hash.length < 2) return;
        var id = decodeURIComponent(url.hash.slice(1));
        // a file's link (JupyterLab writes it as /files/NAME?_xsrf=...#id): that file's
        // page; an anchor alone (#id): the page the link is on
        var name = href.charAt(0) === "#" ? "" : decodeURIComponent(url.pathname.split("/").pop());
        if (!id) return;
        stop();
        var started = Date.now(), last = null, still = 0;
        var selector = '[id="' + id.replace(/["\\]/g, "\\$&") + '"], [data-jupyter-id="'
          + id.replace(/["\\]/g, "\\$&") + '"]';
        job = {
          timer: window.setInterval(function () {
            if (Date.now() - started > 20000) { stop(); return; }
            var widget = shell.currentWidget;
            if (!widget || (name && !pathOf(widget).endsWith(name))) return;
            var found = widget.node.querySelector(selector);
            if (!found || !found.getClientRects().length) return;
            // a label inside a box (a common-mistake admonition): the box, with its title
            var target = found.closest("aside") || found;
            var top = target.getBoundingClientRect().top;
            if (last !== null && Math.abs(top - last) < 2) {
              still += 1;
              if (still >= 7) stop();
              return;
            }
            still = 0;
            target.scrollIntoView({ block: "start" });
            last = target.getBoundingClientRect().top;
          }, 150),
        };
      }, true);
    },
  };
  var container = {
    init: function () { return Promise.resolve(); },
    get: function (module) {
      if (module !== "./extension") {
        return Promise.reject(new Error("aiayn-reader has no module " + module));
      }
      return Promise.resolve(function () { return { __esModule: true, default: [plugin] }; });
    },
  };
  window._JUPYTERLAB = window._JUPYTERLAB || {};
  window._JUPYTERLAB["aiayn-reader"] = container;
})();
