"""Correct but unusual answers: each must keep full marks on every check group of its exercise.

The mirror of ``tests/wrong``: an answer is a function (for a module, a ``forward``)
decorated with ``@unusual(target)``, written as a student would fill the solution region,
in another style than the reference: einsum, explicit loops, another order of operations,
upcasting to float32 and back, ``torch.where`` instead of ``masked_fill``. pytest proves that
each passes every visible and hidden group of its exercise (``tests/test_wrong.py``), and the
nbgrader end-to-end test pastes its body into the notebook and proves full marks there.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable

from tests.wrong import Wrong

REGISTRY: list[Wrong] = []


def unusual(target: str, *, alone: bool = False) -> Callable:
    """Register the decorated function as a correct, unusual answer to ``target``.

    ``alone``: grade it end to end in a notebook of its own (see ``tests.wrong.wrong``).
    """

    def register(fn: Callable) -> Callable:
        REGISTRY.append(Wrong(fn, target, (), alone=alone))
        return fn

    return register


def load() -> list[Wrong]:
    """Every unusual answer of every module in this package, in order."""
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda info: info.name):
        if not info.ispkg and not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")
    return list(REGISTRY)
