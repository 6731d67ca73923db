"""The student edition (tools/make_student.py): solutions out, everything else still runs."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import nbformat
import pytest
import yaml
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import make_student  # noqa: E402

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
STUB = re.compile(r'raise NotImplementedError\("Exercise (?P<label>[^:"]+): your code here"\)')


def solution_code(nb) -> list[str]:
    """Sources of the code cells between solution-start and solution-end (read independently of the tool)."""
    inside, found = False, []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for m in re.finditer(r"\{solution-(start|end)\}", cell.source):
                inside = m[1] == "start"
        elif inside and cell.source.strip():
            found.append(cell.source.strip())
    return found


@pytest.fixture(scope="module")
def edition(tmp_path_factory):
    out = tmp_path_factory.mktemp("student") / "edition"
    removed = make_student.build(out)
    return out, removed


def test_every_notebook_is_in_the_edition(edition):
    out, removed = edition
    assert sorted(removed) == [p.name for p in NOTEBOOKS]
    assert (out / "_config.yml").exists() and (out / "_toc.yml").exists() and (out / "book" / "intro.md").exists()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_solution_remains(edition, path):
    out, removed = edition
    original = nbformat.read(path, as_version=4)
    student = nbformat.read(out / "notebooks" / path.name, as_version=4)
    nbformat.validate(student)
    student_code = [c.source for c in student.cells if c.cell_type == "code"]
    for source in solution_code(original):
        assert not any(source in s for s in student_code), f"solution code left in the student edition:\n{source}"
    markdown = "\n".join(c.source for c in student.cells if c.cell_type == "markdown")
    assert not re.search(r"\{solution(-start|-end)?\}", markdown), "a solution directive is left"

    stubs = [c for c in student.cells if c.cell_type == "code" and STUB.search(c.source)]
    for stub in stubs:
        assert "raises-exception" in stub.metadata.get("tags", []), "a stub must be tagged raises-exception"
        assert not stub.outputs
    stub_labels = [STUB.search(c.source)["label"] for c in stubs]
    assert len(set(stub_labels)) == len(stub_labels), "one stub per exercise"
    assert set(stub_labels) <= set(removed[path.name])
    if solution_code(original):
        assert stubs, "solutions with code must leave a stub for the student"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_everything_else_is_kept(edition, path):
    out, _ = edition
    original = nbformat.read(path, as_version=4)
    student = nbformat.read(out / "notebooks" / path.name, as_version=4)
    solutions = set(solution_code(original))
    kept = [c.source for c in original.cells if c.cell_type == "code" and c.source.strip() not in solutions]
    assert [c.source for c in student.cells if c.cell_type == "code" and not STUB.search(c.source)] == kept
    exercises = re.findall(r":label:\s*(ch\w+-ex\w+)", "\n".join(c.source for c in original.cells))
    student_md = "\n".join(c.source for c in student.cells if c.cell_type == "markdown")
    for label in exercises:
        assert f":label: {label}" in student_md, f"exercise {label} lost its statement"


def test_student_site_config(edition):
    out, _ = edition
    config = yaml.safe_load((out / "_config.yml").read_text())
    assert config["sphinx"]["config"]["hide_solutions"] is True
    assert not config["launch_buttons"]["colab_url"], "Colab would open the notebooks with solutions"
    assert "instructor_guide" not in (out / "_toc.yml").read_text()
    assert not (out / "book" / "instructor_guide.md").exists()


def test_studentize_directive_variants():
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        md(":::{exercise-start}\n:label: ch99-ex1\n:::\nDo it.\n:::{exercise-end}\n:::\n:::{solution-start}\n:::"),
        code("answer = 42"),
        md("Because 42."),
        code("print(answer)"),
        md(":::{solution-end}\n:::\nAfter the solution."),
        md("```{exercise}\n:label: ch99-ex2\nThink.\n```\n\n````{solution} ch99-ex2\n:class: dropdown\nThought.\n````"),
        code("kept = True"),
    ]
    student, labels = make_student.studentize(nb)
    assert labels == ["ch99-ex1", "ch99-ex2"]
    sources = [c.source for c in student.cells]
    assert sources[0].endswith(":::{exercise-end}\n:::") and "solution" not in sources[0]
    assert sources[1] == make_student.stub_source("ch99-ex1")
    assert sources[2] == "After the solution."
    assert "Thought" not in sources[3] and "Think." in sources[3]
    assert sources[4] == "kept = True" and len(sources) == 5
    nbformat.validate(student)


def test_student_toc_drops_the_instructor_pages():
    toc = {
        "root": "book/intro",
        "parts": [
            {
                "caption": "Chapters",
                "chapters": [{"file": "notebooks/00_x", "sections": [{"file": "book/instructor_guide"}]}],
            },
            {"caption": "For instructors", "chapters": [{"file": "book/instructor_guide"}]},
        ],
    }
    assert make_student.student_toc(toc) == {
        "root": "book/intro",
        "parts": [{"caption": "Chapters", "chapters": [{"file": "notebooks/00_x"}]}],
    }


def test_refuses_to_overwrite_other_folders(tmp_path):
    (tmp_path / "precious.txt").write_text("keep me")
    with pytest.raises(ValueError, match="not a student edition"):
        make_student.build(tmp_path)
    with pytest.raises(ValueError, match="over the sources"):
        make_student.build(ROOT)


def _cheapest_notebook_with_stubs(removed) -> str:
    times_file = ROOT / "book" / "notebook_times.json"
    times = json.loads(times_file.read_text()) if times_file.exists() else {}
    candidates = [name for name, labels in removed.items() if labels] or list(removed)
    return min(candidates, key=lambda n: (times.get(f"notebooks/{n}", {}).get("seconds", float("inf")), n))


@pytest.mark.timeout(900)
def test_student_notebook_runs_up_to_the_stubs(edition):
    """Every cell of the (cheapest) student notebook runs; only the stubs raise, as tagged."""
    out, removed = edition
    if not removed:
        pytest.skip("no notebooks yet")
    name = _cheapest_notebook_with_stubs(removed)
    path = out / "notebooks" / name
    nb = nbformat.read(path, as_version=4)
    os.environ.setdefault("PYTHONHASHSEED", "0")
    os.environ.setdefault("AIAYN_THREADS", "2")
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        errors = [o for o in cell.outputs if o.output_type == "error"]
        if STUB.search(cell.source):
            assert errors and errors[0].ename == "NotImplementedError", f"{name}: the stub did not raise"
        else:
            assert not errors, f"{name}: a non-exercise cell fails without the solutions:\n{cell.source}\n{errors}"
