"""End to end with nbgrader: release every chapter, then grade reference, blank and wrong answers.

One flat folder of submissions is graded in a single run, as an instructor would:
the reference notebooks, the untouched student notebooks, and one notebook per
known-wrong implementation (tests/wrong), injected in place of the reference.
"""

import json
import shutil

import nbformat
import pytest
from nbgrader.api import Gradebook

from autograder import notebooks as nbs
from autograder.course import COURSE_ID, Course
from tests.wrong import load

pytestmark = pytest.mark.slow
WRONG = load()
CHAPTERS = nbs.chapter_names()


def graded_cells(chapter):
    return [
        nbs.nbgrader_meta(c)["grade_id"]
        for c in nbs.read(nbs.notebook_path(chapter)).cells
        if nbs.is_test(c)
    ]


def with_wrong_answer(wrong):
    """The chapter notebook with the reference replaced by a wrong implementation.

    Code cells after the chapter's last test cell cannot change any score, so they are
    emptied: the training demos there would cost minutes over the whole wrong corpus.
    """
    for chapter in CHAPTERS:
        nb = nbs.read(nbs.notebook_path(chapter))
        for cell in nb.cells:
            if nbs.nbgrader_meta(cell).get("grade_id") == wrong.target:
                cell.source = wrong.inject(cell.source)
                last_test = max(
                    i for i, c in enumerate(nb.cells) if nbs.is_test(c) and c.cell_type == "code"
                )
                for later in nb.cells[last_test + 1 :]:
                    if later.cell_type == "code" and not nbs.nbgrader_meta(later):
                        later.source = "# emptied for the wrong-answer test: no test cell follows"
                return chapter, nb
    raise LookupError(wrong.target)


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("course")
    course = Course(tmp / "course")
    course.release()
    subs = tmp / "submissions"
    subs.mkdir()
    for chapter in CHAPTERS:
        shutil.copy(nbs.notebook_path(chapter), subs / f"reference_{chapter}.ipynb")
        shutil.copy(
            course.root / "release" / chapter / f"{chapter}.ipynb", subs / f"blank_{chapter}.ipynb"
        )
    for wrong in WRONG:
        _, nb = with_wrong_answer(wrong)
        nbformat.write(nb, subs / f"wrong_{wrong.target}_{wrong.name}.ipynb")
    assert course.grade(subs, None, tmp / "grades.csv") == 0
    course.csv = tmp / "grades.csv"
    return course


def score(course, student, chapter, grade_id):
    with Gradebook(f"sqlite:///{course.root / 'gradebook.db'}", course_id=COURSE_ID) as gb:
        grade = gb.find_grade(grade_id, chapter, chapter, student)
        return grade.score, grade.max_score


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_reference_earns_full_marks_on_every_autograded_cell(course, chapter):
    """Does the reference solution score full marks on every test cell, hidden ones included?"""
    for grade_id in graded_cells(chapter):
        got, top = score(course, f"reference_{chapter}", chapter, grade_id)
        assert top > 0 and got == top, f"{chapter}/{grade_id}: {got} of {top}"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_untouched_release_scores_zero(course, chapter):
    """Does an untouched student notebook score zero without crashing the grader?"""
    for grade_id in graded_cells(chapter):
        got, top = score(course, f"blank_{chapter}", chapter, grade_id)
        assert got == 0 and top > 0, f"{chapter}/{grade_id}: {got} of {top}"


@pytest.mark.parametrize("wrong", WRONG, ids=lambda w: f"{w.target}-{w.name}")
def test_wrong_answer_loses_points_on_its_cells(course, wrong):
    """Does each known-wrong implementation lose points on every test cell that targets it?"""
    chapter, _ = with_wrong_answer(wrong)
    for grade_id in wrong.cells:
        got, top = score(course, f"wrong_{wrong.target}_{wrong.name}", chapter, grade_id)
        assert got < top, f"{wrong.name} kept {got} of {top} on {grade_id}"


def test_grades_csv_lists_every_submission(course):
    """Does grades.csv, in nbgrader's format, hold a row for each graded notebook?"""
    rows = course.csv.read_text().splitlines()
    assert rows[0].startswith("assignment,duedate,timestamp,student_id")
    students = {line.split(",")[3] for line in rows[1:]}
    assert {f"reference_{c}" for c in CHAPTERS} <= students
    assert {f"wrong_{w.target}_{w.name}" for w in WRONG} <= students


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_release_has_stubs_but_no_solutions_or_hidden_tests(course, chapter):
    """Does the student notebook keep the self-checks but lose solutions and hidden tests?"""
    release = course.root / "release" / chapter
    text = (release / f"{chapter}.ipynb").read_text()
    assert "raise NotImplementedError()" in text and "checks.run(" in text
    for marker in ("BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "run_hidden"):
        assert marker not in text
    code = [c.source for c in nbs.read(release / f"{chapter}.ipynb").cells if c.cell_type == "code"]
    assert not any(nbs.SAVE_LINE.match(line) for src in code for line in src.splitlines())
    assert not (release / "checks" / "hidden").exists()
    assert (release / "checks" / "_core.py").exists()
    from solutions import SOURCES

    shipped = {p.stem for p in (release / "solutions").glob("*.py")} - {"__init__"}
    assert all(CHAPTERS.index(SOURCES[m]) < CHAPTERS.index(chapter) for m in shipped)
    assert chapter not in {SOURCES[m] for m in shipped}


def test_grades_an_nbgrader_layout(course, tmp_path):
    """Does `grade` accept a <student>/<chapter>/<notebook> folder as nbgrader lays it out?"""
    chapter = CHAPTERS[-1]
    folder = tmp_path / "submitted" / "layout_student" / chapter
    folder.mkdir(parents=True)
    shutil.copy(nbs.notebook_path(chapter), folder / "whatever-the-lms-called-it.ipynb")
    assert course.grade(tmp_path / "submitted", None, tmp_path / "grades.csv") == 0
    for grade_id in graded_cells(chapter):
        got, top = score(course, "layout_student", chapter, grade_id)
        assert got == top


def test_a_student_copy_of_checks_never_reaches_the_grader(course, tmp_path):
    """If a submission folder holds an edited checks/ package, is it ignored?"""
    chapter = CHAPTERS[-1]
    folder = tmp_path / "submitted" / "cheater" / chapter
    (folder / "checks").mkdir(parents=True)
    (folder / "checks" / "__init__.py").write_text("def run(*a, **k): pass\nrun_hidden = run\n")
    shutil.copy(course.root / "release" / chapter / f"{chapter}.ipynb", folder / f"{chapter}.ipynb")
    assert course.grade(tmp_path / "submitted", None, tmp_path / "grades.csv") == 0
    assert all(score(course, "cheater", chapter, g)[0] == 0 for g in graded_cells(chapter))
    assert json.loads((folder / f"{chapter}.ipynb").read_text())  # the student's file is untouched
