"""Grades that do not depend on the machine's load.

Every chapter's reference submission is graded while a busy process oversubscribes a core
3:1 (two grading kernels and one spinning process, all pinned to one core), and each must
get full marks: the grader limits CPU time, not wall-clock time, and never fails a cell
whose output arrives late. One core is enough to make the point, and leaves the other
cores to the rest of the suite (four spinners on two cores used to slow every test beside it).
"""

import os
import shutil
import subprocess
import sys
import time

import pytest
from nbgrader.api import Gradebook

from autograder import notebooks as nbs
from autograder.course import COURSE_ID
from autograder.grading.batch import default_jobs

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]
CHAPTERS = nbs.chapter_names()
JOBS = 2
RATIO = 3  # runnable processes per core while grading


@pytest.fixture(scope="module")
def graded_under_load(tmp_path_factory, released_copy):
    tmp = tmp_path_factory.mktemp("load")
    course = released_copy(tmp / "course")  # every chapter, released once per test run
    subs = tmp / "submissions"
    subs.mkdir()
    for chapter in CHAPTERS:
        shutil.copy(nbs.notebook_path(chapter), subs / f"reference_{chapter}.ipynb")
    cores = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {max(cores)})  # inherited by the grader, its kernels, the spinner
    try:
        spinners = RATIO * default_jobs() - JOBS
        assert default_jobs() == 1 and spinners == 1
        busy = [
            subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(spinners)
        ]
        try:
            start = time.monotonic()
            rc = course.grade(subs, None, tmp / "grades.csv", jobs=JOBS)
            elapsed = time.monotonic() - start
        finally:
            for proc in busy:
                proc.kill()
                proc.wait()
    finally:
        os.sched_setaffinity(0, cores)
    print(
        f"\n{len(CHAPTERS)} reference notebooks, {JOBS} jobs and {spinners} spinning process on "
        f"one core: {elapsed:.0f} s"
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
