"""A grading worker: one long-lived process that autogrades submissions one at a time.

The parent (:mod:`autograder.grading.batch`) starts ``--jobs`` of these, each as
``python autograder/grading/worker.py`` with a memory cap (``RLIMIT_AS``, inherited by the
kernels it starts) and without the repository on ``PYTHONPATH``, so that a
submission's kernel cannot import the reference solutions. Each worker imports
nbgrader once and then reads jobs, one JSON object per line on stdin, and answers
each with one JSON line on stdout. A job is a private nbgrader course directory
(its own copy of the chapter's source folder and a gradebook with only the
assignment in it); the parent merges the result into the real gradebook, so the
workers never write to it and never contend for it.

The verdict of every test cell is computed in this process, which never runs student
code: :class:`autograder.grading.preprocessors.CheckedExecute` has the sandboxed kernel serve
the notebook's functions and modules as data, and runs the checks (hidden ones
included, from the repository, never copied into the job) against proxies of them.

The kernel runs in the job's run folder (``job['run']``, see
:func:`autograder.grading.jobs.run_folder`), never in the folder nbgrader writes the graded
notebook to. Each answer says how much CPU time this process spent on the job (``cpu``):
the parent stops a worker that spends more than its limit on one notebook.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
STUDENT_OUTPUTS = "student-outputs.ipynb"  # in the job's root, outside every sandbox


def _setup_path() -> None:
    # The worker needs the checks registry (names only) and these preprocessors;
    # sys.path is not inherited by the kernels it starts.
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))


def grade(job: dict) -> dict:
    """Autograde one submission in its private course directory ``job['root']``."""
    from nbconvert.preprocessors import ClearMetadataPreprocessor
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.preprocessors import (
        AssignLatePenalties,
        CheckCellMetadata,
        LimitOutput,
        SaveAutoGrades,
    )

    from autograder import records
    from autograder.config import LIMITS, nbgrader_config
    from autograder.grading.preprocessors import (
        CapOutput,
        CheckedExecute,
        CpuTimedExecute,
        DropStudentOutputs,
        SkipDemos,
    )

    root = Path(job["root"])
    cfg = nbgrader_config(root)  # the job's own gradebook, root/gradebook.db
    cell_cpu = job["cell_timeout"]
    wall_factor = job["wall_factor"]  # autograder.grading.batch.Settings.wall_factor
    if job.get("sandbox", True):
        from autograder.sandbox import FIRST_UID, Limits, SandboxKernelManager

        cfg.Execute.kernel_manager_class = SandboxKernelManager
        cfg.SandboxKernelManager.uid = FIRST_UID + job.get("slot", 0) if os.geteuid() == 0 else None
        cfg.SandboxKernelManager.namespaces = job.get("sandbox") != "user"
        cfg.SandboxKernelManager.limits = Limits(
            memory_mb=job.get("memory_mb", LIMITS.memory_mb),
            cpu_seconds=job.get("notebook_timeout", LIMITS.notebook_timeout),
            cell_cpu_seconds=cell_cpu,
        )
        # CPU time is what the watchdog limits; the wall clock is only a backstop.
        cfg.Execute.timeout = cell_cpu * wall_factor
    else:  # trusted code only: the kernel runs as this user
        cfg.Execute.timeout = cell_cpu
    cfg.Execute.skip_cells_with_tag = SkipDemos.SKIP
    # After the last cell nothing of the kernel is wanted: killing it (and, with the sandbox,
    # everything it started) saves the 1-3 s of CPU a graceful exit spends tearing PyTorch
    # down, and runs none of the student's exit handlers.
    cfg.Execute.shutdown_kernel = "immediate"
    # A busy machine can delay a finished cell's output by seconds; nbgrader's default
    # (then an error) would turn correct work into a failure. Wait as long as the cell may.
    cfg.Execute.iopub_timeout = cfg.Execute.timeout
    cfg.Execute.raise_on_iopub_timeout = False
    # A kernel imports PyTorch before its first cell (autograder.sandbox.PRELOAD): about 3 s
    # of CPU, which a busy machine can stretch past nbclient's 60 s to start. Also a backstop.
    cfg.Execute.startup_timeout = max(60, cfg.Execute.timeout)
    # The parent reconciled the submission with the gradebook (autograder.grading.jobs.reconcile):
    # nothing is missing, and nbgrader's own re-insertion (which fails on an extra or a
    # missing neighbouring cell) stays off.
    cfg.OverwriteCells.add_missing_cells = False
    if job.get("run"):
        cfg.CpuTimedExecute.run_path = job["run"]
    cfg.LimitOutput.max_lines = job.get("max_lines", 1000)
    cfg.DropStudentOutputs.keep_in = str(root / STUDENT_OUTPUTS)
    cfg.Autograde.autograde_preprocessors = [
        *([] if job.get("run_demos") else [SkipDemos]),  # run_demos: benchmarks only
        CheckedExecute,
        CapOutput,
        LimitOutput,
        DropStudentOutputs,  # after the caps: it keeps a copy of the outputs for the instructor
        ClearMetadataPreprocessor,
        SaveAutoGrades,
        AssignLatePenalties,
        CheckCellMetadata,
    ]
    coursedir = CourseDirectory(config=cfg)
    api = NbGraderAPI(coursedir=coursedir, config=cfg)
    WATCHDOG.clear()
    CpuTimedExecute.reset()
    start = time.process_time()
    result = api.autograde(job["chapter"], job["student"], force=True, create=True)
    return {
        "job": job["job"],
        "success": bool(result.get("success")),
        "error": (result.get("error") or "")[-4000:],
        "log": (result.get("log") or "")[-4000:],
        "killed": records.all_of(sorted(set(WATCHDOG.killed.values()))),
        "events": "; ".join(sorted(set(WATCHDOG.events.values()))),
        "stopped": CpuTimedExecute.stopped or "",
        "stopped_cell": CpuTimedExecute.stopped_cell,
        "wall_timeouts": CpuTimedExecute.timed_out,
        "waited": CpuTimedExecute.waited,
        "cpu": round(time.process_time() - start, 2),
    }


class _NoWatchdog:
    killed: dict = {}
    events: dict = {}

    def clear(self) -> None:
        pass


WATCHDOG = _NoWatchdog()


def main() -> None:
    global WATCHDOG
    _setup_path()
    from autograder import leave_out_iri_grammar

    leave_out_iri_grammar()  # about 2.5 s of CPU, a third of the worker's start
    import nbgrader.apps  # noqa: F401  (import once, up front)

    import checks  # noqa: F401  (the checks, hidden ones included, run in this process)
    import checks.hidden  # noqa: F401

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
