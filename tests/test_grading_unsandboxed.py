"""`make grade GRADE_FLAGS=--unsandboxed`: grading goes on without bubblewrap, loudly.

tests/test_grading.py checks that without the flag grading refuses and says what to
install; here the flag is given on a machine with no bwrap: the warning is printed
before anything else happens (grading then stops at a broken deadlines file, so that
nothing is executed).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
pytest.importorskip("nbgrader", reason="nbgrader is pinned in requirements.txt")
import grade  # noqa: E402


@pytest.mark.parametrize("unsandboxed", [False, True])
def test_unsandboxed_grading_warns_instead_of_refusing(tmp_path, monkeypatch, capsys, unsandboxed):
    course = tmp_path / "course"
    course.mkdir()
    (course / "nbgrader_config.py").write_text("from grade import configure\n")
    deadlines = tmp_path / "deadlines.toml"
    deadlines.write_text("[late\n")  # not TOML: main stops there, after the checks
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap on it
    grade.sandbox_problem.cache_clear()
    argv = ["assignment1", "--course", str(course), "--deadlines", str(deadlines)]
    try:
        assert grade.main(argv + ["--unsandboxed"] * unsandboxed) == 2
    finally:
        grade.sandbox_problem.cache_clear()
    err = capsys.readouterr().err
    banner = "--unsandboxed: the notebooks run as YOU"
    if unsandboxed:
        assert err.startswith(grade.UNSANDBOXED) and banner in err
        assert "never for students' submissions" in err
        assert "apt install bubblewrap" not in err
        assert str(deadlines) in err  # it went on to read the due dates
    else:
        assert banner not in err and "apt install bubblewrap" in err
        assert str(deadlines) not in err  # it refused before
    assert sorted(p.name for p in course.iterdir()) == ["nbgrader_config.py"]
