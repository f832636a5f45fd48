"""The grader's nbgrader preprocessors, one class each, added to nbgrader's autograde pipeline.

- :class:`SkipDemos`: demo cells (training loops, benchmarks) are not run at grading.
- :class:`CpuTimedExecute`: nbgrader's ``Execute``, marking where each cell starts so
  that the sandbox's watchdog limits the cell's CPU time; wall-clock limits are only a
  backstop, and a late IOPub message never fails a finished cell.
- :class:`CheckedExecute`: the same, and every test cell's checks run in this process
  against proxies of the notebook's objects: the verdict never depends on code that ran
  in the student's kernel (see :mod:`checks._remote`).
- :class:`DropStudentOutputs`: no output that student code produced at grading time is
  kept; feedback shows the student's cells and the checks' messages.
- :class:`CapOutput`: any single output over a size is cut.

Each is tested on a tiny notebook in ``tests/test_preprocessors.py``.
"""

from __future__ import annotations

import ast
import contextlib
import os
import secrets
import socket
import tempfile
import threading
from dataclasses import dataclass

import nbformat
from nbformat.v4 import new_output
from nbgrader import utils
from nbgrader.preprocessors import Execute, NbGraderPreprocessor
from traitlets import Unicode

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
    """nbgrader's ``Execute``, telling the kernel manager where each cell starts and ends.

    With :class:`autograder.sandbox.SandboxKernelManager`, the sandbox's watchdog then
    interrupts a cell whose process tree has used more than its CPU time since it began.
    The ``timeout`` trait (wall clock) stays as a backstop, set many times larger. The
    wall-clock cells that still time out are counted in :attr:`timed_out`.
    """

    timed_out = 0  # cells that hit the wall-clock backstop, in this process

    def preprocess_cell(self, cell, resources, index):
        km = self.km
        if cell.cell_type == "code" and hasattr(km, "start_cell"):
            km.start_cell()
        try:
            return super().preprocess_cell(cell, resources, index)
        finally:
            if hasattr(km, "end_cell"):
                km.end_cell()

    async def _async_handle_timeout(self, timeout, cell=None):
        CpuTimedExecute.timed_out += 1
        return await super()._async_handle_timeout(timeout, cell)


class CheckedExecute(CpuTimedExecute):
    """Execute, with every test cell's verdict computed here, never in the student's kernel.

    For a test cell, the kernel runs one cell of the grader's making that serves the
    notebook's objects (:func:`checks._serve.serve`) on a Unix socket; this process runs
    the cell's check groups against proxies of them (:class:`checks._remote.Session`), so
    every reference, comparison and verdict is computed in a process that never ran student
    code. The cell's outputs are then the checks' own lines and, on failure, their error:
    nothing the kernel printed. The test cell's source is the course's (nbgrader's
    ``OverwriteCells`` ran before this), parsed by :func:`parse_test_cell`.
    """

    def preprocess_cell(self, cell, resources, index):
        if not is_test_cell(cell):
            return super().preprocess_cell(cell, resources, index)
        calls = parse_test_cell(cell.source)
        folder = getattr(self.km, "_ipc_dir", None)
        private = None
        if folder is None:  # no sandbox (trusted code only): a folder of our own
            private = folder = tempfile.mkdtemp(prefix="attn-")
        # A name the kernel cannot guess, so it cannot take the place first.
        path = os.path.join(str(folder), f"c{index}-{secrets.token_hex(4)}.sock")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        os.chmod(path, 0o777)  # the sandbox's user connects; the folder itself is private
        listener.listen(1)
        wall = float(self.timeout or 600)
        checker = _Checker(listener, calls, wall)
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


class _Checker:
    """The trusted side of one test cell: run its groups against proxies, keep the verdict."""

    def __init__(self, listener: socket.socket, calls: list[CheckCall], wall: float):
        self.listener, self.calls, self.wall = listener, calls, wall
        self.lines: list[str] = []
        self.error: tuple[str, str] | None = ("GraderError", "the checks did not run")
        self.conn: socket.socket | None = None

    def run(self) -> None:
        from checks._core import CheckError, CrashInCodeUnderTest, _run
        from checks._remote import Session

        try:
            self.listener.settimeout(self.wall)
            try:
                self.conn, _ = self.listener.accept()
            except OSError:
                raise CheckError(
                    "the notebook never answered the grader's checks (its kernel was busy, "
                    "stopped or replaced the grader's code)"
                ) from None
            self.conn.settimeout(self.wall)
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
            self.error = ("TimeoutError", f"the notebook did not answer within {self.wall:.0f} s")
        except Exception as err:
            self.error = (type(err).__name__, str(err))

    def abort(self) -> None:
        if self.conn is not None:
            with contextlib.suppress(OSError):
                self.conn.shutdown(socket.SHUT_RDWR)

    def outputs(self) -> list:
        outputs = []
        if self.lines:
            outputs.append(new_output("stream", name="stdout", text="\n".join(self.lines) + "\n"))
        if self.error is not None:
            ename, evalue = self.error
            outputs.append(
                new_output("error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])
            )
        return outputs
