"""A hostile class (issue #35): submissions that try to forge their score, or that hurt
the host, graded in one run of tools/grade.py with assignment 1, in the sandbox.

Each forgery sits beside wrong or blank answers and must score only what its code
earns (here 0), with a line in the student's report naming what it used: an IPython
input transformer that empties every test cell while grading, an AST transformer that
wraps every cell in try/except, a tensor subclass whose comparisons always answer
"equal", torch's comparisons monkeypatched, the grader's hidden helpers overwritten,
and a ``ctypes.py`` or an ``ipykernel_launcher.py`` handed in beside a blank notebook
(the runner and the kernel once imported them). An honest, correct submission is
graded while 300 processes of the user the sandbox would once have run as are running
(RLIMIT_NPROC counted them: it scored 0), and scores full marks. A submission that
fills the disk is stopped at the sandbox's scratch limit and keeps its marks; one whose
children take 6 GiB is stopped at the sandbox's 4 GiB where the grader can make a
cgroup (root, here cgroup v1), and reported. A folder
named like a glob pattern and a folder that is a link to the course's source are
refused (grading.folders, before nbgrader sees them) and reported, and every other
student is graded.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import grade  # noqa: E402
from grading import sandbox  # noqa: E402

pytest.importorskip("nbgrader", reason="nbgrader is pinned in requirements.txt")
import grading_courses  # noqa: E402
import test_assignments  # noqa: E402
from grading_submissions import HOG, hog_stopped  # noqa: E402
from nbgrader.api import Gradebook  # noqa: E402

NO_SANDBOX = grade.sandbox_problem()
pytestmark = [
    pytest.mark.timeout(900),
    pytest.mark.skipif(bool(NO_SANDBOX), reason=f"bubblewrap {NO_SANDBOX}"),
]
A = "assignment1"
SOURCE = ROOT / "book" / "autograder" / "source" / A / f"{A}.ipynb"
CROWD = 300  # processes of the sandbox's old user while the honest student is graded

# wrong answers: every test must fail on them
WRONG_SDPA = """
def scaled_dot_product_attention(q, k, v, mask=None):
    w = torch.zeros(*q.shape[:-1], k.size(-2), dtype=q.dtype)
    return w @ v, w
"""
TRANSFORMER = """
import os
def _empty(lines):
    return ["pass\\n"] if os.environ.get("NBGRADER_EXECUTION") == "autograde" else lines
get_ipython().input_transformers_cleanup.append(_empty)
"""
AST_WRAPPER = """
import ast
class _Wrap(ast.NodeTransformer):
    def visit_Module(self, node):
        handler = ast.ExceptHandler(type=ast.Name("BaseException", ast.Load()), name=None, body=[ast.Pass()])
        node.body = [ast.Try(body=node.body or [ast.Pass()], handlers=[handler], orelse=[], finalbody=[])]
        return ast.fix_missing_locations(node)
get_ipython().ast_transformers.append(_Wrap())
"""
SUBCLASS = """
class _Yes(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if name in ("allclose", "equal", "isclose", "eq", "__eq__", "all", "__bool__", "item"):
            return True
        if name in ("sub", "__sub__", "abs", "max"):
            return torch.zeros(())
        return super().__torch_function__(func, types, args, kwargs or {})


def scaled_dot_product_attention(q, k, v, mask=None):
    w = torch.zeros(*q.shape[:-1], k.size(-2), dtype=q.dtype)
    return (w @ v).as_subclass(_Yes), w.as_subclass(_Yes)
"""
MONKEYPATCH = (
    WRONG_SDPA
    + """
torch.testing.assert_close = lambda *args, **kwargs: None
torch.allclose = lambda *args, **kwargs: True
torch.equal = lambda *args, **kwargs: True
"""
)
OVERWRITE = (
    WRONG_SDPA
    + """
_TOL = {"rtol": 1e9, "atol": 1e9}
def _check_own_work(*args, **kwargs):
    pass
def _close(*args, **kwargs):
    pass
def _fail(*args, **kwargs):
    pass
def _grade(name, collect, judge):
    pass
"""
)
DISK = """
_written = 0
try:
    with open("filler.bin", "wb") as _f:
        for _ in range(4096):  # 4 GiB if nothing stops it
            _f.write(bytes(1 << 20))
            _written += 1 << 20
except OSError as err:
    print("DISK stopped:", type(err).__name__)
print("DISK written MiB:", _written >> 20)
"""
# name -> (answers changed from the blank release or correct solution, the report's words)
HOSTILE = {
    "transformer": ({"sdpa_answer": TRANSFORMER}, "an IPython input transformer"),
    "ast-wrapper": ({"sdpa_answer": AST_WRAPPER}, "an IPython AST transformer"),
    "subclass": ({"sdpa_answer": SUBCLASS}, "a tensor subclass"),
    "monkeypatch": ({"sdpa_answer": MONKEYPATCH}, "torch.testing.assert_close"),
    # the grader's names of the student's own change nothing (the hidden tests run in a
    # namespace of the grader's, issue 51): nothing to report, the score is what it earns
    "overwrite": ({"sdpa_answer": WRONG_SDPA, "mha_answer": OVERWRITE}, None),
    "ctypes": ({}, "left out of the sandbox (code, never run): ctypes.py"),
    "launcher": ({}, "left out of the sandbox (code, never run): ipykernel_launcher.py"),
}
FILES = {
    "ctypes": {"ctypes.py": "import sys\nprint('STUDENT CTYPES', file=sys.stderr)\nraise SystemExit(0)\n"},
    "launcher": {"ipykernel_launcher.py": "print('STUDENT KERNEL')\n"},
}


def _cgroup_problem() -> str:
    """Why this machine gives a sandbox no cgroup ("" when it does)."""
    made, why = sandbox.make_cgroup(f"aiayn-check-{os.getpid()}", 1 << 30, 16)
    sandbox.remove_cgroup(made)
    return why


CGROUP = not _cgroup_problem() if not NO_SANDBOX else False


def _crowd(count: int) -> list[subprocess.Popen]:
    """``count`` idle processes of the user the sandbox ran as before (nobody as root)."""
    if os.geteuid() == 0:
        user = [shutil.which("setpriv"), f"--reuid={grade.NOBODY}", f"--regid={grade.NOBODY}", "--clear-groups"]
    else:
        user = []
    return [subprocess.Popen([*user, "sleep", "600"]) for _ in range(count)]


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    course = tmp_path_factory.mktemp("hostile") / "course"
    assert grading_courses.course_of(tmp_path_factory, course, [A]) == [A]
    released = nbformat.read(course / "release" / A / f"{A}.ipynb", as_version=4)
    correct = test_assignments._solutions(nbformat.read(SOURCE, as_version=4))
    submissions = {"blank": released, "honest": test_assignments._fill(released, correct)}
    submissions["disk"] = test_assignments._fill(released, {**correct, "mha_answer": correct["mha_answer"] + DISK})
    if CGROUP:
        submissions["hog"] = test_assignments._fill(released, {**correct, "mha_answer": correct["mha_answer"] + HOG})
    for name, (answers, _) in HOSTILE.items():
        submissions[name] = test_assignments._fill(released, answers)
    for name, nb in submissions.items():
        folder = course / "submitted" / name / A
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / f"{A}.ipynb")
        for file, text in FILES.get(name, {}).items():
            (folder / file).write_text(text)
    odd = course / "submitted" / "odd*[name]" / A  # a glob pattern to nbgrader
    odd.mkdir(parents=True)
    nbformat.write(released, odd / f"{A}.ipynb")
    (course / "submitted" / "linked").symlink_to(course / "source", target_is_directory=True)
    crowd = _crowd(CROWD)
    try:
        args = [A, "--course", str(course), "--quiet", "--cell-timeout=60", "--feedback"]
        # make grade refuses the odd and the linked folders (folders.refuse_unsafe)
        # before nbgrader sees them, grades the others, and says so: exit status 1
        assert grade.main(args) == 1  # the refused folders are NOT GRADED
    finally:
        for proc in crowd:
            proc.kill()
        for proc in crowd:
            proc.wait()
    scores = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for name in submissions:
            sub = gb.find_submission(A, name)
            scores[name] = sub.score / sub.max_score
    reports = {n: (course / "reports" / A / f"{n}.txt") for n in submissions}
    reports = {n: p.read_text() if p.is_file() else "" for n, p in reports.items()}
    refused = {p.stem: p.read_text().strip() for p in (course / "reports" / A).glob("refused-*.txt")}
    return course, scores, reports, refused


def test_odd_and_linked_folders_are_refused_and_reported_the_others_graded(graded):
    course, scores, _, refused = graded
    assert len(refused) == 2 and len(scores) == 3 + CGROUP + len(HOSTILE)
    texts = sorted(refused.values())
    assert "'linked'" in texts[0] and "it is a link" in texts[0]
    assert "'odd*[name]'" in texts[1] and "not an id" in texts[1]
    for name in refused:
        assert (course / "reports" / A / f"{name}.txt").read_text().startswith("NOT GRADED")
    assert not (course / "autograded" / "linked").exists()


def test_an_honest_student_beside_300_processes_of_the_old_sandbox_user_scores_full_marks(graded):
    _, scores, reports, _ = graded
    assert scores["honest"] == 1.0, (scores, reports["honest"])
    assert scores["blank"] == 0.0


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_forgery_scores_what_its_code_earns_and_is_reported(graded, name):
    _, scores, reports, _ = graded
    assert scores[name] == 0.0, f"{name} scored {scores[name]:.0%}"
    if HOSTILE[name][1] is not None:
        assert HOSTILE[name][1] in reports[name], reports[name]


def test_nothing_the_student_hands_in_runs_as_the_grader(graded):
    course, _, _, _ = graded
    for name in FILES:
        nb = nbformat.read(course / "autograded" / name / A / f"{A}.ipynb", as_version=4)
        text = str([c.get("outputs") for c in nb.cells if c.cell_type == "code"])
        assert "STUDENT" not in text, name
        assert not any("STUDENT" in p.read_text() for p in (course / "feedback" / name).rglob("*.html"))
        log = (course / "reports" / A / "autograde.log").read_text()
        assert "STUDENT" not in log


def test_a_disk_filler_is_stopped_at_the_scratch_limit_and_keeps_its_marks(graded):
    course, scores, _, _ = graded
    nb = nbformat.read(course / "autograded" / "disk" / A / f"{A}.ipynb", as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "mha_answer")
    printed = "".join(o.get("text", "") for o in cell.outputs)
    assert "DISK stopped: OSError" in printed, printed
    written = int(printed.split("DISK written MiB:")[1].split()[0])
    assert written <= 512, written  # the scratch tmpfs: 512 MiB
    assert scores["disk"] == 1.0


@pytest.mark.skipif(not CGROUP, reason="no cgroup for the sandbox here")
def test_a_memory_hog_is_stopped_at_the_sandboxs_memory_limit_and_reported(graded):
    course, _, reports, _ = graded
    assert "the sandbox hit its memory limit (4096 MiB as a whole)" in reports["hog"], reports["hog"]
    nb = nbformat.read(course / "autograded" / "hog" / A / f"{A}.ipynb", as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "mha_answer")
    printed = "".join(o.get("text", "") for o in cell.outputs)
    assert hog_stopped(printed) >= 1, printed
