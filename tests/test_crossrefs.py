"""Every cross-reference and forward promise in the book resolves to something that exists.

A reader who follows "see chapter 5", "the next chapter", a {ref} or {doc} role, or a
link between notebooks must land on a page of the book, and a sentence that promises
that chapter N *shows* something must be kept by chapter N. Checked here, without a build:

- "chapter N" / "chapters N and M" / "appendix A": a notebook with that number is in _toc.yml;
- "the next chapter" / "the previous chapter": the neighbouring chapter is in _toc.yml;
- vague promises ("a later chapter", "a future chapter"): not allowed, name the chapter;
- "chapter N shows / plots / trains ...": listed in PROMISES below with a phrase that chapter N contains;
- {ref}`label`, {ref}`text <label>`, {numref}, {eq}: a label that some page defines;
- {doc}`target` and relative Markdown links: a file that exists and is in _toc.yml.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
from notebook_markdown import to_myst  # noqa: E402

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
PAGES = sorted((ROOT / "book").glob("*.md"))

# A sentence that says chapter N *does* something is a promise: name it here with a phrase
# (case-insensitive) that chapter N's text or code must contain for the promise to be kept.
# key: (file of the sentence, chapter number, the verb) -> phrase in chapter N
PROMISES = {
    ("attention_explorer.md", "8", "explains"): "previous token",
    ("00_a_first_look.ipynb", "6", "shows"): "double softmax",
    ("06_decoder.ipynb", "7", "implements"): "greedy",
    ("instructor_guide.md", "7", "trains"): "train",
    ("instructor_guide.md", "2", "uses"): "variance",
    ("07_full_model.ipynb", "6", "shows"): "double softmax",
    ("A_forward_pass_numpy.ipynb", "4", "discusses"): "mistake-pe-i-vs-2i",
    ("06_decoder.ipynb", "2", "trains"): "inverted mask",
    ("glossary.md", "5", "measures"): "Gradients at initialisation",
    ("05_encoder.ipynb", "7", "adds"): "second-moment",
    ("07_full_model.ipynb", "5", "shows"): "Gradients at initialisation",
    ("glossary.md", "10", "derives"): "online softmax",
}
PROMISE_VERBS = (
    "shows|plots|trains|implements|explains|derives|measures|builds|covers|proves|compares|checks|uses|"
    "will|returns|discusses|adds|introduces|visualises|visualizes"
)

CHAPTER = re.compile(r"\b[Cc]hapters?\s+(\d+(?:\s*(?:,|and|or|to|-|–)\s*\d+)*)(?:'s)?(?:\s+(\w+))?")
APPENDIX = re.compile(r"\b[Aa]ppendix\s+([A-Z])\b")
NEIGHBOUR = re.compile(r"\b[Tt]he (next|previous) chapter\b")
VAGUE = re.compile(
    r"\b(?:a|an|some|one) (?:later|future|coming|subsequent) (?:chapter|notebook)\b|"
    r"\blater chapters? (?:will|shows?|plots?|trains?)\b"
)
ROLE = re.compile(r"\{(ref|numref|eq|doc)\}`([^`]*)`")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
LABEL_DEF = re.compile(r"^\((?P<label>[A-Za-z0-9_.:-]+)\)=\s*$|^:(?:label|name):\s*(?P<opt>\S+)\s*$", re.MULTILINE)
EQ_LABEL = re.compile(r"\\label\{([^}]+)\}|^\$\$\s*\((?P<l>[^)]+)\)\s*$", re.MULTILINE)


def toc_files() -> set[str]:
    found: set[str] = set()

    def walk(node):
        if isinstance(node, dict):
            for key in ("file", "root"):
                if key in node:
                    found.add(str(Path(node[key]).with_suffix("")))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(yaml.safe_load((ROOT / "_toc.yml").read_text()))
    return found


def chapter_files() -> dict[str, Path]:
    """'0'...'7', 'A' -> the notebook of that chapter, for notebooks in the table of contents."""
    toc = toc_files()
    chapters = {}
    for path in NOTEBOOKS:
        if f"notebooks/{path.stem}" in toc:
            prefix = path.name.split("_")[0]
            chapters[str(int(prefix)) if prefix.isdigit() else prefix] = path
    return chapters


def texts() -> list[tuple[Path, str, str]]:
    """(file, kind, text) for every markdown cell, code cell and book page; MyST comments (% ...) blanked."""
    out = []
    for path in NOTEBOOKS:
        for cell in nbformat.read(path, as_version=4).cells:
            # the chapters' JupyterLab links (tools/chapters/lab_markdown.py) as the site reads them
            source = to_myst(cell.source) if cell.cell_type == "markdown" else cell.source
            out.append((path, cell.cell_type, source))
    for path in PAGES:
        out.append((path, "markdown", path.read_text()))
    return [(p, k, re.sub(r"^%.*$", "", t, flags=re.MULTILINE) if k == "markdown" else t) for p, k, t in out]


def strip_code(markdown: str) -> str:
    """Markdown without fenced code blocks and inline code (a role's backticks are kept)."""
    markdown = re.sub(r"^```(?!\{)[^\n]*\n.*?^```", "", markdown, flags=re.MULTILINE | re.DOTALL)
    return re.sub(r"(?<![}`])`[^`\n]+`", "", markdown)


def defined_labels() -> set[str]:
    labels = set()
    for _, _, text in texts():
        for m in LABEL_DEF.finditer(text):
            labels.add(m["label"] or m["opt"])
        for m in EQ_LABEL.finditer(text):
            labels.add(m[1] or m["l"])
    return labels


def numbers(spec: str) -> list[str]:
    nums = [int(n) for n in re.findall(r"\d+", spec)]
    if re.search(r"\bto\b|[-–]", spec) and len(nums) == 2:
        return [str(n) for n in range(nums[0], nums[1] + 1)]
    return [str(n) for n in nums]


def where(path: Path, text: str, pos: int) -> str:
    line = text[:pos].count("\n") + 1
    return f"{path.relative_to(ROOT)} (line {line} of its cell or page): {text[max(0, pos - 60) : pos + 80]!r}"


def test_the_book_has_chapters():
    assert {"0", "1", "2"} <= set(chapter_files())


def test_chapter_mentions_resolve():
    chapters = chapter_files()
    bad = []
    for path, _, text in texts():
        for m in CHAPTER.finditer(text):
            for n in numbers(m[1]):
                if n not in chapters:
                    bad.append(f"chapter {n} is not in the book: {where(path, text, m.start())}")
        for m in APPENDIX.finditer(text):
            if m[1] not in chapters:
                bad.append(f"appendix {m[1]} is not in the book: {where(path, text, m.start())}")
    assert not bad, "\n".join(bad)


def test_next_and_previous_chapter_exist():
    chapters = chapter_files()
    bad = []
    for path in NOTEBOOKS:
        prefix = path.name.split("_")[0]
        if not prefix.isdigit():
            continue
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type != "markdown":
                continue
            for m in NEIGHBOUR.finditer(cell.source):
                target = str(int(prefix) + (1 if m[1] == "next" else -1))
                if target not in chapters:
                    bad.append(f"the {m[1]} chapter ({target}) does not exist: {where(path, cell.source, m.start())}")
    assert not bad, "\n".join(bad)


def test_no_vague_forward_promises():
    bad = []
    for path, kind, text in texts():
        if kind != "markdown":
            continue
        for m in VAGUE.finditer(strip_code(text)):
            bad.append(where(path, strip_code(text), m.start()))
    assert not bad, "promise a named chapter that exists, or nothing:\n" + "\n".join(bad)


def test_promises_are_kept():
    chapters = chapter_files()
    unlisted, broken = [], []
    for path, kind, text in texts():
        if kind != "markdown":
            continue
        for m in CHAPTER.finditer(text):
            verb = (m[2] or "").lower()
            if not re.fullmatch(PROMISE_VERBS, verb):
                continue
            for n in numbers(m[1]):
                key = (path.name, n, verb)
                if key not in PROMISES:
                    unlisted.append(f"{key}: {where(path, text, m.start())}")
                elif n in chapters:
                    target = chapters[n]
                    content = "\n".join(c.source for c in nbformat.read(target, as_version=4).cells).lower()
                    if PROMISES[key].lower() not in content:
                        broken.append(f"{key}: chapter {n} ({target.name}) never mentions {PROMISES[key]!r}")
    assert not unlisted, "new promises; add each to PROMISES with what chapter N must contain:\n" + "\n".join(unlisted)
    assert not broken, "\n".join(broken)


def test_promise_table_has_no_stale_entries():
    sources = {p.name: p for p in [*NOTEBOOKS, *PAGES]}
    for file, n, verb in PROMISES:
        assert file in sources, f"PROMISES names {file}, which no longer exists"
        path = sources[file]
        text = (
            path.read_text()
            if path.suffix == ".md"
            else "\n".join(c.source for c in nbformat.read(path, as_version=4).cells)
        )
        assert re.search(rf"[Cc]hapters?[^.]*\b{n}(?:'s)?\s+{verb}\b", text), f"stale PROMISES entry {(file, n, verb)}"


def test_roles_point_to_defined_labels_and_pages():
    labels = defined_labels()
    toc = toc_files()
    bad = []
    for path, kind, text in texts():
        if kind != "markdown":
            continue
        for m in ROLE.finditer(text):
            role, body = m[1], m[2]
            target = re.search(r"<([^>]+)>\s*$", body)
            target = target[1] if target else body.strip()
            if role == "doc":
                base = path.parent.relative_to(ROOT)
                resolved = (ROOT / base / target).resolve()
                key = str(resolved.relative_to(ROOT).with_suffix("")) if resolved.is_relative_to(ROOT) else target
                if key not in toc:
                    bad.append(f"{{doc}} target {target!r} is not a page of the book: {where(path, text, m.start())}")
            elif target not in labels:
                bad.append(f"{{{role}}} label {target!r} is defined nowhere: {where(path, text, m.start())}")
    assert not bad, "\n".join(bad)


def test_relative_links_resolve():
    toc = toc_files()
    bad = []
    for path, kind, text in texts():
        if kind != "markdown":
            continue
        for m in LINK.finditer(strip_code(text)):
            url = m[1]
            if re.match(r"[a-z]+:|#|mailto:", url):
                continue
            file = url.split("#", 1)[0]
            resolved = (path.parent / file).resolve()
            if not resolved.exists():
                bad.append(f"link to a missing file {url!r}: {where(path, text, m.start())}")
            elif resolved.suffix in (".ipynb", ".md") and str(resolved.relative_to(ROOT).with_suffix("")) not in toc:
                bad.append(f"link to a page outside the book {url!r}: {where(path, text, m.start())}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize(
    "sentence, ok",
    [
        ("as chapter 5 shows", True),
        ("a later chapter plots them", False),
        ("later chapters will train it", False),
        ("The code that later chapters rely on", True),
    ],
)
def test_vague_promise_pattern(sentence, ok):
    assert (VAGUE.search(sentence) is None) == ok
