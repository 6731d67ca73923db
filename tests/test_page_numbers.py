"""Every number on the pages outside the chapters comes from a record.

tests/test_prose_numbers.py reads the chapters' Markdown against the cells of the same
chapter. The pages around the chapters (the README, the introduction, the results page,
the glossary, the common-mistakes page, the API page's own prose, CONTRIBUTING and
ARCHITECTURE) quote numbers too: a download size, a BLEU
score, a tolerance, a throughput. Nothing printed them in the same file, so a number
there is checked only if something else in the repository holds it: a committed
record (a JSON under ``book/``, the shipped model's ``manifest.json`` and
``config.json``), a chapter's code or an output strict nbval compares, a test (a
number it asserts or sets), or the package's code (a default, a size). This test
reads each page's prose (not its code blocks, inline code, addresses, image paths or
MyST options) and fails on a number that none of these holds, as written, rounded
(``quotes`` of tests/test_alt_text_numbers.py: 42.7 quotes 42.73) or as the nearest
integer of a decimal (12 for 12.4).

Not quantities, and so not checked: a year (1990-2035), a date, a version
(``2.13.0``; and 3.10 to 3.19, Python's, wherever written: "Python 3.11 to 3.14"),
and a number that names something ("chapter 7", "section 3.2", "Table 3", "issue
43", "exercise 1.2", "Ubuntu 24.04").

An integer is looked up in the records and the chapters only, a decimal everywhere:
the tests and the package hold so many small round integers that any size would find
one there. Even so an integer of the prose can match a record's by chance; the check
is strongest on decimals and large counts, and the review checklist in CONTRIBUTING.md
("Numbers") still applies to the rest.

A number with no record may stay only where the page says so and ``EXCEPTIONS``
gives the reason: the results page's training tables were written down from the runs'
output at the time (its hardware table says "no record kept"), so each region of a
page between ``<!-- no record: REASON -->`` and ``<!-- end no record -->`` is
skipped, and the test asserts that the page tells the reader, in prose, that no
record was kept. A number worked out from two others on the same page (a difference,
a ratio) is an exception with its formula.

The chapters' nbval-ignore-output cells do not count as a source: their numbers move
from machine to machine (test_prose_numbers' reason), so a page that quotes one would
go stale while the chapter moved on.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from functools import cache
from pathlib import Path

import nbformat
import numpy as np
import pytest
from test_alt_text_numbers import numbers, output_text, quotes, value

import aiayn_helpers as ah

ROOT = Path(__file__).resolve().parents[1]
PAGES = [
    "README.md",
    "book/intro.md",
    "book/results.md",
    "book/glossary.md",
    "book/common_mistakes.md",
    "book/instructor_guide.md",
    "book/attention_explorer.md",
    "book/api.md",
    "CONTRIBUTING.md",
    "ARCHITECTURE.md",
]
IGNORED = "nbval-ignore-output"

# (page, number as written): why it may stand without a record
EXCEPTIONS: dict[tuple[str, str], str] = {
    ("README.md", "293"): "the reader set's download, measured with pip download and du -sh "
    "on 2026-11-24 (the sentence says how and when); no record file was kept",
    ("README.md", "183"): "the CPU wheel of PyTorch 2.13.0 in the same measurement (the "
    "sentence says how and when); no record file was kept",
    ("README.md", "455"): "the full pinned set's download in the same measurement (the "
    "sentence says how and when); no record file was kept",
    ("book/results.md", "167"): "the CPU model number noted at the time of the unrecorded "
    "runs; the hardware table's row says no record was kept and that the notes disagree",
    ("book/results.md", "143"): "Sapphire Rapids' model number, named to explain why the "
    "unrecorded notes disagree (the hardware table's row)",
    ("book/results.md", "0.77"): "42.97 - 42.20, the two validation BLEU scores printed "
    "beside it (the shipped model's validation_choice in its manifest)",
    ("book/results.md", "0.57"): "127.4 / 224.3 sentences a second, the two figures "
    "printed beside it (book/metrics/bench_export.json)",
    ("book/instructor_guide.md", "293"): "the README's measurement of the reader set's "
    "download (the README's exception: pip download and du -sh on 2026-11-24), quoted "
    "as the README's",
    ("book/instructor_guide.md", "874"): "the grader's child process's peak address "
    "space, measured for the warm children's commit (4a8cc4d) on 2 shared cores at a load "
    "of 1.4 to 2.2, as the sentence says; make grade writes it to autograde.log on each "
    "run, and no record file of that measurement was kept",
    ("book/results.md", "0.47"): "the 1-minute load average just before the decoding "
    "benchmark, noted at the time; the sentence says the record holds no load",
    ("book/results.md", "1.15"): "the same note, just after the decoding benchmark; the "
    "sentence says the record holds no load",
    ("README.md", "15"): "make test's 15 min 40 s, measured once on a fresh clone "
    "(commit 9bba564), the sentence says how; no record file was kept",
    ("README.md", "40"): "the same measurement (15 min 40 s); no record file was kept",
    ("README.md", "91"): "make test-quick's 91 s, measured once on 2 shared cores, the "
    "load not recorded, as the table row says; no record file was kept",
    ("book/instructor_guide.md", "34"): "the 19 MiB notebook's 34 s in the grader's own "
    "process, measured once, as the sentence says; no record file was kept",
    ("book/instructor_guide.md", "61"): "one run of the budget test at a load of 7 "
    "(commit b90d108), as the sentence says; the test asserts under 80 s",
    ("book/instructor_guide.md", "50"): "the first notebook's 50 s in that same run "
    "(commit b90d108), no record file; the page's other 50, collect's 50 MiB for one "
    "student's notebooks together, is MAX_SUBMISSION_MIB in tools/grading/collect.py",
    ("book/instructor_guide.md", "8.9"): "the same measurement: the 19 MiB notebook's CPU "
    "seconds before the memory limit stopped it; no record file",
}

# (page, number as written): (file, pattern) -- a setting of the tools that no record
# or chapter prints; the pattern must still match the file, with the number in it, so
# the page fails when the setting changes
TRACED: dict[tuple[str, str], tuple[str, str]] = {
    ("book/instructor_guide.md", "1200"): (
        "tools/grading/autograde.py",
        r"student_timeout = Integer\(1200,",
    ),
    ("CONTRIBUTING.md", "1200"): (
        "tools/grading/autograde.py",
        r"student_timeout = Integer\(1200,",
    ),
    ("book/instructor_guide.md", "1400"): (
        "tests/test_grading_confine.py",
        r'AIAYN_GRADER_MEMORY"\] = "1400M"',
    ),
    ("book/instructor_guide.md", "200,000"): (
        "tests/test_grading_properties.py",
        r"\[empty\] \* 200_000",
    ),
}

# (page, number as written): (how it is worked out, its value) -- a number the page
# works out from a setting; the value is computed here and must round to the page's
DERIVED: dict[tuple[str, str], tuple[str, Callable[[], float]]] = {
    ("book/instructor_guide.md", "1.5e-5"): (
        "assignment 1's tolerance, 64 float32 epsilons times (1 + the largest value), "
        "at values near 1 (book/autograder/source/assignment1: _F32, _close)",
        lambda: 64 * float(np.finfo(np.float32).eps) * (1 + 1),
    ),
    ("book/glossary.md", "-16"): (
        "the exponent of ALiBi's second slope, 2^{-16/h}: h times log2 of the second of "
        "alibi_slopes(h), here for h = 8",
        lambda: 8 * math.log2(float(ah.alibi_slopes(8)[1])),
    ),
}

# a number that names, rather than counts: "chapter 7", "section 3.2", "Python 3.11"
NAMING = re.compile(
    r"(?i)(?:chapters?|sections?|§|tables?|figures?|fig\.|items?|issues?|exercises?|"
    r"steps?|sessions?|assignments?|appendix|equations?|eq\.|python|pytorch|macos|iso|"
    r"ubuntu|wsl|debian|epochs?|version|v|#)\s*\(?$"
)
DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
VERSION = re.compile(r"(?<![\w.])\d+\.\d+\.\d+(?:\w|\+\w+)*")
PYTHON = re.compile(r"(?<![\w.])3\.1\d(?![\d.])")  # Python 3.10 to 3.19: "3.11 to 3.14"
POWER = re.compile(r"10\^\{?([-\u2212]?\d+)\}?")  # 10^{-12} is the number 1e-12
REGION = re.compile(r"<!-- no record: (.+?) -->(.*?)<!-- end no record -->", re.S)


def prose(markdown: str) -> str:
    """The page's text a reader reads as prose: no code, addresses, paths, options."""
    # fenced, also inside a list item (indented)
    text = re.sub(r"^([ \t]*)(```+|~~~+).*?^\1\2", "", markdown, flags=re.S | re.M)
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    # inline code (which may run onto the next line), and a role's target
    text = re.sub(r"`(?:[^`\n]|\n(?![ \t]*\n))*`", "", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)  # a link's address
    text = re.sub(r"https?://\S+", "", text)
    text = re.sub(r"<[^>\n]+>", "", text)  # HTML tags and autolinks
    text = re.sub(r"^\s*:[\w-]+:.*$", "", text, flags=re.M)  # MyST options
    text = re.sub(r"^\(\S+\)=$", "", text, flags=re.M)  # MyST labels
    text = DATE.sub("", text)
    text = VERSION.sub("", text)
    text = PYTHON.sub("", text)
    return POWER.sub(lambda m: "1e" + m.group(1), text)


def without_inline_code(markdown: str) -> str:
    """The page without its one-line inline code, where a page may show the region
    markers themselves (CONTRIBUTING's `<!-- no record: REASON -->`)."""
    return re.sub(r"`[^`\n]*`", "", markdown)


def page_numbers(markdown: str) -> list[str]:
    """The numbers of the prose that count something (not a year, not a name)."""
    text = prose(markdown)
    found = []
    for m in re.finditer(r"(?<![\w.])[-\u2212]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+\u2212]?\d+)?", text):
        token = m.group(0)
        if NAMING.search(text[max(0, m.start() - 12) : m.start()]):
            continue
        if re.fullmatch(r"(19[9]\d|20[0-3]\d)", token):
            continue  # a year
        found.append(token)
    return found


def _add(found: set[float], text: str) -> None:
    for token in numbers(text):
        number = value(token)
        if abs(number) < 1e300:
            found.add(number)


@cache
def recorded(wide: bool = True) -> frozenset[float]:
    """Every number of the records and the chapters' checked cells; with ``wide``, of the
    tests and the package's code too."""
    found: set[float] = set()
    records = [p for p in (ROOT / "book").rglob("*.json") if "_build" not in p.parts]
    records += [ROOT / "aiayn_helpers" / "pretrained" / "multi30k" / n for n in ("manifest.json", "config.json")]
    for path in records:
        record = json.loads(path.read_text())
        _add(found, json.dumps(record))
        found.update(sizes(record))
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code":
                _add(found, cell.source)
                if IGNORED not in cell.metadata.get("tags", []):
                    _add(found, output_text(cell))
    if wide:
        for path in [*(ROOT / "tests").glob("*.py"), *(ROOT / "aiayn_helpers").rglob("*.py"), ROOT / "Makefile"]:
            _add(found, path.read_text())
    return frozenset(found)


def sizes(record) -> set[float]:
    """A record's sizes in bytes (a key that ends in ``bytes``) as a page writes them,
    in MB and in MiB: book/translator_bench.json's 11,201,427 gzip bytes are 11.2 MB."""
    found: set[float] = set()
    if isinstance(record, dict):
        for key, item in record.items():
            if key.endswith("bytes") and isinstance(item, int | float):
                found.update({item / 1e6, item / 2**20})
            else:
                found |= sizes(item)
    elif isinstance(record, list):
        for item in record:
            found |= sizes(item)
    return found


def sources_for(token: str) -> frozenset[float]:
    """An integer is looked up in the records and the chapters only: the tests and the
    package's code hold so many small and round integers that a size with no record
    (a download's 293 MB) would find one by chance; a decimal is looked up everywhere."""
    return recorded(wide=bool(re.search(r"[.eE]", token)))


def backed(token: str, sources) -> bool:
    """Is the page's number one the sources hold, as written, rounded or as the nearest
    integer of a decimal (test_prose_numbers' said_as)?"""
    said = value(token)
    if said in sources:
        return True
    if any(quotes(token, s) for s in sources):
        return True
    if re.search(r"[.eE]", token):
        return False
    return any(s != int(s) and round(s) == said != 0 for s in sources if abs(s - said) < 1)


def unsourced(page: str, markdown: str, sources=None) -> list[str]:
    text = REGION.sub("", without_inline_code(markdown))
    explained = EXCEPTIONS.keys() | TRACED.keys() | DERIVED.keys()
    return [
        t
        for t in page_numbers(text)
        if not backed(t, sources_for(t) if sources is None else sources) and (page, t) not in explained
    ]


@pytest.mark.parametrize("page", PAGES)
def test_every_number_on_the_page_has_a_record(page):
    markdown = (ROOT / page).read_text()
    missing = unsourced(page, markdown)
    assert not missing, (
        f"{page}: numbers that no record, checked chapter output, test or package code "
        f"holds (trace each to one, remove it, or mark a region <!-- no record: ... --> "
        f"that the page says has no record): {sorted(set(missing), key=missing.index)}"
    )


@pytest.mark.parametrize("page", PAGES)
def test_a_region_without_a_record_says_so(page):
    markdown = (ROOT / page).read_text()
    for reason, _ in REGION.findall(without_inline_code(markdown)):
        assert len(reason.split()) >= 5, f"{page}: a region without a record needs a reason"
        assert "no record" in prose(markdown), (
            f"{page} skips a region as having no record but does not tell the reader so"
        )


def test_every_exception_is_used_and_gives_a_reason():
    """An exception names a number its page still writes (whether a record now holds
    it too can change with any test or chapter that happens to print the same value)."""
    used = used_numbers()
    for key, reason in EXCEPTIONS.items():
        assert key in used, f"exception {key} is stale: the page no longer writes it"
        assert len(reason.split()) >= 5, f"exception {key} needs a reason"


def used_numbers() -> set[tuple[str, str]]:
    used = set()
    for page in PAGES:
        text = REGION.sub("", without_inline_code((ROOT / page).read_text()))
        used.update((page, t) for t in page_numbers(text))
    return used


@pytest.mark.parametrize("key", sorted(TRACED))
def test_a_traced_number_is_still_the_setting(key):
    path, pattern = TRACED[key]
    assert key in used_numbers(), f"{key} is stale: the page no longer writes it"
    assert re.sub(r"\D", "", key[1]) in re.sub(r"[_,]", "", pattern), (key, pattern)
    assert re.search(pattern, (ROOT / path).read_text()), (
        f"{key[0]} writes {key[1]} as {path}'s setting, which no longer matches {pattern!r}"
    )


@pytest.mark.parametrize("key", sorted(DERIVED))
def test_a_derived_number_is_what_its_formula_gives(key):
    how, compute = DERIVED[key]
    assert key in used_numbers(), f"{key} is stale: the page no longer writes it"
    assert len(how.split()) >= 5, f"{key}: say how it is worked out"
    assert quotes(key[1], compute()), f"{key[0]}: {key[1]} is not {how} ({compute():.4g})"


def test_sizes_in_bytes_count_in_mb_and_mib():
    record = {"all": {"bytes": 22_620_196, "gzip_bytes": 11_201_427}, "n": [{"bytes": 2**20}]}
    found = sizes(record)
    assert any(quotes("11.2", s) for s in found) and any(quotes("22.6", s) for s in found)
    assert 1.0 in found and not any(quotes("11.2", s) for s in sizes({"seconds": 11201427}))


def test_the_check_catches_a_number_without_a_source():
    sources = {42.73, 0.974, 1e-12, 12.4, 1000.0}
    flagged = unsourced("x.md", "BLEU 43.1 on 1,000 sentences; 7 s.", sources)
    assert flagged == ["43.1", "7"]
    fine = (
        "BLEU 42.7 (42.73 rounded), brevity penalty 0.974, to $10^{-12}$, 12 of them, "
        "in chapter 7, section 3.2, Python 3.11, PyTorch 2.13.0, in 2017, on 2026-11-24, "
        "`make bench # 99 s`, [link](https://x.org/55), and\n```bash\nrun 77\n```\n"
        ":width: 440px\n- a list item, and its code:\n\n  ```yaml\n  memory: 1536M\n  ```\n"
        "ISO 8601, `a log line that\nruns on: 4.96 s`\n"
    )
    assert unsourced("x.md", fine, sources) == []
    region = "<!-- no record: written down from the output at the time -->\n| 77 |\n<!-- end no record -->"
    assert unsourced("x.md", region + " 78", sources) == ["78"]
