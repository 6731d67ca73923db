"""Grading as an ordinary user, the setup the instructor guide documents (issue #35).

CI runs as root, and there the sandbox runs as a user id of its own; an instructor on
their own machine grades as themselves, and bubblewrap then makes the sandbox with an
unprivileged user namespace, PID 1 of the sandbox being bubblewrap, same user. Run as
root, this test grades assignment 1 as an ordinary user made for it (``setpriv``, a
user id with no rights), with the venv not activated and a fake secret in the
grader's environment:

* a correct submission scores full marks;
* a probe beside it (correct answers, then reads and writes) finds the secret in no
  ``/proc/*/environ`` (``/proc/1/environ`` is readable, and holds only bwrap's PATH
  and LANG), and can write only its own ``/submission``, ``/tmp`` and ``/dev/shm``
  (size-limited tmpfs): not bwrap's root or /dev (which the user owns, read-only
  since this test found them writable), the course, its source, the grader's home,
  the repository or the venv;
* memory: the grader's cgroup is root's (and, on cgroup v2, shared), so no cgroup per
  sandbox: make grade says the limit is per process only, and why. Where root can
  make cgroups (v1 here; v2 in tools/cgroup_v2_vm, where systemd does not manage
  them), a second run delegates one to the user (chown, as systemd's Delegate= does)
  and a submission whose four children take 6 GiB is stopped at the sandbox's 4 GiB,
  and reported (on v2, the grader divides the delegated cgroup: limits.v2_parent).

The machine's Python may sit where other users cannot read it (here /root/.pyenv,
/root being 0700): the grading then runs in a private mount namespace where the
folder that blocks the way is a tmpfs holding only the Python (``_expose``).
Skipped, with the reason, where it cannot run: not root, no bwrap, no mount
namespace, or no user namespace for an ordinary user.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
pytest.importorskip("nbgrader", reason="nbgrader is pinned in requirements.txt")
import grade  # noqa: E402
import test_assignments  # noqa: E402
from editions import make_student  # noqa: E402
from grading import limits  # noqa: E402
from grading_submissions import HOG, hog_stopped  # noqa: E402
from nbgrader.api import Gradebook  # noqa: E402

A = "assignment1"
SOURCE = ROOT / "book" / "autograder" / "source" / A / f"{A}.ipynb"
UID = 1_550_000_000 + os.getpid() % 100_000  # below the sandboxes' own uids
SECRET_NAME = "AIAYN_FAKE_SECRET"
VENV_PYTHON = ROOT / ".venv" / "bin" / "python"
PYTHON = VENV_PYTHON if VENV_PYTHON.exists() else Path(sys.executable)


def _why_not() -> str:
    """Why this test cannot run here ("" when it can)."""
    if os.geteuid() != 0:
        return "needs root to make an ordinary user (run as one, every test grades as one)"
    problem = grade.sandbox_problem()
    if problem:
        return f"bubblewrap {problem}"
    for tool in ("unshare", "setpriv", "mount"):
        if shutil.which(tool) is None:
            return f"needs {tool} (util-linux)"
    return ""


WHY_NOT = _why_not()
pytestmark = [
    pytest.mark.skipif(bool(WHY_NOT), reason=WHY_NOT),
    pytest.mark.timeout(1500),
]


def _blocking(path: Path) -> Path | None:
    """The highest folder above ``path`` that other users cannot enter, if any."""
    for parent in [*reversed(path.parents), path]:
        if parent.is_dir() and not parent.stat().st_mode & 0o001:
            return parent
    return None


def _expose(hold: Path) -> str:
    """Shell lines, run as root in a private mount namespace, that let any user reach
    the Python the venv was made from: the folder blocking it becomes a tmpfs holding
    only that Python (``hold``: where it is bound meanwhile)."""
    base = Path(sys.base_prefix).resolve()
    blocked = _blocking(base)
    if blocked is None:
        return ""
    return "\n".join(
        [
            f"mkdir -p {hold}",
            f"mount --bind {base} {hold}",
            f"mount -t tmpfs -o mode=755 tmpfs {blocked}",
            f"mkdir -p {base}",
            f"mount --bind {hold} {base}",
            f"umount {hold}",
        ]
    )


def _as_user(work: Path, command: list[str], cgroups: list[Path] = ()) -> subprocess.CompletedProcess:
    """``command`` run as the ordinary user UID (no groups, no capabilities, a bare
    environment but for the fake secret), in ``cgroups`` if given."""
    home = work / "home"
    env = {
        "HOME": str(home),
        "USER": "grader",
        "LANG": "C.UTF-8",
        "PATH": "/usr/local/bin:/usr/bin:/bin",  # the venv not activated
        "AIAYN_THREADS": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        SECRET_NAME: SECRET,
    }
    join = "".join(f"echo $$ > {folder}/cgroup.procs\n" for folder in cgroups)
    user = ["setpriv", f"--reuid={UID}", f"--regid={UID}", "--clear-groups"]
    user += ["--inh-caps=-all", "--bounding-set=-all", "env", "-i"]
    user += [f"{k}={v}" for k, v in env.items()]
    script = f'set -e\n{_expose(work / "hold")}\n{join}exec "$@"'
    return subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", *user, *command],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1200,
    )


SECRET = secrets.token_hex(16)


def _probe(course: Path, home: Path) -> str:
    """Code that reads every environ it can and tries to write everywhere."""
    places = ["/submission", "/tmp", "/dev/shm", "/handed-in", "/", "/dev", "/usr"]
    places += ["/etc", "/root"]
    places += [str(p) for p in (course, course / "source" / A, home, ROOT, ROOT / "tools")]
    places += [sys.prefix, str(Path(sys.base_prefix).resolve())]
    return f"""
import glob as _glob, os as _os
_read = _seen = 0
for _p in _glob.glob("/proc/*/environ"):
    try:
        with open(_p, "rb") as _f:
            _text = _f.read()
    except OSError:
        continue
    _read += 1
    _seen += {SECRET_NAME!r}.encode() in _text
print("PROBE environ read:", _read, "secret seen:", _seen)
with open("/proc/1/environ", "rb") as _f:
    _keys = sorted(_v.split(b"=")[0].decode() for _v in _f.read().split(b"\\0") if _v)
print("PROBE pid1:", ",".join(_keys))
for _d in {places!r}:
    try:
        with open(_os.path.join(_d, "probe-write"), "w") as _f:
            _f.write("x")
        print("PROBE wrote:", _d)
    except OSError as _e:
        print("PROBE refused:", _d, type(_e).__name__)
"""


def _course(work: Path, students: dict[str, dict[str, str]]) -> Path:
    """Assignment 1's course in ``work``, the students' answers handed in, all owned
    by the ordinary user."""
    course = work / "course"
    assert A in make_student.build_course(course)
    released = nbformat.read(course / "release" / A / f"{A}.ipynb", as_version=4)
    for name, answers in students.items():
        folder = course / "submitted" / name / A
        folder.mkdir(parents=True)
        nbformat.write(test_assignments._fill(released, answers), folder / f"{A}.ipynb")
    (work / "home").mkdir()
    for path in (work, *work.rglob("*")):
        os.lchown(path, UID, UID)
    return course


def _grade(work: Path, course: Path, cgroups: list[Path] = ()) -> subprocess.CompletedProcess:
    command = [str(PYTHON), str(ROOT / "tools" / "grade.py"), A, "--course", str(course)]
    return _as_user(work, [*command, "--quiet"], cgroups)


def _scores(course: Path, names) -> dict[str, float]:
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        return {n: gb.find_submission(A, n).score / gb.find_submission(A, n).max_score for n in names}


def _printed(course: Path, student: str, grade_id: str = "mha_answer") -> str:
    nb = nbformat.read(course / "autograded" / student / A / f"{A}.ipynb", as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
    return "".join(o.get("text", "") for o in cell.outputs)


@pytest.fixture(scope="module")
def work():
    folder = Path(tempfile.mkdtemp(prefix="aiayn-user-", dir="/tmp"))
    folder.chmod(0o755)
    check = [str(PYTHON), "-c", "import sys; sys.path.insert(0, 'tools'); import grade; print(grade.sandbox_problem())"]
    done = _as_user(folder, check)
    if done.returncode != 0 or done.stdout.strip() != "None":
        shutil.rmtree(folder, ignore_errors=True)
        # e.g. no user namespaces for an ordinary user (Ubuntu's AppArmor setting
        # kernel.apparmor_restrict_unprivileged_userns), or no mount namespace
        why = (done.stdout + done.stderr).strip()[-300:]
        pytest.skip(f"an ordinary user cannot start a sandbox here: {why}")
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def graded(work):
    correct = test_assignments._solutions(nbformat.read(SOURCE, as_version=4))
    probe_work = work / "plain"
    probe_work.mkdir()
    probe_work.chmod(0o755)
    course = probe_work / "course"
    probe = {**correct, "mha_answer": correct["mha_answer"] + _probe(course, probe_work / "home")}
    assert _course(probe_work, {"honest": correct, "probe": probe}) == course
    done = _grade(probe_work, course)
    return course, done


def test_a_correct_submission_graded_as_an_ordinary_user_scores_full_marks(graded):
    course, done = graded
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-3000:])
    assert _scores(course, ["honest", "probe"]) == {"honest": 1.0, "probe": 1.0}
    # graded as the user: nbgrader wrote its files as UID
    assert (course / "autograded" / "honest" / A / f"{A}.ipynb").stat().st_uid == UID


def test_the_graders_environment_is_readable_nowhere_in_the_sandbox(graded):
    course, _ = graded
    printed = _printed(course, "probe")
    read = int(printed.split("PROBE environ read:")[1].split()[0])
    assert read >= 2, printed  # at least bwrap's (PID 1) and the kernel's own
    assert "secret seen: 0" in printed, printed
    assert "PROBE pid1: LANG,PATH\n" in printed, printed  # readable, and nothing else
    for path in course.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def test_nothing_outside_the_submission_is_writable(graded):
    course, _ = graded
    printed = _printed(course, "probe")
    wrote = sorted(line.split(": ", 1)[1] for line in printed.splitlines() if line.startswith("PROBE wrote:"))
    # only its own size-limited tmpfs folders; bwrap's root and /dev are read-only. A place
    # under /tmp (a repository cloned there, say) is the sandbox's own tmpfs, where bwrap
    # made the folders it binds the interpreter into: the host checks below see nothing
    own = ("/dev/shm", "/submission", "/tmp")
    assert set(own) <= set(wrote), printed
    assert all(w in own or w.startswith("/tmp/") for w in wrote), printed
    assert printed.count("PROBE refused:") == 16 - len(wrote), printed
    for place in (course, course / "source" / A, course.parent / "home", ROOT, ROOT / "tools"):
        assert not (place / "probe-write").exists(), place
    for place in ("/", "/usr", "/etc", "/root", sys.prefix):
        assert not (Path(place) / "probe-write").exists(), place


def test_make_grade_says_memory_is_limited_per_process_only(graded):
    _, done = graded
    line = next(t for t in done.stderr.splitlines() if t.startswith("memory:"))
    assert line.startswith("memory: 4G of address space per process only"), line
    if (Path("/sys/fs/cgroup") / "memory").is_dir():  # v1: root's cgroup, not the user's
        assert "cgroups are not writable here" in line, line
    else:  # v2: the test's own cgroup, shared, which cgroup v2 cannot divide
        assert "other process(es)" in line and "Delegate=yes" in line, line
    # said once, before grading starts (not again in the report at the end)
    assert (done.stdout + done.stderr).count("memory:") == 1, done.stdout[-2000:]


def _delegated(name: str) -> list[Path]:
    """A cgroup made by root and handed to UID, as systemd's Delegate= hands one to a
    user's session or scope; [] where root cannot make one. Cgroup v1: a memory and a
    pids cgroup, given to UID. Cgroup v2: an empty cgroup under the nearest one that
    hands out memory and pids (where systemd does not manage them: under systemd, a
    delegated cgroup comes from systemd-run, not simulated here), given to UID with
    the files systemd gives (cgroup.procs, cgroup.subtree_control, cgroup.threads);
    the grader moves itself into a leaf of it and divides the rest (limits.v2_parent).
    """
    if (Path("/sys/fs/cgroup") / "memory").is_dir():  # v1
        made, why = limits.make_cgroup(name, 8 << 30, 4096)
        if why:
            return []
        for folder in made:
            for path in (folder, *folder.iterdir()):
                os.chown(path, UID, UID)
        return made
    if not (Path("/sys/fs/cgroup") / "cgroup.controllers").is_file() or limits.systemd_manages():
        return []
    parent, _ = limits.v2_parent()  # root, no systemd: the nearest that hands them out
    if parent is None:
        return []
    folder = parent / name
    folder.mkdir()
    for path in (folder, *(folder / f for f in ("cgroup.procs", "cgroup.subtree_control", "cgroup.threads"))):
        os.chown(path, UID, UID)
    return [folder]


def test_with_a_delegated_cgroup_a_memory_hog_is_stopped_at_the_sandboxs_limit(work):
    cgroups = _delegated(f"aiayn-user-test-{os.getpid()}")
    if not cgroups:
        pytest.skip("root cannot make cgroups here (or systemd manages them), so none can be delegated")
    try:
        correct = test_assignments._solutions(nbformat.read(SOURCE, as_version=4))
        hog_work = work / "delegated"
        hog_work.mkdir()
        hog_work.chmod(0o755)
        course = _course(hog_work, {"hog": {**correct, "mha_answer": correct["mha_answer"] + HOG}})
        done = _grade(hog_work, course, cgroups)
    finally:
        limits.remove_cgroup(cgroups)
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-3000:])
    line = next(t for t in done.stderr.splitlines() if t.startswith("memory:"))
    assert line == "memory: 4G per process and 4G per sandbox (a cgroup)", line
    report = (course / "reports" / A / "hog.txt").read_text()
    assert "the sandbox hit its memory limit (4096 MiB as a whole)" in report, report
    assert hog_stopped(_printed(course, "hog")) >= 1
