"""Does every known-wrong implementation fail the check groups that target it?"""

import pytest

import checks
from autograder import notebooks as nbs
from checks import CheckError
from tests.wrong import load

WRONG = load()


def test_at_least_five_wrong_answers_per_graded_function():
    """Are there at least five known-wrong implementations per graded function?"""
    counts = {}
    for w in WRONG:
        counts[w.target] = counts.get(w.target, 0) + 1
    graded = {
        nbs.nbgrader_meta(c)["grade_id"]
        for path in nbs.chapter_notebooks()
        for c in nbs.read(path).cells
        if nbs.is_solution(c) and nbs.saved_module(c)
    }
    assert counts.keys() == graded
    assert min(counts.values()) >= 5, counts


def test_wrong_answers_have_distinct_names_per_exercise():
    """Is each (exercise, name) pair unique, so that no wrong answer hides another?"""
    pairs = [(w.target, w.name) for w in WRONG]
    assert len(pairs) == len(set(pairs))


@pytest.mark.parametrize("wrong", WRONG, ids=lambda w: f"{w.target}-{w.name}")
def test_wrong_answer_fails_its_groups(wrong, device):
    """Does each group this wrong answer targets report it?"""
    for group in wrong.groups:
        with pytest.raises(CheckError):
            checks.run_hidden(group, wrong.implementation(), devices=[device], verbose=False)
