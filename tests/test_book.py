"""The book around the chapters: Colab cells, the common-mistakes index, the instructor guide, offline math."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import nbformat
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
MISTAKE_LABEL = re.compile(r"^\((mistake-[A-Za-z0-9_-]+)\)=\s*$", re.MULTILINE)
MISTAKE_LINK = re.compile(r"\{ref\}`[^`<]*<(mistake-[A-Za-z0-9_-]+)>`|\{ref\}`(mistake-[A-Za-z0-9_-]+)`")
INDEX = ROOT / "book" / "common_mistakes.md"


def toc_files() -> set[str]:
    def walk(node):
        if isinstance(node, dict):
            if "file" in node:
                yield node["file"]
            if "root" in node:
                yield node["root"]
            for value in node.values():
                yield from walk(value)
        elif isinstance(node, list):
            for value in node:
                yield from walk(value)

    return {str(Path(f).with_suffix("")) for f in walk(yaml.safe_load((ROOT / "_toc.yml").read_text()))}


def mistake_labels(in_toc_only: bool = True) -> dict[str, tuple[str, str]]:
    """label -> (notebook name, the title of the box it labels), by default for notebooks in the toc."""
    in_toc = toc_files()
    labels: dict[str, tuple[str, str]] = {}
    for path in NOTEBOOKS:
        if in_toc_only and f"notebooks/{path.stem}" not in in_toc:
            continue
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type != "markdown":
                continue
            for m in MISTAKE_LABEL.finditer(cell.source):
                after = cell.source[m.end() :].strip().splitlines()
                title = re.sub(r"^[`:]{3,}\{[a-z]+\}\s*|^#+\s*|^Common mistake:\s*", "", after[0] if after else "")
                title = re.sub(r"^Common mistake:\s*", "", title)
                assert m[1] not in labels, f"{m[1]} is defined twice ({labels.get(m[1], ('',))[0]}, {path.name})"
                labels[m[1]] = (path.name, title or m[1])
    return labels


# ---------------------------------------------------------------------------- Colab


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_starts_with_the_hidden_colab_cell(path):
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code, "no code cells"
    first = code[0]
    assert "remove-cell" in first.metadata.get("tags", []), (
        "the first code cell must be the Colab cell, tagged remove-cell"
    )
    src = first.source
    assert re.search(r"^\s*import aiayn_helpers", src, re.MULTILINE) and "except ImportError" in src, (
        "the Colab cell must install aiayn_helpers only when it is missing (try: import ... except ImportError:)"
    )
    assert re.search(r"%pip install", src) and "aiayn_helpers" in src.split("except ImportError", 1)[1]
    assert not first.get("outputs"), "the Colab cell must print nothing when the package is installed"


# ---------------------------------------------------------------------------- common mistakes


def test_every_mistake_box_is_indexed():
    linked = {a or b for a, b in MISTAKE_LINK.findall(INDEX.read_text())}
    missing = {label: where for label, where in mistake_labels().items() if label not in linked}
    lines = "\n".join(f"- {{ref}}`{title} <{label}>`: ...   ({nb})" for label, (nb, title) in sorted(missing.items()))
    assert not missing, f"mistake boxes not linked from book/common_mistakes.md; add lines like:\n{lines}"


def test_mistake_index_links_only_built_labels():
    """A {ref} to a label that is not in a built page is a Sphinx warning, which fails `make book`."""
    linked = {a or b for a, b in MISTAKE_LINK.findall(INDEX.read_text())}
    unknown = linked - set(mistake_labels(in_toc_only=False))
    assert not unknown, f"book/common_mistakes.md links labels no notebook defines: {sorted(unknown)}"
    if "book/common_mistakes" in toc_files():
        unbuilt = linked - set(mistake_labels())
        assert not unbuilt, (
            f"book/common_mistakes.md links labels of notebooks that are not in _toc.yml: {sorted(unbuilt)}"
        )
    assert not re.search(r"\{ref\}`mistake-", INDEX.read_text()), (
        "give every mistake link an explicit title, {ref}`title <mistake-...>`: the labels are not on headings"
    )


# ---------------------------------------------------------------------------- instructor guide


def test_syllabus_covers_every_notebook():
    guide = (ROOT / "book" / "instructor_guide.md").read_text()
    block = re.search(r"```\{syllabus\}\n(.*?)```", guide, re.DOTALL)
    assert block, "the instructor guide has no {syllabus} table"
    prefixes = {p for line in block[1].splitlines() if line.count("|") == 3 for p in line.split("|")[2].split()}
    for path in NOTEBOOKS:
        assert path.name.split("_")[0] in prefixes, f"{path.name} is in no session of the syllabus"


def test_notebook_times_are_measured_records():
    times_file = ROOT / "book" / "notebook_times.json"
    times = json.loads(times_file.read_text())
    for key, entry in times.items():  # an entry for a notebook that is gone is ignored by the guide
        assert re.fullmatch(r"notebooks/[\w-]+\.ipynb", key), f"{key}: not a notebook of the book"
        assert entry["seconds"] > 0 and entry["cpu_count"] >= 1


def test_thread_default_is_the_measured_choice():
    choice = json.loads((ROOT / "book" / "metrics" / "thread_choice.json").read_text())
    two = choice["seconds_two_at_once"]
    assert two["1"] < two["2"], "one thread per notebook must be the faster classroom setting to be the default"
    guide = (ROOT / "book" / "instructor_guide.md").read_text()
    for seconds in two.values():
        assert f"{seconds:,.1f} s" in guide, f"the guide does not print {seconds} s from thread_choice.json"
    assert 'os.environ.get("AIAYN_THREADS", "1")' in (ROOT / "aiayn_helpers" / "utils.py").read_text()
    assert "export AIAYN_THREADS ?= 1" in (ROOT / "Makefile").read_text()


def test_execute_notebooks_records_times(tmp_path, monkeypatch):
    sys.path.insert(0, str(ROOT / "tools"))
    from chapters import execute_notebooks

    target = tmp_path / "times.json"
    assert execute_notebooks.record_time(ROOT / "notebooks" / "x.ipynb", 12.34, target)
    assert execute_notebooks.record_time(ROOT / "notebooks" / "y.ipynb", 1.0, target)
    assert not execute_notebooks.record_time(tmp_path / "z.ipynb", 1.0, target), "only the book's notebooks"
    times = json.loads(target.read_text())
    assert list(times) == ["notebooks/x.ipynb", "notebooks/y.ipynb"] and times["notebooks/x.ipynb"]["seconds"] == 12.3

    # the classroom figure joins the entry of the same thread setting, and a new thread setting starts afresh
    monkeypatch.setenv("AIAYN_THREADS", "2")
    execute_notebooks.record_time(ROOT / "notebooks" / "x.ipynb", 10.0, target)
    execute_notebooks.record_time(ROOT / "notebooks" / "x.ipynb", 31.0, target, key_name="seconds_two_at_once")
    entry = json.loads(target.read_text())["notebooks/x.ipynb"]
    assert (entry["seconds"], entry["seconds_two_at_once"], entry["threads"]) == (10.0, 31.0, 2)
    monkeypatch.setenv("AIAYN_THREADS", "1")
    execute_notebooks.record_time(ROOT / "notebooks" / "x.ipynb", 14.0, target)
    entry = json.loads(target.read_text())["notebooks/x.ipynb"]
    assert "seconds_two_at_once" not in entry and (entry["seconds"], entry["threads"]) == (14.0, 1)


# assignment 1 is graded by nbgrader: tests/test_grading.py runs its grading on correct and buggy submissions


# ---------------------------------------------------------------------------- offline math, glossary


def test_mathjax_is_vendored():
    config = yaml.safe_load((ROOT / "_config.yml").read_text())["sphinx"]["config"]
    static = [ROOT / p for p in config["html_static_path"]]
    script = config["mathjax_path"]
    assert not script.startswith(("http:", "https:", "//")), "MathJax must be served by the site (offline use)"
    assert any((s / script).is_file() for s in static), f"{script} is not in {config['html_static_path']}"
    folder = next(s for s in static if (s / script).is_file()) / Path(script).parent
    assert (folder / "LICENSE").is_file() and list((folder / "output/chtml/fonts/woff-v2").glob("*.woff"))


def test_glossary_defines_the_core_terms():
    text = (ROOT / "book" / "glossary.md").read_text()
    block = re.search(r"```\{glossary\}\n(.*?)\n```\s*$", text, re.DOTALL)[1]
    terms = {line.strip() for line in block.splitlines() if line and not line.startswith((" ", ":"))}
    for term in ("Attention", "Query", "Key", "Value", "Head", "Mask", "Teacher forcing", "Label smoothing", "BPE",
                 "Beam search", "BLEU", "Post-norm", "Pre-norm", "Positional encoding"):  # fmt: skip
        assert term in terms, f"the glossary lacks {term!r}"


def test_api_page_documents_every_public_name():
    """book/api.md (Sphinx autodoc) has an entry for every name in aiayn_helpers.__all__."""
    import aiayn_helpers as ah

    page = (ROOT / "book" / "api.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"\.\. auto(?:function|class|data):: aiayn_helpers\.(?:\w+\.)*(\w+)", page))
    assert set(ah.__all__) <= documented, sorted(set(ah.__all__) - documented)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_code_line_is_wider_than_88_columns(path):
    """ruff's E501 lets a single long string through (a digest, a URL); the site would scroll it sideways."""
    wide = [
        line
        for cell in nbformat.read(path, as_version=4).cells
        if cell.cell_type == "code"
        for line in cell.source.splitlines()
        if len(line) > 88
    ]
    assert not wide, wide


# "issue 54", "item 3 of issue 53": the project's own tracker, which a reader of the site,
# a notebook or the README cannot see. Another project's issue is cited by its link
# ("[Tensor2Tensor issue 61](https://github.com/...)").
TRACKER = re.compile(r"(?i)\bissues? #?\d+(?!\]\(https?://)")


def tracker_mentions(text: str) -> list[str]:
    text = re.sub(r"\[[^\]]*\]\(https?://[^)]*\)", "", text)  # a linked citation
    return [m.group(0) for m in TRACKER.finditer(text)]


def reader_texts() -> list[tuple[str, str]]:
    texts = [(p.name, p.read_text()) for p in sorted((ROOT / "book").glob("*.md"))]
    texts.append(("README.md", (ROOT / "README.md").read_text()))
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        markdown = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
        texts.append((path.name, markdown))
    return texts


def test_what_readers_read_names_no_issue_of_the_projects_tracker():
    found = {name: m for name, text in reader_texts() if (m := tracker_mentions(text))}
    assert not found, f"say what the issue asked instead of its number: {found}"


def test_the_tracker_check_lets_a_linked_citation_through():
    cited = "see [Tensor2Tensor issue 61](https://github.com/tensorflow/tensor2tensor/issues/61)"
    assert tracker_mentions(cited) == []
    assert tracker_mentions("Against issue 54's goals") == ["issue 54"]
