"""The grader's nbgrader preprocessors, one class each, added to nbgrader's autograde pipeline.

- :class:`SkipDemos`: demo cells (training loops, benchmarks) are not run at grading.
- :class:`CpuTimedExecute`: nbgrader's ``Execute``, marking where each cell starts so
  that the sandbox's watchdog limits the cell's CPU time; wall-clock limits are only a
  backstop, and a late IOPub message never fails a finished cell.
- :class:`CapOutput`: any single output over a size is cut.
- :class:`StderrIsNotFailure`: only an error fails a test cell, not a warning on stderr.
- :class:`VerifyChecksRan`: a test cell whose checks did not sign their result gets an
  error (see ``autograder.worker``).

Each is tested on a tiny notebook in ``tests/test_preprocessors.py``.
"""

from __future__ import annotations

import re

from nbformat.v4 import new_output
from nbgrader import utils
from nbgrader.preprocessors import Execute, NbGraderPreprocessor

from autograder.notebooks import DEMO_TAG

CALL = re.compile(r"checks\.run(?:_hidden)?\(\s*[\"']([^\"']+)[\"']")
SIGNED = re.compile(r"^\[grader\] .*\n?", re.MULTILINE)


class StderrIsNotFailure(NbGraderPreprocessor):
    """In test cells, show stderr as ordinary output: only an error costs points."""

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "code" and utils.is_grade(cell) and not utils.is_solution(cell):
            for output in cell.outputs:
                if output.output_type == "stream" and output.name == "stderr":
                    output.name = "stdout"
        return cell, resources


class VerifyChecksRan(NbGraderPreprocessor):
    """Fail a test cell whose checks did not sign their result.

    Use :meth:`signed_with` to get the class bound to one job's signer.
    """

    sign = None  # text -> signature, set by signed_with

    @classmethod
    def signed_with(cls, sign) -> type[VerifyChecksRan]:
        import checks

        checks.groups()  # load the hidden groups' names too: their lines are signed as well
        return type(cls.__name__, (cls,), {"sign": staticmethod(sign)})

    def preprocess_cell(self, cell, resources, index):
        from checks._core import REGISTRY, signed_line

        if cell.cell_type != "code" or not utils.is_grade(cell) or utils.is_solution(cell):
            return cell, resources
        text = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
        failed = any(o.output_type == "error" for o in cell.outputs)
        missing = []
        for group in CALL.findall(cell.source):
            names = [c.fn.__qualname__ for c in REGISTRY.get(group, [])]
            if signed_line(group, names, self.sign) not in text:
                missing.append(group)
        for output in cell.outputs:  # the signatures are for the grader, not the feedback
            if output.output_type == "stream":
                output.text = SIGNED.sub("", output.text)
        if missing and not failed:
            cell.outputs.append(
                new_output(
                    "error",
                    ename="GraderIntegrityError",
                    evalue=(
                        f"the checks {', '.join(missing)} did not report back to the grader: "
                        "something in this notebook replaced or bypassed the checking code "
                        "(checks.run, the check registry, ...). No points for this cell."
                    ),
                    traceback=[],
                )
            )
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
