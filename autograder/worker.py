"""A grading worker: one long-lived process that autogrades submissions one at a time.

The parent (:mod:`autograder.grading`) starts ``--jobs`` of these, each as
``python autograder/worker.py`` with a memory cap (``RLIMIT_AS``, inherited by the
kernels it starts) and without the repository on ``PYTHONPATH``, so that a
submission's kernel cannot import the reference solutions. Each worker imports
nbgrader once and then reads jobs, one JSON object per line on stdin, and answers
each with one JSON line on stdout. A job is a private nbgrader course directory
(its own copy of the chapter's source folder and a gradebook with only the
assignment in it); the parent merges the result into the real gradebook, so the
workers never write to it and never contend for it.

Two preprocessors are added to nbgrader's autograde pipeline:

- :class:`StderrIsNotFailure`: nbgrader gives a test cell zero points when anything
  reaches stderr, a harmless ``UserWarning`` included. Only an error fails a test.
- :class:`VerifyChecksRan`: every test cell calls ``checks.run`` or
  ``checks.run_hidden``; under the grader these print a line signed with a key that
  only this worker and the ``checks`` package (imported before any student code)
  know. A test cell whose signed lines are missing did not really run the checks
  (``checks.run`` replaced, the registry emptied, ...): it gets an error, so zero.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import sys
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CALL = re.compile(r"checks\.run(?:_hidden)?\(\s*[\"']([^\"']+)[\"']")
SIGNED = re.compile(r"^\[grader\] .*\n?", re.MULTILINE)
COURSE_ID = "attention-step-by-step"


def _setup_path() -> None:
    # The worker needs the checks registry (names only) and these preprocessors;
    # sys.path is not inherited by the kernels it starts.
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))


def make_preprocessors(sign):
    from nbformat.v4 import new_output
    from nbgrader import utils
    from nbgrader.preprocessors import NbGraderPreprocessor

    import checks
    from autograder.notebooks import DEMO_TAG
    from checks._core import REGISTRY, signed_line

    checks.groups()  # load the hidden groups' names

    class StderrIsNotFailure(NbGraderPreprocessor):
        """In test cells, show stderr as ordinary output: only an error costs points."""

        def preprocess_cell(self, cell, resources, index):
            if cell.cell_type == "code" and utils.is_grade(cell) and not utils.is_solution(cell):
                for output in cell.outputs:
                    if output.output_type == "stream" and output.name == "stderr":
                        output.name = "stdout"
            return cell, resources

    class VerifyChecksRan(NbGraderPreprocessor):
        """Fail a test cell whose checks did not sign their result (see the module docstring)."""

        def preprocess_cell(self, cell, resources, index):
            if cell.cell_type != "code" or not utils.is_grade(cell) or utils.is_solution(cell):
                return cell, resources
            text = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
            failed = any(o.output_type == "error" for o in cell.outputs)
            missing = []
            for group in CALL.findall(cell.source):
                names = [c.fn.__qualname__ for c in REGISTRY.get(group, [])]
                if signed_line(group, names, sign) not in text:
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

    return StderrIsNotFailure, VerifyChecksRan, CapOutput, SkipDemos


def grade(job: dict) -> dict:
    """Autograde one submission in its private course directory ``job['root']``."""
    import hashlib
    import hmac

    from nbconvert.preprocessors import ClearMetadataPreprocessor
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.preprocessors import (
        AssignLatePenalties,
        CheckCellMetadata,
        Execute,
        LimitOutput,
        SaveAutoGrades,
    )
    from traitlets.config import Config

    root = Path(job["root"])
    key = secrets.token_bytes(32)

    def sign(text):
        return hmac.new(key, text.encode(), hashlib.sha256).hexdigest()[:20]

    stderr_ok, verify, cap, skip_demos = make_preprocessors(
        sign
    )  # imports checks here, before the key exists
    key_file = root / ".grader-key"
    key_file.write_bytes(key)
    os.environ["ATTENTION_GRADER_KEY_FILE"] = str(key_file)
    cfg = Config()
    cfg.CourseDirectory.root = str(root)
    cfg.CourseDirectory.course_id = COURSE_ID
    cfg.CourseDirectory.db_url = f"sqlite:///{root / 'gradebook.db'}"
    cfg.Execute.kernel_name = "python3"
    if job.get("sandbox", True):
        from autograder.sandbox import FIRST_UID, Limits, SandboxKernelManager

        cfg.Execute.kernel_manager_class = type(
            "JobKernelManager",
            (SandboxKernelManager,),
            {
                "uid": FIRST_UID + job.get("slot", 0) if os.geteuid() == 0 else None,
                "limits": Limits(
                    memory_mb=job.get("memory_mb", 4096),
                    cpu_seconds=job.get("notebook_timeout", 600),
                ),
                "grader_key": key,
            },
        )
    else:  # trusted code only: the kernel runs as this user, with the key in its environment
        key_file = root / ".grader-key"
        key_file.write_bytes(key)
        os.environ["ATTENTION_GRADER_KEY_FILE"] = str(key_file)
    cfg.Execute.timeout = job["cell_timeout"]
    cfg.Execute.allow_errors = True
    cfg.Execute.interrupt_on_timeout = True
    cfg.Execute.skip_cells_with_tag = skip_demos.SKIP
    # A busy machine can delay a finished cell's output by seconds; nbclient's default
    # (4 s, then an error) would turn correct work into a failure.
    cfg.Execute.iopub_timeout = 120
    cfg.OverwriteCells.add_missing_cells = True
    cfg.LimitOutput.max_lines = job.get("max_lines", 1000)
    cfg.Autograde.autograde_preprocessors = [
        skip_demos,
        Execute,
        cap,
        stderr_ok,
        verify,
        ClearMetadataPreprocessor,
        LimitOutput,
        SaveAutoGrades,
        AssignLatePenalties,
        CheckCellMetadata,
    ]
    coursedir = CourseDirectory(config=cfg)
    api = NbGraderAPI(coursedir=coursedir, config=cfg)
    WATCHDOG.killed.clear()
    try:
        result = api.autograde(job["chapter"], job["student"], force=True, create=True)
    finally:
        os.environ.pop("ATTENTION_GRADER_KEY_FILE", None)
        (root / ".grader-key").unlink(missing_ok=True)
    return {
        "job": job["job"],
        "success": bool(result.get("success")),
        "error": (result.get("error") or "")[-4000:],
        "log": (result.get("log") or "")[-4000:],
        "killed": "; ".join(sorted(set(WATCHDOG.killed.values()))),
    }


class _NoWatchdog:
    killed: dict = {}


WATCHDOG = _NoWatchdog()


def main() -> None:
    global WATCHDOG
    _setup_path()
    import nbgrader.apps  # noqa: F401  (import once, up front)

    import checks  # noqa: F401  (here, so that its grader key is never this process's)

    # The protocol keeps the real stdout; everything else that writes to fd 1 (nbgrader,
    # the kernels this process starts, a submission's os.write(1, ...)) goes to stderr.
    protocol = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    def reply(obj):
        protocol.write(json.dumps(obj) + "\n")
        protocol.flush()

    from autograder.sandbox import Watchdog

    WATCHDOG = Watchdog().start()
    reply({"ready": os.getpid()})
    for line in sys.stdin:
        job = json.loads(line)
        try:
            result = grade(job)
            if not result["success"]:  # the whole story goes to this worker's log
                print(
                    f"job {job.get('job')} failed:\n{result['log']}\n{result['error']}",
                    file=sys.stderr,
                )
            reply(result)
        except Exception:
            reply(
                {"job": job.get("job"), "success": False, "error": traceback.format_exc()[-4000:]}
            )


if __name__ == "__main__":
    main()
