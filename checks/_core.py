"""The registry of the checks, and what they are run on.

A *check* is a function ``check(fn, device)`` that calls a student's (or the
reference) implementation ``fn`` on inputs it builds on ``device`` and raises
:class:`CheckError` with a message that says what is wrong. Checks are grouped
by name; a group is what one notebook test cell runs, for example
``checks.run("masked_softmax", masked_softmax)``.

The same groups serve three masters: the visible self-checks in the notebooks,
nbgrader's hidden test cells (``checks.run_hidden``) and pytest on the
``solutions`` package (``tests/test_solutions.py``).

This module holds the registry (:class:`Check`, :func:`check`, ``REGISTRY``), the devices the
checks run on (:func:`available_devices`), the import of every chapter's module
(:func:`import_chapters`) and the reproducible inputs the checks build (:func:`random_tensor`,
:func:`random_lengths`, :func:`softmax_list`). A check fails through the assertion helpers
(:mod:`checks._expect`, :mod:`checks._mutation`); whose crash an exception is, is
:mod:`checks._crash`'s question; :mod:`checks._runner` runs a group.
"""

from __future__ import annotations

import importlib
import math
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Check:
    group: str
    fn: Callable
    hidden: bool

    @property
    def question(self) -> str:
        doc = (self.fn.__doc__ or self.fn.__name__).strip()
        return doc.splitlines()[0]


REGISTRY: dict[str, list[Check]] = {}


def check(group: str, *, hidden: bool = False) -> Callable:
    """Register the decorated function as one check of ``group``."""

    def register(fn: Callable) -> Callable:
        REGISTRY.setdefault(group, []).append(Check(group, fn, hidden))
        return fn

    return register


def available_devices() -> list[torch.device]:
    """Every device this machine can run the checks on: the CPU first, then accelerators."""
    devices = [torch.device("cpu")]
    devices += [torch.device(f"cuda:{i}") for i in range(torch.cuda.device_count())]
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        devices.append(torch.device("mps"))
    return devices


def import_chapters(package: str, path) -> list[str]:
    """Import every chapter module of ``package``, in sorted order, and return their names.

    A chapter module is a module directly in the package's directory whose name does
    not start with ``_``; subpackages (``checks.hidden``) are left to load on their
    own. Adding ``checks/<chapter>.py`` registers its checks with nothing else to edit.

    Args:
        package: the package's ``__name__``.
        path: the package's ``__path__``.
    """
    names = sorted(
        info.name
        for info in pkgutil.iter_modules(path)
        if not info.ispkg and not info.name.startswith("_")
    )
    for name in names:
        importlib.import_module(f"{package}.{name}")
    return names


def random_tensor(*shape, seed: int, device, dtype=torch.float32, scale: float = 1.0):
    """A reproducible normal tensor made on the CPU and moved to ``device``."""
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=gen, dtype=torch.float64) * scale).to(
        device=device, dtype=dtype
    )


def random_lengths(*shape, high: int, seed: int, device, low: int = 0):
    """Reproducible integer lengths in [low, high]."""
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(low, high + 1, shape, generator=gen).to(device)


def softmax_list(xs: list[float]) -> list[float]:
    """A plain-Python softmax, the independent reference for small worked examples."""
    top = max(xs)
    exps = [math.exp(x - top) for x in xs]
    total = sum(exps)
    return [v / total for v in exps]
