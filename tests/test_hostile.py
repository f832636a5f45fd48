"""Hostile and broken submissions: each graded or reported exactly, the batch unharmed.

The corpus (tests/hostile) is graded in one batch with the reference answers mixed
in, the way a class's submissions arrive. Each case states which test cells must
score zero (every other test cell must get full points) and which problem, if any,
the grader must report.
"""

import csv

import nbformat
import pytest
from nbgrader.api import Gradebook

from autograder import notebooks as nbs
from autograder.course import COURSE_ID, Course
from tests.hostile import ALL_CELLS, CASES, CHAPTER, SETTINGS, write

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile")
    subs = tmp / "submissions"
    subs.mkdir()
    for case in CASES.values():
        write(case, subs / f"{case.name}.ipynb")
    course = Course(tmp / "course", timeout=SETTINGS["cell_timeout"])
    rc = course.grade(
        subs,
        CHAPTER,
        tmp / "grades.csv",
        jobs=2,
        notebook_timeout=SETTINGS["notebook_timeout"],
        wall_factor=SETTINGS["wall_factor"],
        memory_mb=SETTINGS["memory_mb"],
    )
    assert rc == 0
    course.first_run = course.last_stats
    with open(tmp / "problems.csv", newline="") as f:
        problems = {row["student_id"]: row["problem"] for row in csv.DictReader(f)}
    with Gradebook(course.db_url, course_id=COURSE_ID) as gb:
        scores = {
            name: {cell: gb.find_grade(cell, CHAPTER, CHAPTER, name).score for cell in ALL_CELLS}
            for name in CASES
        }
        max_scores = {name: gb.find_submission(CHAPTER, name).max_score for name in CASES}
    return course, scores, max_scores, problems, tmp


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_hostile_case_is_graded_or_reported_exactly(graded, name):
    """Does every test cell get exactly its expected score, and is the expected problem reported?"""
    course, scores, _, problems, _ = graded
    case = CASES[name]
    with Gradebook(course.db_url, course_id=COURSE_ID) as gb:
        full = {
            c: gb.find_grade(c, CHAPTER, CHAPTER, "reference_answers").max_score for c in ALL_CELLS
        }
    expected = {c: 0.0 if c in case.zero_cells else full[c] for c in ALL_CELLS}
    assert scores[name] == expected, case.note
    if case.problem:
        assert case.problem in problems.get(name, ""), problems.get(name)
    else:
        assert name not in problems, problems[name]


def test_raised_points_do_not_raise_the_maximum(graded):
    """Does a submission that edits its points metadata keep the gradebook's maximum?"""
    _, _, max_scores, _, _ = graded
    points = sum(
        float(nbs.nbgrader_meta(c).get("points", 0))
        for c in nbs.read(nbs.notebook_path(CHAPTER)).cells
        if nbs.nbgrader_meta(c).get("grade")
    )
    assert points >= 12
    assert max_scores["raised_points"] == max_scores["reference_answers"] == points


def student_outputs(course, name) -> str:
    """What a submission printed at grading: kept for the instructor, never in feedback."""
    path = course.root / ".grading" / "outputs" / name / f"{CHAPTER}.ipynb"
    nb = nbformat.read(path, as_version=4)
    return "".join(
        o.get("text", "") + str(o.get("data", {}).get("text/plain", ""))
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
    )


def test_enormous_output_is_capped_and_kept_out_of_the_autograded_notebook(graded):
    """Is what a notebook printed (~20 MB) capped where it is kept, and absent where feedback
    is made from?"""
    course, *_ = graded
    path = course.root / "autograded" / "enormous_output" / CHAPTER / f"{CHAPTER}.ipynb"
    assert path.stat().st_size < 200_000 and "xxxxxxxxxx" not in path.read_text()
    kept = course.root / ".grading" / "outputs" / "enormous_output" / f"{CHAPTER}.ipynb"
    assert kept.stat().st_size < 1_000_000
    assert "cut by the grader" in student_outputs(course, "enormous_output")


def test_feedback_shows_no_student_output_and_no_hidden_check(graded):
    """Does every autograded notebook (what feedback is made from) hold only the checks'
    outputs in test cells, no output elsewhere, and no word of the hidden checks' code?"""
    import ast

    import checks.hidden.masking as hidden

    course, *_ = graded
    tree = ast.parse(open(hidden.__file__).read())
    released = nbformat.writes(nbs.read(nbs.notebook_path(CHAPTER)))  # cell ids, group names
    secrets = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    secrets = {name for name in secrets if name not in released}
    assert len(secrets) >= 5
    for folder in (course.root / "autograded").iterdir():
        nb = nbformat.read(folder / CHAPTER / f"{CHAPTER}.ipynb", as_version=4)
        text = nbformat.writes(nb)
        assert not [s for s in secrets if s in text], folder.name
        for cell in nb.cells:
            if cell.cell_type == "code" and not nbs.nbgrader_meta(cell).get("grade"):
                assert cell.outputs == [], (folder.name, cell.source[:60])
    assert "ATTACK SUCCEEDED: read" not in student_outputs(course, "leaks_the_hidden_checks")


def test_writing_outside_the_folder_never_reaches_the_course(graded):
    """Does a submission that writes into the course folder change nothing there at all?"""
    course, *_ = graded
    core = course.root / "source" / CHAPTER / "checks" / "_core.py"
    assert "poisoned" not in core.read_text()
    nb = nbformat.read(course.root / "source" / CHAPTER / f"{CHAPTER}.ipynb", as_version=4)
    assert nb.cells  # the source notebook itself is intact
    assert not (course.root / "evil.txt").exists()
    assert course.first_run["changed"] == []  # nothing to restore: the sandbox never saw it
    assert "blocked:" in student_outputs(course, "writes_outside_its_folder")


def test_no_attack_succeeded_and_only_notebooks_came_back(graded):
    """Did every attack fail inside its sandbox, and is each graded folder just its notebook?"""
    course, *_ = graded
    for folder in (course.root / "autograded").iterdir():
        files = sorted(p.name for p in (folder / CHAPTER).iterdir())
        assert files == [f"{CHAPTER}.ipynb"], (folder.name, files)
        assert "ATTACK SUCCEEDED" not in student_outputs(course, folder.name), folder.name


def test_no_process_outlives_the_batch(graded):
    """After the batch, is every process a submission started (daemons, sleepers) gone?"""
    import psutil

    # What this corpus's submissions start (other grading runs may be going on beside it).
    marks = ("sleep 600", "poisoned", "bytearray(700")
    left = []
    for proc in psutil.process_iter(["cmdline"]):
        cmd = " ".join(proc.info["cmdline"] or [])
        if any(mark in cmd for mark in marks) and "pytest" not in cmd:
            left.append((proc.pid, cmd[:120]))
    assert left == []


def test_a_rerun_grades_nothing_twice(graded, capsys):
    """Does grading the same folder again skip every submission already graded and unchanged?"""
    course, scores, _, _, tmp = graded
    assert course.grade(tmp / "submissions", CHAPTER, tmp / "again.csv", jobs=2) == 0
    out = capsys.readouterr().out
    assert "graded 0, problems 0, skipped" in out, out
