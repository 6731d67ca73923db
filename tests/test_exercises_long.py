"""The exercise test of chapters 7 to 10 (tests/test_exercises.py explains it).

These four chapters train and decode for minutes, as long as the other eight together:
pytest-xdist (--dist loadfile) gives a whole file to one worker, so they have a file of
their own and the two halves run side by side in `make test-portable`.
"""

from __future__ import annotations

import pytest
from test_exercises import LONG, NOTEBOOKS, PENDING, right_answers_pass_and_wrong_ones_are_reported


@pytest.mark.exercises
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if p.name in LONG - PENDING], ids=lambda p: p.name)
def test_right_answers_pass_and_wrong_ones_are_reported(path):
    right_answers_pass_and_wrong_ones_are_reported(path)
