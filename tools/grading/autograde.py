"""nbgrader's autograde with the execution in the sandbox, and feedback without the
hidden tests.

nbgrader still does the bookkeeping, outside the sandbox: it restores the test cells
from the gradebook (OverwriteCells, checksums), inserts the hidden tests, scores,
exports. ``SandboxedExecute`` (set in the course's nbgrader_config.py by ``configure``,
so a plain ``nbgrader autograde`` is sandboxed too) sends the notebook to
sandbox.run_sandboxed; the grader keeps only the outputs of the cells it sent, matched
by index and id, and scores them outside. A cell that never ran (time limit, crash)
scores as a failed test. ``nbgrader generate_feedback`` shows the visible part of each
test cell and withholds the hidden tests and any output that quotes them
(``HideHiddenTests``).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import nbformat
from nbconvert.preprocessors import ClearMetadataPreprocessor, CSSHTMLHeaderPreprocessor
from nbgrader.preprocessors import (
    AssignLatePenalties,
    CheckCellMetadata,
    ClearOutput,
    DeduplicateIds,
    Execute,
    GetGrades,
    IgnorePattern,
    LimitOutput,
    NbGraderPreprocessor,
    OverwriteKernelspec,
    SaveAutoGrades,
)
from traitlets import Bool, Integer, List, Unicode

from . import budget, kernel, verdict
from .decisions import LatePolicy
from .feedback import image_metadata, safe_markdown2html
from .gradebook import use_this_python
from .outputs import _clean_output, merge_outputs, not_executed  # noqa: F401
from .repair import RecoverCells, RestoreCells, _course_of, note, one_line, update_verdict
from .sandbox import (
    PASSED_ENV,
    SandboxFailed,
    _bytes,
    code_files,
    refusal,
    run_sandboxed,
    sandbox_problem,
)
from .verdict import HIDDEN

# errors that mean a limit of the sandbox was hit, named in the student's report
LIMITS = {
    "CellTimeoutError": "stopped at the time limit of a cell",
    "KeyboardInterrupt": "interrupted at the time limit of a cell",
    "MemoryError": "out of memory (the sandbox's memory limit)",
    "DeadKernelError": "the kernel died (a limit of the sandbox, or a crash)",
}


class SandboxedExecute(Execute):
    """nbgrader's Execute, the notebook run in a bubblewrap sandbox (see the module)."""

    sandbox = Bool(True, help="False: no sandbox (own notebooks only)").tag(config=True)
    notebook_timeout = Integer(600, help="Seconds a notebook may run").tag(config=True)
    student_timeout = Integer(1200, help="Seconds for all of a student's notebooks")
    student_timeout.tag(config=True)  # 0: no budget (budget.py)
    memory = Unicode("4G", help="Address space per process").tag(config=True)
    processes = Integer(256, help="Processes and threads").tag(config=True)
    read_only = List(Unicode(), help="More paths it may read").tag(config=True)
    timeout = Integer(60, help="Seconds a cell may run", allow_none=True)
    timeout.tag(config=True)

    def preprocess(self, nb, resources, retry=None):
        judges, hidden, plan = self._judges(resources)
        seed = verdict.new_seed()
        sent = kernel.kernel_copy(nb, judges, plan) if plan else nbformat.from_dict(nb)
        if not self.sandbox:
            self.log.warning("Executing WITHOUT a sandbox (--unsandboxed)")
            os.environ[verdict.SEED_ENV] = str(seed)
            try:
                ran, resources = super().preprocess(sent, resources)
            finally:
                del os.environ[verdict.SEED_ENV]
            ran_cells = ran.cells[1:] if plan else ran.cells  # the setup cell first
            for cell, done in zip(nb.cells, ran_cells):
                if cell.cell_type == "code":
                    cell.outputs = done.outputs
                    cell.execution_count = done.execution_count
            reason = ""
        else:
            try:
                nb, reason = self._run_sandboxed(nb, sent, resources, seed)
            except SandboxFailed as err:  # the host's fault: not graded, never 0
                why = f"NOT GRADED: {err} (a problem of this machine: grade again)"
                self._note(resources, why)
                raise
        found: list[str] = []  # objects of the book's package in the kernel
        stood: dict[str, list] = {}  # the course's answers that stood in for missing ones
        verdicts = verdict.judge_notebook(nb, judges, seed, found, stood)
        self._report(nb, resources, verdicts, reason, hidden, found, stood)
        record_verdicts(resources, judges, verdicts, reason)
        return nb, resources

    def _judges(self, resources) -> tuple[dict, set[str], dict]:
        """The judges, the hidden names and the plan of the kernel copy (kernel.py), from
        the course's source notebook (never the submission's)."""
        course, ids = _course_of(resources), resources.get("nbgrader") or {}
        if course is None or not ids.get("assignment") or not ids.get("notebook"):
            return {}, set(), {}
        path = course / "source" / ids["assignment"] / f"{ids['notebook']}.ipynb"
        if not path.is_file():
            self.log.warning("%s is missing: the kernel's outputs score it", path)
            return {}, set(), {}
        source = nbformat.read(path, as_version=4)
        judges, hidden = verdict.load_judges(source), verdict.hidden_names(source)
        return judges, hidden, kernel.course_plan(source)

    def _report(self, nb, resources, verdicts, reason: str, hidden: set[str], package=(), stood=None) -> None:
        """What the instructor should know: why the sandbox stopped, the constructs in
        the answers that can reach the grader's checks inside the kernel, the book's
        objects the kernel held (``package``), the earlier parts the course's answer stood
        in for (``stood``: {test cell: names}). One report line each (repair.note)."""
        lines = [f"sandbox: {reason}"] if reason else []
        path = (resources.get("metadata") or {}).get("path")
        code = code_files(Path(path)) if path and self.sandbox else []
        if code:
            left = ", ".join(code[:10])
            lines.append(f"left out of the sandbox (code, never run): {left}")
        for index, cell in enumerate(nb.cells):
            gid = (cell.get("metadata", {}).get("nbgrader") or {}).get("grade_id")
            locked = (cell.get("metadata", {}).get("nbgrader") or {}).get("locked")
            where = f"cell {gid}" if gid else f"cell {index}"
            for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
                if out.get("ename") in LIMITS:
                    lines.append(f"{where}: {LIMITS[out.get('ename')]}")
            if cell.cell_type == "code" and not locked:
                found = verdict.suspicious(cell.source, hidden)
                if found:
                    lines.append(f"suspicious ({where}): {'; '.join(found)}")
        if package:
            lines.append(f"the book's package in the kernel: {', '.join(package[:10])}")
        for gid, names in (stood or {}).items():
            lines.append(f"cell {gid}: the course's {', '.join(names)} stood in for the student's (missing)")
        for line in lines:
            self._note(resources, line)

    def _note(self, resources, line: str) -> None:
        line = plain(line)
        course, ids = _course_of(resources), resources.get("nbgrader") or {}
        if course is None or not ids.get("student"):
            self.log.warning("%s", line)
        else:
            note(course, ids["assignment"], ids["student"], line)

    def _run_sandboxed(self, nb, sent, resources, seed: int):
        problem = sandbox_problem()
        if problem:
            raise RuntimeError(refusal(problem))
        path = (resources.get("metadata") or {}).get("path")
        ids = resources.get("nbgrader") or {}
        submitted = None
        if path and ids.get("student") and ids.get("assignment"):
            # <course>/autograded/<student>/<assignment> -> <course>/submitted/...
            course = Path(path).resolve().parents[2]
            submitted = course / "submitted" / ids["student"] / ids["assignment"]
        env = {k: os.environ[k] for k in PASSED_ENV if k in os.environ}
        env[verdict.SEED_ENV] = str(seed)
        data = [p for p in self.read_only if p]
        data_dir = os.environ.get("AIAYN_DATA_DIR", "")
        if data_dir and Path(data_dir).is_dir():  # the chapters' data, read-only
            data.append(data_dir)
            env["AIAYN_DATA_DIR"] = str(Path(data_dir).resolve())
        key = budget.student_key(resources)  # the student's time, all notebooks
        seconds, why = budget.limit(key, self.notebook_timeout, self.student_timeout)
        name = f"{ids.get('notebook')}.ipynb"
        # the notebook's code cells, not the grader's setup cell (kernel.SETUP_ID) before them
        cells = sum(c.cell_type == "code" and c.get("id") != kernel.SETUP_ID for c in sent.cells)
        if seconds <= 0:  # spent by the notebooks before: this one is not started
            budget.record(key, name, 0.0, None, cells)
            self._note(resources, budget.stopped(key, self.student_timeout))
            return merge_outputs(nb, [], why), why
        start = time.monotonic()
        frames, reason, log = run_sandboxed(
            sent,
            Path(path) if path else None,
            submitted,
            cell_timeout=self.timeout or 60,
            notebook_timeout=seconds,
            memory=_bytes(self.memory),
            processes=self.processes,
            read_only=data,
            env=env,
            deadline_reason=why,
        )
        setup = kernel.setup_failure(frames)
        if setup:  # the grader's own cell failed: the machine's doing, not the student's
            raise SandboxFailed(f"the grader's setup cell failed in the sandbox ({setup})")
        frames = kernel.unshift(sent, frames)
        budget.record(key, name, time.monotonic() - start, len(frames), cells)
        if why and reason.startswith(why):
            self._note(resources, budget.stopped(key, self.student_timeout))
        if reason:
            self.log.warning("%s; sandbox log:\n%s", reason, plain(log[-3000:]))
        return merge_outputs(nb, frames, reason or "this cell did not run"), reason


def record_verdicts(resources, judges, verdicts: dict, reason: str) -> None:
    """The student's structured verdict (repair.verdict_path): per test cell its status
    (passed, failed, not run) and reason, and why the sandbox stopped; one line each."""
    course, ids = _course_of(resources), resources.get("nbgrader") or {}
    if course is None or not ids.get("student") or not ids.get("assignment"):
        return
    tests = {}
    for gid, (name, _) in judges.items():
        why = verdicts.get(gid, f"{name}: no such test cell")
        ran = not (why or "").startswith(f"{name}: its hidden tests did not run")
        status = "passed" if why is None else ("failed" if ran else "not run")
        tests[str(gid)] = {"status": status, "reason": one_line(why or "")[:500]}
    fields = {"tests": tests, "sandbox": one_line(reason or "")[:500]}
    update_verdict(course, ids["assignment"], ids["student"], **fields)


HIDDEN_NOTE = "# (hidden tests: not shown)\n"
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _strings(value) -> list[str]:
    """Every string inside an output (its text, data, error message, traceback)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


WITHHELD = "[output withheld: it quotes the hidden tests]\n"
# what feedback shows of a rich output: no HTML, scripts, SVG or widgets of a
# submission, which would run when the instructor or the student opens the page
SAFE_DATA = ("text/plain", "image/png", "image/jpeg")
IMAGES = {"image/png", "image/jpeg"}
BASE64 = re.compile(r"[A-Za-z0-9+/=\s]*")
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def plain(text: str) -> str:
    """``text`` from a submission without control characters (tabs, newlines kept)."""
    return CONTROL.sub("", ANSI.sub("", text))


def safe_output(out):
    """``out`` with only the kinds of data that show as text or a picture."""
    if out.output_type not in ("display_data", "execute_result"):
        return out
    data = {k: v for k, v in out.get("data", {}).items() if k in SAFE_DATA}
    for kind in IMAGES & set(data):  # base64 text only (it goes into an attribute)
        if not isinstance(data[kind], str) or not BASE64.fullmatch(data[kind]):
            del data[kind]
    if len(data) < len(out.get("data", {})) and "text/plain" not in data:
        data["text/plain"] = "[rich output not shown in feedback]"
    out.data = data
    # nbconvert writes an image's width and height into its <img> tag unquoted:
    # numbers only, and no other metadata (file names, flags) of a submission
    out.metadata = image_metadata(out.get("metadata"), IMAGES & set(data))
    return out


class HideHiddenTests(NbGraderPreprocessor):
    """For feedback: hidden tests out of the sources, and out of every output.

    A test cell keeps its visible part; its errors keep only ``ename: first line``
    (tracebacks quote the hidden code). Any output that contains a line of hidden test
    (12 characters or more) is withheld. A submission that encodes what it read can
    still get past this: withhold feedback where that matters.
    """

    # nbconvert's exporter sets it on every preprocessor
    display_data_priority = List([]).tag(config=True)

    def preprocess(self, nb, resources):
        hidden = set()
        for cell in nb.cells:
            for block in HIDDEN.findall(cell.source):
                lines = {line.strip() for line in block.splitlines()}
                hidden |= {line for line in lines if len(line) >= 12}
        hidden -= {"### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"}
        for cell in nb.cells:
            had_hidden = bool(HIDDEN.search(cell.source))
            cell.source = HIDDEN.sub(HIDDEN_NOTE, cell.source)
            locked = (cell.metadata.get("nbgrader") or {}).get("locked")
            if cell.cell_type == "markdown" and not locked:  # no raw HTML of a student
                # and no math for MathJax (its \href makes links of any scheme)
                text = cell.source.replace("<", "&lt;")
                cell.source = f'<div class="tex2jax_ignore">\n\n{text}\n\n</div>'
            if cell.cell_type != "code":
                continue
            outputs = []
            for out in cell.outputs:
                if out.output_type == "error" and had_hidden:
                    first = out.evalue.splitlines()[0] if out.evalue else ""
                    out.traceback = [f"{out.ename}: {first}"[:500]]
                text = ANSI.sub("", "\n".join(_strings(out)))
                if any(line in text for line in hidden):
                    out = nbformat.v4.new_output("stream", name="stdout", text=WITHHELD)
                outputs.append(safe_output(out))
            cell.outputs = outputs
        return nb, resources


def configure(c) -> None:
    """Set nbgrader's config ``c`` (a course's nbgrader_config.py) to use sandboxes."""
    use_this_python()  # nbgrader makes a new gradebook without alembic on PATH
    c.Autograde.sanitize_preprocessors = [
        ClearOutput,
        DeduplicateIds,
        OverwriteKernelspec,
        RecoverCells,
        RestoreCells,
        CheckCellMetadata,
    ]
    c.AssignLatePenalties.plugin_class = LatePolicy
    c.Autograde.autograde_preprocessors = [
        SandboxedExecute,
        IgnorePattern,
        ClearMetadataPreprocessor,
        LimitOutput,
        SaveAutoGrades,
        AssignLatePenalties,
        CheckCellMetadata,
    ]
    c.GenerateFeedback.preprocessors = [
        HideHiddenTests,
        GetGrades,
        CSSHTMLHeaderPreprocessor,
    ]
    # Markdown on a feedback page: no tag, attribute or address that runs script
    c.HTMLExporter.filters = {"markdown2html": safe_markdown2html}


# ``python -m nbgrader`` without jsonschema's rfc3987_syntax (about 40 parsers built at
# import, 3 s of CPU a process; nbformat never checks the formats they serve)
NBGRADER = (
    "import sys; sys.modules['rfc3987_syntax'] = None; "
    "from nbgrader.apps.nbgraderapp import main; sys.argv[0] = 'nbgrader'; sys.exit(main())"
)


def nbgrader(*args: str, course: Path, quiet: bool = False, check: bool = True) -> str:
    """Run nbgrader in ``course`` with this Python (and its ``alembic``).

    Returns its output when ``quiet``; ``check``: raise RuntimeError if it fails.
    """
    env = dict(
        os.environ,
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    )
    done = subprocess.run(
        [sys.executable, "-c", NBGRADER, *args],
        cwd=course,
        env=env,
        capture_output=quiet,
        text=True,
    )
    output = f"{done.stdout or ''}{done.stderr or ''}"
    if done.returncode != 0 and check:
        detail = f":\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}" if quiet else ""
        raise RuntimeError(f"nbgrader {' '.join(args)} failed{detail}")
    return output if done.returncode == 0 else f"FAILED\n{output}"
