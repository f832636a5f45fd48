"""Whose exception is it: a crash of the code under test, or a bug of the checks themselves?

A check calls the student's code; when something raises, the student must read what their code
did wrong (which call, which line of their own code), and a bug of a check must never be
charged to them. This module tells the two apart by the frames the exception passed through
(:func:`is_harness_file`, :func:`raised_by_code_under_test`), names a crash of the code under
test (:func:`describe_crash`, :func:`crash_line`; :func:`calling` around a call turns one into
a :class:`CheckError`), and bounds and sanitizes the text that comes from the code under test
before a check shows it (:func:`excerpt`).

Both sides of the protocol use it: the kernel's server names a crash where it happens
(:mod:`checks._serve`), the grader's proxies raise it again (:mod:`checks._remote`), and the
runner reports a check's own crash as a bug of the check (:mod:`checks._runner`).
"""

from __future__ import annotations

import contextlib
import functools
import linecache
import os
import re
import sysconfig
import unicodedata
from collections.abc import Iterator

import torch

from checks._errors import CheckError, CheckInternalError, CrashInCodeUnderTest
from checks._i18n import tr

# --------------------------------------------------------------------------
# Text that comes from the code under test: bounded and sanitized before it is shown.
# --------------------------------------------------------------------------

EXCERPT_CHARS = 400  # the most of a student's exception message a check shows
EXCERPT_LINES = 4
_ANSI = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|[@-_])")


def _shown(char: str) -> bool:
    """Whether a character may be shown: no control or format character but the newline
    (bidirectional overrides, zero-width characters and escape sequences can hide or reorder
    what a reader sees)."""
    if char == "\n":
        return True
    return unicodedata.category(char) not in ("Cc", "Cf", "Cs", "Co", "Cn")


def excerpt(text, max_chars: int = EXCERPT_CHARS, max_lines: int = EXCERPT_LINES) -> str:
    """A bounded, sanitized excerpt of ``text`` (a student's exception message, a name).

    Escape sequences and control characters are removed (tabs become spaces); at most
    ``max_lines`` lines and ``max_chars`` characters are kept, and what is cut is counted,
    so that no check can echo a file that the code under test read and raised.
    """
    text = _ANSI.sub("", str(text)).replace("\t", " ").replace("\r\n", "\n").replace("\r", "\n")
    text = "".join(c for c in text if _shown(c))
    lines = text.split("\n")
    kept = "\n".join(lines[:max_lines])
    cut_lines = len(lines) - min(len(lines), max_lines)
    if len(kept) > max_chars:
        kept = kept[:max_chars]
    cut = len(text) - len(kept)
    if cut > 0:
        more = tr("{count} more lines, ").format(count=cut_lines) if cut_lines else ""
        kept = kept.rstrip() + tr(" … ({more}{count} more characters not shown)").format(
            more=more, count=cut
        )
    return kept


# --------------------------------------------------------------------------
# Whose exception is it? Frames of the harness against frames of the code under test.
# --------------------------------------------------------------------------


def _real_dir(path: str) -> str:
    return os.path.normcase(os.path.realpath(path))


_CHECKS_DIR = _real_dir(os.path.dirname(__file__))
_TORCH_DIR = _real_dir(os.path.dirname(torch.__file__))
_STDLIB_DIRS = tuple(
    sorted({_real_dir(sysconfig.get_paths()[key]) for key in ("stdlib", "platstdlib")})
)
# Third-party packages installed under a standard-library directory are not the standard library.
_SITE_DIR_NAMES = ("site-packages", "dist-packages")


def _inside(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


@functools.lru_cache(maxsize=4096)
def is_harness_file(filename: str) -> bool:
    """Whether ``filename`` belongs to the harness rather than to the code under test.

    The harness is the ``checks`` package, PyTorch and the Python standard library
    (``sysconfig``'s ``stdlib`` and ``platstdlib`` directories, less any
    ``site-packages`` or ``dist-packages`` inside them). Everything else is code
    under test: a notebook cell (``/tmp/ipykernel_…/….py``), a file in ``tests/wrong``,
    a module of ``solutions`` wherever it is installed, code made at run time
    (``<string>``).

    Args:
        filename: a frame's ``f_code.co_filename``.
    """
    if filename.startswith("<frozen "):  # frozen modules of the standard library
        return True
    if filename.startswith("<"):
        return False
    path = _real_dir(filename)
    if _inside(path, _CHECKS_DIR) or _inside(path, _TORCH_DIR):
        return True
    for directory in _STDLIB_DIRS:
        if _inside(path, directory):
            parts = os.path.relpath(path, directory).split(os.sep)
            return not any(part in _SITE_DIR_NAMES for part in parts)
    return False


def _frames_under_test(err: BaseException) -> list:
    """The traceback entries of ``err`` that lie in the code under test, outermost first."""
    entries = []
    tb = err.__traceback__
    while tb is not None:
        if not is_harness_file(tb.tb_frame.f_code.co_filename):
            entries.append(tb)
        tb = tb.tb_next
    return entries


def _qualnames_under_test(fn) -> set[str]:
    """Qualified names of ``fn`` and, for a class, of its methods that are code under test."""
    names = {getattr(fn, "__qualname__", "")}
    members = [vars(klass).values() for klass in getattr(fn, "__mro__", ())]
    for member in (m for values in members for m in values):
        member = getattr(member, "__func__", member)  # classmethod, staticmethod
        code = getattr(member, "__code__", None)
        if code is not None and not is_harness_file(code.co_filename):
            names.add(member.__qualname__)
    names.discard("")
    return names


# "f() missing 1 required positional argument", "C.forward() takes 4 positional arguments ..."
_BAD_CALL = re.compile(r"(?P<name>[\w.<>]+)\(\) (missing|takes|got)")


def raised_by_code_under_test(err: BaseException, fn=None) -> bool:
    """Whether ``err`` is a crash of the code under test rather than of the harness.

    It is if its traceback passes through a frame of the code under test: an
    exception raised only within ``checks`` (and the PyTorch or standard-library
    code it calls) is a bug of the check; one that passes through the student's
    function, module or notebook cell is the student's crash. So is a
    ``TypeError`` that says ``fn`` (or one of its methods) was called with
    arguments its signature does not take: Python raises it at the call, before
    any frame of ``fn`` runs.

    Args:
        err: the exception.
        fn: the function or module class under test, if known.
    """
    if isinstance(err, CrashInCodeUnderTest) or _frames_under_test(err):
        return True
    if fn is not None and isinstance(err, TypeError):
        match = _BAD_CALL.match(str(err))
        return bool(match) and match.group("name") in _qualnames_under_test(fn)
    return False


_RAISE = re.compile(r"raise\b")


def _source_file(fn) -> str | None:
    """The file that defines ``fn``, or the ``forward`` of a module class; None if unknown."""
    for candidate in (fn, getattr(fn, "forward", None)):
        code = getattr(candidate, "__code__", None)
        if code is not None:
            return code.co_filename
    return None


def describe_crash(what: str, err: BaseException, fn=None) -> str:
    """``"<what> raised <Type>: <message>"`` (an excerpt, see :func:`excerpt`), and the line of
    the code under test it came from (:func:`crash_line`).
    """
    raised = tr("{what} raised {error}: {message}")
    if isinstance(err, CrashInCodeUnderTest):
        text = raised.format(
            what=what, error=excerpt(err.type_name, 80, 1), message=excerpt(err.message)
        )
        return text + (f"\n      {excerpt(err.where, 300, 1)}" if err.where else "")
    text = raised.format(what=what, error=type(err).__name__, message=excerpt(err))
    where = crash_line(err, fn)
    return text + (f"\n      {where}" if where else "")


def crash_line(err: BaseException, fn=None) -> str:
    """``"at line 3 of forward: X[~mask] = 0"``: where in the code under test ``err`` came from.

    The line is the innermost one of the code under test in the file that defines ``fn``
    (the student's own code) if there is one, else the innermost one that is not a
    ``raise`` statement (whose message is already shown); "" if none.
    """
    entries = []  # (file, source line, where), outermost first
    for tb in _frames_under_test(err):
        code = tb.tb_frame.f_code
        line = linecache.getline(code.co_filename, tb.tb_lineno, tb.tb_frame.f_globals).strip()
        if line:
            where = tr("line {number} of {function}").format(
                number=tb.tb_lineno, function=code.co_name
            )
            entries.append((code.co_filename, line, where))
    own = _source_file(fn) if fn is not None else None
    chosen = [e for e in entries if e[0] == own] or [e for e in entries if not _RAISE.match(e[1])]
    if not chosen:
        return ""
    _, line, where = chosen[-1]
    return tr("at {where}: {source}").format(
        where=excerpt(where, 120, 1), source=excerpt(line, 200, 1)
    )


@contextlib.contextmanager
def calling(what: str, fn=None) -> Iterator[None]:
    """Name the call if the code under test raises inside the block.

    Turns an exception of the code under test into a :class:`CheckError`
    ``"<what> raised <Type>: <message>"``, so that the student sees which input
    made the code crash. ``NotImplementedError`` (an exercise not done yet), check
    failures and exceptions of the harness itself pass through unchanged.

    Args:
        what: the call, as the student would write it, e.g.
            ``"sequence_mask(ones(2, 3, 2), [2, 0], value=-1)"``.
        fn: the function or module class under test, to point at the line of
            its own code that crashed (optional).

    Example::

        with calling(f"sequence_mask on shape {tuple(X.shape)}", sequence_mask):
            out = sequence_mask(X, lens)
    """
    try:
        yield
    except (CheckError, CheckInternalError, NotImplementedError):
        raise
    except Exception as err:
        if not raised_by_code_under_test(err, fn):
            raise
        raise CheckError(describe_crash(what, err, fn)) from err
