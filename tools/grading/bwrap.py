"""The bubblewrap command a submission runs under, and the checks that one can start.

``bwrap_command`` builds the command line (what the sandbox sees, read-only or not,
its environment, the user it runs as and the per-process limits, see limits.py);
``host_env`` is the environment bwrap itself starts with; ``sandbox_problem`` and
``too_little_memory`` try a sandbox before grading, and ``refusal`` says what to do
when one cannot start. Split from sandbox.py (issue #34: no module over about 400
lines); the running is in sandbox.py, the limits in limits.py.

The interpreter runs at its real folder (``python()``): a venv reached through a
symbolic link (``.venv -> /elsewhere/venv``) is bound at its real path, so the
sandbox must not run the link.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .limits import NOBODY

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


def host_env() -> dict[str, str]:
    """The environment bwrap itself starts with (PID 1 of the sandbox): nothing of the
    grader's (tokens, keys), which an ordinary user's sandbox reads in /proc/1/environ.
    """
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}


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
    loader's files read-only; a private /tmp and /dev/shm of ``tmp_size`` bytes each;
    the rest of its root and /dev read-only; the working directory is /. The limits
    apply inside (prlimit): ``memory`` bytes of address space per process,
    ``processes`` tasks of the sandbox's user, files of at most ``file_size``. Run by
    root, the sandbox runs as ``uid`` (a uid of its own, see ``sandbox_uid``; default
    ``nobody``).
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
    # /dev/shm sized like /tmp (bwrap's /dev is an unbounded tmpfs, made read-only)
    cmd += ["--size", str(tmp_size), "--perms", "1777", "--tmpfs", "/dev/shm"]
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
    # the root and /dev, with the folders bwrap made in them, read-only: only
    # /submission, /tmp and /dev/shm (size-limited tmpfs mounts of their own) can be
    # written, also by an ordinary user's sandbox, which owns those tmpfs roots
    cmd += ["--remount-ro", "/", "--remount-ro", "/dev"]
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


_IMPORTED: set[tuple[int, int, str]] = set()  # limits PyTorch imported under here


def too_little_memory(memory: int, processes: int) -> str | None:
    """None when PyTorch imports in a sandbox with these limits; else what to do.

    A CUDA build of PyTorch maps large libraries, which count as address space.
    A success is remembered for the process (the tests grade many times in one),
    a failure tried again.
    """
    import importlib.util

    if importlib.util.find_spec("torch") is None or (memory, processes, python()) in _IMPORTED:
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
        _IMPORTED.add((memory, processes, python()))
        return None
    last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
    return (
        f"PyTorch does not import in a sandbox with --memory {memory >> 20}M "
        f"and --processes {processes} ({last}): raise them, e.g. --memory 16G"
    )
