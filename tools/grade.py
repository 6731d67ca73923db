"""Grade an nbgrader assignment with every submission in its own sandbox.

    python tools/grade.py assignment1                # `make grade A=assignment1`

The code is in tools/grading/, one module per stage (see its __init__); this file is
the command. It also keeps every name the single grade.py had (``grade.configure``,
which a course's nbgrader_config.py imports, ``grade.run_sandboxed``, ...), taken
from the modules of the package.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from grading import autograde, cli, decisions, repair, sandbox  # noqa: E402

for _module in (sandbox, repair, decisions, autograde, cli):
    globals().update({k: v for k, v in vars(_module).items() if not k.startswith("__")})
from grading.autograde import configure  # noqa: E402, F401  (nbgrader_config.py)
from grading.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
