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

The interpreter runs at its real folder (``python()``): a venv reached through a
symbolic link (``.venv -> /elsewhere/venv``) is bound at its real path, so the
sandbox must not run the link.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import nbformat

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
BROKEN = """\
Grading runs the students' code, so `make grade` runs each submission in a
bubblewrap sandbox. bubblewrap is installed, but {problem}.
To grade your own notebooks without a sandbox: make grade GRADE_FLAGS=--unsandboxed"""


def refusal(problem: str) -> str:
    """What to tell the instructor when ``sandbox_problem()`` found ``problem``."""
    missing = problem.startswith(("is not installed", "needs "))
    return (INSTALL if missing else BROKEN).format(problem=problem)


def python() -> str:
    """The interpreter to run in the sandbox: this one, its folder resolved.

    The sandbox binds the venv at its real path, so a venv reached through a link
    (``.venv -> /elsewhere/venv``) must be run there too; the file itself stays the
    venv's (resolving it would leave the venv for the Python it links to).
    """
    exe = Path(sys.executable)
    return str(Path(os.path.realpath(exe.parent)) / exe.name)


# Runs inside the sandbox, as ``python -I`` from / (nothing of the submission on its
# path): says it started, copies the handed-in files into the size-limited /submission,
# reads the notebook from stdin and sends each executed cell out as one JSON line on
# the file descriptor argv[1]. The process is made non-dumpable so that the kernel
# (same user) can neither read its memory nor open its descriptors. The kernel starts
# isolated too, from /, and only then changes to /submission.
RUNNER = r"""
import ctypes, json, os, shutil, sys
print(STARTED, flush=True)
ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 0
for here, _, names in os.walk("/handed-in"):
    there = "/submission" + here[len("/handed-in"):]
    os.makedirs(there, exist_ok=True)
    for name in names:
        shutil.copyfile(os.path.join(here, name), os.path.join(there, name))
import nbformat
from jupyter_client.kernelspec import KernelSpec
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient
out = os.fdopen(int(sys.argv[1]), "w")
os.set_inheritable(out.fileno(), False)
nb = nbformat.reads(sys.stdin.read(), as_version=4)
sys.stdin.close()
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
NotebookClient(
    nb, km=km, timeout=int(sys.argv[2]), interrupt_on_timeout=True, allow_errors=True,
    raise_on_iopub_timeout=True, record_timing=False, on_cell_executed=send,
    extra_arguments=[
        "--HistoryManager.hist_file=:memory:",
        "--IPKernelApp.exec_lines=import os; os.chdir('/submission'); del os",
    ],
    resources={"metadata": {"path": "/"}},
    error_on_timeout={
        "ename": "CellTimeoutError", "evalue": "",
        "traceback": ["CellTimeoutError: No reply from kernel before timeout"]},
).execute()
""".replace("STARTED", repr("aiayn-runner: started"))
STARTED = "aiayn-runner: started"
# What is never copied into the sandbox: code that Python could import or load.
CODE_SUFFIXES = {".py", ".pyc", ".pyo", ".pyd", ".pth", ".so", ".dylib", ".dll"}
CODE_SUFFIXES |= {".egg", ".whl", ".zip"}  # zipimport
SANDBOX_UIDS = (1_600_000_000, 1_700_000_000)  # a root instructor's sandboxes: one each


class SandboxFailed(RuntimeError):
    """The sandbox stopped before the submission's code ran: a reason of the host."""


def sandbox_uid() -> int | None:
    """A uid of its own for one sandbox (root only: None for an ordinary user), so that
    the process limit counts that sandbox's processes and nothing else of the host."""
    if os.geteuid() != 0:
        return None
    import secrets

    low, high = SANDBOX_UIDS
    return low + secrets.randbelow(high - low)


def make_cgroup(name: str, memory: int, tasks: int) -> tuple[list[Path], str]:
    """The folders of a new cgroup that bounds one sandbox as a whole: ``memory`` bytes
    of memory (its tmpfs folders included) and ``tasks`` tasks. Cgroup v1 (memory and
    pids) or v2, under the grader's own cgroup; ([], why not) where the system offers
    none this user may write (an ordinary user, or a container that forbids it)."""
    if os.geteuid() != 0:
        return [], "cgroups are not used when grading as an ordinary user"
    where = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(","):
            where[controller] = path.rstrip("/")
    root, made = Path("/sys/fs/cgroup"), []
    limits = {}
    if "memory" in where and (root / "memory").is_dir():  # v1
        folder = root / "memory" / where["memory"].lstrip("/") / name
        limits[folder] = {"memory.limit_in_bytes": memory}
        if "pids" in where and (root / "pids").is_dir():
            pids = root / "pids" / where["pids"].lstrip("/") / name
            limits[pids] = {"pids.max": tasks}
    elif "" in where and (root / "cgroup.controllers").is_file():  # v2
        folder = root / where[""].lstrip("/") / name
        limits[folder] = {"memory.max": memory, "pids.max": tasks}
    else:
        return [], "this system offers no cgroup for it"
    try:
        for folder, values in limits.items():
            folder.mkdir()
            made.append(folder)
            for key, value in values.items():
                (folder / key).write_text(str(value))
    except OSError as err:
        remove_cgroup(made)
        return [], f"cgroups are not writable here ({type(err).__name__}: {err})"
    return made, ""


def cgroup_kills(folders: list[Path]) -> int:
    """How many processes the kernel's OOM killer stopped in the cgroup ``folders``."""
    for folder in folders:
        for name in ("memory.events", "memory.oom_control"):
            path = folder / name
            if path.is_file():
                for line in path.read_text().splitlines():
                    if line.startswith("oom_kill "):
                        return int(line.split()[1])
    return 0


def remove_cgroup(folders: list[Path]) -> None:
    """Stop what is left in the sandbox's cgroup (its own processes), then remove it."""
    for folder in folders:
        for _ in range(200):  # its last tasks may take a moment to exit
            try:
                for pid in (folder / "cgroup.procs").read_text().split():
                    try:
                        os.kill(int(pid), 9)
                    except ProcessLookupError:
                        pass
                folder.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.1)


def tasks_of(uid: int) -> int:
    """How many tasks (threads) the user ``uid`` runs now: RLIMIT_NPROC counts them."""
    count = 0
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
        if fields.get("Uid", "").split()[:1] == [str(uid)]:
            count += int(fields.get("Threads", "1").strip() or 1)
    return count


def host_env() -> dict[str, str]:
    """The environment bwrap itself starts with (PID 1 of the sandbox): nothing of the
    grader's (tokens, keys), which an ordinary user's sandbox reads in /proc/1/environ.
    """
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}


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
    uid: int | None = None,
    scratch_size: int | None = None,
) -> list[str]:
    """The bubblewrap command line that runs what follows it in a sandbox.

    ``scratch`` appears read-only as /handed-in, and /submission is a private tmpfs of
    ``scratch_size`` bytes (the runner copies the files in; without a size, ``scratch``
    itself is /submission); each of ``read_only`` at its own path; /usr and the
    loader's files read-only; a private /tmp of ``tmp_size`` bytes; the working
    directory is /. The limits apply inside (prlimit): ``memory`` bytes of address
    space per process, ``processes`` tasks of the sandbox's user, files of at most
    ``file_size``. Run by root, the sandbox runs as ``uid`` (a uid of its own, see
    ``sandbox_uid``; default ``nobody``).
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
    if scratch_size is None:
        cmd += ["--bind", str(scratch), "/submission", "--dir", "/handed-in"]
    else:
        cmd += ["--ro-bind", str(scratch), "/handed-in"]
        cmd += ["--size", str(scratch_size), "--perms", "1777"]
        cmd += ["--tmpfs", "/submission"]
    cmd += ["--chdir", "/", "--clearenv"]
    environment = {
        "HOME": "/tmp",
        "PATH": f"{Path(python()).parent}:/usr/local/bin:/usr/bin:/bin",
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
        user = NOBODY if uid is None else uid
        cmd += [f"--reuid={user}", f"--regid={user}", "--clear-groups"]
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
                [*cmd, python(), "-I", "-c", "import sys"],
                capture_output=True,
                text=True,
                timeout=120,
                env=host_env(),
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
            [*cmd, python(), "-I", "-c", code],
            capture_output=True,
            text=True,
            timeout=300,
            env=host_env(),
        )
    if done.returncode == 0:
        return None
    last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
    return (
        f"PyTorch does not import in a sandbox with --memory {memory >> 20}M "
        f"and --processes {processes} ({last}): raise them, e.g. --memory 16G"
    )


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
) -> tuple[list[dict], str, str]:
    """Execute ``nb`` in a sandbox whose /submission is a copy of the data files of
    ``files`` (less what is a link in ``submitted``, the student's own folder) in a
    tmpfs of ``scratch_size`` bytes.

    Returns the frames (one per executed cell: index, id, outputs, execution_count),
    why cells may be missing ("" when the run ended normally) and the sandbox's log.
    Raises SandboxFailed when the sandbox stopped before the submission's code ran.
    Run by root where cgroups are writable, ``memory`` and ``processes`` also bound the
    sandbox as a whole (``make_cgroup``).
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
                [*cmd, python(), "-I", "-c", RUNNER, str(write_end), str(cell_timeout)],
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
                        limit = f"{notebook_timeout} s"
                        reason = f"the notebook ran past its time limit ({limit})"
                        break
            finally:
                proc.kill()  # bwrap; --die-with-parent takes the whole sandbox with it
                proc.wait()
        reader.join(timeout=10)
        log_text = log_path.read_bytes()[-20000:].decode(errors="replace")
        if not reason and proc.returncode != 0:
            code = proc.returncode
            if STARTED not in log_text:  # bwrap, setpriv or prlimit failed: the host
                last = (log_text.strip().splitlines() or ["(no message)"])[-1][:300]
                raise SandboxFailed(f"the sandbox did not start (exit {code}: {last})")
            reason = f"the sandbox stopped (exit {code}) before this cell ran"
        kills = cgroup_kills(cgroup)
        if kills:
            hit = f"the sandbox hit its memory limit ({memory >> 20} MiB as a whole)"
            hit += f": {kills} process(es) stopped"
            reason = f"{hit}; {reason}" if reason else hit
        frames = []
        for line in b"".join(chunks).split(b"\n"):
            try:
                frame = json.loads(line)
            except ValueError:
                continue
            if isinstance(frame, dict):
                frames.append(frame)
    return frames, reason, log_text
