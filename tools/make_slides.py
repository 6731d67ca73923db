"""One slide deck per session of the syllabus, generated from the chapters (`make slides`).

    python tools/make_slides.py                 # every session into _build/slides/
    python tools/make_slides.py --session 2     # one session

The syllabus (the ``{syllabus}`` block of book/instructor_guide.md) says which chapters
each session covers. For every chapter, in order, a deck gets:

* a title slide: the chapter's title and its learning objectives;
* one slide per section (``##`` heading): the heading and the section's first
  paragraph, the talk's thread;
* a slide for every diagram (book/figures/*.svg) and every figure a cell draws, with the
  section it belongs to as its title: what the lecturer talks over;
* the chapter's summary in full.

Code is left out (the students run it in the lab part of the session). A deck is one
HTML file that works offline: figures are embedded, diagrams are copied beside it, the
math is typeset by the MathJax copy that ships with the site (book/_static/mathjax),
and a few lines of JavaScript turn the pages (arrow keys, space, or a click; ``F`` for
full screen). Nothing is fetched from another host.
"""

from __future__ import annotations

import argparse
import html
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from markdown_it import MarkdownIt
from mdit_py_plugins.dollarmath import dollarmath_plugin

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "book" / "instructor_guide.md"
NOTEBOOKS = ROOT / "notebooks"
FIGURES = ROOT / "book" / "figures"
MATHJAX = ROOT / "book" / "_static" / "mathjax"
FIRST_PARAGRAPH_WORDS = 90


@dataclass
class Session:
    number: int
    topic: str
    chapters: list[Path]


@dataclass
class Slide:
    title: str
    body: str = ""  # HTML
    kind: str = "text"  # text, figure, title
    notes: list[str] = field(default_factory=list)


def syllabus(guide: Path = GUIDE) -> list[Session]:
    """The sessions of the instructor guide's ``{syllabus}`` block, with their chapters' notebooks."""
    block = re.search(r"```\{syllabus\}\n(.*?)```", guide.read_text(encoding="utf-8"), re.S)
    if block is None:
        raise SystemExit(f"{guide} has no {{syllabus}} block")
    sessions = []
    for line in block[1].strip().splitlines():
        number, topic, prefixes, *_ = (part.strip() for part in line.split("|"))
        chapters = []
        for prefix in prefixes.split():
            found = sorted(NOTEBOOKS.glob(f"{prefix}_*.ipynb"))
            if not found:
                raise SystemExit(f"session {number}: no notebook for chapter {prefix}")
            chapters.append(found[0])
        sessions.append(Session(int(number), topic, chapters))
    return sessions


def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False}).enable("table").use(dollarmath_plugin, double_inline=True)
    md.add_render_rule(
        "math_inline", lambda self, tokens, idx, options, env: f"\\({html.escape(tokens[idx].content)}\\)"
    )
    md.add_render_rule(
        "math_block", lambda self, tokens, idx, options, env: f"<p>\\[{html.escape(tokens[idx].content)}\\]</p>\n"
    )
    return md


MD = _markdown()
ROLE = re.compile(r"\{(?:ref|numref|doc|eq|term)\}`([^`<]*?)(?:\s*<[^>]*>)?`")
CITE = re.compile(r"\{cite(?::[pt])?\}`([^`]*)`")
LABEL = re.compile(r"^\([\w-]+\)=\s*$", re.M)
IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+\.svg)\)")


def _authors_years(bib: Path = ROOT / "book" / "references.bib") -> dict[str, str]:
    """``{key: "Vaswani et al., 2017"}`` from the book's BibTeX file."""
    names = {}
    for key, body in re.findall(r"@\w+\{([^,]+),(.*?)\n\}", bib.read_text(encoding="utf-8"), re.S):
        authors = re.search(r"author\s*=\s*\{(.+?)\},?\s*\n", body)
        year = re.search(r"year\s*=\s*\{?(\d{4})", body)
        first = authors[1].split(" and ")[0].split(",")[0].strip("{} ") if authors else key
        more = " et al." if authors and " and " in authors[1] else ""
        names[key.strip()] = f"{first}{more}, {year[1]}" if year else first + more
    return names


CITATIONS = _authors_years()


def clean(text: str) -> str:
    """MyST-only syntax in plain words: roles keep their text, citations name authors and year."""
    text = LABEL.sub("", text)
    text = ROLE.sub(lambda m: m[1].strip() or "", text)
    cite = lambda m: "(" + "; ".join(CITATIONS.get(k.strip(), k.strip()) for k in m[1].split(",")) + ")"  # noqa: E731
    return CITE.sub(cite, text)


def first_paragraph(text: str) -> str:
    """The first prose paragraph of a section (no quote, list, directive or image), shortened."""
    for para in re.split(r"\n\s*\n", text):
        para = para.strip()
        if not para or para.startswith((">", "-", "*", "```", ":::", "|", "!", "%", "<", "(")) or para[0].isdigit():
            continue
        words = para.split()
        if len(words) > FIRST_PARAGRAPH_WORDS:
            para = " ".join(words[:FIRST_PARAGRAPH_WORDS]) + " ..."
        return para
    return ""


def figure_html(output) -> str | None:
    data = output.get("data", {})
    if output.output_type not in ("display_data", "execute_result") or "image/png" not in data:
        return None
    return f'<img class="figure" src="data:image/png;base64,{data["image/png"].strip()}" alt="{{alt}}">'


def section_body(text: str) -> str:
    """What a section's slide shows: its first paragraph, the paper's words it quotes, its first equation."""
    parts = [first_paragraph(text)]
    quote = re.search(r"(?m)^(>.*\n?)+", text)
    if quote:
        lines = [ln for ln in quote[0].splitlines() if ln.strip(">").strip()]
        parts.append("\n".join(lines[:6]) + ("\n> ..." if len(lines) > 6 else ""))
    equation = re.search(r"\$\$(.+?)\$\$", text, re.S)
    if equation:
        parts.append(f"$${equation[1].strip()}$$")
    return MD.render("\n\n".join(p for p in parts if p))


def chapter_slides(path: Path, diagrams: set[str]) -> list[Slide]:
    """The slides of one chapter, in the order of its cells."""
    nb = nbformat.read(path, as_version=4)
    # first the chapter as a sequence of (section, markdown text or figure HTML)
    items: list[tuple[str, str, str]] = []  # (kind, section, content)
    section = ""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            text = clean(cell.source)
            title = re.match(r"#\s+(.+)", text)
            if title:
                section = title[1].strip()
                items.append(("title", section, text[title.end() :]))
                text = text[title.end() :]
                cut = text.find("\n## ")
                text = text[cut + 1 :] if cut >= 0 else ""
            for part in re.split(r"(?m)^(?=##\s)", text):
                heading = re.match(r"##\s+(.+)", part)
                if heading:
                    section = heading[1].strip()
                    part = part[heading.end() :]
                    items.append(("section", section, ""))
                for alt, src in IMAGE.findall(part):
                    diagrams.add(Path(src).name)
                    img = f'<img class="diagram" src="figures/{Path(src).name}" alt="{html.escape(alt)}">'
                    items.append(("figure", section, img))
                items.append(("text", section, IMAGE.sub("", part)))
        elif cell.cell_type == "code":
            alt = cell.metadata.get("mystnb", {}).get("image", {}).get("alt", f"A figure of the section {section}.")
            for output in cell.get("outputs", []):
                img = figure_html(output)
                if img:
                    items.append(("figure", section, img.replace("{alt}", html.escape(alt))))
    # then one slide per title and section (its text gathered from every cell), one per figure
    slides: list[Slide] = []
    texts: dict[int, list[str]] = {}
    for kind, name, content in items:
        if kind == "title":
            objectives = re.search(r"\*\*Learning objectives\.\*\*(.*?)(?:\n\s*\n(?!\s*[-*])|\Z)", content, re.S)
            body = MD.render(objectives[0]) if objectives else MD.render(first_paragraph(content))
            slides.append(Slide(name, body, "title"))
        elif kind == "section":
            slides.append(Slide(name, "", "text"))
            texts[len(slides) - 1] = []
        elif kind == "figure":
            slides.append(Slide(name, content, "figure"))
        elif texts:
            texts[max(texts)].append(content)
    for index, parts in texts.items():
        slide, text = slides[index], "\n\n".join(parts)
        if slide.title.lower().startswith("summary"):
            slide.body = MD.render(text)
        elif slide.title.lower().startswith(("exercises", "references", "further reading")):
            slide.body = "<p>In the chapter: work through them in the lab.</p>"
        else:
            slide.body = section_body(text)
    return slides


PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
  html, body {{ margin: 0; height: 100%; background: #fff; color: #222;
    font-family: "Helvetica Neue", Arial, sans-serif; }}
  section {{ display: none; box-sizing: border-box; height: 100vh; padding: 4vh 6vw;
    overflow: auto; font-size: clamp(16px, 2.6vh, 30px); }}
  section.current {{ display: block; }}
  section h1 {{ font-size: 2.2em; margin: 0 0 0.5em; }}
  section h2 {{ font-size: 1.5em; margin: 0 0 0.6em; color: #1d4ed8; }}
  section.title {{ display: none; }}
  section.title.current {{ display: flex; flex-direction: column; justify-content: center; }}
  img.figure, img.diagram {{ display: block; margin: 0 auto; max-width: 100%; max-height: 78vh; }}
  footer {{ position: fixed; bottom: 1vh; right: 2vw; font-size: 14px; color: #666; }}
  code {{ background: #f2f2f2; padding: 0 0.2em; border-radius: 3px; }}
</style>
<script>
  window.MathJax = {{ tex: {{ macros: {{ R: "\\\\mathbb{{R}}", softmax: "\\\\operatorname{{softmax}}" }} }} }};
</script>
<script src="mathjax/tex-chtml-full.js" async></script>
</head><body>
{sections}
<footer><span id="n">1</span> / {count}</footer>
<script>
  const slides = Array.from(document.querySelectorAll("section"));
  let i = Math.max(0, Math.min(slides.length - 1, (parseInt(location.hash.slice(1)) || 1) - 1));
  function show(k) {{
    i = Math.max(0, Math.min(slides.length - 1, k));
    slides.forEach((s, j) => s.classList.toggle("current", j === i));
    document.getElementById("n").textContent = i + 1;
    history.replaceState(null, "", "#" + (i + 1));
  }}
  document.addEventListener("keydown", (e) => {{
    if (["ArrowRight", "ArrowDown", "PageDown", " "].includes(e.key)) show(i + 1);
    else if (["ArrowLeft", "ArrowUp", "PageUp"].includes(e.key)) show(i - 1);
    else if (e.key === "Home") show(0);
    else if (e.key === "End") show(slides.length - 1);
    else if (e.key === "f" || e.key === "F") document.documentElement.requestFullscreen?.();
  }});
  document.addEventListener("click", (e) => {{ if (!e.target.closest("a")) show(i + 1); }});
  show(i);
</script>
</body></html>
"""


def deck(session: Session) -> tuple[str, set[str], int]:
    """The HTML of one session's deck, the diagrams it shows, and its number of slides."""
    diagrams: set[str] = set()
    slides = [Slide(f"Session {session.number}", f"<h1>{html.escape(session.topic)}</h1>", "title")]
    for path in session.chapters:
        slides += chapter_slides(path, diagrams)
    sections = []
    for s in slides:
        heading = "" if s.kind == "title" and s.body.startswith("<h1>") else f"<h2>{html.escape(clean(s.title))}</h2>"
        if s.kind == "title" and not s.body.startswith("<h1>"):
            heading = f"<h1>{html.escape(clean(s.title))}</h1>"
        sections.append(f'<section class="{s.kind}">{heading}\n{s.body}</section>')
    page = PAGE.format(
        title=html.escape(f"Session {session.number}: {session.topic}"),
        sections="\n".join(sections),
        count=len(slides),
    )
    return page, diagrams, len(slides)


def build(out: Path, numbers: list[int] | None = None) -> list[tuple[Path, int]]:
    """Write the decks (``session-NN.html``) and what they need into ``out``; return (path, slides)."""
    out.mkdir(parents=True, exist_ok=True)
    shutil.copytree(MATHJAX, out / "mathjax", dirs_exist_ok=True)
    (out / "figures").mkdir(exist_ok=True)
    written = []
    for session in syllabus():
        if numbers and session.number not in numbers:
            continue
        page, diagrams, count = deck(session)
        for name in sorted(diagrams):
            shutil.copy(FIGURES / name, out / "figures" / name)
        path = out / f"session-{session.number:02d}.html"
        path.write_text(page, encoding="utf-8")
        written.append((path, count))
    return written


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "slides")
    parser.add_argument("--session", type=int, action="append", help="only this session (repeatable)")
    args = parser.parse_args(argv)
    for path, count in build(args.out, args.session):
        print(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: {count} slides")


if __name__ == "__main__":
    main()
