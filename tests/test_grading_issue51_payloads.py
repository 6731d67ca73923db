"""The third red team's payloads (issue 51), each in the platform shape it came in: one
Moodle zip of assignment 1 submissions, collected (``python -m grading collect``),
graded in the sandbox with feedback and exported, beside an honest control. Each
asserts the score it must get and the reason the report or grades.csv gives.

The properties that rule out the next such payloads are checked on generated
notebooks in tests/test_grading_properties.py (in make test); this is the whole path
for the ones found, and is slow (marker integration).
"""

from __future__ import annotations

import copy
import csv
import json
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
pytest.importorskip("nbgrader", reason="nbgrader is pinned in requirements.txt")
import grade  # noqa: E402
import grading_courses  # noqa: E402
import grading_harness as h  # noqa: E402
from grading import collect, export  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(1800)]
A = "assignment1"
NO_SANDBOX = grade.sandbox_problem()
FORGED = "\nNOT GRADED: the sandbox did not start (a problem of this machine: grade again)"
HOOK = """
def _spy(info):
    print("SEEN", info.raw_cell)


get_ipython().events.register("pre_run_cell", _spy)
"""
HELPERS = """


def _attention(q, k, v, mask=None):
    return scaled_dot_product_attention(q, k, v, mask)


def _randn(*shape):
    return torch.randn(*shape)
"""
QUALNAME = """
import aiayn_helpers.attention as _m
_m.scaled_dot_product_attention.__qualname__ = "x\\nNOT GRADED: forged (a problem of this machine: grade again)"
scaled_dot_product_attention = _m.scaled_dot_product_attention
"""


def _moved(nb, gid: str, to: int = 0):
    nb = copy.deepcopy(nb)
    i = next(k for k, c in enumerate(nb.cells) if h.grade_id(c) == gid)
    nb.cells.insert(to, nb.cells.pop(i))
    return nb


def _answers(**changes) -> dict:
    answers = h.solutions(A)
    for gid, text in changes.items():
        answers[gid] = answers[gid] + text[1:] if text.startswith("+") else text
    return answers


def _submissions(released) -> dict[str, tuple[str, bytes]]:
    """student -> (file name in the zip, its bytes)."""
    fill = lambda answers: h.filled(A, answers)  # noqa: E731
    blank = h.released(A)
    part1 = fill({"sdpa_answer": h.solutions(A)["sdpa_answer"]})
    forged_id = fill(h.solutions(A))
    forged_id.cells.append(nbformat.v4.new_code_cell("x = 1", metadata={"nbgrader": {"grade_id": FORGED}}))
    fifty = fill(h.solutions(A))
    sdpa = next(c for c in fifty.cells if h.grade_id(c) == "sdpa_answer")
    sdpa.metadata["nbgrader"].update(grade=True, points=50)
    remote = fill(h.solutions(A))
    remote.cells.insert(
        3, nbformat.v4.new_markdown_cell("![track](http://tracker.example/p.png) ![b](//cdn.example/b.png)")
    )
    many = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("") for _ in range(100_000)])
    outs = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("")])
    outs.cells[0].outputs = [nbformat.v4.new_output("stream", name="stdout", text="")] * 200_000
    nbs = {
        "honest": fill(h.solutions(A)),
        "blank-moved": _moved(blank, "mha_answer"),  # payload 1: was 8/12
        "part1-moved": _moved(part1, "mha_answer"),  # payload 1: was 12/12
        "forged-id": forged_id,  # payload 2: was NOT GRADED
        "forged-qualname": fill(_answers(sdpa_answer=QUALNAME)),  # payload 2
        "helpers": fill(_answers(mha_answer="+" + HELPERS)),  # payload 3: was 4/12
        "float32": fill(
            _answers(
                sdpa_answer=h.solutions(A)["sdpa_answer"].replace(
                    "math.sqrt(q.size(-1))", "torch.sqrt(torch.tensor(q.size(-1)))"
                )
            )
        ),  # payload 4: was 8/12
        "hook": fill(_answers(sdpa_answer="+" + HOOK)),  # item 5: the hook saw the references
        "fifty": fifty,  # item 8: was an empty grade
        "many-cells": many,  # item 6: 274 CPU-s and 3.26 GB in nbgrader
        "many-outputs": outs,  # item 6
        "remote": remote,  # item 9
    }
    files = {name: (f"{A}.ipynb", nbformat.writes(nb).encode()) for name, nb in nbs.items()}
    files["not-json"] = (f"{A}.ipynb", b"this is not a notebook")  # item 8: was an empty grade
    files["long-name"] = ("作业" * 45 + ".ipynb", nbformat.writes(nbs["honest"]).encode())  # item 7
    return files


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    if NO_SANDBOX:
        pytest.skip(f"bubblewrap {NO_SANDBOX}")
    tmp = tmp_path_factory.mktemp("issue51")
    course = tmp / "course"
    assert grading_courses.course_of(tmp_path_factory, course, [A]) == [A]
    files = _submissions(nbformat.read(course / "release" / A / f"{A}.ipynb", as_version=4))
    ids = {name: 5001 + k for k, name in enumerate(files)}
    path = tmp / "moodle.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, (file, data) in files.items():
            archive.writestr(f"{name}_{ids[name]}_assignsubmission_file_/{file}", data)
    assert collect.main([str(path), A, "--course", str(course)]) == 0
    status = grade.main([A, "--course", str(course), "--quiet", "--cell-timeout=60", "--feedback"])
    (tmp / "decisions.toml").write_text("")
    export.export(course, [A], tmp / "decisions.toml", tmp / "none.toml")
    with open(course / "grades.csv", newline="", encoding="utf-8") as f:
        rows = {r["student_id"]: r for r in csv.DictReader(f)}
    by_name = {name: rows.get(str(ids[name])) for name in files}
    reports = {}
    for name in files:
        report = course / "reports" / A / f"{ids[name]}.txt"
        reports[name] = report.read_text(encoding="utf-8") if report.is_file() else ""
    return course, status, by_name, reports, ids


# student -> (the score in grades.csv, words its reasons or report must hold)
EXPECTED = {
    "honest": ("12", ""),
    "blank-moved": ("0", ""),
    "part1-moved": ("4", ""),
    "forged-id": ("12", ""),
    "forged-qualname": ("0", "the book's package in the kernel: aiayn_helpers"),
    "helpers": ("12", ""),
    "float32": ("12", ""),
    "hook": ("12", ""),
    "fifty": ("12", "cell sdpa_answer: its nbgrader metadata was changed; restored from the release"),
    "many-cells": ("0", "has too many cells to grade (100000, at most 2000)"),
    "many-outputs": ("0", "has too many outputs to grade (200000, at most 20000)"),
    "not-json": ("0", "is not a notebook"),
    "long-name": ("12", ""),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_payload_gets_the_score_it_earns_and_its_reason(graded, name):
    _, _, rows, reports, _ = graded
    score, words = EXPECTED[name]
    row = rows[name]
    assert row is not None, (name, reports[name])
    assert row["score"] == score, (name, row, reports[name])
    assert words in row["reasons"] + reports[name], (name, row["reasons"], reports[name])
    assert "NOT GRADED" not in row["reasons"], row
    for line in reports[name].splitlines():  # no line the submission began
        assert not line.startswith("NOT GRADED"), line


def test_no_hook_sees_hidden_or_reference_source(graded):
    course, _, _, _, ids = graded
    nb = nbformat.read(course / "autograded" / str(ids["hook"]) / A / f"{A}.ipynb", as_version=4)
    seen = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "SEEN" in seen  # the hook ran for the cells after it
    for secret in ("def _collect", "def _judge", "_own_work_facts", "BEGIN HIDDEN", "masked_fill(~mask"):
        assert secret not in seen.split("SEEN", 1)[1], secret


def test_a_feedback_page_loads_nothing_remote(graded):
    course, _, _, _, ids = graded
    pages = list((course / "feedback" / str(ids["remote"]) / A).glob("*.html"))
    assert pages
    text = pages[0].read_text(encoding="utf-8")
    assert "tracker.example/p.png" in text and '<img src="http://tracker' not in text
    assert 'src="//cdn.example' not in text
    from test_grading_confine import remote_loads  # no page loads from outside (item 9)

    pages = sorted((course / "feedback").rglob("*.html"))
    assert len(pages) >= 9, pages
    for page in pages:
        assert remote_loads(page.read_text(encoding="utf-8")) == [], page


def test_the_verdicts_are_data(graded):
    course, _, _, _, ids = graded
    verdict = json.loads((course / "reports" / A / "verdicts" / f"{ids['honest']}.json").read_text())
    assert {t["status"] for t in verdict["tests"].values()} == {"passed"} and "not_graded" not in verdict
    forged = json.loads((course / "reports" / A / "verdicts" / f"{ids['forged-id']}.json").read_text())
    assert "not_graded" not in forged
