"""``python tools/diagrams [--check]``: redraw the diagrams, or name the stale ones.

The diagrams are drawn into book/figures (the site, the slides). JupyterLab started in
notebooks/ shows a copy of them beside the chapters, which
``python tools/chapters/lab_markdown.py --write`` refreshes (its ``--check`` names a
stale copy); ``make diagrams`` runs the two, one after the other. This command does not
call lab_markdown itself: the chapters' tools import the editions', which import the
diagrams (ARCHITECTURE.md), so the diagrams may not import the chapters' tools back.
"""

import sys
from pathlib import Path

import matplotlib

if __package__ in (None, ""):  # run as a folder: python tools/diagrams
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

matplotlib.use("svg")  # no window needed; a test that imports the package keeps its own

from diagrams import main  # noqa: E402

status = main()
if status == 0 and "--check" not in sys.argv[1:]:
    print("then copy them beside the chapters: python tools/chapters/lab_markdown.py --write")
sys.exit(status)
