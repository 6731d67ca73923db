"""Code that the grading tests put into a submission's answer cells, written once for every test that grades it.

Not a test file (pytest collects only ``test_*.py``); the tests import it as the other helper modules of tests/
are imported (``from grading_submissions import HOG``), the tests folder being on ``sys.path`` under pytest.

HOG is a memory hog appended to an answer cell (``correct["mha_answer"] + HOG``): four processes of 1.5 GiB each,
6 GiB in all, none of them over the 4 GiB one process may map, so that only the sandbox's memory limit as a whole
(its cgroup) stops them. The cell prints ``HOG stopped: N``, the number of those processes killed by a signal;
:func:`hog_stopped` reads N back from the cell's printed output. tests/test_grading_hostile.py (the class graded
with cgroups) and tests/test_grading_ordinary_user.py (grading delegated to an ordinary user's cgroup) both grade
it and require N >= 1, with the report saying the sandbox hit its memory limit.
"""

from __future__ import annotations

HOG = """
import os, time
_pids = []
for _ in range(4):  # 6 GiB in all, 1.5 GiB each: under the 4 GiB a process may map
    _pid = os.fork()
    if _pid == 0:
        _block = bytearray(1536 << 20)
        time.sleep(5)
        os._exit(0)
    _pids.append(_pid)
print("HOG stopped:", sum(os.WIFSIGNALED(os.waitpid(p, 0)[1]) for p in _pids))
"""


def hog_stopped(printed: str) -> int:
    """How many of HOG's processes were killed, read from what its cell printed (ValueError if it never said)."""
    if "HOG stopped:" not in printed:
        raise ValueError(f"the memory hog's cell never finished: {printed[-2000:]!r}")
    return int(printed.split("HOG stopped:")[1].split()[0])
