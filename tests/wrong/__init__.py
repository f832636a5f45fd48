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
edits; so a body may use only names the notebook defines before it runs.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Wrong:
    fn: Callable
    target: str
    failures: tuple[tuple[str, str], ...]  # (group, fragment of its message), in order

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

        For a conceptual question (the reference is a value, ``answer_7_1 = 5``), the body is
        the assignment a student writes in the answer cell; the checks get ``lambda: value``,
        as the notebook's test cell passes ``lambda: answer_7_1``.
        """
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
        lines = cell_source.splitlines()
        start = next(i for i, line in enumerate(lines) if line.strip() == "### BEGIN SOLUTION")
        end = next(i for i, line in enumerate(lines) if line.strip() == "### END SOLUTION")
        indent = lines[start][: len(lines[start]) - len(lines[start].lstrip())]
        body = [indent + line if line else line for line in self.body()]
        return "\n".join(lines[:start] + body + lines[end + 1 :])


def reference(target: str):
    """The reference implementation named ``target`` in the solutions package."""
    from solutions import SOURCES

    for module in SOURCES:
        obj = getattr(importlib.import_module(f"solutions.{module}"), target, None)
        if obj is not None:
            return obj
    raise LookupError(f"no reference named {target!r} in solutions/")


REGISTRY: list[Wrong] = []


def wrong(target: str, failures: Mapping[str, str]) -> Callable:
    """Register the decorated function as a wrong answer to ``target``.

    Args:
        target: the exercise it answers, the function or class name in the notebook.
        failures: each check group that must fail, mapped to a fragment of the
            message (``str(CheckError)`` with ``verbose=False``) it must fail with.
    """
    if not isinstance(failures, Mapping) or not failures:
        raise TypeError(f"failures must be a non-empty dict group -> message, got {failures!r}")
    for group, fragment in failures.items():
        if not isinstance(group, str) or not isinstance(fragment, str) or not fragment.strip():
            raise TypeError(f"failures must map group names to message fragments, got {failures!r}")

    def register(fn: Callable) -> Callable:
        REGISTRY.append(Wrong(fn, target, tuple(failures.items())))
        return fn

    return register


QUIZ_PREFIX = "quiz_"  # groups of a conceptual question: quiz_7_1 (form), quiz_7_1.key (content)


def exercise_of(group: str) -> str:
    """The exercise a check group grades: the grade_id of its answer cell, a name in solutions/.

    ``masked_softmax.safety`` grades ``masked_softmax``; the groups ``quiz_7_1`` and
    ``quiz_7_1.key`` of a conceptual question grade the answer ``answer_7_1``.
    """
    name = group.split(".")[0]
    if name.startswith(QUIZ_PREFIX):
        return "answer_" + name.removeprefix(QUIZ_PREFIX)
    return name


def cell_for(group: str) -> str:
    """grade_id of the notebook test cell that runs a check group.

    A conceptual question has one test cell, ``test_quiz_7_1``, for both of its groups.
    """
    if group.startswith(QUIZ_PREFIX):
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
