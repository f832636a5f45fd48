"""Does every known-wrong implementation fail the check groups that target it, for the right reason?"""

import pkgutil
from pathlib import Path

import pytest

import checks
import tests.unusual
import tests.wrong
from autograder import notebooks as nbs
from checks import CheckError
from checks._core import REGISTRY
from tests._sweep import chapter_of_answer, one_per
from tests.wrong import answer_variable, exercise_of, is_quiz, load, reference, wrong

WRONG = load()
checks.groups()  # loads the hidden groups into the registry


def test_at_least_five_wrong_answers_per_graded_function():
    """Are there at least five known-wrong implementations per graded function, and one
    per "Check your understanding" question?"""
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
    assert min((n for t, n in counts.items() if not is_quiz(t)), default=5) >= 5, counts
    assert min((n for t, n in counts.items() if is_quiz(t)), default=1) >= 1, counts


def test_wrong_answers_have_distinct_names_per_exercise():
    """Is each (exercise, name) pair unique, so that no wrong answer hides another?"""
    pairs = [(w.target, w.name) for w in WRONG]
    assert len(pairs) == len(set(pairs))


def test_every_module_of_wrong_answers_is_loaded():
    """Does load() find every module in tests/wrong, without a hand-written list?"""
    folder = Path(tests.wrong.__file__).parent
    modules = {f"tests.wrong.{p.stem}" for p in folder.glob("*.py") if not p.stem.startswith("_")}
    assert modules == {w.fn.__module__ for w in WRONG}
    found = [m.name for m in pkgutil.iter_modules([str(folder)]) if not m.name.startswith("_")]
    assert found and {f"tests.wrong.{name}" for name in found} == modules


@pytest.mark.parametrize("wrong", WRONG, ids=lambda w: f"{w.target}-{w.name}")
def test_wrong_answer_declares_known_groups_and_specific_messages(wrong):
    """Does each wrong answer name existing groups of its exercise, each with a message fragment
    that is a detail of the failure, not text that every failure of the group prints?"""
    assert wrong.groups, wrong.name
    assert list(wrong.messages) == list(wrong.groups)
    for group, fragment in wrong.failures:
        assert group in REGISTRY, f"{wrong.name}: no check group {group!r}"
        assert len(fragment) >= 12, f"{wrong.name}: {fragment!r} is too short to say what is wrong"
        assert exercise_of(group) == wrong.target, (
            f"{wrong.name}: {group!r} checks another exercise"
        )
        generic = [f"{n} of {len(REGISTRY[group])} checks in {group!r} failed" for n in (1, 2)]
        generic += [f"✗ {c.question}" for c in REGISTRY[group]] + ["on cpu", "raised"]
        assert not any(fragment in text for text in generic), (
            f"{wrong.name}: the fragment {fragment!r} for {group!r} is printed by every failure; "
            "name what is wrong instead"
        )


def test_wrong_rejects_groups_without_messages():
    """Does @wrong refuse the old form (groups without the message each must fail with)?"""
    with pytest.raises(TypeError, match="group -> message"):
        wrong("sequence_mask", "sequence_mask")
    with pytest.raises(TypeError, match="group names to message fragments"):
        wrong("sequence_mask", {"sequence_mask": ""})


@pytest.mark.parametrize(
    "wrong", one_per(WRONG, chapter_of_answer, ids=lambda w: f"{w.target}-{w.name}")
)
def test_wrong_answer_fails_its_groups(wrong, device):
    """Does each group this wrong answer targets report it, with the message it declares?

    A check that crashes by itself raises CheckInternalError, which is not a
    CheckError: then this test fails, as it should.
    """
    for group, fragment in wrong.failures:
        with pytest.raises(CheckError) as caught:
            checks.run_hidden(group, wrong.implementation(), devices=[device], verbose=False)
        message = str(caught.value)
        assert fragment in message, (
            f"{wrong.name} failed {group!r}, but not with {fragment!r}. The message was:\n{message}"
        )


# ---------------------------------------------------------------- correct but unusual answers

UNUSUAL = tests.unusual.load()


def test_at_least_two_unusual_answers_per_graded_function():
    """Does every graded function have two correct answers in another style than the reference?"""
    counts = {}
    for u in UNUSUAL:
        counts[u.target] = counts.get(u.target, 0) + 1
    functions = {w.target for w in WRONG if not is_quiz(w.target)}
    assert functions <= counts.keys() <= {w.target for w in WRONG}
    assert min(counts[t] for t in functions) >= 2, counts


@pytest.mark.parametrize(
    "answer", one_per(UNUSUAL, chapter_of_answer, ids=lambda u: f"{u.target}-{u.name}")
)
def test_unusual_answer_passes_every_group(answer, device):
    """Does a correct answer in another style pass every visible and hidden group of its exercise?"""
    groups = [g for g in REGISTRY if exercise_of(g) == answer.target]
    assert groups
    for group in groups:
        checks.run_hidden(group, answer.implementation(), devices=[device], verbose=False)


def test_multihead_attention_is_graded_on_its_own(monkeypatch, device):
    """With a transpose_qkv and transpose_output that fail (view after permute), does the
    reference MultiHeadAttention still pass every group of Exercise 7.3?"""
    import solutions.multihead as module

    def broken_split(X, num_heads):
        B, T, H = X.shape
        return X.reshape(B, T, num_heads, -1).permute(0, 2, 1, 3).view(B * num_heads, T, -1)

    monkeypatch.setattr(module, "transpose_qkv", broken_split)
    monkeypatch.setattr(module, "transpose_output", lambda X, num_heads: X[:1])
    for group in (g for g in REGISTRY if g.split(".")[0] == "MultiHeadAttention"):
        checks.run_hidden(group, module.MultiHeadAttention, devices=[device], verbose=False)
    assert module.transpose_qkv is broken_split  # the checks put the student's functions back


def test_a_wrong_answer_to_a_question_is_pasted_as_an_assignment():
    """Does a question's wrong answer (``return "a"``) replace the solution region of the
    answer cell with ``answer_6_1 = "a"``, and does its reference return the solutions' key?"""
    import solutions.answers as module

    answer = next(w for w in WRONG if w.target == "quiz_6_1" and w.name == "order_changes_nothing")
    cell = next(
        c
        for c in nbs.read(nbs.notebook_path("self_attention")).cells
        if nbs.nbgrader_meta(c).get("grade_id") == "quiz_6_1"
    )
    pasted = answer.inject(cell.source)
    assert 'answer_6_1 = "a"' in pasted.splitlines()
    assert "BEGIN SOLUTION" not in pasted and 'answer_6_1 = "b"' not in pasted
    assert answer.implementation()() == "a"
    assert answer.cells == ["test_quiz_6_1"]  # the form and the key run in one test cell
    assert reference("quiz_6_1")() == module.answer_6_1
    assert (
        answer_variable("quiz_6_1") == "answer_6_1"
        and answer_variable("RelativeSelfAttention") is None
    )


def test_answers_that_zero_their_inputs_lose_every_group():
    """The forgery of issue 21: an answer that zeroes its inputs and lengths in place and
    returns zeros would pass a check that computes its reference from the inputs after the
    call. The code under test gets copies, so such answers (for targets of several chapters)
    must declare, and fail, every group of their exercise."""
    forgers = [w for w in WRONG if w.name.endswith("_zeroes_everything")]
    chapters = {w.fn.__module__ for w in forgers}
    assert len(forgers) >= 8 and len(chapters) >= 5, (len(forgers), chapters)
    for w in forgers:
        every = {g for g in REGISTRY if exercise_of(g) == w.target}
        assert set(w.groups) == every, (w.name, every - set(w.groups))
    # Chapters 11 to 13 (images, the KV cache, attention today): every target that takes
    # tensors (its "unchanged" class is tested) has such a forger.
    from checks._contract import PROPERTIES

    later = {"tests.wrong.vision", "tests.wrong.kv_cache", "tests.wrong.modern"}
    targets = {w.target for w in WRONG if w.fn.__module__ in later and not is_quiz(w.target)}
    takes_tensors = {t for t in targets if not isinstance(PROPERTIES[t]["unchanged"], str)}
    assert takes_tensors <= {w.target for w in forgers}, takes_tensors - {w.target for w in forgers}
    assert len(takes_tensors) == 6, sorted(takes_tensors)
