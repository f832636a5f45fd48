"""The grader's nbgrader preprocessors, one class each, added to nbgrader's autograde pipeline.

- :class:`SkipDemos`: demo cells (training loops, benchmarks) are not run at grading.
- :class:`CpuTimedExecute`: nbgrader's ``Execute``, in the job's run folder (never the
  folder the graded notebook is written to), marking where each cell starts so that the
  sandbox's watchdog limits the cell's CPU time; wall-clock limits are only a backstop
  (a cell past one is interrupted, and told waiting from computing), a late IOPub message
  never fails a finished cell, and after a stop the test cells that ran keep their points.
- :class:`CheckedExecute`: the same, and every test cell's checks run in this process
  against proxies of the notebook's objects: the verdict never depends on code that ran
  in the student's kernel (see :mod:`checks._remote`).
- :class:`DropStudentOutputs`: no output that student code produced at grading time is
  kept; feedback shows the student's cells and the checks' messages.
- :class:`CapOutput`: any single output over a size is cut.

Each is tested on a tiny notebook in ``tests/grading/test_preprocessors.py``.

Why one module: these are the classes ``autograder/grading/worker.py`` hands to nbgrader's
``Autograde``, one per preprocessor, each small and tested on its own.
:class:`CheckedExecute` brings what runs inside one of its test cells: the parser of the
cell's check calls (:func:`parse_test_cell`, which feedback.py also uses to name a test
cell) and the trusted side of the cell (:class:`_Checker`, :class:`_Deadline`), which share
that cell's deadline.
"""

from __future__ import annotations

import ast
import contextlib
import os
import secrets
import socket
import tempfile
import threading
import time
from dataclasses import dataclass

import nbformat
from nbformat.v4 import new_output
from nbgrader import utils
from nbgrader.preprocessors import Execute, NbGraderPreprocessor
from traitlets import Unicode

from autograder.config import LIMITS
from autograder.notebooks import DEMO_TAG


class BadTestCell(ValueError):
    """A test cell of the course (the source notebook) is not one the grader can run."""


@dataclass(frozen=True)
class CheckCall:
    """One ``checks.run(group, target)`` (or ``run_hidden``) line of a test cell."""

    hidden: bool
    group: str
    target: str  # the expression naming the notebook's object: a name, or ``lambda: name``


def is_test_cell(cell) -> bool:
    """An nbgrader test cell: graded, not a solution."""
    return cell.cell_type == "code" and utils.is_grade(cell) and not utils.is_solution(cell)


def parse_test_cell(source: str) -> list[CheckCall]:
    """The check calls of a test cell, in order; every statement must be one.

    A test cell of this course is lines of ``checks.run("group", name)`` or
    ``checks.run_hidden("group", lambda: name)``, and comments. Anything else raises
    :class:`BadTestCell`: the grader runs these calls itself and nothing else.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError as err:
        raise BadTestCell(f"a test cell does not parse: {err}") from None
    calls = []
    for node in tree.body:
        call = node.value if isinstance(node, ast.Expr) else None
        func = getattr(call, "func", None)
        if not (
            isinstance(call, ast.Call)
            and isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "checks"
            and func.attr in ("run", "run_hidden")
            and len(call.args) == 2
            and not call.keywords
            and isinstance(call.args[0], ast.Constant)
            and isinstance(call.args[0].value, str)
            and _is_target(call.args[1])
        ):
            raise BadTestCell(
                'a test cell may only hold lines checks.run("group", name) or '
                f'checks.run_hidden("group", lambda: name); got: {ast.unparse(node)}'
            )
        calls.append(
            CheckCall(func.attr == "run_hidden", call.args[0].value, ast.unparse(call.args[1]))
        )
    return calls


def _is_target(node) -> bool:
    if isinstance(node, ast.Lambda):
        node = node.body if not node.args.args else None
    return isinstance(node, ast.Name)


class DropStudentOutputs(NbGraderPreprocessor):
    """Drop every output that student code produced at grading time.

    What comes back to students (feedback, Gradescope) and to the course is the student's
    cells and the checks' own messages, never what a submission printed, plotted or raised
    while it was graded: that output could carry anything it read in its sandbox. The
    outputs of test cells are the trusted checker's (see :class:`CheckedExecute`) and stay.
    With ``keep_in`` set, the notebook as it ran is first written there, for the instructor
    (the grader keeps it in ``.grading/outputs/``, which no feedback is made from).
    """

    keep_in = Unicode(
        "", help="a file for the outputs as they were (for the instructor only), or '' for none"
    ).tag(config=True)

    def preprocess(self, nb, resources):
        if self.keep_in:
            nbformat.write(nb, self.keep_in)
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "code" and not is_test_cell(cell):
            cell.outputs = []
            cell.execution_count = None
        return cell, resources


class CapOutput(NbGraderPreprocessor):
    """Cut any single output over ``limit`` characters (LimitOutput only counts lines)."""

    limit = 100_000

    def _cut(self, text):
        if len(text) <= self.limit:
            return text
        cut = len(text) - self.limit
        return text[: self.limit] + f"\n… [{cut:,} more characters cut by the grader]\n"

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "code":
            for output in cell.outputs:
                if output.output_type == "stream":
                    output.text = self._cut(output.text)
                elif "data" in output and "text/plain" in output.data:
                    output.data["text/plain"] = self._cut(output.data["text/plain"])
        return cell, resources


class SkipDemos(NbGraderPreprocessor):
    """Do not run demo cells (training loops, benchmarks): no grade depends on them.

    Only a cell that is none of nbgrader's (no answer, test or locked cell) and is
    tagged ``demo`` is skipped, so a submission cannot skip a test cell by tagging it.
    Execute skips cells tagged :data:`SKIP`; that tag is removed from every other cell.
    """

    SKIP = "attention-grader-skip"
    NOTE = "# Not run by the grader: a demo that no grade depends on.\n"

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type != "code":
            return cell, resources
        tags = [t for t in cell.metadata.get("tags", []) if t != self.SKIP]
        if DEMO_TAG in tags and not cell.metadata.get("nbgrader"):
            tags.append(self.SKIP)
            cell.source = self.NOTE + cell.source
            cell.outputs = []
        cell.metadata["tags"] = tags
        return cell, resources


class CpuTimedExecute(Execute):
    """nbgrader's ``Execute``, in a folder of its own, telling the kernel manager where each
    cell starts and ends, and grading on after a stop.

    - **Where the kernel runs**: ``run_path``, a folder the worker prepares, never the one
      nbgrader writes the graded notebook into; the grader reads nothing back from it.
    - **CPU time**: with :class:`autograder.sandbox.SandboxKernelManager`, the sandbox's
      watchdog interrupts a cell whose process tree has used more than its CPU time since it
      began. The ``timeout`` trait (wall clock) stays as a backstop, set many times larger.
      A cell that reaches it is interrupted (only the cell: see
      ``SandboxKernelManager._async_interrupt_kernel``) and counted: in :attr:`waited` when
      it was not computing (a sleep, a blocked read: running it again would wait again), in
      :attr:`timed_out` when it was (a busy machine can do that to correct work).
    - **A stop**: when the kernel dies (a crash, ``os._exit``, or the watchdog stopping it
      at a limit), the cells after it are not run and each test cell among them fails with
      a message saying why; the test cells that ran before keep what they earned. The reason
      is kept in :attr:`stopped`.
    """

    run_path = Unicode(
        "", help="the folder the kernel runs in (its only writable place); '' for nbgrader's"
    ).tag(config=True)

    # What happened in this process's last notebook (a worker grades one at a time).
    timed_out = 0  # cells past the wall-clock backstop while computing
    waited = 0  # cells past the wall-clock backstop while not computing
    stopped: str | None = None  # why the kernel stopped before the end, if it did
    stopped_cell = 0  # the cell (counted from 1) where it stopped

    WAIT_FRACTION = 0.1  # of the cell's CPU limit: less than this is "not computing"

    @classmethod
    def reset(cls) -> None:
        cls.timed_out, cls.waited, cls.stopped, cls.stopped_cell = 0, 0, None, 0

    def preprocess(self, nb, resources=None, km=None):
        self._walled: set[int] = set()
        self._stopped_at: int | None = None
        self._index = -1
        self._cell_cpu: float | None = None
        if resources is None:
            resources = {}
        meta = resources.setdefault("metadata", {})
        before = meta.get("path")
        if self.run_path:
            meta["path"] = self.run_path
        try:
            return super().preprocess(nb, resources, km)
        finally:
            meta["path"] = before

    def preprocess_cell(self, cell, resources, index):
        from nbclient.exceptions import DeadKernelError

        if self._stopped_at is not None:
            return self._not_run(cell), resources
        self._index = index
        km = self.km
        if cell.cell_type == "code" and hasattr(km, "start_cell"):
            km.start_cell()
        try:
            return super().preprocess_cell(cell, resources, index)
        except DeadKernelError:
            reason = getattr(km, "stop_reason", None) or (
                "its kernel died (a crash, os._exit or a kill)"
            )
            CpuTimedExecute.stopped = f"the notebook stopped at cell {index + 1}: {reason}"
            CpuTimedExecute.stopped_cell = index + 1
            self._stopped_at = index
            cell.outputs = [_error("KernelStopped", f"the notebook stopped here: {reason}")]
            return cell, resources
        finally:
            self._cell_cpu = self._cpu_of_cell()
            if hasattr(km, "end_cell"):
                km.end_cell()

    def _cpu_of_cell(self) -> float | None:
        """CPU seconds the kernel's tree has used since the running cell began (sandbox only)."""
        km = self.km
        started = getattr(km, "cell_started_cpu", None)
        if started is None or not hasattr(km, "root_pid"):
            return None
        from autograder.sandbox import tree_cpu_seconds

        return tree_cpu_seconds(km.root_pid()) - started

    def _not_run(self, cell):
        """A cell after the stop: not run; a test cell fails, saying why."""
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
            if is_test_cell(cell):
                cell.outputs = [
                    _error("NotRun", f"this test did not run: {CpuTimedExecute.stopped}")
                ]
        return cell

    def count_wall_timeout(self, index: int) -> None:
        """Count cell ``index`` as past the wall clock, once: waiting, or computing.

        Called while the cell runs (nbclient's timeout) or just after it (the checks'
        deadline), with the CPU time of that cell either way.
        """
        if index in self._walled:
            return
        self._walled.add(index)
        used = self._cpu_of_cell() if index == self._index else None
        if used is None and index == self._index:
            used = self._cell_cpu
        limits = getattr(self.km, "limits", None)
        if used is not None and limits is not None:
            if used < self.WAIT_FRACTION * limits.cell_cpu_seconds:
                CpuTimedExecute.waited += 1
                return
        CpuTimedExecute.timed_out += 1

    async def _async_handle_timeout(self, timeout, cell=None):
        self.count_wall_timeout(self._index)
        return await super()._async_handle_timeout(timeout, cell)


def _error(ename: str, evalue: str):
    return new_output("error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])


class CheckedExecute(CpuTimedExecute):
    """Execute, with every test cell's verdict computed here, never in the student's kernel.

    For a test cell, the kernel runs one cell of the grader's making that serves the
    notebook's objects (:func:`checks._serve.serve`) on a Unix socket; this process runs
    the cell's check groups against proxies of them (:class:`checks._remote.Session`), so
    every reference, comparison and verdict is computed in a process that never ran student
    code. The cell's outputs are then the checks' own lines and, on failure, their error:
    nothing the kernel printed. The test cell's source is the course's (nbgrader's
    ``OverwriteCells`` ran before this), parsed by :func:`parse_test_cell`.

    The socket lives in the sandbox's grader folder (``km._grader_dir``), which the kernel
    can reach but not write, so that nothing here can be redirected by a link. The whole
    conversation has one deadline, a little under the cell's wall clock: a kernel that
    answers one byte at a time fails that test cell, and only that one.
    """

    DEADLINE_FRACTION = 0.9  # of the cell's wall clock

    def preprocess_cell(self, cell, resources, index):
        if not is_test_cell(cell) or self._stopped_at is not None:
            return super().preprocess_cell(cell, resources, index)
        calls = parse_test_cell(cell.source)
        folder = getattr(self.km, "_grader_dir", None)
        private = None
        if folder is None:  # no sandbox (trusted code only): a folder of our own
            private = folder = tempfile.mkdtemp(prefix="attn-")
        # A name the kernel cannot guess, so it cannot take the place first.
        path = os.path.join(str(folder), f"c{index}-{secrets.token_hex(4)}.sock")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        # The sandbox's user connects. The folder is this process's and closed to it, so
        # ``path`` is the socket just bound (no link can stand in its place).
        os.chmod(path, 0o777)
        listener.listen(1)
        wall = float(self.timeout or LIMITS.notebook_timeout)
        checker = _Checker(listener, calls, wall * self.DEADLINE_FRACTION)
        # The checks speak the notebook's language (its metadata; checks/_i18n.py): words only.
        checker.language = (self.nb.metadata or {}).get("language")
        thread = threading.Thread(target=checker.run, daemon=True)
        thread.start()
        source = cell.source
        cell.source = _serve_source(path, calls)
        try:
            cell, resources = super().preprocess_cell(cell, resources, index)
        finally:
            cell.source = source
            listener.close()
            thread.join(10)
            if thread.is_alive():
                checker.abort()
                thread.join(10)
            with contextlib.suppress(OSError):
                os.unlink(path)
            if private:
                os.rmdir(private)
        if checker.past_deadline:
            self.count_wall_timeout(index)
        if self._stopped_at == index and checker.error is not None:
            ename, evalue = checker.error
            checker.error = (ename, f"{evalue} ({CpuTimedExecute.stopped})")
        cell.outputs = checker.outputs()
        return cell, resources


def _serve_source(path: str, calls: list[CheckCall]) -> str:
    """The one cell the kernel runs for a test cell: serve the objects the checks need."""
    names = dict.fromkeys(c.target for c in calls)
    targets = ", ".join(f"{t!r}: lambda: ({t})" for t in names)
    return (
        "# The grader runs this test cell's checks itself, on these objects of the notebook.\n"
        f"__import__('checks._serve', fromlist=['serve']).serve({path!r}, {{{targets}}})"
    )


class _Deadline(socket.socket):
    """A connected socket whose every send and receive ends by one deadline, not per call.

    ``settimeout`` is per call: a kernel that sends one byte a second never trips it.
    """

    deadline = 0.0

    @classmethod
    def wrap(cls, sock: socket.socket, deadline: float) -> _Deadline:
        wrapped = cls(sock.family, sock.type, sock.proto, fileno=sock.detach())
        wrapped.deadline = deadline
        wrapped._arm()
        return wrapped

    def _arm(self) -> None:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("past the deadline")
        super().settimeout(left)

    def settimeout(self, value) -> None:  # the deadline decides
        pass

    def recv(self, *args):
        self._arm()
        return super().recv(*args)

    def recv_into(self, *args):
        self._arm()
        return super().recv_into(*args)

    def send(self, *args):
        self._arm()
        return super().send(*args)

    def sendall(self, *args):
        self._arm()
        return super().sendall(*args)


class _Checker:
    """The trusted side of one test cell: run its groups against proxies, keep the verdict."""

    def __init__(self, listener: socket.socket, calls: list[CheckCall], wall: float):
        self.listener, self.calls, self.wall = listener, calls, wall
        self.deadline = time.monotonic() + wall
        self.lines: list[str] = []
        self.error: tuple[str, str] | None = ("GraderError", "the checks did not run")
        self.conn: socket.socket | None = None
        self.past_deadline = False
        self.language: str | None = None  # the submission's (checks/_i18n.py); None: as set

    def run(self) -> None:
        from checks._i18n import using

        with using(self.language):
            self._run()

    def _run(self) -> None:
        from checks._errors import CheckError, CrashInCodeUnderTest
        from checks._remote import Session
        from checks._runner import _run

        try:
            self.listener.settimeout(self.wall)
            try:
                conn, _ = self.listener.accept()
            except OSError:
                raise CheckError(
                    "the notebook never answered the grader's checks (its kernel was busy, "
                    "stopped or replaced the grader's code)"
                ) from None
            self.conn = _Deadline.wrap(conn, self.deadline)
            session = Session(self.conn)
            try:
                for call in self.calls:
                    try:
                        target = session.target(call.target)
                    except CrashInCodeUnderTest as err:  # a NameError: its cell did not run
                        raise CheckError(f"{err.type_name}: {err.message}") from None
                    if call.hidden:
                        import checks.hidden  # noqa: F401  (the grader's own copy)
                    _run(call.group, target, None, True, echo=self.lines.append)
            finally:
                session.close()
            self.error = None
        except CheckError as err:
            self.error = ("CheckError", str(err))
        except TimeoutError:
            self.error = ("TimeoutError", self._late())
        except Exception as err:
            self.error = (type(err).__name__, str(err))
        if self.error is not None and time.monotonic() >= self.deadline:
            self.past_deadline = True
            self.error = ("TimeoutError", self._late())

    def _late(self) -> str:
        return (
            f"the notebook did not finish answering the checks within {self.wall:.0f} s "
            "(it was waiting, or sending its answers too slowly)"
        )

    def abort(self) -> None:
        if self.conn is not None:
            with contextlib.suppress(OSError):
                self.conn.shutdown(socket.SHUT_RDWR)

    def outputs(self) -> list:
        outputs = []
        if self.lines:
            outputs.append(new_output("stream", name="stdout", text="\n".join(self.lines) + "\n"))
        if self.error is not None:
            outputs.append(_error(*self.error))
        return outputs
