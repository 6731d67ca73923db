"""A chapter notebook as lecture slides: the parsing half of `make slides`.

A chapter is read as a sequence of blocks (headings, prose paragraphs, the paper's
words in block quotes, display equations, lists, tables, diagrams, figures drawn by
cells, common-mistake boxes and exercises) and each ``##`` section (and ``###``
subsection) becomes a few slides of one idea each:

* an opening slide: the heading, the section's first sentence and its *key formula*
  (if it has one);
* a slide for each block quote (the paper's words, with the citation), each other
  display equation (with the sentence that introduces it), each list whose items
  start with a bold phrase (the points, one line each), each short table, each
  diagram and each figure;
* a slide for each common-mistake box: the mistake, its fix and its check;
* a slide for each exercise's task (never its solution);
* the summary, two or three points a slide.

The key formula of a section is the first display equation that is the paper's own
(inside a block quote, or introduced by a paragraph that cites a paper or names an
equation of it), else the equation that the section's first paragraph introduces
(the paragraph ends with a colon or comma and the equation follows it): the opening
slide shows it, beside a sentence of the first paragraph only when that paragraph
comes before the formula or right after it. Every other display equation gets a
slide of its own, with the sentence that introduces it, so that no formula is shown
beside a sentence it does not belong to.

The chapter's prose becomes the speaker notes: each paragraph goes to the notes of
the slide it follows in the chapter, or of the slide it introduces when it ends in a
colon.
"""

from __future__ import annotations

import ast
import html
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from markdown_it import MarkdownIt
from mdit_py_plugins.dollarmath import dollarmath_plugin

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "book" / "_ext"))
from notebook_markdown import to_myst  # noqa: E402  (the chapters' JupyterLab links, read as MyST)

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
LEAD_WORDS = 40  # the opening slide's sentence(s), at most
POINT_WORDS = 28  # one point of a list or a summary
MISTAKE_WORDS = 75  # the "mistake" part of a mistake slide
SUMMARY_POINTS = 3  # points per summary slide
TABLE_ROWS = 10  # longer tables go to the notes only
SKIPPED = ("in the package", "self-check", "references", "further reading")


@dataclass
class Slide:
    title: str  # inline Markdown (math typeset)
    body: str = ""  # HTML
    kind: str = "text"  # title, text, quote, formula, points, table, figure, mistake, exercise, summary
    notes: list[str] = field(default_factory=list)  # Markdown paragraphs


# ---------------------------------------------------------------- Markdown and MyST


def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False}).enable("table").use(dollarmath_plugin, double_inline=True)
    md.add_render_rule(
        "math_inline", lambda self, tokens, idx, options, env: f"\\({html.escape(tokens[idx].content)}\\)"
    )
    md.add_render_rule(  # $$...$$ inside a paragraph (a quoted display equation, say)
        "math_inline_double",
        lambda self, tokens, idx, options, env: (
            f'<span class="math display">\\[{html.escape(tokens[idx].content)}\\]</span>'
        ),
    )
    md.add_render_rule(
        "math_block_label",
        lambda self, tokens, idx, options, env: f'<div class="math">\\[{html.escape(tokens[idx].content)}\\]</div>\n',
    )
    md.add_render_rule(
        "math_block",
        lambda self, tokens, idx, options, env: f'<div class="math">\\[{html.escape(tokens[idx].content)}\\]</div>\n',
    )
    return md


MD = _markdown()


def render(text: str) -> str:
    return MD.render(text)


def render_inline(text: str) -> str:
    return MD.renderInline(text)


def _authors_years(bib: Path = ROOT / "book" / "references.bib") -> dict[str, tuple[str, str]]:
    """``{key: ("Vaswani et al.", "2017")}`` from the book's BibTeX file."""
    names = {}
    for key, body in re.findall(r"@\w+\{([^,]+),(.*?)\n\}", bib.read_text(encoding="utf-8"), re.S):
        authors = re.search(r"author\s*=\s*\{(.+?)\},?\s*\n", body)
        year = re.search(r"year\s*=\s*\{?(\d{4})", body)
        first = authors[1].split(" and ")[0].split(",")[0].strip("{} ") if authors else key.strip()
        more = " et al." if authors and " and " in authors[1] else ""
        names[key.strip()] = (first + more, year[1] if year else "")
    return names


CITATIONS = _authors_years()


def _labels() -> dict[str, str]:
    """What a ``{ref}`` without a title points at, in words: a heading, an exercise, a box."""
    labels = {}
    for path in NOTEBOOKS.glob("*.ipynb"):
        text = "\n".join(
            to_myst(c.source) for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown"
        )
        for label, heading in re.findall(r"(?m)^\(([\w-]+)\)=\s*\n#+\s+(.+)", text):
            labels[label] = f"the section “{heading.strip()}”"
        for label, title in re.findall(r"(?m)^\(([\w-]+)\)=\s*\n```\{admonition\}\s*(.+)", text):
            labels[label] = f"the box “{title.strip()}”"
        for label in re.findall(r":label:\s*(ch\w+-ex\d+)", text):
            labels[label] = exercise_name(label).lower()
    return labels


def exercise_name(label: str) -> str:
    """``ch02-ex1`` -> ``Exercise 2.1``; ``chA-ex3`` -> ``Exercise A.3``."""
    m = re.fullmatch(r"ch0*(\w+?)-ex(\d+)", label)
    return f"Exercise {m[1]}.{m[2]}" if m else label


ROLE = re.compile(r"\{(ref|numref|doc|eq|term|py:obj|py:func|py:class)\}`([^`]*)`")
CITE = re.compile(r"\{cite(?::([pt]))?\}`([^`]*)`")
LABEL_LINE = re.compile(r"(?m)^\([\w-]+\)=\s*$\n?")
COMMENT_LINE = re.compile(r"(?m)^%.*$\n?")


def _role(m: re.Match) -> str:
    kind, content = m[1], m[2].strip()
    titled = re.fullmatch(r"(.*?)\s*<([^>]*)>", content, re.S)
    text, target = (titled[1], titled[2]) if titled else ("", content)
    if kind.startswith("py:"):
        return f"`{text or target}`"
    return text or LABELS.get(target, target.replace("-", " "))


def _cite(m: re.Match) -> str:
    found = [CITATIONS.get(k.strip(), (k.strip(), "")) for k in m[2].split(",")]
    if m[1] == "t":
        return "; ".join(f"{who} ({year})" for who, year in found)
    return "(" + "; ".join(f"{who}, {year}" for who, year in found) + ")"


def clean(text: str) -> str:
    """MyST-only syntax in plain Markdown: roles keep their words, citations name authors and year."""
    text = COMMENT_LINE.sub("", LABEL_LINE.sub("", text))
    return CITE.sub(_cite, ROLE.sub(_role, text))


LABELS = _labels()


# ---------------------------------------------------------------- sentences


def _masked(text: str) -> tuple[str, list[str]]:
    """The text with math and code spans replaced by placeholders (no sentence ends inside them)."""
    spans: list[str] = []

    def keep(m: re.Match) -> str:
        spans.append(m[0])
        return f"\x00{len(spans) - 1}\x00"

    return re.sub(r"\$\$.+?\$\$|\$[^$]+\$|`[^`]*`", keep, text, flags=re.S), spans


def _unmask(text: str, spans: list[str]) -> str:
    return re.sub(r"\x00(\d+)\x00", lambda m: spans[int(m[1])], text)


ABBREVIATIONS = re.compile(r"(?:\b(?:e\.g|i\.e|et al|cf|vs|Fig|Eq|approx|resp|etc)\.)$")


def sentences(text: str) -> list[str]:
    """The sentences of a paragraph (math, code and abbreviations do not end one)."""
    masked, spans = _masked(" ".join(text.split()))
    out, start = [], 0
    for m in re.finditer(r"[.!?][)*_\"”]*\s+(?=[A-Z(*_`\"“\x00])", masked):
        if ABBREVIATIONS.search(masked[start : m.start() + 1]):
            continue
        out.append(masked[start : m.end()].strip())
        start = m.end()
    out.append(masked[start:].strip())
    return [_unmask(s, spans) for s in out if s]


def shorten(text: str, words: int) -> str:
    """Whole sentences up to ``words`` words (at least one sentence, cut with ... if longer)."""
    picked: list[str] = []
    for sentence in sentences(text):
        short = len(" ".join(picked).split()) < words // 3  # "Why *must*?" needs its answer
        if picked and not short and len(" ".join(picked + [sentence]).split()) > words:
            break
        picked.append(sentence)
    if not picked:
        return ""
    masked, spans = _masked(" ".join(picked))
    tokens = masked.split()
    if len(tokens) > words * 2:
        masked = " ".join(tokens[:words]).rstrip(",;:") + " ..."
    return _unmask(masked, spans)


# ---------------------------------------------------------------- blocks

FENCED = re.compile(
    r"```\{exercise-start\}\s*\n:label:\s*(?P<ex>\S+)\s*\n```\s*\n(?P<task>.*?)```\{exercise-end\}\s*\n```"
    r"|```\{solution-start\}.*?```\{solution-end\}\s*\n```"
    r"|(?:\((?P<label>[\w-]+)\)=\s*\n)?```\{admonition\}\s*(?P<box>[^\n]*)\n(?::class:[^\n]*\n)?(?P<text>.*?)\n```",
    re.S,
)
IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+\.svg)\)")


@dataclass
class Block:
    kind: str  # heading, para, quote, eq, list, table, image, figure, mistake, exercise
    text: str = ""
    level: int = 0  # headings
    extra: str = ""  # image source, mistake title, figure HTML, exercise label
    label: str = ""  # a mistake box's MyST label
    check: str = ""  # a mistake box's check: the assert the chapter's code runs after it
    check_fails: bool = False  # whether that assert fails on the mistake (else it asserts the effect)


def markdown_blocks(source: str) -> list[Block]:
    blocks: list[Block] = []
    pos = 0
    for m in FENCED.finditer(source):
        blocks += _prose_blocks(source[pos : m.start()])
        if m["ex"]:
            blocks.append(Block("exercise", clean(m["task"]).strip(), extra=m["ex"]))
        elif m["box"] is not None:
            title = clean(m["box"]).strip()
            blocks.append(Block("mistake", clean(m["text"]).strip(), extra=title, label=m["label"] or ""))
        pos = m.end()
    return blocks + _prose_blocks(source[pos:])


def _prose_blocks(text: str) -> list[Block]:
    blocks: list[Block] = []
    text = clean(text)
    # headings are blocks of their own even without a blank line around them (a line
    # of a fenced code block that starts with "#" is a shell comment, not a heading)
    parts = re.split(r"(?ms)(^```.*?^```[ \t]*$)", text)
    text = "".join(p if p.startswith("```") else re.sub(r"(?m)^(#{1,6}\s.+)$", r"\n\1\n", p) for p in parts)
    for para in re.split(r"\n\s*\n", text):
        para = para.strip("\n")
        if not para.strip():
            continue
        heading = re.fullmatch(r"(#{1,6})\s+(.+)", para.strip())
        if heading:
            blocks.append(Block("heading", heading[2].strip(), level=len(heading[1])))
        elif para.lstrip().startswith(">"):
            lines = [re.sub(r"^\s*>\s?", "", ln) for ln in para.splitlines()]
            if blocks and blocks[-1].kind == "quote" and not _attributed(blocks[-1].text):
                blocks[-1].text += "\n\n" + "\n".join(lines)
            else:
                blocks.append(Block("quote", "\n".join(lines)))
        elif IMAGE.search(para):
            for alt, src in IMAGE.findall(para):
                blocks.append(Block("image", alt, extra=src))
            rest = IMAGE.sub("", para).strip()
            if rest:
                blocks.append(Block("para", rest))
        elif re.match(r"\s*([-*]|\d+\.)\s", para):
            blocks.append(Block("list", para))
        elif para.lstrip().startswith("|"):
            blocks.append(Block("table", para))
        elif para.lstrip().startswith("<"):
            continue
        else:
            for i, piece in enumerate(re.split(r"\$\$(.+?)\$\$", para, flags=re.S)):
                if i % 2:
                    blocks.append(Block("eq", piece.strip()))
                elif piece.strip(" \n,.;"):
                    blocks.append(Block("para", piece.strip()))
    return blocks


def _attributed(quote: str) -> bool:
    return bool(re.search(r"(?m)^\s*[—-]{1,2}\s", quote))


def figure_html(output, alt: str) -> str | None:
    data = output.get("data", {})
    if output.output_type not in ("display_data", "execute_result") or "image/png" not in data:
        return None
    src = data["image/png"].strip()
    return f'<img class="figure" src="data:image/png;base64,{src}" alt="{html.escape(alt)}">'


def assertion(code: str) -> tuple[str, bool]:
    """The check a chapter runs after a mistake: the assert that fails on it (inside
    ``ah.expect_error(AssertionError)``), else the first assert about the wrong version's result
    (a name with wrong, naive, broken, ... in it); else nothing. Also says whether it is the first kind."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return "", False
    failing = [
        node
        for with_node in ast.walk(tree)
        if isinstance(with_node, ast.With) and "expect_error(AssertionError" in ast.unparse(with_node.items[0])
        for node in ast.walk(with_node)
        if isinstance(node, ast.Assert)
    ]
    if failing:
        return f"assert {ast.unparse(failing[0].test)}", True
    wrong = re.compile(r"\b\w*(?:wrong|naive|broken|stale|unshifted|typo|shared|inverted)\w*\b")
    shown = [node for node in ast.walk(tree) if isinstance(node, ast.Assert) and wrong.search(ast.unparse(node.test))]
    return (f"assert {ast.unparse(shown[0].test)}", False) if shown else ("", False)


def notebook_blocks(path: Path) -> list[Block]:
    """The blocks of a chapter in the order of its cells (a mistake box gets the check its code runs)."""
    nb = nbformat.read(path, as_version=4)
    blocks: list[Block] = []
    section = ""
    open_box: Block | None = None
    in_solution = False  # a solution spans cells: its start, code cells, its end
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            source = to_myst(cell.source)
            if in_solution:
                end = re.search(r"```\{solution-end\}\s*\n```", source)
                if end is None:
                    continue
                source, in_solution = source[end.end() :], False
            start = re.search(r"```\{solution-start\}(?:(?!```\{solution-end\}).)*\Z", source, re.S)
            if start:
                source, in_solution = source[: start.start()], True
            new = markdown_blocks(source)
            blocks += new
            for b in new:
                if b.kind == "heading":
                    section = b.text
            boxes = [b for b in new if b.kind == "mistake"]
            if boxes:
                open_box = boxes[-1]
            if any(b.kind == "heading" for b in new[new.index(open_box) + 1 if open_box in new else 0 :]):
                open_box = None  # a new section begins: the code below it is not the box's
        elif cell.cell_type == "code" and not in_solution:
            if open_box is not None and not open_box.check:
                open_box.check, open_box.check_fails = assertion(cell.source)
            meta = cell.metadata.get("mystnb", {}).get("image", {})
            alt = meta.get("alt", f"A figure of the section {section}.")
            hidden = {"remove-cell", "remove-output", "exercise-quiz"} & set(cell.metadata.get("tags", []))
            for output in [] if hidden else cell.get("outputs", []):  # what the site hides, the slides do too
                img = figure_html(output, alt)
                if img:
                    blocks.append(Block("figure", alt, extra=img))
    return blocks
