"""Who the students are: each keyed by the course platform's id, the name kept for show.

A platform's zip names each upload by the student's name and the platform's own id:
Moodle's participant number (``John Smith_2001_assignsubmission_file_``), Canvas's
user id (``smithjohn_2001_98765_...``). Names are not unique (two John Smiths) and
not safe as folder names (李雷, Иван Петров, Ólafur Þór), so grading keys each
student by an **id** made of the safe characters ``SAFE_ID`` allows, 1 to 64 of
``A-Z a-z 0-9 _ -``, starting with a letter or a digit:

* Moodle and Canvas: the platform's id itself (``2001``). Moodle numbers the
  participants of each assignment anew, so one student has one id per assignment
  there; Canvas's user id is the same in every assignment.
* a zip with one folder per student: the folder's name when it is already safe
  (``jdoe``), else its ASCII transliteration (``Ólafur Þór`` -> ``olafur-thor``,
  ``Иван Петров`` -> ``ivan-petrov``), else (``李雷``) ``s-`` and a short digest
  of the name. Collecting never stops the class for one student's name.

Every id collect writes goes into ``<course>/roster.csv`` (id, platform,
platform_id, name, email), the display name with its Unicode intact. An
instructor's own roster (``make collect ROSTER=class.csv``: columns id, name,
email, where id is the platform's id or the student's id) fills in names and
emails; the exports (export.py) read both.

Folders under ``submitted/`` whose names do not match ``SAFE_ID`` are not
collect's (the sandbox's folder check refuses them).
"""

from __future__ import annotations

import csv
import hashlib
import re
import unicodedata
from dataclasses import asdict, dataclass, fields
from pathlib import Path

SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
ROSTER = "roster.csv"  # <course>/roster.csv

# letters that Unicode does not decompose into an ASCII letter and a mark
_LATIN = {
    "ß": "ss",
    "þ": "th",
    "ð": "d",
    "æ": "ae",
    "œ": "oe",
    "ø": "o",
    "ł": "l",
    "đ": "d",
    "ħ": "h",
    "ı": "i",
    "ŋ": "ng",
    "ſ": "s",
}
_CYRILLIC_ASCII = "a b v g d e e zh z i y k l m n o p r s t u f kh ts ch sh shch - y"
_CYRILLIC_ASCII += " - e yu ya i yi ye g u"
_CYRILLIC = dict(
    zip(
        "абвгдеёжзийклмнопрстуфхцчшщъыьэюяіїєґў",
        _CYRILLIC_ASCII.split(),
        strict=True,
    )
)
_GREEK = dict(
    zip(
        "αβγδεζηθικλμνξοπρσςτυφχψω",
        "a v g d e z i th i k l m n x o p r s s t y f ch ps o".split(),
        strict=True,
    )
)


def transliterate(name: str) -> str:
    """``name`` in lower-case ASCII letters and digits, words joined by '-'; '' when
    nothing of it has an ASCII spelling here (Chinese, say)."""
    out = []
    for ch in unicodedata.normalize("NFKD", name.lower()):
        if unicodedata.combining(ch):
            continue
        ch = _LATIN.get(ch) or _CYRILLIC.get(ch) or _GREEK.get(ch) or ch
        out.append(ch.replace("-", "") if len(ch) > 1 else ch)
    slug = re.sub(r"[^a-z0-9]+", "-", "".join(out)).strip("-")
    return slug[:48].strip("-")


def student_id(text: str) -> str:
    """An id ``SAFE_ID`` accepts, for a name or login from a platform (never fails
    on a non-empty name): the text itself if safe, its transliteration, or ``s-``
    and 10 hex digits of its SHA-256."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"expected a student's name or id, got {text!r}")
    text = unicodedata.normalize("NFC", text.strip())
    if SAFE_ID.fullmatch(text):
        return text
    slug = transliterate(text)
    if slug:
        return slug
    return "s-" + hashlib.sha256(text.encode()).hexdigest()[:10]


@dataclass
class Student:
    """One row of the roster."""

    id: str  # the folder under submitted/, SAFE_ID
    platform: str = ""  # moodle, canvas, folder or ''
    platform_id: str = ""  # the platform's own id (Moodle participant, Canvas user)
    name: str = ""  # for show, Unicode intact
    email: str = ""


COLUMNS = [f.name for f in fields(Student)]


def read_roster(course: Path) -> dict[str, Student]:
    """``<course>/roster.csv``, by student id ({} when there is none)."""
    path = course / ROSTER
    if not path.is_file():
        return {}
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    students = [Student(**{k: (r.get(k) or "") for k in COLUMNS}) for r in rows]
    return {s.id: s for s in students if s.id}


def write_roster(course: Path, students: dict[str, Student]) -> None:
    """Write ``<course>/roster.csv``, sorted by id."""
    path = course / ROSTER
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        for sid in sorted(students):
            writer.writerow(asdict(students[sid]))


def read_class_list(path: Path) -> list[dict[str, str]]:
    """An instructor's roster CSV: rows with an ``id`` and optional ``name``, ``email``
    (other columns are ignored; a header is required; UTF-8, with or without BOM)."""
    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.DictReader(f)
        header = [h.strip().lower() for h in reader.fieldnames or []]
        if "id" not in header:
            raise ValueError(
                f"expected a roster CSV with an 'id' column (and name, email), "
                f"got the columns {reader.fieldnames} in {path}"
            )
        rows = []
        for raw in reader:
            row = {(k or "").strip().lower(): (v or "").strip() for k, v in raw.items()}
            if row.get("id"):
                rows.append(row)
    return rows


def apply_class_list(students: dict[str, Student], rows: list[dict]) -> list[str]:
    """Names and emails of the instructor's roster into ``students`` (matched by
    platform id, else by student id); returns the ids of the roster not found."""
    by_platform = {s.platform_id: s for s in students.values() if s.platform_id}
    missing = []
    for row in rows:
        student = by_platform.get(row["id"]) or students.get(row["id"])
        if student is None:
            missing.append(row["id"])
            continue
        student.name = row.get("name") or student.name
        student.email = row.get("email") or student.email
    return missing


def display(course: Path, sid: str, roster: dict[str, Student] | None = None) -> str:
    """``2001 (John Smith)``: a student id with the name, for reports."""
    roster = read_roster(course) if roster is None else roster
    student = roster.get(sid)
    return f"{sid} ({student.name})" if student and student.name else sid
