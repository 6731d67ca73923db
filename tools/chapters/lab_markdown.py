"""Write the chapters' figures, citations and links in a form a reader can follow in
JupyterLab started as the README says (``jupyter lab notebooks/``), in VS Code, nbviewer,
or a copy of the folder opened offline, where the site's MyST roles do not resolve.

    python tools/chapters/lab_markdown.py --write notebooks/02_*.ipynb   # convert these chapters
    python tools/chapters/lab_markdown.py --check                        # exit 1 if a chapter is not converted
    python tools/chapters/lab_markdown.py --check notebooks/02_*.ipynb   # only these chapters

In a chapter's markdown cells it rewrites (idempotent; code and outputs untouched):

* ``![alt](../book/figures/NAME.svg)`` -> ``![alt](figures/NAME.svg)``: ``notebooks/figures``
  holds a copy of every diagram of ``book/figures`` (drawn by ``python tools/diagrams``,
  which refreshes the copies; nobody edits them);
* ``{cite:t}`KEY``` -> ``[Vaswani et al. (2017)](bibliography.md#KEY)`` and ``{cite:p}`` /
  ``{cite}`` -> ``([Vaswani et al., 2017](bibliography.md#KEY))``: ``notebooks/bibliography.md``
  lists every work of ``book/references.bib``, each under an anchor named by its key;
* ``{doc}`chapter 4 <04_positional_encoding>``` -> ``[chapter 4](04_positional_encoding.ipynb)``;
  ``{ref}`` to a label of another chapter -> ``[text](04_x.ipynb#LABEL)`` (a label of the
  same chapter stays a ``{ref}``, which jupyterlab-myst resolves); the API page and its
  entries -> ``api.md`` and ``api.md#aiayn_helpers.X`` (``notebooks/api.md``, a summary of
  every public name with the link to its full entry on the site); another page of the
  site -> its published address;
* ``{exercise-start}`` with ``:label: ch03-ex1`` gets ``:enumerator: 3.1`` after the label:
  jupyterlab-myst shows "Exercise 3.1", the site's, the checks' and the slides' number
  (it would count "Exercise 1" within the notebook);
* each code cell of a solution (between ``{solution-start}`` and ``{solution-end}``) gets
  ``"jupyter": {"source_hidden": true, "outputs_hidden": true}``: JupyterLab and
  Notebook 7 show it folded (the site shows the solution in a dropdown); the solution's
  prose, in the markdown cell of the exercise, stays open;
* ``(label)=`` before a box (``{admonition}``, ``{note}``, ...) that a chapter links (its
  own or another) -> ``(label)=`` as the first line of the box's body: jupyterlab-myst
  gives an admonition no id, but the paragraph a label stands before gets it, so the
  link leads into the box (from another chapter too: ``05_encoder``'s link to
  ``03_multi_head_attention.ipynb#mistake-mha-bool-mask``).

It also gives each self-check quiz's stored output the line ``ah.quiz`` prints for a
front end that does not run its script (where it printed
``<IPython.core.display.Javascript object>``), and the kernel's display name JupyterLab
writes (so that opening a chapter does not mark it modified).

The site reads the chapters back as MyST (``book/_ext/notebook_markdown.py``), so it is
built from the same roles as before. ``--write`` also refreshes ``notebooks/figures``,
``bibliography.md`` and ``api.md``; ``--check`` fails when one of them is stale.
tests/test_lab_markdown.py runs the check.
"""

from __future__ import annotations

import argparse
import inspect
import re
import shutil
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
for _path in (ROOT / "tools", ROOT / "book" / "_ext"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import notebook_markdown  # noqa: E402
from editions import plain_markdown  # noqa: E402
from notebook_markdown import API, BIBLIOGRAPHY, to_myst  # noqa: E402

from aiayn_helpers.course.exercises import exercise_name  # noqa: E402
from aiayn_helpers.course.quizzes import RUN_TO_TAKE  # noqa: E402

NOTEBOOKS = ROOT / "notebooks"
SOURCE_FIGURES = ROOT / "book" / "figures"
LAB_FIGURES = NOTEBOOKS / "figures"
FIGURE = re.compile(r"(?P<head>!\[[^\]]*\]\()\.\./book/figures/(?P<name>[\w-]+\.svg)\)")
API_ENTRY = re.compile(r"\]\((?P<anchor>#aiayn_helpers\.[\w.]+)\)")
EXERCISE_LABEL = re.compile(
    r"(?m)^(?:`{3,}|:{3,})\{exercise(?:-start)?\}[^\n]*\n(?::[\w-]+:[^\n]*\n)*?:label: (?P<label>[\w-]+)\n"
)


def site() -> str:
    from editions import set_repository_url

    return set_repository_url.site_url()


def chapter_labels(root: Path = ROOT) -> dict[str, tuple[str, str]]:
    """``{label: (page, title)}`` of every chapter (page ``notebooks/NN_x.html``)."""
    sources = {}
    for path in sorted((root / "notebooks").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        text = "\n\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
        sources[plain_markdown.page_of(path, root)] = to_myst(text)
    return plain_markdown.collect_labels(sources)


def linked_here(root: Path = ROOT) -> dict[str, set[str]]:
    """``{page: labels}``: the labels each chapter links with its own ``{ref}`` roles."""
    out = {}
    for path in sorted((root / "notebooks").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        text = to_myst("\n\n".join(c.source for c in nb.cells if c.cell_type == "markdown"))
        out[plain_markdown.page_of(path, root)] = set(re.findall(r"\{ref\}`(?:[^`]*<)?([\w-]+)>?`", text))
    return out


class Converter:
    """Turns one chapter's MyST roles and paths into the JupyterLab form."""

    def __init__(self, root: Path = ROOT) -> None:
        self.root = root
        self.references = plain_markdown.load_bibliography(root / "book" / "references.bib")
        self.labels = chapter_labels(root)
        self.linked_here = linked_here(root)
        self.site = site()

    def _cite(self, keys: str, textual: bool) -> str:
        out = []
        for key in (k.strip() for k in keys.split(",")):
            if key not in self.references:
                raise ValueError(f"citation {key!r} is not in book/references.bib")
            ref = self.references[key]
            words = f"{ref.names} ({ref.year})" if textual else f"{ref.names}, {ref.year}"
            out.append(f"[{words}]({BIBLIOGRAPHY}#{key})")
        return "; ".join(out) if textual else "(" + "; ".join(out) + ")"

    def role(self, name: str, body: str, page: str) -> str | None:
        """The JupyterLab form of one role of the chapter at ``page``, or None to keep it."""
        if name == "cite:t":
            return self._cite(body, textual=True)
        if name in ("cite:p", "cite"):
            return self._cite(body, textual=False)
        text, target = plain_markdown._titled(body)
        if name == "doc" and text:
            if target == "../book/api":
                return f"[{text}]({API})"
            if "/" not in target and (self.root / "notebooks" / f"{target}.ipynb").is_file():
                return f"[{text}]({target}.ipynb)"
            m = re.fullmatch(r"\.\./book/(\w+)", target)
            if m and (self.root / "book" / f"{m[1]}.md").is_file():
                return f"[{text}]({self.site}book/{m[1]}.html)"
        if name == "ref" and target in self.labels:
            where, title = self.labels[target]
            if where != page and where.startswith("notebooks/"):
                return f"[{text or title}]({Path(where).stem}.ipynb#{target})"
        return None

    def convert(self, text: str, page: str) -> str:
        def one(m: re.Match) -> str:
            new = self.role(m["name"], m["body"], page)
            return m.group(0) if new is None else new

        text = plain_markdown._ROLE.sub(one, text)
        linked = set().union(*self.linked_here.values())  # by this chapter or another

        def box(m: re.Match) -> str:
            return m["open"] + "(" + m["label"] + ")=\n" if m["label"] in linked else m.group(0)

        text = notebook_markdown.BOX_LABEL_BEFORE.sub(box, text)
        text = notebook_markdown.EXERCISE_NUMBER.sub(lambda m: m["open"], text)  # idempotent

        def number(m: re.Match) -> str:
            name = exercise_name(m["label"])
            return m.group(0) + (f":enumerator: {name.split()[1]}\n" if name.startswith("Exercise ") else "")

        text = EXERCISE_LABEL.sub(number, text)
        text = FIGURE.sub(lambda m: m["head"] + notebook_markdown.FIGURES + m["name"] + ")", text)
        return API_ENTRY.sub(lambda m: f"]({API}{m['anchor']})", text)

    def notebook(self, path: Path) -> tuple[nbformat.NotebookNode, bool]:
        """The chapter converted, and whether that changed anything."""
        nb = nbformat.read(path, as_version=4)
        page = plain_markdown.page_of(path, self.root)
        changed = False
        in_solution = False
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                new = self.convert(cell.source, page)
                changed |= new != cell.source
                cell.source = new
                in_solution = solution_open(cell.source, in_solution)
            elif cell.cell_type == "code":
                changed |= quiz_outputs(cell)
                changed |= fold(cell, in_solution)
        if nb.metadata.get("kernelspec", {}).get("name") == "python3":
            changed |= nb.metadata.kernelspec.get("display_name") != KERNEL_DISPLAY_NAME
            nb.metadata.kernelspec["display_name"] = KERNEL_DISPLAY_NAME
        return nb, changed


SOLUTION_FENCE = re.compile(r"(?m)^(?:`{3,}|:{3,})\{solution-(?P<end>start|end)\}")


def solution_open(text: str, open_before: bool) -> bool:
    """Whether a gated solution (``{solution-start}`` ... ``{solution-end}``) is still
    open after a markdown cell with ``text``, given whether it was open before it."""
    for m in SOLUTION_FENCE.finditer(text):
        open_before = m["end"] == "start"
    return open_before


FOLD = {"source_hidden": True, "outputs_hidden": True}


def fold(cell: nbformat.NotebookNode, in_solution: bool) -> bool:
    """Fold a solution's code cell in JupyterLab and Notebook 7 (its source and outputs
    collapsed, one click on the bar opens each), as the site folds the solution in a
    dropdown; True if that changed its metadata. Only metadata: the site (MyST-NB) and
    nbconvert ignore these keys, and strict nbval compares no metadata."""
    if not in_solution:
        return False
    jupyter = cell.metadata.setdefault("jupyter", {})
    wanted = dict(FOLD) if cell.get("outputs") else {"source_hidden": True}
    # JupyterLab's cell model keeps nbformat 4's "collapsed" equal to outputs_hidden (it
    # adds it when a chapter opens): written here too, a save changes nothing
    collapsed = {"collapsed": True} if cell.get("outputs") else {}
    if all(jupyter.get(k) == v for k, v in wanted.items()) and all(
        cell.metadata.get(k) == v for k, v in collapsed.items()
    ):
        return False
    jupyter.update(wanted)
    cell.metadata.update(collapsed)
    return True


# what JupyterLab writes into a chapter when its kernel starts (ipykernel's kernel.json):
# a chapter that says "Python 3" opened marked modified
KERNEL_DISPLAY_NAME = "Python 3 (ipykernel)"
REPRS = {"<IPython.core.display.Javascript object>": RUN_TO_TAKE, "<IPython.core.display.HTML object>": ""}


def quiz_outputs(cell: nbformat.NotebookNode) -> bool:
    """Give a quiz cell's stored outputs the text/plain ``ah.quiz`` now prints (the line
    that says to run the cell, where it printed the class's repr); True if that changed
    them. Only text/plain changes, as re-executing the cell shows (strict nbval checks)."""
    if "quiz(" not in cell.source:
        return False
    changed = False
    for out in cell.get("outputs", []):
        text = out.get("data", {}).get("text/plain")
        if text in REPRS and ("application/javascript" in out.data or "text/html" in out.data):
            out.data["text/plain"] = REPRS[text]
            changed = True
    return changed


# ----------------------------------------------------------------------- the files beside the chapters


def bibliography_text(root: Path = ROOT) -> str:
    bib = (root / "book" / "references.bib").read_text(encoding="utf-8")
    refs = plain_markdown.load_bibliography(root / "book" / "references.bib")
    lines = [
        "# Bibliography",
        "",
        "The works the chapters cite; each chapter's citations link here. The site's "
        f"bibliography: <{site()}book/bibliography.html>. Written by `tools/chapters/lab_markdown.py` "
        "from `book/references.bib`; do not edit.",
        "",
    ]
    for key, ref in sorted(refs.items(), key=lambda kv: (kv[1].names.lower(), kv[1].year, kv[0])):
        entry = re.search(rf"@\w+\s*\{{\s*{re.escape(key)}\s*,(?P<body>.*?)\n\}}", bib, re.DOTALL)
        title = plain_markdown._strip_latex(plain_markdown._field(entry["body"], "title")) if entry else ""
        lines += [f'<a id="{key}"></a>', "", f"**{ref.names} ({ref.year}).** {title}. <{ref.url}>", ""]
    return "\n".join(lines)


def api_text(root: Path = ROOT) -> str:
    from chapters import api_links

    import aiayn_helpers as ah

    targets = api_links.documented_as()
    lines = [
        "# The package `aiayn_helpers`, in short",
        "",
        "Each public name the chapters use (imported as `ah`), with the first line of its "
        f"docstring; the full entries are on the site's API page, <{site()}book/api.html>, "
        "and `help(ah.NAME)` prints them here. Written by `tools/chapters/lab_markdown.py`; do not edit.",
        "",
    ]
    for name in ah.__all__:
        target = targets.get(name, f"aiayn_helpers.{name}")
        doc = inspect.getdoc(getattr(ah, name)) or ""
        first = doc.split("\n\n")[0].replace("\n", " ").strip()
        first = SPHINX_ROLE.sub(r"`\1`", first)  # a name in Markdown, not a Sphinx role
        lines += [f'<a id="{target}"></a>', "", f"**`ah.{name}`**: {first}", ""]
    return "\n".join(lines)


# a Sphinx cross-reference in a docstring (:class:`MultiHeadAttention`, :func:`~x.y`)
SPHINX_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|attr|mod|data|obj|exc):`~?([^`]+)`")


def support_files(root: Path = ROOT) -> dict[str, bytes]:
    """``{path relative to notebooks/: content}`` of what ships beside the chapters."""
    files = {BIBLIOGRAPHY: bibliography_text(root).encode(), API: api_text(root).encode()}
    for svg in sorted((root / "book" / "figures").glob("*.svg")):
        files[notebook_markdown.FIGURES + svg.name] = svg.read_bytes()
    return files


def stale_support(folder: Path = NOTEBOOKS, root: Path = ROOT) -> list[str]:
    """What in ``folder`` differs from ``support_files`` (missing, stale or left over)."""
    wanted = support_files(root)
    out = [
        name for name, data in wanted.items() if not (folder / name).is_file() or (folder / name).read_bytes() != data
    ]
    figures = folder / notebook_markdown.FIGURES
    if figures.is_dir():
        out += [f"{notebook_markdown.FIGURES}{p.name} (left over)" for p in figures.iterdir()
                if f"{notebook_markdown.FIGURES}{p.name}" not in wanted]  # fmt: skip
    return out


def write_support(folder: Path = NOTEBOOKS, root: Path = ROOT) -> None:
    """Write ``support_files`` into ``folder`` (a chapters' folder: the repository's or an edition's)."""
    wanted = support_files(root)
    figures = folder / notebook_markdown.FIGURES
    if figures.is_dir():
        for p in figures.iterdir():
            if f"{notebook_markdown.FIGURES}{p.name}" not in wanted:
                p.unlink()
    for name, data in wanted.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.is_file() or path.read_bytes() != data:
            path.write_bytes(data)


def copy_support(source: Path, dest: Path) -> None:
    """Copy the files beside the chapters of ``source`` (a notebooks/ folder) into ``dest``."""
    for name in (BIBLIOGRAPHY, API):
        shutil.copy2(source / name, dest / name)
    shutil.copytree(source / notebook_markdown.FIGURES, dest / notebook_markdown.FIGURES, dirs_exist_ok=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="convert the chapters, refresh the files beside them")
    mode.add_argument("--check", action="store_true", help="exit 1 if a chapter is not converted or a file is stale")
    parser.add_argument("notebooks", nargs="*", type=Path, help="chapters (default: every chapter)")
    args = parser.parse_args(argv)
    paths = [p.resolve() for p in args.notebooks] or sorted(NOTEBOOKS.glob("*.ipynb"))
    converter = Converter()
    failed = []
    if args.write:
        write_support()
    else:
        failed += [f"stale: notebooks/{name}" for name in stale_support()]
    for path in paths:
        nb, changed = converter.notebook(path)
        if changed and args.write:
            nbformat.write(nb, path)
            print(f"converted {path.name}")
        elif changed:
            failed.append(
                f"not converted: {path.name} (python tools/chapters/lab_markdown.py --write {path.relative_to(ROOT)})"
            )
    print(*failed, sep="\n") if failed else None
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
