"""The in-browser translator's budgets, measured in headless Chromium (make bench-browser).

    python tools/bench/bench_browser.py [--site _build/html] [--out book/translator_bench.json]

Serves the built site from 127.0.0.1 (every other host refused, as the site tests do)
and measures, in a fresh browser profile (no cache):

* the download: every file the translator fetches (runtime, model, tokenizer, its own
  modules), in bytes as stored and as a local ``gzip -9`` of each file gives (an
  estimate of what a compressing server such as GitHub Pages sends, not a measured
  transfer);
* the first translation, cold (a fresh profile: nothing cached): from the reader's
  request (the page already loaded) to the English, loading the runtime and the model
  included, over the loopback (no network time), with the model's own beam (6);
* the same on a second visit (the page opened again in the same profile: the runtime
  and the model come from the browser's Cache Storage, compiled again);
* what a reader on a 10 Mbit/s connection would wait on a first visit: the compressed
  bytes at 10 Mbit/s plus the cold figure (an estimate, stated as such);
* a 15-word sentence, one thread (the page is not cross-origin isolated), beam 4 (the
  paper's) and beam 6 (the page's): the median of 7 runs, decoding alone and with the
  attention maps of the explorer.

The machine's 1-minute load average is recorded before and after: on a shared machine
the timings move with it.

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
FIRST_JS = """async (text) => { const t0 = performance.now();
    const ready = await window.aiaynTranslator.load();
    const t1 = performance.now();
    const r = await window.aiaynTranslator.translate(text);
    return {seconds: (performance.now() - t0) / 1000, load: (t1 - t0) / 1000, cached: ready.cached,
            english: r.english, isolated: self.crossOriginIsolated}; }"""
CODE = (
    "view.js",
    "notes.js",
    "worker.js",
    "runner.js",
    "beam.js",
    "tokenizer.js",
    "translator.css",
    "built.json",
)


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

    # test_site imports bench.measure_stretches from tools/: this script's own folder
    # (tools/bench, first on sys.path when run as a script) would shadow it with bench.py
    here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]
    sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tools")]
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
        load_before = os.getloadavg()[0]
        page = context.new_page()
        page.goto(base + "book/intro.html", wait_until="load")
        page.wait_for_function("() => window.aiaynTranslator")
        first = page.evaluate(FIRST_JS, FIRST)
        runs = {
            k: [
                page.evaluate(
                    "async ([text, k]) => await window.aiaynTranslator.translate(text, {beamSize: k})",
                    [FIFTEEN_WORDS, k],
                )
                for _ in range(args.runs)
            ]
            for k in (4, 6)
        }
        page.close()
        # a second visit: a new page in the same profile (its Cache Storage kept)
        page = context.new_page()
        page.goto(base + "book/intro.html", wait_until="load")
        page.wait_for_function("() => window.aiaynTranslator")
        second = page.evaluate(FIRST_JS, FIRST)
        version = browser.version
        browser.close()
    httpd.shutdown()
    load_after = os.getloadavg()[0]
    info = json.loads((folder / "model" / "translator.json").read_text())
    download = sizes(folder)
    at_10_mbit = download["all"]["gzip_bytes"] * 8 / 10e6
    result = {
        "weights": info["weights"],
        "download": download,
        "first_translation_s": round(first["seconds"], 3),
        "first_translation_loading_s": round(first["load"], 3),
        "first_translation_beam": info["beam_size"],
        "first_english": first["english"],
        "second_visit_s": round(second["seconds"], 3),
        "second_visit_loading_s": round(second["load"], 3),
        "second_visit_cached": second["cached"],
        "ten_mbit_download_s": round(at_10_mbit, 2),
        "ten_mbit_first_translation_s": round(at_10_mbit + first["seconds"], 2),
        "network": "loopback (127.0.0.1): no network time in the measured figures; the 10 Mbit/s "
        "ones add the local gzip -9 size at 10 Mbit/s, an estimate",
        "fifteen_words": FIFTEEN_WORDS,
        "fifteen_words_english": runs[4][0]["english"],
        "beam4_decode_s_median": round(statistics.median(r["seconds"] for r in runs[4]), 3),
        "beam4_with_maps_s_median": round(statistics.median(r["withMaps"] for r in runs[4]), 3),
        "beam6_decode_s_median": round(statistics.median(r["seconds"] for r in runs[6]), 3),
        "runs": args.runs,
        "threads": sorted({r["threads"] for r in runs[4] + runs[6]}),
        "cross_origin_isolated": first["isolated"],
        "machine": {
            "chromium": version,
            "cpus": os.cpu_count(),
            "load_average_1min": load_before,
            "load_average_1min_after": load_after,
            "platform": platform.platform(),
            "shared": "the machine is shared with other sessions' builds and tests while this runs",
        },
    }
    out = Path(args.out)
    if out.is_file():  # records this tool does not measure (BLEU, int8 against float16) are kept
        old = json.loads(out.read_text(encoding="utf-8"))
        for key in ("test2016_bleu", "int8_equals_float16"):
            if key in old:
                result[key] = old[key]
    out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
