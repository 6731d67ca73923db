"""Grading's commands, one entry point: ``python -m grading COMMAND`` with tools/ on the
path (``PYTHONPATH=tools``; the Makefile's ``make collect``, ``make grade`` and ``make
export`` run these)::

    python -m grading collect downloads.zip assignment1   # a platform's zip -> submitted/
    python -m grading grade assignment1                   # every submission, sandboxed
    python -m grading export [assignment1]                # grades.csv, the platforms' files

tools/grade.py and tools/collect.py stay as thin commands with the same arguments: a
course's nbgrader_config.py (written by make student, kept by instructors between
terms) imports ``grade.configure`` from tools/, so moving grade.py would break every
course folder made before; they call the same functions as this.
"""

from __future__ import annotations

import sys

COMMANDS = ("collect", "grade", "export")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] not in COMMANDS:
        given = argv[0] if argv else "nothing"
        usage = f"usage: python -m grading {{{','.join(COMMANDS)}}} ..."
        print(f"{usage}: expected a command, got {given}", file=sys.stderr)
        return 2
    command, rest = argv[0], argv[1:]
    if command == "collect":
        from .collect import main as run
    elif command == "grade":
        from .cli import main as run
    else:
        from .export import main as run
    return run(rest)


if __name__ == "__main__":
    sys.modules.setdefault("rfc3987_syntax", None)  # jsonschema's: 3 s of CPU at import, unused
    sys.exit(main())
