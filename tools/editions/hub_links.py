"""An nbgitpuller link per chapter, to hand the student edition out on a JupyterHub.

    python tools/editions/hub_links.py --hub https://hub.example.edu
    make hub-links HUB_FLAGS="--hub https://hub.example.edu --markdown"
    python tools/editions/hub_links.py --hub https://hub.example.edu --assignments

A student logged in to the hub opens a chapter's link; nbgitpuller (installed in the
hub's user image) clones the repository into their home folder the first time, merges
the newer commits on later clicks without overwriting their own changes, and opens the
chapter in JupyterLab. The repository is ``repository.url`` of ``_config.yml`` (read by
``tools/editions/set_repository_url.py``; ``--repo`` for another one) and the branch the one the
instructor pushed the student edition to (``student`` unless ``--branch`` says
otherwise; the instructor guide shows how). The links are printed after the commands
that install the chapters' environment on the hub, for this release of the book.
With ``--assignments``, only a link per graded assignment is printed (the student
edition's ``assignments/<name>.ipynb``, released by nbgrader); ``make hub-links``
prints both.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from urllib.parse import quote, urlencode

if str(Path(__file__).resolve().parents[1]) not in sys.path:  # tools/: its folders are packages
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from editions.set_repository_url import ROOT, release_tag, repository_url  # noqa: E402

APPS = {
    "lab": "lab/tree",
    "notebook": "tree",
}  # JupyterLab, Jupyter Notebook 7 / classic
TORCH_INDEX = "https://download.pytorch.org/whl/cpu"


def chapters(root: Path = ROOT) -> list[str]:
    """The chapters' paths in the repository (the student edition keeps the names)."""
    return [f"notebooks/{p.name}" for p in sorted((root / "notebooks").glob("*.ipynb"))]


def assignments(root: Path = ROOT) -> list[str]:
    """The released assignments' paths in the student edition (make_student.py)."""
    source = root / "book" / "autograder" / "source"
    return [f"assignments/{p.name}" for p in sorted(source.glob("*/*.ipynb"))]


def clone_folder(repo: str) -> str:
    """The folder nbgitpuller clones ``repo`` into: its last path part, less .git."""
    name = repo.rstrip("/").rsplit("/", 1)[-1]
    return name.removesuffix(".git")


def link(hub: str, repo: str, branch: str, path: str, app: str = "lab") -> str:
    """The nbgitpuller link that pulls ``repo``'s ``branch``, opens ``path`` in ``app``.

    Every query value is percent-encoded as a whole (``/`` and ``:`` too), as
    nbgitpuller's own link generator does with ``encodeURIComponent``.
    """
    if app not in APPS:
        raise ValueError(f"app must be one of {sorted(APPS)}, got {app!r}")
    if not hub.startswith(("https://", "http://")):
        raise ValueError(f"the hub's address must start with https://, got {hub!r}")
    query = {
        "repo": repo,
        "branch": branch,
        "urlpath": f"{APPS[app]}/{clone_folder(repo)}/{path}",
    }
    encoded = urlencode(query, quote_via=quote, safe="")
    return f"{hub.rstrip('/')}/hub/user-redirect/git-pull?{encoded}"


def torch_pin(root: Path = ROOT) -> str:
    """The book's ``torch==X.Y.Z`` line of requirements.txt."""
    for line in (root / "requirements.txt").read_text().splitlines():
        if line.startswith("torch=="):
            return line.strip()
    raise SystemExit("requirements.txt pins no torch==")


def install_commands(repo: str) -> list[str]:
    """What the hub's user image installs: CPU PyTorch, the reader set at the tag."""
    package = f"aiayn_helpers[reader] @ git+{repo}@{release_tag()}"
    return [
        f'pip install "{torch_pin()}" --index-url {TORCH_INDEX}',
        f'pip install "{package}" nbgitpuller',
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hub", required=True, help="https://hub.example.edu")
    parser.add_argument("--repo", help="default: repository.url of _config.yml")
    parser.add_argument("--branch", default="student", help="the student edition's")
    parser.add_argument("--app", choices=sorted(APPS), default="lab")
    parser.add_argument("--markdown", action="store_true", help="a Markdown table")
    parser.add_argument(
        "--assignments",
        action="store_true",
        help="only the graded assignments' links",
    )
    args = parser.parse_args(argv)
    repo = args.repo or repository_url()
    if args.assignments:
        print(f"# One link per graded assignment ({repo}, branch {args.branch}):")
        _table(args, repo, assignments(), "Assignment")
        return 0
    print("# The hub's user image (once per release of the book):")
    for command in install_commands(repo):
        print(command)
    print(f"\n# One link per chapter ({repo}, branch {args.branch}):")
    _table(args, repo, chapters(), "Chapter")
    return 0


def _table(args, repo: str, paths: list[str], what: str) -> None:
    """A link per path, as lines or as a Markdown table."""
    if args.markdown:
        print(f"| {what} | Link |\n|---|---|")
    for path in paths:
        url = link(args.hub, repo, args.branch, path, args.app)
        name = Path(path).stem
        if args.markdown:
            print(f"| {name} | [open on the hub]({url}) |")
        else:
            print(f"{name}  {url}")


if __name__ == "__main__":
    sys.exit(main())
