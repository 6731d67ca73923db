"""Grading on every core scores what grading one sandbox at a time scores.

A mixed class of two (tools/bench/bench_grading.py: a right answer to every part, and Part 1
raising, Part 2 right: 12 and 8) is graded by `make grade` with ``--workers 1`` and,
from a copy of the same course, with ``--workers 2`` (two nbgrader processes sharing
one gradebook, one student each); every score in grades.csv must be the same. (The
wrong and blank kinds score in the other grading tests; two students are enough to
give each worker one.) ``choose_workers`` is checked on its own: one
per core by default, fewer when memory would not hold that many sandboxes.
"""

from __future__ import annotations

import csv
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
pytest.importorskip("nbgrader", reason="nbgrader is pinned in requirements.txt")
import grade  # noqa: E402
import grading_courses  # noqa: E402
from bench import bench_grading  # noqa: E402
from grading import cli  # noqa: E402

A = "assignment1"


def _scores(course: Path) -> dict[str, str]:
    with open(course / "grades.csv", newline="", encoding="utf-8") as f:
        return {r["student_id"]: r["score"] for r in csv.DictReader(f)}


@pytest.mark.timeout(1800)
def test_two_workers_score_what_one_worker_scores(tmp_path_factory, tmp_path, capsys):
    serial = tmp_path / "serial"
    assert grading_courses.course_of(tmp_path_factory, serial, [A]) == [A]
    ids = bench_grading.hand_in(serial, A, 1, ("right", "raises"))
    parallel = tmp_path / "parallel"
    shutil.copytree(serial, parallel, symlinks=True)
    flags = ["--cell-timeout=60"] + (["--unsandboxed"] if grade.sandbox_problem() else [])
    assert grade.main([A, "--course", str(serial), "--workers=1", *flags]) == 0
    capsys.readouterr()
    assert grade.main([A, "--course", str(parallel), "--workers=2", *flags]) == 0
    err = capsys.readouterr().err
    one, two = _scores(serial), _scores(parallel)
    assert sorted(one) == sorted(ids) and one == two, (one, two)
    assert one["right-000"] == "12" and one["raises-000"] == "8", one
    # progress while grading, one line a submission, and no nbgrader INFO line
    assert "grading 2 submission(s), 2 at a time" in err
    assert err.count("/2 ") == 2 and "s left)" in err
    assert "[AutogradeApp | INFO]" not in err and "INFO" not in err


def test_workers_default_to_the_cores_and_fit_in_memory(monkeypatch):
    monkeypatch.setattr(cli.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3, 4, 5, 6, 7})
    monkeypatch.setattr(cli, "_available_memory", lambda: 64 << 30)
    assert cli.choose_workers(0, 100, 4 << 30) == (8, "")
    assert cli.choose_workers(0, 3, 4 << 30) == (3, "")  # no more than submissions
    assert cli.choose_workers(2, 100, 4 << 30) == (2, "")
    monkeypatch.setattr(cli, "_available_memory", lambda: 10 << 30)
    workers, said = cli.choose_workers(0, 100, 4 << 30)
    assert workers == 2 and said.startswith("workers: 2 sandbox(es) at once, not 8")
    assert "4096 MiB" in said and "10240 MiB is available" in said
