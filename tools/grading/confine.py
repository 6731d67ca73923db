"""nbgrader's own processing of one submission, in a child process with limits of its
own (issue 51, item 6).

nbgrader works outside the sandbox: it reads the submission, restores its cells, scores
it and writes its feedback page in the grader's own process. A notebook under the caps
of repair.too_large can still cost that process memory and time. So ``make grade``
starts a server per worker (``run``), which imports nbgrader and the grader once and
then forks a child for each student: ``nbgrader autograde`` (or ``generate_feedback``)
of that student alone, under

* ``memory``: RLIMIT_AS, bytes of address space (a soft limit: the sandbox's own
  prlimit sets the limit of the student's processes; none with ``--unsandboxed``,
  where nbgrader starts the kernel itself and it would inherit the limit);
* ``cpu``: CPU seconds of nbgrader's process itself (the sandbox's processes are not
  counted), read from /proc while it runs;
* ``wall``: seconds in all, the sandbox's own time budget included.

A child past a limit is stopped (with the sandbox it started); its student scores 0
with a one-line reason (``reason``) and the next student is graded in a fresh child,
so nothing of one student's processing stays in the process that grades the next.

Measured (2 shared cores, load about 1.5): an honest assignment 1's child maps at
most 874 MiB and takes 0.3-0.7 CPU-s; ``make grade`` writes each child's figures at the
end of ``reports/<assignment>/autograde.log``; the instructor guide's "Grading runs
the students' code" states the limits and their margins.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

TOOLS = Path(__file__).resolve().parents[1]
MEMORY = 2 << 30  # address space of nbgrader's process: an honest one maps < 0.9 GiB
MEMORY_ENV = "AIAYN_GRADER_MEMORY"  # make grade's --grader-memory default, if set
CPU = 120  # nbgrader's own CPU seconds a submission: an honest one takes < 5 s
WALL_MARGIN = 300  # seconds on top of the sandbox's time budget
FEEDBACK_WALL = 300  # seconds for one student's feedback pages
COMMANDS = ("autograde", "generate_feedback")  # the nbgrader commands run here
MEMORY_EXIT = 86  # a child's exit status: MemoryError at the limit
POLL = 0.1  # seconds between two looks at a child
STAGES = {
    "read": "while reading the notebook",
    "autograde": "while grading the notebook",
    "generate_feedback": "while writing the feedback page",
}


@dataclass(frozen=True)
class Limits:
    """What one student's nbgrader child may use (see the module)."""

    memory: int = MEMORY
    cpu: float = CPU
    wall: float = CPU + WALL_MARGIN

    def __post_init__(self):
        for name in ("memory", "cpu", "wall"):
            value = getattr(self, name)
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            if not number or value <= 0:
                expected = "expected a number above 0"
                raise ValueError(f"Limits.{name}: {expected}, got {value!r}")


def reason(status: str, limits: Limits, command: str = "autograde") -> str:
    """The one-line reason a child stopped at ``status`` gives ('' for 'ok' or
    'failed', which nbgrader's own log explains)."""
    stage = STAGES.get(command, f"while running nbgrader {command}")
    if status == "memory":
        mib = limits.memory >> 20
        return f"the grader's memory limit ({mib} MiB) was exceeded {stage}"
    if status == "cpu":
        return f"the grader's CPU time limit ({limits.cpu:g} s) was exceeded {stage}"
    if status == "wall":
        return f"the grader's time limit ({limits.wall:g} s) was exceeded {stage}"
    if status.startswith("signal"):
        return f"the grader's process for this submission was killed ({status}) {stage}"
    return ""


DEFAULT = Limits()

SERVER = (
    "import sys; sys.modules['rfc3987_syntax'] = None; "
    f"sys.path.insert(0, {str(TOOLS)!r}); "
    "from grading.confine import serve; sys.exit(serve(sys.argv[1]))"
)


def run(
    command: str,
    assignment: str,
    students: list[str],
    course: Path,
    flags: list[str] = (),
    limits: Limits = DEFAULT,
    sandboxed: bool = True,
    check: bool = False,
) -> tuple[dict[str, dict], str]:
    """nbgrader ``command`` for each of ``students`` (in turn, a child each, see the
    module); ({student: {"status", "cpu", "wall", "peak"}}, nbgrader's log). A status
    is "ok", "failed" (nbgrader failed: its log says why), "memory", "cpu", "wall" or
    "signal N"; peak: the largest address space seen, in bytes. ``check``: raise
    RuntimeError if the server itself failed (the grader's fault, not a student's)."""
    if command not in COMMANDS:
        raise ValueError(f"expected a command of {COMMANDS}, got {command!r}")
    if not isinstance(limits, Limits):
        raise ValueError(f"expected Limits, got {type(limits).__name__}")
    if not students:
        return {}, ""
    results = course / f".confine-{os.getpid()}-{time.monotonic_ns()}.json"
    spec = {
        "command": command,
        "assignment": assignment,
        "students": list(students),
        "flags": list(flags),
        "limits": asdict(limits),
        "sandboxed": sandboxed,
        "results": str(results),
    }
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    done = subprocess.run(
        [sys.executable, "-c", SERVER, json.dumps(spec)],
        cwd=course,
        env=env,
        capture_output=True,
        text=True,
        errors="replace",
    )
    log = f"{done.stdout}{done.stderr}"
    try:
        found = json.loads(results.read_text()) if results.is_file() else {}
    finally:
        results.unlink(missing_ok=True)
    if done.returncode != 0:
        said = f"nbgrader {command} failed (its server ended with {done.returncode})"
        if check:
            raise RuntimeError(f"{said}:\n{log[-3000:]}")
        log += f"\n({said})"
    for student in students:  # a server that died: those it never reached failed
        found.setdefault(student, {"status": "failed", "cpu": 0, "wall": 0, "peak": 0})
    return found, log


def serve(spec_text: str) -> int:
    """The server (``run`` starts it in the course folder): nbgrader and the grader
    imported once, then a child per student; the results written as JSON."""
    spec = json.loads(spec_text)
    limits = Limits(**spec["limits"])
    _preload(spec["command"])
    found = {}
    for student in spec["students"]:
        found[student] = _one(spec, student, limits)
        Path(spec["results"]).write_text(json.dumps(found))
    return 0


def _preload(command: str) -> None:
    """What every child of ``command`` uses, imported before the first fork (a child
    then starts without the 3 s of CPU these imports take)."""
    import nbgrader.apps.nbgraderapp  # noqa: F401
    import nbgrader.converters  # noqa: F401
    import sqlalchemy.dialects.sqlite  # noqa: F401  (the gradebook)
    from nbconvert.exporters import HTMLExporter  # noqa: F401

    from . import autograde, cli, handin  # noqa: F401  (what the course's config uses)

    if command == "autograde":  # what judging imports, else each child again (0.65 s)
        try:
            import torch  # noqa: F401  (verdict decodes the sandbox's tensors)
            import torch.fx.experimental.symbolic_shapes  # noqa: F401  (sympy)
        except ImportError:
            pass


def _one(spec: dict, student: str, limits: Limits) -> dict:
    """One child for ``student``, watched until it ends or passes a limit."""
    sys.stdout.flush()
    sys.stderr.flush()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        _child(spec, student, limits)
    return _watch(pid, limits, start)


def _watch(pid: int, limits: Limits, start: float) -> dict:
    """Wait for the child ``pid``, stopped (with its process group) past a limit;
    {"status", "cpu", "wall", "peak"} as ``run`` returns them."""
    status, peak, cpu = "", 0, 0.0
    while True:
        ended, code = os.waitpid(pid, os.WNOHANG)
        if ended:
            break
        cpu, size = _usage(pid)
        peak = max(peak, size)
        if not status and cpu > limits.cpu:
            status = "cpu"
        elif not status and time.monotonic() - start > limits.wall:
            status = "wall"
        if status:  # the child and the sandbox it started (its process group)
            for kill in (os.killpg, os.kill):
                try:
                    kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        time.sleep(POLL)
    if not status:
        if os.WIFSIGNALED(code):
            status = f"signal {os.WTERMSIG(code)}"
        elif os.WEXITSTATUS(code) == MEMORY_EXIT:
            status = "memory"
        else:
            status = "ok" if os.WEXITSTATUS(code) == 0 else "failed"
    took = round(time.monotonic() - start, 2)
    return {"status": status, "cpu": round(cpu, 2), "wall": took, "peak": peak}


def read_notebook(path: Path, limits: Limits = DEFAULT) -> str:
    """'' if nbformat reads the notebook at ``path`` within ``limits`` (in a child of
    this process: the grader's own memory is not spent on it); else why not, in one
    line: the limit passed, or nbformat's error."""
    if not isinstance(limits, Limits):
        raise ValueError(f"expected Limits, got {type(limits).__name__}")
    read_end, write_end = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the child: nbformat's reading, limited; never returns
        os.close(read_end)
        code, said = 1, b""
        try:
            os.setpgid(0, 0)
            hard = resource.getrlimit(resource.RLIMIT_AS)[1]
            resource.setrlimit(resource.RLIMIT_AS, (limits.memory, hard))
            import nbformat

            nbformat.read(path, as_version=4)
            code = 0
        except MemoryError:
            code = MEMORY_EXIT
        except BaseException as err:  # noqa: BLE001 (nbformat raises several kinds)
            said = f"{type(err).__name__}: {str(err)[:200]}".encode(errors="replace")
        finally:
            os.write(write_end, said[:4000])
            os._exit(code)
    os.close(write_end)
    done = _watch(pid, limits, start)
    with os.fdopen(read_end, "rb") as pipe:
        said = pipe.read().decode(errors="replace")
    if done["status"] == "ok":
        return ""
    said = said or "nbformat could not read it"
    return reason(done["status"], limits, "read") or said


def _usage(pid: int) -> tuple[float, int]:
    """CPU seconds (user and system) and peak address space (bytes) of ``pid``."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        status = Path(f"/proc/{pid}/status").read_text()
    except (OSError, IndexError):
        return 0.0, 0
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    peak = 0
    for line in status.splitlines():
        if line.startswith("VmPeak:"):
            peak = int(line.split()[1]) * 1024
    return cpu, peak


def _child(spec: dict, student: str, limits: Limits) -> None:
    """nbgrader ``spec["command"]`` for ``student`` alone, in this forked process;
    exits with nbgrader's status, or MEMORY_EXIT at the memory limit."""
    code = 1
    try:
        os.setpgid(0, 0)  # the server stops the child with what it started
        if spec["sandboxed"]:
            hard = resource.getrlimit(resource.RLIMIT_AS)[1]
            resource.setrlimit(resource.RLIMIT_AS, (limits.memory, hard))
        _guard_memory()
        from nbgrader.apps.nbgraderapp import main

        sys.argv = ["nbgrader", spec["command"], spec["assignment"], *spec["flags"]]
        sys.argv.append(f"--CourseDirectory.student_id={student}")
        try:
            main()
            code = 0
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else int(bool(exit_.code))
    except MemoryError:
        code = MEMORY_EXIT
    except BaseException:  # noqa: BLE001 (a child never returns into the server)
        import traceback

        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:  # noqa: BLE001
                pass
        os._exit(code)


def _guard_memory() -> None:
    """A MemoryError in nbgrader's conversion ends the child with MEMORY_EXIT (nbgrader
    would log it as any error and go on): the limit was hit, and the server says so."""
    from nbgrader.converters import Autograde, GenerateFeedback
    from nbgrader.converters.base import BaseConverter

    def guarded(method):
        def call(*args, **kwargs):
            try:
                return method(*args, **kwargs)
            except MemoryError:
                try:
                    sys.stderr.write("MemoryError: the grader's memory limit\n")
                    sys.stderr.flush()
                finally:
                    os._exit(MEMORY_EXIT)

        return call

    names = (
        "convert_single_notebook",
        "init_assignment",
        "init_single_notebook_resources",
    )
    for cls in (BaseConverter, Autograde, GenerateFeedback):
        for name in names:
            if name in vars(cls):
                setattr(cls, name, guarded(vars(cls)[name]))
