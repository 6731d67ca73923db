"""Keep the repository URL in one place: ``_config.yml`` (``repository.url``).

The site's launch and repository buttons read it there; each notebook's hidden Colab
cell installs the package, with its reader set (``aiayn_helpers[reader]``), from the
release tag of that repository: ``v`` and the version in ``pyproject.toml``. Publishing
a release is therefore: set the URL, bump the version, run this tool, commit, then
``git tag vX.Y.Z && git push --tags``. This tool copies the URL and the tag into the
Colab cells:

    python tools/set_repository_url.py                      # after editing _config.yml by hand
    python tools/set_repository_url.py https://github.com/OWNER/REPO   # set it in both places

``tests/test_portability.py`` fails when a notebook's Colab cell disagrees with ``_config.yml``.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "_config.yml"
PYPROJECT = ROOT / "pyproject.toml"
INSTALL = re.compile(r'"aiayn_helpers(?P<extras>\[[a-z,]+\])? @ git\+(?P<url>[^"@]*)(?:@(?P<ref>[^"]+))?"')


def repository_url(config: Path = CONFIG) -> str:
    return yaml.safe_load(config.read_text())["repository"]["url"]


def release_tag(pyproject: Path = PYPROJECT) -> str:
    """The git tag a Colab cell installs: ``v`` and the package's version."""
    import tomllib

    return "v" + tomllib.loads(pyproject.read_text())["project"]["version"]


def install_specs(source: str) -> list[tuple[str, str, str | None]]:
    """``(extras, url, ref)`` of every install of the package in a Colab cell."""
    return [(m.group("extras") or "", m.group("url"), m.group("ref")) for m in INSTALL.finditer(source)]


def installed_from(source: str) -> list[str]:
    """The URLs a Colab cell installs the package from."""
    return [m.group("url") for m in INSTALL.finditer(source)]


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
        new = INSTALL.sub(lambda m: f'"aiayn_helpers[reader] @ git+{url}@{release_tag()}"', cell.source)
        if new != cell.source:
            cell.source = new
            nbformat.write(nb, path)
            changed.append(path)
    return changed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url", nargs="?", help="new repository URL (default: keep the one in _config.yml)")
    args = parser.parse_args()
    if args.url:
        set_config_url(args.url.rstrip("/"))
    url = repository_url()
    changed = sync_notebooks(url, sorted((ROOT / "notebooks").glob("*.ipynb")))
    print(f"repository {url}: {len(changed)} notebook(s) updated")


if __name__ == "__main__":
    main()
