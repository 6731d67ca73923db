"""Small helpers shared by the chapters: seeding, counting, notebook defaults."""

from __future__ import annotations

import os
import random

import numpy as np
import torch
from torch import nn


def seed_everything(seed: int = 0) -> None:
    """Seed Python, NumPy and PyTorch, and ask PyTorch for deterministic kernels."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True, warn_only=True)


def count_parameters(model: nn.Module, trainable_only: bool = True) -> int:
    """Number of parameters; shared (tied) tensors are counted once."""
    return sum(
        p.numel() for p in model.parameters() if p.requires_grad or not trainable_only
    )


def setup_notebook(seed: int = 0, threads: int | None = None) -> None:
    """One call at the top of every chapter: seeds, CPU threads and figure defaults.

    Figures are emitted as PNG (SVG output embeds random ids that strict nbval would
    flag) where Jupyter's inline backend (``matplotlib_inline``, which ipykernel
    installs) is there; the style (size, grid, spines) is set wherever matplotlib is.
    ``threads`` defaults to the environment variable ``AIAYN_THREADS`` or 1: on a
    shared machine (a classroom server), two notebooks with 2 threads each on 2 cores
    ran several times slower than with 1 thread each (the instructor guide gives the
    measurements).
    """
    seed_everything(seed)
    torch.set_num_threads(threads or int(os.environ.get("AIAYN_THREADS", "1")))
    torch.set_printoptions(precision=4, sci_mode=False)
    np.set_printoptions(precision=4, suppress=True)
    try:
        import matplotlib
        import matplotlib.pyplot as plt
    except ImportError:  # plotting is optional for the package itself
        return
    try:  # Jupyter's inline backend (ipykernel installs it); PNG is also its default
        from matplotlib_inline.backend_inline import set_matplotlib_formats
    except ImportError:  # a plain Python session: no inline figures to format
        pass
    else:
        set_matplotlib_formats("png")
    matplotlib.rcParams.update(
        {
            "figure.dpi": 100,
            "figure.figsize": (6.4, 4.0),
            "axes.grid": True,
            "grid.alpha": 0.3,
            "svg.hashsalt": "aiayn",
        }
    )
    plt.rcParams["axes.spines.top"] = False
    plt.rcParams["axes.spines.right"] = False


class expect_error:  # noqa: N801 (used as a context manager: ``with ah.expect_error(...)``)
    """Run a block that shows a mistake failing on purpose, and keep the notebook going.

    ``with ah.expect_error(AssertionError): assert ...`` catches the error, prints its
    type and message (so a reader running all cells sees what went wrong and Run All
    reaches the end of the chapter), and raises ``AssertionError`` itself when the block
    does *not* fail, or fails with another type, or with a message lacking ``match``:
    the demonstration is still checked every time the notebook runs.
    """

    def __init__(
        self, error: type[BaseException] = Exception, match: str | None = None
    ):
        if not (isinstance(error, type) and issubclass(error, BaseException)):
            raise ValueError(f"error must be an exception class, got {error!r}")
        self.error, self.match = error, match

    def __enter__(self) -> expect_error:
        return self

    def __exit__(self, kind, value, tb) -> bool:
        if kind is None:
            raise AssertionError(
                f"expected {self.error.__name__}, but the block ran without an error"
            )
        if not issubclass(kind, self.error):
            return False  # an unexpected error propagates with its own traceback
        message = str(value)
        if self.match is not None and self.match not in message:
            raise AssertionError(
                f"expected {self.error.__name__} saying {self.match!r}, got {message!r}"
            ) from value
        print(f"{kind.__name__}: {message}" if message else kind.__name__)
        return True
