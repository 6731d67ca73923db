"""The student edition (tools/editions/make_student.py): solutions out, everything else still runs."""

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
from editions import (  # noqa: E402
    make_student,
    set_repository_url,
)

from aiayn_helpers.course.exercises import exercise_name  # noqa: E402

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
STUB = re.compile(r"^# (?P<name>Exercise \S+) \((?P<label>[^)]+)\): your answer\.", re.MULTILINE)


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


_EDITION: dict[str, tuple[Path, dict]] = {}  # the edition built this session (per xdist worker)


def built_edition(tmp_path_factory) -> tuple[Path, dict]:
    """``(folder, removed solutions)`` of the student edition, built once per test session
    (about a minute: the wheel, every notebook, nbgrader's release of the assignments);
    tests/test_student_lab.py opens it too. Tests that change files work on a copy."""
    if "built" not in _EDITION or not _EDITION["built"][0].is_dir():
        out = tmp_path_factory.mktemp("student") / "edition"
        removed = make_student.build(out, course=out.parent / "course")
        _EDITION["built"] = (out, removed)
    return _EDITION["built"]


@pytest.fixture(scope="module")
def edition(tmp_path_factory):
    return built_edition(tmp_path_factory)


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
        # no tag that lets an error pass: once answered, a failing answer stops the notebook
        assert not stub.metadata.get("tags"), "an answer cell carries no tags (raises-exception would hide errors)"
        assert not stub.outputs
        match = STUB.search(stub.source)
        assert max(len(line) for line in stub.source.splitlines()) <= 88, "the chapters' code fits 88 columns"
        assert match["name"] == exercise_name(match["label"]), "the answer cell names the exercise as the site does"
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
    # Colab and Binder open the published student branch (tests/test_editions.py opens each link's file)
    assert config["repository"]["branch"] == make_student.STUDENT_BRANCH == "student"
    assert config["launch_buttons"]["colab_url"] and config["launch_buttons"]["binderhub_url"]
    assert config["html"]["use_repository_button"] is False
    assert "instructor_guide" not in (out / "_toc.yml").read_text()
    assert not (out / "book" / "instructor_guide.md").exists()


def _edition_text(out: Path) -> dict[str, str]:
    """Every text a student gets: pages, notebooks (all cells), README, requirements, assignments."""
    files = [p for p in out.rglob("*") if p.is_file() and p.suffix in (".md", ".ipynb", ".txt", ".yml", ".py")]
    return {p.relative_to(out).as_posix(): p.read_text(encoding="utf-8") for p in files if "_build" not in p.parts}


def test_student_edition_has_no_path_to_the_solutions(edition):
    """The repository is named only where the package is installed at the release tag, and in the
    site's configuration of its launch buttons, which open the branch without solutions."""
    out, _ = edition
    texts = _edition_text(out)
    assert not (out / "book" / "autograder").exists(), "the assignments' sources (solutions, hidden tests)"
    url = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"]
    for name, text in texts.items():
        assert "git clone" not in text, f"{name} points to the repository"
        assert "BEGIN HIDDEN TESTS" not in text and "BEGIN SOLUTION" not in text, name
        if name == "_config.yml":
            continue
        if name.endswith(".ipynb"):  # the Colab cell: REPO = "URL" and git+{REPO}@vX.Y.Z
            nb = nbformat.reads(text, 4)
            text = "\n".join(c.source for c in nb.cells) + json.dumps([c.get("outputs", []) for c in nb.cells])
            text = re.sub(r'REPO = "' + re.escape(url) + r'"', "", text)
            text = text.replace("git+{REPO}@" + set_repository_url.release_tag(), "")
        assert "git+https" not in text and "git+{REPO}" not in text, f"{name} installs from the repository"
        assert url not in text, f"{name} names the repository"


def test_notebooks_folder_holds_the_chapters_only(edition):
    """The chapters and what they open beside them (figures, local pages); no test hook
    (conftest.py imports tools/, which students lack) and no lint configuration."""
    out, _ = edition
    beside = {p.name for p in (ROOT / "notebooks").iterdir() if p.suffix != ".ipynb" and not p.name.startswith(".")}
    beside -= set(make_student.NOT_FOR_STUDENTS)
    names = {p.name for p in (out / "notebooks").iterdir()}
    assert names == {p.name for p in NOTEBOOKS} | beside
    assert not {"conftest.py", "ruff.toml"} & names


def test_student_edition_mentions_no_material_it_lacks(edition):
    out, _ = edition
    for name, text in _edition_text(out).items():
        if name.endswith(".py"):
            continue
        flat = re.sub(r"\s+", " ", text)
        for phrase in ("learners' notes", "sets of notes", "One note ", "one of the notes", "instructor guide"):
            assert phrase not in flat, f"{name} mentions {phrase!r}, which students do not have"


def test_student_edition_stands_alone(edition):
    """README, requirements with the book's pins, the package's wheel, the student's own intro, the assignments."""
    out, _ = edition
    readme = (out / "README.md").read_text()
    for step in ("pip install -r requirements.txt", "\njupyter lab\n", "check", "download.pytorch.org/whl/cpu"):
        assert step in readme, f"the README does not say {step!r}"
    # `jupyter lab` in the edition's folder opens the chapters and the assignments (tests/test_student_lab.py
    # starts it so in Chromium); a folder argument would leave one of them out
    for text in (readme, (out / "book" / "intro.md").read_text()):
        assert "jupyter lab notebooks" not in text
    requirements = (out / "requirements.txt").read_text().splitlines()
    pins = {line.split("==")[0]: line for line in (ROOT / "requirements.txt").read_text().splitlines() if "==" in line}
    for line in requirements:
        if "==" in line and not line.startswith("#"):
            assert line == pins[line.split("==")[0]], f"{line} differs from the book's pin"
    (wheel,) = (out / "dist").glob("aiayn_helpers-*-py3-none-any.whl")
    assert f"dist/{wheel.name}" in requirements
    import zipfile

    names = zipfile.ZipFile(wheel).namelist()
    assert "aiayn_helpers/course/exercises.py" in names and not any(
        n.startswith(("notebooks/", "book/")) for n in names
    )
    intro = (out / "book" / "intro.md").read_text()
    assert "student edition" in intro and "drop-down" not in intro
    # the rocket icon it names is there: the site's Colab and Binder buttons (to the student branch)
    launch = yaml.safe_load((out / "_config.yml").read_text())["launch_buttons"]
    assert "rocket icon" in intro and "Colab" in intro and "Binder" in intro
    assert launch["colab_url"] and launch["binderhub_url"]
    for word in ("## Install", "## Run", "## Check your answers"):
        assert word in intro
    released = sorted(p.name for p in (out / "assignments").glob("*.ipynb"))
    sources = sorted(f"{p.name}.ipynb" for p in (ROOT / "book" / "autograder" / "source").iterdir() if p.is_dir())
    assert released == sources and len(released) >= 4, released


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
    assert not student.cells[1].metadata.get("tags"), "no raises-exception: errors in an answer must surface"
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


def test_answer_cell_comes_from_the_exercise_stub():
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        md(
            ":::{exercise-start}\n:label: ch03-ex1\n:::\nDo it.\n:::{exercise-end}\n:::\n"
            ":::{solution-start} ch03-ex1\n:::"
        ),
        code("by_hand = 42", metadata={"student_stub": "by_hand = ...  # the output"}),
        md(":::{solution-end}\n:::"),
        code('check("ch03-ex1", by_hand, 42)'),
    ]
    student, _ = make_student.studentize(nb)
    stub = student.cells[1].source
    assert stub.startswith("# Exercise 3.1 (ch03-ex1): your answer.") and "by_hand = ...  # the output" in stub
    assert student.cells[2].source == 'check("ch03-ex1", by_hand, 42)', "the check cell stays"


def test_student_text_rephrases_the_notes():
    assert (
        make_student.student_text("One of the learners' notes builds it.") == "One learner's implementation builds it."
    )
    assert "notes" not in make_student.student_text("Reading the five sets of notes; one of the notes; One note's x.")


@pytest.mark.timeout(900)
def test_student_notebook_runs_unanswered(edition):
    """The (cheapest) student notebook runs top to bottom unanswered: no cell fails, every check says so."""
    out, removed = edition
    if not removed:
        pytest.skip("no notebooks yet")
    with_checks = {
        name: labels
        for name, labels in removed.items()
        if any("exercise-check" in c.metadata.get("tags", []) for c in nbformat.read(out / "notebooks" / name, 4).cells)
    }
    name = _cheapest_notebook_with_stubs(with_checks or removed)
    path = out / "notebooks" / name
    nb = nbformat.read(path, as_version=4)
    os.environ.setdefault("PYTHONHASHSEED", "0")
    os.environ.setdefault("AIAYN_THREADS", "1")
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    text = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        errors = [o for o in cell.outputs if o.output_type == "error"]
        if "raises-exception" not in cell.metadata.get("tags", []):  # a common-mistake box fails on purpose
            assert not errors, f"{name}: a cell fails without the solutions:\n{cell.source}\n{errors}"
        text += [o.get("text", "") for o in cell.outputs if o.output_type == "stream"]
    stubs = [STUB.search(c.source)["label"] for c in nb.cells if c.cell_type == "code" and STUB.search(c.source)]
    for label in stubs:
        assert f"○ {exercise_name(label)}: not answered yet" in "".join(text), f"{label}: its check said nothing"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_check_cells_keep_their_code_not_the_teachers_verdict(edition, path):
    """A check cell follows every answer cell; its saved "right" (from the solutions) is not handed out."""
    out, _ = edition
    student = nbformat.read(out / "notebooks" / path.name, as_version=4)
    checks = [c for c in student.cells if "exercise-check" in c.metadata.get("tags", [])]
    for cell in checks:
        assert not cell.outputs and "check(" in cell.source
    for i, cell in enumerate(student.cells):
        if cell.id.startswith("stub-") and checks:
            nxt = next(c for c in student.cells[i + 1 :] if c.cell_type == "code")
            assert "exercise-check" in nxt.metadata.get("tags", []), f"{cell.id} is not followed by its check"
