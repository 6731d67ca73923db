"""Each feedback page says the grade that goes back to the course platform.

nbgrader's feedback page (``make grade GRADE_FLAGS=--feedback``) heads itself with
the autograded score. The grade the platform gets can differ: the late policy
takes its share off, and the instructor's decisions (decisions.py) replace the
score or add or take off points, each with a reason, or move the due date. So
``make grade --feedback`` and ``make export`` put a box at the top of every page
in ``<course>/feedback/<student>/<assignment>/``: that grade, out of the
assignment's points, and each step from the autograded score to it, the reasons
quoted. Running either again replaces the box, so a page says the grade of the
latest decisions; the Moodle feedback zip and the pages uploaded by hand (Canvas)
carry it.
"""

from __future__ import annotations

import html
import os
import re
from html.parser import HTMLParser
from pathlib import Path


def number(x: float | None) -> str:
    """A score for a page or a CSV: rounded to 2 decimals, no float noise (2.4,
    not 2.4000000000000004); '' for none."""
    if x is None:
        return ""
    text = f"{round(x, 2):.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


BOX = re.compile(r"<!-- grade returned -->.*?<!-- /grade returned -->\n?", re.S)


def grade_box(row: dict) -> str:
    """The HTML box a feedback page opens with: the grade the platform gets."""
    out = number(row["max_score"])
    extension = [d for d in row["decided"] if d.startswith("Extension")]
    lines = []
    if row["autograded_score"] is not None:
        raw, late = row["raw_score"], row["late_submission_penalty"]
        lines.append(f"Autograded (the hidden tests): {number(raw)} of {out}")
        lines += extension
        if late:
            due = row["due_for_student"]
            when = f" (due {due:%Y-%m-%d %H:%M} UTC)" if due else ""
            lines.append(f"Late penalty{when}: -{number(late)}")
    lines += [d for d in row["decided"] if d not in extension]  # with reasons
    items = "".join(f"<li>{html.escape(line)}</li>" for line in lines)
    title = f"Your grade for {row['assignment']}: {number(row['score'])} of {out}"
    return (
        '<!-- grade returned -->\n<div class="panel panel-primary" id="grade">'
        f'<div class="panel-heading"><h4>{html.escape(title)}</h4></div>'
        '<div class="panel-body"><p>This is the grade that goes back to the '
        f"course page.</p><ul>{items}</ul></div></div>\n<!-- /grade returned -->\n"
    )


def stamp_feedback(course: Path, rows: list[dict]) -> int:
    """Put ``grade_box`` at the top of each feedback page of ``rows`` (replacing
    the box an earlier run put there); the number of pages."""
    count = 0
    for row in rows:
        pages = course / "feedback" / row["student_id"] / row["assignment"]
        for page in sorted(pages.glob("*.html")) if row["score"] is not None else []:
            text = BOX.sub("", page.read_text(encoding="utf-8"))
            body = re.search(r"<body[^>]*>\n?", text)
            at = body.end() if body else 0
            page.write_text(text[:at] + grade_box(row) + text[at:], encoding="utf-8")
            count += 1
    return count


# What a feedback page keeps of the HTML that Markdown renders to (a student's
# Markdown cell, or text a submission printed as Markdown): these tags, these
# attributes, links only to http(s), mailto or a relative address; any other tag
# is shown as text, any other attribute or address dropped. Nothing in a page
# built from a submission can then run script (see ``sanitize_html``).
TAGS = {
    "a", "abbr", "b", "blockquote", "br", "caption", "code", "dd", "del", "details",
    "div", "dl", "dt", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img",
    "kbd", "li", "ol", "p", "pre", "s", "span", "strong", "sub", "summary", "sup",
    "table", "tbody", "td", "tfoot", "th", "thead", "tr", "ul",
}  # fmt: skip
VOID = {"br", "hr", "img"}
# no class or id: a submission's text could borrow the page's own boxes (issue 51)
ATTRIBUTES = {"title", "align", "colspan", "rowspan", "start", "alt"}
URLS = {"href", "src"}  # a: href, img: src
NUMBERS = {"width", "height"}
SCHEME = re.compile(r"[a-z][a-z0-9+.\-]*:", re.I)
SAFE_SCHEMES = ("http:", "https:", "mailto:")
ALIGN = re.compile(r"text-align: *(left|right|center);?")
DIGITS = re.compile(r"\d{1,5}")


def safe_url(value: str) -> bool:
    """Whether ``value`` (an attribute's text, entities decoded) is an http(s),
    mailto or relative address. Browsers ignore tabs, newlines and control
    characters in a scheme (``java\\tscript:``), so the check ignores them too."""
    compact = re.sub(r"[\x00-\x20\x7f]+", "", value)
    scheme = SCHEME.match(compact)
    return scheme is None or scheme[0].lower() in SAFE_SCHEMES


def remote(value: str) -> bool:
    """Whether an address loads from another machine: any scheme's (http, https, ...)
    or a protocol-relative one (``//host/x.png``, ``\\\\host``)."""
    compact = re.sub(r"[\x00-\x20\x7f]+", "", value)
    return bool(SCHEME.match(compact)) or compact.startswith(("//", "\\\\", "/\\", "\\/"))


def safe_number(value) -> int | None:
    """An image's width or height as a whole number of pixels, or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)) and 0 <= value < 100_000:
        return int(value)
    if isinstance(value, str) and DIGITS.fullmatch(value.strip()):
        return int(value)
    return None


class _Sanitizer(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []

    def _attributes(self, tag: str, attrs) -> str:
        kept = []
        for name, value in attrs:
            value = value or ""
            if name in URLS and tag in ("a", "img") and safe_url(value):
                kept.append((name, value))
            elif name in NUMBERS and tag == "img" and safe_number(value) is not None:
                kept.append((name, str(safe_number(value))))
            elif name == "class" and value == "tex2jax_ignore":  # math off (HideHiddenTests)
                kept.append((name, value))
            elif name == "style" and ALIGN.fullmatch(value.strip()):
                kept.append((name, value.strip()))
            elif name in ATTRIBUTES:
                kept.append((name, value))
        return "".join(f' {n}="{html.escape(v, quote=True)}"' for n, v in kept)

    def handle_starttag(self, tag, attrs):
        src = dict(attrs).get("src") or ""
        if tag == "img" and remote(src):  # a page loads nothing from outside: a link
            alt = dict(attrs).get("alt") or "an image"
            href = f' href="{html.escape(src, quote=True)}"' if safe_url(src) else ""
            self.out.append(f"<a{href}>[{html.escape(alt)}: not loaded]</a>")
            return
        if tag in TAGS:
            self.out.append(f"<{tag}{self._attributes(tag, attrs)}>")
        else:
            self.out.append(html.escape(self.get_starttag_text() or f"<{tag}>"))

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag):
        if tag in TAGS and tag not in VOID:
            self.out.append(f"</{tag}>")
        elif tag not in VOID:
            self.out.append(html.escape(f"</{tag}>"))

    def handle_data(self, data):
        self.out.append(html.escape(data, quote=False))


def sanitize_html(text: str) -> str:
    """``text`` (HTML) with only ``TAGS`` as tags and only safe attributes: no event
    handler, no ``javascript:`` (or any other scheme but http, https, mailto)
    address, image sizes only as numbers; the rest shown as text. Comments go."""
    parser = _Sanitizer()
    parser.feed(text)
    parser.close()
    return "".join(parser.out)


def safe_markdown2html(source: str) -> str:
    """nbconvert's ``markdown2html`` for feedback pages: the same Markdown (math kept
    as text for MathJax), its HTML through ``sanitize_html`` (configured in
    autograde.configure as the HTML exporter's filter)."""
    from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

    renderer = IPythonRenderer(escape=False, allow_harmful_protocols=False)
    return sanitize_html(MarkdownWithMath(renderer=renderer).render(source))


def image_metadata(metadata, kinds) -> dict:
    """An image output's metadata for a feedback page: per image kind of ``kinds``,
    only its width and height, as whole numbers (nbconvert writes them into the
    ``<img>`` tag unquoted), and its alt text; nothing else (no file names)."""
    kept = {}
    metadata = metadata if isinstance(metadata, dict) else {}
    for kind in kinds:
        own = metadata.get(kind) if isinstance(metadata.get(kind), dict) else {}
        sizes = {}
        for key in ("width", "height"):
            number = safe_number(own.get(key, metadata.get(key)))
            if number is not None:
                sizes[key] = number
        alt = own.get("alt", metadata.get("alt"))
        if isinstance(alt, str):
            sizes["alt"] = alt[:500]
        if sizes:
            kept[kind] = sizes
    return kept


# A feedback page loads nothing from another machine: nbconvert's template loads
# MathJax 2 from a CDN; the page gets the course's own copy (the site's, vendored in
# book/_static/mathjax) beside it instead, and a page over MAX_PAGE bytes (a
# notebook's outputs, most likely: LimitOutput keeps lines, not bytes) is cut.
MATHJAX = Path(__file__).resolve().parents[2] / "book" / "_static" / "mathjax"
MATHJAX_BLOCK = re.compile(r"<!-- Load mathjax -->.*?<!-- End of mathjax configuration -->", re.S)
LOCAL_MATHJAX = r"""<!-- Load mathjax: the course's own copy, beside this page -->
<script>
window.MathJax = {
  tex: {inlineMath: [["$", "$"], ["\\(", "\\)"]], displayMath: [["$$", "$$"], ["\\[", "\\]"]],
        processEscapes: true, processEnvironments: true,
        macros: {R: "\\mathbb{R}", softmax: "\\operatorname{softmax}"}},
  options: {ignoreHtmlClass: "tex2jax_ignore", processHtmlClass: "tex2jax_process"}
};
</script>
<script src="mathjax/tex-chtml-full.js" async></script>
<!-- End of mathjax configuration -->"""
MAX_PAGE = 5 << 20  # bytes of one feedback page (an honest one: about 0.2 MiB)
CUT_PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{title}</title></head>
<body>
<h1>{title}: feedback page cut</h1>
<p>This page was {size} MiB, more than the {cap} MiB a feedback page may be (most
likely the notebook's outputs), so it was replaced by this note. The grade above
does not change; ask your instructor for the graded notebook.</p>
</body></html>
"""


def finish_pages(course: Path, assignment: str, students=None, cap: int = MAX_PAGE) -> dict:
    """Each feedback page of ``assignment`` (of ``students``, default: all): a page
    over ``cap`` bytes replaced by a short page saying so, the others given the
    course's own MathJax (``offline_math``). {student: report lines} for the cut."""
    if not isinstance(cap, int) or isinstance(cap, bool) or cap <= 0:
        raise ValueError(f"cap: expected a number of bytes above 0, got {cap!r}")
    said: dict[str, list[str]] = {}
    for folder in sorted((course / "feedback").glob(f"*/{assignment}")):
        student = folder.parent.name
        if students is not None and student not in students:
            continue
        for page in sorted(folder.glob("*.html")):
            size = page.stat().st_size
            if size > cap:
                mib, most = f"{size / (1 << 20):.1f}", f"{cap / (1 << 20):g}"
                title = html.escape(page.stem)
                page.write_text(CUT_PAGE.format(title=title, size=mib, cap=most), encoding="utf-8")
                line = f"feedback page {page.name} cut: {mib} MiB, more than {most} MiB"
                said.setdefault(student, []).append(line)
            else:
                offline_math(page)
                named_index(page)
    return said


# nbgrader's index of a page's graded cells: every test cell is "Test cell", and the
# grader's own hidden-helper cell (0 points) reads "Test cell (Score: 0.0 / 0.0)".
INDEX_ITEM = re.compile(r'<li><a href="#([A-Za-z0-9_-]+)">Test cell</a> \(Score: ([0-9.]+) / ([0-9.]+)\)</li>\n?')


def named_index(page: Path) -> bool:
    """The page's index names each test cell by its grade id ("test_sdpa_mask") and
    leaves out the test cells worth no points (the grader's helpers, which the student
    has nothing to do with). Whether the page changed."""
    text = page.read_text(encoding="utf-8")

    def item(m: re.Match) -> str:
        ident, score, points = m.groups()
        if float(points) == 0 and float(score) == 0:
            return ""
        return f'<li><a href="#{ident}">{ident}</a> (Score: {score} / {points})</li>\n'

    new = INDEX_ITEM.sub(item, text)
    if new == text:
        return False
    page.write_text(new, encoding="utf-8")
    return True


def offline_math(page: Path) -> bool:
    """The page's MathJax from the course's copy in a ``mathjax`` folder beside it (the
    site's, linked or copied there), not from a CDN; where the course has no copy, no
    MathJax at all (the math shows as TeX). Whether the page changed."""
    text = page.read_text(encoding="utf-8")
    if not MATHJAX_BLOCK.search(text):
        return False
    local = MATHJAX.joinpath("tex-chtml-full.js").is_file()
    if local:
        _copy_mathjax(page.parent / "mathjax", page.parents[2] / ".mathjax")
    block = LOCAL_MATHJAX if local else "<!-- no MathJax: the math shows as TeX -->"
    page.write_text(MATHJAX_BLOCK.sub(lambda m: block, text, count=1), encoding="utf-8")
    return True


def _copy_mathjax(target: Path, shared: Path) -> None:
    """The vendored MathJax at ``target``: hard links to one copy per course
    (``shared``, <course>/feedback/.mathjax: grading writes nothing outside its
    output folders), or copies where links cannot be made."""
    import shutil

    if not shared.is_dir():
        shutil.copytree(MATHJAX, shared, dirs_exist_ok=True)
    for source in sorted(p for p in shared.rglob("*") if p.is_file()):
        path = target / source.relative_to(shared)
        if path.exists():
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(source, path)
        except OSError:
            shutil.copy2(source, path)
