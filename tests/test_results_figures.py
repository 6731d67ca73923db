"""The results page's plots (tools/bench/results_figures.py): drawn from the records, up to date,
shown with the alt text the tool writes from the same data, and legible on a phone."""

from __future__ import annotations

import copy
import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from bench import results_figures as rf  # noqa: E402

pytest.importorskip("matplotlib")
PHONE_COLUMN_PX = 390 - 2 * 16  # a 390 px phone less the article's padding (1 rem a side)


def _load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def test_every_figure_is_up_to_date():
    assert rf.main(["--check"]) == 0, "run python tools/bench/results_figures.py"


def test_the_page_shows_each_figure_with_its_alt_text():
    page = rf.PAGE.read_text(encoding="utf-8")
    for name, alt in rf.alt_texts().items():
        assert f"![{alt}](figures/results/{name})" in page, name
        assert len(alt.split()) >= 20


def test_the_loss_curves_are_the_epoch_tables():
    text = rf.PAGE.read_text(encoding="utf-8")
    full, cpu = (rf.epoch_table(text, h) for h in rf.EPOCH_TABLES)
    assert [r["epoch"] for r in full] == list(range(1, 32))  # the partial 32nd is left out
    assert [r["epoch"] for r in cpu] == list(range(1, 16))
    assert (full[0]["train"], full[0]["val"]) == (7.129, 5.139)
    assert "| 1 | 177 | 7.129 | 5.139 |" in text and "| 15 | 3,270 | 2.668 | 1.762 |" in text
    assert (cpu[-1]["train"], cpu[-1]["val"]) == (2.668, 1.762)
    with pytest.raises(ValueError, match="expected the heading"):
        rf.epoch_table(text, "### No such table")


def test_the_sweep_and_the_speeds_are_the_records():
    manifest, export = _load(rf.MANIFEST), _load(rf.EXPORT)
    sweep = rf.bleu_sweep(manifest)
    rows = manifest["validation_choice"]["rows"]
    assert sum(len(v) for v in sweep.values()) == len(rows) == 16
    for r in rows:
        assert (r["length_penalty"], r["bleu"]) in sweep[r["average"], r["beam_size"]]
    assert rf.export_speeds(export) == [(k, w["sentences_per_s"], w["bleu"]) for k, w in export["ways"].items()]
    svg = (rf.FOLDER / "results_export_speed.svg").read_text(encoding="utf-8")
    for _, speed, bleu in rf.export_speeds(export):
        assert f"{speed:.1f}/s, BLEU {bleu:.2f}" in svg
    best = manifest["validation_choice"]["best"]
    assert f"chosen: {best['bleu']:.2f}" in (rf.FOLDER / "results_bleu_sweep.svg").read_text(encoding="utf-8")


def test_a_changed_record_changes_the_figure():
    """The check above can fail: one BLEU figure changed in the manifest draws another SVG."""
    manifest = _load(rf.MANIFEST)
    changed = copy.deepcopy(manifest)
    changed["validation_choice"]["rows"][0]["bleu"] += 0.5
    assert rf.render(lambda: rf.draw_bleu_sweep(changed)) != rf.render(lambda: rf.draw_bleu_sweep(manifest))


@pytest.mark.parametrize("path", sorted(rf.FOLDER.glob("*.svg")), ids=lambda p: p.name)
def test_text_reads_on_a_phone(path):
    """At most 6 inches (432 pt) wide and no text under 11 pt: on a 390 px phone, where the
    figure is scaled to the column, the smallest text is still about 9 px."""
    svg = path.read_text(encoding="utf-8")
    width_pt = float(re.search(r'<svg[^>]* width="([\d.]+)pt"', svg)[1])
    sizes = [float(s) for s in re.findall(r"font-size: ([\d.]+)px", svg)]
    assert width_pt <= 432 and sizes and min(sizes) >= 11
    smallest_px = min(sizes) * PHONE_COLUMN_PX / width_pt  # user units are points
    assert smallest_px >= 9, f"{path.name}: {smallest_px:.1f} px on a phone"
    assert "http://www.w3.org/Graphics/SVG" not in svg  # no DOCTYPE naming another host
