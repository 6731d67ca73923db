"""The exercise test of chapters 7 and 9 (tests/test_exercises.py explains it).

Chapters 7 to 10 train and decode for minutes, as long as the other eight together:
pytest-xdist (--dist loadfile) gives a whole file to one worker, so they come in two files
of their own (chapters 8 and 10: tests/test_exercises_long_2.py) and the three parts of the
exercise test run side by side with the rest of `make test-portable`.
"""

from __future__ import annotations

import pytest
from test_exercises import LONG, NOTEBOOKS, PENDING, right_answers_pass_and_wrong_ones_are_reported

CHAPTERS = {"07_full_model.ipynb", "09_what_the_paper_measured.ipynb"}


@pytest.mark.exercises
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if p.name in CHAPTERS & LONG - PENDING], ids=lambda p: p.name)
def test_right_answers_pass_and_wrong_ones_are_reported(path):
    right_answers_pass_and_wrong_ones_are_reported(path)
