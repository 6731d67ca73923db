"""The slides of one chapter, from its blocks (see chapter.py for the rules)."""

from __future__ import annotations

import html
import re
from pathlib import Path

from slides.chapter import (
    LEAD_WORDS,
    MISTAKE_WORDS,
    POINT_WORDS,
    SKIPPED,
    SUMMARY_POINTS,
    TABLE_ROWS,
    Block,
    Slide,
    exercise_name,
    notebook_blocks,
    render,
    render_inline,
    sentences,
    shorten,
)

# a paragraph that introduces the paper's own equation: it cites a paper or names an equation
PAPER = re.compile(r"\(\d{4}\)|, \d{4}\)|\bthe paper\b|\b[Ee]quation \(\d")
FIX = re.compile(
    r"^(?:The fix|The cure|Use|Fix|Slice|Pass|Invert|Register|Keep|Call|Shift|Rescale|Give|Set|Apply|Replace)\b"
    r"|^(?:Always|Measure|Build|Apply|Make)\b|\b[Tt]he fix is\b|\bis fixed by\b|\bmust\b|\bshould\b"
    r"|^The package (?:fills|does|uses|raises)\b|^`ah\.\w+` (?:does|raises)\b|;\s+(?:report|build|use|apply|make)\b"
)
CHECK = re.compile(r"^(?:The check|A good test|The test|Check)\b|\bcatches it\b|\b[Tt]he check\b")
BOLD_ITEM = re.compile(r"^\s*(?:[-*]|\d+\.)\s+\*\*")


def key_formula(blocks: list[Block]) -> str | None:
    """The section's key formula: the first display equation that is the paper's own, else the one
    the section's first paragraph introduces, else none."""
    return key_block(blocks)[0]


def key_block(blocks: list[Block]) -> tuple[str | None, int]:
    """The key formula and the index of the block (a quote or an equation) that holds it."""
    previous = ""
    for i, b in enumerate(blocks):
        if b.kind == "para":
            previous = b.text
        elif b.kind == "quote" and "$$" in b.text:
            return re.search(r"\$\$(.+?)\$\$", b.text, re.S)[1].strip(), i
        elif b.kind == "eq" and PAPER.search(previous):
            return b.text, i
    # else the equation that the section's first paragraph introduces ("... of length d_model:")
    first = next((i for i, b in enumerate(blocks) if b.kind == "para"), -1)
    if 0 <= first < len(blocks) - 1 and blocks[first + 1].kind == "eq" and blocks[first].text.rstrip()[-1] in ":,":
        return blocks[first + 1].text, first + 1
    return None, -1


def attribution(quote: str) -> re.Match | None:
    """The "— Vaswani et al. (2017), section 3.3" of a quote, on a line of its own or ending the last one."""
    return re.search(r"(?:^|\s)([—-]{1,2}\s[^—\n]*(?:\(\d{4}\)|\d{4}\))[^—\n]*)\s*\Z", quote)


def opening_lead(blocks: list[Block], key_at: int) -> str:
    """The paragraph the opening slide's sentence comes from: the first, unless it comes after the
    key formula and is not the paragraph right after it (it would talk about something else)."""
    first = next((i for i, b in enumerate(blocks) if b.kind == "para"), -1)
    if first < 0 or key_at < 0 or first < key_at or first == key_at + 1:
        return blocks[first].text if first >= 0 else ""
    return ""


def list_items(text: str) -> list[str]:
    return [" ".join(item.split()) for item in re.split(r"(?m)^\s*(?:[-*]|\d+\.)\s+", text) if item.strip()]


def point(item: str) -> str:
    """One line of a list: its bold phrase (if any) and its first sentence, shortened."""
    bold = re.match(r"\*\*[^*]+\*\*\s*", item)
    if bold and re.search(r"[.:!?]\**\s*$", bold[0]):
        rest = shorten(item[bold.end() :], POINT_WORDS)
        return bold[0] + rest
    return shorten(item, POINT_WORDS)


def lead_in(paragraph: str) -> str:
    """The sentence that introduces an equation: the last of the paragraph before it, at most 30 words."""
    last = sentences(paragraph)[-1] if paragraph.strip() else ""
    words = last.split()
    if len(words) > 30:
        cut = re.split(r",\s+(?=[^,]*$)", last)
        last = "... " + " ".join(words[-30:]) if len(cut) < 2 or len(cut[-1].split()) < 4 else "... " + cut[-1]
    return last


def _unlabelled(sentence: str, word: str) -> str:
    """ "The check: no weight above the diagonal." -> "No weight above the diagonal." """
    rest = re.sub(rf"^[Tt]he {word}(?::\s*)", "", sentence)
    return rest[:1].upper() + rest[1:] if rest != sentence else sentence


def mistake_slide(box: Block) -> Slide:
    """A common-mistake box as a slide: the mistake, its fix and its check.

    Each sentence of the box is sorted by what it says (a fix says what to write, a check
    what to test); a check that only points at "the cell below" is replaced by that
    cell's assertion, the one that fails on the mistake.
    """
    mistake, fix, check = [], [], []
    for part in sentences(box.text):
        named = re.search(r"[,;:]?\s*(?:then\s+)?\b[Tt]he fix(?: is|:)\s+(.+)$", part)
        if named:
            said = re.sub(r"^to\s+", "", named[1])
            fix.append(said[:1].upper() + said[1:])
            part = part[: named.start()].strip(" ,;:")
            if not part:
                continue
        part = re.sub(r"\s*\([^()]*\b(?:below|above)\)", "", part)  # "(printed in the experiment above)"
        pointer = re.search(r"\b(?:[Cc]ells?|[Cc]heck|[Ee]xperiment) (?:below|above)\b|^Below,", part)
        if FIX.search(part) and not CHECK.match(part):
            fix.append(part)
        elif pointer and not CHECK.match(part):
            continue  # points at the chapter's cells: left to the notes
        elif CHECK.search(part):
            check.append(_unlabelled(part, "check"))
        else:
            mistake.append(part)
    rows = [("The mistake", render(shorten(" ".join(mistake), MISTAKE_WORDS)))]
    if fix:
        rows.append(("The fix", render(" ".join(fix))))
    if box.check and all(re.search(r"\bbelow\b", c) for c in check):
        code = f"<pre><code>{html.escape(box.check)}</code></pre>"
        said = "The chapter's check, which fails on the mistake" if box.check_fails else "The chapter shows its effect"
        rows.append(("The check", f"<p>{said}:</p>{code}"))
    elif check:  # "The check below, the longest wavelength, ...": no "below" on a slide
        said = " ".join(re.sub(r"\b([Cc]heck|[Cc]ells?|[Ee]xperiment)\s+(?:below|above)\b", r"\1", c) for c in check)
        rows.append(("The check", render(said)))
    body = '<dl class="mistake">' + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in rows) + "</dl>"
    notes = [box.text]
    if box.check:
        said = "The chapter's check that fails on the mistake" if box.check_fails else "The chapter asserts its effect"
        notes.append(f"{said}: `{box.check}`.")
    return Slide(box.extra, body, "mistake", notes)


def _groups(blocks: list[Block]) -> list[tuple[Block, list[Block]]]:
    groups: list[tuple[Block, list[Block]]] = []
    for b in blocks:
        if b.kind == "heading" and b.level <= 3:
            groups.append((b, []))
        elif groups:
            groups[-1][1].append(b)
    return groups


def title_slide(heading: Block, blocks: list[Block]) -> Slide:
    objectives = next((b.text for b in blocks if b.kind == "para" and "Learning objectives" in b.text), "")
    first = next((b.text for b in blocks if b.kind == "para"), "")
    slide = Slide(heading.text, render(objectives or shorten(first, LEAD_WORDS)), "title")
    slide.notes = [b.text for b in blocks if b.kind in ("para", "list") and b.text != objectives]
    return slide


def summary_slides(title: str, blocks: list[Block]) -> list[Slide]:
    items = [item for b in blocks if b.kind == "list" for item in list_items(b.text)]
    chunks = [items[i : i + SUMMARY_POINTS] for i in range(0, len(items), SUMMARY_POINTS)]
    slides = []
    for n, chunk in enumerate(chunks, 1):
        name = title if len(chunks) == 1 else f"{title} ({n} of {len(chunks)})"
        body = render("\n".join(f"- {point(item)}" for item in chunk))
        slides.append(Slide(name, body, "summary", ["\n".join(f"- {item}" for item in chunk)]))
    if slides:
        slides[-1].notes += [b.text for b in blocks if b.kind == "para"]
    return slides


def section_slides(title: str, blocks: list[Block], diagrams: set[str]) -> list[Slide]:
    """An opening slide (first sentence, key formula), then one slide per quote, formula, figure, box."""
    key, key_at = key_block(blocks)
    first = opening_lead(blocks, key_at)
    lead = shorten(first, LEAD_WORDS)
    if key and blocks[key_at - 1].text == first and not lead.endswith(sentences(first)[-1]):
        lead = f"{sentences(first)[0]} {sentences(first)[-1]}"  # and the sentence that introduces the formula
    body = f'<div class="lead">{render(lead)}</div>' if first else ""
    if key:
        body += f'<div class="math key">\\[{html.escape(key)}\\]</div>'
        who = attribution(blocks[key_at].text) if blocks[key_at].kind == "quote" else None
        if who and not first:
            body += f'<p class="cite">{render_inline(who[1].strip())}</p>'
    slides = [Slide(title, body, "text")]
    pending: list[str] = []  # paragraphs that introduce the next slide (they end with a colon)
    previous = ""
    for b in blocks:
        new = None
        if b.kind == "para":
            previous = b.text
            if b.text == first:  # the opening slide's sentence comes from it
                slides[0].notes.append(b.text)
            elif b.text.rstrip().endswith(":"):
                pending.append(b.text)
            else:
                slides[-1].notes += pending + [b.text]
                pending = []
            continue
        if b.kind == "quote":
            who = attribution(b.text)
            words = b.text[: who.start()] if who else b.text
            if key and key in words and not re.sub(r"\$\$.+?\$\$", "", words, flags=re.S).strip():
                slides[0].notes += pending  # the quote is the key formula alone: the opening slide shows it
                pending = []
                continue
            cite = f'<p class="cite">{render_inline(who[1].strip())}</p>' if who else ""
            new = Slide(title, f"<blockquote>{render(words)}{cite}</blockquote>", "quote")
        elif b.kind == "eq" and b.text == key:
            slides[0].notes += pending  # the sentence that introduces the formula on the opening slide
            pending = []
        elif b.kind == "eq":
            intro = lead_in(previous)
            body = (render(intro) if intro else "") + f'<div class="math">\\[{html.escape(b.text)}\\]</div>'
            new = Slide(title, body, "formula")
        elif b.kind == "list" and all(BOLD_ITEM.match(ln) for ln in re.findall(r"(?m)^\s*(?:[-*]|\d+\.)\s.*", b.text)):
            points = "\n".join(f"- {point(item)}" for item in list_items(b.text))
            new = Slide(title, render(points), "points", [b.text])
        elif b.kind == "table" and b.text.count("\n") < TABLE_ROWS + 2:
            new = Slide(title, render(b.text), "table")
        elif b.kind in ("list", "table"):
            slides[-1].notes.append(b.text)
        elif b.kind == "image":
            diagrams.add(Path(b.extra).name)
            img = f'<img class="diagram" src="figures/{Path(b.extra).name}" alt="{html.escape(b.text)}">'
            new = Slide(title, img, "figure", [b.text])
        elif b.kind == "figure":
            new = Slide(title, b.extra, "figure", [b.text])
        elif b.kind == "mistake":
            new = mistake_slide(b)
        elif b.kind == "exercise":
            new = Slide(exercise_name(b.extra), render(b.text), "exercise")
        if new is not None:
            new.notes = pending + new.notes
            pending = []
            slides.append(new)
    slides[-1].notes += pending
    if not slides[0].body and not slides[0].notes and len(slides) > 1:
        slides.pop(0)  # a heading with nothing of its own (e.g. Exercises) needs no slide
    return slides


def chapter_slides(path: Path, diagrams: set[str]) -> list[Slide]:
    """The slides of one chapter, in the order of its cells."""
    slides: list[Slide] = []
    for heading, blocks in _groups(notebook_blocks(path)):
        name = re.sub(r"^\d+\.\s+", "", heading.text) if heading.level > 1 else heading.text
        if heading.level == 1:
            slides.append(title_slide(heading, blocks))
        elif name.lower().startswith(SKIPPED):
            continue
        elif name.lower().startswith("summary"):
            slides += summary_slides(name, blocks)
        else:
            slides += section_slides(heading.text, blocks, diagrams)
    return slides
