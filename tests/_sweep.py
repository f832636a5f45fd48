"""Sweeps: families of parametrized cases of which the quick loop runs one per chapter.

A sweep proves a rule case by case: every known-wrong answer fails, every unusual answer and
every check group passes, through the proxy too, in both languages. ``make check`` (the quick
loop, about a minute) deselects the marker ``sweep``; ``make test`` runs every case (in
``test-slow``), and so does pytest run by hand on a file. :func:`one_per` leaves the first case
of each key (a chapter, mostly) unmarked, so the quick loop still proves each chapter once.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable

import pytest

from checks._core import REGISTRY


def one_per(
    values: Iterable, key: Callable[[object], Hashable], ids: Callable[[object], str] | None = None
) -> list:
    """``values`` as pytest params: the first of each ``key(value)`` as it is, every other
    one marked ``sweep``."""
    seen: set = set()
    params = []
    for value in values:
        k = key(value)
        marks = [pytest.mark.sweep] if k in seen else []
        seen.add(k)
        params.append(pytest.param(value, marks=marks, id=ids(value) if ids else None))
    return params


def chapter_of_group(group: str) -> str:
    """The chapter's checks module of a check group (``checks.masking`` for a hidden group of
    ``checks/hidden/masking.py`` too)."""
    return REGISTRY[group][0].fn.__module__.replace(".hidden.", ".")


def chapter_of_answer(answer) -> str:
    """The module of ``tests/wrong`` or ``tests/unusual`` that holds a known answer: one per
    chapter."""
    return answer.fn.__module__.rsplit(".", 1)[-1]


def first_only(_value) -> int:
    """One key for every value: only the first case runs in the quick loop."""
    return 0
