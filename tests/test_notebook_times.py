"""A chapter's recorded run time is that of the run whose outputs it stores.

``book/notebook_times.json`` (the instructor guide's run-time table) records how long
each chapter took to run top to bottom, and the chapter stores the outputs of a run,
its progress bars included: a bar's final state says how long its loop took
("[07:42<00:00, ...]"). Both should come from one execution
(``tools/chapters/execute_notebooks.py`` writes both). If they do not, the table
describes another run: chapter 7 once stored bars of 7:42 and 6:37 beside a recorded
67.9 s for the whole chapter, and chapter 1 bars of 0:49, 2:12 and 1:47 beside 35.8 s.

A whole run cannot take less time than the loops inside it, so the recorded seconds
must be at least the sum of the times the chapter's stored bars show.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
TIMES = json.loads((ROOT / "book" / "notebook_times.json").read_text())

# the elapsed part of a finished tqdm bar: "| 20/20 [07:42<00:00, 23.12s/epoch]"
BAR_ELAPSED = re.compile(r"\|\s*(\d+)/\1 \[(?:(\d+):)?(\d+):(\d+)<")


def bar_seconds(text: str) -> int:
    """The elapsed seconds of every finished progress bar in ``text``, summed."""
    total = 0
    for _, hours, minutes, seconds in BAR_ELAPSED.findall(text):
        total += int(hours or 0) * 3600 + int(minutes) * 60 + int(seconds)
    return total


def stored_bar_seconds(path: Path) -> int:
    nb = nbformat.read(path, as_version=4)
    return sum(
        bar_seconds(out.get("text", ""))
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
        if out.get("output_type") == "stream"
    )


@pytest.mark.parametrize("key", sorted(TIMES))
def test_recorded_time_covers_the_stored_progress_bars(key):
    path = ROOT / key
    if not path.exists():
        pytest.skip(f"{key} is gone (the guide ignores its entry)")
    bars = stored_bar_seconds(path)
    recorded = TIMES[key]["seconds"]
    assert recorded >= bars, (
        f"{key}: book/notebook_times.json records {recorded} s for the whole chapter, but "
        f"its stored progress bars alone show {bars} s: the outputs and the record come "
        "from different runs (re-execute it with tools/chapters/execute_notebooks.py, "
        "which writes both)"
    )


def test_bar_seconds_reads_finished_bars_only():
    text = (
        "training: 100%|██████████| 20/20 [07:42<00:00, 23.12s/epoch, held_out=0.139]\n"
        "Multi30k: 100%|██████████| 366/366 [1:06:37<00:00,  1.09s/step]\n"
        "half: 50%|█████     | 10/20 [00:30<00:30,  1.00s/it]\n"
    )
    assert bar_seconds(text) == 7 * 60 + 42 + 3600 + 6 * 60 + 37
    assert bar_seconds("no bar here: 12:30<") == 0
