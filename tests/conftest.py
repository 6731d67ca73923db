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


@pytest.fixture
def one_thread():
    """One PyTorch thread for the test, whatever AIAYN_THREADS says, then the old count back:
    the tiny models of the decoding tests run fastest on one thread and suffer least on a
    busy machine (`pytestmark = pytest.mark.usefixtures("one_thread")` in those files)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def f64(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, dtype=torch.float64)


# The late policy of the grading tests' deadlines files (tools/grading/decisions.py).
LATE_POLICY = {"per_day": 0.1, "max_days": 7, "grace_minutes": 15}


@pytest.fixture(scope="session")
def deadlines_file():
    """Writes a deadlines file for a grading test: ``deadlines_file(folder, due,
    canvas=None)``, ``due`` {assignment: naive UTC datetime}, ``canvas`` {assignment:
    Canvas's column header}; returns ``folder/deadlines.toml``. Its late policy is
    LATE_POLICY: 10% of the score a started day, 0 after 7 days, 15 minutes' grace."""

    def write(folder, due, canvas=None):
        lines = ["[late]"] + [f"{key} = {value}" for key, value in LATE_POLICY.items()]
        lines += ["", "[due]"] + [f"{a} = {d:%Y-%m-%dT%H:%M:%S}Z" for a, d in due.items()]
        if canvas:
            lines += ["", "[canvas]"] + [f'{a} = "{text}"' for a, text in canvas.items()]
        path = folder / "deadlines.toml"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path

    return write


# Test files that execute notebooks, run nbgrader or start subprocesses that train: `make
# test-quick` leaves them out (marker `slow`); `make test` runs everything.
SLOW_FILES = {
    "test_grading.py",
    "test_grading_budget.py",
    "test_grading_gradebook.py",
    "test_grading_hostile.py",
    "test_grading_hostile_two.py",
    "test_grading_moodle_term.py",
    "test_grading_ordinary_user.py",
    "test_grading_parallel.py",
    "test_grading_term.py",
    "test_memory_budget.py",
    "test_student.py",
    "test_exercises.py",
    "test_exercises_leaks.py",
    "test_exercises_ch00_01.py",
    "test_exercises_ch02_03.py",
    "test_exercises_ch04_06_a.py",
    "test_exercises_ch07_09.py",
    "test_exercises_ch08_10.py",
}
SLOW_TESTS = {
    "test_tiny_trained_copy_model_decodes_exactly",  # trains a model for 15 s
    "test_export_tool_round_trip",  # two subprocesses
    "test_console_script_translates_standard_input",  # a subprocess that loads the model
    # tests/test_assignments*.py: those that grade a class with nbgrader (about 75 s each file)
    "test_the_solution_scores_full_marks",
    "test_a_bug_loses_the_points_of_its_function_only_and_is_named",
    "test_every_submission_gets_the_grade_it_earned",
    "test_a_resubmission_is_graded_again_and_the_rest_are_kept",
    "test_the_instructor_is_told_what_grading_did",
    "test_released_feedback_contains_no_line_of_any_hidden_test",
    "test_released_feedback_shows_no_line_of_the_hidden_tests",
}


def pytest_collection_modifyitems(config, items):
    for item in items:  # (the notebooks' cells, collected by nbval, have no originalname)
        if item.path.name in SLOW_FILES or getattr(item, "originalname", None) in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)
        # The grading tool's own tests (collecting, sandboxing, exporting, hostile
        # submissions): its code does no arithmetic that PyTorch's CPU kernels could change,
        # so `make test-portable` leaves them to `make test` (marker `grader`). The
        # assignments' hidden tests on the reference answers (tests/test_assignments*.py)
        # stay in both.
        if item.path.name.startswith("test_grading"):
            item.add_marker(pytest.mark.grader)
        # The chapters and the student edition opened in JupyterLab in a browser, and the
        # assignments' Run All path: what they check (images, links, the tab, that Run All
        # reaches "Am I done?" and names a slip) is rendering and flow, not arithmetic the
        # kernels change (the hidden tests on the reference answers, test_assignments.py,
        # stay in both), so `make test-portable` leaves them to `make test` (marker lab).
        if item.path.name in ("test_jupyterlab.py", "test_student_lab.py", "test_assignments_run_all.py"):
            item.add_marker(pytest.mark.lab)
        # Whole runs of what a user starts: a class graded in the sandbox (the slow grading
        # files and the assignments' submissions), the chapters and the student edition in
        # JupyterLab. `make test-integration` runs them (CI: after `make test`), so that
        # `make test` keeps its 15 minutes on 2 cores (marker integration).
        slow = item.get_closest_marker("slow") is not None
        if item.get_closest_marker("lab") or (
            slow and (item.get_closest_marker("grader") or item.path.name in INTEGRATION_FILES)
        ):
            item.add_marker(pytest.mark.integration)
        # pages, slides, editions and the browser translator rendered in Chromium or built
        # by nbgrader: no PyTorch arithmetic, so `make test-portable` leaves them to `make
        # test` (marker rendering)
        if item.path.name in RENDERING_FILES:
            item.add_marker(pytest.mark.rendering)
        # every chapter's diagrams at two widths in two colour modes: 48 page loads
        if getattr(item, "originalname", None) in INTEGRATION_TESTS:
            item.add_marker(pytest.mark.integration)
    # The longest files and notebooks first: pytest-xdist (--dist loadfile) hands out files
    # in collection order, so a long one collected last keeps one worker busy while the
    # other has finished (a stable sort: a notebook's cells keep their order).
    items.sort(key=lambda item: HEAVY_FIRST.get(item.path.name, len(HEAVY_FIRST)))


# graded in the sandbox, but not named test_grading*
INTEGRATION_FILES = {"test_assignments_submissions.py", "test_assignments.py"}
INTEGRATION_TESTS = {"test_diagrams_fit_a_phone_and_read_in_dark_mode"}
RENDERING_FILES = {"test_slides.py", "test_browser.py", "test_student.py", "test_editions.py"}
# the longest first (seconds on 2 cores, measured with --durations): the rest keep their order
HEAVY_FIRST = {
    name: rank
    for rank, name in enumerate(
        [
            "07_full_model.ipynb",
            "08_using_the_model.ipynb",
            "test_grading.py",
            "test_grading_hostile_two.py",
            "test_jupyterlab.py",
            "10_after_the_paper.ipynb",
            "test_exercises_ch08_10.py",
            "test_exercises_ch07_09.py",
            "test_exercises_ch00_01.py",
            "test_exercises_ch02_03.py",
            "test_exercises_ch04_06_a.py",
            "test_exercises.py",
            "test_grading_term.py",
            "test_grading_moodle_term.py",
            "test_student_lab.py",
            "test_assignments_run_all.py",
            "test_assignments_submissions.py",
            "09_what_the_paper_measured.ipynb",
            "test_student.py",
            "test_editions.py",
            "test_site.py",
            "test_slides.py",
            "test_browser_export.py",
            "test_training.py",
        ]
    )
}
