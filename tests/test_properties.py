"""Does every graded target's checks cover the same property classes, each proven by a wrong answer?

The classes (``checks._contract.CLASSES``): float64 kept and computed in float64; a gradient
that is the derivative (finite differences); a run on the meta device (nothing made on the
CPU); dropout with 0 < p < 1 in training and none in eval; the inputs left unchanged. Each
graded target declares, in its hidden checks (``checks._contract.properties``), the group
that tests each class, or why the class does not apply. Here:

- every graded target (an exercise's ``#@save`` answer cell, not a question) declares every
  class, and no declaration names a target that is not graded;
- for every class a target says is tested, a known-wrong answer in ``tests/wrong`` breaks
  that class (``breaks=...``) and declares a failure, for the reason the class names, of
  every group the declaration lists. ``tests/test_wrong.py`` runs it against those groups
  (``tests/test_remote.py`` through the proxies, and the end-to-end test through nbgrader),
  so a class that the checks stopped testing makes that wrong answer pass, and a test fail.
"""

import re

import pytest

import checks
from autograder import notebooks as nbs
from checks._contract import CLASS_MEANING, CLASSES, PROPERTIES, properties
from checks._core import REGISTRY
from tests.wrong import exercise_of, is_quiz, load

checks.groups()  # the hidden modules hold the declarations
WRONG = load()
GRADED = sorted(
    {
        nbs.nbgrader_meta(cell)["grade_id"]
        for path in nbs.chapter_notebooks()
        for cell in nbs.read(path).cells
        if nbs.is_solution(cell) and nbs.saved_module(cell)
    }
)
TARGETS = [t for t in GRADED if not is_quiz(t)]
# What a failure of each class says: the declared fragment must be a failure of that class,
# not of another one that the wrong answer happens to break first.
SAYS = {
    "float64": r"float64|derivative",
    "gradient": r"gradient|derivative",
    "meta": r"meta|CPU|device",
    "dropout": r"dropout|train mode|eval mode",
    "unchanged": r"in place",
}


def test_every_graded_target_declares_every_class():
    """Does each graded exercise (not a question) declare each property class, and only those?"""
    assert sorted(PROPERTIES) == TARGETS
    for target, classes in PROPERTIES.items():
        assert set(classes) == set(CLASSES), target


def test_every_class_has_a_meaning_and_a_failure_pattern():
    """Is each class described, and does each have the words its failures say?"""
    assert set(CLASS_MEANING) == set(CLASSES) == set(SAYS)


@pytest.mark.parametrize(
    "target, name",
    [(t, c) for t in TARGETS for c in CLASSES],
    ids=lambda x: x,
)
def test_each_tested_class_is_proven_by_a_wrong_answer(target, name):
    """Is the class tested by groups of this target, and does a wrong answer that breaks it
    declare a failure of each of those groups, for that reason?"""
    declared = PROPERTIES[target][name]
    if isinstance(declared, str):
        assert declared.startswith("n/a: ")
        return
    for group in declared:
        assert group in REGISTRY and exercise_of(group) == target, (target, name, group)
    proofs = [w for w in WRONG if w.target == target and w.breaks == name]
    assert proofs, f"no wrong answer to {target} breaks {name!r} (@wrong(..., breaks={name!r}))"
    for wrong in proofs:
        for group in declared:
            fragment = wrong.messages.get(group)
            assert fragment is not None, f"{wrong.name} must fail {group}, which tests {name}"
            assert re.search(SAYS[name], fragment), (
                f"{wrong.name} fails {group} with {fragment!r}: not a failure of {name}"
            )


def test_a_declaration_must_be_complete_and_say_why_not():
    """Does properties() refuse a missing class, an unknown one, and an "n/a" without a reason?"""
    full = dict.fromkeys(CLASSES, ("g",))
    with pytest.raises(TypeError, match="missing"):
        properties("_x", **{k: v for k, v in full.items() if k != "meta"})
    with pytest.raises(TypeError, match="unknown"):
        properties("_x", **full, speed=("g",))
    with pytest.raises(TypeError, match="why"):
        properties("_x", **{**full, "dropout": "n/a"})
    assert "_x" not in PROPERTIES
