"""Who the students are: each keyed by the course platform's id, the name kept for show.

A platform's zip names each upload by the student's name and the platform's own id:
Moodle's participant number (``John Smith_2001_assignsubmission_file_``), Canvas's
user id (``smithjohn_2001_98765_...``). Names are not unique (two John Smiths) and
not safe as folder names (李雷, Иван Петров, Ólafur Þór), so grading keys each
student by an **id** made of the safe characters ``SAFE_ID`` allows, 1 to 64 of
``A-Z a-z 0-9 _ -``, starting with a letter or a digit:

* Canvas: the user id (``2001``), the same in every assignment of a course.
* Moodle: its participant number is per assignment (the ``id`` of a row of the
  ``assign_user_mapping`` table, made for each student and assignment), so one
  student has another number in each assignment. A term keys a Moodle student by
  an id made from the email (``email_id``: ``john.smith@uni.edu`` ->
  ``john-smith-uni-edu``), the same in every assignment; the email comes from the
  assignment's grading worksheet (``read_worksheet``) or the instructor's roster
  (matched by a name only one student has). Without either, the participant
  number itself is the id, and collect says that this student's assignments
  cannot be joined. Each assignment's participant number is kept in
  ``<course>/participants.csv`` (assignment, id, platform_id): the
  exports write it back, as Moodle's imports match that assignment's numbers.
* a zip with one folder per student: the folder's name when it is already safe
  (``jdoe``), else its ASCII transliteration (``Ólafur Þór`` -> ``olafur-thor``,
  ``Иван Петров`` -> ``ivan-petrov``), else (``李雷``) ``s-`` and a short digest
  of the name. Collecting never stops the class for one student's name.

Every id collect writes goes into ``<course>/roster.csv`` (id, platform,
platform_id, name, email; for Moodle the last collected assignment's number), the
display name with its Unicode intact. An instructor's own roster (``make collect
ROSTER=class.csv``: columns id, name, email, where id is the platform's id or the
student's id) fills in names and emails; the exports (export.py) read both.

Folders under ``submitted/`` whose names do not match ``SAFE_ID`` are not
collect's (the sandbox's folder check refuses them).
"""

from __future__ import annotations

import csv
import hashlib
import re
import shutil
import unicodedata
from dataclasses import asdict, dataclass, fields
from pathlib import Path

SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
ROSTER = "roster.csv"  # <course>/roster.csv
PARTICIPANTS = "participants.csv"  # <course>/participants.csv
WORKSHEETS = "worksheets"  # <course>/worksheets/<assignment>.csv, as downloaded

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
    students = [Student(**{k: _unsafe(r.get(k) or "") for k in COLUMNS}) for r in rows]
    return {s.id: s for s in students if s.id}


def _unsafe(cell: str) -> str:
    """A cell ``spreadsheet_safe`` wrote, as it was (its leading ``'`` removed)."""
    if cell[:1] == "'" and (cell[1:].lstrip()[:1] in FORMULA_START or cell[1:2].isspace()):
        return cell[1:]
    return cell


def write_roster(course: Path, students: dict[str, Student]) -> None:
    """Write ``<course>/roster.csv``, sorted by id."""
    path = course / ROSTER
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        for sid in sorted(students):
            row = asdict(students[sid])
            writer.writerow({k: spreadsheet_safe(v) for k, v in row.items()})


def read_class_list(path: Path) -> list[dict[str, str]]:
    """An instructor's roster CSV: rows with an ``id`` and optional ``name``, ``email``
    (other columns are ignored; a header is required; UTF-8, with or without BOM).
    Canvas's gradebook export (Grades > Export) is one: its ``Student`` column
    (the display name, "Smith, John") is read as the name, ``ID`` as the id."""
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
            if not row.get("name") and row.get("student"):
                row["name"] = row["student"]
            if row.get("id"):
                rows.append(row)
    return rows


def apply_class_list(students: dict[str, Student], rows: list[dict]) -> list[str]:
    """Names and emails of the instructor's roster into ``students`` (matched by
    email, platform id or student id); returns the ids of the roster not found."""
    by_platform = {s.platform_id: s for s in students.values() if s.platform_id}
    by_email = {s.email.lower(): s for s in students.values() if s.email}
    missing = []
    for row in rows:
        student = by_email.get(row.get("email", "").lower())
        student = student or by_platform.get(row["id"]) or students.get(row["id"])
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


def email_id(email: str, taken: dict[str, str] | None = None) -> str:
    """A student's id for a whole term, from the email (``john.smith@uni.edu`` ->
    ``john-smith-uni-edu``); ``taken``: {id: email} of ids already given, so that
    two emails that spell alike (``j.smith@x``, ``j-smith@x``) get two ids."""
    if not isinstance(email, str) or "@" not in email:
        raise ValueError(f"expected an email address, got {email!r}")
    email = email.strip().lower()
    sid = student_id(email)
    owner = (taken or {}).get(sid)
    if owner is not None and owner != email:
        digest = hashlib.sha256(email.encode()).hexdigest()[:6]
        sid = f"{sid[:57]}-{digest}"
    return sid


def read_participants(course: Path) -> dict[tuple[str, str], str]:
    """``<course>/participants.csv``: {(assignment, student id): the platform's id
    of the student in that assignment}."""
    path = course / PARTICIPANTS
    if not path.is_file():
        return {}
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return {(r["assignment"], r["id"]): r["platform_id"] for r in rows}


def write_participants(course: Path, found: dict[tuple[str, str], str]) -> None:
    """Write ``<course>/participants.csv``, sorted (see ``read_participants``)."""
    path = course / PARTICIPANTS
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["assignment", "id", "platform_id"])
        for (assignment, sid), pid in sorted(found.items()):
            writer.writerow([assignment, sid, pid])


# Moodle's grading worksheet (Assignment > View all submissions > Grading action >
# Download grading worksheet), as an English Moodle heads its columns
IDENTIFIER, FULL_NAME, EMAIL = "Identifier", "Full name", "Email address"
PARTICIPANT = "Participant "  # Identifier is "Participant 2001"


def read_worksheet(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """A Moodle grading worksheet: its header and rows, each row with its
    ``participant`` number added (the digits of ``Participant 2001``)."""
    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.DictReader(f)
        header = list(reader.fieldnames or [])
        needed = [IDENTIFIER, FULL_NAME, EMAIL]
        if not set(needed) <= set(header):
            raise ValueError(
                f"expected Moodle's grading worksheet with the columns "
                f"{', '.join(needed)} (as an English Moodle writes them; show the "
                f"email among the identity fields), got {header} in {path}"
            )
        rows = []
        for n, row in enumerate(reader, 2):
            ident = (row.get(IDENTIFIER) or "").strip()
            number = ident.removeprefix(PARTICIPANT).strip()
            if not ident.startswith(PARTICIPANT) or not number.isdigit():
                expected = "an Identifier such as 'Participant 2001'"
                where = f"{path}, line {n}"
                raise ValueError(f"{where}: expected {expected}, got {ident!r}")
            rows.append({**row, "participant": number})
    return header, rows


def _same(name: str) -> str:
    return unicodedata.normalize("NFC", " ".join(name.split())).casefold()


def identify(students: dict, roster: dict, sheet: list, rows: list) -> list[str]:
    """Key each Moodle student of ``students`` by an id from the email, found in the
    worksheet's ``sheet`` (by participant number) or the class list's ``rows`` (by
    a name only one row has); the lines to print for those left unmatched."""
    by_number = {r["participant"]: r for r in sheet}
    names: dict[str, list[dict]] = {}
    for row in rows:
        if row.get("email") and row.get("name"):
            names.setdefault(_same(row["name"]), []).append(row)
    known = {s.email.lower(): s.id for s in roster.values() if s.email}
    taken = {s.id: s.email.lower() for s in roster.values() if s.email}
    unmatched = []
    for student in students.values():
        if student.platform != "moodle":
            continue
        row = by_number.get(student.platform_id)
        listed = names.get(_same(student.name), [])
        if row and row.get(EMAIL, "").strip():
            email = row[EMAIL].strip()
            student.name = row.get(FULL_NAME, "").strip() or student.name
        elif len(listed) == 1:
            email = listed[0]["email"]
        else:
            why = "two or more in the roster" if listed else "no email"
            unmatched.append(f"{display_student(student)}, {why}")
            continue
        student.email = email
        student.id = known.get(email.lower()) or email_id(email, taken)
        taken[student.id], known[email.lower()] = email.lower(), student.id
    if not unmatched:
        return []
    return [
        f"WARNING: {len(unmatched)} Moodle student(s) keyed by this assignment's "
        f"participant number ({'; '.join(unmatched)}): Moodle numbers participants "
        "anew in each assignment, so these grades cannot be joined with the same "
        "student's other assignments. Collect again with WORKSHEET= this "
        "assignment's grading worksheet (View all submissions > Download grading "
        "worksheet) or ROSTER= a class list with id, name, email columns; nothing "
        "is lost either way."
    ]


def add_worksheet(course, assignment, path, sheet, roster, numbers) -> list[str]:
    """Every participant of the worksheet into the roster and participants.csv
    (so that a manual grade reaches one who handed in nothing), and the worksheet
    kept for the export."""
    by_email = {s.email.lower(): s for s in roster.values() if s.email}
    taken = {s.id: s.email.lower() for s in roster.values() if s.email}
    added = 0
    for row in sheet:
        email = row.get(EMAIL, "").strip()
        if not email:
            continue
        student = by_email.get(email.lower())
        if student is None:
            sid = email_id(email, taken)
            name = row.get(FULL_NAME, "").strip()
            student = Student(sid, "moodle", row["participant"], name, email)
            roster[sid] = by_email[email.lower()] = student
            taken[sid] = email.lower()
            added += 1
        numbers[(assignment, student.id)] = row["participant"]
    folder = course / WORKSHEETS
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(path, folder / f"{assignment}.csv")
    return [f"worksheet: {len(sheet)} participant(s), {added} new to the roster"]


# what may reach a terminal or a spreadsheet as text: no control character but the
# line break and the tab, no bidirectional override or isolate (which reorder what
# a terminal shows) and no other invisible format character
_KEEP = {"\n", "\t"}


def _unprintable(ch: str) -> bool:
    return ch not in _KEEP and unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co")


def printable(text: str, escape: bool = False) -> str:
    """``text`` safe to print to a terminal: control characters (escape sequences'
    ESC among them), bidirectional marks and other format characters removed, or,
    with ``escape``, written as ``\\x1b``, ``\\u202e`` (a sandbox's own log)."""
    if not isinstance(text, str):
        raise ValueError(f"expected text to print, got {type(text).__name__}")
    out = []
    for ch in text:
        if not _unprintable(ch):
            out.append(ch)
        elif escape:
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
    return "".join(out)


# what a spreadsheet may read as the start of a formula or a command (OWASP's CSV
# injection list): the four signs, "|", their full-width forms, a tab, a carriage return
FORMULA_START = frozenset("=+-@|\t\r\uff1d\uff0b\uff0d\uff20")


def spreadsheet_safe(value: str) -> str:
    """A CSV cell a spreadsheet shows as text: a cell whose first character, or first
    after any Unicode space (NBSP, U+3000, U+2028 among them), is one of
    ``FORMULA_START`` gets a leading ``'``, unless it is a number (``-1.5``); line
    breaks become spaces; control and bidirectional characters are removed (OWASP's
    CSV injection advice)."""
    if not isinstance(value, str):
        raise ValueError(f"expected a cell's text, got {type(value).__name__}")
    first = value.lstrip(
        " \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
        "\u2028\u2029\u202f\u205f\u3000\x0b\x0c\x1c\x1d\x1e\x1f\x85\n"
    )[:1]
    text = printable(value.replace("\r", " "))
    for brk in "\n\u2028\u2029\x85":
        text = text.replace(brk, " ")
    if first in FORMULA_START or text.lstrip()[:1] in FORMULA_START:
        try:
            float(text)
        except ValueError:
            return "'" + text
    return text


def display_student(student: Student) -> str:
    """``2001 (John Smith)``, or the id alone when there is no name."""
    return f"{student.id} ({student.name})" if student.name else student.id
