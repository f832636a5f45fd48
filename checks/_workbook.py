"""An exercise left unfinished says so in one line, instead of a long traceback.

A stub raises ``NotImplementedError()`` until the student fills it in. Cells after it that
call it (a demo, a plot, the next exercise's example) would show a traceback through PyTorch
and the course's code; :func:`explain_unfinished`, which the setup cell of every notebook a
student opens calls, makes IPython print one line instead, that says what to do:

    NotImplementedError: masked_softmax is not implemented yet: finish its exercise above and
    run its cell again, or go on with the course's reference: from solutions.masking import
    masked_softmax

The second half appears only where the reference exists (a workbook; not a released
chapter folder, whose ``solutions/`` holds the earlier chapters only). Any other
``NotImplementedError`` (PyTorch's, on a device without an operator) keeps its traceback.

Once a stub has stopped a cell, what that cell would have defined is missing: a later cell's
``NameError`` or ``AttributeError``, raised in the notebook's own code, is one line too, that
names the exercise to finish.
"""

from __future__ import annotations

import importlib
import linecache
import pkgutil
import re

from checks._crash import is_harness_file
from checks._i18n import tr

STUB_LINE = re.compile(r"raise\s+NotImplementedError(\(\s*\))?\s*$")
ANSWER = re.compile(r"\banswer_\d+_\d+\b")


def _stub_frame(tb):
    """The frame of a stub's ``raise NotImplementedError()`` in notebook code, or None."""
    while tb.tb_next is not None:
        tb = tb.tb_next
    frame = tb.tb_frame
    filename = frame.f_code.co_filename
    if is_harness_file(filename) or "site-packages" in filename or "dist-packages" in filename:
        return None
    line = linecache.getline(filename, tb.tb_lineno, frame.f_globals).strip()
    return frame if STUB_LINE.match(line) else None


def reference_import(name: str) -> str | None:
    """``from solutions.<module> import <name>`` if a module of ``solutions`` defines it here."""
    try:
        import solutions
    except ImportError:
        return None
    for info in pkgutil.iter_modules(solutions.__path__):
        if info.name.startswith("_") or info.name == "answers":
            continue
        try:
            module = importlib.import_module(f"solutions.{info.name}")
        except Exception:  # a broken module of the student's folder: no advice from it
            continue
        if getattr(getattr(module, name, None), "__module__", None) == module.__name__:
            return f"from solutions.{info.name} import {name}"  # where it is defined
    return None


def message(frame) -> str:
    """The one line for a stub that raised in ``frame``."""
    code = frame.f_code
    if code.co_name == "<module>":  # an answer cell: `answer_1_1 = ...`, then the raise
        source = "".join(linecache.getlines(code.co_filename, frame.f_globals))
        names = ANSWER.findall(source)
        what = names[0] if names else tr("this answer")
        SUBJECTS.append(what)
        return tr(
            "{what} is not answered yet: replace `raise NotImplementedError()` in its cell "
            "with your answer"
        ).format(what=what)
    owner = frame.f_locals.get("self")
    if owner is not None and not isinstance(owner, type):
        exported = type(owner).__name__
        what = exported if code.co_name == "forward" else f"{exported}.{code.co_name}"
    else:
        exported = what = code.co_name
    SUBJECTS.append(what)
    reference = reference_import(exported)
    if reference:
        return tr(
            "{what} is not implemented yet: finish its exercise above and run its cell again, "
            "or go on with the course's reference: {reference}"
        ).format(what=what, reference=reference)
    return tr(
        "{what} is not implemented yet: finish its exercise above and run its cell again"
    ).format(what=what)


UNFINISHED: list[str] = []  # what the stubs that stopped a cell said, latest last
SUBJECTS: list[str] = []  # what each of them named (a function, a module, an answer)


def _in_notebook_code(tb) -> bool:
    """Was the exception raised in the notebook's own code (a cell), not in a library?"""
    while tb.tb_next is not None:
        tb = tb.tb_next
    filename = tb.tb_frame.f_code.co_filename
    return not is_harness_file(filename) and "-packages" not in filename


def _handler(shell, etype, value, tb, tb_offset=None):
    default = shell.InteractiveTB.structured_traceback
    if issubclass(etype, NotImplementedError):
        frame = _stub_frame(tb) if tb is not None else None
        if frame is None:
            return default(etype, value, tb, tb_offset=tb_offset)
        UNFINISHED.append(message(frame))
        return [f"NotImplementedError: {UNFINISHED[-1]}"]
    if UNFINISHED and tb is not None and _in_notebook_code(tb):  # NameError, AttributeError
        what = SUBJECTS[-1] if SUBJECTS else UNFINISHED[-1].split(" is not ", 1)[0]
        return [
            f"{etype.__name__}: {value}: "
            + tr(
                "a cell above stopped at an unfinished exercise ({what}); finish it, then run "
                "the cells again from there"
            ).format(what=what)
        ]
    return default(etype, value, tb, tb_offset=tb_offset)


def explain_unfinished(shell=None) -> bool:
    """Make IPython show a stub's ``NotImplementedError``, and what it leaves undefined, as one
    line each; False outside IPython."""
    if shell is None:
        try:
            from IPython import get_ipython
        except ImportError:
            return False
        shell = get_ipython()
    if shell is None:
        return False
    shell.set_custom_exc((NotImplementedError, NameError, AttributeError), _handler)
    return True
