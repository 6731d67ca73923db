"""One slide deck per session of the syllabus, generated from the chapters (`make slides`).

    python tools/slides/make_slides.py                 # every session into _build/slides/
    python tools/slides/make_slides.py --session 2     # one session

The syllabus (the ``{syllabus}`` block of book/instructor_guide.md) says which chapters
each session covers. For every chapter, in order, a deck gets a title slide (the
chapter's title and learning objectives), then for each section an opening slide (its
first sentence and its key formula) and a slide for each of the paper's quotes, each
other formula, each list of points, each diagram and figure, each common-mistake box
(the mistake, the fix, the check) and each exercise's task; then the summary, a few
points a slide. tools/slides/chapter.py says how each is chosen. The chapter's prose
is in the speaker notes. Code is left out (the students run it in the lab part of
the session), and so are the solutions.

Each session gets two HTML files that work offline: ``session-NN.html``, the deck
(arrow keys, space or a click turn the pages; ``N`` shows the notes under the slide,
``P`` opens the printable notes, ``F`` goes full screen), and ``session-NN-notes.html``,
every slide with its notes below it, to print. Figures are embedded, diagrams are
copied beside them, and the math (titles included) is typeset by the MathJax copy that
ships with the site (book/_static/mathjax). Nothing is fetched from another host.
"""

from __future__ import annotations

import argparse
import html
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/

from slides.chapter import Slide, render, render_inline  # noqa: E402
from slides.lecture import chapter_slides  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "book" / "instructor_guide.md"
NOTEBOOKS = ROOT / "notebooks"
FIGURES = ROOT / "book" / "figures"
MATHJAX = ROOT / "book" / "_static" / "mathjax"
ASSETS = Path(__file__).resolve().parent


@dataclass
class Session:
    number: int
    topic: str
    chapters: list[Path]


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


PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
{css}
</style>
<script>
  window.MathJax = {{
    tex: {{ macros: {{ R: "\\\\mathbb{{R}}", softmax: "\\\\operatorname{{softmax}}" }} }},
    startup: {{ pageReady: () => MathJax.startup.defaultPageReady().then(() => {{
      document.body.dataset.typeset = "yes";
      if (window.deck) window.deck.refit();
    }}) }}
  }};
</script>
<script src="mathjax/tex-chtml-full.js" async></script>
</head><body class="{mode}" data-notes="{notes_file}">
{sections}
<div id="notes-panel"></div>
<footer><span id="n">1</span> / {count} &middot; N notes &middot; P printable notes</footer>
{script}
</body></html>
"""


def section_html(slide: Slide) -> str:
    if slide.kind == "session":
        heading = f"<h1>{render_inline(slide.title)}</h1>"
    elif slide.kind == "title":
        heading = f"<h1>{render_inline(slide.title)}</h1>"
    else:
        heading = f"<h2>{render_inline(slide.title)}</h2>"
    notes = "\n\n".join(n for n in slide.notes if n.strip())
    aside = f'\n<aside class="notes">{render(notes)}</aside>' if notes else ""
    return f'<section class="{slide.kind}">{heading}\n<div class="body">{slide.body}</div>{aside}</section>'


def deck_slides(session: Session, diagrams: set[str]) -> list[Slide]:
    numbers = [re.match(r"(\w+?)_", p.name)[1].lstrip("0") or "0" for p in session.chapters]
    chapters = ("chapters " if len(numbers) > 1 else "chapter ") + " and ".join(numbers)
    opening = Slide(
        f"Session {session.number}",
        f'<p class="topic">{render_inline(session.topic)}</p>',
        "session",
        [f"Session {session.number} of the syllabus in the instructor guide: {chapters}."],
    )
    slides = [opening]
    for path in session.chapters:
        slides += chapter_slides(path, diagrams)
    return slides


def pages(session: Session) -> tuple[str, str, set[str], int]:
    """The deck and the printable notes of one session, the diagrams they show, and the number of slides."""
    diagrams: set[str] = set()
    slides = deck_slides(session, diagrams)
    sections = "\n".join(section_html(s) for s in slides)
    css = (ASSETS / "deck.css").read_text(encoding="utf-8")
    script = "<script>\n" + (ASSETS / "deck.js").read_text(encoding="utf-8") + "</script>"
    common = dict(sections=sections, count=len(slides), css=css, notes_file=f"session-{session.number:02d}-notes.html")
    title = f"Session {session.number}: {session.topic}"
    deck = PAGE.format(title=html.escape(title), mode="deck", script=script, **common)
    notes = PAGE.format(title=html.escape(title + " (notes)"), mode="notes-view", script="", **common)
    return deck, notes, diagrams, len(slides)


def build(out: Path, numbers: list[int] | None = None) -> list[tuple[Path, int]]:
    """Write the decks (``session-NN.html``), their notes and what they need into ``out``; return (deck, slides)."""
    out.mkdir(parents=True, exist_ok=True)
    shutil.copytree(MATHJAX, out / "mathjax", dirs_exist_ok=True)
    (out / "figures").mkdir(exist_ok=True)
    written = []
    for session in syllabus():
        if numbers and session.number not in numbers:
            continue
        deck, notes, diagrams, count = pages(session)
        for name in sorted(diagrams):
            shutil.copy(FIGURES / name, out / "figures" / name)
        path = out / f"session-{session.number:02d}.html"
        path.write_text(deck, encoding="utf-8")
        path.with_name(f"session-{session.number:02d}-notes.html").write_text(notes, encoding="utf-8")
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
