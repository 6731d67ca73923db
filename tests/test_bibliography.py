"""The bibliography keeps its promise: a link to a freely available copy of every work.

book/bibliography.md says so, and an expert review found an entry without one
(hochreiter2001gradient, issue #38). Each entry of book/references.bib needs a ``url``
or a ``doi``; each key the book cites must be an entry.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
from notebook_markdown import to_myst  # noqa: E402

BIB = ROOT / "book" / "references.bib"
ENTRY = re.compile(r"^@\w+\{([^,\s]+),(.*?)^\}", re.M | re.S)
CITE = re.compile(r"\{cite(?::\w+)?\}`([^`]+)`")


def entries() -> dict[str, str]:
    return {key: body for key, body in ENTRY.findall(BIB.read_text(encoding="utf-8"))}


def test_every_entry_links_a_free_copy():
    found = entries()
    assert len(found) > 20, "the bibliography was not parsed"
    missing = [k for k, body in found.items() if not re.search(r"^\s*(url|doi)\s*=", body, re.M)]
    assert not missing, f"entries with neither url nor doi: {missing}"


def test_every_cited_key_is_an_entry():
    found = entries()
    sources = [*sorted((ROOT / "notebooks").glob("*.ipynb")), *sorted((ROOT / "book").glob("*.md"))]
    cited = set()
    for path in sources:
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".ipynb":  # citations as links into bibliography.md, read as the site does
            text = "\n".join(to_myst(c.source) for c in nbformat.read(path, as_version=4).cells)
        for keys in CITE.findall(text):
            cited |= {k.strip() for k in keys.split(",")}
    assert cited, "no citation found"
    unknown = sorted(cited - set(found))
    assert not unknown, f"cited keys with no entry in references.bib: {unknown}"
