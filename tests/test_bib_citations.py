"""A citation as printed names the first author and the year of the entry it links to.

Issue 53's citation sweep: "every citation as printed anywhere (syllabus, chapters,
slides, glossary) agrees with references.bib on authors and year". The chapters and
pages print a citation as a link into the bibliography, ``[Vaswani et al.
(2017)](bibliography.md#vaswani2017attention)`` or ``([Rush, 2018](bibliography.md#
rush2018annotated))``: the text a reader sees is typed by hand, the entry is the
bibliography's, and nothing else compares them. (``{cite}`` roles print the entry's
own authors and year and need no check.) Each link's text must hold the surname of the
entry's first author and its year.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from test_bibliography import entries

ROOT = Path(__file__).resolve().parents[1]
SOURCES = [
    *sorted((ROOT / "notebooks").glob("*.ipynb")),
    *sorted((ROOT / "book").glob("*.md")),
    ROOT / "README.md",
    *sorted((ROOT / "tools" / "slides").rglob("*.py")),
]
LINK = re.compile(r"\[([^\]\n]{2,80}?)\]\((?:\.\./)?(?:book/)?bibliography(?:\.md|\.html)?#([\w-]+)\)")
ACCENTS = str.maketrans("łŁüöäéè", "lLuoaee")


def field(body: str, name: str) -> str:
    m = re.search(rf"^\s*{name}\s*=\s*\{{(.*)\}},?\s*$", body, re.M)
    return m.group(1) if m else ""


def first_surname(body: str) -> str:
    """The first author's surname, without BibTeX's accent commands and braces."""
    first = field(body, "author").split(" and ")[0].split(",")[0]
    first = re.sub(r"\{\\([A-Za-z])\}", r"\1", first)  # {\L}ukasz
    first = re.sub(r"\{?\\[^A-Za-z\s]\{?(\w)\}?\}?", r"\1", first)  # {\"u}, \'{e}
    return first.replace("{", "").replace("}", "").strip().split()[-1]


def text_of(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".ipynb":
        cells = json.loads(text)["cells"]
        text = "\n".join("".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in cells)
    return text


def mismatches(text: str, bib: dict[str, str]) -> list[str]:
    """The links whose text does not name the entry's first author and year."""
    wrong = []
    for label, key in LINK.findall(text):
        if key not in bib:
            continue  # test_bibliography's test_every_cited_key_is_an_entry
        surname, year = first_surname(bib[key]), field(bib[key], "year")
        said = label.translate(ACCENTS).casefold()
        if surname.translate(ACCENTS).casefold() not in said or year not in label:
            wrong.append(f"[{label}] -> {key} ({surname}, {year})")
    return wrong


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_every_printed_citation_names_its_entrys_author_and_year(path):
    wrong = mismatches(text_of(path), entries())
    assert not wrong, f"{path.name}: citations whose text disagrees with references.bib: {wrong}"


def test_the_links_are_found():
    assert sum(len(LINK.findall(text_of(p))) for p in SOURCES) > 50, "no citation link found"


def test_the_check_catches_a_wrong_author_or_year():
    bib = {"k": "  author = {Kaiser, {\\L}ukasz and Other, A.},\n  year = {2017},\n"}
    assert mismatches("[Kaiser et al. (2017)](bibliography.md#k)", bib) == []
    assert mismatches("([Kaiser, 2017](bibliography.md#k))", bib) == []
    assert mismatches("[Kaiser et al. (2018)](bibliography.md#k)", bib)
    assert mismatches("[Other et al. (2017)](bibliography.md#k)", bib)
    bib = {"k": "  author = {{\\L}ukasz, Kaiser},\n  year = {2017},\n"}
    assert mismatches("[Łukasz (2017)](bibliography.md#k)", bib) == []
