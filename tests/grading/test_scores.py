"""How a score is shown (autograder/grading/scores.py): the hand-graded points always named."""

from types import SimpleNamespace

from autograder.grading.scores import Total, total_of


def grade(cell_type, score, top, manual=None):
    return SimpleNamespace(
        cell=SimpleNamespace(cell_type=cell_type),
        score=manual if manual is not None else score,
        max_score=top,
        manual_score=manual,
    )


def test_pending_hand_points_are_named():
    assert str(Total(12, 12, hand_max=2)) == "12/12 autograded; 2 points to be graded by hand"
    assert str(Total(3, 4, hand_max=1)) == "3/4 autograded; 1 point to be graded by hand"
    assert str(Total(3, 4)) == "3/4 autograded"


def test_hand_graded_points_are_shown_apart():
    grades = [grade("code", 5, 6), grade("code", 7, 7), grade("markdown", 0, 2, manual=1.5)]
    total = total_of(grades)
    assert str(total) == "12/13 autograded; 1.5/2 graded by hand"
    assert total.pending == 0


def test_partly_hand_graded():
    grades = [grade("code", 1, 1), grade("markdown", 0, 2, manual=2), grade("markdown", 0, 1)]
    assert (
        str(total_of(grades)) == "1/1 autograded; 2/2 graded by hand; 1 point to be graded by hand"
    )
