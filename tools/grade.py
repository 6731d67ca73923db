"""Grade an nbgrader assignment with every submission in its own sandbox (issue #29).

    python tools/grade.py assignment1                # `make grade A=assignment1`
    python tools/grade.py assignment1 --feedback     # and feedback, hidden tests out
    python tools/grade.py assignment1 --force        # everyone again, changed or not
    python tools/grade.py assignment1 --unsandboxed  # NO sandbox: own notebooks only

What a class hands in, ``make collect`` (tools/collect.py) puts in
``<course>/submitted/<student>/<assignment>/``. Before nbgrader runs, each
submission is made gradable, and whatever was done is written, per student, to
``<course>/reports/<assignment>/<student>.txt`` and printed at the end:

* a misnamed notebook (``assignment1 (1).ipynb``, ``Assignment1.ipynb``, the only
  notebook there is) is renamed to the assignment's; with none that fits, or an
  unreadable one, the student is named as NOT GRADED (scored 0) and the others
  are graded as usual;
* a submission is graded again when its files changed (a resubmission: the newest
  counts), or when a due date, the late policy or a limit changed; the others keep
  their grades (nbgrader alone skips any student already graded);
* the due date and the late policy come from one file,
  book/autograder/deadlines.toml (``--deadlines``): the due date goes into the
  gradebook and ``LatePolicy`` takes off the late penalty;
* cells whose nbgrader metadata was stripped (copied into a fresh notebook) get it
  back, matched by grade id, cell id, source or place (``recover_cells``); a
  deleted test cell is put back from the release and an edited one restored, so
  neither raises a grade, and both are reported (``RecoverCells``,
  ``RestoreCells``, which also keeps nbgrader from warning about every test cell
  whose hidden tests it restores).

Grading runs the students' code. nbgrader alone runs it as the instructor, in the
course folder, next to the assignment's source (every solution and hidden test), the
gradebook and the other submissions. Here nbgrader still does the bookkeeping, outside:
it restores the test cells from the gradebook (OverwriteCells, checksums), inserts the
hidden tests, scores, exports. Only the execution moves into a bubblewrap sandbox
(``SandboxedExecute``, set in the course's nbgrader_config.py by
tools/make_student.py, so a plain ``nbgrader autograde`` is sandboxed too). Inside
the sandbox a submission sees:

* a scratch copy of its own folder (no notebooks, no links), thrown away afterwards;
* the Python environment (the venv, the Python it links to, ``aiayn_helpers``) and the
  data a chapter needs, read-only; a private /tmp; nothing else of the machine;
* no network (its own empty network namespace), its own PID namespace (nothing
  outlives the sandbox), a time limit per cell and per notebook, a memory limit per
  process, a limit on processes and on file sizes; run by root, it runs as ``nobody``.

The notebook (with its hidden tests) reaches the sandbox on a pipe, never as a file,
and comes back one cell at a time on another pipe; the grader keeps only the outputs of
the cells it sent, matched by index and id, and scores them outside. A cell that never
ran (time limit, crash) scores as a failed test. ``nbgrader generate_feedback`` (and
``--feedback``) shows the visible part of each test cell and withholds the hidden tests
and any output that quotes them (``HideHiddenTests``).
"""

from __future__ import annotations

import argparse
import copy
import datetime as dt
import functools
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from pathlib import Path

import nbformat
from nbconvert.preprocessors import ClearMetadataPreprocessor, CSSHTMLHeaderPreprocessor
from nbformat import NotebookNode
from nbgrader.plugins import LateSubmissionPlugin
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
    OverwriteCells,
    OverwriteKernelspec,
    SaveAutoGrades,
)
from traitlets import Bool, Float, Integer, List, Unicode

ROOT = Path(__file__).resolve().parents[1]
DEADLINES = ROOT / "book" / "autograder" / "deadlines.toml"
NOTES = "reports"  # <course>/reports/<assignment>/<student>.txt: what grading changed
NOBODY = 65534  # the uid and gid a root instructor's sandbox runs as
# what the sandbox keeps of the grader's environment (threads, hashing, CPU kernels)
PASSED_ENV = (
    "AIAYN_THREADS",
    "PYTHONHASHSEED",
    "OMP_NUM_THREADS",
    "ATEN_CPU_CAPABILITY",
)
INSTALL = """\
Grading runs the students' code, so `make grade` runs each submission in a
bubblewrap sandbox, and bubblewrap {problem}.
  Debian, Ubuntu:  sudo apt install bubblewrap
  Fedora:          sudo dnf install bubblewrap
  macOS:           no bubblewrap: grade in a Linux VM or container (Docker, Podman)
  Windows:         in WSL, as on Linux
(in a container, bubblewrap needs the right to create namespaces)
To grade your own notebooks without a sandbox: make grade GRADE_FLAGS=--unsandboxed"""
LINKS = """\
Submissions hold symbolic links, which nbgrader would follow (to files of yours, or
to a device that never ends). Remove them, then grade again:
{links}"""
UNSANDBOXED = """\
!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!
!! --unsandboxed: the notebooks run as YOU, in the course folder, with your files, !!
!! the network and no limits. They can read the hidden tests and the gradebook.    !!
!! Use it only for notebooks you wrote yourself, never for students' submissions.  !!
!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"""

# Runs inside the sandbox: the notebook comes on stdin; each executed cell goes out as
# one JSON line on the file descriptor argv[1]. The process is made non-dumpable so
# that the kernel (same user) can neither read its memory nor open its descriptors.
RUNNER = r"""
import ctypes, json, os, sys
ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 0
import nbformat
from nbclient import NotebookClient
out = os.fdopen(int(sys.argv[1]), "w")
os.set_inheritable(out.fileno(), False)
nb = nbformat.reads(sys.stdin.read(), as_version=4)
sys.stdin.close()
def send(cell, cell_index, execute_reply, **kw):  # as nbgrader's Execute does
    reply = execute_reply["content"]
    if reply["status"] == "error" and not any(
        o.output_type == "error" and o.ename == reply["ename"] for o in cell.outputs
    ):
        cell.outputs.append(nbformat.v4.new_output(
            "error", ename=reply["ename"], evalue=reply["evalue"],
            traceback=reply["traceback"] or ["ERROR: (no traceback)"]))
    frame = {"index": cell_index, "id": cell.get("id"), "outputs": cell.outputs,
             "execution_count": cell.execution_count}
    out.write(json.dumps(frame)[:1 << 24] + "\n")
    out.flush()
NotebookClient(
    nb, timeout=int(sys.argv[2]), interrupt_on_timeout=True, allow_errors=True,
    raise_on_iopub_timeout=True, record_timing=False, on_cell_executed=send,
    extra_arguments=["--HistoryManager.hist_file=:memory:"],
    resources={"metadata": {"path": os.getcwd()}},
    error_on_timeout={
        "ename": "CellTimeoutError", "evalue": "",
        "traceback": ["CellTimeoutError: No reply from kernel before timeout"]},
).execute()
"""


def _bytes(text: str) -> int:
    """'4G', '512M', '1000000' -> bytes."""
    m = re.fullmatch(r"(\d+)([KMG]?)", text.strip().upper())
    if not m:
        expected = "a size like 4G, 512M or a number of bytes"
        raise ValueError(f"expected {expected}, got {text!r}")
    return int(m[1]) * 1024 ** " KMG".index(m[2] or " ")


def _read_only_paths(extra: list[str]) -> list[Path]:
    """What the sandbox may read: the venv, its Python, the package and ``extra``."""
    import importlib.util

    paths = [
        Path(sys.prefix),
        Path(sys.base_prefix),
        Path(os.path.realpath(sys.executable)).parent,
    ]
    spec = importlib.util.find_spec("aiayn_helpers")
    # the book's package (students have it as a wheel): not the repository
    if spec and spec.origin:
        paths.append(Path(spec.origin).parent)
    paths += [Path(p) for p in extra if p]
    return [p.resolve() for p in paths if p.exists()]


def bwrap_command(
    scratch: Path,
    read_only: list[Path],
    *,
    memory: int,
    processes: int,
    file_size: int,
    tmp_size: int,
    env: dict[str, str] | None = None,
) -> list[str]:
    """The bubblewrap command line that runs what follows it in a sandbox.

    ``scratch`` (read-write) appears as /submission, the working directory; each of
    ``read_only`` at its own path; /usr and the loader's files read-only; a private
    /tmp of ``tmp_size`` bytes. The limits apply inside (prlimit): ``memory`` bytes of
    address space per process, ``processes`` tasks, files of at most ``file_size``.
    """
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise FileNotFoundError("bwrap")
    cmd = [
        bwrap,
        "--die-with-parent",
        "--new-session",
        "--unshare-pid",
        "--unshare-net",
    ]
    cmd += [
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--hostname",
        "sandbox",
    ]
    cmd += ["--ro-bind", "/usr", "/usr", "--proc", "/proc", "--dev", "/dev"]
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = Path("/") / name
        if path.is_symlink():
            cmd += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            cmd += ["--ro-bind", str(path), str(path)]
    for name in (
        "ld.so.cache",
        "ld.so.conf",
        "ld.so.conf.d",
        "localtime",
        "nsswitch.conf",
    ):
        if (Path("/etc") / name).exists():
            cmd += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
    cmd += ["--size", str(tmp_size), "--perms", "1777", "--tmpfs", "/tmp"]
    made = {Path("/"), Path("/tmp")}
    bound: list[Path] = [Path("/usr")]
    for path in sorted(set(read_only), key=lambda p: len(p.parts)):
        if any(path.is_relative_to(b) for b in bound):
            continue  # already inside a read-only bind
        for parent in reversed(path.parents):
            # bwrap makes missing parents 0700, which nobody could enter
            if parent not in made:
                cmd += ["--perms", "0755", "--dir", str(parent)]
                made.add(parent)
        cmd += ["--ro-bind", str(path), str(path)]
        bound.append(path)
    cmd += [
        "--bind",
        str(scratch),
        "/submission",
        "--chdir",
        "/submission",
        "--clearenv",
    ]
    environment = {
        "HOME": "/tmp",
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "USER": "student",
        "TMPDIR": "/tmp",
        "MPLBACKEND": "Agg",
        "PYTHONDONTWRITEBYTECODE": "1",
        "NBGRADER_EXECUTION": "autograde",
        **(env or {}),
    }
    for key, value in environment.items():
        cmd += ["--setenv", key, value]
    if os.geteuid() == 0:  # root has no RLIMIT_NPROC and reads root's files: be nobody
        cmd += ["--cap-add", "CAP_SETUID,CAP_SETGID", "--", "setpriv"]
        cmd += [f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
        cmd += ["--inh-caps=-all", "--bounding-set=-all"]
    else:
        cmd += ["--"]
    cmd += [
        "prlimit",
        f"--as={memory}",
        f"--nproc={processes}",
        f"--fsize={file_size}",
        "--",
    ]
    return cmd


@functools.cache
def sandbox_problem() -> str | None:
    """None when a sandbox can run Python here; else what is wrong, in words."""
    if shutil.which("bwrap") is None:
        return "is not installed (no bwrap on PATH)"
    for tool in ("prlimit", "setpriv") if os.geteuid() == 0 else ("prlimit",):
        if shutil.which(tool) is None:
            return f"needs {tool} (util-linux), which is not installed"
    with tempfile.TemporaryDirectory(prefix="aiayn-sandbox-check-") as tmp:
        if os.geteuid() == 0:
            os.chown(tmp, NOBODY, NOBODY)
        cmd = bwrap_command(
            Path(tmp),
            _read_only_paths([]),
            memory=2 << 30,
            processes=64,
            file_size=1 << 20,
            tmp_size=1 << 20,
        )
        try:
            done = subprocess.run(
                [*cmd, sys.executable, "-c", "import sys"],
                capture_output=True,
                text=True,
                timeout=120,
            )
        except (OSError, subprocess.TimeoutExpired) as err:
            return f"could not start a sandbox ({err})"
    if done.returncode != 0:
        why = done.stderr.strip()[-500:]
        return f"could not start a sandbox (exit {done.returncode}: {why})"
    return None


def too_little_memory(memory: int, processes: int) -> str | None:
    """None when PyTorch imports in a sandbox with these limits; else what to do.

    A CUDA build of PyTorch maps large libraries, which count as address space.
    """
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        return None
    with tempfile.TemporaryDirectory(prefix="aiayn-sandbox-check-") as tmp:
        if os.geteuid() == 0:
            os.chown(tmp, NOBODY, NOBODY)
        limits = {"file_size": 1 << 20, "tmp_size": 64 << 20}
        cmd = bwrap_command(
            Path(tmp),
            _read_only_paths([]),
            memory=memory,
            processes=processes,
            **limits,
        )
        code = "import torch; torch.ones(3).sum()"
        done = subprocess.run(
            [*cmd, sys.executable, "-c", code],
            capture_output=True,
            text=True,
            timeout=300,
        )
    if done.returncode == 0:
        return None
    last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
    return (
        f"PyTorch does not import in a sandbox with --memory {memory >> 20}M "
        f"and --processes {processes} ({last}): raise them, e.g. --memory 16G"
    )


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


def _through_link(base: Path, relative: Path) -> bool:
    """Whether ``base / relative`` is, or passes through, a symbolic link."""
    for depth in range(1, len(relative.parts) + 1):
        if (base / Path(*relative.parts[:depth])).is_symlink():
            return True
    return False


def _copy_files(src: Path, dest: Path, submitted: Path | None = None) -> None:
    """Regular files of ``src`` into ``dest``: no notebooks (tests), no links.

    nbgrader copies a submission's files into ``src`` following links, so a file
    that is a link in the ``submitted`` folder (to the source, say) is left out too.
    """
    for folder, dirs, files in os.walk(src):
        here = Path(folder)
        dirs[:] = [d for d in dirs if not (here / d).is_symlink()]
        for name in files:
            path = here / name
            if path.is_symlink() or not path.is_file() or path.suffix == ".ipynb":
                continue
            if submitted and _through_link(submitted, path.relative_to(src)):
                continue
            target = dest / path.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)


def run_sandboxed(
    nb: nbformat.NotebookNode,
    files: Path | None = None,
    submitted: Path | None = None,
    *,
    cell_timeout: int = 60,
    notebook_timeout: int = 600,
    memory: int = 4 << 30,
    processes: int = 256,
    file_size: int = 256 << 20,
    tmp_size: int = 512 << 20,
    max_output: int = 64 << 20,
    read_only: list[str] | None = None,
    env: dict[str, str] | None = None,
) -> tuple[list[dict], str, str]:
    """Execute ``nb`` in a sandbox whose /submission is a scratch copy of ``files``
    (less what is a link in ``submitted``, the student's own folder).

    Returns the frames (one per executed cell: index, id, outputs, execution_count),
    why cells may be missing ("" when the run ended normally) and the sandbox's log.
    """
    with tempfile.TemporaryDirectory(prefix="aiayn-grade-") as tmp:
        scratch, log_path = Path(tmp) / "submission", Path(tmp) / "log"
        scratch.mkdir()
        if files is not None:
            _copy_files(files, scratch, submitted)
        if os.geteuid() == 0:
            for path in (scratch, *scratch.rglob("*")):
                os.chown(path, NOBODY, NOBODY)
        cmd = bwrap_command(
            scratch,
            _read_only_paths(read_only or []),
            memory=memory,
            processes=processes,
            file_size=file_size,
            tmp_size=tmp_size,
            env=env,
        )
        read_end, write_end = os.pipe()
        chunks: list[bytes] = []
        too_much = threading.Event()

        def read_frames() -> None:
            size = 0
            with os.fdopen(read_end, "rb") as pipe:
                while chunk := pipe.read(1 << 16):
                    size += len(chunk)
                    if size > max_output:
                        too_much.set()
                        return
                    chunks.append(chunk)

        reader = threading.Thread(target=read_frames, daemon=True)
        reader.start()
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                [*cmd, sys.executable, "-c", RUNNER, str(write_end), str(cell_timeout)],
                stdin=subprocess.PIPE,
                stdout=log,
                stderr=subprocess.STDOUT,
                pass_fds=(write_end,),
            )
            os.close(write_end)
            reason = ""
            try:
                proc.stdin.write(nbformat.writes(nb).encode())
                proc.stdin.close()
            except BrokenPipeError:
                pass
            deadline = time.monotonic() + notebook_timeout
            try:
                while proc.poll() is None:
                    if too_much.wait(timeout=0.2):
                        mib = max_output >> 20
                        reason = f"the notebook wrote more than {mib} MiB of output"
                        break
                    if time.monotonic() > deadline:
                        limit = f"{notebook_timeout} s"
                        reason = f"the notebook ran past its time limit ({limit})"
                        break
            finally:
                proc.kill()  # bwrap; --die-with-parent takes the whole sandbox with it
                proc.wait()
        reader.join(timeout=10)
        if not reason and proc.returncode != 0:
            code = proc.returncode
            reason = f"the sandbox stopped (exit {code}) before this cell ran"
        frames = []
        for line in b"".join(chunks).split(b"\n"):
            try:
                frame = json.loads(line)
            except ValueError:
                continue
            if isinstance(frame, dict):
                frames.append(frame)
        log_text = log_path.read_bytes()[-20000:].decode(errors="replace")
    return frames, reason, log_text


class SandboxedExecute(Execute):
    """nbgrader's Execute, the notebook run in a bubblewrap sandbox (see the module)."""

    sandbox = Bool(True, help="False: no sandbox (own notebooks only)").tag(config=True)
    notebook_timeout = Integer(600, help="Seconds a notebook may run").tag(config=True)
    memory = Unicode("4G", help="Address space per process").tag(config=True)
    processes = Integer(256, help="Processes and threads").tag(config=True)
    read_only = List(Unicode(), help="More paths it may read").tag(config=True)
    timeout = Integer(60, help="Seconds a cell may run", allow_none=True)
    timeout.tag(config=True)

    def preprocess(self, nb, resources, retry=None):
        if not self.sandbox:
            self.log.warning("Executing WITHOUT a sandbox (--unsandboxed)")
            return super().preprocess(nb, resources)
        problem = sandbox_problem()
        if problem:
            raise RuntimeError(INSTALL.format(problem=problem))
        path = (resources.get("metadata") or {}).get("path")
        ids = resources.get("nbgrader") or {}
        submitted = None
        if path and ids.get("student") and ids.get("assignment"):
            # <course>/autograded/<student>/<assignment> -> <course>/submitted/...
            course = Path(path).resolve().parents[2]
            submitted = course / "submitted" / ids["student"] / ids["assignment"]
        env = {k: os.environ[k] for k in PASSED_ENV if k in os.environ}
        data = [p for p in self.read_only if p]
        data_dir = os.environ.get("AIAYN_DATA_DIR", "")
        if data_dir and Path(data_dir).is_dir():  # the chapters' data, read-only
            data.append(data_dir)
            env["AIAYN_DATA_DIR"] = str(Path(data_dir).resolve())
        frames, reason, log = run_sandboxed(
            nb,
            Path(path) if path else None,
            submitted,
            cell_timeout=self.timeout or 60,
            notebook_timeout=self.notebook_timeout,
            memory=_bytes(self.memory),
            processes=self.processes,
            read_only=data,
            env=env,
        )
        if reason:
            self.log.warning("%s; sandbox log:\n%s", reason, log[-3000:])
        return merge_outputs(nb, frames, reason or "this cell did not run"), resources


HIDDEN = re.compile(
    r"^[ \t]*#+ *BEGIN HIDDEN TESTS.*?^[ \t]*#+ *END HIDDEN TESTS[^\n]*\n?",
    re.M | re.S,
)
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
                outputs.append(out)
            cell.outputs = outputs
        return nb, resources


def _course_of(resources: dict) -> Path | None:
    """The course folder of the notebook nbgrader is converting (from its path)."""
    path = (resources.get("metadata") or {}).get("path")
    return Path(path).resolve().parents[2] if path else None


def note(course: Path, assignment: str, student: str, text: str) -> None:
    """Record, for the instructor, something grading did to a student's submission."""
    folder = course / NOTES / assignment
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f"{student}.txt", "a", encoding="utf-8") as f:
        f.write(text.rstrip() + "\n")


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


class RecoverCells(NbGraderPreprocessor):
    """Before nbgrader's checks: lost metadata recovered, deleted tests put back."""

    def preprocess(self, nb, resources):
        release = _release_of(resources)
        if release is None:
            return nb, resources
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


class LatePolicy(LateSubmissionPlugin):
    """A late submission loses ``per_day`` of its score per day (or part of a day)
    late, after ``grace_minutes``; after ``max_days`` days it scores 0."""

    per_day = Float(0.0, help="fraction of the score lost a day").tag(config=True)
    max_days = Float(math.inf, help="days after which it scores 0").tag(config=True)
    grace_minutes = Float(0.0, help="minutes late that cost nothing").tag(config=True)

    def late_submission_penalty(self, student_id, score, total_seconds_late):
        if total_seconds_late <= self.grace_minutes * 60:
            return 0.0
        days = total_seconds_late / 86400
        if days > self.max_days:
            return score
        return min(score, score * self.per_day * math.ceil(days))


def read_deadlines(path: Path, assignment: str) -> tuple[dt.datetime | None, dict]:
    """The due date (UTC, or None) of ``assignment`` and the late policy, from ``path``.

    See book/autograder/deadlines.toml.
    """
    if not path.is_file():
        return None, {}
    try:
        config = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as err:
        raise ValueError(f"{path}: {err}") from None
    late = config.get("late", {})
    unknown = set(late) - {"per_day", "max_days", "grace_minutes"}
    if unknown:
        expected = "per_day, max_days, grace_minutes"
        raise ValueError(f"{path}: [late] expects {expected}, got {sorted(unknown)}")
    due = config.get("due", {}).get(assignment)
    if due is None:
        return None, late
    if isinstance(due, dt.date) and not isinstance(due, dt.datetime):
        due = dt.datetime.combine(due, dt.time(23, 59, 59))
    if not isinstance(due, dt.datetime):
        expected = "a TOML date-time such as 2027-02-09T09:00:00Z"
        raise ValueError(f"{path}: due.{assignment} must be {expected}, got {due!r}")
    if due.tzinfo is not None:
        due = due.astimezone(dt.UTC).replace(tzinfo=None)
    return due, late


def configure(c) -> None:
    """Set nbgrader's config ``c`` (a course's nbgrader_config.py) to use sandboxes."""
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


def nbgrader(*args: str, course: Path, quiet: bool = False, check: bool = True) -> str:
    """Run nbgrader in ``course`` with this Python (and its ``alembic``).

    Returns its output when ``quiet``; ``check``: raise RuntimeError if it fails.
    """
    env = dict(
        os.environ,
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    )
    done = subprocess.run(
        [sys.executable, "-m", "nbgrader", *args],
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


def links_in_submissions(course: Path, assignment: str) -> list[Path]:
    """The symbolic links in the submitted folders of ``assignment``."""
    found = []
    for folder in sorted((course / "submitted").glob(f"*/{assignment}")):
        if folder.is_symlink():
            found.append(folder)
            continue
        for here, dirs, files in os.walk(folder):
            paths = [Path(here) / name for name in dirs + files]
            found += [path for path in paths if path.is_symlink()]
    return found


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

    The exact name, else the one notebook whose name is ``expected`` up to case,
    spaces and a copy mark, else the only notebook there is; of several candidates,
    the newest. None (and what was found) when nothing fits.
    """
    exact = folder / f"{expected}.ipynb"
    if exact.is_file():
        return exact, ""
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
    newest = max(matches, key=lambda p: (p.stat().st_mtime, p.name))
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


def prepare_submissions(course: Path, assignment: str) -> dict[str, list[str]]:
    """Give each submitted notebook its expected name; {student: what was done}
    (every student, a list that may be empty).

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
            try:
                nbformat.read(target, as_version=4)
            except Exception as err:  # nbformat raises several kinds
                target.rename(target.with_name(target.name + ".unreadable"))
                why = f"{type(err).__name__}: {str(err)[:200]}"
                text = f"NOT GRADED: {target.name} is not a readable notebook ({why})"
                done.setdefault(student, []).append(text)
    return done


def _digest(folder: Path, extra: str) -> str:
    """What a submission's grade depends on: its files, and ``extra``."""
    import hashlib

    h = hashlib.sha256(extra.encode())
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        h.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def stale_submissions(course: Path, assignment: str, extra: str, force: bool) -> tuple:
    """The students to grade (again): new, resubmitted, or all with ``force``.

    Their old results are removed, so that nbgrader grades them; nbgrader alone
    skips a student already graded unless the submission's timestamp.txt is newer.
    Returns them and every student's digest.
    """
    state_path = course / NOTES / assignment / "graded.json"
    state = json.loads(state_path.read_text()) if state_path.is_file() else {}
    digests, stale = {}, []
    for folder in sorted((course / "submitted").glob(f"*/{assignment}")):
        student = folder.parent.name
        digests[student] = _digest(folder, extra)
        autograded = course / "autograded" / student / assignment
        if force or state.get(student) != digests[student] or not autograded.is_dir():
            stale.append(student)
            for stage in ("autograded", "feedback"):
                shutil.rmtree(course / stage / student / assignment, ignore_errors=True)
            (course / NOTES / assignment / f"{student}.txt").unlink(missing_ok=True)
    return stale, digests


def set_due_date(course: Path, assignment: str, due: dt.datetime | None) -> None:
    """Store ``assignment``'s due date (UTC; None: none) in the gradebook."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        gb.update_or_create_assignment(assignment, duedate=due)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("assignment", help="the assignment's name, e.g. assignment1")
    parser.add_argument(
        "--course",
        type=Path,
        default=ROOT / "_grading",
        help="nbgrader course folder",
    )
    parser.add_argument(
        "--feedback",
        action="store_true",
        help="also write feedback/ (hidden tests withheld)",
    )
    parser.add_argument(
        "--unsandboxed",
        action="store_true",
        help="NO sandbox: only for your own notebooks",
    )
    parser.add_argument(
        "--cell-timeout",
        type=int,
        default=60,
        help="seconds per cell (60)",
    )
    parser.add_argument(
        "--notebook-timeout",
        type=int,
        default=600,
        help="seconds per notebook (600)",
    )
    parser.add_argument("--memory", default="4G", help="address space per process (4G)")
    parser.add_argument(
        "--processes",
        type=int,
        default=256,
        help="processes and threads (256)",
    )
    parser.add_argument(
        "--data",
        action="append",
        default=[],
        help="a folder the notebooks may read",
    )
    parser.add_argument(
        "--quiet",
        action="store_true",
        help="show nbgrader's log only on failure",
    )
    parser.add_argument(
        "--deadlines",
        type=Path,
        default=DEADLINES,
        help="due dates and late policy (book/autograder/deadlines.toml)",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="grade every submission again, changed or not",
    )
    args = parser.parse_args(argv)
    course = args.course.resolve()
    if not (course / "nbgrader_config.py").is_file():
        print(
            f"{course} has no nbgrader_config.py: run make student first",
            file=sys.stderr,
        )
        return 2
    if "from grade import configure" not in (course / "nbgrader_config.py").read_text():
        print(
            f"{course}/nbgrader_config.py predates the sandbox: run make student again",
            file=sys.stderr,
        )
        return 2
    links = links_in_submissions(course, args.assignment)
    if links:
        listed = "\n".join(f"  {link}" for link in links)
        print(LINKS.format(links=listed), file=sys.stderr)
        return 2
    if args.unsandboxed:
        print(UNSANDBOXED, file=sys.stderr)
    else:
        problem = sandbox_problem()
        if problem:
            print(INSTALL.format(problem=problem), file=sys.stderr)
            return 2
        short = too_little_memory(_bytes(args.memory), args.processes)
        if short:
            print(short, file=sys.stderr)
            return 2
    try:
        due, late = read_deadlines(args.deadlines, args.assignment)
    except ValueError as err:
        print(err, file=sys.stderr)
        return 2
    flags = [
        f"--SandboxedExecute.sandbox={not args.unsandboxed}",
        f"--SandboxedExecute.timeout={args.cell_timeout}",
        f"--SandboxedExecute.notebook_timeout={args.notebook_timeout}",
        f"--SandboxedExecute.memory={args.memory}",
        f"--SandboxedExecute.processes={args.processes}",
    ]
    flags += [f"--SandboxedExecute.read_only={Path(d).resolve()}" for d in args.data]
    flags += [f"--LatePolicy.{key}={value}" for key, value in sorted(late.items())]
    notes = prepare_submissions(course, args.assignment)
    # a new due date, policy or limit changes every grade: grade everyone again
    settings = json.dumps([str(due), late, flags], sort_keys=True)
    stale, digests = stale_submissions(course, args.assignment, settings, args.force)
    for student, texts in notes.items():
        if student in stale:
            for text in texts:
                note(course, args.assignment, student, text)
    try:
        set_due_date(course, args.assignment, due)
        log = nbgrader(
            "autograde",
            args.assignment,
            "--create",
            *flags,
            course=course,
            quiet=args.quiet,
            check=False,
        )
        reports = course / NOTES / args.assignment
        reports.mkdir(parents=True, exist_ok=True)
        (reports / "autograde.log").write_text(log)
        graded = {}
        where = f"its log: {reports / 'autograde.log'}" if args.quiet else "log above"
        for student, digest in digests.items():
            folder = course / "autograded" / student / args.assignment
            if any(folder.glob("*.ipynb")):
                graded[student] = digest
            elif student in stale and "NOT GRADED" not in "".join(notes[student]):
                why = f"nbgrader could not grade it ({where})"
                note(course, args.assignment, student, f"NOT GRADED: {why}")
        (reports / "graded.json").write_text(json.dumps(graded, indent=1))
        nbgrader("export", course=course, quiet=args.quiet)
        if args.feedback:
            nbgrader(
                "generate_feedback",
                args.assignment,
                course=course,
                quiet=args.quiet,
            )
    except RuntimeError as err:
        print(err, file=sys.stderr)
        return 1
    failed = report(course, args.assignment, stale, due)
    wrote = f"grades: {course / 'grades.csv'}"
    if args.feedback:
        wrote += f"; feedback: {course / 'feedback'}"
    print(wrote)
    if args.unsandboxed:
        print("(graded WITHOUT a sandbox)", file=sys.stderr)
    return 1 if failed else 0


def report(course: Path, assignment: str, graded: list[str], due) -> list[str]:
    """Print what grading did to each submission; return the students not graded."""
    folder = course / NOTES / assignment
    failed = []
    lines = [f"{assignment}: {len(graded)} submission(s) graded (new or changed)"]
    if due is not None:
        lines[0] += f", due {due:%Y-%m-%d %H:%M} UTC"
    for path in sorted(folder.glob("*.txt")):
        texts = path.read_text(encoding="utf-8").splitlines()
        if any(t.startswith("NOT GRADED") for t in texts):
            failed.append(path.stem)
        lines += [f"  {path.stem}: {t}" for t in texts]
    if failed:
        lines.append(f"NOT GRADED (scored 0): {', '.join(failed)}")
    print("\n".join(lines), file=sys.stderr if failed else sys.stdout)
    return failed


if __name__ == "__main__":
    sys.exit(main())
