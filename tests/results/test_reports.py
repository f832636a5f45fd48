"""The class summary (autograder/results/reports.py), on a gradebook made by hand: no grading run."""

import csv
from types import SimpleNamespace

import pytest
from nbgrader.api import Gradebook

from autograder.course import COURSE_ID, venv_on_path
from autograder.results.reports import summary


def small_gradebook(path):
    """Two students, one test cell (2 points) and one written answer (3 points)."""
    venv_on_path()
    url = f"sqlite:///{path}"
    with Gradebook(url, course_id=COURSE_ID) as gb:
        gb.add_assignment("ch")
        gb.add_notebook("ch", "ch")
        gb.add_grade_cell("test_a", "ch", "ch", max_score=2, cell_type="code")
        gb.add_grade_cell("written", "ch", "ch", max_score=3, cell_type="markdown")
        gb.add_solution_cell("written", "ch", "ch")
        for student, auto in [("ada", 2.0), ("bo", 0.0)]:
            gb.add_student(student)
            gb.add_submission("ch", student)
            gb.find_grade("test_a", "ch", "ch", student).auto_score = auto
        gb.find_grade("written", "ch", "ch", "ada").manual_score = 1.5
        gb.db.commit()
    return SimpleNamespace(db_url=url, course_id=COURSE_ID)


@pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")  # nbgrader's autoflush
def test_the_summary_names_the_written_answers_and_what_waits(tmp_path, capsys):
    course = small_gradebook(tmp_path / "gradebook.db")
    rows = summary(course, "ch", tmp_path / "s.csv", tmp_path / "s.png")
    by = {r["exercise"]: r for r in rows}
    assert by["test_a"]["graded_by"] == "autograder" and by["test_a"]["mean_percent"] == 50.0
    assert by["written"]["graded_by"] == "hand"
    assert by["written"]["to_grade_by_hand"] == 1 and by["written"]["mean_percent"] == 50.0
    assert [r["exercise"] for r in rows] == ["test_a", "written"]
    out = capsys.readouterr().out
    assert "written" in out and "graded by hand (3 points): 1 of 2 graded" in out
    with open(tmp_path / "s.csv", newline="") as f:
        assert [r["graded_by"] for r in csv.DictReader(f)] == ["autograder", "hand"]
