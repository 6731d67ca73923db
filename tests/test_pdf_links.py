"""Where the book's PDF is linked from, and that the links point where it is published.

The pages workflow (.github/workflows/pages.yml) prints the student edition into
``aiayn-book-student.pdf``, copies it to the published site's root and uploads it to the
release; the README and the student edition's front page (the published site's first
page) link that address, which follows ``_config.yml``'s repository. The instructor
edition, with the solutions, is never published (pages.yml's header): ``make pdf`` prints
it locally, as the README and the instructor guide say.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

from editions import make_student  # noqa: E402
from editions.set_repository_url import repository_url, site_url  # noqa: E402

NAME = "aiayn-book-student.pdf"
WORKFLOW = (ROOT / ".github" / "workflows" / "pages.yml").read_text()


def test_the_workflow_publishes_the_pdf_at_the_sites_root_and_on_the_release():
    assert f"--out _build/pdf/{NAME}" in WORKFLOW
    assert f"cp _build/pdf/{NAME} _student/_build/html/" in WORKFLOW  # the site's root
    assert f'gh release upload "$TAG" "$EDITIONS/{NAME}"' in WORKFLOW


def test_the_student_front_page_links_the_published_pdf():
    site = site_url(repository_url())
    intro = make_student.student_intro(
        "# Book\n\n## Chapter map\n\nThe chapters.\n",
        (ROOT / "tools" / "editions" / "student_edition" / "intro.md").read_text(),
        "2.13.0",
        site,
    )
    assert f"]({site}{NAME})" in intro
    assert "SITE_URL" not in intro and "TORCH_VERSION" not in intro
    other = make_student.student_intro("", "[pdf](SITE_URLx.pdf)", "1", "https://o.github.io/r/")
    assert "(https://o.github.io/r/x.pdf)" in other  # the address follows the repository


def test_the_readme_links_the_published_pdf_and_says_how_to_print_the_instructors():
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert f"{site_url(repository_url())}{NAME}" in readme
    assert "make pdf" in readme and "EDITION=student" in readme
    guide = " ".join((ROOT / "book" / "instructor_guide.md").read_text().split())
    assert "make pdf" in guide and "print" in guide
