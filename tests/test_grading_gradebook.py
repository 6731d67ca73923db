"""A course without a gradebook is graded without the venv's bin on PATH (issue #35).

nbgrader creates ``gradebook.db`` by running the ``alembic`` command it finds on PATH;
``.venv/bin/python tools/grade.py`` (make grade) with the venv not activated has none,
and the first grading of a new course failed with ``FileNotFoundError: 'alembic'``.
grading.gradebook.use_this_python reads the schema's version in the process instead.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
pytest.importorskip("nbgrader", reason="nbgrader is pinned in requirements.txt")
import grade  # noqa: E402
from editions import make_student  # noqa: E402
from grading import gradebook  # noqa: E402

NO_SANDBOX = grade.sandbox_problem()
# a PATH without the venv's bin (nor any other alembic)
BARE = {**os.environ, "PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"}
NEW_GRADEBOOK = "from nbgrader.api import Gradebook; Gradebook('sqlite:///{db}').close()"


def _no_alembic_on_path() -> bool:
    return not any((Path(p) / "alembic").exists() for p in BARE["PATH"].split(":"))


pytestmark = pytest.mark.skipif(not _no_alembic_on_path(), reason="alembic in /usr/bin")


def _version(db: Path) -> str:
    with sqlite3.connect(db) as con:
        return con.execute("select version_num from alembic_version").fetchone()[0]


def test_the_head_read_in_process_is_the_one_alembic_prints():
    done = subprocess.run([sys.executable, "-I", "-m", "alembic", "--help"], capture_output=True)
    assert done.returncode == 0  # this interpreter's alembic runs without PATH
    from nbgrader.dbutil import _temp_alembic_ini

    with _temp_alembic_ini("sqlite:////tmp/unused.db") as ini:
        heads = subprocess.run(
            [sys.executable, "-m", "alembic", "-c", ini, "heads"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    assert heads.split()[0] == gradebook.alembic_head(), heads


def test_nbgrader_alone_needs_alembic_on_path_the_grader_does_not(tmp_path):
    bare = subprocess.run(
        [sys.executable, "-c", NEW_GRADEBOOK.format(db=tmp_path / "a.db")],
        env=BARE,
        capture_output=True,
        text=True,
    )
    assert bare.returncode != 0 and "'alembic'" in bare.stderr, bare.stderr[-500:]
    code = "from grading.gradebook import use_this_python; use_this_python(); "
    done = subprocess.run(
        [sys.executable, "-c", code + NEW_GRADEBOOK.format(db=tmp_path / "b.db")],
        env={**BARE, "PYTHONPATH": str(ROOT / "tools")},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert _version(tmp_path / "b.db") == gradebook.alembic_head()


@pytest.mark.skipif(bool(NO_SANDBOX), reason=f"bubblewrap {NO_SANDBOX}")
@pytest.mark.timeout(600)
def test_nbgrader_and_make_grade_run_without_the_venv_on_path(tmp_path):
    source = tmp_path / "assignments" / "tiny"
    source.mkdir(parents=True)
    answer = nbformat.v4.new_code_cell("### BEGIN SOLUTION\nx = 1\n### END SOLUTION")
    answer.metadata["nbgrader"] = {
        "grade": False,
        "solution": True,
        "locked": False,
        "grade_id": "answer",
        "schema_version": 3,
    }
    test = nbformat.v4.new_code_cell("assert x == 1")
    test.metadata["nbgrader"] = {
        "grade": True,
        "solution": False,
        "locked": True,
        "points": 1,
        "grade_id": "test",
        "schema_version": 3,
    }
    nb = nbformat.v4.new_notebook(cells=[answer, test])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    nbformat.write(nb, source / "tiny.ipynb")
    course = tmp_path / "course"
    make_student.build_course(course, source.parent)
    # a course whose gradebook is not made yet, made by nbgrader run as the course's
    # nbgrader_config.py sets it up, with the venv not activated
    (course / "gradebook.db").unlink()
    made = subprocess.run(
        [sys.executable, "-m", "nbgrader", "generate_assignment", "tiny", "--force"],
        cwd=course,
        env=BARE,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert made.returncode == 0, made.stderr[-3000:]
    assert _version(course / "gradebook.db") == gradebook.alembic_head()
    folder = course / "submitted" / "s1" / "tiny"
    folder.mkdir(parents=True)
    nb.cells[0].source = "x = 1"
    nbformat.write(nb, folder / "tiny.ipynb")
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "grade.py"), "tiny"] + ["--course", str(course), "--quiet"],
        env=BARE,
        capture_output=True,
        text=True,
        timeout=540,
    )
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-3000:])
    import csv

    with open(course / "grades.csv", newline="") as f:
        (row,) = list(csv.DictReader(f))
    assert (row["student_id"], row["score"], row["max_score"]) == ("s1", "1", "1"), row
