"""The book as a PDF (make pdf, tools/pdf/build_pdf.py), built once for this module from the
built site (make book) and, for the student edition, from a student edition built here, then
read back with pypdf: pages, bookmarks, chapter titles, the diagrams as vector figures, no raw
MyST or LaTeX, citations and internal links resolved, no code past the margin, fonts
embedded, the size budget, and no solution in the student's PDF. Minutes of printing:
marker integration (make test-integration)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pypdf = pytest.importorskip("pypdf")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from pdf import build_pdf  # noqa: E402

pytestmark = pytest.mark.integration

SITE = ROOT / "_build" / "html"
MAX_BYTES = 40 * 1024 * 1024
RAW_MARKUP = ["{cite}", "{cite:t}", "{cite:p}", "{ref}", "{numref}", "{eq}", ":::", "$$", "\\frac", "```{"]


def _chromium_or_skip() -> None:
    try:
        build_pdf.chromium_path()
    except SystemExit:
        pytest.skip("no Chromium: apt-get install chromium")


def page_texts(pdf: Path, reader) -> list[str]:
    """Each page's text: poppler's pdftotext (seconds) where installed, else pypdf (minutes)."""
    tool = shutil.which("pdftotext")
    if tool:
        out = subprocess.run([tool, "-layout", "-enc", "UTF-8", str(pdf), "-"], capture_output=True, check=True)
        pages = out.stdout.decode("utf-8").split("\f")
        return pages[: len(reader.pages)]
    return [page.extract_text() or "" for page in reader.pages]


class Printed:
    """A printed edition: the reader, its report, each page's text and the bookmarks."""

    def __init__(self, pdf: Path, report: dict):
        self.path, self.report = pdf, report
        self.reader = pypdf.PdfReader(pdf)
        self.texts = page_texts(pdf, self.reader)
        self.text = "\n".join(self.texts)
        self.bookmarks: list[tuple[int, str, int]] = []  # (depth, title, page index)

        def walk(items, depth):
            for item in items:
                if isinstance(item, list):
                    walk(item, depth + 1)
                else:
                    self.bookmarks.append((depth, item.title, self.reader.get_destination_page_number(item)))

        walk(self.reader.outline, 0)


def _print(site: Path, book: Path, edition: str, out: Path) -> Printed:
    import json

    pdf = out / f"{edition}.pdf"
    build_pdf.main(["--book", str(book), "--site", str(site), "--edition", edition, "--out", str(pdf)])
    return Printed(pdf, json.loads(pdf.with_suffix(".json").read_text(encoding="utf-8")))


@pytest.fixture(scope="module")
def instructor(tmp_path_factory) -> Printed:
    if not (SITE / "index.html").exists():
        pytest.skip(f"no built site in {SITE}: run `make book` first")
    _chromium_or_skip()
    return _print(SITE, ROOT, "instructor", tmp_path_factory.mktemp("pdf"))


@pytest.fixture(scope="module")
def student(tmp_path_factory) -> tuple[Printed, Path]:
    """The student edition's PDF, from the edition generated and its site built here."""
    _chromium_or_skip()
    from editions import make_student

    folder = tmp_path_factory.mktemp("student")
    book = folder / "edition"
    make_student.build(book, course=folder / "course")
    jb = shutil.which("jupyter-book", path=str(Path(sys.executable).parent))
    subprocess.run([jb, "build", str(book), "--keep-going"], check=True, capture_output=True)
    return _print(book / "_build" / "html", book, "student", folder), book


def _flat(text: str) -> str:
    """Text without whitespace or wrap markers: a code line reads the same, wrapped or not."""
    return re.sub(r"[\s\u21aa]+", "", text)


# ---------------------------------------------------------------------------- instructor


def test_size_pages_and_fonts(instructor):
    assert instructor.path.stat().st_size <= MAX_BYTES
    pages = len(instructor.reader.pages)
    assert 100 < pages < 1500
    # the contents page's numbers were read from a first print of the same length
    assert instructor.report["pages_first_pass"] == pages
    unembedded = set()
    for page in instructor.reader.pages:
        fonts = page.get("/Resources", {}).get("/Font", {})
        for ref in fonts.values():
            font = ref.get_object()
            if font.get("/Subtype") == "/Type3":
                continue  # glyphs drawn in the file itself
            desc = font["/DescendantFonts"][0].get_object() if "/DescendantFonts" in font else font
            fd = desc.get("/FontDescriptor", {})
            if not any(k in fd for k in ("/FontFile", "/FontFile2", "/FontFile3")):
                unembedded.add(str(font.get("/BaseFont")))
    assert not unembedded, f"fonts not embedded: {unembedded}"


def test_title_page(instructor):
    facts = instructor.report["facts"]
    first = " ".join(instructor.texts[0].split())
    for value in (facts["title"], "Instructor edition", facts["version"], facts["licence"], facts["repository"]):
        assert value in first, value
    assert facts["date"] in first


def test_every_chapter_starts_a_page_with_its_title_and_has_bookmarks(instructor):
    chapters = instructor.report["chapters"]
    assert len(chapters) == len(build_pdf.toc_pages(ROOT))
    marks = {(title, page) for depth, title, page in instructor.bookmarks if depth == 0}
    titles = [t for _, t, _ in instructor.bookmarks]
    starts = {}
    for chapter in chapters:
        found = [page for title, page in marks if title == chapter["title"]]
        assert found, f"no bookmark for the chapter {chapter['title']!r}"
        page = min(found)
        starts[chapter["title"]] = page
        # a new page: nothing above the chapter's title but the running header (its short title)
        head = " ".join(instructor.texts[page].split())
        assert chapter["title"][:30] in head, chapter["title"]
        assert head.split(chapter["title"][:30])[0].strip() in ("", chapter["title"].split(":")[0])
        for section in chapter["sections"]:
            assert section["title"] in titles, f"no bookmark for the section {section['title']!r}"
    # one bookmark per heading of the assembled book, with its title, nested below its chapter
    assert [t for _, t, _ in instructor.bookmarks] == [h["text"] for h in instructor.report["headings"]]
    assert {d for d, _, _ in instructor.bookmarks} >= {0, 1}
    assert list(starts.values()) == sorted(starts.values())


def test_contents_page_numbers_are_the_pages(instructor):
    """The contents page says on which page each chapter starts; the page foot agrees."""
    contents = " ".join(" ".join(t.split()) for t in instructor.texts[1:8])
    marks = {title: page for depth, title, page in instructor.bookmarks if depth == 0}
    for chapter in instructor.report["chapters"]:
        number = marks[chapter["title"]] + 1
        assert re.search(re.escape(" ".join(chapter["title"].split())) + rf"\s*{number}\b", contents), chapter["title"]
        foot = instructor.texts[number - 1].split()
        assert foot[-1] == str(number), f"page {number} does not end with its number"
    assert instructor.report["toc_missing"] == []


def test_running_header_names_the_chapter(instructor):
    chapter = next(c for c in instructor.report["chapters"] if c["page"].startswith("notebooks/03"))
    start = next(p for d, t, p in instructor.bookmarks if d == 0 and t == chapter["title"])
    assert instructor.texts[start + 2].lstrip().startswith(chapter["title"].split(":")[0])
    api = next(c for c in instructor.report["chapters"] if c["page"].endswith("api"))
    start = next(p for d, t, p in instructor.bookmarks if d == 0 and t == api["title"])
    assert instructor.texts[start + 1].lstrip().startswith(api["title"])  # "The package’s API"


def test_all_diagrams_are_vector_figures_with_captions(instructor):
    from diagrams import DIAGRAMS

    printed = {d["name"] for d in instructor.report["diagrams"]}
    assert printed == {f"{name}.svg" for name in DIAGRAMS}
    assert len(DIAGRAMS) == 46
    for d in instructor.report["diagrams"]:
        assert f"Figure {d['label']}." in instructor.text, d
    # SVGs print as vector paths: the only raster images are the plots the chapters committed
    images = set()
    for page in instructor.reader.pages:
        xobjects = page.get("/Resources", {}).get("/XObject", {})
        for ref in xobjects.values():
            obj = ref.get_object()
            if obj.get("/Subtype") == "/Image":
                images.add(ref.idnum if hasattr(ref, "idnum") else id(obj))
    assert 0 < len(images) <= instructor.report["raster_images"]


def test_no_raw_markup_and_math_typeset(instructor):
    for raw in RAW_MARKUP:
        assert raw not in instructor.text, raw
    assert instructor.report["layout"]["unrendered_math"] == 0
    assert not re.search(r"\\\(|\\\)|\\\[|\\begin\{", instructor.text)


def test_citations_and_internal_links_resolve(instructor):
    layout = instructor.report["layout"]
    assert layout["citations"], "no citation found"
    assert all(c["resolved"] for c in layout["citations"])
    assert layout["broken_links"] == []
    names = {n.lstrip("/") for n in instructor.reader.named_destinations}
    links = 0
    for page in instructor.reader.pages:
        for annot in page.get("/Annots", []) or []:
            annot = annot.get_object()
            if annot.get("/Subtype") == "/Link" and "/Dest" in annot:
                links += 1
                assert str(annot["/Dest"]).lstrip("/") in names
    assert links >= len(layout["citations"])
    bib = next(c for c in instructor.report["chapters"] if c["page"].endswith("bibliography"))
    assert "Vaswani" in instructor.text.split(bib["title"])[-1]


def test_no_code_or_table_past_the_margin(instructor):
    layout = instructor.report["layout"]
    assert layout["pre_count"] > 100
    assert layout["wide_pre"] == [], "code boxes wider than the column"
    assert layout["wide_tables"] == [], "tables wider than the column"
    assert layout["wide_math"] == [], "equations wider than the column"
    # a chapter's code is at most 88 columns, so its cells never wrap; printed outputs may,
    # each wrapped line marked
    assert layout["wrapped_input_lines"] == 0
    assert instructor.text.count("\u21aa") >= layout["wrapped_lines"] > 0


def test_interactive_parts_are_a_sentence_and_the_address(instructor):
    report = instructor.report
    assert report["interactive"] >= 3 and report["quizzes"] >= 10
    site = report["facts"]["site"]
    flat = _flat(instructor.text)
    assert flat.count(_flat("is interactive and runs only in a browser: open it at")) == (
        report["interactive"] + report["quizzes"]
    )
    assert _flat(site) in flat
    assert report["page_errors"] == []


def test_solutions_are_in_the_instructor_edition(instructor):
    assert instructor.text.count("Solution to") >= 20


# ---------------------------------------------------------------------------- student


def _solution_lines(book: Path) -> list[str]:
    """Lines of every solution (code and prose) that the student's notebooks do not hold."""
    import nbformat

    student_text = ""
    for nb in sorted((book / "notebooks").glob("*.ipynb")):
        student_text += "\n".join(c.source for c in nbformat.read(nb, as_version=4).cells)
    student_flat = _flat(student_text)
    lines = []
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        inside = False
        for cell in nbformat.read(nb, as_version=4).cells:
            body = cell.source
            if cell.cell_type == "markdown":
                parts = re.split(r"(\{solution-start\}|\{solution-end\}|\{solution\})", body)
                for part in parts:
                    if part in ("{solution-start}", "{solution}"):
                        inside = True
                    elif part == "{solution-end}":
                        inside = False
                    elif inside:
                        lines += part.splitlines()
                if "{solution}" in body:
                    inside = False
            elif inside:
                lines += body.splitlines()
    keep = []
    for line in lines:
        line = line.strip()
        if len(line) >= 30 and not re.search(r"[$`{}\\:]|^#|^\(|\]\(", line) and _flat(line) not in student_flat:
            keep.append(line)
    return keep


def test_student_pdf_has_no_solution(student, instructor):
    printed, book = student
    lines = _solution_lines(book)
    assert len(lines) > 50
    flat_student, flat_teacher = _flat(printed.text), _flat(instructor.text)
    # the check can fail: the instructor's PDF holds most of these lines
    assert sum(_flat(line) in flat_teacher for line in lines) > len(lines) // 2
    leaked = [line for line in lines if _flat(line) in flat_student]
    assert leaked == []
    assert "Solution to" not in printed.text
    assert "Student edition" in printed.texts[0]
    assert printed.path.stat().st_size <= MAX_BYTES
    assert printed.report["layout"]["wide_pre"] == []
