"""Grades that do not depend on the machine's load.

Every chapter's reference submission is graded while a core is oversubscribed 3:1 (three
grading jobs, all pinned to one core), and each must get full marks: the grader limits CPU
time, not wall-clock time, and never fails a cell whose output arrives late. One core is
enough to make the point, and leaves the other cores to the rest of the suite (four spinners
on two cores used to slow every test beside it). The load is the batch's own work: a
spinning process stands in only for a slot that the batch's last notebooks leave empty, so
the core holds three runnable processes from the first notebook to the last, and no CPU
time is spent on a spinner while three notebooks are being graded.
"""

import os
import shutil
import sqlite3
import subprocess
import sys
import threading
import time

import pytest
from nbgrader.api import Gradebook

from autograder import notebooks as nbs
from autograder.course import COURSE_ID
from autograder.grading.batch import default_jobs

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]
CHAPTERS = nbs.chapter_names()
RATIO = 3  # runnable processes per core while grading
JOBS = RATIO  # grading jobs on the one core: a notebook each, until the batch's last ones


def keep_the_core_busy(db, total: int, stop: threading.Event, spinners: list) -> None:
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


@pytest.fixture(scope="module")
def graded_under_load(tmp_path_factory, released_copy):
    tmp = tmp_path_factory.mktemp("load")
    course = released_copy(tmp / "course")  # every chapter, released once per test run
    subs = tmp / "submissions"
    subs.mkdir()
    for chapter in CHAPTERS:
        shutil.copy(nbs.notebook_path(chapter), subs / f"reference_{chapter}.ipynb")
    cores = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {max(cores)})  # inherited by the grader, its kernels, the spinners
    try:
        assert default_jobs() == 1  # the grader sees the one core it may use
        stop, spinners = threading.Event(), []
        args = (course.root / "gradebook.db", len(CHAPTERS), stop, spinners)
        topper = threading.Thread(target=keep_the_core_busy, args=args, daemon=True)
        topper.start()
        try:
            start = time.monotonic()
            rc = course.grade(subs, None, tmp / "grades.csv", jobs=JOBS)
            elapsed = time.monotonic() - start
        finally:
            stop.set()
            topper.join()  # and its spinners stopped
    finally:
        os.sched_setaffinity(0, cores)
    print(
        f"\n{len(CHAPTERS)} reference notebooks, {JOBS} jobs on one core ({len(spinners)} "
        f"spinning process(es) for the batch's last notebooks): {elapsed:.0f} s"
    )
    assert rc == 0
    return course, tmp


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_reference_keeps_full_marks_on_an_oversubscribed_machine(graded_under_load, chapter):
    """With the cores oversubscribed 3:1, does each reference still earn every point?"""
    course, _ = graded_under_load
    with Gradebook(course.db_url, course_id=COURSE_ID) as gb:
        sub = gb.find_submission(chapter, f"reference_{chapter}")
        lost = {
            g.name: (g.score, g.max_score)
            for nb in sub.notebooks
            for g in nb.grades
            if g.max_score and g.auto_score is not None and g.score < g.max_score
        }
        assert sub.max_score > 0
        assert lost == {}, lost


def test_no_reference_is_reported_as_a_problem(graded_under_load):
    """Is problems.csv empty: no time-out, retry or interrupted cell for correct work?"""
    _, tmp = graded_under_load
    lines = (tmp / "problems.csv").read_text().splitlines()
    assert lines == ["student_id,assignment,origin,problem,recorded_at"], lines
