"""Assertion helpers: each checks one property of what the code under test gave back and
raises :class:`CheckError` naming the expected against the actual.

- Tensors: :func:`expect_tensor` (type, shape, dtype, device), :func:`expect_close` (values:
  the first wrong row, the largest error and the tolerance), :func:`expect_finite` (where the
  first NaN or infinity is) and :func:`expect_attached` (a gradient can still flow back).
- The answers of the questions ("Check your understanding"): :func:`expect_choice` (one letter)
  and :func:`expect_number` (a finite real number, in any form :func:`real_number` takes); each
  records the answer's form for the question's verdict (:mod:`checks._quiz`).

What the code under test changed in place is checked by :mod:`checks._mutation`.
"""

from __future__ import annotations

import math
import numbers

import torch

from checks import _quiz
from checks._errors import CheckError
from checks._i18n import tr

# Bound at import time, before any student code runs, so that a later
# ``torch.allclose = lambda *a, **k: True`` in a notebook does not fool us.
_abs = torch.Tensor.abs
_isnan = torch.isnan
_isfinite = torch.isfinite


# --------------------------------------------------------------------------
# Tensors: what the code under test returned.
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
    _quiz.record(name, float(answer), tr("a number"))
    return float(answer)
