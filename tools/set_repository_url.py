"""Keep the repository URL in one place: ``_config.yml`` (``repository.url``).

The site's launch and repository buttons read it there; each notebook's hidden Colab
cell installs the package from it. This tool copies the URL into the Colab cells:

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
INSTALL = re.compile(r'"aiayn_helpers(?P<extras>\[[a-z,]+\])? @ git\+(?P<url>[^"]*)"')


def repository_url(config: Path = CONFIG) -> str:
    return yaml.safe_load(config.read_text())["repository"]["url"]


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
        new = INSTALL.sub(lambda m: f'"aiayn_helpers{m.group("extras") or ""} @ git+{url}"', cell.source)
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
