"""The CSV files a grading run writes (autograder/grading/tables.py): problems.csv and grades.csv stay
complete across runs (a rerun, a resumed run, a run over new late files). No nbgrader run."""

import csv

from autograder.grading import tables
from autograder.grading.collect import Submission

HEADER = (
    "assignment,duedate,timestamp,student_id,last_name,first_name,email,raw_score,"
    "late_submission_penalty,score,max_score\n"
)


def _sub(student, chapter="masking", origin=None, warnings=()):
    return Submission(student, chapter, None, origin or f"{student}.ipynb", warnings=[*warnings])


def _rows(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_problems_are_kept_across_runs_each_with_when(tmp_path):
    """Does a rerun add its problems to the earlier ones, never drop one, and not repeat one?"""
    path = tmp_path / "problems.csv"
    late = _sub("bo", warnings=["bo (1).ipynb set aside: older than bo.ipynb"])
    tables.write_problems(path, [(_sub("ada"), "the notebook file is empty")], [late], "T1")
    # The rerun: ada unchanged (skipped, so not reported again), a new late file from cy.
    tables.write_problems(path, [(_sub("cy"), "timed out")], [late], "T2")
    rows = _rows(path)
    assert [(r["student_id"], r["problem"], r["recorded_at"]) for r in rows] == [
        ("ada", "the notebook file is empty", "T1"),
        ("bo", "warning: bo (1).ipynb set aside: older than bo.ipynb", "T1"),
        ("cy", "timed out", "T2"),
    ]


def test_problems_from_before_the_when_column_are_kept(tmp_path):
    path = tmp_path / "problems.csv"
    path.write_text("student_id,assignment,origin,problem\nada,masking,ada.ipynb,why\n")
    tables.write_problems(path, [], [], "T")
    assert [(r["student_id"], r["recorded_at"]) for r in _rows(path)] == [("ada", "")]


def test_rows_without_a_chapter_survive_a_later_run(tmp_path):
    """A file no chapter could be told for has a row that the gradebook does not hold: does a
    later run (over other files) keep it?"""
    grades = tmp_path / "grades.csv"
    grades.write_text(HEADER + "masking,,,ada,,,,10.0,0.0,10.0,10.0\n,,,zed,,,,0.0,,0.0,\n")
    kept = tables.unassigned_rows(grades)
    grades.write_text(HEADER + "masking,,,ada,,,,10.0,0.0,10.0,10.0\n")  # the new export
    assert tables.add_unassigned_rows(grades, [_sub("bo")], kept) == 1
    assert [(r["student_id"], r["assignment"]) for r in _rows(grades)] == [
        ("ada", "masking"),
        ("zed", ""),
    ]


def test_grades_say_when_submitted_and_when_graded(tmp_path):
    grades = tmp_path / "grades.csv"
    grades.write_text(
        HEADER
        + "masking,,2026-11-20 10:00:00,ada,,,,10.0,0.0,10.0,10.0\n"
        + "masking,,,bo,,,,5.0,0.0,5.0,10.0\n"
        + "masking,,,cy,,,,5.0,0.0,5.0,10.0\n"
    )
    times = {
        ("ada", "masking"): {"graded_at": "G1", "submitted_at": "x", "source": "lms"},
        ("bo", "masking"): {
            "graded_at": "G2",
            "submitted_at": "2026-11-19T09:00:00",
            "source": "zip",
        },
        ("cy", "masking"): {"graded_at": "G3", "submitted_at": "", "source": ""},
    }
    tables.add_times(grades, times)
    rows = {r["student_id"]: r for r in _rows(grades)}
    assert (rows["ada"]["timestamp"], rows["ada"]["timestamp_source"]) == (
        "2026-11-20 10:00:00",
        "lms",
    )
    assert (rows["bo"]["timestamp"], rows["bo"]["timestamp_source"]) == (
        "2026-11-19T09:00:00",
        "zip",
    )
    assert (rows["cy"]["timestamp"], rows["cy"]["timestamp_source"]) == ("", "")
    assert [rows[s]["graded_at"] for s in ("ada", "bo", "cy")] == ["G1", "G2", "G3"]
