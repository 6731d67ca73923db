"""Keep the repository URL in one place: ``_config.yml`` (``repository.url``).

The site's launch and repository buttons read it there; each notebook's hidden Colab
cell installs the package, with its reader set (``aiayn_helpers[reader]``), from the
release tag of that repository: ``v`` and the version in ``pyproject.toml``. Publishing
a release is therefore: set the URL, bump the version, run this tool, commit, then
``git tag vX.Y.Z && git push --tags``. This tool copies the URL and the tag into the
Colab cells:

    python tools/editions/set_repository_url.py                      # after editing _config.yml by hand
    python tools/editions/set_repository_url.py https://github.com/OWNER/REPO   # set it in both places

It also rewrites the README's links (the site on GitHub Pages, Colab, Binder and the
``pip install`` line). ``tests/test_portability.py`` fails when a notebook's Colab cell or
the README disagrees with ``_config.yml``.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "_config.yml"
PYPROJECT = ROOT / "pyproject.toml"
INSTALL = re.compile(r'"aiayn_helpers(?P<extras>\[[a-z,]+\])? @ git\+(?P<url>[^"@]*)(?:@(?P<ref>[^"]+))?"')


def repository_url(config: Path = CONFIG) -> str:
    return yaml.safe_load(config.read_text())["repository"]["url"]


def release_tag(pyproject: Path = PYPROJECT) -> str:
    """The git tag a Colab cell installs: ``v`` and the package's version."""
    import tomllib

    return "v" + tomllib.loads(pyproject.read_text())["project"]["version"]


# The Colab cell names the repository on a line of its own, ``REPO = "https://..."``, and
# installs from ``git+{REPO}`` (IPython expands ``{REPO}`` in a magic), so that no line of
# the cell is wider than the book's 88 columns.
REPO_LINE = re.compile(r'(?m)^(?P<head>[ \t]*REPO = ")(?P<url>[^"]*)"')


def _url(url: str, source: str) -> str:
    """``url`` as pip sees it: ``{REPO}`` is the value of the cell's ``REPO`` line."""
    if url != "{REPO}":
        return url
    line = REPO_LINE.search(source)
    if line is None:
        raise ValueError("the Colab cell installs from git+{REPO} but sets no REPO")
    return line.group("url")


def install_specs(source: str) -> list[tuple[str, str, str | None]]:
    """``(extras, url, ref)`` of every install of the package in a Colab cell."""
    return [(m.group("extras") or "", _url(m.group("url"), source), m.group("ref")) for m in INSTALL.finditer(source)]


def installed_from(source: str) -> list[str]:
    """The URLs a Colab cell installs the package from."""
    return [url for _, url, _ in install_specs(source)]


def set_config_url(url: str, config: Path = CONFIG) -> None:
    text = config.read_text()
    new, n = re.subn(r"(?m)^(repository:\n  url: ).*$", lambda m: m.group(1) + url, text)
    if n != 1:
        raise SystemExit(f"could not find repository.url in {config}")
    config.write_text(new)


def sync_notebooks(url: str, notebooks: list[Path]) -> list[Path]:
    """Rewrite the Colab cell of every notebook whose URL differs; return the changed files."""
    changed = []
    for path in notebooks:
        nb = nbformat.read(path, as_version=4)
        cell = next(c for c in nb.cells if c.cell_type == "code")

        def spec(m: re.Match) -> str:
            where = "{REPO}" if m.group("url") == "{REPO}" else url  # the REPO line holds the URL
            return f'"aiayn_helpers[reader] @ git+{where}@{release_tag()}"'

        new = INSTALL.sub(spec, cell.source)
        new = REPO_LINE.sub(lambda m: f'{m.group("head")}{url}"', new)
        if new != cell.source:
            cell.source = new
            nbformat.write(nb, path)
            changed.append(path)
    return changed


README = ROOT / "README.md"
_REPO = r"(?P<repo>[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)"
# the README's links to the repository: (pattern, replacement given "OWNER/REPO" and the tag)
README_LINKS = [
    (re.compile(r"git\+https://github\.com/" + _REPO + r"@v[0-9][0-9A-Za-z.]*"),
     lambda repo, tag: f"git+https://github.com/{repo}@{tag}"),
    (re.compile(r"https://colab\.research\.google\.com/github/" + _REPO + "/"),
     lambda repo, tag: f"https://colab.research.google.com/github/{repo}/"),
    (re.compile(r"https://mybinder\.org/v2/gh/" + _REPO + "/"), lambda repo, tag: f"https://mybinder.org/v2/gh/{repo}/"),
    (re.compile(r"https://(?P<owner>[A-Za-z0-9-]+)\.github\.io/(?P<name>[A-Za-z0-9_.-]+)/"),
     lambda repo, tag: "https://{}.github.io/{}/".format(*repo.split("/"))),
]  # fmt: skip


def owner_repo(url: str) -> str:
    """``OWNER/REPO`` of ``https://github.com/OWNER/REPO``."""
    m = re.fullmatch(r"https://github\.com/([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+?)(?:\.git)?/?", url)
    if not m:
        raise SystemExit(f"expected a GitHub repository URL https://github.com/OWNER/REPO, got {url!r}")
    return m.group(1)


def site_url(url: str | None = None) -> str:
    """The published site (GitHub Pages) of the repository: ``https://OWNER.github.io/REPO/``."""
    return "https://{}.github.io/{}/".format(*owner_repo(url or repository_url()).split("/"))


def readme_links(text: str) -> list[str]:
    """Every link of the README that names the repository, as written."""
    return [m.group(0) for pattern, _ in README_LINKS for m in pattern.finditer(text)]


def sync_readme(url: str, readme: Path = README) -> bool:
    """Point the README's links at ``url`` and the release tag; return whether it changed."""
    repo, tag, text = owner_repo(url), release_tag(), readme.read_text()
    new = text
    for pattern, replacement in README_LINKS:
        new = pattern.sub(lambda m, r=replacement: r(repo, tag), new)
    if new != text:
        readme.write_text(new)
    return new != text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url", nargs="?", help="new repository URL (default: keep the one in _config.yml)")
    args = parser.parse_args()
    if args.url:
        set_config_url(args.url.rstrip("/"))
    url = repository_url()
    changed = sync_notebooks(url, sorted((ROOT / "notebooks").glob("*.ipynb")))
    readme = sync_readme(url)
    print(f"repository {url}: {len(changed)} notebook(s) updated; README {'updated' if readme else 'unchanged'}")


if __name__ == "__main__":
    main()
