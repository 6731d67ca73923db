"""What the ``train`` and ``evaluate`` commands share: a parser, an error wrapper."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable


def make_parser(prog: str, doc: str) -> argparse.ArgumentParser:
    """A parser whose description is the first paragraph of the module docstring
    ``doc``.

    It has the options both command lines take: ``--data-dir``, ``--threads`` and
    ``--no-progress``.
    """
    parser = argparse.ArgumentParser(
        prog=prog,
        description=doc.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--data-dir",
        default=None,
        help="Multi30k folder (default $AIAYN_DATA_DIR or a download)",
    )
    parser.add_argument(
        "--threads", type=int, default=None, help="torch CPU threads per process"
    )
    parser.add_argument("--no-progress", action="store_true", help="no tqdm bars")
    return parser


def run(main: Callable[[], object]) -> None:
    """Call ``main()``; a ``ValueError`` becomes ``error: ...`` and exit status 2."""
    try:
        main()
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
