"""Known-wrong implementations: each must lose points on the test cells it names.

A wrong implementation is a function decorated with ``@wrong(target, failures)``:
``target`` is the exercise it answers (the function name in the notebook) and
``failures`` maps each check group that must fail to a fragment of the message
it must fail with, for example::

    @wrong("sequence_mask", {"sequence_mask.safety": "X (torch.float32) was modified in place"})

The fragment names the intended failure (the input and what is wrong with the
output), not text that every failure prints, so that a wrong answer that is
caught for another reason, or by a crash of the check itself, fails the test.
A check group's test cell in the notebook has the grade_id given by :func:`cell_for`.

For an exercise that is a class (an attention module), the wrong answer is a
``forward`` method: the checks run a subclass of the reference with that
``forward``, as if the student had written only the solution region.

For the nbgrader end-to-end test, the *body* of each wrong function replaces
the solution region of the exercise cell, which is exactly what a student
edits; so a body may use only names the notebook defines before it runs. That
test packs the answers: one notebook holds a wrong (or unusual) answer to every
exercise of the chapter at once, so an answer must not disturb the others'
cells; one that does on purpose is declared ``@wrong(..., alone=True)``.

A wrong answer may also say which *property class* it breaks (``breaks="float64"``): the
classes every graded target's checks must cover are declared in the hidden checks
(:func:`checks._contract.properties`), and ``tests/test_properties.py`` proves, target by
target, that each class a target declares is caught by a wrong answer that breaks it.

An answer to a "Check your understanding" question (target ``quiz_<chapter>_<n>``,
the grade_id of its answer cell) is a function without arguments that returns the
answer, as the checks call it (``lambda: answer_6_1``); pasted into the notebook, its
``return <value>`` becomes ``answer_6_1 = <value>``.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Wrong:
    fn: Callable
    target: str
    failures: tuple[tuple[str, str], ...]  # (group, fragment of its message), in order
    breaks: str | None = None  # the property class it breaks (checks._contract.CLASSES)
    # Graded in a notebook of its own by the end-to-end test, not packed with the answers to
    # the chapter's other exercises (for an answer that disturbs them on purpose).
    alone: bool = False

    @property
    def name(self) -> str:
        return self.fn.__name__

    @property
    def groups(self) -> tuple[str, ...]:
        """The check groups that must fail, in the order they were declared."""
        return tuple(group for group, _ in self.failures)

    @property
    def messages(self) -> dict[str, str]:
        """Each group that must fail, mapped to a fragment of the message it must fail with."""
        return dict(self.failures)

    @property
    def cells(self) -> list[str]:
        return [cell_for(g) for g in self.groups]

    def implementation(self):
        """What the checks run: the function, or a subclass of the reference with this forward.

        For a question the body is what the answer cell holds, ``answer_4_1 = "a"``, or
        ``return "a"`` (pasted as that assignment): the checks get a function that returns it.
        """
        if is_quiz(self.target):
            namespace = dict(self.fn.__globals__)  # the names the notebook has (torch, ...)
            lines = [
                re.sub(r"^return\b", f"{answer_name(self.target)} =", ln) for ln in self.body()
            ]
            exec("\n".join(lines), namespace)  # noqa: S102 (our own test code)
            value = namespace[answer_name(self.target)]
            return lambda: value
        ref = reference(self.target)
        if inspect.isclass(ref):
            return type(self.target, (ref,), {"forward": self.fn, "__doc__": self.fn.__doc__})
        if not callable(ref):
            namespace: dict = {}
            exec("\n".join(self.body()), namespace)
            value = namespace[self.target]
            return lambda: value
        return self.fn

    def body(self) -> list[str]:
        """The function's statements after its docstring, dedented."""
        source = textwrap.dedent(inspect.getsource(self.fn))
        node = ast.parse(source).body[0]
        statements = node.body[1:] if ast.get_docstring(node) else node.body
        lines = source.splitlines()[statements[0].lineno - 1 :]
        return textwrap.dedent("\n".join(lines)).splitlines()

    def inject(self, cell_source: str) -> str:
        """The exercise cell with its solution region replaced by this body."""
        variable = answer_variable(self.target)
        lines = cell_source.splitlines()
        start = next(i for i, line in enumerate(lines) if line.strip() == "### BEGIN SOLUTION")
        end = next(i for i, line in enumerate(lines) if line.strip() == "### END SOLUTION")
        indent = lines[start][: len(lines[start]) - len(lines[start].lstrip())]
        body = self.body()
        if variable is not None:  # a question's answer: return <value> -> answer_6_1 = <value>
            body = [re.sub(r"^return\b", f"{variable} =", line) for line in body]
        body = [indent + line if line else line for line in body]
        return "\n".join(lines[:start] + body + lines[end + 1 :])


QUIZ_TARGET = re.compile(r"quiz_(?P<chapter>\d+)_(?P<number>\d+)")


def answer_variable(target: str) -> str | None:
    """``answer_6_1`` for the question ``quiz_6_1``; None for a function or class."""
    match = QUIZ_TARGET.fullmatch(target)
    return f"answer_{match['chapter']}_{match['number']}" if match else None


def is_quiz(target: str) -> bool:
    """Is ``target`` a "Check your understanding" question (``quiz_4_1``), not code?"""
    return answer_variable(target) is not None


def answer_name(target: str) -> str:
    """The variable that holds the answer to a question: ``quiz_4_1`` -> ``answer_4_1``."""
    return answer_variable(target)


def reference(target: str):
    """The reference implementation named ``target`` in the solutions package.

    For a question (``quiz_4_1``), a function that returns the saved answer (``answer_4_1``,
    in ``solutions.answers``).
    """
    from solutions import SOURCES

    if is_quiz(target):
        value = getattr(importlib.import_module("solutions.answers"), answer_name(target))
        return lambda: value
    for module in SOURCES:
        obj = getattr(importlib.import_module(f"solutions.{module}"), target, None)
        if obj is not None:
            return obj
    raise LookupError(f"no reference named {target!r} in solutions/")


REGISTRY: list[Wrong] = []


def wrong(
    target: str, failures: Mapping[str, str], *, breaks: str | None = None, alone: bool = False
) -> Callable:
    """Register the decorated function as a wrong answer to ``target``.

    Args:
        target: the exercise it answers, the function or class name in the notebook.
        failures: each check group that must fail, mapped to a fragment of the
            message (``str(CheckError)`` with ``verbose=False``) it must fail with.
        breaks: the property class it breaks, if it is the proof that the checks test
            one: ``"float64"``, ``"gradient"``, ``"meta"``, ``"dropout"`` or ``"unchanged"``.
        alone: grade it end to end in a notebook of its own, where every other exercise
            keeps the reference, instead of packed with wrong and unusual answers to the
            chapter's other exercises (``tests/test_autograde.py``). For an answer that
            disturbs the rest of the notebook on purpose: it kills the kernel, or rebinds
            a name that other exercises use.
    """
    from checks._contract import CLASSES

    if breaks is not None and breaks not in CLASSES:
        raise TypeError(f"breaks must be one of {CLASSES}, got {breaks!r}")
    if not isinstance(failures, Mapping) or not failures:
        raise TypeError(f"failures must be a non-empty dict group -> message, got {failures!r}")
    for group, fragment in failures.items():
        if not isinstance(group, str) or not isinstance(fragment, str) or not fragment.strip():
            raise TypeError(f"failures must map group names to message fragments, got {failures!r}")

    def register(fn: Callable) -> Callable:
        REGISTRY.append(Wrong(fn, target, tuple(failures.items()), breaks=breaks, alone=alone))
        return fn

    return register


def exercise_of(group: str) -> str:
    """The exercise a check group grades: ``masked_softmax.safety`` grades ``masked_softmax``,
    ``quiz_7_1.key`` the question ``quiz_7_1`` (whose answer is ``answer_7_1``)."""
    return group.split(".")[0]


def cell_for(group: str) -> str:
    """grade_id of the notebook test cell that runs a check group.

    A question's form check and its key run in one cell: ``quiz_4_1`` and ``quiz_4_1.key``
    in ``test_quiz_4_1``.
    """
    if is_quiz(group.split(".")[0]):
        return "test_" + group.split(".")[0]
    if "." in group:
        return "hidden_" + group.replace(".", "_")
    return "test_" + group


def load() -> list[Wrong]:
    """Every wrong answer of every module in this package (modules found, not listed), in order."""
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda info: info.name):
        if not info.ispkg and not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")
    return list(REGISTRY)
