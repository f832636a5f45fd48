"""The grader's record in the gradebook (autograder/grading/ledger.py): when a submission was handed
in and graded, kept for grades.csv across runs."""

import subprocess

import pytest
from nbgrader.api import Gradebook

from autograder.config import COURSE_ID
from autograder.grading.collect import Submission
from autograder.grading.ledger import Ledger, alembic_head, venv_on_path


@pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")  # nbgrader's autoflush
def test_times_are_recorded_with_their_source(tmp_path):
    venv_on_path()
    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with Gradebook(url, course_id=COURSE_ID) as gb:
        gb.add_assignment("ch")
        gb.add_notebook("ch", "ch")
        gb.add_grade_cell("test_a", "ch", "ch", max_score=1, cell_type="code")
    ledger = Ledger(url, COURSE_ID)
    try:
        lms = Submission("ada", "ch", None, "inbound/x", timestamp="2026-11-20 10:00:00")
        zipped = Submission("bo", "ch", None, "bo.zip", file_time="2026-11-19T09:30:00")
        bare = Submission("cy", "ch", None, "cy.ipynb")
        for sub in (lms, zipped, bare):
            ledger.record(sub, None, "the notebook file is empty")
        times = ledger.times()
    finally:
        ledger.close()
    assert times[("ada", "ch")]["submitted_at"] == "2026-11-20 10:00:00"
    assert times[("ada", "ch")]["source"] == "lms"
    assert (times[("bo", "ch")]["submitted_at"], times[("bo", "ch")]["source"]) == (
        "2026-11-19T09:30:00",
        "zip",
    )
    assert times[("cy", "ch")]["submitted_at"] == "" and times[("cy", "ch")]["source"] == ""
    assert all(t["graded_at"].endswith("+00:00") for t in times.values())


@pytest.mark.slow
def test_the_schema_head_read_in_process_is_the_one_alembic_gives():
    """venv_on_path() replaces nbgrader's `alembic heads` subprocess by reading the same
    migration scripts in process: do both name the same head revision?"""
    import nbgrader.api
    from nbgrader.dbutil import _temp_alembic_ini

    venv_on_path()  # this environment's alembic on PATH, and the in-process head installed
    with _temp_alembic_ini("sqlite:////tmp/gradebook.db") as ini:
        heads = subprocess.check_output(["alembic", "-c", ini, "heads"], text=True)
    assert heads.split()[0] == alembic_head() == nbgrader.api.get_alembic_version()
