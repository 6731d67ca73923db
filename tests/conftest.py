"""Shared fixtures for the package tests. Everything runs on the CPU in float64."""

from __future__ import annotations

import os

import pytest
import torch


@pytest.fixture(autouse=True)
def _seed_and_threads():
    torch.manual_seed(0)
    torch.set_num_threads(int(os.environ.get("AIAYN_THREADS", "1")))
    yield


def f64(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, dtype=torch.float64)
