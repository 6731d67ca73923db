"""Every test the prose names exists, in the file the prose names (issue 53).

A sentence such as "`tests/test_results_page.py`'s `test_each_timing_says_how_many_rounds_it_is`
checks this page's timings" is a claim about the repository; it goes stale when the test is
renamed, moved to another file or deleted, and nothing else would notice. This test reads
what a reader reads about the tests:

- README.md, CONTRIBUTING.md, ARCHITECTURE.md and every page of book/ (``*.md``);
- the Markdown cells of the chapters (notebooks/*.ipynb);
- the docstrings of the package, aiayn_helpers (modules, classes, functions);

and finds, paragraph by paragraph, each test file it names (``tests/test_x.py``,
``test_x.py``, a glob such as ``tests/test_exercises_ch*.py``, any other path under
``tests/``) and each test function (``test_fn``, ``tests/test_x.py::test_fn``,
``test_fn[case]``, whose base ``test_fn`` counts). A file must exist (a glob must match
one). A function must be defined (``def``, at any depth) in a file named in the same
paragraph; where the paragraph names no test file, in some file of tests/. A name that
is an nbgrader test cell of the graded assignments (``test_sdpa_mask``, the grade ids of
book/autograder/source) is a test too, as the instructor guide uses it.

Nothing is imported or run: the test files are parsed with ``ast``, so the check takes
well under a second and needs no network.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
PAGES = ["README.md", "CONTRIBUTING.md", "ARCHITECTURE.md", *sorted(f"book/{p.name}" for p in ROOT.glob("book/*.md"))]

# a path under tests/ (with an extension; ``*`` for a glob), or a bare test file's name
PATH = re.compile(r"(?<![\w/.-])(tests/[\w*./-]*[\w*]\.(?:py|json|cfg|txt)|test_[\w*]+\.py)(?![\w])")
# a test function, optionally as file::function or with a parametrized id
FUNCTION = re.compile(r"(?<![\w./-])(test_\w+)(?:\[[^\]\s]*\])?(?![\w.(/*-])")


ITEM = re.compile(r"\n(?=[ \t]*(?:\d+\.|[-*+])[ \t])")  # a list item starts a paragraph


def paragraphs(text: str) -> list[str]:
    """Blocks separated by a blank line; a list item and a table row count as
    paragraphs of their own."""
    blocks = []
    for block in re.split(r"\n[ \t]*\n", text):
        lines = block.splitlines()
        if lines and all(line.lstrip().startswith("|") for line in lines):
            blocks += lines
        else:
            blocks += ITEM.split(block)
    return blocks


def mentions(paragraph: str) -> tuple[list[str], list[str]]:
    """(files, functions) a paragraph names: files as paths from the root."""
    files = [m if m.startswith("tests/") else f"tests/{m}" for m in PATH.findall(paragraph)]
    without_paths = PATH.sub(" ", paragraph)
    functions = [f for f in FUNCTION.findall(without_paths)]
    functions += re.findall(r"\.py::(test_\w+)", paragraph)
    return files, list(dict.fromkeys(functions))


@cache
def defined_in(relative: str) -> frozenset[str]:
    """The names of the functions a Python file of tests/ defines, at any depth."""
    path = ROOT / relative
    if path.suffix != ".py" or not path.is_file():
        return frozenset()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return frozenset(n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef))


@cache
def every_test_function() -> frozenset[str]:
    return frozenset().union(*(defined_in(str(p.relative_to(ROOT))) for p in TESTS.rglob("*.py")))


@cache
def grade_ids() -> frozenset[str]:
    """The graded assignments' test cells (nbgrader grade ids), which pages name too."""
    found = set()
    for path in (ROOT / "book" / "autograder" / "source").glob("*/*.ipynb"):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            found.add(cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", ""))
    return frozenset(found - {""})


def problems(paragraph: str, known_elsewhere: frozenset[str] | None = None) -> list[str]:
    """What a paragraph names that does not exist (empty: nothing)."""
    files, functions = mentions(paragraph)
    wrong = [f"{f}: no such file" for f in files if not list(ROOT.glob(f))]
    python = [str(p.relative_to(ROOT)) for f in files for p in ROOT.glob(f) if p.suffix == ".py"]
    anywhere = every_test_function() if known_elsewhere is None else known_elsewhere
    for name in functions:
        if name in grade_ids():
            continue
        if python:
            if not any(name in defined_in(f) for f in python):
                wrong.append(f"{name}: not defined in {', '.join(python)}")
        elif name not in anywhere:
            wrong.append(f"{name}: no test of that name in tests/")
    return wrong


def docstrings(path: Path) -> Iterator[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node)
            if doc:
                yield doc


def sources() -> Iterator[tuple[str, str]]:
    """(where, text) for every page, chapter Markdown cell and package docstring."""
    for page in PAGES:
        yield page, (ROOT / page).read_text(encoding="utf-8")
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for i, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"]):
            if cell["cell_type"] == "markdown":
                yield f"{path.relative_to(ROOT)} cell {i}", "".join(cell["source"])
    for path in sorted((ROOT / "aiayn_helpers").rglob("*.py")):
        for doc in docstrings(path):
            yield str(path.relative_to(ROOT)), doc


def test_every_test_the_prose_names_exists_where_it_says():
    found = []
    for where, text in sources():
        for paragraph in paragraphs(text):
            found += [f"{where}: {p}" for p in problems(paragraph)]
    assert not found, "the prose names tests that do not exist:\n" + "\n".join(found)


def test_the_prose_names_tests_at_all():
    """The scan sees what the pages say (so the test above cannot pass by seeing nothing)."""
    files, functions = set(), set()
    for _, text in sources():
        for paragraph in paragraphs(text):
            named = mentions(paragraph)
            files.update(named[0])
            functions.update(named[1])
    assert {"tests/test_results_page.py", "tests/test_exercises_ch*.py"} <= files and len(files) > 30
    assert "test_each_timing_says_how_many_rounds_it_is" in functions and len(functions) > 10


KNOWN = frozenset({"test_each_timing_says_how_many_rounds_it_is", "test_logits_equal"})


@pytest.mark.parametrize(
    "paragraph, expected",
    [
        # as the pages write them: fine
        ("`tests/test_results_page.py`'s `test_each_timing_says_how_many_rounds_it_is` checks", []),
        ("`tests/test_export.py::test_logits_equal`, on five sentences", []),
        ("(`test_logits_equal[float32]` in `tests/test_export.py`)", []),
        ("the site test `test_logits_equal` checks 8", []),
        ("`tests/test_exercises_ch*.py` and `tests/data/ch01_alignment_across_kernels.json`", []),
        ("the report says `cell test_mha_self: the course's ...` (`tests/test_grading.py`)", []),
        ("a `make test-quick` run scores test2016 with `score_test2016`", []),
        # made up, or in the wrong file: each is named
        ("`tests/test_made_up.py` checks it", ["tests/test_made_up.py: no such file"]),
        ("`test_no_such_test` checks it", ["test_no_such_test: no test of that name in tests/"]),
        (
            "`tests/test_export.py`'s `test_each_timing_says_how_many_rounds_it_is` checks",
            ["test_each_timing_says_how_many_rounds_it_is: not defined in tests/test_export.py"],
        ),
        ("`tests/test_export.py::test_logits_equall`", ["test_logits_equall: not defined in tests/test_export.py"]),
        ("`tests/test_nothing_ch*.py`", ["tests/test_nothing_ch*.py: no such file"]),
    ],
)
def test_a_made_up_or_misplaced_name_is_caught(paragraph, expected):
    assert problems(paragraph, KNOWN) == expected
