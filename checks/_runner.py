"""Running a group of checks against a function: ``checks.run`` and ``checks.run_hidden``.

The top of the package: it runs the checks registered in :mod:`checks._core` through the
proxies of :mod:`checks._remote` (every call of the code under test gets copies of its
inputs), says a question's verdict (:mod:`checks._quiz`), and loads the hidden checks
(``checks.hidden``, which only the grader has) when a hidden group is asked for. Nothing
below it imports it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

import torch

from checks._core import REGISTRY, Check, available_devices
from checks._crash import describe_crash, excerpt, raised_by_code_under_test
from checks._errors import CheckError, CheckInternalError
from checks._i18n import tr


def groups(*, hidden: bool | None = None) -> list[str]:
    """Names of the registered groups (loading the hidden ones too if they are installed)."""
    _load_hidden(required=False)
    return sorted(
        name
        for name, items in REGISTRY.items()
        if hidden is None or any(c.hidden == hidden for c in items)
    )


def _load_hidden(required: bool) -> None:
    try:
        importlib.import_module("checks.hidden")
    except ModuleNotFoundError:
        if required:
            raise


def _internal_error(item: Check, device, err: Exception) -> CheckInternalError:
    # A hidden check's place in the code is for maintainers (it reaches feedback otherwise).
    where = "" if item.hidden else f" ({item.fn.__module__}.{item.fn.__qualname__})"
    return CheckInternalError(
        f"the check {item.question!r}{where} itself failed on {device} with "
        f"{type(err).__name__}: {err}\n"
        "This is a bug in the checks, not in the code they check: please report it, "
        "with this message."
    )


PROBLEM_CHARS = 2000  # the most one check's failure may print (a backstop: see excerpt)
PROBLEM_LINES = 30


def _run(group: str, fn: Callable, devices, verbose: bool, echo: Callable = print) -> None:
    """Run ``group`` against ``fn``; a callable of this process is checked through a proxy.

    The checks never hand the code under test their own tensors: in the grader every call
    crosses to the kernel as data (:mod:`checks._remote`), and here, in the notebook or under
    pytest, ``fn`` is served in this process by the same server (:func:`checks._remote.local`),
    so every call gets copies of its inputs and a change in place is reported, not made.
    """
    if group not in REGISTRY:
        known = ", ".join(sorted(REGISTRY)) or "none"
        raise KeyError(f"no check group named {group!r}; known groups: {known}")
    if not callable(fn):
        raise CheckError(f"expected a function to check, got {excerpt(type(fn).__name__, 80, 1)}")
    from checks import _remote

    session = None
    if not _remote.is_proxy(fn):
        session, fn = _remote.local(fn)
    try:
        _run_checks(group, fn, devices, verbose, echo)
    finally:
        if session is not None:
            session.close()


def _run_checks(group: str, fn: Callable, devices, verbose: bool, echo: Callable) -> None:
    devices = list(devices) if devices is not None else available_devices()
    name = excerpt(getattr(fn, "__name__", type(fn).__name__), 80, 1)
    from checks import _quiz  # a question's group: no ✓ for its form (see checks/_quiz.py)

    question = _quiz.is_question(group)
    failures = []
    for item in REGISTRY[group]:
        problems = []
        for device in devices:
            try:
                item.fn(fn, torch.device(device))
            except CheckError as err:
                problems.append(tr("on {device}: {problem}").format(device=device, problem=err))
            except Exception as err:
                if not raised_by_code_under_test(err, fn):
                    raise _internal_error(item, device, err) from err
                if isinstance(err, NotImplementedError):
                    problems.append(tr("{name} is not implemented yet").format(name=name))
                    break
                problems.append(
                    tr("on {device}: {problem}").format(
                        device=device, problem=describe_crash(name, err, fn)
                    )
                )
        names = ", ".join(str(d) for d in devices)
        if problems:
            text = excerpt("\n    ".join(problems), PROBLEM_CHARS, PROBLEM_LINES)
            failures.append(f"✗ {tr(item.question)}\n    " + text)
            if verbose:
                echo(failures[-1])
        elif verbose and not question:
            echo(f"✓ {tr(item.question)} [{names}]")
    if failures:
        count = {"failed": len(failures), "total": len(REGISTRY[group]), "group": repr(group)}
        if verbose:  # the ✗ lines are printed already: say so instead of repeating them
            summary = tr("{failed} of {total} checks in {group} failed (the ✗ lines above say why)")
            raise CheckError(summary.format(**count))
        summary = tr("{failed} of {total} checks in {group} failed:").format(**count)
        raise CheckError(summary + "\n" + "\n".join(failures))
    if question:  # right or wrong in self-study, "recorded" where it is graded
        _quiz.verdict(group, fn, echo if verbose else None)


def run(group: str, fn: Callable, *, devices=None, verbose: bool = True, _run=_run) -> None:
    """Run the checks of ``group`` against ``fn`` on every available device.

    Prints one line per check (✓ or ✗, with what is wrong) and raises
    :class:`CheckError` if any failed: with ``verbose=True`` its message only
    counts the failures (the ✗ lines say why), with ``verbose=False`` it carries
    every ✗ line. A crash of the code under test is a failure of that check; a
    crash of a check itself raises :class:`CheckInternalError`.
    """
    _run(group, fn, devices, verbose)


def run_hidden(group: str, fn: Callable, *, devices=None, verbose: bool = True, _run=_run) -> None:
    """Like :func:`run`, for the hidden groups that only the grader has."""
    _load_hidden(required=True)
    _run(group, fn, devices, verbose)
