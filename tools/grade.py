"""Grade an nbgrader assignment with every submission in its own sandbox.

    python tools/grade.py assignment1                # `make grade A=assignment1`
    python tools/grade.py export [assignment1]       # `make export`: grades.csv and
                                                     # the platforms' import files

The code is in tools/grading/, one module per stage (see its __init__); this file is
the command. It also keeps every name the single grade.py had (``grade.configure``,
which a course's nbgrader_config.py imports, ``grade.run_sandboxed``, ...), taken
from the modules of the package.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
if __name__ == "__main__":  # jsonschema's rfc3987_syntax: 3 s of CPU at import, unused
    sys.modules.setdefault("rfc3987_syntax", None)

from grading import autograde, cli, decisions, repair, sandbox  # noqa: E402

for _module in (sandbox, repair, decisions, autograde, cli):
    globals().update({k: v for k, v in vars(_module).items() if not k.startswith("__")})
from grading import handin  # noqa: E402


def configure(c) -> None:
    """nbgrader's config for a course (its nbgrader_config.py calls this): grading in
    the sandbox (autograde.configure) and the "Am I done?" cell in every released
    assignment (handin.configure)."""
    autograde.configure(c)
    handin.configure(c)


from grading.cli import main  # noqa: E402

if __name__ == "__main__":
    if sys.argv[1:2] == ["export"]:
        from grading.export import main as export_main

        sys.exit(export_main(sys.argv[2:]))
    sys.exit(main())
