"""The verdict of a hidden test, computed where the student's code cannot reach it.

A hidden test of book/autograder/source/ is written in two halves, in its test cell::

    def _collect(seed):          # runs where the student's code runs (the sandbox)
        ...call the student's functions on inputs drawn from ``seed``...
        return {"out": out, ...}   # tensors, numbers, strings, lists, dicts

    def _judge(got, seed):       # runs in the grader's own process
        ...draw the same inputs, compute PyTorch's answer, compare with ``got``...

    _grade("function name", _collect, _judge)

Run as a plain notebook (the instructor's own run), the notebook's ``_grade`` calls
both in the kernel. Graded, ``KERNEL`` (run in the grader's own namespace of the copy
the sandbox runs, kernel.py) replaces it there: ``_collect`` runs, and what it returned leaves
the kernel as plain data, one display output of type ``MIME`` per test cell (tensors as
raw bytes with a dtype from a short list and a shape, loaded with numpy, nothing
unpickled). Then ``judge_notebook``, in the grader's process, draws the inputs again
from the seed of this grading (``AIAYN_GRADING_SEED``, new for every submission), runs
``_judge`` from the course's source notebook (never from the submission) and writes
the test cell's outcome: its outputs without the kernel's errors and records, plus one
error naming the function and the property it broke when the judge failed.

So no input or AST transformer, tensor subclass, monkeypatched comparison or helper
replaced inside the student's kernel can turn a failure into a pass: a pass needs,
on the grader's side, results equal to the right answer for inputs drawn for this
grading. What stays out of reach is *how* the kernel computed them: the "own work"
facts (modules imported, names a function's code uses) are read in the kernel and can
be hidden there; ``suspicious`` names the constructs that do so, for the instructor.
"""

from __future__ import annotations

import ast
import base64
import re
import secrets
from collections.abc import Mapping

import nbformat
import numpy as np
from nbformat import NotebookNode

MIME = "application/x-aiayn-result+json"
SEED_ENV = "AIAYN_GRADING_SEED"
HIDDEN = re.compile(
    r"^[ \t]*#+ *BEGIN HIDDEN TESTS.*?^[ \t]*#+ *END HIDDEN TESTS[^\n]*\n?",
    re.M | re.S,
)
DTYPES = {
    "bool", "int8", "uint8", "int16", "int32", "int64",
    "float16", "float32", "float64", "complex64", "complex128",
}  # fmt: skip
MAX_DEPTH = 12

# Run after the grader's helpers, in the grader's namespace of the kernel (kernel.py).
KERNEL = r"""

def _grade(name, collect, judge):  # the grader's: the result leaves as data
    import base64 as _b64, math as _m, os as _os
    from IPython.display import display as _display

    def _enc(x, depth=0):
        if depth > 10:
            return {"__type__": "too deep"}
        if isinstance(x, torch.Tensor):
            a = x.detach().cpu().contiguous().numpy()
            data = _b64.b64encode(a.tobytes()).decode()
            return {"__tensor__": str(a.dtype), "shape": list(a.shape), "b64": data}
        if isinstance(x, float) and not _m.isfinite(x):
            return {"__float__": repr(x)}
        if x is None or isinstance(x, (bool, int, float, str)):
            return x
        if isinstance(x, (list, tuple)):
            return [_enc(v, depth + 1) for v in x]
        if isinstance(x, dict):
            return {str(k): _enc(v, depth + 1) for k, v in x.items()}
        return {"__type__": type(x).__name__}

    def _package():  # objects of the book's package in this kernel, by identity
        import builtins as _bi, gc as _gc, types as _t

        def ident(o):
            kind = type(o)
            if kind is _t.MethodType:
                return ident(o.__func__)
            if kind is _t.FunctionType:
                where = o.__code__.co_filename
                owner = str(o.__globals__.get("__name__", ""))
                if where.startswith(_AIAYN_PACKAGE) or owner.split(".")[0] == "aiayn_helpers":
                    return f"{o.__module__}.{o.__qualname__}"
            elif kind is _t.ModuleType:
                where = str(o.__dict__.get("__file__") or "")
                if o.__name__.split(".")[0] == "aiayn_helpers" or where.startswith(_AIAYN_PACKAGE):
                    return f"{o.__name__} (a module)"
            elif issubclass(kind, type):
                if str(o.__dict__.get("__module__", "")).split(".")[0] == "aiayn_helpers":
                    return f"{o.__module__}.{o.__qualname__}"
            elif str(kind.__dict__.get("__module__", "")).split(".")[0] == "aiayn_helpers":
                return f"an instance of {kind.__module__}.{kind.__qualname__}"
            return None

        held = {}  # what the notebook's names (and builtins) hold, however reached
        for where, space in (("", _AIAYN_NOTEBOOK), ("builtins.", vars(_bi))):
            for name, value in list(space.items()):
                inner = [value]
                if type(value) is _t.FunctionType:
                    for cell in value.__closure__ or ():
                        try:
                            inner.append(cell.cell_contents)
                        except ValueError:  # an empty cell
                            pass
                    inner += list(value.__defaults__ or ()) + list((value.__kwdefaults__ or {}).values())
                elif isinstance(value, type) and not ident(value):  # a class of its own
                    inner += list(vars(value).values())
                for o in inner:
                    try:
                        found = ident(o)
                    except Exception:
                        continue
                    if found:
                        held[f"{found} (as {where}{name})"] = None
        alive = 0  # and every such function, class or module alive in memory
        for o in _gc.get_objects():
            kind = type(o)
            if kind is _t.FunctionType or kind is _t.ModuleType or issubclass(kind, type):
                try:
                    alive += ident(o) is not None
                except Exception:
                    continue
        return sorted(held)[:15] + ([f"{alive} of its functions, classes and modules in memory"] if alive else [])

    try:
        got = collect(int(_os.environ.get("AIAYN_GRADING_SEED", "0")))
    except AssertionError as err:  # a helper's _fail: the property is named
        got = {"__failed__": str(err)[:500]}
    except Exception as err:
        first = str(err).splitlines()[0] if str(err) else ""
        got = {"__error__": f"{type(err).__name__}: {first}"[:500]}
    try:
        package = _package()
    except Exception as err:
        package = [f"(the search failed: {type(err).__name__})"]
    stood_in = [str(n) for n in globals().pop("_AIAYN_STOOD_IN", [])]
    mime = "application/x-aiayn-result+json"
    _display({mime: _enc(got)}, metadata={mime: {"package": package, "stood_in": stood_in}}, raw=True)
"""


class Foreign:
    """What the kernel returned that is not data (a module, a function): its type."""

    def __init__(self, type_name: str):
        self.type_name = type_name

    def __repr__(self) -> str:
        return f"<{self.type_name}>"


def decode(value, depth: int = 0):
    """A record from the kernel as Python data and torch tensors; ValueError if bad."""
    import torch

    if depth > MAX_DEPTH:
        raise ValueError("nested too deep")
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        return [decode(v, depth + 1) for v in value]
    if not isinstance(value, Mapping):
        raise ValueError(f"unexpected {type(value).__name__}")
    if "__tensor__" in value:
        dtype, shape = value.get("__tensor__"), value.get("shape")
        if dtype not in DTYPES:
            raise ValueError(f"a tensor of dtype {dtype!r}")
        if not isinstance(shape, list) or not all(
            isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape
        ):
            raise ValueError(f"a tensor of shape {shape!r}")
        if len(shape) > 32:
            raise ValueError(f"a tensor of {len(shape)} dimensions")
        count = 1
        for n in shape:  # Python's integers: no overflow, however large the shape
            count *= n
        raw = base64.b64decode(str(value.get("b64", "")), validate=True)
        array = np.frombuffer(raw, dtype=np.dtype(dtype))
        if array.size != count:
            shown = [n if n < 1 << 40 else f"{n:.3g}" for n in shape]
            raise ValueError(f"{array.size} values for a shape {shown}")
        return torch.from_numpy(array.reshape(shape).copy())
    if "__float__" in value:
        text = value["__float__"]
        if text not in ("nan", "inf", "-inf"):
            raise ValueError(f"a float {text!r}")
        return float(text)
    if "__type__" in value:
        return Foreign(str(value["__type__"])[:80])
    return {str(k): decode(v, depth + 1) for k, v in value.items()}


def _hidden_code(source: str) -> str:
    return "".join(HIDDEN.findall(source or ""))


def _grade_id(cell) -> str | None:
    return (cell.get("metadata", {}).get("nbgrader") or {}).get("grade_id")


def load_judges(source: NotebookNode) -> dict[str, tuple[str, object]]:
    """{grade_id: (function name, judge)} of the test cells of the course's ``source``.

    Only the hidden tests of the source run here, in order, in one namespace (the
    grader's helpers first); each test cell's ``_grade(name, collect, judge)`` call
    registers its judge instead of running it.
    """
    namespace: dict = {"__name__": "aiayn_judge"}
    judges: dict[str, tuple[str, object]] = {}
    for cell in source.cells:
        gid, code = _grade_id(cell), _hidden_code(cell.source)
        if cell.cell_type != "code" or not gid or not code:
            continue

        def register(name, collect, judge, _gid=gid):
            judges[_gid] = (str(name), judge)

        namespace["_grade"] = register
        exec(compile(code, f"<hidden tests of {gid}>", "exec"), namespace)
    return judges


def _error(text: str) -> NotebookNode:
    return nbformat.v4.new_output(
        "error",
        ename="AssertionError",
        evalue=text,
        traceback=[f"AssertionError: {text}"],
    )


def _is_record(output) -> bool:
    data = output.get("data") if isinstance(output, Mapping) else None
    kind = output.get("output_type")
    return kind == "display_data" and isinstance(data, Mapping) and MIME in data


def package_found(record) -> list[str]:
    """What a record's kernel found of the book's package (``KERNEL``'s search)."""
    meta = record.get("metadata") if isinstance(record, Mapping) else None
    meta = meta.get(MIME) if isinstance(meta, Mapping) else None
    package = meta.get("package") if isinstance(meta, Mapping) else None
    if not isinstance(package, list):
        return []
    return [str(p)[:200] for p in package[:20]]


def stood_in(record) -> list[str]:
    """The names of earlier parts the course's answer stood in for because the
    student's were missing (``_with`` in the hidden tests), from a record's metadata."""
    meta = record.get("metadata") if isinstance(record, Mapping) else None
    meta = meta.get(MIME) if isinstance(meta, Mapping) else None
    names = meta.get("stood_in") if isinstance(meta, Mapping) else None
    if not isinstance(names, list):
        return []
    return [str(n)[:80] for n in names[:10]]


def judge_cell(cell, name: str, judge, seed: int, found: list | None = None, stood: list | None = None) -> str | None:
    """Judge one test cell from its record; set its outputs; the failure, or None.
    ``found``: a list the objects of the book's package the kernel held are added to;
    ``stood``: a list the names the course's answers stood in for are added to.
    """
    records = [o for o in cell.outputs if _is_record(o)]
    errors = [o for o in cell.outputs if o.get("output_type") == "error"]
    # nothing the hidden tests printed (the student's code may print what it saw
    # of them) reaches the notebook or the feedback: only the verdict
    kept: list = []
    failure = None
    if len(records) != 1 and errors:
        first = errors[0]
        evalue = (str(first.get("evalue", "")).splitlines() or [""])[0][:300]
        why = f"{first.get('ename')}: {evalue}"
        failure = f"{name}: its hidden tests did not run ({why})"
    elif not records:
        failure = f"{name}: its hidden tests did not run (the cell sent no result)"
    elif len(records) > 1:
        failure = f"{name}: the cell sent {len(records)} results, not one"
    else:
        try:
            got = decode(records[0]["data"][MIME])
        except Exception as err:  # an absurd record fails its test, never the grading
            why = f"{type(err).__name__}: {str(err)[:300]}"
            got, failure = None, f"{name}: its result could not be read ({why})"
        if stood is not None:
            stood.extend(n for n in stood_in(records[0]) if n not in stood)
        package = package_found(records[0])
        if package and found is not None:
            found.extend(p for p in package if p not in found)
        own = got.get("own") if isinstance(got, dict) else None
        if package and isinstance(own, dict) and isinstance(own.get("imported"), list):
            # the own-work check sees the package's objects, whatever their names
            own["imported"] = sorted(set(map(str, own["imported"])) | set(package))
        if failure is None and isinstance(got, dict) and "__failed__" in got:
            failure = str(got["__failed__"])
            if not failure.startswith(f"{name} fails the "):
                failure = f"{name} fails a hidden test: {failure}"
        elif failure is None and isinstance(got, dict) and "__error__" in got:
            failure = f"{name} fails the runs without error check: {got['__error__']}"
        elif failure is None:
            try:
                judge(got, seed)
            except AssertionError as err:
                failure = str(err) or f"{name} fails a hidden test"
            except Exception as err:  # a result of the wrong kind or structure
                why = f"{type(err).__name__}: {err}"
                failure = f"{name} fails the kind of result check ({why})"
    cell.outputs = kept + ([_error(failure)] if failure else [])
    return failure


def judge_notebook(
    nb: NotebookNode, judges: Mapping, seed: int, found: list | None = None, stood: dict | None = None
) -> dict:
    """Each judged test cell of ``nb`` (outputs from the kernel) given its verdict;
    ``found``: see ``judge_cell``; ``stood``: {grade id: names stood in for}."""
    verdicts = {}
    for cell in nb.cells:
        gid = _grade_id(cell)
        if cell.cell_type == "code" and gid in judges:
            name, judge = judges[gid]
            names: list = []
            verdicts[gid] = judge_cell(cell, name, judge, seed, found, names)
            if names and stood is not None:
                stood[gid] = names
    return verdicts


def new_seed() -> int:
    """The seed of one submission's grading: its hidden inputs are drawn from it."""
    return secrets.randbelow(1 << 30)


# What a student's code can use to reach the grader's checks inside the kernel:
# named in the student's report (the verdict itself is out of their reach).
ATTRIBUTES = {
    "input_transformers_cleanup": "an IPython input transformer",
    "input_transformers_post": "an IPython input transformer",
    "input_transformer_manager": "an IPython input transformer",
    "ast_transformers": "an IPython AST transformer",
    "register_magic_function": "an IPython magic",
    "set_custom_exc": "an IPython exception handler",
    "events": "an IPython event hook",
    "__torch_function__": "a tensor subclass that answers torch functions",
    "__torch_dispatch__": "a tensor subclass that answers torch operations",
    "as_subclass": "a tensor subclass",
    "settrace": "a trace hook",
    "setprofile": "a profile hook",
    "excepthook": "an exception hook",
    "displayhook": "a display hook",
    "assert_close": "torch.testing.assert_close (a comparison)",
    "_exit": "os._exit (the kernel stopped from inside)",
}
CALLS = {
    "get_ipython": "the IPython shell (get_ipython)",
    "exec": "exec (code built at run time)",
    "eval": "eval (code built at run time)",
    "compile": "compile (code built at run time)",
    "__import__": "__import__ (a module imported by a computed name)",
    "import_module": "importlib (a module imported by a computed name)",
    "globals": "globals() (the notebook's names changed from code)",
}
REFLECT = ("getattr", "setattr", "delattr")
MODULES = {"ctypes", "builtins", "importlib", "IPython", "gc", "inspect", "sys"}


def _assigned(tree: ast.Module) -> set[str]:
    """The names a cell's code binds at the notebook's top level (``global`` too)."""
    found = set()
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(stmt.name)
        targets = []
        if isinstance(stmt, ast.Assign):
            targets = stmt.targets
        elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
            targets = [stmt.target]
        for target in targets:
            found |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            found |= {(a.asname or a.name).split(".")[0] for a in stmt.names}
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            found |= set(node.names)
    return found


def hidden_names(source: NotebookNode) -> set[str]:
    """The private names (``_x``) the hidden tests of ``source`` define."""
    names = set()
    for cell in source.cells:
        code = _hidden_code(cell.source)
        if code:
            try:
                names |= _assigned(ast.parse(code))
            except SyntaxError:
                continue
    return {n for n in names if n.startswith("_") and n.strip("_")}


def suspicious(source: str, hidden: set[str] | frozenset = frozenset()) -> list[str]:
    """The constructs in ``source`` (a student's answer) that can reach the grader's
    checks inside the kernel, in words; ``hidden``: the hidden tests' own names."""
    found: dict[str, None] = {}
    try:
        tree = ast.parse(source)
    except SyntaxError:
        if "get_ipython" in source or "%" in source:
            return ["IPython syntax (magics or shell escapes)"]
        return []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and ATTRIBUTES.get(node.attr):
            found[ATTRIBUTES[node.attr]] = None
        elif isinstance(node, ast.Attribute) and node.attr in ("modules", "sys"):
            # sys.modules however reached (os.sys.modules, an alias of sys)
            found["sys.modules (imported modules hidden or replaced)"] = None
        elif isinstance(node, ast.Constant) and "aiayn_helpers" in str(node.value):
            found["the book's package named in a string (aiayn_helpers)"] = None
        elif isinstance(node, ast.Name) and node.id in CALLS:
            found[CALLS[node.id]] = None
        elif isinstance(node, ast.Attribute) and node.attr in CALLS:
            found[CALLS[node.attr]] = None
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                names = [node.module or ""]
            for module in names:
                if module.split(".")[0] in MODULES:
                    found[f"import {module.split('.')[0]}"] = None
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) in REFLECT:
            if len(node.args) >= 2 and not isinstance(node.args[1], ast.Constant):
                found[f"{node.func.id} with a computed name"] = None
        elif isinstance(node, ast.ClassDef):
            for base in node.bases:
                if ast.unparse(base) in ("torch.Tensor", "Tensor"):
                    found["a tensor subclass"] = None
    # the grader's own names (``hidden``) assigned by the student are no construct: the
    # hidden tests run in a namespace of the grader's (kernel.py), which they cannot reach
    return list(found)
