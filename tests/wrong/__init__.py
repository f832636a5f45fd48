"""Known-wrong implementations: each must lose points on the test cells it names.

A wrong implementation is a function decorated with ``@wrong(target, *groups)``:
``target`` is the exercise it answers (the function name in the notebook) and
``groups`` the check groups that must fail. A check group's test cell in the
notebook has the grade_id given by :func:`cell_for`.

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
import textwrap
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Wrong:
    fn: Callable
    target: str
    groups: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.fn.__name__

    @property
    def cells(self) -> list[str]:
        return [cell_for(g) for g in self.groups]

    def implementation(self):
        """What the checks run: the function, or a subclass of the reference with this forward."""
        ref = reference(self.target)
        if inspect.isclass(ref):
            return type(self.target, (ref,), {"forward": self.fn, "__doc__": self.fn.__doc__})
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


def wrong(target: str, *groups: str) -> Callable:
    def register(fn: Callable) -> Callable:
        REGISTRY.append(Wrong(fn, target, groups))
        return fn

    return register


def cell_for(group: str) -> str:
    """grade_id of the notebook test cell that runs a check group."""
    if "." in group:
        return "hidden_" + group.replace(".", "_")
    return "test_" + group


def load() -> list[Wrong]:
    from tests.wrong import (  # noqa: F401
        efficient,
        masking,
        multihead,
        pooling,
        scoring,
        self_attention,
        transformer,
    )

    return list(REGISTRY)
