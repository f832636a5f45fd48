"""Known-wrong implementations: each must lose points on the test cells it names.

A wrong implementation is a function decorated with ``@wrong(target, *groups)``:
``target`` is the exercise it answers (the function name in the notebook) and
``groups`` the check groups that must fail. A check group's test cell in the
notebook has the grade_id given by :func:`cell_for`.

The source of each function is also injected into the chapter notebook, in
place of the reference solution, for the nbgrader end-to-end test; so each one
may use only ``torch`` and names the notebook defines before the exercise.
"""

from __future__ import annotations

import inspect
import re
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

    def notebook_source(self) -> str:
        """The function's source, renamed to the exercise's name, without decorators."""
        source = textwrap.dedent(inspect.getsource(self.fn))
        source = "\n".join(line for line in source.splitlines() if not line.startswith("@"))
        return re.sub(rf"^def {self.name}\(", f"def {self.target}(", source, count=1, flags=re.M)


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
    from tests.wrong import masking, pooling  # noqa: F401

    return list(REGISTRY)
