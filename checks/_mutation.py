"""Changes in place that the code under test made to the tensors a check gave it.

The checks' own objects never change: the code under test gets copies (:mod:`checks._remote`),
and what it writes into them is recorded by the object the check holds (:func:`note_mutation`,
:func:`mutation_of`), or seen against a copy the check made before the call (:func:`compared`).
:func:`expect_unchanged` reports either to the student, as ``checks._contract.invoke`` does for
every input of a call.
"""

from __future__ import annotations

import weakref

import torch

from checks._errors import CheckError
from checks._expect import shape_str
from checks._i18n import tr

# Bound at import time, before any student code runs, so that a later
# ``torch.isnan = ...`` in a notebook does not fool us.
_isnan = torch.isnan


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
