"""Give every chapter a short "In the package" paragraph that links each public name of
``aiayn_helpers`` its code uses to that name's entry on the API page (book/api.md).

    python tools/chapters/api_links.py           # write or refresh the paragraph in every chapter
    python tools/chapters/api_links.py --check   # exit 1 if a chapter's paragraph is missing or stale

The paragraph is a markdown cell tagged ``api-links``, placed just before the chapter's
self-check quiz. Markdown is not executed, so the stored outputs stay valid.
tests/test_api.py runs the check.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat

import aiayn_helpers as ah

ROOT = Path(__file__).resolve().parents[2]
TAG = "api-links"


def outside_solutions(nb: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    """The chapter's code cells, less those inside a ``{solution-start}``/``{solution-end}``
    block: the student edition removes those, so the paragraph does not name what only a
    solution uses."""
    cells, in_solution = [], False
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            marks = re.findall(r"\{solution-(start|end)\}", cell.source)
            if marks:
                in_solution = marks[-1] == "start"
        elif cell.cell_type == "code" and not in_solution:
            cells.append(cell)
    return cells


def used_names(nb: nbformat.NotebookNode) -> list[str]:
    """Public names of the package that the chapter's code cells use, in ``ah.__all__`` order
    (solutions left out)."""
    code = "\n".join(c.source for c in outside_solutions(nb))
    found = set(re.findall(r"\bah\.(\w+)", code))
    for names in re.findall(r"from aiayn_helpers(?:\.\w+)? import \(?([\w\s,]+)\)?", code):
        found |= {n.strip() for n in names.split(",")}
    return [name for name in ah.__all__ if name in found]


def documented_as() -> dict[str, str]:
    """Each name's target on the API page: ``aiayn_helpers.X`` or its module's path."""
    page = (ROOT / "book" / "api.md").read_text(encoding="utf-8")
    found = re.findall(r"^\.\. auto\w+:: (aiayn_helpers(?:\.\w+)*\.(\w+))$", page, re.M)
    return {name: target for target, name in found}


def paragraph(names: list[str]) -> str:
    targets = documented_as()
    # a Markdown link to the object's target, not a {py:obj} role: Sphinx (myst-parser)
    # resolves it the same way, and JupyterLab's MyST renderer, which cannot, shows only
    # its text (the role showed "ah.X <aiayn_helpers.X>" there)
    links = ", ".join(f"[`ah.{n}`](#{targets.get(n, 'aiayn_helpers.' + n)})" for n in names)
    return (
        "### In the package\n\n"
        "The chapter's code uses these parts of `aiayn_helpers` (imported as `ah`); each "
        "link opens its entry, with its docstring, on the {doc}`API page <../book/api>`: "
        f"{links}."
    )


def lab_paragraph(text: str) -> str:
    """The paragraph as the chapters converted by tools/chapters/lab_markdown.py hold it: the API
    page is notebooks/api.md, beside the chapter (the site reads it back as the role)."""
    text = text.replace("{doc}`API page <../book/api>`", "[API page](api.md)")
    return text.replace("](#aiayn_helpers.", "](api.md#aiayn_helpers.")


def _quiz_index(nb: nbformat.NotebookNode) -> int:
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown" and cell.source.startswith("### Self-check"):
            return i
    return len(nb.cells)


def refresh(path: Path, write: bool) -> bool:
    """True if the chapter's paragraph is up to date (after writing it, with ``write``)."""
    nb = nbformat.read(path, as_version=4)
    names = used_names(nb)
    cells = [c for c in nb.cells if TAG in c.metadata.get("tags", [])]
    wanted = lab_paragraph(paragraph(names)) if names else None
    current = cells[0].source if cells else None
    if current == wanted or (current is not None and lab_paragraph(current) == wanted):
        return True  # a chapter not yet converted by tools/chapters/lab_markdown.py holds the roles
    if not write:
        return False
    nb.cells = [c for c in nb.cells if TAG not in c.metadata.get("tags", [])]
    if wanted is not None:
        cell = nbformat.v4.new_markdown_cell(wanted, metadata={"tags": [TAG]})
        nb.cells.insert(_quiz_index(nb), cell)
    nbformat.write(nb, path)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only check; exit 1 if stale")
    args = parser.parse_args(argv)
    stale = [p.name for p in sorted((ROOT / "notebooks").glob("*.ipynb")) if not refresh(p, write=not args.check)]
    if stale:
        print("chapters whose 'In the package' paragraph is missing or stale:", *stale)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
