"""Write the attention explorer's data beside the built site (book/attention_explorer.md).

At the end of an HTML build, the shipped model is loaded with
``aiayn_helpers.load_pretrained``, and :func:`aiayn_helpers.explorer.attention_maps`
computes every attention map for chapter 8's held-out sentences and the first 50
test2016 sentences. The result is written as ``_static/attention_explorer_data.js``
(a script that sets ``window.ATTENTION_EXPLORER``, which a page opened from disk can
read, unlike a JSON file fetched over file://), so the maps always come from the
weights that ship with this build. Reading test2016 needs the corpus
(``$AIAYN_DATA_DIR`` or the download cache; ``make data``); without it (offline, no
cache) the page offers the held-out sentences only.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

TEST_SENTENCES = 50
OUTPUT = "_static/attention_explorer_data.js"


def explorer_data() -> dict:
    import torch

    import aiayn_helpers as ah
    from aiayn_helpers.data import load_multi30k
    from aiayn_helpers.explorer import HELD_OUT, attention_maps
    from aiayn_helpers.pretrained import read_manifest

    torch.set_num_threads(int(os.environ.get("AIAYN_THREADS", "1")))
    model, tokenizer = ah.load_pretrained()
    try:
        test = [de for de, _ in load_multi30k("test2016")[:TEST_SENTENCES]]
    except ValueError as err:  # no corpus and no network: the held-out sentences only, and say so
        from sphinx.util import logging

        logging.getLogger(__name__).info(f"attention explorer: test2016 not available ({err}); held-out sentences only")
        test = []
    german = HELD_OUT + test
    records = attention_maps(model, tokenizer, german, scale=100)
    manifest = read_manifest(Path(ah.__file__).with_name("pretrained") / "multi30k")
    return {
        "model": "multi30k",
        "weights_sha256": manifest["sha256"]["weights.safetensors"],
        "layers": len(model.encoder.layers),
        "heads": model.encoder.layers[0].self_attn.num_heads,
        "scale": 100,
        "held_out": len(HELD_OUT),
        "records": records,
    }


def _write(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    if "book/attention_explorer" not in app.env.found_docs:
        return
    path = Path(app.outdir) / OUTPUT
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps(explorer_data(), separators=(",", ":"), ensure_ascii=False)
    path.write_text(f"window.ATTENTION_EXPLORER = {data};\n", encoding="utf-8")


def setup(app):
    app.connect("build-finished", _write)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
