"""One small grading run (`make smoke`): does grading still work at all?

Four submissions of "Masking" in one batch: the reference, the untouched release, one
known-wrong answer and one notebook that tampers with the checks in its kernel. The full proofs are the
slow suites (tests/test_autograde.py, tests/test_hostile.py); this one catches a broken
grader in seconds.
"""

import shutil

import nbformat
import pytest
from nbgrader.api import Gradebook

from autograder.course import COURSE_ID
from tests.hostile import ALL_CELLS, CASES, CHAPTER, reference, write
from tests.wrong import load

pytestmark = [pytest.mark.smoke, pytest.mark.timeout(300)]
WRONG = next(w for w in load() if w.target == "masked_softmax")


@pytest.fixture(scope="module")
def scores(tmp_path_factory, released_copy):
    tmp = tmp_path_factory.mktemp("smoke")
    # the chapter released once per test run (tests/_shared.py), as tests/test_hostile.py has it
    course = released_copy(tmp / "course", [CHAPTER])
    subs = tmp / "subs"
    subs.mkdir()
    nbformat.write(reference(), subs / "reference.ipynb")
    shutil.copy(course.root / "release" / CHAPTER / f"{CHAPTER}.ipynb", subs / "blank.ipynb")
    nb = reference()
    cell = next(
        c
        for c in nb.cells
        if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == WRONG.target
    )
    cell.source = WRONG.inject(cell.source)
    nbformat.write(nb, subs / "wrong.ipynb")
    write(CASES["monkeypatched_checks"], subs / "tampering.ipynb")
    assert course.grade(subs, CHAPTER, tmp / "grades.csv", jobs=2) == 0
    with Gradebook(course.db_url, course_id=COURSE_ID) as gb:
        return {
            student: {
                c: (g.score, g.max_score)
                for c in ALL_CELLS
                for g in [gb.find_grade(c, CHAPTER, CHAPTER, student)]
            }
            for student in ("reference", "blank", "wrong", "tampering")
        }


def test_the_reference_earns_full_marks(scores):
    """Does the reference answer get every point of every test cell?"""
    assert all(got == top > 0 for got, top in scores["reference"].values())


def test_the_untouched_release_earns_nothing(scores):
    """Does the untouched student notebook get zero on every test cell?"""
    assert all(got == 0 for got, _ in scores["blank"].values())


def test_a_wrong_answer_loses_exactly_its_points(scores):
    """Does the wrong masked_softmax lose points on its cells and keep sequence_mask's?"""
    for cell, (got, top) in scores["wrong"].items():
        if cell in WRONG.cells:
            assert got < top, cell
        elif "sequence_mask" in cell:
            assert got == top > 0, cell


def test_tampering_with_the_checks_changes_nothing(scores):
    """Does a notebook that replaces checks.run, expect_close and torch.allclose in its kernel
    get exactly what its work earns: nothing for its wrong sequence_mask, full marks for its
    correct masked_softmax?"""
    for cell, (got, top) in scores["tampering"].items():
        assert got == (0 if "sequence_mask" in cell else top), cell
