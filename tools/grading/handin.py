""" "Am I done?": the last cell of every released assignment (issue #34).

``make student`` releases each assignment through nbgrader's generate_assignment;
``HandInCheck``, the last of its preprocessors (``configure``, called by the
course's nbgrader_config.py through tools/grade.py), appends one code cell to the
released notebook. A student runs it last: it runs the notebook's visible tests
again (their released text, copied into the cell, so a deleted or never-run test
cell still counts), says plainly which passed and which failed and why (a
function not written yet, a NameError because a cell above was not run), says that
the grade comes from hidden tests run after handing in, and prints where and how
to hand in: ``[hand_in] text`` of book/autograder/deadlines.toml, set once a term
(``{assignment}``, ``{notebook}`` and ``{due}`` are filled in). While nbgrader
grades (``NBGRADER_EXECUTION`` set) the cell does nothing. The cell uses no
package, so it is allowed in assignment 1 too.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import nbformat
from nbgrader.converters.generate_assignment import GenerateAssignment
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Unicode

from .decisions import DEADLINES, read_deadlines

CELL_ID = "am-i-done"
DEFAULT = "Hand in {notebook} as your course page says (ask your instructor where)"
DEFAULT += ": save it first, and keep its name."
TEMPLATE = """\
# Am I done? Run this cell last, after "Restart Kernel and Run All Cells". It runs
# the visible tests above again and says how to hand in (written by make student).
_VISIBLE_TESTS = [
{tests}
]
_HIDDEN_ONLY = [
{hidden}
]
_HAND_IN = (
{hand_in}
)


def _cells_that_did_not_run():
    # each cell run since the kernel started (IPython's In) that Python could not
    # read, the last run of it only: its number, its first line and why
    try:
        shell = get_ipython()  # noqa: F821
    except NameError:
        return []
    tests = {{source for _, source in _VISIBLE_TESTS}}
    last = {{}}
    for number, source in enumerate(shell.user_ns.get("In", [])):
        if not source.strip() or source in tests or "_am_i_done()" in source:
            continue
        first = next(line.strip() for line in source.splitlines() if line.strip())
        try:
            compile(shell.transform_cell(source), f"In [{{number}}]", "exec")
        except SyntaxError as err:
            why = f"{{type(err).__name__}}: {{err.msg}} (line {{err.lineno}} of the cell)"
            last[first] = f"the cell In [{{number}}] that starts {{first[:60]!r}} did not run"
            last[first] += f"\\n      {{why}}: fix it and run the notebook again"
        else:
            last[first] = None
    return [text for text in last.values() if text]


def _am_i_done():
    import os

    if os.environ.get("NBGRADER_EXECUTION"):
        return  # being graded: the hidden tests decide
    passed, failed = [], []
    not_run = _cells_that_did_not_run()
    for name, source in _VISIBLE_TESTS:
        try:
            exec(source, globals())
        except NotImplementedError:
            failed.append(f"{{name}}\\n      the function is not written yet")
        except NameError as err:
            why = f"{{err}}: run every cell above first"
            failed.append(f"{{name}}\\n      {{why}}")
        except Exception as err:
            first = (str(err).splitlines() or [""])[0][:300]
            failed.append(f"{{name}}\\n      {{type(err).__name__}}: {{first}}")
        else:
            passed.append(name)
    total = len(_VISIBLE_TESTS)
    print(f"Visible tests: {{len(passed)}} of {{total}} passed.")
    for name in passed:
        print(f"  passed  {{name}}")
    for text in failed:
        print(f"  FAILED  {{text}}")
    for text in not_run:
        print(f"  FAILED  {{text}}")
    for name in _HIDDEN_ONLY:
        print(f"  hidden  {{name}}: checked only after you hand in")
    print(
        "These are the first checks only. Your grade comes from hidden tests, run "
        "after you hand in:\\npassing every visible test does not mean full marks."
    )
    print("\\nHow to hand in:", _HAND_IN)


_am_i_done()
"""


def _literal(text: str, indent: str = "    ") -> str:
    """``text`` as adjacent Python string literals, one line each."""
    lines = text.splitlines(keepends=True) or [""]
    return "\n".join(f"{indent}{line!r}" for line in lines)


def _code(source: str) -> bool:
    """Whether ``source`` has a line that is not a comment."""
    lines = (line.strip() for line in source.splitlines())
    return any(line and not line.startswith("#") for line in lines)


def check_cell(nb: nbformat.NotebookNode, hand_in: str) -> nbformat.NotebookNode:
    """The "Am I done?" cell for ``nb`` (a released notebook: visible tests only).

    A test cell with visible code is run again; one whose checks are all hidden is
    named as such; the grader's helper cell (no test) is left out.
    """
    tests, hidden = [], []
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader") or {}
        if cell.cell_type != "code" or not meta.get("grade"):
            continue
        first = (cell.source.splitlines() or [""])[0].lstrip("# ").strip()
        first = first.rstrip(".")
        name = first or meta.get("grade_id", "test")
        if _code(cell.source):
            pair = f"{_literal(name, ' ' * 8)},\n{_literal(cell.source, ' ' * 8)},"
            tests.append(f"    (\n{pair}\n    ),")
        elif name.startswith("Test"):
            hidden.append(f"{_literal(name)},")
    source = TEMPLATE.format(
        tests="\n".join(tests),
        hidden="\n".join(hidden),
        hand_in=_literal(hand_in),
    )
    cell = nbformat.v4.new_code_cell(source)
    cell["id"] = CELL_ID
    cell.metadata["tags"] = ["am-i-done"]
    return cell


def hand_in_text(deadlines: Path, assignment: str, notebook: str) -> str:
    """``[hand_in] text`` of ``deadlines`` with the assignment filled in."""
    text = DEFAULT
    if deadlines.is_file():
        config = tomllib.loads(deadlines.read_text(encoding="utf-8"))
        text = config.get("hand_in", {}).get("text", DEFAULT)
        if not isinstance(text, str) or not text.strip():
            got = config.get("hand_in")
            expected = 'expected [hand_in] text = "..."'
            raise ValueError(f"{deadlines}: {expected}, got {got!r}")
    due, _ = read_deadlines(deadlines, assignment)
    when = f"{due:%Y-%m-%d %H:%M} UTC" if due else "the due date"
    names = {"assignment": assignment, "notebook": f"{notebook}.ipynb", "due": when}
    try:
        return " ".join(text.split()).format(**names)
    except (KeyError, IndexError, ValueError) as err:
        expected = "a text with no braces but {assignment}, {notebook}, {due}"
        raise ValueError(f"{deadlines}: [hand_in] text: {expected}: {err}") from None


class HandInCheck(NbGraderPreprocessor):
    """generate_assignment: append the "Am I done?" cell (see the module)."""

    deadlines = Unicode(str(DEADLINES), help="the deadlines file").tag(config=True)

    def preprocess(self, nb, resources):
        ids = resources.get("nbgrader") or {}
        assignment = ids.get("assignment", "")
        notebook = ids.get("notebook", assignment)
        nb.cells = [c for c in nb.cells if c.get("id") != CELL_ID]
        for cell in nb.cells:  # Run All goes on past an answer's error to "Am I done?"
            if cell.cell_type == "code" and (cell.metadata.get("nbgrader") or {}).get("solution"):
                tags = cell.metadata.setdefault("tags", [])
                tags += [] if "raises-exception" in tags else ["raises-exception"]
        text = hand_in_text(Path(self.deadlines), assignment, notebook)
        nb.cells.append(check_cell(nb, text))
        return nb, resources


def configure(c) -> None:
    """Add ``HandInCheck`` to generate_assignment in nbgrader's config ``c``."""
    defaults = list(GenerateAssignment.class_traits()["preprocessors"].default())
    c.GenerateAssignment.preprocessors = [*defaults, HandInCheck]
