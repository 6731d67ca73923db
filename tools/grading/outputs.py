"""The outputs the sandbox sends back, merged into the grader's own copy of a notebook.

``merge_outputs`` takes only outputs, rebuilt from the fields nbformat knows
(``_clean_output``), and only for a frame whose index and cell id match a code cell;
a cell with no frame gets a ``NotExecuted`` error (``not_executed``), so a test cell
that never ran fails; an empty cell, which no kernel runs, gets no output. Split from
autograde.py (issue #34: no module over about 400 lines); autograde re-exports these
names.
"""

from __future__ import annotations

import nbformat
from nbformat import NotebookNode


def _clean_output(o: object) -> dict | None:
    """An output from the sandbox rebuilt from the fields nbformat knows, or None."""
    if not isinstance(o, dict):
        return None
    kind = o.get("output_type")

    def text(value) -> str:
        return "".join(map(str, value)) if isinstance(value, list) else str(value)

    if kind == "stream":
        return nbformat.v4.new_output(
            "stream",
            name="stderr" if o.get("name") == "stderr" else "stdout",
            text=text(o.get("text", "")),
        )
    if kind == "error":
        traceback = o.get("traceback") if isinstance(o.get("traceback"), list) else []
        return nbformat.v4.new_output(
            "error",
            ename=str(o.get("ename", "Error")),
            evalue=str(o.get("evalue", "")),
            traceback=[str(t) for t in traceback],
        )
    if kind in ("display_data", "execute_result") and isinstance(o.get("data"), dict):
        data = {}
        for key, value in o["data"].items():
            json_data = isinstance(value, dict) and str(key).endswith("json")
            data[str(key)] = value if json_data else text(value)
        metadata = o.get("metadata") if isinstance(o.get("metadata"), dict) else {}
        out = nbformat.v4.new_output(kind, data=data, metadata=metadata)
        if kind == "execute_result":
            count = o.get("execution_count")
            out.execution_count = count if isinstance(count, int) else None
        return out
    return None


def not_executed(reason: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_output(
        "error",
        ename="NotExecuted",
        evalue=reason,
        traceback=[f"NotExecuted: {reason}"],
    )


def merge_outputs(nb: NotebookNode, frames: list[dict], reason: str) -> NotebookNode:
    """``nb`` (the grader's own copy) with the outputs the sandbox sent for its cells.

    Only outputs are taken, and only for a frame whose index and cell id match; a code
    cell with no frame gets a ``NotExecuted`` error (a test cell that never ran fails).
    """
    done: dict[int, dict] = {}
    for frame in frames:
        index = frame.get("index")
        if not isinstance(index, int) or not 0 <= index < len(nb.cells):
            continue
        cell = nb.cells[index]
        if cell.cell_type == "code" and frame.get("id") == cell.get("id"):
            done[index] = frame
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        frame = done.get(index)
        if frame is None and not (cell.source or "").strip():  # an empty cell never runs
            cell.outputs, cell.execution_count = [], None
            continue
        if frame is None:
            cell.outputs, cell.execution_count = [not_executed(reason)], None
            continue
        outputs = frame.get("outputs") if isinstance(frame.get("outputs"), list) else []
        cell.outputs = [o for o in map(_clean_output, outputs) if o is not None]
        count = frame.get("execution_count")
        cell.execution_count = count if isinstance(count, int) else None
    try:
        nbformat.validate(nb)
    except nbformat.ValidationError as err:
        for cell in nb.cells:
            if cell.cell_type == "code":
                invalid = f"the sandbox returned invalid outputs: {err.message}"
                cell.outputs = [not_executed(invalid)]
    return nb
