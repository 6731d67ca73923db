"""The hardware lines of book/results.md match the records of the runs they describe.

The records: the shipped model's manifest
(aiayn_helpers/pretrained/multi30k/manifest.json), the decoding benchmark's JSON and
the thread choice (book/metrics/*.json), and one JSON per Table 3 run
(book/ablations/*.json). Every line of the page that names a CPU must be backed by a
record that names the same CPU: a record the line cites by file name, or the record of
the section the line is in. A line about runs without a record must say "no record".
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "book" / "results.md"
MANIFEST = ROOT / "aiayn_helpers" / "pretrained" / "multi30k" / "manifest.json"
BENCH = ROOT / "book" / "metrics" / "bench_decoding.json"
THREADS = ROOT / "book" / "metrics" / "thread_choice.json"
ABLATIONS = sorted((ROOT / "book" / "ablations").glob("*.json"))

# A CPU's maker or model, as a hardware line would name it.
MAKERS_AND_MODELS = [
    "Intel", "Xeon", "AMD", "EPYC", "Ryzen", "Threadripper", "Opteron", "Core i[3579]",
    "Apple M\\d", "Graviton", "Ampere", "Neoverse",
]  # fmt: skip
CPU_NAME = re.compile(r"\b(" + "|".join(MAKERS_AND_MODELS) + r")\b")
# The section a heading starts -> the record that describes its runs.
SECTION_RECORDS = {
    "The shipped model": "manifest.json",
    "Decoding speed": "bench_decoding.json",
    "The shipped model in other tools": "bench_export.json",
    "Table 3 at Multi30k scale": "book/ablations",
}


def _load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _records() -> dict[str, list[str]]:
    """Each record's name as the page cites it -> the hardware strings it holds."""
    bench = _load(BENCH)
    return {
        "manifest.json": [_load(MANIFEST)["training"]["hardware"]],
        "bench_decoding.json": [bench["cpu"]],
        "bench_export.json": [_load(ROOT / "book" / "metrics" / "bench_export.json")["cpu"]],
        "thread_choice.json": [_load(THREADS)["hardware"]],
        "book/ablations": sorted({_load(p)["hardware"] for p in ABLATIONS}),
    }


def _sections(text: str) -> list[tuple[str, str]]:
    """(heading, line) for every line of the page, with the heading of its section."""
    heading, out = "", []
    for line in text.splitlines():
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        out.append((heading, line))
    return out


def hardware_problems(text: str, records: dict[str, list[str]]) -> list[str]:
    """Lines naming a CPU that no record of theirs names (none if the page is right)."""
    problems = []
    for heading, line in _sections(text):
        names = set(CPU_NAME.findall(line))
        if not names:
            continue
        cited = {name for name in records if name in line}
        if heading in SECTION_RECORDS:
            cited.add(SECTION_RECORDS[heading])
        if not cited:
            if "no record" not in line:
                problems.append(f"names {sorted(names)} and no record: {line[:60]}")
            continue
        backed = " ".join(h for name in cited for h in records[name])
        for cpu in sorted(names):
            if not re.search(rf"\b{re.escape(cpu)}\b", backed):
                where = ", ".join(sorted(cited))
                problems.append(f"names {cpu!r}; its record ({where}) says {backed!r}")
    return problems


def test_every_cpu_on_the_page_is_the_one_its_record_names():
    assert hardware_problems(PAGE.read_text(encoding="utf-8"), _records()) == []


@pytest.mark.parametrize(
    "section, planted",
    [
        ("## Table 3 at Multi30k scale", "It ran on an Intel Xeon."),
        ("## The shipped model", "It ran on an Intel Xeon."),
        ("## Results", "Trained on an AMD EPYC."),
    ],
)
def test_a_wrong_cpu_name_is_caught(section, planted):
    """The check can fail: a CPU name planted where no record backs it is reported."""
    text = PAGE.read_text(encoding="utf-8")
    assert section in text
    planted_text = text.replace(section, f"{section}\n\n{planted}", 1)
    assert hardware_problems(planted_text, _records())


def _table_row(text: str, first_cell_start: str) -> list[str]:
    rows = [ln for ln in text.splitlines() if ln.startswith("| " + first_cell_start)]
    assert len(rows) == 1, f"rows starting {first_cell_start!r}: {len(rows)}, not 1"
    return [cell.strip() for cell in rows[0].strip("|").split(" | ")]


def test_the_machines_table_quotes_each_record():
    text = PAGE.read_text(encoding="utf-8")
    manifest, threads = _load(MANIFEST), _load(THREADS)
    bench, ablations = _load(BENCH), [_load(p) for p in ABLATIONS]
    assert _table_row(text, "The shipped model")[1] == manifest["training"]["hardware"]
    assert _table_row(text, "The notebooks' thread default")[1] == threads["hardware"]
    decoding = _table_row(text, "Decoding speed")[1]
    threads = f"{bench['threads']} PyTorch threads"
    expected = f"{bench['cpu']}, {threads}, PyTorch {bench['torch']}"
    assert expected in decoding
    table3 = _table_row(text, "Table 3's")
    assert f"Table 3's {len(ablations)} runs" in table3[0]
    (hardware,) = {r["hardware"] for r in ablations}
    (torch_version,) = {r["torch"] for r in ablations}
    (per_run,) = {r["threads"] for r in ablations}
    assert table3[1] == f"{hardware}, PyTorch {torch_version}, {per_run} thread per run"
    recorded = ("The shipped model", "Decoding", "Table 3's", "The notebooks' thread")
    for row in recorded:
        assert "no record" not in _table_row(text, row)[2]
    assert "no record" in _table_row(text, "The full recipe")[2]


def test_the_shipped_models_table_quotes_its_manifest():
    text = PAGE.read_text(encoding="utf-8")
    training = _load(MANIFEST)["training"]
    row = _table_row(text, "GPU run of the full recipe")
    assert row[1] == f"`{training['command']}`"
    assert row[2] == training["hardware"]
    assert row[3] == training["time"]
    assert row[4] == str(training["epochs"])


def test_the_validation_choice_and_the_test_scores_are_the_manifests():
    """Every cell of the validation table and of the test-set table is the manifest's."""
    text = PAGE.read_text(encoding="utf-8")
    manifest = _load(MANIFEST)
    choice = manifest["validation_choice"]
    for average, weights in ((0, "last epoch (40)"), (5, "mean of epochs 36-40")):
        for beam in sorted({r["beam_size"] for r in choice["rows"]}):
            rows = sorted(
                (r for r in choice["rows"] if (r["average"], r["beam_size"]) == (average, beam)),
                key=lambda r: r["length_penalty"],
            )
            cells = _table_row(text, f"{weights} | {beam} |")[2:]
            shown = [c.replace("*", "") for c in cells]
            assert shown == [f"{r['bleu']:.2f} (BP {r['brevity_penalty']:.3f})" for r in rows]
    best = choice["best"]
    assert (best["beam_size"], best["length_penalty"]) == (
        manifest["test2016_bleu"]["beam_size"],
        manifest["test2016_bleu"]["length_penalty"],
    )
    assert f"**{best['bleu']:.2f}**" in text
    scores = {"test2016 Flickr": manifest["test2016_bleu"]}
    names = {"test2017_flickr": "test2017 Flickr", "test2017_mscoco": "test2017 MSCOCO"}
    names["test2018_flickr"] = "test2018 Flickr"
    scores.update({names[k]: v for k, v in manifest["heldout_bleu"].items()})
    for name, score in scores.items():
        row = [c.replace("*", "") for c in _table_row(text, name)]
        assert row[1:4] == [f"{score['score']:.2f}", f"{score['brevity_penalty']:.3f}", str(score["seconds"])]
        assert score["sentences"] == int(row[0].split("(")[1].split()[0].replace(",", ""))


def test_the_thread_choice_figures_are_the_records():
    text = PAGE.read_text(encoding="utf-8")
    seconds = _load(THREADS)["seconds_two_at_once"]
    one, two = f"{seconds['1']:,.1f}", f"{seconds['2']:,.1f}"
    assert f"took {one} s with one thread each and {two} s\nwith two" in text


def test_the_table3_paragraph_matches_its_records():
    text = PAGE.read_text(encoding="utf-8")
    section = text.split("## Table 3 at Multi30k scale", 1)[1].split("\n## ", 1)[0]
    ablations = [_load(p) for p in ABLATIONS]
    for r in ablations:
        assert f'"{r["hardware"]}"' in section and f"PyTorch {r['torch']}" in section
    assert {r["threads"] for r in ablations} == {1} and "one\nthread each" in section
    at_once = {r["runs_at_once"] for r in ablations}
    assert at_once == {1, 2} and "one or two at a time" in section


def test_each_timing_says_how_many_rounds_it_is():
    """A median names its rounds, and a single round is not called a median."""
    text = PAGE.read_text(encoding="utf-8")
    bench = _load(BENCH)
    greedy, test2016 = bench["greedy_100"], bench["test2016_beam4"]
    rounds = {len(greedy["rounds"]["uncached"]), len(greedy["rounds"]["cached"])}
    assert rounds == {5}
    assert f"{greedy['uncached_s']:.2f} s (median of 5 rounds)" in text
    assert f"{greedy['cached_s']:.2f} s (median of 5 rounds)" in text
    assert len(test2016["rounds"]) == 1
    assert f"**{test2016['seconds']:.1f}** s (one round)" in text
    assert f"{test2016['seconds']:.1f}** s (median)" not in text


def test_the_shipped_weights_are_the_manifests():
    """The page names the weights file by the SHA-256 and size its manifest records."""
    text = PAGE.read_text(encoding="utf-8")
    manifest = _load(MANIFEST)
    digest = manifest["sha256"]["weights.safetensors"]
    size = manifest["bytes"]["weights.safetensors"]
    assert f"`weights.safetensors`, SHA-256 {digest[:12]}..., {size:,} bytes" in text


@pytest.mark.parametrize(
    "preset, vocabulary, figure",
    [("multi30k", None, "7.6 M parameters"), ("multi30k-cpu", None, "2.2 M parameters"),
     ("multi30k-base", 10_000, "36.7 M parameters with a 10,000-token vocabulary")],
)  # fmt: skip
def test_the_parameter_counts_are_the_presets(preset, vocabulary, figure):
    """The page's parameter counts are those of the presets' models, built here."""
    pytest.importorskip("torch")
    from aiayn_helpers.config import PRESETS, build_model

    cfg = PRESETS[preset]
    model = build_model(cfg, vocabulary or cfg.vocab_size)
    millions = sum(p.numel() for p in model.parameters()) / 1e6
    assert figure in " ".join(PAGE.read_text(encoding="utf-8").split())
    assert figure.startswith(f"{millions:.1f} M")


def test_the_shipped_bleu_lines_are_the_manifests():
    text = PAGE.read_text(encoding="utf-8")
    bleu = _load(MANIFEST)["test2016_bleu"]
    assert f"{bleu['full']}\nsignature: {bleu['signature']}\n" in text


def test_the_shipped_models_score_is_the_same_on_every_kernel_set_recorded():
    """The results page's claim: six runs (three kernel sets, one and two threads) printed the manifest's line."""
    record = _load(ROOT / "book" / "metrics" / "shipped_portability.json")
    manifest = _load(MANIFEST)
    assert record["weights_sha256"] == manifest["sha256"]["weights.safetensors"]
    runs = {(r["ATEN_CPU_CAPABILITY"], r["threads"]) for r in record["runs"]}
    assert runs == {(cap, n) for cap in ("default", "avx2", "avx512") for n in (1, 2)}
    assert {r["bleu"] for r in record["runs"]} == {manifest["test2016_bleu"]["full"]}
    assert "shipped_portability.json" in PAGE.read_text(encoding="utf-8")


def test_the_export_table_is_the_benchmarks_record():
    """The four-way speed table and its machine are book/metrics/bench_export.json's, for the shipped weights."""
    text = PAGE.read_text(encoding="utf-8")
    record = _load(ROOT / "book" / "metrics" / "bench_export.json")
    assert record["weights_sha256"] == _load(MANIFEST)["sha256"]["weights.safetensors"]
    for name, way in record["ways"].items():
        assert _table_row(text, name + " |")[1:] == [f"{way['sentences_per_s']:.1f}", f"{way['bleu']:.2f}"]
    book, ct2 = (record["ways"][k]["sentences_per_s"] for k in ("aiayn_helpers (ah.translate)", "CTranslate2 float32"))
    assert f"translated at\n{book / ct2:.2f} of CTranslate2's float32 speed" in text
    row = _table_row(text, "Exporting the shipped model")
    assert row[1].startswith(record["cpu"]) and row[2] == "`book/metrics/bench_export.json`"


def test_the_readme_quotes_the_shipped_models_manifest():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    bleu = _load(MANIFEST)["test2016_bleu"]
    assert f"scores {bleu['score']:.2f} BLEU on test2016\n(brevity penalty {bleu['brevity_penalty']:.3f})" in readme
