"""A figure's alt text states only numbers its chapter prints or sets (issue #38).

The alt text of a matplotlib figure (the cell's ``mystnb: image: alt:``, found as in
tests/test_alt_text.py) is what a screen-reader user gets instead of the plot, so each
number in it must be one the chapter shows: a number printed in a cell's output, or
set in a cell's source (a size, a seed, a length), or written in the chapter's prose.
A number may be quoted rounded ("0.041" for a printed 0.04127, "5e-30" for 5.1e-30,
"1,024" for 1024). The diagrams' alt text is checked against the diagrams by
tests/test_diagrams.py.

This catches an alt text that quotes a number no cell produced; it cannot catch one
that quotes a true number for a false claim, which the review checklist in
CONTRIBUTING.md covers ("every figure's alt text against the numbers its cell prints").
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import nbformat
import pytest
from test_alt_text import figure_cells

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))

# A number: optional sign, digits with thousands commas, decimals, an exponent
# ("1e-5", "5.1e-30", "10^{-30}" is read as 10 and -30, both of which must appear).
NUMBER = re.compile(r"(?<![\w.])[-\u2212]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+\u2212]?\d+)?")

# Numbers an alt text may state although no cell prints them, each with its reason.
# (notebook stem, number as written in the alt text): reason
EXCEPTIONS: dict[tuple[str, str], str] = {}


def numbers(text: str) -> list[str]:
    return [m.group(0) for m in NUMBER.finditer(text)]


def value(token: str) -> float:
    return float(token.replace(",", "").replace("\u2212", "-"))


def quotes(alt_token: str, printed: float) -> bool:
    """Does the alt text's number quote the printed one, as written or rounded?"""
    said = value(alt_token)
    if said == printed:
        return True
    if said == 0 or printed == 0 or (said > 0) != (printed > 0):
        return False
    mantissa = re.sub(r"[eE].*", "", alt_token.lstrip("-\u2212")).replace(",", "")
    if "." in mantissa:
        # Rounded to the decimals the alt text writes: 0.041 quotes 0.0413.
        decimals = len(mantissa.split(".")[1])
        exponent = re.search(r"[eE]([-+\u2212]?\d+)", alt_token)
        scale = 10.0 ** (int(exponent[1].replace("\u2212", "-")) if exponent else 0)
        return abs(said - printed) <= 0.5 * 10.0**-decimals * scale * (1 + 1e-9)
    if re.search(r"[eE]", alt_token):
        # One significant digit in the alt text: 5e-30 quotes 5.1e-30.
        digits = 1
    else:
        # An integer quotes only itself, so that "12" does not pass for 12.4.
        return False
    magnitude = math.floor(math.log10(abs(printed)))
    rounded = round(printed, -magnitude + digits - 1)
    return math.isclose(rounded, said, rel_tol=1e-9)


def chapter_text(nb) -> str:
    """The chapter's sources (code and prose) and every text its cells print, less the
    outputs of cells tagged nbval-ignore-output: strict nbval does not compare those,
    so a number an alt text quotes from one (a trained accuracy, a timing) can change
    on another CPU while the alt text stays (chapter 1's quoted 0.85 did)."""
    parts = []
    for cell in nb.cells:
        parts.append(cell.source)
        if "nbval-ignore-output" not in cell.metadata.get("tags", []):
            parts.append(output_text(cell))
    return "\n".join(parts)


def output_text(cell) -> str:
    """The text a code cell prints: streams and text/* results, as nbval compares."""
    parts = []
    for out in cell.get("outputs", []):
        if "text" in out:
            parts.append(out["text"])
        for kind, data in out.get("data", {}).items():
            if kind.startswith("text/"):
                parts.append(data if isinstance(data, str) else "".join(data))
    return "\n".join(parts)


def alt_texts(path: Path):
    for cell in figure_cells(path):
        alt = cell.metadata.get("mystnb", {}).get("image", {}).get("alt", "")
        yield cell.get("id"), alt


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_number_in_a_figures_alt_text_is_one_its_chapter_shows(path):
    nb = nbformat.read(path, as_version=4)
    shown = [value(t) for t in numbers(chapter_text(nb))]
    missing = []
    for cell_id, alt in alt_texts(path):
        for token in numbers(alt):
            if (path.stem, token) in EXCEPTIONS:
                continue
            if not any(quotes(token, printed) for printed in shown):
                missing.append(f"cell {cell_id}: {token!r} in {alt!r}")
    assert not missing, (
        f"{path.name}: alt text states numbers the chapter neither prints nor sets "
        "(quote the cell's output, or add an exception with its reason):\n" + "\n".join(missing)
    )


def test_the_check_catches_a_number_no_cell_printed():
    printed = [value(t) for t in numbers("median 5.1e-30, per query 0.0413 and 0.2412")]
    for said in ("5e-30", "0.041", "0.24", "5.1e-30"):
        assert any(quotes(said, p) for p in printed), said
    for said in ("1e-30", "0.05", "0.3", "6e-30", "41"):
        assert not any(quotes(said, p) for p in printed), said
    assert numbers("d_k = 1,024, a 10^{-30} drop, 1e-5 and \u22123.5") == [
        "1,024",
        "10",
        "-30",
        "1e-5",
        "\u22123.5",
    ]


def test_every_exception_names_a_figure_that_states_it_and_gives_a_reason():
    stated = {(path.stem, token) for path in NOTEBOOKS for _, alt in alt_texts(path) for token in numbers(alt)}
    for key, reason in EXCEPTIONS.items():
        assert key in stated, f"exception {key} is stale: no alt text states it"
        assert len(reason.split()) >= 5, f"exception {key} needs a reason"
