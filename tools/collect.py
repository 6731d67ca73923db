"""Collect a course platform's zip of submissions into nbgrader's submitted/ folder.

    python tools/collect.py downloads.zip assignment1   # `make collect ZIP=... A=...`

The code is tools/grading/collect.py (see its docstring for the layouts it reads).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from grading.collect import collect, main, owner, read_times  # noqa: E402, F401
from grading.roster import student_id  # noqa: E402, F401

if __name__ == "__main__":
    sys.exit(main())
