"""Do the assertion helpers (checks/_expect.py) name what is wrong, and take an answer to a
question in every form it may have and in no other?"""

import numpy
import pytest
import torch

from checks import CheckError
from checks._expect import expect_choice, expect_close, expect_number


def test_expect_close_names_the_largest_error_and_the_tolerance():
    """Does a mismatch report the largest absolute error, where it is, and the tolerance?"""
    expected = torch.tensor([[0.25, 0.75], [0.5, 0.5]], dtype=torch.float64)
    actual = expected + torch.tensor([[0.0, 0.0], [0.0, 3e-6]], dtype=torch.float64)
    with pytest.raises(CheckError) as caught:
        expect_close(actual, expected, "weights", atol=1e-7, rtol=1e-7)
    message = str(caught.value)
    assert "largest absolute error 3e-06 at (1, 1)" in message
    assert "tolerance 1e-07 + 1e-07·|expected|" in message
    assert "expected 0.5, actual 0.500003" in message


@pytest.mark.parametrize("answer", ["ab", "", "  ", "abcd", "e", "(b)", 2, None, ...])
def test_expect_choice_takes_exactly_one_of_the_letters(answer):
    """Does expect_choice refuse several letters, none, another letter or a non-string?"""
    with pytest.raises(CheckError, match="answer_9_9"):
        expect_choice(answer, "abcd", "answer_9_9")
    assert expect_choice(" B ", "abcd", "answer_9_9") == "b"


@pytest.mark.parametrize(
    "answer",
    ["30", float("nan"), float("inf"), True, None, [30], 10**400, torch.tensor(True)]
    + [torch.tensor([1.0, 2.0]), torch.tensor(1 + 2j), numpy.bool_(True), numpy.array([30.0])],
    ids=repr,
)
def test_expect_number_refuses_what_is_not_a_finite_number(answer):
    """Does expect_number refuse strings, NaN, infinity, booleans (also as a tensor or NumPy),
    lists, arrays, complex numbers and an int too large for a float?"""
    with pytest.raises(CheckError, match="answer_9_9"):
        expect_number(answer, "answer_9_9")


@pytest.mark.parametrize(
    "answer",
    [30, 30.0, numpy.float64(30.0), numpy.float32(30.0), numpy.int64(30), torch.tensor(30.0)]
    + [torch.tensor([30]), numpy.array(30.0)[()]],
    ids=repr,
)
def test_expect_number_takes_numbers_in_every_form(answer):
    """Are ints, floats, NumPy scalars and one-element real tensors all the number 30?"""
    assert expect_number(answer, "answer_9_9") == 30.0
