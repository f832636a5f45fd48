"""A core oversubscribed 3:1 for a grading run: grades must not depend on the machine's load.

:func:`one_busy_core` pins the grader, its kernels and a topping-up thread to one core, and the
grading run uses :data:`JOBS` jobs on it: three runnable processes per core. The grader limits
CPU time, not wall-clock time, and never fails a cell whose output arrives late, so every grade
must be what it is on an idle machine. One core is enough to make the point and leaves the
other to the rest of the suite. The load is the batch's own work: a spinning process stands in
only for a slot that the batch's last notebooks leave empty, so the core holds three runnable
processes from the first notebook to the last, and no CPU time goes to a spinner while three
notebooks are being graded. ``tests/test_autograde.py`` grades every chapter this way.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

from autograder.grading.batch import default_jobs

RATIO = 3  # runnable processes per core while grading
JOBS = RATIO  # grading jobs on the one core: a notebook each, until the batch's last ones


def keep_the_core_busy(db: Path, total: int, stop: threading.Event, spinners: list) -> None:
    """Until ``stop``, or until the last of the batch's ``total`` notebooks is graded: one
    spinning process for each of the ``JOBS`` slots that the batch no longer fills (fewer
    than ``JOBS`` notebooks left), read from the grader's record in ``db`` (read-only, so as
    not to touch the grader's database)."""
    try:
        while not stop.wait(0.2):
            try:
                with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
                    done = con.execute("SELECT COUNT(*) FROM attention_graded").fetchone()[0]
            except sqlite3.Error:  # not made yet
                continue
            if done >= total:
                return
            while len(spinners) < JOBS - min(JOBS, total - done):
                spinners.append(subprocess.Popen([sys.executable, "-c", "while True: pass"]))
    finally:
        for proc in spinners:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def one_busy_core(db: Path, total: int):
    """Inside: this process (and what it starts) on one core, kept 3:1 busy while ``total``
    notebooks are graded with ``JOBS`` jobs into the gradebook ``db``. Yields the list of the
    spinners it started (for the report)."""
    cores = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {max(cores)})  # inherited by the grader, its kernels, the spinners
    try:
        assert default_jobs() == 1  # the grader sees the one core it may use
        stop, spinners = threading.Event(), []
        topper = threading.Thread(
            target=keep_the_core_busy, args=(db, total, stop, spinners), daemon=True
        )
        topper.start()
        try:
            yield spinners
        finally:
            stop.set()
            topper.join()  # and its spinners stopped
    finally:
        os.sched_setaffinity(0, cores)
