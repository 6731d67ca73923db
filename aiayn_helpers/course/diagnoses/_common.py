"""What more than one part's diagnoses use."""

from __future__ import annotations

from typing import Any

import torch


def _allclose(a: Any, b: Any, tol: float) -> bool:
    try:
        return bool(torch.allclose(a.double(), b.double(), rtol=tol, atol=tol))
    except (AttributeError, RuntimeError, TypeError):
        return False
