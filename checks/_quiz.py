"""What the self-check of a question says: right or wrong (self-study), or only "recorded" (graded).

A question of "Check your understanding" is graded like an exercise: its answer cell
(grade_id ``quiz_X_Y``) sets ``answer_X_Y``, and its test cell runs the visible group
``quiz_X_Y`` (the answer's form: :func:`checks._expect.expect_choice`,
:func:`checks._expect.expect_number`) and the hidden group ``quiz_X_Y.key``, which only the
grader has. When the visible group's checks pass, :func:`verdict` decides what the student
reads:

- **Self-study** (the book's downloads, the launchable notebooks of Colab, Binder and a hub, an
  installed course): the key is in ``solutions.answers``, generated from the notebooks' answer
  cells by ``python -m autograder export``. The check says ``✓ answer_X_Y is right.`` or
  ``✗ answer_X_Y = "a" is not right. Hint: …``, with a hint toward the reason, never the key.
- **Graded**: a released chapter folder (which never holds ``solutions/answers.py``), a notebook
  whose setup cell set ``ATTENTION_COURSE_GRADED`` (a release opened where the course is
  installed, on Colab say), or nbgrader's ``autograde`` and ``validate`` (which set
  ``NBGRADER_EXECUTION``). The check confirms only the form, in words that cannot be read as
  "right": ``answer_X_Y recorded: "c" (a letter a–d); graded after the deadline``. No ✓.

"No key" in a release means that nothing there depends on the key: not its value, not a hash
of it (four letters are four guesses), not a hint that names the wrong options (the option
without a hint would be the key). A release's self-check prints the same line for every
well-formed answer; ``tests/test_quiz.py`` proves it by running the checks of a released folder.

The self-study module holds, for each question, the answer cell's solution region as written
(``answer_X_Y = <the key>`` and its ``# why:`` comment) and what its comments declare:

- ``# hint "a": …`` (a letter) or ``# hint 12288: …`` (a number): the hint for that wrong answer;
- ``# hint: …``: the hint for any other wrong answer (a hint is English, and translated in the
  catalog of the checks' messages: :mod:`checks._i18n`);
- ``# tolerance: 0.05`` (absolute) or ``# tolerance: 2%`` (relative): how far a number may be
  from the key, as the hidden key check allows (exact if not given).

A comment line that follows a ``# why:`` or ``# hint`` line without a tag of its own continues it.
"""

from __future__ import annotations

import importlib
import os
import re

from checks._errors import CheckError
from checks._i18n import tr

KEYS_MODULE = "solutions.answers"  # generated; never in a released chapter folder
GRADED_ENV = "ATTENTION_COURSE_GRADED"  # set by a released notebook's setup cell
GRADER_ENV = "NBGRADER_EXECUTION"  # set by nbgrader's autograde and validate
QUESTION = re.compile(r"quiz_(?P<chapter>\d+)_(?P<number>\d+)")
FALLBACK_HINT = (
    "reread the question and the section it is about, then try again; the reader edition "
    "explains the answer"
)

# What the form checks accepted, per answer name: (normalised value, description of the form).
_FORMS: dict[str, tuple[object, str]] = {}
# Visible groups of graded values that do not follow the quiz_X_Y convention -> the answer's
# name (a finding such as `same_weights_for_every_query`); see :func:`declare`.
DECLARED: dict[str, str] = {}


def declare(group: str, name: str) -> None:
    """Make the visible group ``group`` a question's, on the graded value ``name``.

    For a graded value whose answer cell does not follow the ``quiz_X_Y`` convention (a
    finding of an exercise, ``True`` or ``False``): its self-check then says right or wrong,
    or "recorded", like a question's.
    """
    DECLARED[group] = name


def is_question(group: str) -> bool:
    """Is ``group`` the visible group of a question (``quiz_3_1``, not ``quiz_3_1.key``)?"""
    return QUESTION.fullmatch(group) is not None or group in DECLARED


def answer_name(group: str) -> str:
    """``answer_3_1`` for the question ``quiz_3_1`` (or the declared name of a finding)."""
    if group in DECLARED:
        return DECLARED[group]
    match = QUESTION.fullmatch(group.split(".")[0])
    if match is None:
        raise ValueError(f"{group!r} is not a question's group (quiz_<chapter>_<number>)")
    return f"answer_{match['chapter']}_{match['number']}"


def record(name: str, value, form: str) -> None:
    """Note what a form check accepted (called by ``expect_choice`` and ``expect_number``)."""
    _FORMS[name] = (value, form)


def graded() -> bool:
    """Are we in a graded setting, where a question's self-check says only "recorded"?"""
    return bool(os.environ.get(GRADER_ENV) or os.environ.get(GRADED_ENV))


def answers():
    """The self-study module of answers, or None where there is none (a released folder)."""
    try:
        return importlib.import_module(KEYS_MODULE)
    except ImportError:
        return None


def key(name: str):
    """The key of ``answer_X_Y`` for self-study, or None (graded settings, released folders)."""
    module = None if graded() else answers()
    return getattr(module, name, None) if module is not None else None


def _normalised(value):
    if isinstance(value, str):
        return value.strip().lower()
    if isinstance(value, bool) or value is None:
        return value
    try:
        return float(value)
    except (TypeError, ValueError):
        return value


def _shown(value) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def _described(value) -> str:
    if isinstance(value, bool):
        return tr("True or False")
    return tr("text") if isinstance(value, str) else tr("a number")


def close(value, target, tolerance: dict | None) -> bool:
    """Is ``value`` the answer ``target``: the same letter, or a number within ``tolerance``?"""
    if isinstance(target, str | bool) or isinstance(value, str | bool):
        return _normalised(value) == _normalised(target)
    value, target = float(value), float(target)
    if tolerance and "abs" in tolerance:
        return abs(value - target) <= tolerance["abs"]
    if tolerance and "rel" in tolerance:
        return abs(value - target) <= tolerance["rel"] * abs(target)
    return value == target  # exact, as the hidden key checks compare counts


def hint(name: str, value) -> str:
    """The hint for the wrong answer ``value`` to ``answer_X_Y``: its own, or the question's."""
    module = answers()
    if module is None:
        return tr(FALLBACK_HINT)
    beside = getattr(module, "__file__", None)  # its hints' translations are shipped beside it
    for answer, text in getattr(module, "HINTS", {}).get(name, {}).items():
        if close(value, answer, None):
            return tr(text, beside)
    text = getattr(module, "HINT", {}).get(name)
    return tr(text, beside) if text else tr(FALLBACK_HINT)


def verdict(group: str, fn, echo=None) -> None:
    """What the visible group of a question says once the form checks have passed.

    Args:
        group: the question's visible group, ``quiz_X_Y``.
        fn: the function that returns the answer (``lambda: answer_X_Y``).
        echo: where to print the line (``print``), or None to print nothing.

    Raises:
        CheckError: in self-study, for a wrong answer (the message says why, not the key).
    """
    name = answer_name(group)
    value = fn()
    accepted, form = _FORMS.pop(name, (None, None))
    if form is None or accepted != _normalised(value):
        form = _described(value)
    target = key(name)
    if target is None:
        if echo is not None:
            echo(
                tr("{name} recorded: {value} ({form}); graded after the deadline").format(
                    name=name, value=_shown(_normalised(value)), form=form
                )
            )
        return
    tolerance = getattr(answers(), "TOLERANCE", {}).get(name)
    if close(value, target, tolerance):
        if echo is not None:
            echo("✓ " + tr("{name} is right.").format(name=name))
        return
    line = "✗ " + tr("{name} = {value} is not right. Hint: {hint}").format(
        name=name, value=_shown(_normalised(value)), hint=hint(name, value)
    )
    if echo is not None:
        echo(line)
        raise CheckError(
            tr("{name} is not right yet (the ✗ line above says why)").format(name=name)
        )
    raise CheckError(line)
