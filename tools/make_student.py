"""Generate the student edition of the book: the same sources, solutions removed.

    python tools/make_student.py            # writes _student/ (what `make student` does)
    python tools/make_student.py --out DIR  # anywhere else

The student edition is never edited by hand. For every notebook in notebooks/:

* each sphinx-exercise solution (from ``{solution-start} LABEL`` to ``{solution-end}``)
  is removed: its markdown goes, and its code cells are replaced by ONE stub cell
  that raises ``NotImplementedError("Exercise LABEL: your code here")``, tagged
  ``raises-exception`` so that running the whole notebook is expected to stop there
  and nbclient/nbval carry on past it;
* a ``{solution}`` directive (an ungated solution in markdown) is removed;
* everything else, outputs included, is kept, so the other cells still run and the
  site still shows their figures.

Next to the notebooks it writes a book that Jupyter Book can build
(``jupyter-book build DIR``): the book/ pages, the table of contents without the
instructor guide, and a _config.yml with sphinx-exercise's ``hide_solutions: true``
and no Colab/Binder buttons (those would open the notebooks with solutions).
"""

from __future__ import annotations

import argparse
import copy
import re
import shutil
import sys
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parents[1]
MARKER = ".student-edition"
INSTRUCTOR_ONLY = {"book/instructor_guide"}

_OPEN = re.compile(r"^\s*(?P<fence>`{3,}|:{3,})\{(?P<name>[a-z-]+)\}\s*(?P<arg>.*?)\s*$")
_LABEL = re.compile(r"^\s*:label:\s*(?P<label>\S+)\s*$")
SOLUTION_DIRECTIVES = {"solution-start", "solution-end", "solution"}


def stub_source(label: str) -> str:
    return (
        f"# Exercise {label}: write your solution here.\n"
        f'raise NotImplementedError("Exercise {label}: your code here")\n'
    )


def _stub_cell(label: str) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(stub_source(label), metadata={"tags": ["raises-exception"]})
    cell.id = "stub-" + re.sub(r"[^A-Za-z0-9_-]", "-", label)[:59]
    return cell


def _closing(lines: list[str], start: int, fence: str) -> int:
    """Index of the line that closes the directive opened at ``start`` (or the last line)."""
    for j in range(start + 1, len(lines)):
        s = lines[j].strip()
        if s and set(s) == {fence[0]} and len(s) >= len(fence):
            return j
    return len(lines) - 1


class _State:
    def __init__(self) -> None:
        self.in_solution = False
        self.label = ""  # label of the solution being removed
        self.stubbed = False  # its stub cell is already written
        self.last_exercise = ""
        self.solutions: list[str] = []  # labels, in order


def _strip_markdown(text: str, state: _State) -> str:
    """Drop solution directives and everything between solution-start and solution-end."""
    lines = text.split("\n")
    kept: list[str] = []
    i = 0
    while i < len(lines):
        m = _OPEN.match(lines[i])
        name = m["name"] if m else ""
        if m and name in ("exercise-start", "exercise"):
            for line in lines[i + 1 : i + 8]:  # the options follow the opening line
                lab = _LABEL.match(line)
                if lab:
                    state.last_exercise = lab["label"]
                    break
        if m and name in SOLUTION_DIRECTIVES:
            end = _closing(lines, i, m["fence"])
            if name == "solution-start":
                state.in_solution, state.stubbed = True, False
                state.label = m["arg"].split()[0] if m["arg"] else state.last_exercise or "exercise"
                state.solutions.append(state.label)
            elif name == "solution-end":
                state.in_solution = False
            else:  # a whole {solution} directive in one cell
                state.solutions.append(m["arg"].split()[0] if m["arg"] else state.last_exercise)
            i = end + 1
            continue
        if not state.in_solution:
            kept.append(lines[i])
        i += 1
    return "\n".join(kept).strip("\n")


def studentize(nb: nbformat.NotebookNode) -> tuple[nbformat.NotebookNode, list[str]]:
    """Return a student copy of ``nb`` and the labels of the solutions removed from it."""
    nb = copy.deepcopy(nb)
    state = _State()
    cells = []
    for cell in nb.cells:
        if cell.cell_type == "code":
            if state.in_solution:
                if not state.stubbed:
                    cells.append(_stub_cell(state.label))
                    state.stubbed = True
                continue
            cells.append(cell)
        elif cell.cell_type == "markdown":
            source = _strip_markdown(cell.source, state)
            if source.strip():
                cell.source = source
                cells.append(cell)
        elif not state.in_solution:  # raw cells
            cells.append(cell)
    if state.in_solution:
        raise ValueError(f"solution {state.label!r} has no solution-end")
    nb.cells = cells
    return nb, state.solutions


def student_config(config: dict) -> dict:
    config = copy.deepcopy(config)
    config["title"] = f"{config.get('title', 'The book')} (student edition)"
    sphinx_config = config.setdefault("sphinx", {}).setdefault("config", {})
    sphinx_config["hide_solutions"] = True
    launch = config.setdefault("launch_buttons", {})
    launch["colab_url"] = ""
    launch["binderhub_url"] = ""
    return config


def student_toc(toc: dict) -> dict:
    """The table of contents minus the instructor-only pages."""

    def prune(node):
        if isinstance(node, dict):
            if node.get("file") in INSTRUCTOR_ONLY:
                return None
            pruned = {k: prune(v) for k, v in node.items()}
            for key in ("parts", "chapters", "sections"):  # a part or section left empty goes too
                if key in pruned and not pruned[key]:
                    if "file" not in pruned and key in ("chapters", "sections") and len(pruned) <= 2:
                        return None
                    del pruned[key]
            return pruned
        if isinstance(node, list):
            return [x for x in (prune(v) for v in node) if x is not None]
        return node

    return prune(toc)


def build(out: Path, root: Path = ROOT, notebooks: list[Path] | None = None) -> dict[str, list[str]]:
    """Write the student edition into ``out``; return {notebook name: removed solution labels}."""
    out = out.resolve()
    if out == root.resolve() or root.resolve().is_relative_to(out):
        raise ValueError(f"refusing to write the student edition over the sources: {out}")
    if out.exists():
        if not (out / MARKER).exists() and any(out.iterdir()):
            raise ValueError(f"{out} exists and is not a student edition; not deleting it")
        shutil.rmtree(out)
    out.mkdir(parents=True)
    (out / MARKER).write_text("generated by tools/make_student.py; do not edit\n")

    ignore = shutil.ignore_patterns("_build", "__pycache__", ".ipynb_checkpoints", "*.ipynb")
    shutil.copytree(root / "book", out / "book", ignore=ignore)
    shutil.copytree(root / "notebooks", out / "notebooks", ignore=ignore)
    for name in ("instructor_guide.md", "instructor_guide.ipynb"):
        (out / "book" / name).unlink(missing_ok=True)

    config = yaml.safe_load((root / "_config.yml").read_text())
    (out / "_config.yml").write_text(
        "# Generated by tools/make_student.py from ../_config.yml; do not edit.\n"
        + yaml.safe_dump(student_config(config), sort_keys=False, allow_unicode=True)
    )
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    (out / "_toc.yml").write_text(
        "# Generated by tools/make_student.py from ../_toc.yml; do not edit.\n"
        + yaml.safe_dump(student_toc(toc), sort_keys=False, allow_unicode=True)
    )

    removed = {}
    for path in notebooks if notebooks is not None else sorted((root / "notebooks").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        student, labels = studentize(nb)
        nbformat.validate(student)
        nbformat.write(student, out / "notebooks" / path.name)
        removed[path.name] = labels
    return removed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "_student", help="output folder (default: _student)")
    args = parser.parse_args(argv)
    removed = build(args.out)
    for name, labels in removed.items():
        print(f"{name}: {len(labels)} solution(s) replaced by stubs {' '.join(labels)}")
    print(f"student edition: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
