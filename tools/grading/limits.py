"""The limits of one sandbox: its user, its cgroup, and the numbers (issue #35 item 3).

Run by root, each sandbox runs as a uid of its own (``sandbox_uid``), so that
RLIMIT_NPROC counts only that sandbox's processes, and, where the system lets root
write cgroups, in a cgroup of its own (``make_cgroup``) that bounds its memory and
tasks as a whole; ``cgroup_kills`` says whether its memory limit stopped anything.
As an ordinary user, ``tasks_of`` counts the user's own tasks, which RLIMIT_NPROC
counts too, and a cgroup is made only where the system delegated one to the user
(``memory_scope`` says which limit holds). Split from sandbox.py (issue #34: no
module over about 400 lines).
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

NOBODY = 65534  # the uid and gid a root instructor's sandbox runs as
SANDBOX_UIDS = (1_600_000_000, 1_700_000_000)  # a root instructor's sandboxes: one each


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
    none this user may write (an ordinary user's, unless delegated to them; a
    container that forbids it)."""
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


def memory_scope(memory: str) -> str:
    """What bounds a sandbox's memory here, in words (make grade prints it): a cgroup
    per sandbox where this user can make one, else the per-process limit alone."""
    made, why = make_cgroup(f"aiayn-check-{os.getpid()}", 1 << 30, 16)
    remove_cgroup(made)
    if not why:
        return f"memory: {memory} per process and {memory} per sandbox (a cgroup)"
    return (
        f"memory: {memory} of address space per process only, none per sandbox as a "
        f"whole (a submission's processes together may hold more): {why}"
    )


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


def _bytes(text: str) -> int:
    """'4G', '512M', '1000000' -> bytes."""
    m = re.fullmatch(r"(\d+)([KMG]?)", text.strip().upper())
    if not m:
        expected = "a size like 4G, 512M or a number of bytes"
        raise ValueError(f"expected {expected}, got {text!r}")
    return int(m[1]) * 1024 ** " KMG".index(m[2] or " ")
