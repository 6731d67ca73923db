"""Every entry of book/references.bib says what published record it was checked against.

Issue 53's citation sweep: every entry should agree with the published source on title,
venue, year and pages, checked against the work itself (or its publisher's record), not
against another bibliography. ``tests/data/references_checked.json`` keeps, for each key,
what was checked and where:

- ``status``: ``checked`` (the publisher's or proceedings' own record, or the work's own
  first page), ``secondary`` (only a secondary record agrees: the authors' or their
  employer's page, a Scopus-style index, another work's reference list), ``partly`` (some
  fields only) or ``unchecked`` (no source was found; the note says so);
- ``source``: the address of the stored copy that was read, ``source_kind`` what it is;
- ``source_class``: what kind of record the source is: ``work`` (the work itself: its
  PDF, first page, arXiv rendering or LaTeX source), ``publisher`` (its publisher's or
  proceedings' own record, arXiv's and OpenReview's included; for a technical report,
  the issuing institution), ``authors`` (the authors' own repository or page),
  ``institution`` (an employer's publication record) or ``index`` (Scholar, Scopus,
  Mendeley, another work's references). ``checked`` needs ``work`` or ``publisher``;
  ``secondary`` needs one of the others, so the two words cannot drift apart again
  (an employer's record once counted as ``checked`` for one entry and ``secondary``
  for another);
- ``checked``: the fields compared, ``found``: title, year and pages (and, where
  ``authors`` is checked, the author list in BibTeX's order and form) as the source gives
  them, which the entry must still carry (an edit of the entry that drifts from what
  was checked fails here until the record is checked again);
- ``note``: what changed in the entry, or what was not checked and why.

The records were made in a session with no general internet, from stored copies of
public pages (tools: search, read_file); an entry whose source was not found is listed
as unchecked rather than guessed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from test_bibliography import entries

ROOT = Path(__file__).resolve().parents[1]
RECORDS = json.loads((ROOT / "tests" / "data" / "references_checked.json").read_text())
STATUSES = {"checked", "secondary", "partly", "unchecked"}
FIELDS = {"title", "venue", "year", "pages", "authors"}
PRIMARY = {"work", "publisher"}
SOURCE_CLASSES = PRIMARY | {"authors", "institution", "index"}


def field(body: str, name: str) -> str | None:
    """A BibTeX field's value, braces and all, or None."""
    m = re.search(rf"^\s*{name}\s*=\s*\{{(.*)\}},?\s*$", body, re.M)
    return m.group(1) if m else None


def plain(text: str) -> str:
    """A title as read: no braces, one kind of dash and apostrophe, any case."""
    text = text.replace("{", "").replace("}", "").replace("\u2013", "-")
    text = text.replace("\u2019", "'")
    return re.sub(r"\s+", " ", text).strip().casefold()


def disagreements(key: str, record: dict, body: str) -> list[str]:
    """How the entry differs from what its record says was checked."""
    wrong = []
    status, checked, found = record["status"], set(record["checked"]), record["found"]
    if status not in STATUSES:
        wrong.append(f"status {status!r} is not one of {sorted(STATUSES)}")
    if not checked <= FIELDS:
        wrong.append(f"unknown fields {sorted(checked - FIELDS)}")
    source_class = record.get("source_class", "")
    if status == "unchecked":
        if checked or record["source"] or source_class:
            wrong.append("an unchecked entry names no source, class or checked field")
        if len(record["note"].split()) < 5:
            wrong.append("say why it is unchecked")
        return wrong
    if not record["source"].startswith("http"):
        wrong.append("a checked field needs the address of the source read")
    if source_class not in SOURCE_CLASSES:
        wrong.append(f"source_class {source_class!r} is not one of {sorted(SOURCE_CLASSES)}")
    elif status == "checked" and source_class not in PRIMARY:
        wrong.append(f"'checked' needs a source of class {sorted(PRIMARY)}, not {source_class!r}")
    elif status == "secondary" and source_class in PRIMARY:
        wrong.append(f"a {source_class!r} source is primary: say checked or partly")
    if status == "checked":
        needed = {"title", "venue", "year"} | ({"pages"} if field(body, "pages") else set())
        if not needed <= checked:
            wrong.append(f"'checked' needs {sorted(needed)}, has {sorted(checked)}")
    if "title" in checked and plain(found.get("title", "")) != plain(field(body, "title") or ""):
        wrong.append(f"title {field(body, 'title')!r}, checked as {found.get('title')!r}")
    for name in ("year", "pages"):
        if name in checked and found.get(name) != field(body, name):
            wrong.append(f"{name} {field(body, name)!r}, checked as {found.get(name)!r}")
    authors = field(body, "author") or ""
    if "authors" in checked and plain(found.get("authors", "")) != plain(authors):
        wrong.append(f"authors {authors!r}, checked as {found.get('authors')!r}")
    return wrong


def test_every_entry_has_a_record_and_every_record_an_entry():
    keys = set(entries())
    assert keys - set(RECORDS) == set(), f"entries never checked: {sorted(keys - set(RECORDS))}"
    assert set(RECORDS) - keys == set(), f"records of no entry: {sorted(set(RECORDS) - keys)}"


@pytest.mark.parametrize("key", sorted(RECORDS))
def test_the_entry_agrees_with_what_was_checked(key):
    body = entries().get(key)
    if body is None:
        pytest.skip(f"{key} is not an entry (the test above fails)")
    wrong = disagreements(key, RECORDS[key], body)
    assert not wrong, f"{key}: {wrong}"


def checked_entry(title: str, year: str, pages: str, source: str, kind: str):
    """A BibTeX body and a "checked" record of it that agree."""
    body = f"  title = {{{title}}},\n  year = {{{year}}},\n  pages = {{{pages}}},\n"
    record = {
        "status": "checked",
        "source": source,
        "source_class": kind,
        "checked": ["title", "venue", "year", "pages"],
        "found": {"title": plain(title), "year": year, "pages": pages},
        "note": "",
    }
    return body, record


def test_the_check_catches_a_drifted_entry():
    body, record = checked_entry(
        "Old {BLEU} Title", "2002", "311--318", "https://aclanthology.org/P02-1040.bib", "publisher"
    )
    assert disagreements("k", record, body) == []
    moved = body.replace("311--318", "311--319")
    assert disagreements("k", record, moved) == ["pages '311--319', checked as '311--318'"]
    assert disagreements("k", {**record, "checked": ["title"]}, body)
    named = "  author    = {Su, Jianlin and Ahmed, Murtadha},\n" + body
    by_authors = {**record, "checked": ["title", "venue", "year", "pages", "authors"]}
    by_authors["found"] = {**record["found"], "authors": "Su, Jianlin and Ahmed, Murtadha"}
    assert disagreements("k", by_authors, named) == []
    swapped = named.replace("Su, Jianlin and Ahmed, Murtadha", "Ahmed, Murtadha and Su, Jianlin")
    assert disagreements("k", by_authors, swapped) == [
        "authors 'Ahmed, Murtadha and Su, Jianlin', checked as 'Su, Jianlin and Ahmed, Murtadha'"
    ]
    blank = {"status": "unchecked", "source": "", "checked": [], "found": {}, "note": ""}
    assert disagreements("k", blank, body) == ["say why it is unchecked"]


def test_checked_needs_the_work_or_its_publisher():
    nyu = "https://nyuscholars.nyu.edu/en/publications/on-the-properties"
    body, record = checked_entry("On the Properties", "2014", "103--111", nyu, "institution")
    assert disagreements("k", record, body) == [
        "'checked' needs a source of class ['publisher', 'work'], not 'institution'"
    ]
    for kind in ("authors", "index"):
        assert disagreements("k", {**record, "source_class": kind}, body)
    assert disagreements("k", {**record, "status": "secondary"}, body) == []
    for kind in PRIMARY:
        assert disagreements("k", {**record, "source_class": kind}, body) == []
        assert disagreements("k", {**record, "status": "secondary", "source_class": kind}, body)
    assert disagreements("k", {**record, "source_class": "blog"}, body)
    assert disagreements("k", {k: v for k, v in record.items() if k != "source_class"}, body)


def test_every_checked_record_rests_on_a_primary_source():
    """The property over all records: the status and the class of the source agree."""
    loose = {
        key: (r["status"], r.get("source_class"))
        for key, r in RECORDS.items()
        if (r["status"] == "checked") != (r.get("source_class") in PRIMARY) and r["status"] != "partly"
    }
    assert not loose, f"status and source_class disagree: {loose}"
