"""The machinery behind every check: a registry, a runner and assertion helpers.

A *check* is a function ``check(fn, device)`` that calls a student's (or the
reference) implementation ``fn`` on inputs it builds on ``device`` and raises
:class:`CheckError` with a message that says what is wrong. Checks are grouped
by name; a group is what one notebook test cell runs, for example
``checks.run("masked_softmax", masked_softmax)``.

The same groups serve three masters: the visible self-checks in the notebooks,
nbgrader's hidden test cells (``checks.run_hidden``) and pytest on the
``solutions`` package (``tests/test_solutions.py``).

Why one module: it is what nearly every module of ``checks/`` imports, and its parts lean on
each other: the registry's checks fail through the assertion helpers, which name a crash
with the crash attribution (:func:`calling`, :func:`describe_crash`) and bound a student's
text with :func:`excerpt`. A split would be clearer (the crash attribution, about 220 lines,
as a module of its own, the assertion helpers as another); not done yet because every
chapter's checks, the layer table of ``checks/__init__.py`` and the ``checks`` catalog's
message locations would change with it.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import linecache
import math
import numbers
import os
import pkgutil
import re
import sysconfig
import unicodedata
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch

from checks._errors import CheckError, CheckInternalError, CrashInCodeUnderTest
from checks._i18n import tr

# Bound at import time, before any student code runs, so that a later
# ``torch.allclose = lambda *a, **k: True`` in a notebook does not fool us.
_abs = torch.Tensor.abs
_isnan = torch.isnan
_isfinite = torch.isfinite


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


# --------------------------------------------------------------------------
# Assertion helpers. Each raises CheckError naming expected against actual.
# --------------------------------------------------------------------------


def shape_str(shape) -> str:
    return "(" + ", ".join(str(int(s)) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def expect_tensor(x, name: str, *, shape=None, dtype=None, device=None) -> None:
    """Check that ``x`` is a tensor with the given shape, dtype and device."""
    if not isinstance(x, torch.Tensor):
        raise CheckError(
            tr("{name} should be a torch.Tensor, got {type}").format(
                name=name, type=type(x).__name__
            )
        )
    if shape is not None and tuple(x.shape) != tuple(shape):
        raise CheckError(
            tr("{name} has shape {actual}, expected {expected}").format(
                name=name, actual=shape_str(x.shape), expected=shape_str(shape)
            )
        )
    if dtype is not None and x.dtype != dtype:
        raise CheckError(
            tr("{name} has dtype {actual}, expected {expected}").format(
                name=name, actual=x.dtype, expected=dtype
            )
        )
    if device is not None and x.device.type != torch.device(device).type:
        raise CheckError(
            tr("{name} is on device {actual}, expected {expected}").format(
                name=name, actual=x.device, expected=torch.device(device)
            )
        )


def _fmt_row(row: torch.Tensor) -> str:
    vals = row.detach().double().cpu().reshape(-1).tolist()[:8]
    more = ", …" if row.numel() > 8 else ""
    return "[" + ", ".join(f"{v:.6g}" for v in vals) + more + "]"


def _where(index: tuple[int, ...], labels) -> str:
    if labels:
        return ", ".join(f"{lab}={i}" for lab, i in zip(labels, index))
    return tr("index {index}").format(index=shape_str(index))


def expect_close(
    actual,
    expected: torch.Tensor,
    name: str,
    *,
    atol: float = 1e-5,
    rtol: float = 1e-4,
    labels: tuple[str, ...] | None = None,
    check_dtype: bool = True,
) -> None:
    """Check that ``actual`` matches ``expected`` and, if not, name the first wrong row.

    The last axis is treated as a row; ``labels`` name the leading axes, for
    example ``("batch", "query")`` for weights of shape (batch, queries, keys).
    """
    expect_tensor(
        actual,
        name,
        shape=expected.shape,
        dtype=expected.dtype if check_dtype else None,
        device=expected.device,
    )
    a = actual.detach().double().cpu()
    e = expected.detach().double().cpu()
    a_nan, e_nan = _isnan(a), _isnan(e)
    bad = _abs(a - e) > atol + rtol * _abs(e)
    bad = (bad & ~(a_nan & e_nan)) | (a_nan != e_nan)
    bad = bad | ((a != e) & ~_isfinite(e) & ~e_nan)  # infinities must match exactly
    if not bool(bad.any()):
        return
    if a.dim() == 0:
        raise CheckError(
            tr(
                "{name} is {actual:.10g}, expected {expected:.10g} "
                "(tolerance {atol:.0e} + {rtol:.0e}·|expected|)"
            ).format(name=name, actual=a.item(), expected=e.item(), atol=atol, rtol=rtol)
        )
    rows_bad = bad.reshape(-1, a.shape[-1]).any(dim=-1)
    first = int(torch.nonzero(rows_bad)[0])
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(first), a.shape[:-1]))
    row_a, row_e = a.reshape(-1, a.shape[-1])[first], e.reshape(-1, a.shape[-1])[first]
    count = int(rows_bad.sum())
    extra = (
        tr(" ({count} of {total} rows differ)").format(count=count, total=rows_bad.numel())
        if rows_bad.numel() > 1
        else ""
    )
    nan_note = tr(" (it contains NaN)") if bool(_isnan(row_a).any()) else ""
    if index:
        headline = tr("{name}: row {row} is wrong{extra}{nan_note}")
    else:
        headline = tr("{name}: the values are wrong{extra}{nan_note}")
    rows = tr("expected {expected}\n      actual   {actual}")
    raise CheckError(
        headline.format(name=name, row=_where(index, labels), extra=extra, nan_note=nan_note)
        + "\n      "
        + rows.format(expected=_fmt_row(row_e), actual=_fmt_row(row_a))
        + "\n      "
        + _largest_error(a, e, atol, rtol)
    )


def _largest_error(a: torch.Tensor, e: torch.Tensor, atol: float, rtol: float) -> str:
    """``largest absolute error 3.1e-02 at (0, 1, 2) (expected 0.25, actual 0.2810); tolerance …``."""
    diff = _abs(a - e)
    diff = torch.where(_isnan(a) & _isnan(e), torch.zeros_like(diff), diff)
    diff = torch.where(_isnan(diff), torch.full_like(diff, math.inf), diff)
    flat = int(torch.argmax(diff.reshape(-1)))
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), a.shape))
    return tr(
        "largest absolute error {error:.3g} at {index} (expected {expected:.10g}, "
        "actual {actual:.10g}); tolerance {atol:.0e} + {rtol:.0e}·|expected|"
    ).format(
        error=diff.reshape(-1)[flat].item(),
        index=shape_str(index),
        expected=e.reshape(-1)[flat].item(),
        actual=a.reshape(-1)[flat].item(),
        atol=atol,
        rtol=rtol,
    )


def expect_finite(x: torch.Tensor, name: str) -> None:
    """Check that ``x`` is a tensor with no NaN or infinity, and say where the first one is."""
    expect_tensor(x, name)
    finite = _isfinite(x.detach())
    if bool(finite.all()):
        return
    index = tuple(int(i) for i in torch.nonzero(~finite)[0])
    value = x.detach().double().cpu()[index].item()
    raise CheckError(
        tr("{name} has a non-finite value {value} at index {index}").format(
            name=name, value=value, index=shape_str(index)
        )
    )


def expect_attached(x: torch.Tensor, name: str) -> None:
    """Check that ``x``, computed from an input that requires grad, still requires grad.

    Otherwise no gradient can flow back to the input: the code under test detached its
    result (``.detach()``, ``.data``, ``torch.tensor(...)`` of values, a NumPy round trip).
    """
    expect_tensor(x, name)
    if not x.requires_grad:
        raise CheckError(
            tr(
                "{name} does not require grad although its input does, so no gradient can "
                "flow back: is the output detached from the input (.detach(), .data, "
                "torch.tensor)?"
            ).format(name=name)
        )


# Changes in place that the code under test made to what the checks gave it. The checks'
# own objects never change (the code gets copies, see _run); a change is noted here, by the
# object the checks hold, for expect_unchanged and invoke to report.
_MUTATIONS: dict[int, tuple] = {}


def note_mutation(obj, change: tuple) -> None:
    """Record that the code under test changed its copy of ``obj`` in place.

    ``change`` is ``("value", index, was, now)``, ``("layout", was dtype, was shape, now dtype,
    now shape)`` or, for a module, ``("parameters", names)``.
    """
    for key in [k for k, (ref, _) in _MUTATIONS.items() if ref() is None]:
        del _MUTATIONS[key]
    _MUTATIONS[id(obj)] = (weakref.ref(obj), change)


def mutation_of(obj) -> tuple | None:
    """The change in place recorded for ``obj`` (see :func:`note_mutation`), or None."""
    entry = _MUTATIONS.get(id(obj))
    if entry is None or entry[0]() is not obj:
        return None
    return entry[1]


def compared(before: torch.Tensor, after: torch.Tensor) -> tuple | None:
    """How ``after`` differs from ``before``, as :func:`note_mutation` records it, or None."""
    if before.dtype != after.dtype or tuple(before.shape) != tuple(after.shape):
        return ("layout", before.dtype, tuple(before.shape), after.dtype, tuple(after.shape))
    if before.device.type == "meta" or after.device.type == "meta":
        return None
    a, b = before.detach(), after.detach().to(before.device)
    same = a == b
    if a.is_floating_point() or a.is_complex():
        same = same | (_isnan(a) & _isnan(b))
    if bool(same.all()):
        return None
    index = tuple(int(i) for i in torch.nonzero(~same)[0])
    return ("value", index, a[index].item(), b[index].item())


def change_of(before: torch.Tensor, after: torch.Tensor) -> tuple | None:
    """The change in place of the checks' tensor ``after``: recorded, or seen against ``before``."""
    return mutation_of(after) or compared(before, after)


def _number(value) -> str:
    return f"{value:.6g}" if isinstance(value, (int, float)) else str(value)


def expect_unchanged(before: torch.Tensor, after: torch.Tensor, name: str) -> None:
    """Check that the code under test left its input ``name`` as it was.

    ``after`` is the tensor the checks passed; ``before`` a copy made before the call.
    """
    change = change_of(before, after)
    if change is None:
        return
    if change[0] == "layout":
        _, dtype, shape, now_dtype, now_shape = change
        raise CheckError(
            tr(
                "{name} was modified in place: it was {dtype} of shape {shape} and is now "
                "{now_dtype} of shape {now_shape}. Return a new tensor instead of changing "
                "the input."
            ).format(
                name=name,
                dtype=dtype,
                shape=shape_str(shape),
                now_dtype=now_dtype,
                now_shape=shape_str(now_shape),
            )
        )
    _, index, was, now = change
    raise CheckError(
        tr(
            "{name} was modified in place: at index {index} it was {was} and is now {now}. "
            "Return a new tensor instead of writing into the input."
        ).format(name=name, index=shape_str(index), was=_number(was), now=_number(now))
    )


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


# --------------------------------------------------------------------------
# Short conceptual questions: the answer is a value (a letter, a number), checked
# for its form by the visible group and for its content by a hidden one.
# --------------------------------------------------------------------------


def expect_choice(answer, options: str, name: str) -> str:
    """Check that ``answer`` is one of the letters in ``options`` (e.g. ``"abcd"``); return it.

    Case and surrounding spaces do not matter: ``" B"`` is ``"b"``.
    """
    if answer is ... or answer is None:
        raise CheckError(
            tr("{name}: no answer yet: set it to one of {options}").format(
                name=name, options=", ".join(map(repr, options))
            )
        )
    # One letter: `"ab" in "abcd"` and `"" in "abcd"` are true, so test the length too.
    if (
        not isinstance(answer, str)
        or len(answer.strip()) != 1
        or answer.strip().lower() not in options
    ):
        raise CheckError(
            tr("{name} should be one of the letters {options}, got {answer} ({type})").format(
                name=name,
                options=", ".join(map(repr, options)),
                answer=repr(answer),
                type=type(answer).__name__,
            )
        )
    from checks import _quiz

    form = tr("a letter {first}–{last}").format(first=options[0], last=options[-1])
    _quiz.record(name, answer.strip().lower(), form)
    return answer.strip().lower()


def real_number(answer):
    """``answer`` as a Python number where it is one in another form; else ``answer`` itself.

    What counts as a number, here and through the grader's proxies alike (the kernel sends
    NumPy scalars as Python numbers, with this function): an ``int`` or a
    ``float`` (a ``bool`` is not a number), a real NumPy scalar (``numpy.float64(15.0)``,
    ``numpy.int64(3)``), or a tensor of one element of a real dtype (``torch.tensor(15.0)``).
    """
    if isinstance(answer, torch.Tensor) and answer.numel() == 1:
        if answer.dtype != torch.bool and not answer.is_complex() and answer.device.type != "meta":
            return answer.item()
    if type(answer).__module__ == "numpy" and isinstance(answer, numbers.Real):
        item = answer.item()
        if isinstance(item, (int, float)) and not isinstance(item, bool):
            answer = item
    if type(answer) is int and abs(answer) > 2**1023:  # too large for a float: not finite
        return math.inf
    return answer


def expect_number(answer, name: str) -> float:
    """Check that ``answer`` is a real number (see :func:`real_number`); return it as a float."""
    if answer is ... or answer is None:
        raise CheckError(tr("{name}: no answer yet: set it to a number").format(name=name))
    answer = real_number(answer)
    if (
        isinstance(answer, bool)
        or not isinstance(answer, (int, float))
        or not math.isfinite(answer)
    ):
        raise CheckError(
            tr("{name} should be a finite number, got {answer} ({type})").format(
                name=name, answer=repr(answer), type=type(answer).__name__
            )
        )
    from checks import _quiz

    _quiz.record(name, float(answer), tr("a number"))
    return float(answer)
