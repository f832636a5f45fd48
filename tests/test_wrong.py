"""Does every known-wrong implementation fail the check groups that target it?"""

import pytest

import checks
from checks import CheckError
from tests.wrong import load

WRONG = load()


def test_at_least_five_wrong_answers_per_graded_function():
    """Are there at least five known-wrong implementations per graded function?"""
    counts = {}
    for w in WRONG:
        counts[w.target] = counts.get(w.target, 0) + 1
    assert counts.keys() == {"nadaraya_watson", "sequence_mask", "masked_softmax"}
    assert min(counts.values()) >= 5, counts


@pytest.mark.parametrize("wrong", WRONG, ids=lambda w: f"{w.target}-{w.name}")
def test_wrong_answer_fails_its_groups(wrong, device):
    """Does each group this wrong answer targets report it?"""
    for group in wrong.groups:
        with pytest.raises(CheckError):
            checks.run_hidden(group, wrong.fn, devices=[device], verbose=False)
