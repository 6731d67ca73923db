"""The platforms' own data, collected as the platforms write it (no grading: fast).

* Canvas's "Download Submissions" zip is built by canvas-lms ``lib/content_zipper.rb``
  with rubyzip: each entry is named ``get_filename`` + ``_<attachment id>_<display
  name>`` (``<sortable name>[_LATE]_<user id>`` or ``[LATE_]anon_<anonymous id>``, the
  name lower-cased and stripped of non-word characters by ``sanitize_user_name`` and
  ``sanitize_file_name``), and no time is given, so rubyzip's ``Zip::Entry`` stamps
  each with its default ``time: ::Zip::DOSTime.now``: every entry carries the moment
  the zip was built. ``_canvas_zip`` writes exactly that.
* Moodle's "Download all submissions" puts each plugin's files in
  ``<Full name>_<participant>_assignsubmission_<plugin>_/`` (``file`` for uploads,
  ``onlinetext`` for the online text's ``onlinetext.html``).
"""

from __future__ import annotations

import csv
import datetime as dt
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
pytest.importorskip("nbgrader", reason="nbgrader is pinned in requirements.txt")
import collect  # noqa: E402
from grading import roster  # noqa: E402

A = "assignment1"
DUE = dt.datetime(2027, 3, 2, 9, 0)
BUILT = DUE + dt.timedelta(days=1, hours=3)  # the zip built the day after the deadline
NB = nbformat.writes(nbformat.v4.new_notebook())


def _course(tmp_path: Path) -> Path:
    course = tmp_path / "course"
    (course / "release" / A).mkdir(parents=True)
    (course / "release" / A / f"{A}.ipynb").write_text(NB)
    return course


def _deadlines(tmp_path: Path, grace: float = 0) -> Path:
    path = tmp_path / "deadlines.toml"
    path.write_text(f"[due]\n{A} = {DUE:%Y-%m-%dT%H:%M:%S}Z\n\n[late]\ngrace_minutes = {grace}\n")
    return path


def _canvas_zip(path: Path, names: list[str]) -> Path:
    """A zip as rubyzip writes Canvas's: every entry at the one build time."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in names:
            archive.writestr(zipfile.ZipInfo(name, date_time=BUILT.timetuple()[:6]), NB)
    return path


def _stamp(course: Path, sid: str) -> str:
    return (course / "submitted" / sid / A / "timestamp.txt").read_text().strip()


CANVAS = [
    f"smithjohn_3001_90001_{A}.ipynb",
    f"smithjohn_LATE_3002_90002_{A}-1.ipynb",  # late, renamed by Canvas
    f"o_brienpat_3003_90003_{A}.ipynb",  # a sortable name with "_"
    f"李雷_3004_90004_{A}.ipynb",
    f"anon_Xk3Pq_90005_{A}.ipynb",  # anonymous grading
    f"LATE_anon_Zz9Aa_90006_{A}.ipynb",
    "smithjohn_3007_text.html",  # online text: no notebook, no student
]


def test_canvas_lateness_comes_from_its_marker_never_from_the_build_time(tmp_path, capsys):
    course = _course(tmp_path)
    path = _canvas_zip(tmp_path / "canvas.zip", CANVAS)
    args = [str(path), A, "--course", str(course), f"--deadlines={_deadlines(tmp_path, 10)}"]
    assert collect.main(args) == 0
    out = capsys.readouterr().out
    folders = sorted(p.parent.name for p in (course / "submitted").glob(f"*/{A}"))
    assert folders == ["3001", "3002", "3003", "3004", "anon_Xk3Pq", "anon_Zz9Aa"]
    on_time, past = f"{DUE:%Y-%m-%d %H:%M:%S}", f"{DUE:%Y-%m-%d} 09:10:01"
    for sid in ("3001", "3003", "3004", "anon_Xk3Pq"):
        assert _stamp(course, sid).startswith(on_time), sid  # not the build time
    for sid in ("3002", "anon_Zz9Aa"):  # just past due + grace: one started day
        assert _stamp(course, sid).startswith(past), sid
    assert "Canvas's zip carries no submission time" in out
    assert "LATE (Canvas's marker, exact time unknown): 3002 (smithjohn), anon_Zz9Aa" in out
    assert "NO NOTEBOOK from 3007 (smithjohn): the upload holds text.html" in out
    names = {s.id: s.name for s in roster.read_roster(course).values()}
    assert names["3003"] == "o_brienpat" and names["3004"] == "李雷"
    assert names["anon_Xk3Pq"] == "" and "3007" not in names  # not made a student


def test_canvas_times_and_names_from_the_instructors_files(tmp_path, capsys):
    course = _course(tmp_path)
    path = _canvas_zip(tmp_path / "canvas.zip", CANVAS[:2])
    times = tmp_path / "submissions.csv"  # as Canvas's API lists submissions
    times.write_text("user_id,anonymous_id,submitted_at\n3001,,2027-03-01T20:15:00Z\n3002,,2027-03-04T08:00:00+01:00\n")
    gradebook = tmp_path / "gradebook.csv"  # Canvas's gradebook export: Student, ID
    gradebook.write_text(
        "Student,ID,SIS User ID,SIS Login ID,Section,Assignment 1 (4242)\n"
        "    Points Possible,,,,,12\n"
        '"Smith, John",3001,,,,\n"Smith, Johanna",3002,,,,\n'
    )
    args = [str(path), A, "--course", str(course), "--times", str(times)]
    args += ["--roster", str(gradebook), f"--deadlines={_deadlines(tmp_path)}"]
    assert collect.main(args) == 0
    out = capsys.readouterr().out
    assert "2 submission(s) timed by the submission times given" in out
    assert _stamp(course, "3001").startswith("2027-03-01 20:15:00")
    assert _stamp(course, "3002").startswith("2027-03-04 07:00:00")
    names = {s.id: s.name for s in roster.read_roster(course).values()}
    assert names == {"3001": "Smith, John", "3002": "Smith, Johanna"}  # not lowered


def test_moodle_online_text_is_reported_not_made_a_student(tmp_path, capsys):
    course = _course(tmp_path)
    entries = {
        f"John Smith_2001_assignsubmission_file_/{A}.ipynb": NB,
        "John Smith_2001_assignsubmission_onlinetext_/onlinetext.html": "<p>hi</p>",
        "Pat Doe_2007_assignsubmission_onlinetext_/onlinetext.html": "<p>x</p>",
        "Pat Doe_2007_assignsubmission_file_/answers.pdf": "%PDF",
    }
    path = tmp_path / "moodle.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in entries.items():
            archive.writestr(name, text)
    assert collect.main([str(path), A, "--course", str(course)]) == 0  # a PDF is no error
    out = capsys.readouterr().out
    assert sorted(p.name for p in (course / "submitted").iterdir()) == ["2001"]
    assert "NO NOTEBOOK from 2007 (Pat Doe): the upload holds answers.pdf, onlinetext.html" in out
    assert sorted(roster.read_roster(course)) == ["2001"]


def test_a_huge_entry_is_refused_without_being_written(tmp_path, capsys):
    """300 MiB of one byte compress to about 300 KB: it is refused, never written
    in full, and named; the student's own notebook lands."""
    course = _course(tmp_path)
    path = tmp_path / "bomb.zip"
    folder = "John Smith_2001_assignsubmission_file_"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(f"{folder}/{A}.ipynb", NB)
        with archive.open(f"{folder}/big.ipynb", "w", force_zip64=True) as f:
            block = b" " * (1 << 20)
            for _ in range(300):
                f.write(block)
        archive.writestr(f"{folder}/extra.ipynb", NB + " " * (3 << 20))
    assert path.stat().st_size < 1 << 20
    args = [str(path), A, "--course", str(course), "--max-submission-mib=2"]
    assert collect.main(args) == 0
    out = capsys.readouterr().out
    landed = sorted(p.name for p in (course / "submitted" / "2001" / A).iterdir())
    assert landed == [f"{A}.ipynb", "timestamp.txt"]
    assert f"REFUSED {folder}/big.ipynb: 300.0 MiB or more, past the limit of 20 MiB for a notebook" in out
    assert f"REFUSED {folder}/extra.ipynb" in out and "past the limit of 2 MiB" in out
    with pytest.raises(ValueError, match="positive MiB"):
        collect.collect(path, A, course, max_notebook_mib=0)


def test_the_times_file_says_what_is_wrong(tmp_path):
    bad = tmp_path / "t.csv"
    bad.write_text("user,when\n1,x\n")
    with pytest.raises(ValueError, match="user_id .*submitted_at"):
        collect.read_times(bad)
    bad.write_text("user_id,submitted_at\n1,yesterday\n")
    with pytest.raises(ValueError, match="ISO 8601"):
        collect.read_times(bad)


def test_grades_csv_cells_are_safe_to_open(tmp_path):
    rows = [['=HYPERLINK("http://evil.example";"x")', "+1+2", "-2", "@SUM(A1)", "\tx", "\u202etxt"]]
    path = tmp_path / "x.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([[roster.spreadsheet_safe(c) for c in r] for r in rows])
    cells = next(csv.reader(open(path, encoding="utf-8")))
    assert cells[0].startswith("'=") and cells[1] == "'+1+2" and cells[2] == "-2"
    assert cells[3].startswith("'@") and cells[4].startswith("'") and cells[5] == "txt"


# grades.csv and every export from a gradebook (nbgrader's rows stood in for: the
# export's own logic is what is tested; the graded path is in test_grading_term.py)

EVIL = '=HYPERLINK("http://evil.example";"x")'


def _exported(tmp_path, monkeypatch, decisions: str) -> tuple[Path, list[str]]:
    from grading import export

    course = tmp_path / "course"
    (course / "reports" / A).mkdir(parents=True)
    people = [
        roster.Student("3001", "canvas", "3001", EVIL),
        roster.Student("3002", "canvas", "3002", "+cmd|' /C calc'!A0"),
        roster.Student("js-x", "moodle", "2001", "@SUM(1+1)\u202e\x1b[2J", "js@x"),
        roster.Student("pd-x", "moodle", "2002", "Pat Doe", "pd@x"),
    ]
    roster.write_roster(course, {s.id: s for s in people})
    book = [(s.id, 10.0) for s in people]
    monkeypatch.setattr(
        export,
        "_gradebook",
        lambda course: [
            {
                "assignment": A,
                "duedate": DUE,
                "timestamp": DUE,
                "student_id": sid,
                "raw_score": raw,
                "late_submission_penalty": 0.0,
                "max_score": 12.0,
            }
            for sid, raw in book
        ],
    )
    # the grader could not grade pd-x: its report says so, and its verdict's field
    from grading.repair import note

    note(course, A, "pd-x", "NOT GRADED: nbgrader could not grade it")
    path = tmp_path / "decisions.toml"
    path.write_text(decisions)
    done = export.export(course, None, path, tmp_path / "none.toml")
    return course, done


def _rows(path: Path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


def test_not_graded_is_no_score_anywhere(tmp_path, monkeypatch):
    course, done = _exported(tmp_path, monkeypatch, "")
    grades = {r[3]: r for r in _rows(course / "grades.csv")}
    header = _rows(course / "grades.csv")[0]
    row = dict(zip(header, grades["pd-x"], strict=True))
    assert row["score"] == "" and row["raw_score"] == "" and row["autograded_score"] == ""
    assert row["reasons"] == "NOT GRADED (no score): nbgrader could not grade it"
    term = {r[0]: r for r in _rows(course / "term-grades.csv")}
    assert term["pd-x"][-1] == "NOT GRADED" and term["js-x"][-1] == "10"
    sheet = {r[0]: r for r in _rows(course / "exports" / f"{A}-moodle-grades.csv")}
    assert sheet["Participant 2002"][3] == ""  # Grade
    assert any(line.startswith("NOT GRADED (no score): pd-x (Pat Doe)") for line in done)


def test_a_grade_past_the_maximum_is_capped_and_said(tmp_path, monkeypatch):
    decisions = f'[[grade]]\nassignment = "{A}"\nstudent = "3001"\nadjust = 4\nreason = "extra work"\n'
    course, done = _exported(tmp_path, monkeypatch, decisions)
    header, *rows = _rows(course / "grades.csv")
    row = dict(zip(header, next(r for r in rows if r[3] == "3001"), strict=True))
    assert row["score"] == "12" and row["reasons"].startswith("adjust +4: extra work")
    assert "capped at the maximum 12 (the decisions gave 14)" in row["reasons"]
    canvas = _rows(course / "exports" / "canvas-grades.csv")
    assert [r[5] for r in canvas[2:]] == ["12", "10"]
    assert any(line.startswith("CAPPED: 3001 (") and "past the maximum 12" in line for line in done)


def test_formulas_and_control_characters_never_reach_a_csv_raw(tmp_path, monkeypatch):
    course, _ = _exported(tmp_path, monkeypatch, "")
    files = [course / "grades.csv", course / "term-grades.csv", course / "roster.csv"]
    files += sorted((course / "exports").glob("*.csv"))
    assert len(files) == 5, files
    for path in files:
        for row in _rows(path):
            for cell in row:
                first = cell.lstrip()[:1]
                assert first not in ("=", "+", "@", "|", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20"), cell
                # a number, or the lone "-" of Moodle's "Last modified (grade)" (no formula)
                assert first != "-" or cell == "-" or cell.lstrip().lstrip("-").replace(".", "").isdigit(), cell
                assert "\x1b" not in cell and "\u202e" not in cell, (path.name, cell)
    canvas = _rows(course / "exports" / "canvas-grades.csv")
    assert canvas[2][0] == "'" + EVIL  # shown as text, the name kept


def test_decisions_with_entries_are_never_published(tmp_path):
    """Extensions and manual grades are private: the course's _grading/decisions.toml
    (ignored by git), a tracked example only; the editions refuse a file with entries."""
    import subprocess

    from editions import make_editions
    from grading import decisions

    assert decisions.DECISIONS == ROOT / "_grading" / "decisions.toml"
    ignored = subprocess.run(["git", "check-ignore", "-q", str(decisions.DECISIONS)], cwd=ROOT)
    assert ignored.returncode == 0
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
    files = [ROOT / f for f in tracked.stdout.splitlines() if "decisions" in f and f.endswith(".toml")]
    assert files == [decisions.EXAMPLE]
    assert decisions.entries(decisions.EXAMPLE) == 0  # commented examples only
    edition = tmp_path / "editions" / "student" / "assignments"
    edition.mkdir(parents=True)
    private = edition / "decisions.toml"
    private.write_text('[[grade]]\nassignment = "a"\nstudent = "1"\nscore = 3\nreason = "r"\n')
    with pytest.raises(ValueError, match="refusing to publish students' decisions: .* holds 1 decision"):
        make_editions.refuse_decisions(tmp_path / "editions", tmp_path)
    private.write_text(decisions.EXAMPLE.read_text())
    make_editions.refuse_decisions(tmp_path / "editions", tmp_path)  # the example: fine


def test_a_canvas_sortable_name_claims_no_other_students_id(tmp_path, capsys):
    """Canvas names are read from the right: the sortable name ``x_3002_1`` (which
    holds "_<digits>_") stays a name, and her upload is filed under her own id 4242
    (issue 51: it went to user 3002, and she vanished without a SKIPPED line)."""
    course = _course(tmp_path)
    names = [f"x_3002_1_4242_90001_{A}.ipynb", f"lee_3002_90002_{A}.ipynb", f"x_3002_1_LATE_4243_90003_{A}.ipynb"]
    path = _canvas_zip(tmp_path / "canvas.zip", names)
    assert collect.main([str(path), A, "--course", str(course), f"--deadlines={_deadlines(tmp_path)}"]) == 0
    folders = sorted(p.parent.name for p in (course / "submitted").glob(f"*/{A}"))
    assert folders == ["3002", "4242", "4243"]
    who = {s.id: s.name for s in roster.read_roster(course).values()}
    assert who == {"3002": "lee", "4242": "x_3002_1", "4243": "x_3002_1"}
    assert "4243 (x_3002_1)" in capsys.readouterr().out.split("LATE (Canvas's marker")[1]


def _moodle_zip(path: Path, entries: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in entries.items():
            archive.writestr(name, text)
    return path


def test_collect_never_stops_for_one_file(tmp_path, capsys):
    """A file name of 90 CJK characters (270 bytes: valid on Moodle, past the 255 of
    the file system) is stored under a shorter name and graded; an entry whose name is
    flagged UTF-8 and is not (zipfile refuses the whole archive for it) is SKIPPED with
    its reason; every other student and roster.csv are written (issue 51: collect
    stopped with "File name too long" and wrote neither)."""
    course = _course(tmp_path)
    long_name = "作业" * 45 + ".ipynb"
    entries = {
        f"Ann Lee_3001_assignsubmission_file_/{long_name}": NB,
        "Bob Roe_3002_assignsubmission_file_/XXXXXXXX.ipynb": NB,
        f"Cy Poe_3003_assignsubmission_file_/{A}.ipynb": NB,
    }
    path = _moodle_zip(tmp_path / "moodle.zip", entries)
    data = bytearray(path.read_bytes())  # Bob's name: invalid UTF-8, flagged UTF-8 (bit 11)
    data[:] = data.replace(b"XXXXXXXX", b"\xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8")
    for signature, flags_at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        at = data.find(signature)
        while at >= 0:
            data[at + flags_at] |= 0x00
            data[at + flags_at + 1] |= 0x08  # 0x800, little-endian
            at = data.find(signature, at + 4)
    path.write_bytes(bytes(data))
    with pytest.raises(UnicodeDecodeError):  # why collect once stopped here
        zipfile.ZipFile(path)
    assert collect.main([str(path), A, "--course", str(course)]) == 0
    out = capsys.readouterr().out
    assert "SKIPPED Bob Roe_3002_assignsubmission_file_/" in out and "not valid UTF-8" in out
    folders = sorted(p.parent.name for p in (course / "submitted").glob(f"*/{A}"))
    assert folders == ["3001", "3003"]
    stored = [p.name for p in (course / "submitted" / "3001" / A).glob("*.ipynb")]
    assert len(stored) == 1 and len(stored[0].encode()) <= 200 and stored[0].startswith("作业"), stored
    assert {s.id for s in roster.read_roster(course).values()} == {"3001", "3003"}


def test_a_submission_that_is_no_notebook_scores_0_with_its_reason_everywhere(tmp_path, monkeypatch):
    """Issue 51 item 8: the grader's SCORED 0 (not a notebook, metadata nbgrader cannot
    read) is a 0 with its reason in grades.csv and every export, never an empty grade
    (Moodle's default aggregation skips those)."""
    from grading.repair import forget, note

    course, done = _exported(tmp_path, monkeypatch, "")
    forget(course, A, "pd-x")  # not the machine's failure this time: no notebook at all
    note(course, A, "pd-x", "SCORED 0: assignment1.ipynb is not a notebook (NotJSONError: ...)")
    from grading import export

    export.export(course, None, tmp_path / "decisions.toml", tmp_path / "none.toml", not_uploaded=True)
    header, *rows = _rows(course / "grades.csv")
    row = dict(zip(header, next(r for r in rows if r[3] == "pd-x"), strict=True))
    assert row["score"] == "0" and row["autograded_score"] == "0", row
    assert row["reasons"].startswith("0: assignment1.ipynb is not a notebook"), row
    sheet = {r[0]: r for r in _rows(course / "exports" / f"{A}-moodle-grades.csv")}
    assert sheet["Participant 2002"][3] == "0"  # Grade
