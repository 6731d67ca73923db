"""The exercise test of chapters 8 and 10 (tests/test_exercises.py explains it; chapters 7
and 9: tests/test_exercises_long.py)."""

from __future__ import annotations

import pytest
from test_exercises import LONG, NOTEBOOKS, PENDING, right_answers_pass_and_wrong_ones_are_reported
from test_exercises_long import CHAPTERS


@pytest.mark.exercises
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if p.name in LONG - CHAPTERS - PENDING], ids=lambda p: p.name)
def test_right_answers_pass_and_wrong_ones_are_reported(path):
    right_answers_pass_and_wrong_ones_are_reported(path)
