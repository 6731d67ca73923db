"""The copy of a submission that runs where the student's code runs (issue 51).

``kernel_copy(nb, judges, plan)`` builds it from the submission and the course's plan
(``course_plan``, read from the course's source notebook, never from the submission):

* a setup cell of the grader's own comes first, before any cell of the student: it
  loads the hidden tests as code objects compiled in the grader's process (marshal,
  no source text: nothing for an event hook, ``inspect`` or a traceback to show), runs
  the grader's helpers and ``KERNEL`` into a namespace of the grader's own, and
  registers ``run`` as the module ``_grading_runner`` (a name no clean-up of the
  book's "aiayn_" modules meets);
* each judged test cell becomes one line, ``_grading_runner.run(grade id)``: its hidden
  tests run in that namespace. A name there is the grader's (its helpers, the builtins
  as they were at setup); only the names the course's answer cells define
  (``scaled_dot_product_attention``, ``MultiHeadAttention``, ...) are looked up in the
  notebook. So a student's ``_attention``, ``_randn``, ``_grade`` or ``_aiayn_run``
  changes nothing.

Which part a test belongs to comes from the course (by grade id), and no reference
answer enters the kernel: where a later part's tests need an earlier part's function,
the hidden tests put the course's own in its place for the time of the test (their
``_with`` helper, a correct implementation they carry), whatever the student's answer
is, present, missing, moved or broken; the record says when the student's was missing
(``stood_in``), and the report names it.
"""

from __future__ import annotations

import ast
import base64
import marshal
import sys
from collections.abc import Mapping

import nbformat
from nbformat import NotebookNode

from .verdict import KERNEL, _assigned, _grade_id, _hidden_code

HIDDEN_FLAG = "aiayn_hidden"  # cell metadata: the runner runs it without history
SETUP_ID = "aiayn-grader-setup"
HELPERS = "__helpers__"  # the key of the helpers' code (with KERNEL)
SETUP = r"""
def _aiayn_setup(blobs, answers, version):  # aiayn-grader-setup
    import base64, builtins, linecache, marshal, sys, types

    if list(sys.version_info[:2]) != version:
        raise RuntimeError(f"the grader's Python is {version}, the kernel's {sys.version_info[:2]}")
    notebook, real, answers = globals(), dict(vars(builtins)), frozenset(answers)

    class Space(dict):  # the grader's names; the answers' names from the notebook
        __slots__ = ()

        def __missing__(self, key):
            if key in real:
                return real[key]
            if key in answers:
                return notebook[key]
            raise KeyError(key)

    space = Space(__name__="aiayn_grader", __builtins__=real, _AIAYN_NOTEBOOK=notebook)
    codes = {k: marshal.loads(base64.b64decode(v)) for k, v in blobs.items()}

    def run(key):
        exec(codes[key], space)

    module = types.ModuleType("_grading_runner")
    module.run = run
    sys.modules["_grading_runner"] = module
    for cache in (linecache.cache, getattr(linecache, "_ipython_cache", {})):
        for key, entry in list(cache.items()):
            lines = entry[2] if isinstance(entry, tuple) and len(entry) > 2 else []
            if any("aiayn-grader-setup" in str(line) for line in lines or []):
                cache.pop(key, None)
    run(HELPERS)


_aiayn_setup(BLOBS, ANSWERS, VERSION)
del _aiayn_setup
"""
STUB = '__import__("sys").modules["_grading_runner"].run({key!r})\n'
HELPER_STUB = "pass  # the grader's helpers ran before the notebook (its first cell)\n"


def package_folder() -> str:
    """The folder of the book's package (aiayn_helpers) as the kernel sees it (the
    sandbox binds it at its real path), ending in a separator; '' if none."""
    import importlib.util
    import os

    spec = importlib.util.find_spec("aiayn_helpers")
    if spec is None or not spec.origin:
        return "\0"  # no file name starts with it
    return os.path.join(os.path.dirname(os.path.realpath(spec.origin)), "")


def course_plan(source: NotebookNode) -> dict:
    """What the kernel copy needs of the course's ``source`` notebook: the hidden code of
    each cell (by grade id), the helpers (hidden code before the first test), and the
    names the answer cells define. ValueError if ``source`` is not a notebook."""
    if not isinstance(source, Mapping) or not isinstance(source.get("cells"), list):
        raise ValueError(f"expected the course's source notebook, got {type(source).__name__}")
    hidden: dict[str, str] = {}
    helpers: list[str] = []
    answers: set[str] = set()
    for cell in source["cells"]:
        gid, meta = _grade_id(cell), (cell.get("metadata", {}).get("nbgrader") or {})
        if cell.get("cell_type") != "code" or not gid:
            continue
        if meta.get("solution"):
            try:
                tree = ast.parse(cell.get("source", ""))
            except SyntaxError:
                continue
            imported = {
                (a.asname or a.name).split(".")[0]
                for s in tree.body
                if isinstance(s, (ast.Import, ast.ImportFrom))
                for a in s.names
            }
            answers |= _assigned(tree) - imported
            continue
        code = _hidden_code(cell.get("source", ""))
        if not code:
            continue
        hidden[gid] = code
        if not _calls_grade(code):
            helpers.append(gid)
    return {"hidden": hidden, "helpers": helpers, "answers": sorted(answers)}


def _calls_grade(code: str) -> bool:
    """Whether ``code`` (hidden tests) calls ``_grade`` at its top level: a test, not
    a helper."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return False
    return any(
        isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and getattr(s.value.func, "id", "") == "_grade"
        for s in tree.body
    )


def _blob(code: str, name: str) -> str:
    return base64.b64encode(marshal.dumps(compile(code, f"<{name}>", "exec"))).decode()


def kernel_copy(nb: NotebookNode, judges: Mapping, plan: Mapping) -> NotebookNode:
    """The copy of ``nb`` the kernel runs (see the module): a setup cell first, each
    judged test cell (``judges``, by grade id) one line that runs its hidden tests from
    ``plan`` (``course_plan`` of the course's source), the helper cells a ``pass``.
    Every grader's cell is flagged ``HIDDEN_FLAG`` (run without history)."""
    if not isinstance(plan, Mapping) or "hidden" not in plan:
        raise ValueError(f"expected course_plan's plan, got {type(plan).__name__}")
    nb = nbformat.from_dict(nb)
    hidden, helpers = plan["hidden"], plan["helpers"]
    kernel = KERNEL.replace("_AIAYN_PACKAGE", repr(package_folder()))
    helper_code = "\n".join(hidden[g] for g in helpers) + "\n" + kernel
    blobs = {HELPERS: _blob(helper_code, "the grader's helpers")}
    for gid in judges:
        if gid in hidden:
            blobs[gid] = _blob(hidden[gid], f"hidden tests of {gid}")
    for cell in nb.cells:
        cell.get("metadata", {}).pop(HIDDEN_FLAG, None)
        gid = _grade_id(cell)
        if cell.cell_type != "code" or gid is None:
            continue
        if gid in judges:
            cell.source = STUB.format(key=gid) if gid in blobs else "raise RuntimeError('no hidden tests')\n"
            cell.metadata[HIDDEN_FLAG] = True
        elif gid in hidden:  # a helper cell
            cell.source = HELPER_STUB
            cell.metadata[HIDDEN_FLAG] = True
    setup = SETUP.replace("BLOBS", repr(blobs)).replace("ANSWERS", repr(list(plan["answers"])))
    setup = setup.replace("VERSION", repr(list(sys.version_info[:2]))).replace("HELPERS", repr(HELPERS))
    first = nbformat.v4.new_code_cell(setup.lstrip("\n"))
    first["id"] = SETUP_ID
    first.metadata[HIDDEN_FLAG] = True
    nb.cells.insert(0, first)
    return nb


def unshift(sent: NotebookNode, frames: list[dict]) -> list[dict]:
    """The frames of the kernel copy ``sent`` as frames of the grader's notebook: the
    setup cell's left out, the others one index lower."""
    if not sent.cells or sent.cells[0].get("id") != SETUP_ID:
        return frames
    return [
        {**f, "index": f["index"] - 1}
        for f in frames
        if isinstance(f, dict) and isinstance(f.get("index"), int) and f["index"] >= 1
    ]


def setup_failure(frames: list[dict]) -> str:
    """The error of the setup cell (the grader's), in one line, or ""."""
    for frame in frames:
        if isinstance(frame, dict) and frame.get("index") == 0 and frame.get("id") == SETUP_ID:
            for out in frame.get("outputs") or []:
                if isinstance(out, dict) and out.get("output_type") == "error":
                    return f"{out.get('ename')}: {str(out.get('evalue', ''))[:200]}".replace("\n", " ")
    return ""
