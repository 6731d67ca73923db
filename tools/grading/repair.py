"""Making each submission gradable before nbgrader runs, and the per-student report.

Whatever is done is written, per student, to ``<course>/reports/<assignment>/
<student>.txt`` (``note``) and printed at the end of ``make grade``:

* a misnamed notebook (``assignment1 (1).ipynb``, ``Assignment1.ipynb``, the only
  notebook there is) is renamed to the assignment's (``match_notebook``); with none
  that fits, the student is named as NOT GRADED (no score); a notebook that cannot be
  read scores 0 with the reason (SCORED 0); the others are graded as usual;
* cells whose nbgrader metadata was stripped (copied into a fresh notebook) or
  changed (an answer cell marked ``grade: true, points: 50``) get the release's
  back, matched by grade id, cell id, source or place (``recover_cells``); a deleted
  test cell is put back from the release and an edited one restored, so neither
  raises a grade, and both are reported (``RecoverCells``, ``RestoreCells``, which
  also keeps nbgrader from warning about every test cell whose hidden tests it
  restores).
"""

from __future__ import annotations

import copy
import json
import re
import unicodedata
from pathlib import Path

import nbformat
from nbformat import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor, OverwriteCells

from . import confine

NOTES = "reports"  # <course>/reports/<assignment>/<student>.txt: what grading changed
CHECK = "am-i-done"  # the id of handin.py's cell in a released notebook


def _course_of(resources: dict) -> Path | None:
    """The course folder of the notebook nbgrader is converting (from its path)."""
    path = (resources.get("metadata") or {}).get("path")
    return Path(path).resolve().parents[2] if path else None


NOT_GRADED = "NOT GRADED"  # the grader could not grade: no score (the machine's doing)
SCORED_0 = "SCORED 0"  # the submission cannot be graded (not a notebook): 0, with the reason
# every character str.splitlines() ends a line at: none reaches a report's line
LINE_BREAKS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")


def one_line(text: str) -> str:
    """``text`` as one line: line breaks (all that ``str.splitlines`` knows), control
    and format characters written as ``\\n``-style escapes (``\\x0a``, ``\\u2028``)."""
    if not isinstance(text, str):
        raise ValueError(f"expected a report's text, got {type(text).__name__}")
    out = []
    for ch in text:
        if ch in LINE_BREAKS or unicodedata.category(ch) in ("Cc", "Cf", "Cs"):
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        else:
            out.append(ch)
    return "".join(out)


def verdict_path(course: Path, assignment: str, student: str) -> Path:
    """The structured verdict of a student's grading (JSON): ``not_graded`` (the
    reasons, set only by the grader's own code), ``tests`` (per test cell: status
    passed, failed or not run, and the reason), ``sandbox`` (why the run stopped)."""
    return course / NOTES / assignment / "verdicts" / f"{student}.json"


def read_verdict(course: Path, assignment: str, student: str) -> dict:
    path = verdict_path(course, assignment, student)
    try:
        data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except ValueError:
        data = {}
    return data if isinstance(data, dict) else {}


def update_verdict(course: Path, assignment: str, student: str, **fields) -> None:
    """Merge ``fields`` into the student's verdict file (``verdict_path``)."""
    data = read_verdict(course, assignment, student)
    data.update(fields)
    path = verdict_path(course, assignment, student)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")


def not_graded_reasons(course: Path, assignment: str, student: str) -> list[str]:
    """Why the grader could not grade the student (its own field; [] if it did)."""
    why = read_verdict(course, assignment, student).get("not_graded") or []
    return [str(w) for w in why] if isinstance(why, list) else []


def forget(course: Path, assignment: str, student: str) -> None:
    """The student's report and verdict removed (graded again, or gone)."""
    (course / NOTES / assignment / f"{student}.txt").unlink(missing_ok=True)
    verdict_path(course, assignment, student).unlink(missing_ok=True)


def note(course: Path, assignment: str, student: str, text: str) -> None:
    """Record, for the instructor, something grading did to a student's submission:
    one line of the report, whatever ``text`` holds (``one_line``). A text that the
    grader's code begins with NOT GRADED also sets the verdict's ``not_graded``; no
    string of a submission begins a text (each comes after the grader's words)."""
    folder = course / NOTES / assignment
    folder.mkdir(parents=True, exist_ok=True)
    line = one_line(text.rstrip())
    with open(folder / f"{student}.txt", "a", encoding="utf-8") as f:
        f.write(line + "\n")
    for prefix, field in ((NOT_GRADED, "not_graded"), (SCORED_0, "zero")):
        if line.startswith(prefix):
            reasons = read_verdict(course, assignment, student).get(field) or []
            why = line.removeprefix(prefix).lstrip(":").strip()
            update_verdict(course, assignment, student, **{field: [*map(str, reasons), why]})


def zero_reasons(course: Path, assignment: str, student: str) -> list[str]:
    """Why the submission scores 0 without being graded (the grader's field: not a
    notebook, metadata nbgrader cannot read); [] if none."""
    why = read_verdict(course, assignment, student).get("zero") or []
    return [str(w) for w in why] if isinstance(why, list) else []


def _normal(source: str | None) -> str:
    """A cell's source with whitespace folded (editors strip and re-indent)."""
    return " ".join((source or "").split())


def _grade_id(cell) -> str | None:
    return (cell.get("metadata", {}).get("nbgrader") or {}).get("grade_id")


def recover_cells(nb: NotebookNode, release: NotebookNode) -> tuple[NotebookNode, list]:
    """``nb`` with the nbgrader cells of ``release`` found again; what was done.

    A submission's nbgrader metadata is lost when a student copies the cells into a
    fresh notebook or saves it with an editor that drops it; nbgrader then finds no
    answer and no test, and scores 0. Cells are matched to the released ones, in
    order: by their nbgrader ``grade_id``, by cell id, by their source (locked
    cells, with whitespace folded, or the first line of a test cell), and an answer
    cell by its place (the first unmatched code cell after the cell released before
    it). A matched cell gets the released metadata back. A locked cell that is
    missing (a deleted test) is put back from the release after the cell before it,
    so deleting a test never raises a grade; nbgrader then restores its hidden part.
    """
    nb = copy.deepcopy(nb)
    ref = [c for c in release.cells if _grade_id(c)]
    ids = [_grade_id(c) for c in ref]
    done: list[str] = []
    where: dict[str, int] = {}  # grade_id -> index in nb.cells
    for i, cell in enumerate(nb.cells):
        gid = _grade_id(cell)
        if gid is None:
            continue
        if gid in ids and gid not in where:
            where[gid] = i
        else:  # a copied cell, or one that no longer exists
            del cell.metadata["nbgrader"]
            done.append(f"removed the nbgrader metadata of a copy of cell {gid}")
    taken = set(where.values())
    for gid, i in where.items():  # a known cell whose nbgrader metadata was changed
        released = ref[ids.index(gid)].metadata["nbgrader"]
        mine = nb.cells[i].metadata["nbgrader"]
        if any(mine.get(k) != released.get(k) for k in ("grade", "solution", "locked", "points", "task")):
            nb.cells[i].metadata["nbgrader"] = copy.deepcopy(released)
            done.append(f"cell {gid}: its nbgrader metadata was changed; restored from the release")

    def claim(gid: str, i: int, how: str) -> None:
        cell, released = nb.cells[i], ref[ids.index(gid)]
        cell.metadata["nbgrader"] = copy.deepcopy(released.metadata["nbgrader"])
        where[gid], _ = i, taken.add(i)
        done.append(f"cell {gid}: nbgrader metadata recovered ({how})")

    by_id = {c.get("id"): _grade_id(c) for c in ref if c.get("id")}
    for i, cell in enumerate(nb.cells):
        gid = by_id.get(cell.get("id"))
        if i not in taken and gid and gid not in where:
            if cell.cell_type == ref[ids.index(gid)].cell_type:
                claim(gid, i, "cell id")
    for released in ref:
        gid, meta = _grade_id(released), released.metadata["nbgrader"]
        if gid in where or meta.get("solution"):
            continue
        first = released.source.splitlines()[0] if released.source else ""
        for i, cell in enumerate(nb.cells):
            if i in taken or cell.cell_type != released.cell_type:
                continue
            same = _normal(cell.source) == _normal(released.source)
            test = meta.get("grade") and first.startswith("# Test")
            if same or (test and cell.source.splitlines()[:1] == [first]):
                claim(gid, i, "source")
                break
    for k, released in enumerate(ref):
        gid = _grade_id(released)
        if gid in where or not released.metadata["nbgrader"].get("solution"):
            continue
        before = [where[g] for g in ids[:k] if g in where]
        after = [where[g] for g in ids[k + 1 :] if g in where]
        low, high = (
            (max(before) if before else -1),
            (min(after) if after else len(nb.cells)),
        )
        for i in range(low + 1, high):
            if i not in taken and nb.cells[i].cell_type == released.cell_type:
                claim(gid, i, "place")
                break
        else:
            done.append(f"cell {gid}: NO ANSWER FOUND (its tests score 0)")
    # put back the locked cells that are missing, in the released order
    for k, released in enumerate(ref):
        gid = _grade_id(released)
        if gid in where or released.metadata["nbgrader"].get("solution"):
            continue
        before = [where[g] for g in ids[:k] if g in where]
        at = max(before) + 1 if before else 0
        cell = copy.deepcopy(released)
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        cell["id"] = f"restored-{gid}"[:64]
        nb.cells.insert(at, cell)
        where = {g: (i + 1 if i >= at else i) for g, i in where.items()}
        where[gid] = at
        taken = set(where.values())
        if released.metadata["nbgrader"].get("grade"):
            done.append(f"cell {gid}: missing (deleted?), put back from the release")
    return nb, done


def _release_of(resources: dict) -> NotebookNode | None:
    course, ids = _course_of(resources), resources.get("nbgrader") or {}
    if course is None or not ids.get("assignment") or not ids.get("notebook"):
        return None
    path = course / "release" / ids["assignment"] / f"{ids['notebook']}.ipynb"
    return nbformat.read(path, as_version=4) if path.is_file() else None


def drop_check_cell(nb: NotebookNode, release: NotebookNode) -> NotebookNode:
    """``nb`` without the "Am I done?" cell (handin.py) when its text is as released
    (with its id or, pasted into a new notebook, without): it grades nothing, and it
    runs the visible tests with ``exec``. A student's edited copy stays, and runs
    and is read like any other cell."""
    released = [_normal(c.source) for c in release.cells if c.get("id") == CHECK]

    def as_released(cell) -> bool:  # a copy pasted into a new notebook lost its id
        return cell.cell_type == "code" and _normal(cell.source) in released

    nb.cells = [c for c in nb.cells if not as_released(c)]
    return nb


class RecoverCells(NbGraderPreprocessor):
    """Before nbgrader's checks: lost metadata recovered, deleted tests put back,
    the "Am I done?" cell as released taken out (``drop_check_cell``)."""

    def preprocess(self, nb, resources):
        release = _release_of(resources)
        if release is None:
            return nb, resources
        nb = drop_check_cell(nb, release)
        nb, done = recover_cells(nb, release)
        ids = resources["nbgrader"]
        for text in done:
            note(_course_of(resources), ids["assignment"], ids["student"], text)
        return nb, resources


class RestoreCells(OverwriteCells):
    """nbgrader's OverwriteCells, which says only what a student changed.

    Every test cell differs from the gradebook's by its hidden tests, which nbgrader
    reports as a changed checksum (one warning per test cell per student). Here a
    cell that is as released restores silently; an edited one is noted for the
    instructor, with the student's name, and restored as nbgrader does.
    """

    def preprocess(self, nb, resources):
        release = _release_of(resources)
        cells = release.cells if release is not None else []
        self._released = {_grade_id(c): c.source for c in cells if _grade_id(c)}
        self._resources = resources
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, cell_index):
        gid = _grade_id(cell)
        released = self._released.get(gid)
        same = released is not None and _normal(released) == _normal(cell.source)
        self._as_released = same
        return super().preprocess_cell(cell, resources, cell_index)

    def report_change(self, name, attr, old, new):
        if attr == "checksum" and self._as_released:
            return
        ids, course = self._resources["nbgrader"], _course_of(self._resources)
        what = "edited" if attr == "checksum" else f"changed its {attr}"
        text = f"cell {name}: {what}; restored from the source"
        if course is not None:
            note(course, ids["assignment"], ids["student"], text)
        else:
            self.log.warning("%s: %s", ids.get("student"), text)


COPY_SUFFIX = re.compile(r"(\s*\(\d+\)|[-_ ]\d{1,2}|[-_ ]?copy\d*|[-_ ]?kopie)$", re.I)


def _name_variants(stem: str) -> set[str]:
    """``stem`` and what is left of it without the copy marks a download or a platform
    adds ('assignment1 (1)', 'assignment1-2', 'Assignment1 copy'), letters and
    digits only, lower case."""
    names, stem = {stem}, stem.strip()
    for _ in range(3):
        stem = COPY_SUFFIX.sub("", stem).strip()
        names.add(stem)
    return {re.sub(r"[^a-z0-9]", "", n.lower()) for n in names}


def match_notebook(folder: Path, expected: str) -> tuple[Path | None, str]:
    """The notebook in ``folder`` that stands for ``expected``.ipynb, and why, in words.

    The notebooks whose name is ``expected`` up to case, spaces and a copy mark (the
    exact name too), else the only notebook there is; of several candidates, the
    newest (a resubmission beside the first upload; the exact name on a tie). None
    (and what was found) when nothing fits.
    """
    exact = folder / f"{expected}.ipynb"
    found = [p for p in folder.glob("*.ipynb") if p.is_file() and not p.is_symlink()]
    notebooks = sorted(found)
    target = re.sub(r"[^a-z0-9]", "", expected.lower())
    matches = [p for p in notebooks if target in _name_variants(p.stem)]
    if not matches and len(notebooks) == 1:
        only = notebooks[0]
        return only, f"the only notebook, {only.name!r}, graded as {exact.name}"
    if not matches:
        found = ", ".join(repr(p.name) for p in notebooks) or "no notebook"
        return None, f"NOT GRADED: no {exact.name} in the submission (found {found})"
    newest = max(matches, key=lambda p: (p.stat().st_mtime, p == exact, p.name))
    if newest == exact:
        return exact, ""
    text = f"{newest.name!r} graded as {exact.name}"
    if len(matches) > 1:
        others = ", ".join(repr(p.name) for p in matches if p != newest)
        text += f" (the newest; also found {others})"
    return newest, text


def expected_notebooks(course: Path, assignment: str) -> list[str]:
    """The notebooks of ``assignment``, by name without .ipynb."""
    for stage in ("release", "source"):
        names = sorted(p.stem for p in (course / stage / assignment).glob("*.ipynb"))
        if names:
            return names
    return []


# what an assignment's notebook may hold (the released ones have under 30 cells): past
# these, nbgrader's own processing (outside any sandbox) takes minutes and gigabytes
# (100,000 empty cells, 13 MB: 274 CPU-s and 3.26 GB; issue 51)
MAX_BYTES = 20 << 20
MAX_CELLS = 2000
MAX_OUTPUTS = 20000


def too_large(path: Path) -> str:
    """Why the notebook at ``path`` is refused before it is parsed ("" if it is not):
    its size, or its cells or outputs counted in its bytes (a key of nbformat's JSON;
    text that merely quotes one counts too, which only errs towards refusing)."""
    size = path.stat().st_size
    if size > MAX_BYTES:
        return f"is too large to grade ({size >> 20} MiB, at most {MAX_BYTES >> 20} MiB)"
    data = path.read_bytes()
    cells, outputs = data.count(b'"cell_type"'), data.count(b'"output_type"')
    if cells > MAX_CELLS:
        return f"has too many cells to grade ({cells}, at most {MAX_CELLS})"
    if outputs > MAX_OUTPUTS:
        return f"has too many outputs to grade ({outputs}, at most {MAX_OUTPUTS})"
    return ""


def prepare_submissions(course: Path, assignment: str, limits=None) -> dict[str, list[str]]:
    """Give each submitted notebook its expected name; {student: what was done}
    (every student, a list that may be empty). ``limits`` (confine.Limits): what
    reading one notebook may cost (the default's without).

    A notebook that is not valid JSON is set aside as ``NAME.ipynb.unreadable``, so
    that nbgrader scores it 0 and grades the others.
    """
    done: dict[str, list[str]] = {}
    expected = expected_notebooks(course, assignment)
    for folder in sorted((course / "submitted").glob(f"*/{assignment}")):
        student = folder.parent.name
        done[student] = []
        for name in expected:
            path, text = match_notebook(folder, name)
            if text:
                done.setdefault(student, []).append(text)
            if path is None:
                continue
            target = folder / f"{name}.ipynb"
            if path != target:
                path.rename(target)
            refused = too_large(target)
            if refused:  # before anything parses it: nbgrader's memory is not bounded
                target.rename(target.with_name(target.name + ".refused"))
                done.setdefault(student, []).append(f"{SCORED_0}: {target.name} {refused}")
                continue
            # read in a child process under the grader's limits (confine.py): a
            # notebook under the caps can still take gigabytes to parse
            why = confine.read_notebook(target, limits or confine.DEFAULT)
            if why.startswith("the grader's"):  # a limit: refused, with the reason
                target.rename(target.with_name(target.name + ".refused"))
                done.setdefault(student, []).append(f"{SCORED_0}: {target.name}: {why}")
            elif why:
                target.rename(target.with_name(target.name + ".unreadable"))
                text = f"{SCORED_0}: {target.name} is not a notebook ({why})"
                done.setdefault(student, []).append(text)
    return done
