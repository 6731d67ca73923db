"""The editions the release publishes, one folder per branch of the repository.

    python tools/editions/make_editions.py --student _student --out _editions

writes

* ``_editions/student/``, for the branch ``student``: the student edition (solutions
  replaced by answer cells, tools/editions/make_student.py) for a class. The student site's
  Colab and Binder buttons, the README's class links and ``make hub-links``
  (nbgitpuller) open its notebooks;
* ``_editions/instructor/``, for the branch ``instructor``: the chapters with their
  solutions, which the README's Colab and Binder links and the instructor site's
  buttons open.

Both are built the same way: each chapter's markdown in plain Markdown
(tools/editions/plain_markdown.py: no directive, role or label, which Colab and GitHub would
show raw, and JupyterLab without jupyterlab-myst too), the code and its outputs as
they are. The first cell installs the package where it is missing (Colab, Binder) from
the repository at the release tag, ``git+REPO@vX.Y.Z``; ``binder/`` installs the same
with JupyterLab; ``README.md`` says which edition it is and how to open it. Nothing
else: no tests, no lint configuration, no wheel. ``.github/workflows/pages.yml``
pushes each folder to its branch after the tests pass, once the tag exists.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
import textwrap
from pathlib import Path

import nbformat

if str(Path(__file__).resolve().parents[1]) not in sys.path:  # tools/: its folders are packages
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from editions import make_student, plain_markdown, set_repository_url  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
MARKER = ".editions"
EDITIONS = {"student": make_student.STUDENT_BRANCH, "instructor": "instructor"}  # folder: branch
FIRST = "00_a_first_look.ipynb"


def colab_link(repo: str, branch: str, notebook: str = FIRST) -> str:
    """Colab's address of a notebook of ``branch`` (``notebooks/NAME``)."""
    return f"https://colab.research.google.com/github/{repo}/blob/{branch}/notebooks/{notebook}"


def binder_link(repo: str, branch: str) -> str:
    """mybinder.org's address of ``branch``, opening its notebooks folder in JupyterLab."""
    return f"https://mybinder.org/v2/gh/{repo}/{branch}?urlpath=lab/tree/notebooks"


def package_spec(extras: str = "[lab]") -> str:
    """The package at the release: ``aiayn_helpers[lab] @ git+https://github.com/OWNER/REPO@vX.Y.Z``."""
    return f"aiayn_helpers{extras} @ git+{set_repository_url.repository_url()}@{set_repository_url.release_tag()}"


README = """\
# {title}

{what}

The chapters are in `notebooks/`, in plain Markdown, so they read the same in Colab,
on GitHub, in JupyterLab and in Jupyter Notebook; the book's site is {site}.
This branch is generated from the book's release {tag} by `tools/editions/make_editions.py`
and replaced at every release: do not edit it.

- **Colab**: [chapter 0]({colab}) (for another chapter, change the file name at the
  end of the address). The first cell installs the book's package.
- **Binder**: [every chapter]({binder}) in JupyterLab (`binder/` installs it).
- **Your own machine** (Python {pythons}, CPU only):

  ```bash
  python3 -m venv .venv && source .venv/bin/activate
  pip install torch=={torch} --index-url https://download.pytorch.org/whl/cpu
  pip install "{package}"
  {lab}
  ```
"""

WHAT = {
    "student": (
        "Attention Is All You Need, from first principles: student edition",
        "The chapters for a class: every exercise has an answer cell for you to fill and a "
        "check cell below it that says whether your answer is right. No solutions are "
        "included.{assignments}",
    ),
    "instructor": (
        "Attention Is All You Need, from first principles: the chapters with solutions",
        "The chapters for reading on your own and for teachers, with every exercise's "
        "solution. For a class, use the branch `student`, which has none.",
    ),
}


def readme(edition: str, repo: str, assignments: bool) -> str:
    title, what = WHAT[edition]
    what = textwrap.fill(
        what.format(assignments=" The graded assignments are in `assignments/`." if assignments else ""), 88
    )
    requirements = (ROOT / "requirements.txt").read_text()
    return README.format(
        title=title,
        what=what,
        site=set_repository_url.site_url(),
        tag=set_repository_url.release_tag(),
        colab=colab_link(repo, EDITIONS[edition]),
        binder=binder_link(repo, EDITIONS[edition]),
        torch=make_student.torch_pin(requirements),
        package=package_spec(),
        pythons=python_range(),
        # the folder JupyterLab serves holds what the reader opens: chapters and assignments
        lab="jupyter lab" if assignments else "jupyter lab notebooks/",
    )


def python_range(pyproject: Path = ROOT / "pyproject.toml") -> str:
    """The Pythons, "3.11 to 3.14", of pyproject.toml's ``requires-python = ">=3.11,<3.15"``."""
    import tomllib

    requires = tomllib.loads(pyproject.read_text())["project"]["requires-python"]
    m = re.fullmatch(r">=3\.(\d+),<3\.(\d+)", requires)
    if not m:
        raise ValueError(f"expected requires-python of the form >=3.X,<3.Y, got {requires!r}")
    return f"3.{m[1]} to 3.{int(m[2]) - 1}"


def binder_requirements(root: Path = ROOT) -> str:
    """binder/requirements.txt of a branch: the repository's (same pins) and the package at the release."""
    pins = [ln for ln in (root / "binder" / "requirements.txt").read_text().splitlines() if not ln.startswith("#")]
    return (
        "# Binder (mybinder.org) builds this environment: CPU PyTorch, what the chapters import,\n"
        "# JupyterLab (the book's [lab] set at the pins of its requirements.txt) and the book's\n"
        "# package at the release. Generated by tools/editions/make_editions.py.\n"
        + "\n".join(pins).strip("\n")
        + f"\n{package_spec()}\n"
    )


def _write_notebooks(sources: list[Path], dest: Path, ctx: plain_markdown.Context) -> list[str]:
    dest.mkdir(parents=True)
    for path in sources:
        nb = plain_markdown.plain_notebook(nbformat.read(path, as_version=4), ctx)
        nbformat.validate(nb)
        nbformat.write(nb, dest / path.name)
    return [p.name for p in sources]


def _edition(
    out: Path, edition: str, notebooks: list[Path], ctx: plain_markdown.Context, root: Path, assignments: Path | None
) -> None:
    if not notebooks:
        raise ValueError(f"no notebooks for the {edition} edition")
    out.mkdir(parents=True)
    repo = set_repository_url.owner_repo(set_repository_url.repository_url())
    _write_notebooks(notebooks, out / "notebooks", ctx)
    if assignments is not None and assignments.is_dir():
        shutil.copytree(assignments, out / "assignments")
    (out / "binder").mkdir()
    (out / "binder" / "requirements.txt").write_text(binder_requirements(root))
    shutil.copy2(root / "binder" / "runtime.txt", out / "binder" / "runtime.txt")
    (out / "README.md").write_text(readme(edition, repo, assignments=(out / "assignments").exists()))


def build(out: Path, student: Path | None = None, root: Path = ROOT) -> dict[str, Path]:
    """Write every edition into ``out/<edition>/``; return ``{edition: folder}``.

    ``student``: a student edition written by tools/editions/make_student.py (default: one is
    built in a temporary folder).
    """
    out = out.resolve()
    if out == root.resolve() or root.resolve().is_relative_to(out):
        raise ValueError(f"refusing to write the editions over the sources: {out}")
    if out.exists():
        if not (out / MARKER).exists() and any(out.iterdir()):
            raise ValueError(f"{out} exists and was not written by make_editions; not deleting it")
        shutil.rmtree(out)
    out.mkdir(parents=True)
    (out / MARKER).write_text("generated by tools/editions/make_editions.py; do not edit\n")
    ctx = plain_markdown.book_context(root)
    with tempfile.TemporaryDirectory() as tmp:
        if student is None:
            student = Path(tmp) / "student"
            make_student.build(student, root, course=Path(tmp) / "course", wheel=False)
        if not (student / make_student.MARKER).exists():
            raise ValueError(f"{student} is not a student edition (run tools/editions/make_student.py)")
        student_notebooks = sorted((student / "notebooks").glob("*.ipynb"))
        _edition(out / "student", "student", student_notebooks, ctx, root, student / "assignments")
    _edition(out / "instructor", "instructor", sorted((root / "notebooks").glob("*.ipynb")), ctx, root, None)
    refuse_decisions(out, root)
    return {name: out / name for name in EDITIONS}


def refuse_decisions(out: Path, root: Path = ROOT) -> None:
    """Raise ValueError when the editions in ``out``, or the repository ``root`` they
    are published beside, hold an instructor's decisions file with entries (students'
    extensions and grades belong in _grading/decisions.toml, which git ignores)."""
    from grading.decisions import published_entries

    found = published_entries(out) + published_entries(root / "book")
    if found:
        raise ValueError(f"refusing to publish students' decisions: {'; '.join(found)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "_editions", help="output folder (default: _editions)")
    parser.add_argument("--student", type=Path, help="a student edition already built (default: build one)")
    args = parser.parse_args(argv)
    folders = build(args.out, args.student)
    for name, folder in folders.items():
        count = len(list((folder / "notebooks").glob("*.ipynb")))
        print(f"{name}: {count} notebooks in {folder} (branch {EDITIONS[name]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
