"""The machinery behind every check: a registry, a runner and assertion helpers.

A *check* is a function ``check(fn, device)`` that calls a student's (or the
reference) implementation ``fn`` on inputs it builds on ``device`` and raises
:class:`CheckError` with a message that says what is wrong. Checks are grouped
by name; a group is what one notebook test cell runs, for example
``checks.run("masked_softmax", masked_softmax)``.

The same groups serve three masters: the visible self-checks in the notebooks,
nbgrader's hidden test cells (``checks.run_hidden``) and pytest on the
``solutions`` package (``tests/test_solutions.py``).
"""

from __future__ import annotations

import hashlib
import hmac
import importlib
import math
import os
from collections.abc import Callable
from dataclasses import dataclass

import torch

# Bound at import time, before any student code runs, so that a later
# ``torch.allclose = lambda *a, **k: True`` in a notebook does not fool us.
_abs = torch.Tensor.abs
_isnan = torch.isnan
_isfinite = torch.isfinite


def _make_signer():
    """Under the grader, a signer for "these checks ran and passed"; otherwise None.

    The grader writes a fresh key to the file named by ``ATTENTION_GRADER_KEY_FILE``;
    it is read and deleted here, when the notebook's first cell imports ``checks``,
    before any student code runs. The grader accepts a test cell only if its output
    carries the signature, so replacing ``checks.run`` or emptying the registry
    from a notebook cannot fake a pass.
    """
    path = os.environ.pop("ATTENTION_GRADER_KEY_FILE", None)
    if not path or not os.path.exists(path):
        return None
    with open(path, "rb") as f:
        key = f.read()
    os.remove(path)
    return lambda text: hmac.new(key, text.encode(), hashlib.sha256).hexdigest()[:20]


_sign = _make_signer()


def signed_line(group: str, names: list[str], sign) -> str:
    """The line a passing group prints under the grader (see :func:`_make_signer`)."""
    return f"[grader] {group}: {len(names)} checks passed ({sign(group + '|' + ','.join(names))})"


class CheckError(AssertionError):
    """A check found a wrong answer. The message says what and where."""


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


def _run(group: str, fn: Callable, devices, verbose: bool, sign=_sign) -> None:
    if group not in REGISTRY:
        known = ", ".join(sorted(REGISTRY)) or "none"
        raise KeyError(f"no check group named {group!r}; known groups: {known}")
    if not callable(fn):
        raise CheckError(f"expected a function to check, got {type(fn).__name__}")
    devices = list(devices) if devices is not None else available_devices()
    failures = []
    for item in REGISTRY[group]:
        problems = []
        for device in devices:
            try:
                item.fn(fn, torch.device(device))
            except NotImplementedError:
                problems.append(f"{fn.__name__} is not implemented yet")
                break
            except CheckError as err:
                problems.append(f"on {device}: {err}")
            except Exception as err:  # the code under test crashed
                problems.append(f"on {device}: {fn.__name__} raised {type(err).__name__}: {err}")
        names = ", ".join(str(d) for d in devices)
        if problems:
            failures.append(f"✗ {item.question}\n    " + "\n    ".join(problems))
            if verbose:
                print(failures[-1])
        elif verbose:
            print(f"✓ {item.question} [{names}]")
    if failures:
        raise CheckError(
            f"{len(failures)} of {len(REGISTRY[group])} checks in {group!r} failed:\n"
            + "\n".join(failures)
        )
    if sign is not None:
        print(signed_line(group, [c.fn.__qualname__ for c in REGISTRY[group]], sign))


def run(group: str, fn: Callable, *, devices=None, verbose: bool = True, _run=_run) -> None:
    """Run the checks of ``group`` against ``fn`` on every available device.

    Prints one line per check (✓ or ✗) and raises :class:`CheckError` if any failed.
    """
    _run(group, fn, devices, verbose)


def run_hidden(group: str, fn: Callable, *, devices=None, verbose: bool = True, _run=_run) -> None:
    """Like :func:`run`, for the hidden groups that only the grader has."""
    _load_hidden(required=True)
    _run(group, fn, devices, verbose)


# --------------------------------------------------------------------------
# Assertion helpers. Each raises CheckError naming expected against actual.
# --------------------------------------------------------------------------


def shape_str(shape) -> str:
    return "(" + ", ".join(str(int(s)) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def expect_tensor(x, name: str, *, shape=None, dtype=None, device=None) -> None:
    """Check that ``x`` is a tensor with the given shape, dtype and device."""
    if not isinstance(x, torch.Tensor):
        raise CheckError(f"{name} should be a torch.Tensor, got {type(x).__name__}")
    if shape is not None and tuple(x.shape) != tuple(shape):
        raise CheckError(f"{name} has shape {shape_str(x.shape)}, expected {shape_str(shape)}")
    if dtype is not None and x.dtype != dtype:
        raise CheckError(f"{name} has dtype {x.dtype}, expected {dtype}")
    if device is not None and x.device.type != torch.device(device).type:
        raise CheckError(f"{name} is on device {x.device}, expected {torch.device(device)}")


def _fmt_row(row: torch.Tensor) -> str:
    vals = row.detach().double().cpu().reshape(-1).tolist()[:8]
    more = ", …" if row.numel() > 8 else ""
    return "[" + ", ".join(f"{v:.4g}" for v in vals) + more + "]"


def _where(index: tuple[int, ...], labels) -> str:
    if labels:
        return ", ".join(f"{lab}={i}" for lab, i in zip(labels, index))
    return "index " + shape_str(index)


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
        raise CheckError(f"{name} is {a.item():.6g}, expected {e.item():.6g}")
    rows_bad = bad.reshape(-1, a.shape[-1]).any(dim=-1)
    first = int(torch.nonzero(rows_bad)[0])
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(first), a.shape[:-1]))
    row_a, row_e = a.reshape(-1, a.shape[-1])[first], e.reshape(-1, a.shape[-1])[first]
    count = int(rows_bad.sum())
    where = f"row {_where(index, labels)}" if index else "the values"
    extra = f" ({count} of {rows_bad.numel()} rows differ)" if rows_bad.numel() > 1 else ""
    nan_note = " (it contains NaN)" if bool(_isnan(row_a).any()) else ""
    raise CheckError(
        f"{name}: {where} is wrong{extra}{nan_note}\n"
        f"      expected {_fmt_row(row_e)}\n"
        f"      actual   {_fmt_row(row_a)}"
    )


def expect_finite(x: torch.Tensor, name: str) -> None:
    """Check that ``x`` has no NaN or infinity, and say where the first one is."""
    finite = _isfinite(x.detach())
    if bool(finite.all()):
        return
    index = tuple(int(i) for i in torch.nonzero(~finite)[0])
    value = x.detach().double().cpu()[index].item()
    raise CheckError(f"{name} has a non-finite value {value} at index {shape_str(index)}")


def expect_unchanged(before: torch.Tensor, after: torch.Tensor, name: str) -> None:
    """Check that the code under test left its input ``name`` as it was."""
    same = (before == after) | (_isnan(before) & _isnan(after))
    if not bool(same.all()):
        index = tuple(int(i) for i in torch.nonzero(~same)[0])
        raise CheckError(
            f"{name} was modified in place: at index {shape_str(index)} it was "
            f"{before[index].item():.6g} and is now {after[index].item():.6g}. "
            "Return a new tensor instead of writing into the input."
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
