"""ah.setup_notebook's figure defaults do not depend on Jupyter's inline backend.

matplotlib_inline comes with ipykernel, not with the [reader] extra: outside Jupyter
(a script, a plain Python session) the figure style must still be set.
"""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import sys
{block}
import matplotlib
matplotlib.use("Agg")
import aiayn_helpers as ah
ah.setup_notebook(threads=1)
print(matplotlib.rcParams["figure.figsize"], matplotlib.rcParams["axes.grid"],
      matplotlib.rcParams["axes.spines.top"], "matplotlib_inline" in sys.modules)
"""
# an import hook that makes matplotlib_inline look uninstalled
BLOCK = """
class _NoInline:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "matplotlib_inline":
            raise ImportError("blocked by the test")
sys.meta_path.insert(0, _NoInline())
"""


def _run(block: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(block=block)],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def test_style_is_set_without_matplotlib_inline():
    assert _run(BLOCK) == "[6.4, 4.0] True False False"


def test_style_is_set_with_matplotlib_inline():
    assert _run("") == "[6.4, 4.0] True False True"
