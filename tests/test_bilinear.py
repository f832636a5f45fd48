"""Chapter 5's short questions: graded, the self-checks test only the form and the hidden keys the
content; in self-study, the self-checks know the key too."""

import pytest

import checks
from checks._quiz import GRADED_ENV
from solutions import answers

checks.groups()  # loads the hidden groups into the registry

CHOICES = {"quiz_5_1": answers.answer_5_1, "quiz_5_3": answers.answer_5_3}


@pytest.mark.parametrize("group", sorted(CHOICES))
def test_choice_self_check_accepts_every_letter_where_graded_and_the_key_only_one(
    group, monkeypatch
):
    """Graded, does the self-check accept a, b, c and d alike (it must not give the key away),
    while the hidden key accepts the reference answer only? And in self-study, does the
    self-check accept the key only?"""
    for letter in "abcd":
        if letter == CHOICES[group]:
            checks.run(group, lambda letter=letter: letter, verbose=False)
            checks.run_hidden(f"{group}.key", lambda letter=letter: letter, verbose=False)
        else:
            with pytest.raises(checks.CheckError, match="is not right"):
                checks.run(group, lambda letter=letter: letter, verbose=False)
            with pytest.raises(checks.CheckError, match="Is the answer to question 5"):
                checks.run_hidden(f"{group}.key", lambda letter=letter: letter, verbose=False)
    monkeypatch.setenv(GRADED_ENV, "1")
    for letter in "abcd":
        checks.run(group, lambda letter=letter: letter, verbose=False)
    checks.run(group, lambda: " B ", verbose=False)  # case and spaces do not matter
    for bad, message in [(..., "no answer yet"), ("e", "got 'e'"), (2, r"got 2 \(int\)")]:
        with pytest.raises(checks.CheckError, match=message):
            checks.run(group, lambda bad=bad: bad, verbose=False)


def test_number_self_check_accepts_any_rank_where_graded_and_the_key_only_the_break_even_one(
    monkeypatch,
):
    """Graded, does the self-check of 5.2 accept any whole rank and reject what is no rank, while
    the hidden key accepts only the rank where r(d_q + d_k) = d_q d_k for d_q = d_k = 64?"""
    monkeypatch.setenv(GRADED_ENV, "1")
    for r in (1, 16, 32, 64, 32.0):
        checks.run("quiz_5_2", lambda r=r: r, verbose=False)
    checks.run_hidden("quiz_5_2.key", lambda: 64 * 64 // (64 + 64), verbose=False)
    for wrong in (16, 64, 4096):
        with pytest.raises(checks.CheckError, match=f"answer_5_2 is {wrong}"):
            checks.run_hidden("quiz_5_2.key", lambda wrong=wrong: wrong, verbose=False)
    for bad, message in [
        (..., "no answer yet"),
        (0, "got 0"),
        (32.5, "got 32.5"),
        (True, "got True"),
    ]:
        with pytest.raises(checks.CheckError, match=message):
            checks.run("quiz_5_2", lambda bad=bad: bad, verbose=False)
