"""The chapters in plain Markdown, for the places that load no MyST extension.

Colab and GitHub's notebook view render CommonMark with ``$`` math and nothing else:
there a MyST directive or role shows as raw text. This tool rewrites every markdown cell
of a notebook so that it reads the same there as on the site:

* an admonition (``{admonition}``, ``{note}``, ``{warning}``, ``{dropdown}``, ...) is a
  blockquote headed by its title in bold, its math and code intact;
* an exercise (``{exercise-start}`` ... ``{exercise-end}``, or ``{exercise}``) is a
  heading "Exercise 3.1" (the site's number), its solution a heading "Solution to
  Exercise 3.1" followed by the solution's cells;
* ``{cite:t}`` is "Vaswani et al. (2017)", ``{cite:p}`` and ``{cite}`` are
  "(Vaswani et al., 2017)", each name a link to the work (its ``url`` or ``doi`` in
  book/references.bib);
* ``{ref}``, ``{numref}``, ``{doc}`` and ``{py:obj}`` are links to the page and anchor
  of the published site; ``{math}`` is ``$...$``; ``{sub}``, ``{sup}``, ``{kbd}`` and
  ``{abbr}`` are their HTML elements;
* tabs are a bold title over each tab's text; a ``{figure}`` or ``{image}`` is an image
  with its caption below;
* labels (``(name)=`` and ``:label:``) go; a diagram (``book/figures/*.svg``) is
  embedded as a ``data:image/png`` address, drawn by its code in tools/diagrams at one
  pixel per CSS pixel (the size its SVG shows at), so it shows offline and where the
  notebook is opened alone. PNG, not the SVG: markdown-it, which VS Code's notebooks and
  jupyterlab-myst (the editions' JupyterLab, Binder's too) parse Markdown with, accepts
  ``data:`` images of gif, png, jpeg and webp only and shows any other as its raw text
  (markdown-it's default ``validateLink``; jupyter-book/mystmd issue 855); Colab shows no
  ``data:image/svg+xml`` image (googlecolab/colabtools issue 2092) and no cell attachment
  (issue 3836), and inserts its own pasted images as ``data:image/png``.

A directive or role it does not know is an error, so that a new one cannot reach a
reader raw. ``myst_syntax`` finds any MyST syntax left in a text (the tests run it over
every notebook the Colab links open). ``tools/editions/make_editions.py`` uses this module.
"""

from __future__ import annotations

import base64
import copy
import functools
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from aiayn_helpers.course.exercises import exercise_name

ROOT = Path(__file__).resolve().parents[2]
for _path in (ROOT / "tools", ROOT / "book" / "_ext"):  # tools/: its folders are packages
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))
from notebook_markdown import to_myst  # noqa: E402

BIBLIOGRAPHY = ROOT / "book" / "references.bib"

ADMONITIONS = {
    "admonition", "note", "warning", "tip", "hint", "important", "caution", "attention",
    "danger", "error", "seealso", "dropdown", "topic", "margin", "sidebar", "card",
}  # fmt: skip
TITLED = {"admonition", "dropdown", "topic", "margin", "sidebar", "card"}  # the argument is the whole title
EXERCISES = {"exercise", "exercise-start", "solution", "solution-start"}
CLOSERS = {"exercise-end", "solution-end"}
NOT_PUBLISHED = {"instructor_guide"}  # book/ pages the published (student) site leaves out

_OPEN = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|:{3,})\{(?P<name>[a-z:-]+)\}[ \t]*(?P<arg>.*?)\s*$")
_OPTION = re.compile(r"^\s*:(?P<key>[a-z-]+):\s*(?P<value>.*?)\s*$")
_LABEL_LINE = re.compile(r"^\s*\((?P<label>[^()\s]+)\)=\s*$")
_ROLE = re.compile(r"\{(?P<name>[a-z][a-z:-]*)\}`(?P<body>[^`]*)`")
_TITLED = re.compile(r"^(?P<text>.*?)\s*<(?P<target>[^<>]+)>$", re.DOTALL)
_CODE_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_HEADING = re.compile(r"^#{1,6}\s+(?P<title>.+?)\s*$")


@dataclass
class Reference:
    """A work of the bibliography, as a citation names it."""

    names: str  # "Vaswani et al."
    year: str
    url: str


@dataclass
class Context:
    """What links are made of: the published site, its labels, the bibliography."""

    site: str  # https://owner.github.io/repo/
    labels: dict[str, tuple[str, str]] = field(default_factory=dict)  # label: (page, title)
    references: dict[str, Reference] = field(default_factory=dict)
    page: str = "notebooks/"  # the folder of the page being converted, relative to the site

    def __post_init__(self) -> None:
        if not self.site.startswith("https://") or not self.site.endswith("/"):
            raise ValueError(f"site must be an https:// address ending in /, got {self.site!r}")


# ----------------------------------------------------------------------- bibliography


def _strip_latex(text: str) -> str:
    text = re.sub(r"\\[a-zA-Z]+\s*", "", text)  # {\L}ukasz -> Lukasz-ish; names keep their letters
    text = re.sub(r"\\.", "", text)
    return text.replace("{", "").replace("}", "").strip()


def _field(entry: str, name: str) -> str:
    m = re.search(rf"(?im)^\s*{name}\s*=\s*[{{\"](?P<value>.*?)[}}\"]\s*,?\s*$", entry)
    return m["value"].strip() if m else ""


def cited_names(authors: str) -> str:
    """ "Vaswani et al." for three or more authors, "Ba and Hinton" for two (author-year style)."""
    people = [p.strip() for p in re.split(r"\s+and\s+", authors) if p.strip()]
    if not people:
        raise ValueError(f"expected a BibTeX author list, got {authors!r}")
    last = [_strip_latex(p.split(",")[0] if "," in p else p.split()[-1]) for p in people]
    if len(last) == 1:
        return last[0]
    if len(last) == 2:
        return f"{last[0]} and {last[1]}"
    return f"{last[0]} et al."


def load_bibliography(path: Path = BIBLIOGRAPHY) -> dict[str, Reference]:
    """``{key: Reference}`` of a BibTeX file (author, year, and url or doi of each entry)."""
    text = path.read_text(encoding="utf-8")
    refs = {}
    for m in re.finditer(r"@\w+\s*\{\s*(?P<key>[^,\s]+)\s*,(?P<body>.*?)\n\}", text, re.DOTALL):
        body = m["body"]
        url = _field(body, "url") or (f"https://doi.org/{_field(body, 'doi')}" if _field(body, "doi") else "")
        authors = _field(body, "author") or _field(body, "editor")
        if not (authors and _field(body, "year") and url):
            raise ValueError(f"{path.name}: entry {m['key']} needs an author, a year and a url or doi")
        refs[m["key"]] = Reference(cited_names(authors), _field(body, "year"), url)
    return refs


# ----------------------------------------------------------------------- labels


def page_of(path: Path, root: Path = ROOT) -> str:
    """The site's page of a source file: notebooks/02_x.ipynb -> notebooks/02_x.html."""
    return path.resolve().relative_to(root.resolve()).with_suffix(".html").as_posix()


def collect_labels(sources: dict[str, str]) -> dict[str, tuple[str, str]]:
    """``{label: (page, title)}`` from ``{page: markdown text}``: ``(name)=`` and exercise labels."""
    labels = {}
    for page, text in sources.items():
        lines = text.split("\n")
        for i, line in enumerate(lines):
            m = _LABEL_LINE.match(line)
            if m:
                title = next((h["title"] for h in map(_HEADING.match, lines[i + 1 : i + 4]) if h), m["label"])
                labels[m["label"]] = (page, _inline_plain(title))
            opt = _OPTION.match(line)
            if opt and opt["key"] == "label":
                head = next((_OPEN.match(x) for x in reversed(lines[max(0, i - 6) : i]) if _OPEN.match(x)), None)
                if head and head["name"] in ("exercise", "exercise-start"):
                    labels[opt["value"]] = (page, exercise_name(opt["value"]))
    return labels


def _inline_plain(title: str) -> str:
    return re.sub(r"\{[a-z:-]+\}`([^`<]*?)(?:\s*<[^>]*>)?`", r"\1", title)


def book_context(root: Path = ROOT, site: str | None = None) -> Context:
    """The context of the book in ``root``: its site, the labels of its chapters and pages, its bibliography."""
    import nbformat as nbf

    if site is None:
        from editions import set_repository_url

        site = set_repository_url.site_url()
    sources = {}
    for path in sorted((root / "notebooks").glob("*.ipynb")):
        nb = nbf.read(path, as_version=4)
        sources[page_of(path, root)] = "\n\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    for path in sorted((root / "book").glob("*.md")):
        if path.stem not in NOT_PUBLISHED:  # the published site is the student edition's
            sources[page_of(path, root)] = path.read_text(encoding="utf-8")
    return Context(
        site=site, labels=collect_labels(sources), references=load_bibliography(root / "book" / "references.bib")
    )


# ----------------------------------------------------------------------- roles


def _url(ctx: Context, target: str) -> str:
    """The site's address of a document path relative to the page being converted."""
    path = target.split("#")[0]
    anchor = "#" + target.split("#", 1)[1] if "#" in target else ""
    parts = [p for p in (ctx.page + path).split("/") if p not in ("", ".")]
    resolved: list[str] = []
    for part in parts:
        if part == "..":
            if not resolved:
                raise ValueError(f"{target!r} leaves the site")
            resolved.pop()
        else:
            resolved.append(part)
    page = "/".join(resolved)
    page = re.sub(r"\.(md|ipynb)$", "", page)
    return f"{ctx.site}{page}.html{anchor}"


def _titled(body: str) -> tuple[str, str]:
    m = _TITLED.match(body.strip())
    return (m["text"], m["target"]) if m and m["text"] else ("", body.strip())


def _cite(ctx: Context, keys: str, textual: bool) -> str:
    out = []
    for key in (k.strip() for k in keys.split(",")):
        if key not in ctx.references:
            raise ValueError(f"citation {key!r} is not in the bibliography")
        ref = ctx.references[key]
        out.append(f"[{ref.names} ({ref.year})]({ref.url})" if textual else f"[{ref.names}, {ref.year}]({ref.url})")
    return "; ".join(out) if textual else "(" + "; ".join(out) + ")"


def role(ctx: Context, name: str, body: str) -> str:
    """Plain Markdown for one MyST role."""
    if name == "cite:t":
        return _cite(ctx, body, textual=True)
    if name in ("cite:p", "cite"):
        return _cite(ctx, body, textual=False)
    if name in ("ref", "numref", "eq"):
        text, label = _titled(body)
        if label not in ctx.labels:
            raise ValueError(f"{{{name}}}`{body}`: no label {label!r} in the book")
        page, title = ctx.labels[label]
        return f"[{text or title}]({ctx.site}{page}#{label})"
    if name == "doc":
        text, target = _titled(body)
        return f"[{text or Path(target).name}]({_url(ctx, target)})"
    if name in ("py:obj", "py:func", "py:class", "py:meth", "py:mod", "py:attr", "py:data"):
        text, target = _titled(body)
        return f"[`{text or target}`]({ctx.site}book/api.html#{target.lstrip('~')})"
    if name == "math":
        return f"${body}$"
    if name in ("sub", "sup", "kbd"):
        return f"<{name}>{body}</{name}>"
    if name == "abbr":
        text, expansion = _titled(body.replace("(", "<", 1).replace(")", ">", 1)) if "(" in body else ("", body)
        return f'<abbr title="{expansion}">{text or expansion}</abbr>'
    raise ValueError(f"no plain Markdown for the role {{{name}}} (add it to tools/editions/plain_markdown.py)")


def _roles(ctx: Context, text: str) -> str:
    """Roles replaced, outside inline code spans."""
    out, pos = [], 0
    for m in _ROLE.finditer(text):
        out.append(text[pos : m.start()])
        out.append(role(ctx, m["name"], m["body"]))
        pos = m.end()
    out.append(text[pos:])
    return "".join(out)


# pixels per inch of a diagram's PNG: a browser shows a PNG at one CSS pixel (1/96 inch)
# per pixel, so the PNG shows at its SVG's size
PNG_DPI = 96


@functools.cache
def figure_png(name: str, root: Path = ROOT) -> bytes:
    """The PNG of diagram ``name`` (``ch02_masks``), drawn by its function in tools/diagrams
    as its SVG is (``diagrams.render_png``). Drawing all 46 takes 10-25 s,
    so each is kept in _build/figure_png under a key of its SVG (which tests/test_diagrams.py
    holds equal to a fresh drawing), matplotlib's version and ``PNG_DPI``."""
    import hashlib
    from importlib.metadata import version

    svg = root / "book" / "figures" / f"{name}.svg"
    if not svg.is_file():
        raise ValueError(f"expected a diagram of book/figures/*.svg, got {name!r}")
    key = hashlib.sha256(svg.read_bytes() + f"{version('matplotlib')} {PNG_DPI}".encode()).hexdigest()[:16]
    cached = root / "_build" / "figure_png" / f"{name}-{key}.png"
    if cached.is_file():
        return cached.read_bytes()
    png = _draw_png(name)
    cached.parent.mkdir(parents=True, exist_ok=True)
    partial = cached.with_suffix(f".{os.getpid()}.part")
    partial.write_bytes(png)
    partial.replace(cached)  # atomic: parallel test workers may draw the same diagram
    return png


def _draw_png(name: str) -> bytes:
    if str(ROOT / "tools") not in sys.path:
        sys.path.insert(0, str(ROOT / "tools"))
    import diagrams

    if name not in diagrams.DIAGRAMS:
        raise ValueError(f"expected a diagram of tools/diagrams, got {name!r}")
    return diagrams.render_png(diagrams.DIAGRAMS[name], PNG_DPI)


def figure_data_uri(target: str, root: Path = ROOT) -> str:
    """A diagram (``../book/figures/X.svg``) as a ``data:image/png`` address (the module's
    docstring says why PNG), so that the edition shows it wherever the notebook alone is
    opened (Colab, GitHub, VS Code, JupyterLab with or without jupyterlab-myst, offline)."""
    svg = root / "book" / "figures" / Path(target).name
    if not svg.is_file() or svg.suffix != ".svg":
        raise ValueError(f"expected a diagram of book/figures/*.svg, got {target!r}")
    return "data:image/png;base64," + base64.b64encode(figure_png(svg.stem, root)).decode("ascii")


def _links(ctx: Context, text: str) -> str:
    """Relative images become the site's copies; relative links, the site's pages."""

    def fix(m: re.Match) -> str:
        bang, label, target = m["bang"], m["label"], m["target"]
        if target.startswith("#aiayn_helpers."):  # a package object: its API page entry
            return f"[{label}]({ctx.site}book/api.html{target})"
        if re.match(r"^([a-z]+:|#)", target):
            return m.group(0)
        if bang:
            return f"![{label}]({figure_data_uri(target)})"
        return f"[{label}]({_url(ctx, target)})"

    return re.sub(r"(?P<bang>!?)\[(?P<label>[^\]]*)\]\((?P<target>[^)\s]+)\)", fix, text)


# ----------------------------------------------------------------------- directives


def _closing(lines: list[str], start: int, fence: str) -> int:
    for j in range(start + 1, len(lines)):
        s = lines[j].strip()
        if s and set(s) == {fence[0]} and len(s) >= len(fence):
            return j
    raise ValueError(f"directive opened by {lines[start].strip()!r} is not closed")


def _blockquote(title: str, body: str) -> str:
    lines = [f"**{title}**", ""] + body.split("\n") if title else body.split("\n")
    return "\n".join("> " + line if line.strip() else ">" for line in lines)


def _directive(ctx: Context, name: str, arg: str, options: dict[str, str], body: str) -> str:
    if name in CLOSERS:
        return ""
    if name in ADMONITIONS:
        title = arg if name in TITLED else (arg or name.capitalize())
        if name == "seealso" and not arg:
            title = "See also"
        return _blockquote(_roles(ctx, title), _convert(ctx, body))
    if name in EXERCISES:
        if name.startswith("exercise"):
            label = options.get("label", "")
            heading = f"#### {exercise_name(label)}" if label else "#### Exercise"
        else:
            label = arg.split()[0] if arg else ""
            heading = f"#### Solution to {exercise_name(label)}" if label else "#### Solution"
        body = _convert(ctx, body)
        return heading + ("\n\n" + body if body.strip() else "")
    if name == "math":
        return f"$$\n{body.strip()}\n$$"
    if name == "tab-set":
        return _convert(ctx, body)
    if name == "tab-item":
        return f"**{_roles(ctx, arg)}**\n\n{_convert(ctx, body)}"
    if name in ("figure", "image"):
        alt = options.get("alt", "")
        image = _links(ctx, f"![{alt}]({arg})")
        return image + ("\n\n" + _convert(ctx, body) if name == "figure" and body.strip() else "")
    raise ValueError(f"no plain Markdown for the directive {{{name}}} (add it to tools/editions/plain_markdown.py)")


def _convert(ctx: Context, text: str) -> str:
    lines = text.split("\n")
    out: list[str] = []
    prose: list[str] = []

    def flush() -> None:
        if prose:
            out.append(_links(ctx, _roles(ctx, "\n".join(prose))))
            prose.clear()

    i = 0
    while i < len(lines):
        line = lines[i]
        m = _OPEN.match(line)
        if m:
            flush()
            end = _closing(lines, i, m["fence"])
            j, options = i + 1, {}
            while j < end and _OPTION.match(lines[j]):
                opt = _OPTION.match(lines[j])
                options[opt["key"]] = opt["value"]
                j += 1
            body = "\n".join(lines[j:end]).strip("\n")
            out.append(_directive(ctx, m["name"], m["arg"], options, body))
            i = end + 1
            continue
        fence = _CODE_FENCE.match(line)
        if fence:  # a code block: kept as it is
            flush()
            end = next(
                (k for k in range(i + 1, len(lines)) if lines[k].strip().startswith(fence.group(1))), len(lines) - 1
            )
            out.append("\n".join(lines[i : end + 1]))
            i = end + 1
            continue
        if not _LABEL_LINE.match(line):
            prose.append(line)
        i += 1
    flush()
    text = "\n\n".join(out)
    return re.sub(r"\n{3,}", "\n\n", text).strip("\n")


def plain(text: str, ctx: Context) -> str:
    """A markdown cell's text in plain Markdown (CommonMark with ``$`` math); a chapter's
    JupyterLab form of figures, citations and links (tools/chapters/lab_markdown.py) is read back as
    the site reads it first."""
    return _convert(ctx, to_myst(text))


def plain_notebook(nb: nbformat.NotebookNode, ctx: Context) -> nbformat.NotebookNode:
    """A copy of ``nb`` whose markdown cells are plain Markdown (code and outputs unchanged)."""
    nb = copy.deepcopy(nb)
    cells = []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = plain(cell.source, ctx)
            if not cell.source.strip():
                continue
            found = myst_syntax(cell.source)
            if found:
                raise ValueError(f"MyST syntax left after conversion: {found}")
        cells.append(cell)
    nb.cells = cells
    return nb


# ----------------------------------------------------------------------- the check

MYST_PATTERNS = [  # (kind, pattern) of MyST syntax in Markdown source or in rendered text
    ("directive", re.compile(r"^\s*(`{3,}|:{3,})\{[a-z:-]+\}", re.MULTILINE)),
    ("role", re.compile(r"\{[a-z][a-z:-]*\}`")),
    ("label", re.compile(r"^\s*\([^()\s]+\)=\s*$", re.MULTILINE)),
    ("directive option", re.compile(r"^\s*:(label|class|name|nonumber|hidden|open):", re.MULTILINE)),
    ("substitution", re.compile(r"\{\{[^}]*\}\}")),
    ("block break", re.compile(r"^\+\+\+", re.MULTILINE)),
]


def _outside_code(text: str) -> str:
    """``text`` without fenced code blocks and inline code spans (directives are kept)."""
    kept: list[str] = []
    directives: list[str] = []  # the fences of the directives open here
    code = None  # the fence of the code block we are in
    for line in text.split("\n"):
        stripped = line.strip()
        if code is not None:
            if stripped.startswith(code) and set(stripped) == {code[0]}:
                code = None
            continue
        opening = _OPEN.match(line)
        if opening:
            directives.append(opening["fence"])
        elif directives and stripped and set(stripped) == {directives[-1][0]} and len(stripped) >= len(directives[-1]):
            directives.pop()
        elif _CODE_FENCE.match(line):
            code = _CODE_FENCE.match(line).group(1)
            continue
        kept.append(line)
    return re.sub(r"(?<![`}])(`{1,2})(?!`)[^`]*?\1(?!`)", "", "\n".join(kept))


def myst_syntax(text: str) -> list[str]:
    """Every piece of MyST syntax in a Markdown text (outside code), as ``kind: excerpt``."""
    prose = _outside_code(text)
    found = []
    for kind, pattern in MYST_PATTERNS:
        for m in pattern.finditer(prose):
            found.append(f"{kind}: {prose[max(0, m.start() - 20) : m.end() + 30].strip()!r}")
    return found
