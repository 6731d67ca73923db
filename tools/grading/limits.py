"""The limits of one sandbox: its user, its cgroup, and the numbers (issue #35 item 3).

Run by root, each sandbox runs as a uid of its own (``sandbox_uid``), so that
RLIMIT_NPROC counts only that sandbox's processes, and, where the grader can make
cgroups, in a cgroup of its own (``make_cgroup``) that bounds its memory and tasks as
a whole; ``cgroup_kills`` says whether its memory limit stopped anything. As an
ordinary user, ``tasks_of`` counts the user's own tasks, which RLIMIT_NPROC counts
too, and a cgroup is made only where the system delegated one to the user
(``memory_scope`` says which limit holds).

Cgroup v2 (``v2_parent``) has two rules v1 has not: a cgroup hands memory and pids
to its children only if it holds no process itself, and an ordinary user may move
a process only inside a subtree delegated to them. So the sandboxes' cgroups are
made beside a leaf the grader moves itself into (``aiayn-grader``), in a cgroup the
grader has alone: one systemd made for it (``systemd_scope``: ``systemd-run
[--user] --scope -p Delegate=yes``, which cli.py starts the grader in when its own
cgroup is shared) or one delegated to it by hand; root without systemd uses the
nearest cgroup above its own that hands out both. Split from sandbox.py (issue
#34: no module over about 400 lines).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from pathlib import Path

NOBODY = 65534  # the uid and gid a root instructor's sandbox runs as
SANDBOX_UIDS = (1_600_000_000, 1_700_000_000)  # a root instructor's sandboxes: one each
CGROUP = Path("/sys/fs/cgroup")  # where the system mounts its cgroups
GRADER_LEAF = "aiayn-grader"  # cgroup v2: the leaf the grader moves itself into
SCOPED = "AIAYN_GRADING_SCOPE"  # set in a grader that systemd_scope() started
NEED = ("memory", "pids")  # the controllers a sandbox's cgroup uses


def sandbox_uid() -> int | None:
    """A uid of its own for one sandbox (root only: None for an ordinary user), so that
    the process limit counts that sandbox's processes and nothing else of the host."""
    if os.geteuid() != 0:
        return None
    import secrets

    low, high = SANDBOX_UIDS
    return low + secrets.randbelow(high - low)


def _own_cgroups() -> dict[str, str]:
    """controller -> this process's cgroup path ("" for cgroup v2), from /proc."""
    where = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(","):
            where[controller] = path.rstrip("/")
    return where


def make_cgroup(name: str, memory: int, tasks: int) -> tuple[list[Path], str]:
    """The folders of a new cgroup that bounds one sandbox as a whole: ``memory`` bytes
    of memory (its tmpfs folders included) and ``tasks`` tasks. Cgroup v1 (memory and
    pids, under the grader's own cgroups) or v2 (under ``v2_parent``); ([], why not)
    where the system offers none this user may write (an ordinary user's, unless
    delegated to them; a container that forbids it)."""
    where = _own_cgroups()
    made = []
    limits = {}
    if "memory" in where and (CGROUP / "memory").is_dir():  # v1
        folder = CGROUP / "memory" / where["memory"].lstrip("/") / name
        limits[folder] = {"memory.limit_in_bytes": memory}
        if "pids" in where and (CGROUP / "pids").is_dir():
            pids = CGROUP / "pids" / where["pids"].lstrip("/") / name
            limits[pids] = {"pids.max": tasks}
    elif "" in where and (CGROUP / "cgroup.controllers").is_file():  # v2
        parent, why = v2_parent()
        if parent is None:
            return [], why
        # no swap either, where swap is accounted: the memory limit is the limit
        values = {"memory.max": memory, "memory.swap.max": 0, "pids.max": tasks}
        limits[parent / name] = values
    else:
        return [], "this system offers no cgroup for it"
    try:
        for folder, values in limits.items():
            folder.mkdir()
            made.append(folder)
            for key, value in values.items():
                if key != "memory.swap.max" or (folder / key).exists():
                    (folder / key).write_text(str(value))
    except OSError as err:
        remove_cgroup(made)
        return [], f"cgroups are not writable here ({type(err).__name__}: {err})"
    return made, ""


def _words(path: Path) -> set[str]:
    try:
        return set(path.read_text().split())
    except OSError:
        return set()


def _hands_out(cgroup: Path) -> bool:
    """Whether the cgroup (v2) gives its children memory and pids limits."""
    return set(NEED) <= _words(cgroup / "cgroup.subtree_control")


def systemd_manages() -> bool:
    """Whether systemd manages this machine's cgroups (sd_booted's test)."""
    return Path("/run/systemd/system").is_dir()


def v2_parent() -> tuple[Path | None, str]:
    """The cgroup (v2) in which this grader makes its sandboxes' cgroups, or (None,
    why not). The first that applies:

    * a leaf ``aiayn-grader`` that a grader made (this one, or the one that started
      this process) in a cgroup that hands out memory and pids: that cgroup;
    * the grader's own cgroup hands them out already (the root cgroup, say);
    * the grader is alone in its cgroup and may write it (a systemd scope with
      Delegate=yes, a cgroup delegated by hand): it moves itself into a leaf
      ``aiayn-grader`` there, and turns memory and pids on for the cgroup's
      children (v2 lets a cgroup do that only when it holds no process);
    * root, where systemd does not manage the cgroups (a container, a VM): the
      nearest cgroup above its own that hands them out.
    """
    own = CGROUP / _own_cgroups().get("", "").lstrip("/")
    shown = "/" + str(own.relative_to(CGROUP)).lstrip(".")
    if own.name == GRADER_LEAF and _hands_out(own.parent):
        return own.parent, ""
    if _hands_out(own):
        return own, ""
    missing = [c for c in NEED if c not in _words(own / "cgroup.controllers")]
    if missing:
        return None, f"the grader's cgroup ({shown}) has no {' or '.join(missing)}"
    others = _words(own / "cgroup.procs") - {str(os.getpid())}
    if not others:
        leaf = own / GRADER_LEAF
        try:
            leaf.mkdir(exist_ok=True)
            (leaf / "cgroup.procs").write_text(str(os.getpid()))
            (own / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in NEED))
            return own, ""
        except OSError as err:
            why = f"{type(err).__name__}: {err}"
            return None, f"the grader's cgroup ({shown}) is not its to divide ({why})"
    if os.geteuid() == 0 and not systemd_manages():
        for parent in own.parents:
            if not parent.is_relative_to(CGROUP):
                break
            if _hands_out(parent):
                return parent, ""
    return None, (
        f"the grader's cgroup ({shown}) holds {len(others)} other process(es), and "
        "cgroup v2 gives memory and pids to a cgroup's children only when it holds "
        "none: start the grader in a cgroup of its own (systemd-run --user --scope "
        "-p Delegate=yes make grade ...)"
    )


def systemd_scope() -> list[str] | None:
    """The command prefix that starts the grader again in a systemd scope of its own
    with memory and pids delegated to it (``systemd-run --scope -p Delegate=yes``,
    ``--user`` for an ordinary user), where the cgroups are v2, managed by systemd,
    the grader's own cgroup cannot hold its sandboxes' cgroups, and systemd-run
    works (tried once); else None. Not again inside a grader it started."""
    if os.environ.get(SCOPED) or not (CGROUP / "cgroup.controllers").is_file():
        return None
    if "memory" in _own_cgroups() or not systemd_manages():
        return None
    if v2_parent()[0] is not None or shutil.which("systemd-run") is None:
        return None
    user = [] if os.geteuid() == 0 else ["--user"]
    command = ["systemd-run", *user, "--scope", "--quiet", "-p", "Delegate=yes", "--"]
    try:
        tried = subprocess.run([*command, "true"], capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return command if tried.returncode == 0 else None


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
    """Stop what is left in the sandbox's cgroup (its own processes), then remove it,
    with any cgroup made in it (a v2 grader's leaf), the deepest first."""
    inner = [f for folder in folders if folder.is_dir() for f in folder.rglob("*") if f.is_dir()]
    for folder in [*sorted(inner, key=lambda f: -len(f.parts)), *folders]:
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
