"""A sandbox's cgroup on cgroup v2, the hierarchy of current Linux desktops (issue #35).

Cgroup v2 has two rules v1 has not: a cgroup gives its children memory and pids
limits only when it holds no process itself, and an ordinary user may move a process
only inside a cgroup delegated to them. So the grader needs a cgroup of its own to
divide (limits.v2_parent): systemd makes one with ``systemd-run [--user] --scope -p
Delegate=yes``, which ``make grade`` starts itself in when its cgroup is shared
(limits.systemd_scope, cli.main).

Two kinds of test:

* the rules of ``v2_parent``, ``systemd_scope`` and the relaunch, on a made-up
  cgroup tree (plain folders; they run everywhere, CI included, which is cgroup v1);
* the same on the kernel's cgroups, where this machine is cgroup v2 with memory and
  pids and the test runs as root without systemd (skipped elsewhere, with the
  reason). tools/cgroup_v2_vm/ boots such a machine (a VM with this repository as
  its files) and runs them there, with tests/test_grading_ordinary_user.py, whose
  delegated-cgroup test then grades as an ordinary user in a delegated v2 cgroup.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from grading import cli, limits  # noqa: E402
from grading_submissions import HOG, hog_stopped  # noqa: E402

# --- the rules, on a made-up tree ------------------------------------------------


def _tree(root: Path, cgroups: dict[str, dict[str, str]]) -> None:
    """Folders with cgroup files: {"/user.slice": {"cgroup.subtree_control": ...}}."""
    (root / "cgroup.controllers").write_text("cpu memory pids\n")
    for path, files in cgroups.items():
        folder = root / path.lstrip("/")
        folder.mkdir(parents=True, exist_ok=True)
        defaults = {"cgroup.controllers": "cpu memory pids", "cgroup.procs": "", "cgroup.subtree_control": ""}
        for name, text in {**defaults, **files}.items():
            (folder / name).write_text(text)


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """A made-up v2 tree at tmp_path, this process in /user.slice/app.scope, root."""
    monkeypatch.setattr(limits, "CGROUP", tmp_path)
    monkeypatch.setattr(limits, "_own_cgroups", lambda: {"": "/user.slice/app.scope"})
    monkeypatch.setattr(limits.os, "geteuid", lambda: 0)
    monkeypatch.setattr(limits, "systemd_manages", lambda: False)
    monkeypatch.delenv(limits.SCOPED, raising=False)
    return tmp_path


def test_alone_in_its_cgroup_the_grader_moves_into_a_leaf_and_divides_the_rest(fake):
    _tree(fake, {"/user.slice/app.scope": {"cgroup.procs": f"{os.getpid()}\n"}})
    scope = fake / "user.slice" / "app.scope"
    assert limits.v2_parent() == (scope, "")
    assert (scope / "aiayn-grader" / "cgroup.procs").read_text() == str(os.getpid())
    assert (scope / "cgroup.subtree_control").read_text() == "+memory +pids"
    made, why = limits.make_cgroup("aiayn-sandbox-1", 4 << 30, 256)
    assert (made, why) == ([scope / "aiayn-sandbox-1"], "")
    assert (scope / "aiayn-sandbox-1" / "memory.max").read_text() == str(4 << 30)
    assert (scope / "aiayn-sandbox-1" / "pids.max").read_text() == "256"


def test_a_process_the_grader_started_uses_the_graders_divided_cgroup(fake, monkeypatch):
    _tree(
        fake,
        {
            "/user.slice/app.scope": {"cgroup.subtree_control": "memory pids"},
            "/user.slice/app.scope/aiayn-grader": {"cgroup.procs": "1\n2\n"},
        },
    )
    monkeypatch.setattr(limits, "_own_cgroups", lambda: {"": "/user.slice/app.scope/aiayn-grader"})
    assert limits.v2_parent() == (fake / "user.slice" / "app.scope", "")


def test_a_shared_cgroup_is_not_divided_and_make_grade_says_why(fake, monkeypatch):
    _tree(
        fake,
        {
            "/user.slice": {"cgroup.subtree_control": "memory pids"},
            "/user.slice/app.scope": {"cgroup.procs": f"1\n{os.getpid()}\n"},
        },
    )
    monkeypatch.setattr(limits.os, "geteuid", lambda: 1000)  # an ordinary user
    parent, why = limits.v2_parent()
    assert parent is None
    assert "holds 1 other process(es)" in why and "systemd-run --user --scope" in why, why
    assert not (fake / "user.slice" / "app.scope" / "aiayn-grader").exists()  # nothing moved
    line = limits.memory_scope("4G")
    assert line.startswith("memory: 4G of address space per process only") and why in line


def test_root_without_systemd_uses_the_nearest_cgroup_above_that_hands_out(fake):
    _tree(
        fake,
        {
            "/user.slice": {"cgroup.subtree_control": "cpu memory pids"},
            "/user.slice/app.scope": {"cgroup.procs": f"1\n{os.getpid()}\n"},
        },
    )
    assert limits.v2_parent() == (fake / "user.slice", "")


def test_root_under_systemd_leaves_systemds_cgroups_alone(fake, monkeypatch):
    _tree(
        fake,
        {
            "/user.slice": {"cgroup.subtree_control": "memory pids"},
            "/user.slice/app.scope": {"cgroup.procs": f"1\n{os.getpid()}\n"},
        },
    )
    monkeypatch.setattr(limits, "systemd_manages", lambda: True)
    assert limits.v2_parent()[0] is None


def test_a_cgroup_without_the_controllers_is_named(fake):
    _tree(fake, {"/user.slice/app.scope": {"cgroup.controllers": "cpu", "cgroup.procs": f"{os.getpid()}"}})
    assert limits.v2_parent() == (None, "the grader's cgroup (/user.slice/app.scope) has no memory or pids")


def _fake_systemd_run(folder: Path, code: int) -> None:
    """A systemd-run that logs its arguments and exits with ``code`` (0: scope made)."""
    folder.mkdir(exist_ok=True)
    script = folder / "systemd-run"
    script.write_text(f'#!/bin/sh\necho "$@" >> {folder}/calls\nexit {code}\n')
    script.chmod(0o755)


@pytest.mark.parametrize("euid, user", [(0, []), (1000, ["--user"])])
def test_under_systemd_a_shared_grader_asks_for_a_scope_of_its_own(fake, monkeypatch, tmp_path, euid, user):
    _tree(fake, {"/user.slice/app.scope": {"cgroup.procs": f"1\n{os.getpid()}\n"}})
    monkeypatch.setattr(limits, "systemd_manages", lambda: True)
    monkeypatch.setattr(limits.os, "geteuid", lambda: euid)
    bin_ = tmp_path / "bin"
    _fake_systemd_run(bin_, 0)
    monkeypatch.setenv("PATH", f"{bin_}:{os.environ['PATH']}")
    command = ["systemd-run", *user, "--scope", "--quiet", "-p", "Delegate=yes", "--"]
    assert limits.systemd_scope() == command
    assert (bin_ / "calls").read_text() == " ".join([*command[1:], "true"]) + "\n"  # tried once
    monkeypatch.setenv(limits.SCOPED, "1")  # not again inside the scope
    assert limits.systemd_scope() is None


def test_no_scope_where_systemd_run_fails_or_is_not_needed(fake, monkeypatch, tmp_path):
    _tree(fake, {"/user.slice/app.scope": {"cgroup.procs": f"1\n{os.getpid()}\n"}})
    monkeypatch.setattr(limits, "systemd_manages", lambda: True)
    bin_ = tmp_path / "bin"
    _fake_systemd_run(bin_, 1)  # e.g. "Failed to connect to bus" (no user manager)
    monkeypatch.setenv("PATH", f"{bin_}:{os.environ['PATH']}")
    assert limits.systemd_scope() is None
    (fake / "user.slice" / "app.scope" / "cgroup.procs").write_text(f"{os.getpid()}\n")
    assert limits.systemd_scope() is None  # alone: it divides its own cgroup
    monkeypatch.setattr(limits, "systemd_manages", lambda: False)
    assert limits.systemd_scope() is None


def test_make_grade_starts_again_in_the_scope_with_its_own_arguments(tmp_path, monkeypatch):
    course = tmp_path / "course"
    course.mkdir()
    (course / "nbgrader_config.py").write_text("from grade import configure\n")
    relaunch = tmp_path / "relaunch"
    log = tmp_path / "log"
    relaunch.write_text(f'#!/bin/sh\n[ "$1" = -- ] && shift\necho "${limits.SCOPED}" "$@" > {log}\nexit 7\n')
    relaunch.chmod(0o755)
    monkeypatch.setattr(cli, "systemd_scope", lambda: [str(relaunch), "--"])
    argv = ["assignment1", "--course", str(course), "--quiet"]
    assert cli.main(argv) == 7  # its exit code is make grade's
    grade_py = str(ROOT / "tools" / "grade.py")
    assert log.read_text().split() == ["1", sys.executable, grade_py, *argv]


# --- the same on the kernel's cgroups ---------------------------------------------

V2 = (Path("/sys/fs/cgroup") / "cgroup.controllers").is_file()
WHY_NOT = (
    "not cgroup v2 here"
    if not V2
    else "not root"
    if os.geteuid() != 0
    else "systemd manages the cgroups here (a scope comes from systemd-run)"
    if limits.systemd_manages()
    else "no memory and pids controllers"
    if not {"memory", "pids"} <= set((Path("/sys/fs/cgroup") / "cgroup.controllers").read_text().split())
    else ""
)
kernel = pytest.mark.skipif(bool(WHY_NOT), reason=WHY_NOT)


def _in_child(code: str) -> str:
    """``code`` run by a Python started from this one (so it shares this cgroup)."""
    script = f"import sys; sys.path.insert(0, {str(ROOT / 'tools')!r})\n" + textwrap.dedent(code)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@kernel
def test_root_in_a_shared_cgroup_gives_each_sandbox_its_limits():
    out = _in_child(
        """
        from grading import limits
        made, why = limits.make_cgroup("aiayn-v2-test", 1 << 30, 32)
        assert not why, why
        for name in ("memory.max", "pids.max"):
            print(name, (made[0] / name).read_text().strip())
        print("parent", made[0].parent)
        limits.remove_cgroup(made)
        print("removed", not made[0].exists())
        """
    )
    assert f"memory.max {1 << 30}" in out and "pids.max 32" in out and "removed True" in out, out
    assert "aiayn-grader" not in out  # a shared cgroup is not divided: the one above is used


@kernel
def test_a_memory_hog_is_stopped_at_the_sandboxs_memory_limit_on_cgroup_v2(tmp_path):
    sandbox = pytest.importorskip("grading.sandbox")
    if sandbox.sandbox_problem():
        pytest.skip(f"no sandbox here: {sandbox.sandbox_problem()}")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(HOG)])
    frames, reason, log = sandbox.run_sandboxed(nb, cell_timeout=300, notebook_timeout=600)
    assert "the sandbox hit its memory limit (4096 MiB as a whole)" in reason, (reason, log[-2000:])
    printed = "".join(o.get("text", "") for f in frames for o in f.get("outputs", []))
    assert hog_stopped(printed) >= 1, printed
