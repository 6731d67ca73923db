"""A term's grading as an instructor runs it (issue #34): platform zips in, grades out.

A Moodle zip and a Canvas zip hold two students of one name, Unicode names
(Chinese, Cyrillic, Icelandic), a misnamed notebook, a late one and, for Moodle, a
resubmission round. Everything is collected (tools/collect.py), graded
(tools/grade.py) and exported (``grade.py export``) with a decisions file that
gives one student an extension and another a manual grade; the decisions must
survive collecting again, grading again and ``--force``, and the exports must carry
the platforms' ids in the platforms' columns. The fast tests below collect without
grading: every notebook in a zip lands in submitted/ or is named.
"""

from __future__ import annotations

import csv
import datetime as dt
import re
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
pytest.importorskip("nbgrader", reason="nbgrader is pinned in requirements.txt")
import collect  # noqa: E402
import grade  # noqa: E402
import grading_courses  # noqa: E402
from grading import export, roster  # noqa: E402

# generous: two terms of grading must pass on a busy 2-core machine (547 s at load 11)
pytestmark = pytest.mark.timeout(2400)

A = "assignment3"
SOURCE = ROOT / "book" / "autograder" / "source"
DUE = dt.datetime(2027, 3, 2, 9, 0)
CANVAS = {A: "Assignment 3 (4242)"}  # [canvas] of the deadlines file
DECISIONS = """
[[extension]]
assignment = "assignment3"
student = "{late}"
due = 2027-03-05T09:00:00Z
reason = "ill from 28 February to 4 March"

[[grade]]
assignment = "assignment3"
student = "{manual}"
adjust = 1.5
reason = "written explanation, rubric: 1.5 of 2"
"""


def _answers() -> dict[str, str]:
    nb = nbformat.read(SOURCE / A / f"{A}.ipynb", as_version=4)
    out = {}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            pattern = r"^[ \t]*### (BEGIN|END) SOLUTION\n?"
            out[meta["grade_id"]] = re.sub(pattern, "", cell.source, flags=re.M)
    return out


def _fill(released, wrong: bool = False) -> str:
    nb = nbformat.from_dict(released)
    answers = _answers()
    if wrong:  # the padding mask inverted: 2 points lost
        answers["padding_answer"] = answers["padding_answer"].replace("tokens != pad_id", "tokens == pad_id")
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in answers:
            cell.source = answers[gid]
    return nbformat.writes(nb)


def _zip(path: Path, entries: dict[str, tuple[str, dt.datetime]]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, (text, when) in entries.items():
            archive.writestr(zipfile.ZipInfo(name, date_time=when.timetuple()[:6]), text)
    return path


def _grades(course: Path) -> dict[str, dict]:
    with open(course / "grades.csv", newline="", encoding="utf-8") as f:
        return {r["student_id"]: r for r in csv.DictReader(f) if r["assignment"] == A}


def _scores(course: Path) -> dict[str, tuple[float, float, float]]:
    rows = _grades(course)
    return {s: tuple(float(r[k]) for k in ("raw_score", "late_submission_penalty", "score")) for s, r in rows.items()}


def _graded(course: Path) -> list[str]:
    """The students the last make grade graded, from nbgrader's log."""
    log = (course / grade.NOTES / A / "autograde.log").read_text()
    return sorted(set(re.findall(r"Autograding \S*?/([^/\s]+)/" + A + r"\b", log)))


MOODLE = "{name}_{id}_assignsubmission_file_/{file}"
ON_TIME = DUE - dt.timedelta(days=1)
LATE = DUE + dt.timedelta(days=2, hours=12)  # 3 started days late: 30% off


@pytest.fixture(scope="module")
def course_folder(tmp_path_factory):
    """A folder for the term's files, and ``course(name)``: a course named ``name`` in it with assignment 3 only
    (make student's nbgrader folder; generated once, copied for the Moodle, Canvas and release tests)."""
    tmp = tmp_path_factory.mktemp("term")

    def course(name: str) -> Path:
        assert grading_courses.course_of(tmp_path_factory, tmp / name, [A]) == [A]
        return tmp / name

    return tmp, course


@pytest.fixture(scope="module")
def moodle_term(course_folder, deadlines_file):
    tmp, make_course = course_folder
    course = make_course("moodle")
    released = nbformat.read(course / "release" / A / f"{A}.ipynb", as_version=4)
    right, wrong = _fill(released), _fill(released, wrong=True)
    blank = nbformat.writes(released)
    upload = {
        ("John Smith", 2001, f"{A}.ipynb"): (right, ON_TIME),
        ("John Smith", 2002, f"{A}.ipynb"): (blank, ON_TIME),
        ("Chloé Müller", 2003, "Assignment3 (1).ipynb"): (right, ON_TIME),
        ("李雷", 2004, f"{A}.ipynb"): (right, LATE),
        ("Иван Петров", 2005, f"{A}.ipynb"): (wrong, ON_TIME),
        ("Ólafur Þór", 2006, f"{A}.ipynb"): (right, ON_TIME),
    }
    entries = {MOODLE.format(name=n, id=i, file=f): v for (n, i, f), v in upload.items()}
    zip1 = _zip(tmp / "moodle1.zip", entries)
    deadlines = deadlines_file(tmp, {A: DUE}, CANVAS)
    choices = tmp / "decisions.toml"  # none yet
    flags = ["--course", str(course), "--quiet", f"--deadlines={deadlines}"]
    flags += [f"--decisions={choices}", "--cell-timeout=30"]
    flags += ["--unsandboxed"] if grade.sandbox_problem() else []
    out = {}
    assert collect.main([str(zip1), A, "--course", str(course)]) == 0
    assert grade.main([A, *flags]) == 0
    out["first"] = _scores(course)

    choices.write_text(DECISIONS.format(late=2004, manual=2002))
    assert grade.main([A, *flags]) == 0
    out["decided"], out["graded_for_decisions"] = _scores(course), _graded(course)

    # a resubmission round: the first zip again (as a platform's full download
    # would be) and Ivan's corrected notebook
    fixed = MOODLE.format(name="Иван Петров", id=2005, file=f"{A} (2).ipynb")
    zip2 = _zip(tmp / "moodle2.zip", {**entries, fixed: (right, DUE - dt.timedelta(hours=1))})
    assert collect.main([str(zip2), A, "--course", str(course)]) == 0
    assert grade.main([A, *flags]) == 0
    out["resubmitted"], out["graded_for_resubmission"] = _scores(course), _graded(course)

    assert grade.main([A, *flags, "--force", "--feedback"]) == 0
    out["forced"], out["graded_forced"] = _scores(course), _graded(course)
    out["forced_report"] = (course / grade.NOTES / A / "2003.txt").read_text(encoding="utf-8")
    done = export.export(course, None, choices, deadlines)
    out["export"] = done
    return course, out


def test_namesakes_unicode_names_and_every_notebook_are_graded(moodle_term):
    course, out = moodle_term
    first = out["first"]
    assert sorted(first) == ["2001", "2002", "2003", "2004", "2005", "2006"]
    assert first["2001"] == (10.0, 0.0, 10.0) and first["2002"] == (0.0, 0.0, 0.0)
    assert first["2003"][2] == 10.0 and first["2006"][2] == 10.0  # misnamed; Þ
    assert first["2004"] == (10.0, 3.0, 7.0)  # 2.5 days late
    assert first["2005"][2] == 8.0
    names = {s.id: s.name for s in roster.read_roster(course).values()}
    assert names["2001"] == names["2002"] == "John Smith"
    assert (names["2003"], names["2004"], names["2005"]) == (
        "Chloé Müller",
        "李雷",
        "Иван Петров",
    )


def test_an_extension_and_a_manual_grade_survive_collect_grade_and_force(moodle_term):
    _, out = moodle_term
    assert out["graded_for_decisions"] == ["2004"]  # only the extended one again
    for stage in ("decided", "resubmitted", "forced"):
        scores = out[stage]
        assert scores["2004"] == (10.0, 0.0, 10.0), stage  # the extension holds
        assert scores["2002"] == (0.0, 0.0, 1.5), stage  # the manual grade holds
        assert scores["2001"] == (10.0, 0.0, 10.0), stage
    assert out["graded_for_resubmission"] == ["2005"]
    assert out["resubmitted"]["2005"] == (10.0, 0.0, 10.0)
    assert len(out["graded_forced"]) == 6
    # --force keeps the record of the misnamed notebook renamed at the first grading
    assert f"'Assignment3 (1).ipynb' graded as {A}.ipynb" in out["forced_report"]


def test_grades_csv_says_why_a_grade_differs(moodle_term):
    course, _ = moodle_term
    rows = _grades(course)
    assert "written explanation" in rows["2002"]["reasons"]
    assert "extension to 2027-03-05 09:00" in rows["2004"]["reasons"]
    assert rows["2004"]["name"] == "李雷" and rows["2004"]["platform_id"] == "2004"
    for row in rows.values():  # rounded: no float noise
        assert re.fullmatch(r"\d+(\.\d{1,2})?", row["score"]), row["score"]


def test_the_moodle_exports_are_keyed_by_participant(moodle_term):
    course, out = moodle_term
    sheet = course / "exports" / f"{A}-moodle-grades.csv"
    with open(sheet, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert {"Identifier", "Grade", "Last modified (grade)"} <= set(rows[0])
    grades = {r["Identifier"]: (r["Full name"], r["Grade"]) for r in rows}
    assert grades["Participant 2001"] == ("John Smith", "10")
    assert grades["Participant 2002"] == ("John Smith", "1.5")
    assert grades["Participant 2004"] == ("李雷", "10")
    with zipfile.ZipFile(course / "exports" / f"{A}-moodle-feedback.zip") as archive:
        names = archive.namelist()
    assert len(names) == 6, names
    assert f"李雷_2004_assignfeedback_file_/{A}.html" in names
    for name in names:  # Moodle splits at '_': name, participant, plugin type, plugin
        parts = name.split("/")[0].split("_")
        assert parts[1].isdigit() and parts[2:4] == ["assignfeedback", "file"], name


@pytest.fixture(scope="module")
def canvas_term(course_folder, deadlines_file):
    tmp, make_course = course_folder
    course = make_course("canvas")
    released = nbformat.read(course / "release" / A / f"{A}.ipynb", as_version=4)
    right, blank = _fill(released), nbformat.writes(released)
    # as Canvas writes it (canvas-lms lib/content_zipper.rb, with rubyzip): every
    # entry stamped with the one moment the zip was built (rubyzip's Zip::Entry
    # default, DOSTime.now), here the day after the deadline; lateness only in the
    # LATE marker of the name
    built = DUE + dt.timedelta(days=1)
    entries = {
        f"smithjohn_3001_90001_{A}.ipynb": (right, built),
        f"smithjohn_3002_90002_{A}.ipynb": (blank, built),
        f"petrovivan_LATE_3003_90003_{A}-1.ipynb": (right, built),  # Canvas's rename
    }
    zip1 = _zip(tmp / "canvas.zip", entries)
    deadlines = deadlines_file(tmp, {A: DUE}, CANVAS)
    choices = tmp / "canvas-decisions.toml"
    choices.write_text(DECISIONS.format(late=3003, manual=3002))
    class_list = tmp / "class.csv"
    class_list.write_text("id,name,email\n3003,Иван Петров,ivan@example.edu\n")
    flags = ["--course", str(course), "--quiet", f"--deadlines={deadlines}"]
    flags += [f"--decisions={choices}", "--cell-timeout=30"]
    flags += ["--unsandboxed"] if grade.sandbox_problem() else []
    args = [str(zip1), A, "--course", str(course), "--roster", str(class_list)]
    assert collect.main(args) == 0
    assert grade.main([A, *flags]) == 0
    export.export(course, None, choices, deadlines)
    return course


def test_the_canvas_export_carries_canvas_ids_in_canvas_columns(canvas_term):
    course = canvas_term
    with open(course / "exports" / "canvas-grades.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    header = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
    assert rows[0] == header + ["Assignment 3 (4242)"]
    assert rows[1][0] == "Points Possible" and rows[1][5] == "10"
    grades = {r[1]: (r[0], r[5]) for r in rows[2:]}
    assert grades == {
        "3001": ("smithjohn", "10"),
        "3002": ("smithjohn", "1.5"),
        "3003": ("Иван Петров", "10"),  # the class list's name; the extension holds
    }
    assert roster.read_roster(course)["3003"].email == "ivan@example.edu"


def test_the_released_assignment_ends_with_am_i_done(course_folder, tmp_path):
    """The last cell a student runs: every visible test passes for a right answer;
    a blank notebook is told which functions are not written yet (issue #34)."""
    from nbclient import NotebookClient

    course = course_folder[1]("release")
    released = nbformat.read(course / "release" / A / f"{A}.ipynb", as_version=4)
    assert released.cells[-1].id == "am-i-done"
    texts = {}
    for kind, text in (("right", _fill(released)), ("blank", nbformat.writes(released))):
        nb = nbformat.reads(text, as_version=4)
        resources = {"metadata": {"path": str(tmp_path)}}
        NotebookClient(nb, timeout=300, allow_errors=True, resources=resources).execute()
        outputs = nb.cells[-1].outputs
        texts[kind] = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    right = re.search(r"Visible tests: (\d+) of (\d+) passed", texts["right"])
    assert right and right[1] == right[2] and int(right[1]) >= 3, texts["right"]
    assert "FAILED" not in texts["right"] and "hidden tests" in texts["right"]
    assert "How to hand in: Save assignment3.ipynb" in texts["right"]
    assert re.search(r"Visible tests: 0 of \d+ passed", texts["blank"]), texts["blank"]
    assert "not written yet" in texts["blank"]


# Fast: collecting, the decisions file, the export formats and the guide, no grading.


def _fake_course(tmp_path: Path, assignment: str = "assignment1") -> Path:
    course = tmp_path / "course"
    (course / "release" / assignment).mkdir(parents=True)
    nb = nbformat.writes(nbformat.v4.new_notebook())
    (course / "release" / assignment / f"{assignment}.ipynb").write_text(nb)
    return course


def test_collect_takes_any_name_and_names_every_notebook(tmp_path, capsys):
    course = _fake_course(tmp_path)
    nb = nbformat.writes(nbformat.v4.new_notebook())
    moodle = "{}_{}_assignsubmission_file_/{}"
    entries = {
        moodle.format("John Smith", 2001, "assignment1.ipynb"): nb,
        moodle.format("John Smith", 2001, ".ipynb_checkpoints/a-checkpoint.ipynb"): nb,
        moodle.format("John Smith", 2002, "Assignment1 (1).ipynb"): nb,
        moodle.format("李雷", 2004, "assignment1.ipynb"): nb,
        moodle.format("Иван Петров", 2005, "assignment1.ipynb"): nb,
        moodle.format("Pat Doe", 2007, "answers.pdf"): "%PDF",
        "loose.ipynb": nb,
    }
    path = _zip(tmp_path / "m.zip", {k: (v, ON_TIME) for k, v in entries.items()})
    assert collect.main([str(path), "assignment1", "--course", str(course)]) == 1
    out = capsys.readouterr().out
    folders = sorted(p.parent.name for p in (course / "submitted").glob("*/assignment1"))
    assert folders == ["2001", "2002", "2004", "2005"]
    assert "2004 (李雷): submission" in out and "2005 (Иван Петров): submission" in out
    assert "SKIPPED loose.ipynb: no student recognized" in out
    assert "IGNORED John Smith_2001_assignsubmission_file_/.ipynb_checkpoints" in out
    assert "NO NOTEBOOK from 2007 (Pat Doe): the upload holds answers.pdf" in out
    # every notebook of the zip is in submitted/ or named in the output
    for entry in (e for e in entries if e.endswith(".ipynb")):
        name = entry.rsplit("/", 1)[-1]
        landed = list((course / "submitted").glob(f"*/assignment1/{name}"))
        assert landed or entry in out, entry


def test_a_zip_of_folders_gets_safe_ids_and_no_two_alike(tmp_path, capsys):
    course = _fake_course(tmp_path)
    nb = nbformat.writes(nbformat.v4.new_notebook())
    names = ["李雷", "Иван Петров", "Ólafur Þór", "olafur-thor", "jdoe"]
    entries = {f"export/{n}/assignment1.ipynb": (nb, ON_TIME) for n in names}
    path = _zip(tmp_path / "f.zip", entries)
    assert collect.main([str(path), "assignment1", "--course", str(course)]) == 0
    students = roster.read_roster(course)
    assert sorted(s.name for s in students.values()) == sorted(names)
    assert len(students) == 5 and all(roster.SAFE_ID.fullmatch(s) for s in students)
    by_name = {s.name: s.id for s in students.values()}
    assert by_name["Иван Петров"] == "ivan-petrov" and by_name["jdoe"] == "jdoe"
    assert by_name["李雷"].startswith("s-")
    assert {by_name["Ólafur Þór"], by_name["olafur-thor"]} >= {"olafur-thor"}
    assert by_name["Ólafur Þór"] != by_name["olafur-thor"]


def test_collect_never_replaces_a_newer_submission(tmp_path, capsys):
    course = _fake_course(tmp_path)
    nb = nbformat.writes(nbformat.v4.new_notebook())
    entry = MOODLE.format(name="John Smith", id=2001, file="assignment1.ipynb")
    new = _zip(tmp_path / "new.zip", {entry: (nb, ON_TIME)})
    old = _zip(tmp_path / "old.zip", {entry: (nb, ON_TIME - dt.timedelta(days=1))})
    assert collect.main([str(new), "assignment1", "--course", str(course)]) == 0
    assert collect.main([str(old), "assignment1", "--course", str(course)]) == 0
    assert "2001 (John Smith): kept the submission of" in capsys.readouterr().out
    stamp = (course / "submitted" / "2001" / "assignment1" / "timestamp.txt").read_text()
    assert stamp.startswith(f"{ON_TIME:%Y-%m-%d %H:%M:%S}")


def test_a_class_list_needs_an_id_column(tmp_path):
    path = tmp_path / "class.csv"
    path.write_text("name,email\nA,a@x\n")
    with pytest.raises(ValueError, match="'id' column"):
        roster.read_class_list(path)


def test_the_decisions_file_says_what_is_wrong(tmp_path):
    from grading import decisions

    path = tmp_path / "decisions.toml"
    bad = {
        '[[grade]]\nassignment = "a"\nstudent = "1"\nscore = 3\nadjust = 1\nreason = "x"': "one of them",
        '[[grade]]\nassignment = "a"\nstudent = "1"\nscore = 3': "missing \\['reason'\\]",
        '[[extension]]\nassignment = "a"\nstudent = "../x"\ndue = 2027-01-01\nreason = "x"': "student id",
        '[[extension]]\nassignment = "a"\nstudent = "1"\ndue = "soon"\nreason = "x"': "TOML date-time",
        "[points]\nproject = -1": "positive number",
        "[extensions]\n": "expected \\[\\[extension\\]\\]",
    }
    for text, message in bad.items():
        path.write_text(text)
        with pytest.raises(ValueError, match=message):
            decisions.read_decisions(path)
    book = decisions.read_decisions(decisions.EXAMPLE)  # the book's: examples only
    assert book.extensions == [] and book.grades == []


def test_scores_are_rounded_for_the_platforms():
    assert export.number(2.4000000000000004) == "2.4"
    assert export.number(10.0) == "10" and export.number(7.125) == "7.12"
    assert export.number(None) == ""


def test_the_guide_names_the_stages_in_order_and_the_rubric_adds_up():
    guide = (ROOT / "book" / "instructor_guide.md").read_text(encoding="utf-8")
    section = guide.split("### A term of grading, stage by stage", 1)[1].split("\n### ", 1)[0]
    modules = re.findall(r"`(\w+)\.py`", section)
    order = ["handin", "collect", "roster", "folders", "repair", "sandbox", "bwrap", "limits", "verdict"]
    order += ["autograde", "cli", "decisions", "export", "feedback"]
    assert modules == order, modules
    for name in order:
        assert (ROOT / "tools" / "grading" / f"{name}.py").is_file(), name
    rubric = re.findall(r"^\| [^|]+ \| (\d+) \|", guide.split("**The project**", 1)[1], re.M)
    assert sum(map(int, rubric)) == 20 and "project = 20" in guide
    assert "project = 20" in (ROOT / "book" / "autograder" / "decisions.example.toml").read_text()
