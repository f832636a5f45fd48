"""What a grading run records about what it skips and what it collects
(autograder/grading/batch.py, autograder/grading/collect.py). No nbgrader run."""

import zipfile

import nbformat

from autograder.grading import batch, collect


def test_a_notebook_from_a_zip_keeps_its_date(tmp_path):
    """Is the date a notebook has in its zip the submission's file_time?"""
    upload = tmp_path / "in"
    upload.mkdir()
    with zipfile.ZipFile(upload / "ada.zip", "w") as z:
        info = zipfile.ZipInfo("masking.ipynb", date_time=(2026, 11, 19, 9, 30, 0))
        z.writestr(info, nbformat.writes(nbformat.v4.new_notebook()))
    (sub,) = collect.collect(upload, "masking", tmp_path / "scratch")
    assert sub.file_time == "2026-11-19T09:30:00"


def test_a_resumed_run_reports_what_it_skips_from_the_record():
    """An interrupted run recorded problems it never wrote to problems.csv: does the outcome
    the gradebook keeps give the same line back?"""
    assert batch.recorded_problem("the notebook file is empty") == "the notebook file is empty"
    assert batch.recorded_problem("graded") is None
    assert batch.recorded_problem("graded; warning: 2 notebooks") is None
    assert (
        batch.recorded_problem("graded; stopped at cell 7; warning: x")
        == "graded, but stopped at cell 7"
    )
    assert batch.recorded_problem(None) is None
