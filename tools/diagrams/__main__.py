"""``python tools/diagrams [--check]``: redraw the diagrams, or name the stale ones."""

import sys
from pathlib import Path

import matplotlib

if __package__ in (None, ""):  # run as a folder: python tools/diagrams
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

matplotlib.use("svg")  # no window needed; a test that imports the package keeps its own

from diagrams import main  # noqa: E402

sys.exit(main())
