"""The bubblewrap sandbox a submission runs in (issue #29).

Grading runs the students' code. nbgrader alone runs it as the instructor, in the
course folder, next to the assignment's source (every solution and hidden test), the
gradebook and the other submissions. Here only the execution moves into a bubblewrap
sandbox (``run_sandboxed``, called by autograde.SandboxedExecute). Inside the sandbox a
submission sees:

* a scratch copy of its own folder (no notebooks, no links), thrown away afterwards;
* the Python environment (the venv, the Python it links to, ``aiayn_helpers``) and the
  data a chapter needs, read-only; a private /tmp; nothing else of the machine;
* no network (its own empty network namespace), its own PID namespace (nothing
  outlives the sandbox), a time limit per cell and per notebook, a memory limit per
  process, a limit on processes and on file sizes; run by root, it runs as ``nobody``.

The notebook (with its hidden tests) reaches the sandbox on a pipe, never as a file,
and comes back one cell at a time on another pipe (autograde.merge_outputs keeps only
the outputs of the cells it sent).

The module runs the sandbox and reports what happened; the bubblewrap command and
the checks before grading are in bwrap.py, the user, cgroup and size limits in
limits.py (split by concern, issue #34).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import nbformat

from .bwrap import (  # noqa: F401 (re-exported: grade.py and tests use these names)
    BROKEN,
    INSTALL,
    PASSED_ENV,
    _read_only_paths,
    bwrap_command,
    host_env,
    python,
    refusal,
    sandbox_problem,
    too_little_memory,
)
from .limits import (  # noqa: F401 (re-exported)
    NOBODY,
    SANDBOX_UIDS,
    _bytes,
    cgroup_kills,
    make_cgroup,
    remove_cgroup,
    sandbox_uid,
    tasks_of,
)

# Runs inside the sandbox, as ``python -I`` from / (nothing of the submission on its
# path): says it started, copies the handed-in files into the size-limited /submission,
# reads the notebook from stdin and sends each executed cell out as one JSON line on
# the file descriptor argv[1], its first line saying it started. The process is made
# non-dumpable so that the kernel (same user) can neither read its memory nor open its
# descriptors, and the kernel inherits none of the runner's: its standard output and
# error go to /dev/null (once the log, which a kernel could write to fake a failure of
# the host). Past argv[3] characters of output in all, the runner stops (an endless
# printer meets that cap long before the memory limit). The grader's hidden cells
# (``aiayn_hidden``) run without history. The kernel starts isolated too, from /, and
# only then changes to /submission. jsonschema (imported by nbformat) builds about 40
# parsers for the IRI formats of rfc3987_syntax when that is installed, about 3 s of
# CPU in every runner: nbformat never checks formats, so the runner does without it.
RUNNER = r"""
import ctypes, json, os, shutil, subprocess, sys
print(STARTED, flush=True)
ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 0
out = os.fdopen(int(sys.argv[1]), "w")
os.set_inheritable(out.fileno(), False)
out.write(json.dumps({"started": True}) + "\n")  # the grader's proof that it started
out.flush()
try:
    for here, _, names in os.walk("/handed-in"):
        there = "/submission" + here[len("/handed-in"):]
        os.makedirs(there, exist_ok=True)
        for name in names:
            shutil.copyfile(os.path.join(here, name), os.path.join(there, name))
except OSError as err:  # the handed-in files do not fit /submission
    out.write(json.dumps({"files": f"{type(err).__name__}: {err.strerror}"}) + "\n")
    out.flush()
    os._exit(4)
sys.modules["rfc3987_syntax"] = None  # jsonschema's IRI checks: 3 s of CPU, unused
import nbformat
from jupyter_client.kernelspec import KernelSpec
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient
nb = nbformat.reads(sys.stdin.read(), as_version=4)
sys.stdin.close()
MAX_OUTPUT, seen, CELL, kept, dropped = int(sys.argv[3]), [0], 1 << 24, {}, set()
def size(value, limit):  # characters of a message's content, counted up to limit
    if isinstance(value, (str, bytes)):
        return len(value)
    total = 0
    for v in value.values() if isinstance(value, dict) else value if isinstance(
            value, list) else ():
        total += size(v, limit - total)
        if total > limit:
            break
    return total
class Runner(NotebookClient):
    def process_message(self, msg, cell, cell_index):
        # all the kernel sends counts: past MAX_OUTPUT the runner stops, before
        # the outputs it holds can reach the memory limit
        seen[0] += size(msg.get("content", {}), MAX_OUTPUT) + sum(
            len(b) for b in msg.get("buffers") or [])
        if seen[0] > MAX_OUTPUT:
            import resource
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10  # MiB
            out.write(json.dumps({"too_much": True, "peak_mib": peak}) + "\n")
            out.flush()
            os._exit(3)
        return super().process_message(msg, cell, cell_index)
    def output(self, outs, msg, display_id, cell_index):
        # a cell keeps at most 16 MiB of output (a frame's limit); the rest is
        # counted above, not held
        kept[cell_index] = kept.get(cell_index, 0) + size(msg.get("content", {}), CELL)
        if kept[cell_index] <= CELL:
            return super().output(outs, msg, display_id, cell_index)
        if cell_index not in dropped:
            dropped.add(cell_index)
            outs.append(nbformat.v4.new_output("stream", name="stdout",
                        text="[output trimmed: more than 16 MiB from this cell]\n"))
        return None
    async def async_execute_cell(self, cell, cell_index, execution_count=None,
                                 store_history=True):
        # the grader's hidden cells leave no trace in In, Out, _ih, _oh, %history
        hidden = bool(cell.get("metadata", {}).get("aiayn_hidden"))
        return await super().async_execute_cell(
            cell, cell_index, execution_count, store_history=not hidden)
def trim(value, limit=1 << 20):
    if isinstance(value, str) and len(value) > limit:
        more = len(value) - limit
        return value[:limit] + f"\n[output trimmed: {more} more characters]"
    if isinstance(value, list):
        return [trim(v) for v in value]
    if isinstance(value, dict):
        return {k: trim(v) for k, v in value.items()}
    return value
def send(cell, cell_index, execute_reply, **kw):  # as nbgrader's Execute does
    reply = execute_reply["content"]
    if reply["status"] == "error" and not any(
        o.output_type == "error" and o.ename == reply["ename"] for o in cell.outputs
    ):
        cell.outputs.append(nbformat.v4.new_output(
            "error", ename=reply["ename"], evalue=reply["evalue"],
            traceback=reply["traceback"] or ["ERROR: (no traceback)"]))
    frame = {"index": cell_index, "id": cell.get("id"), "outputs": trim(cell.outputs),
             "execution_count": cell.execution_count}
    line = json.dumps(frame)
    if len(line) > 1 << 24:  # trimmed, not dropped: the cell ran
        frame["outputs"] = [{"output_type": "stream", "name": "stdout",
                             "text": "[outputs trimmed: more than 16 MiB]"}]
        line = json.dumps(frame)
    out.write(line + "\n")
    out.flush()
km = AsyncKernelManager(kernel_name="python3")
km._kernel_spec = KernelSpec(
    argv=[sys.executable, "-I", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
    display_name="Python 3", language="python")
runner = Runner(
    nb, km=km, timeout=int(sys.argv[2]), interrupt_on_timeout=True, allow_errors=True,
    raise_on_iopub_timeout=True, iopub_timeout=30, record_timing=False,
    on_cell_executed=send,
    extra_arguments=[
        "--HistoryManager.hist_file=:memory:",
        "--IPKernelApp.exec_lines=import os; os.chdir('/submission'); del os",
    ],
    resources={"metadata": {"path": "/"}},
    error_on_timeout={
        "ename": "CellTimeoutError", "evalue": "",
        "traceback": ["CellTimeoutError: No reply from kernel before timeout"]},
)
try:  # the kernel's output and errors go nowhere: never to the log
    runner.execute(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
except Exception as err:  # a dead kernel, a time limit: said on the channel
    first = (str(err).splitlines() or [""])[0]
    out.write(json.dumps({"stopped": f"{type(err).__name__}: {first}"[:300]}) + "\n")
    out.flush()
    raise
""".replace("STARTED", repr("aiayn-runner: started"))
STARTED = "aiayn-runner: started"
# What is never copied into the sandbox: code that Python could import or load.
CODE_SUFFIXES = {".py", ".pyc", ".pyo", ".pyd", ".pth", ".so", ".dylib", ".dll"}
CODE_SUFFIXES |= {".egg", ".whl", ".zip"}  # zipimport


class SandboxFailed(RuntimeError):
    """The sandbox stopped before the submission's code ran: a reason of the host."""


def _through_link(base: Path, relative: Path) -> bool:
    """Whether ``base / relative`` is, or passes through, a symbolic link."""
    for depth in range(1, len(relative.parts) + 1):
        if (base / Path(*relative.parts[:depth])).is_symlink():
            return True
    return False


def is_code(path: Path) -> bool:
    """Whether ``path`` is something Python could import or load (a module, a compiled
    extension, a .pth file, a package's folder)."""
    if path.is_dir():
        return (path / "__init__.py").exists() or path.name == "__pycache__"
    return path.suffix.lower() in CODE_SUFFIXES


def code_files(folder: Path) -> list[str]:
    """What ``_copy_files`` leaves out of ``folder`` as code, relative to it."""
    with tempfile.TemporaryDirectory(prefix="aiayn-code-") as tmp:
        return _copy_files(folder, Path(tmp)) if folder.is_dir() else []


def _copy_files(src: Path, dest: Path, submitted: Path | None = None) -> list[str]:
    """Regular data files of ``src`` into ``dest``: no notebooks (tests), no links, no
    code (``is_code``); returns what was left out as code, relative to ``src``.

    nbgrader copies a submission's files into ``src`` following links, so a file
    that is a link in the ``submitted`` folder (to the source, say) is left out too.
    """
    code = []
    for folder, dirs, files in os.walk(src):
        here = Path(folder)
        dirs[:] = [d for d in dirs if not (here / d).is_symlink()]
        code += [str((here / d).relative_to(src)) for d in dirs if is_code(here / d)]
        dirs[:] = [d for d in dirs if not is_code(here / d)]
        for name in files:
            path = here / name
            if path.is_symlink() or not path.is_file() or path.suffix == ".ipynb":
                continue
            if submitted and _through_link(submitted, path.relative_to(src)):
                continue
            if is_code(path):
                code.append(str(path.relative_to(src)))
                continue
            target = dest / path.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
    return sorted(code)


def stopped_reason(frames: list[dict]) -> str:
    """Why the runner said it stopped (its ``stopped`` frame), "" if it did not; a
    stop after a cell's frame came back is the submission's doing (junk written into
    the kernel's channel makes the runner's client fail, as killing it does)."""
    stopped = [str(f["stopped"]) for f in frames if "stopped" in f]
    if not stopped:
        return ""
    reason = f"the notebook's run stopped before this cell ({stopped[0]})"
    if any("index" in f for f in frames):  # the submission's code had started
        reason += (
            ": after the submission's code started (the submission's doing, e.g. it "
            "wrote into the kernel's channel or killed the runner)"
        )
    return reason


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
    scratch_size: int = 512 << 20,
    max_output: int = 64 << 20,
    read_only: list[str] | None = None,
    env: dict[str, str] | None = None,
    deadline_reason: str | None = None,
) -> tuple[list[dict], str, str]:
    """Execute ``nb`` in a sandbox whose /submission is a copy of the data files of
    ``files`` (less what is a link in ``submitted``, the student's own folder) in a
    tmpfs of ``scratch_size`` bytes.

    Returns the frames (one per executed cell: index, id, outputs, execution_count),
    why cells may be missing ("" when the run ended normally) and the sandbox's log.
    Raises SandboxFailed when the sandbox stopped before the submission's code ran.
    Run by root where cgroups are writable, ``memory`` and ``processes`` also bound the
    sandbox as a whole (``make_cgroup``). ``deadline_reason``: what to say when the
    notebook is stopped at ``notebook_timeout`` (default: its time limit; the student's
    time budget sets its own, see budget.py).
    """
    limits = dict(
        cell_timeout=cell_timeout,
        notebook_timeout=notebook_timeout,
        memory=memory,
        file_size=file_size,
        tmp_size=tmp_size,
        scratch_size=scratch_size,
        max_output=max_output,
        read_only=read_only,
        env=env,
        deadline_reason=deadline_reason,
    )
    uid = sandbox_uid()
    cgroup, _ = make_cgroup(f"aiayn-sandbox-{uid or os.getpid()}", memory, processes)
    if uid is None:  # RLIMIT_NPROC counts the instructor's own tasks too: add them
        processes += tasks_of(os.getuid())
    try:
        return _run(nb, files, submitted, cgroup, uid, processes, **limits)
    finally:
        remove_cgroup(cgroup)


def _run(nb, files, submitted, cgroup, uid, processes, **limits):
    """run_sandboxed, in the cgroup folders ``cgroup`` (if any)."""
    cell_timeout, notebook_timeout = limits["cell_timeout"], limits["notebook_timeout"]
    memory, max_output = limits["memory"], limits["max_output"]
    with tempfile.TemporaryDirectory(prefix="aiayn-grade-") as tmp:
        scratch, log_path = Path(tmp) / "submission", Path(tmp) / "log"
        scratch.mkdir()
        if files is not None:
            _copy_files(files, scratch, submitted)
        os.chmod(tmp, 0o755)
        for path in (scratch, *scratch.rglob("*")):
            os.chmod(path, 0o755 if path.is_dir() else 0o644)
        cmd = bwrap_command(
            scratch,
            _read_only_paths(limits["read_only"] or []),
            memory=memory,
            processes=processes,
            file_size=limits["file_size"],
            tmp_size=limits["tmp_size"],
            env=limits["env"],
            uid=uid,
            scratch_size=limits["scratch_size"],
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

        def join_cgroup() -> None:  # in the child, before bwrap starts
            for folder in cgroup:
                with open(folder / "cgroup.procs", "w") as procs:
                    procs.write(str(os.getpid()))

        reader = threading.Thread(target=read_frames, daemon=True)
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                [*cmd, python(), "-I", "-c", RUNNER, str(write_end), str(cell_timeout), str(max_output)],
                stdin=subprocess.PIPE,
                stdout=log,
                stderr=subprocess.STDOUT,
                pass_fds=(write_end,),
                env=host_env(),
                preexec_fn=join_cgroup if cgroup else None,
            )
            reader.start()
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
                        limit = f"its time limit ({notebook_timeout} s)"
                        own = f"the notebook ran past {limit}"
                        reason = limits["deadline_reason"] or own
                        break
            finally:
                proc.kill()  # bwrap; --die-with-parent takes the whole sandbox with it
                proc.wait()
        reader.join(timeout=10)
        log_text = log_path.read_bytes()[-20000:].decode(errors="replace")
        frames = []
        for line in b"".join(chunks).split(b"\n"):
            try:
                frame = json.loads(line)
            except ValueError:
                continue
            if isinstance(frame, dict):
                frames.append(frame)
        # the runner's first line on its own channel, which no process of the
        # submission holds: without it, bwrap, setpriv or prlimit failed (the host)
        started = bool(frames) and frames[0] == {"started": True}
        files = [str(f["files"])[:200] for f in frames if "files" in f]
        if files and not reason:
            reason = f"the handed-in files did not fit the sandbox ({files[0]})"
        peaks = [f.get("peak_mib") for f in frames if f.get("too_much") is True]
        if peaks and not reason:
            reason = f"the notebook wrote more than {max_output >> 20} MiB of output"
            if isinstance(peaks[0], int):
                reason += f" (stopped there, the runner holding {peaks[0]} MiB at most)"
        if not reason:
            reason = stopped_reason(frames)
        if not reason and proc.returncode != 0:
            code = proc.returncode
            if not started:
                last = (log_text.strip().splitlines() or ["(no message)"])[-1][:300]
                raise SandboxFailed(f"the sandbox did not start (exit {code}: {last})")
            reason = (
                f"the sandbox stopped (exit {code}) before this cell ran: its runner "
                "ended after the submission's code started (the submission's doing, "
                "e.g. a process of it killed the runner)"
            )
        kills = cgroup_kills(cgroup)
        if kills:
            hit = f"the sandbox hit its memory limit ({memory >> 20} MiB as a whole)"
            hit += f": {kills} process(es) stopped"
            reason = f"{hit}; {reason}" if reason else hit
        frames = [f for f in frames if "index" in f]
    return frames, reason, log_text
