"""The book as one PDF: the built site's pages, in the table of contents' order, printed by
headless Chromium (``make pdf``; ``make pdf EDITION=student`` for the student edition).

``assemble`` joins the pages of a built site (``_build/html``, or the student edition's
``_student/_build/html``) into one HTML file: a title page (title, edition, version, date,
licence, repository and site addresses), a table of contents, then every page of
``_toc.yml`` as a chapter, its ids prefixed with the page's name so that every internal
link (chapter, section, exercise, figure, citation) points inside the one file. Each
diagram becomes a numbered figure with its description as caption; the interactive parts
(the translator, the attention explorer, the quizzes) become a sentence with the site's
address; outputs longer than ``MAX_OUTPUT_LINES`` are cut with a note. ``print_pdf`` opens
it in Chromium with the print stylesheet ``print.css``, waits for MathJax, runs
``layout.js`` (a marker on every wrapped code line, wide tables and equations shrunk,
small boxes kept on one page, every code box measured), prints once to learn each
heading's page from the PDF's named destinations, writes the page numbers into the table
of contents and prints again, with bookmarks (Chromium's document outline) for every
chapter and section, titled from the headings (``retitle_outline``). Paged media is
Chromium's own (page margin boxes for the page number and the running header, named pages
per chapter; Chromium 131 or later): no polyfill, no TeX, nothing downloaded. A JSON
report beside the PDF (``--report``) records what the tests check: headings, diagrams,
citations, links, code boxes wider than the page.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from urllib.parse import unquote, urljoin

import yaml
from bs4 import BeautifulSoup, Tag

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tools"))

from editions.set_repository_url import site_url  # noqa: E402

PRINT_CSS = HERE / "print.css"
LAYOUT_JS = HERE / "layout.js"
FIGURES = ROOT / "book" / "figures"
MAX_OUTPUT_LINES = 60  # an output longer than this keeps its first and last lines
KEEP_HEAD, KEEP_TAIL = 40, 10
EDITIONS = {"instructor": "Instructor edition, with solutions", "student": "Student edition"}
MIN_CHROMIUM = 131  # @page margin boxes (page numbers, running headers)
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
# the print layout's column in CSS px: A4 (210 mm) less print.css's margins (2 x 18 mm)
COLUMN_PX = int((210 - 2 * 18) / 25.4 * 96)


def toc_pages(book: Path) -> list[tuple[str, str | None]]:
    """(page without suffix, part caption or None) for every page of ``_toc.yml``, in order."""
    toc = yaml.safe_load((book / "_toc.yml").read_text(encoding="utf-8"))
    pages = [(toc["root"], None)]
    for part in toc.get("parts", []):
        for i, chapter in enumerate(part.get("chapters", [])):
            pages.append((chapter["file"], part.get("caption") if i == 0 else None))
    return pages


def slug(page: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]+", "-", page)


def diagram_names() -> set[str]:
    return {p.name for p in FIGURES.glob("*.svg")}


def book_facts(book: Path) -> dict:
    config = yaml.safe_load((book / "_config.yml").read_text(encoding="utf-8"))
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    repo = config["repository"]["url"]
    try:
        stamp = subprocess.run(
            ["git", "log", "-1", "--format=%cs"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        stamp = ""
    return {
        "title": config["title"],
        "author": config.get("author", ""),
        "version": pyproject["version"],
        "licence": pyproject.get("license", {}).get("text", ""),
        "repository": repo,
        "site": site_url(repo),
        "date": stamp or dt.date.today().isoformat(),
    }


_GREEK_NAMES = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho"
_GREEK_NAMES += " varsigma sigma tau upsilon phi chi psi omega"
GREEK = {n: chr(0x3B1 + i) for i, n in enumerate(_GREEK_NAMES.split())}
SYMBOLS = {"times": "\u00d7", "cdot": "\u00b7", "infty": "\u221e", "in": "\u2208", "le": "\u2264", "ge": "\u2265",
           "to": "\u2192", "approx": "\u2248", "sum": "\u2211", "ldots": "...", "dots": "..."}  # fmt: skip


def plain(text: str) -> str:
    """A heading's text for its bookmark: inline TeX (``\\(\\sqrt{d_k}\\)``) as readable text (``\u221ad_k``)."""

    def tex(m: re.Match) -> str:
        s = re.sub(r"\\sqrt\{([^{}]*)\}", "\u221a\\1", m.group(1))
        s = re.sub(r"\\(?:text|mathrm|mathbf|mathit|operatorname)\{([^{}]*)\}", r"\1", s)
        s = re.sub(r"\\([A-Za-z]+)", lambda w: GREEK.get(w.group(1), SYMBOLS.get(w.group(1), w.group(1))), s)
        return s.replace("{", "").replace("}", "").replace("\\", "")

    return " ".join(re.sub(r"\\\((.*?)\\\)", tex, text).split())


def _is_external(href: str) -> bool:
    return bool(re.match(r"[a-z][a-z0-9+.-]*:", href)) or href.startswith("//")


def cut_output(pre: Tag, soup: BeautifulSoup, where: str) -> bool:
    """Cut a printed output longer than MAX_OUTPUT_LINES lines, with a note; True if cut."""
    lines = pre.get_text().rstrip("\n").split("\n")
    if len(lines) <= MAX_OUTPUT_LINES:
        return False
    kept = "\n".join(lines[:KEEP_HEAD])
    tail = "\n".join(lines[-KEEP_TAIL:])
    pre.clear()
    pre.append(kept + "\n")
    note = soup.new_tag("span", attrs={"class": "pdf-cut"})
    cut = len(lines) - KEEP_HEAD - KEEP_TAIL
    note.string = f"[... {cut} lines cut here; the whole output is in the notebook and at {where} ...]"
    pre.append(note)
    pre.append("\n" + tail)
    return True


def interactive_note(soup: BeautifulSoup, what: str, url: str) -> Tag:
    box = soup.new_tag("div", attrs={"class": "pdf-interactive"})
    box.append(f"{what} is interactive and runs only in a browser: open it at ")
    link = soup.new_tag("a", href=url)
    link.string = url
    box.append(link)
    box.append(".")
    return box


def quiz_questions(cell: Tag) -> list[str]:
    """The questions of a jupyterquiz cell (their text, no answers)."""
    out = []
    for script in cell.find_all("script"):
        m = re.search(r'atob\("([A-Za-z0-9+/=]+)"\)', script.string or "")
        if m:
            try:
                data = json.loads(base64.b64decode(m.group(1)))
            except ValueError:
                continue
            out += [q.get("question", "") for q in data if isinstance(q, dict)]
    return [q for q in out if q]


def assemble(site: Path, book: Path, edition: str, out_html: Path) -> dict:
    """Write the book as one HTML file ``out_html``; return the facts the report records."""
    if edition not in EDITIONS:
        raise ValueError(f"expected an edition in {sorted(EDITIONS)}, got {edition!r}")
    if not (site / "index.html").exists():
        raise ValueError(f"expected a built site with index.html in {site}, got none: run make book")
    facts = book_facts(book)
    pages = toc_pages(book)
    known = {page: slug(page) for page, _ in pages}
    diagrams = diagram_names()
    work = out_html.parent
    work.mkdir(parents=True, exist_ok=True)
    for name in ("_static", "_images"):
        link = work / name
        if link.is_symlink() or link.exists():
            link.unlink() if link.is_symlink() else shutil.rmtree(link)
        link.symlink_to((site / name).resolve(), target_is_directory=True)

    out = BeautifulSoup("<!DOCTYPE html><html lang='en'><head></head><body></body></html>", "lxml")
    head, body = out.head, out.body
    head.append(out.new_tag("meta", charset="utf-8"))
    title = out.new_tag("title")
    title.string = f"{facts['title']} ({EDITIONS[edition]})"
    head.append(title)
    styles: list[str] = []
    mathjax: list[Tag] = []
    report = {"edition": edition, "facts": facts, "chapters": [], "diagrams": [], "cut_outputs": 0,
              "interactive": 0, "quizzes": 0, "raster_images": 0}  # fmt: skip

    toc = out.new_tag("nav", id="pdf-toc")
    chapters = []
    for number, (page, part) in enumerate(pages):
        path = site / f"{page}.html"
        if not path.exists():
            raise ValueError(f"expected the built page {path} (listed in _toc.yml), got none")
        soup = BeautifulSoup(path.read_text(encoding="utf-8"), "lxml")
        base = f"http://site/{page}.html"
        for link in soup.select("link[rel=stylesheet]"):
            href = urljoin(base, link["href"]).removeprefix("http://site/").split("?")[0]
            if href.endswith(".css") and href not in styles:
                styles.append(href)
        if not mathjax:
            for script in soup.find_all("script"):
                src = script.get("src", "")
                if "mathjax" in src.lower() or (script.string and "MathJax" in script.string):
                    if src:
                        script["src"] = urljoin(base, src).removeprefix("http://site/").split("?")[0]
                    mathjax.append(script)
        article = soup.select_one("article.bd-article")
        if article is None:
            raise ValueError(f"expected an article.bd-article in {path}, got none")
        prefix = known[page]
        where = urljoin(facts["site"], f"{page}.html")

        # interactive parts: a sentence and the site's address instead
        for box in article.select("div.aiayn-translator"):
            box.replace_with(interactive_note(out, "The translator", where))
            report["interactive"] += 1
        for box in article.select("#ae-root, details.ae-table-box"):
            box.replace_with(interactive_note(out, "The attention explorer", where))
            report["interactive"] += 1
        for cell in article.select("div.tag_exercise-quiz"):
            questions = quiz_questions(cell)
            note = interactive_note(out, "This self-check quiz", where)
            if questions:
                intro = out.new_tag("p")
                intro.string = "Its questions:"
                note.append(intro)
                items = out.new_tag("ol")
                for q in questions:
                    li = out.new_tag("li")
                    li.append(BeautifulSoup(q, "html.parser"))
                    items.append(li)
                note.append(items)
            cell.replace_with(note)
            report["quizzes"] += 1
        for tag in article.select("script, noscript, style, a.headerlink, button, .toggle-button"):
            tag.decompose()
        for details in article.find_all("details"):
            details["open"] = ""
            for summary in details.find_all("summary"):
                summary.decompose()
        for pre in article.select("div.output pre, div.cell_output pre"):
            if cut_output(pre, out, where):
                report["cut_outputs"] += 1

        # ids and links into the one file
        for tag in article.find_all(id=True):
            tag["id"] = f"{prefix}--{tag['id']}"
        for a in article.find_all("a", href=True):
            href = a["href"]
            if _is_external(href):
                continue
            target = urljoin(base, href).removeprefix("http://site/")
            doc, _, frag = target.partition("#")
            doc = unquote(doc)
            key = doc.removesuffix(".html")
            if key in known:
                a["href"] = f"#{known[key]}--{frag}" if frag else f"#{known[key]}"
            else:
                a["href"] = urljoin(facts["site"], target)
        figure_no = 0
        chapter_no = re.match(r"\s*([0-9]+|[A-Z])\.\s", article.find("h1").get_text() if article.find("h1") else "")
        for img in article.find_all("img"):
            src = urljoin(base, img.get("src", "")).removeprefix("http://site/")
            img["src"] = src
            name = src.rsplit("/", 1)[-1]
            if name in diagrams:
                figure_no += 1
                label = f"{chapter_no.group(1)}.{figure_no}" if chapter_no else str(figure_no)
                fig = out.new_tag("figure", attrs={"class": "pdf-diagram", "id": f"{prefix}--figure-{figure_no}"})
                holder = img.parent if img.parent.name == "p" and len(img.parent.get_text(strip=True)) == 0 else img
                holder.replace_with(fig)
                fig.append(img)
                cap = out.new_tag("figcaption")
                strong = out.new_tag("strong")
                strong.string = f"Figure {label}."
                cap.append(strong)
                cap.append(" " + img.get("alt", ""))
                fig.append(cap)
                report["diagrams"].append({"name": name, "label": label, "page": page})
            elif not src.endswith(".svg"):
                report["raster_images"] += 1

        for h in article.find_all(re.compile(r"^h[1-6]$")):
            h["data-bookmark"] = plain(h.get_text(" ", strip=True))
            report.setdefault("headings", []).append({"level": int(h.name[1]), "text": h["data-bookmark"]})
        h1 = article.find("h1")
        heading = h1["data-bookmark"] if h1 else page
        section = out.new_tag("section", attrs={"class": "pdf-chapter", "id": prefix, "data-page": page})
        section["data-n"] = str(number)
        for child in list(article.children):
            section.append(child.extract())
        chapters.append(section)
        sections = [
            {
                "id": h.find_parent("section")["id"] if h.find_parent("section") else "",
                "title": h["data-bookmark"],
                "tex": h.get_text(" ", strip=True),  # the contents page typesets its math
            }
            for h in section.find_all("h2")
        ]
        report["chapters"].append({"page": page, "id": prefix, "title": heading, "part": part, "sections": sections})

        # the table of contents: the chapter and its sections, page numbers filled in later
        if part:
            cap = out.new_tag("p", attrs={"class": "pdf-toc-part"})
            cap.string = part
            toc.append(cap)
        entry = out.new_tag("div", attrs={"class": "pdf-toc-chapter"})
        toc.append(entry)
        _toc_line(out, entry, heading, prefix)
        for s in sections:
            if s["id"]:
                _toc_line(out, entry, s["tex"], s["id"], cls="pdf-toc-section")

    for href in styles:
        head.append(out.new_tag("link", rel="stylesheet", href=href))
    for script in mathjax:
        new = out.new_tag("script")
        for k, v in script.attrs.items():
            new[k] = v
        if script.string:
            new.string = script.string
        head.append(new)
    head.append(out.new_tag("link", rel="stylesheet", href=PRINT_CSS.resolve().as_uri()))
    # a named page per chapter, for its running header
    rules = []
    for chapter in report["chapters"]:
        short = chapter["title"].split(":")[0]
        rules.append(
            f"@page {chapter['id']} {{ @top-left {{ content: {json.dumps(short, ensure_ascii=False)}; }} }}\n"
            f"section#{chapter['id']} {{ page: {chapter['id']}; }}"
        )
    style = out.new_tag("style")
    style.string = "\n".join(rules)
    head.append(style)

    body.append(_title_page(out, facts, edition))
    toc_page = out.new_tag("section", attrs={"class": "pdf-contents", "id": "pdf-contents"})
    h = out.new_tag("h1", attrs={"data-bookmark": "Contents"})
    h.string = "Contents"
    report["headings"].insert(0, {"level": 1, "text": "Contents"})
    toc_page.append(h)
    toc_page.append(toc)
    body.append(toc_page)
    for section in chapters:
        body.append(section)
    out_html.write_text(str(out), encoding="utf-8")
    return report


def _toc_line(out: BeautifulSoup, parent: Tag, text: str, target: str, cls: str = "pdf-toc-title") -> None:
    line = out.new_tag("a", attrs={"class": f"pdf-toc-line {cls}", "href": f"#{target}"})
    name = out.new_tag("span", attrs={"class": "pdf-toc-text"})
    name.string = text
    number = out.new_tag("span", attrs={"class": "pdf-toc-page", "data-target": target})
    number.string = "000"
    line.append(name)
    line.append(number)
    parent.append(line)


def _title_page(out: BeautifulSoup, facts: dict, edition: str) -> Tag:
    page = out.new_tag("section", attrs={"class": "pdf-title-page", "id": "pdf-title"})
    parts = [
        ("p", "pdf-title", facts["title"]),
        ("p", "pdf-edition", EDITIONS[edition]),
        ("p", "pdf-author", facts["author"]),
        ("p", "pdf-version", f"Version {facts['version']}, {facts['date']}"),
        ("p", "pdf-licence", f"Licence: {facts['licence']}" if facts["licence"] else ""),
    ]
    for name, cls, text in parts:
        if text:
            tag = out.new_tag(name, attrs={"class": cls})
            tag.string = text
            page.append(tag)
    for label, url in (
        ("Repository", facts["repository"]),
        ("The book online, with its interactive parts", facts["site"]),
    ):
        p = out.new_tag("p", attrs={"class": "pdf-address"})
        p.append(f"{label}: ")
        a = out.new_tag("a", href=url)
        a.string = url
        p.append(a)
        page.append(p)
    return page


def retitle_outline(data: bytes, titles: list[str]) -> bytes:
    """``data`` with its bookmarks (in document order) titled ``titles``, as an incremental update:
    the changed bookmarks and a cross-reference section appended (seconds, where rewriting the
    whole file with pypdf takes minutes)."""
    import pypdf
    from pypdf.generic import DictionaryObject, NameObject, NumberObject, TextStringObject

    reader = pypdf.PdfReader(io.BytesIO(data))
    root = reader.trailer["/Root"].get_object()
    items = []

    def walk(ref) -> None:
        while ref is not None:
            obj = ref.get_object()
            items.append((ref, obj))
            if "/First" in obj:
                walk(obj.raw_get("/First"))
            ref = obj.raw_get("/Next") if "/Next" in obj else None

    if "/Outlines" in root:
        walk(root["/Outlines"].get_object().raw_get("/First"))
    if len(items) != len(titles):
        raise SystemExit(f"pdf: expected a bookmark for each of the {len(titles)} headings, got {len(items)}")
    out = io.BytesIO()
    out.write(data if data.endswith(b"\n") else data + b"\n")
    offsets = {}
    for (ref, obj), title in zip(items, titles, strict=True):
        obj[NameObject("/Title")] = TextStringObject(title)
        offsets[ref.idnum] = (out.tell(), ref.generation)
        out.write(f"{ref.idnum} {ref.generation} obj\n".encode())
        obj.write_to_stream(out)
        out.write(b"\nendobj\n")
    previous = int(data.rstrip().rsplit(b"startxref", 1)[1].split()[0])
    xref_at = out.tell()
    out.write(b"xref\n")
    for idnum in sorted(offsets):
        offset, generation = offsets[idnum]
        out.write(f"{idnum} 1\n{offset:010d} {generation:05d} n \n".encode())
    trailer = DictionaryObject(
        {NameObject("/Size"): reader.trailer["/Size"], NameObject("/Root"): reader.trailer.raw_get("/Root")}
    )
    trailer[NameObject("/Prev")] = NumberObject(previous)
    for key in ("/Info", "/ID"):
        if key in reader.trailer:
            trailer[NameObject(key)] = reader.trailer.raw_get(key)
    out.write(b"trailer\n")
    trailer.write_to_stream(out)
    out.write(f"\nstartxref\n{xref_at}\n%%EOF\n".encode())
    return out.getvalue()


def chromium_path() -> str:
    for name in (os.environ.get("CHROMIUM", ""), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    raise SystemExit("pdf: Chromium not found (apt-get install chromium, or set CHROMIUM=path)")


def print_pdf(html: Path, pdf: Path, report: dict, timeout_s: float = 420) -> dict:
    """Print ``html`` to ``pdf`` with Chromium in two passes; add the layout facts to report."""
    import pypdf
    from playwright.sync_api import sync_playwright

    start = time.monotonic()

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_FLAGS)
        major = int(browser.version.split(".")[0])
        if major < MIN_CHROMIUM:
            raise SystemExit(
                f"pdf: expected Chromium {MIN_CHROMIUM} or later (page margin boxes), got {browser.version}"
            )
        page = browser.new_page(viewport={"width": COLUMN_PX, "height": 1000})
        page.set_default_timeout(timeout_s * 1000)
        page.emulate_media(media="print")
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(html.resolve().as_uri(), wait_until="load")
        page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise")
        page.evaluate("() => MathJax.startup.promise.then(() => MathJax.typesetPromise())")
        report["load_s"] = round(time.monotonic() - start, 1)
        layout = page.evaluate(LAYOUT_JS.read_text(encoding="utf-8"))
        report["layout_s"] = round(time.monotonic() - start, 1)
        report["layout"] = layout
        report["page_errors"] = errors

        options = {"prefer_css_page_size": True, "print_background": True, "outline": True, "tagged": True}
        # the first print only tells where each link's target landed (its named destinations)
        first = pypdf.PdfReader(io.BytesIO(page.pdf(**{**options, "outline": False, "tagged": False})))
        report["first_print_s"] = round(time.monotonic() - start, 1)
        numbers = {}
        for name, dest in first.named_destinations.items():
            numbers[name.lstrip("/")] = first.get_destination_page_number(dest) + 1
        missing = page.evaluate(
            """(numbers) => {
              const missing = [];
              for (const el of document.querySelectorAll('.pdf-toc-page')) {
                const n = numbers[el.dataset.target];
                if (n === undefined) missing.push(el.dataset.target); else el.textContent = String(n);
              }
              return missing;
            }""",
            numbers,
        )
        report["toc_missing"] = missing
        report["pages_first_pass"] = len(first.pages)
        pdf.parent.mkdir(parents=True, exist_ok=True)
        titles = page.evaluate(
            "() => [...document.querySelectorAll('h1, h2, h3, h4, h5, h6')].map("
            "(h) => h.dataset.bookmark || h.textContent.trim().replace(/\\s+/g, ' '))"
        )
        final_bytes = page.pdf(**options)
        report["second_print_s"] = round(time.monotonic() - start, 1)
        browser.close()
    # Chromium's bookmarks follow the headings, but their titles may repeat a heading's first
    # line: they get the headings' own text (TeX made readable), in the same order
    pdf.parent.mkdir(parents=True, exist_ok=True)
    pdf.write_bytes(retitle_outline(final_bytes, titles))
    report["outline_s"] = round(time.monotonic() - start, 1)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--book", type=Path, default=ROOT, help="the book's folder (_toc.yml, _config.yml)")
    parser.add_argument("--site", type=Path, help="its built site (default BOOK/_build/html)")
    parser.add_argument("--edition", choices=sorted(EDITIONS), default="instructor")
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "pdf" / "aiayn-book.pdf")
    parser.add_argument("--report", type=Path, help="the JSON report (default: beside the PDF)")
    args = parser.parse_args(argv)
    site = args.site or args.book / "_build" / "html"
    start = time.monotonic()
    work = args.out.with_suffix(".work")
    report = assemble(site, args.book, args.edition, work / "book.html")
    report["assemble_s"] = round(time.monotonic() - start, 1)
    print_pdf(work / "book.html", args.out, report)
    report["seconds"] = round(time.monotonic() - start, 1)
    report["bytes"] = args.out.stat().st_size
    (args.report or args.out.with_suffix(".json")).write_text(json.dumps(report, indent=1), encoding="utf-8")
    lay = report["layout"]
    print(
        f"pdf: {args.out} ({report['bytes'] / 1e6:.1f} MB, {args.edition} edition) in {report['seconds']:.0f} s; "
        f"{len(report['diagrams'])} diagrams, {lay['wrapped_lines']} wrapped code lines, "
        f"{len(lay['wide_pre'])} code boxes and {len(lay['wide_tables'])} tables wider than the page"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
