"""Keep the words of the chapters' check cells and self-check quizzes unreadable at a glance.

    python tools/chapters/encode_checks.py notebooks/02_*.ipynb      # encode what is still plain, in place
    python tools/chapters/encode_checks.py --check notebooks/*.ipynb # exit 1 if a cell still shows plain words
    python tools/chapters/encode_checks.py --show notebooks/03_*.ipynb  # print the decoded words, to read or edit them

A student reads the check cells and the quiz cells before answering (JupyterLab shows
their sources; the student edition keeps them). So in a check cell (tagged
``exercise-check``) every string with a space in it (what ``why``, ``hint``, ``against``,
the mistakes and the properties say) is kept as ``aiayn_helpers.course.exercises.encode``'s
text, and a quiz cell (tagged ``exercise-quiz``) hands ``quiz`` the encoded JSON of its
questions; ``check`` and ``quiz`` decode them when they print. The quiz cell's input is
also hidden in JupyterLab (``"jupyter": {"source_hidden": true}``) as on the site
(``remove-input``).

To change a text: ``--show`` prints it, write the new plain text in the cell, run this
tool, then re-execute the chapter (``make outputs NB=...``).
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from aiayn_helpers.course.exercises import decode, encode  # noqa: E402

CHECK_TAG, QUIZ_TAG = "exercise-check", "exercise-quiz"
PREFIX = "aiayn:"
CHUNK = 60  # characters of encoded text per source line


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _called(node: ast.AST) -> str:
    func = getattr(node, "func", None)
    return getattr(func, "id", getattr(func, "attr", ""))


def plain_texts(source: str) -> list[ast.Constant]:
    """The string literals of a check cell that are words a student should not read yet.

    Every string with a space, except an exercise label, a ``Reference`` digest and a
    text already encoded.
    """
    tree = ast.parse(source)
    parents = _parents(tree)
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            continue
        if " " not in node.value.strip() or node.value.startswith(PREFIX):
            continue
        parent = parents.get(node)
        if isinstance(parent, ast.Call) and _called(parent) == "Reference":
            continue
        if isinstance(node, ast.Constant) and isinstance(parents.get(node), ast.JoinedStr):
            continue  # part of an f-string: code, not a message
        found.append(node)
    return found


def _literal(text: str, indent: int) -> str:
    """``encode(text)`` as a parenthesised run of string literals, one chunk a line."""
    coded = encode(text)
    chunks = [coded[i : i + CHUNK] for i in range(0, len(coded), CHUNK)]
    if len(chunks) == 1:
        return json.dumps(coded)
    pad = " " * (indent + 4)
    return "(\n" + "".join(f"{pad}{json.dumps(c)}\n" for c in chunks) + " " * indent + ")"


def _replace(source: str, spans: list[tuple[int, int, int, int, str]]) -> str:
    """Replace (line, col, end_line, end_col) spans (1-based lines, as ast gives them), last first."""
    lines = source.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line.encode("utf-8")) + 1)
    data = source.encode("utf-8")
    for line, col, end_line, end_col, new in sorted(spans, reverse=True):
        start, end = offsets[line - 1] + col, offsets[end_line - 1] + end_col
        data = data[:start] + new.encode("utf-8") + data[end:]
    return data.decode("utf-8")


def _format(source: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--line-length", "88", "--stdin-filename", "cell.py", "-"],
        input=source, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout.rstrip("\n")


def encode_check_source(source: str) -> str:
    """A check cell's source with its plain words encoded (unchanged if none)."""
    nodes = plain_texts(source)
    if not nodes:
        return source
    lines = source.split("\n")
    spans = []
    for node in nodes:
        indent = len(lines[node.lineno - 1]) - len(lines[node.lineno - 1].lstrip())
        spans.append((node.lineno, node.col_offset, node.end_lineno, node.end_col_offset, _literal(node.value, indent)))
    return _format(_replace(source, spans))


def _quiz_call(source: str) -> ast.Call:
    calls = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call) and _called(n) == "quiz"]
    if len(calls) != 1 or not calls[0].args:
        raise ValueError("a quiz cell calls quiz(questions, key=...) once")
    return calls[0]


def quiz_questions(source: str) -> list[dict]:
    """The questions of a quiz cell, plain or encoded."""
    arg = _quiz_call(source).args[0]
    if isinstance(arg, ast.List):
        return ast.literal_eval(arg)
    return json.loads(decode(ast.literal_eval(arg)))


def encode_quiz_source(source: str) -> str:
    """A quiz cell whose questions are a list literal, rewritten to pass their encoded JSON."""
    call = _quiz_call(source)
    arg = call.args[0]
    if not isinstance(arg, ast.List):
        return source
    questions = ast.literal_eval(arg)
    literal = _literal(json.dumps(questions), 4)
    return _format(_replace(source, [(arg.lineno, arg.col_offset, arg.end_lineno, arg.end_col_offset, literal)]))


def plain_in(nb: nbformat.NotebookNode) -> list[str]:
    """What a notebook's check and quiz cells still show in plain words."""
    found = []
    for cell in nb.cells:
        tags = cell.metadata.get("tags", [])
        if cell.cell_type != "code":
            continue
        if CHECK_TAG in tags:
            found += [f"{cell.id}: {n.value[:60]!r}" for n in plain_texts(cell.source)]
        if QUIZ_TAG in tags:
            if isinstance(_quiz_call(cell.source).args[0], ast.List):
                found.append(f"{cell.id}: the questions are a plain list")
            if not cell.metadata.get("jupyter", {}).get("source_hidden"):
                found.append(f"{cell.id}: the input is not hidden in JupyterLab")
    return found


def encode_notebook(path: Path) -> bool:
    """Encode the notebook's plain words in place; True if it changed."""
    nb = nbformat.read(path, as_version=4)
    changed = False
    for cell in nb.cells:
        tags = cell.metadata.get("tags", [])
        if cell.cell_type != "code":
            continue
        if CHECK_TAG in tags or QUIZ_TAG in tags:
            new = encode_check_source(cell.source) if CHECK_TAG in tags else encode_quiz_source(cell.source)
            if new != cell.source:
                cell.source, changed = new, True
        if QUIZ_TAG in tags and not cell.metadata.get("jupyter", {}).get("source_hidden"):
            cell.metadata.setdefault("jupyter", {})["source_hidden"] = True
            changed = True
    if changed:
        nbformat.write(nb, path)
    return changed


def show(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        tags = cell.metadata.get("tags", []) if cell.cell_type == "code" else []
        if CHECK_TAG in tags:
            print(f"--- {cell.id}")
            for node in ast.walk(ast.parse(cell.source)):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith(PREFIX):
                    print(f"  {decode(node.value)}")
        if QUIZ_TAG in tags:
            print(f"--- {cell.id}")
            print(json.dumps(quiz_questions(cell.source), indent=1, ensure_ascii=False))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="exit 1 if a check or quiz cell shows plain words")
    mode.add_argument("--show", action="store_true", help="print the decoded words")
    args = parser.parse_args(argv)
    status = 0
    for path in args.notebooks:
        if args.show:
            show(path)
        elif args.check:
            for found in plain_in(nbformat.read(path, as_version=4)):
                print(f"{path}: {found}")
                status = 1
        elif encode_notebook(path):
            print(f"{path}: encoded; re-execute it (make outputs NB={path})")
    return status


if __name__ == "__main__":
    sys.exit(main())
