"""The in-browser translator's budgets, measured in headless Chromium (make bench-browser).

    python tools/bench/bench_browser.py [--site _build/html] [--out book/translator_bench.json]

Serves the built site from 127.0.0.1 (every other host refused, as the site tests do)
and measures, in a fresh browser profile (no cache):

* the download: every file the translator fetches (runtime, model, tokenizer, its own
  modules), in bytes as stored and as gzip -9 would send them (GitHub Pages compresses);
* the first translation: from the reader's request (the page already loaded) to the
  English, loading the runtime and the model included (over the loopback: no network
  time);
* a 15-word sentence with beam 4, one thread (the page is not cross-origin isolated):
  the median of 7 runs, decoding alone and with the attention maps of the explorer.

Writes the figures, the machine and its load to ``--out`` (JSON) and prints them.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import http.server
import json
import os
import platform
import statistics
import sys
import threading
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[2]
FIFTEEN_WORDS = "Ein Mann in einem blauen Hemd fährt mit seinem alten Fahrrad die steile Straße hinunter."
FIRST = "Zwei Hunde spielen im Schnee."
RUNTIME = ("ort/ort.wasm.min.mjs", "ort/ort-wasm-simd-threaded.mjs", "ort/ort-wasm-simd-threaded.wasm")
MODEL = (
    "model/translator.json",
    "model/encoder.onnx",
    "model/decoder.onnx",
    "model/weights.bin",
    "model/tokenizer.json",
)
CODE = ("view.js", "worker.js", "runner.js", "beam.js", "tokenizer.js", "translator.css", "built.json")


def sizes(folder: Path) -> dict:
    def measure(names):
        raw = sum((folder / n).stat().st_size for n in names)
        packed = sum(len(gzip.compress((folder / n).read_bytes(), 9)) for n in names)
        return {"bytes": raw, "gzip_bytes": packed}

    return {
        "runtime": measure(RUNTIME),
        "model": measure(MODEL),
        "code": measure(CODE),
        "all": measure(RUNTIME + MODEL + CODE),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", default=str(ROOT / "_build" / "html"))
    parser.add_argument("--out", default=str(ROOT / "book" / "translator_bench.json"))
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args(argv)
    site = Path(args.site).resolve()
    folder = site / "_static" / "translator"
    if not (folder / "model" / "translator.json").is_file():
        print(f"{folder} has no model: run make book with Node.js first", file=sys.stderr)
        return 1
    from playwright.sync_api import sync_playwright

    sys.path.insert(0, str(ROOT / "tests"))
    from test_site import CHROMIUM_FLAGS, find_chromium

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *a):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(site)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}/"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=find_chromium(), headless=True, args=CHROMIUM_FLAGS)
        context = browser.new_context()
        context.route("**/*", lambda r: r.continue_() if urlsplit(r.request.url).hostname == "127.0.0.1" else r.abort())
        page = context.new_page()
        page.goto(base + "book/intro.html", wait_until="load")
        page.wait_for_function("() => window.aiaynTranslator")
        first = page.evaluate(
            """async (text) => { const t0 = performance.now();
                 const ready = await window.aiaynTranslator.load();
                 const t1 = performance.now();
                 const r = await window.aiaynTranslator.translate(text);
                 return {seconds: (performance.now() - t0) / 1000, load: (t1 - t0) / 1000,
                         english: r.english, isolated: self.crossOriginIsolated}; }""",
            FIRST,
        )
        runs = [
            page.evaluate("async (text) => await window.aiaynTranslator.translate(text, {beamSize: 4})", FIFTEEN_WORDS)
            for _ in range(args.runs)
        ]
        version = browser.version
        browser.close()
    httpd.shutdown()
    info = json.loads((folder / "model" / "translator.json").read_text())
    result = {
        "weights": info["weights"],
        "download": sizes(folder),
        "first_translation_s": round(first["seconds"], 3),
        "first_translation_loading_s": round(first["load"], 3),
        "first_english": first["english"],
        "fifteen_words": FIFTEEN_WORDS,
        "fifteen_words_english": runs[0]["english"],
        "beam4_decode_s_median": round(statistics.median(r["seconds"] for r in runs), 3),
        "beam4_with_maps_s_median": round(statistics.median(r["withMaps"] for r in runs), 3),
        "runs": args.runs,
        "threads": sorted({r["threads"] for r in runs}),
        "cross_origin_isolated": first["isolated"],
        "machine": {
            "chromium": version,
            "cpus": os.cpu_count(),
            "load_average_1min": os.getloadavg()[0],
            "platform": platform.platform(),
        },
    }
    out = Path(args.out)
    if out.is_file():  # a record this tool does not measure (BLEU) is kept
        kept = json.loads(out.read_text(encoding="utf-8")).get("test2016_bleu")
        if kept:
            result["test2016_bleu"] = kept
    out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
