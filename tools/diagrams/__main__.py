"""``python tools/diagrams [--check]``: redraw the diagrams, or name the stale ones.

The diagrams are drawn into book/figures (the site, the slides) and copied into
notebooks/figures, beside the chapters, so that JupyterLab started in notebooks/ shows
them (tools/chapters/lab_markdown.py); ``--check`` also names a stale copy there.
"""

import sys
from pathlib import Path

import matplotlib

if __package__ in (None, ""):  # run as a folder: python tools/diagrams
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

matplotlib.use("svg")  # no window needed; a test that imports the package keeps its own

from chapters import lab_markdown  # noqa: E402

from diagrams import main  # noqa: E402

status = main()
if "--check" in sys.argv[1:]:
    copies = [n for n in lab_markdown.stale_support() if n.startswith("figures/")]
    for name in copies:
        print(f"out of date: notebooks/{name} (run python tools/diagrams)")
    status = status or (1 if copies else 0)
else:
    lab_markdown.write_support()
sys.exit(status)
