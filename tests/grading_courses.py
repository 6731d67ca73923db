"""nbgrader course folders for the grading tests, as `make student` writes them, with only the assignments a test
grades.

``make_student.build_course(course)`` generates every assignment of book/autograder/source (nbgrader
generate_assignment, about 3 s each on a 2-core machine, 13 s for the four); a test that grades one assignment
needs one. :func:`course_of` generates the course of the assignments named, once per test session (per
pytest-xdist worker), and copies it for every later test that asks for the same assignments: the copy is the
folder build_course writes (nbgrader_config.py, source/, release/, gradebook.db; none of them holds its own path).

Not a test file (pytest collects only ``test_*.py``); the tests import it as ``import grading_courses``.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from editions import make_student  # noqa: E402

_BUILT: dict[tuple[str, ...], Path] = {}  # assignments -> the course generated for them, this session


def course_of(tmp_path_factory: pytest.TempPathFactory, course: Path, names: Iterable[str]) -> list[str]:
    """Write make student's course folder with the assignments ``names`` only into ``course``; return the names
    of the assignments in it (as build_course does: a name with no source folder is not among them)."""
    key = tuple(sorted(set(names)))
    if key not in _BUILT or not _BUILT[key].is_dir():
        made = tmp_path_factory.mktemp("course-" + "-".join(key))
        source = made / "source"
        source.mkdir()
        for name in key:
            (source / name).symlink_to(make_student.ASSIGNMENTS / name, target_is_directory=True)
        make_student.build_course(made / "course", source)
        _BUILT[key] = made / "course"
    shutil.copytree(_BUILT[key], course, symlinks=True, dirs_exist_ok=True)
    return sorted(p.name for p in (course / "release").iterdir() if p.is_dir())
