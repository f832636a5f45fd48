"""The checks' watches: what the code under test does inside a call, seen as it runs.

A watch is a ``TorchFunctionMode``: :class:`_DeviceWatch` stops code that mixes the CPU into
work on the inputs' device (the meta-device checks, :func:`checks._contract.on_meta`), and
:class:`_SizeWatch` records the largest tensor a call makes
(:func:`checks._contract.largest_intermediate`). A call the grader makes in the kernel
(:mod:`checks._remote`) runs there inside the same watches, by ``NAME`` (:data:`WATCHES`,
:mod:`checks._serve`), and the kernel's report is merged into the grader's watch. So both
sides of the protocol import this module, and it imports neither of them.
"""

from __future__ import annotations

import inspect

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_leaves

from checks._crash import is_harness_file
from checks._errors import CheckError, CrashInCodeUnderTest
from checks._expect import shape_str
from checks._i18n import tr
from checks._meta import skip_dynamo_import

# The watches active now, innermost last. A call that the grader makes in another process
# (checks._remote) runs there inside the same watches, by NAME, and merges their report here.
ACTIVE_WATCHES: list = []


class _Watch(TorchFunctionMode):
    NAME = ""

    def __enter__(self):
        ACTIVE_WATCHES.append(self)
        return super().__enter__()

    def __exit__(self, *exc):
        ACTIVE_WATCHES.remove(self)
        return super().__exit__(*exc)

    def report(self):
        """What this watch saw, as data (sent back by the kernel)."""
        return None

    def report_crash(self, err: BaseException):
        """What this watch saw until the call crashed with ``err`` (sent back by the kernel)."""
        return self.report()

    def merge(self, report) -> None:
        """Take in what the same watch saw in the kernel."""


# Reads of a tensor's values, which a meta tensor (no data) cannot answer. When one of these,
# called by the code under test on a meta tensor, raises, the device check cannot go on: the
# watch sees the call and its exception itself (never the text of an exception of the code
# under test), and only that exception, reaching the check, lets the check skip the property.
DATA_READS = frozenset(
    {
        "item",
        "tolist",
        "__bool__",
        "__int__",
        "__float__",
        "__index__",
        "__complex__",
        "nonzero",
        "argwhere",
        "masked_select",
        "unique",
        "unique_consecutive",
        "repeat_interleave",
        "bincount",
        "equal",
        "allclose",
        "__getitem__",
        "__setitem__",
        "index_put",
        "index_put_",
    }
)


def _plain_index(index, depth=0) -> bool:
    """Whether an index is made of ints, slices, None, ... and tensors only (no object of the
    code under test whose ``__index__`` could raise whatever it likes)."""
    if depth > 4:
        return False
    if index is None or index is ... or isinstance(index, (bool, int, torch.Tensor)):
        return True
    if isinstance(index, slice):
        return all(_plain_index(x, depth + 1) for x in (index.start, index.stop, index.step))
    if type(index) in (tuple, list):
        return all(_plain_index(x, depth + 1) for x in index)
    return False


class _DeviceWatch(_Watch):
    """Raise a CheckError where code running on meta tensors mixes in (or moves to) the CPU.

    It also notes a read of values on a meta tensor that raised (:data:`DATA_READS`): the one
    reason for which :func:`on_meta` skips its property.
    """

    NAME = "device"

    def __init__(self):
        super().__init__()
        self.data_read: tuple[str, BaseException] | None = None  # (op, the exception it raised)

    def __enter__(self):
        skip_dynamo_import()  # before the first meta kernel runs (checks/_meta.py)
        return super().__enter__()

    def blames(self, err: BaseException) -> str | None:
        """The read of values on meta that raised ``err`` (or an exception in its chain)."""
        seen = set()
        while err is not None and id(err) not in seen:
            seen.add(id(err))
            if self.data_read is not None and err is self.data_read[1]:
                return self.data_read[0]
            if isinstance(err, (CrashInCodeUnderTest, CheckError)):
                op = getattr(err, "data_dependent", None)
                if isinstance(op, str) and op in DATA_READS:
                    return op
            # the chain Python shows: the cause, or the context unless it was suppressed
            err = err.__cause__ or (None if err.__suppress_context__ else err.__context__)
        return None

    def report_crash(self, err: BaseException):
        op = self.blames(err)
        return {"data_dependent": op} if op else None

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        leaves = _tensor_leaves(args, kwargs)
        on_meta = any(t.device.type == "meta" for t in leaves)
        on_cpu = [t for t in leaves if t.device.type == "cpu" and t.dim() > 0]
        name = getattr(func, "__name__", str(func))
        if on_meta and on_cpu and name not in ("__get__", "__set__"):
            raise _device_error(
                tr(
                    "{name} got a tensor of shape {shape} on the CPU together with tensors on "
                    "the inputs' device. A tensor made without device= (torch.arange, "
                    "torch.zeros, torch.tensor, ...) lands on the CPU and fails on a GPU: pass "
                    "device=X.device."
                ).format(name=name, shape=shape_str(on_cpu[0].shape))
            )
        if on_meta and name in ("cpu", "numpy"):
            raise _device_error(
                tr(
                    ".{name}() moves a tensor off the inputs' device: on a GPU the result would "
                    "come back on the CPU. Keep every tensor on the inputs' device."
                ).format(name=name)
            )
        try:
            out = func(*args, **kwargs)
        except Exception as err:
            if on_meta and name in DATA_READS and _plain_index(args[1:]):
                self.data_read = (name, err)
            raise
        if on_meta and name == "to" and isinstance(out, torch.Tensor) and out.device.type == "cpu":
            raise _device_error(
                tr(".to(...) moved a tensor to the CPU: keep every tensor on the inputs' device.")
            )
        return out


def _tensor_leaves(args, kwargs) -> list:
    """The tensors among a torch function's arguments, in lists and tuples too (one level: what
    torch functions take), without the cost of a general pytree walk on every call."""
    found = []
    for value in (*args, *kwargs.values()):
        if isinstance(value, torch.Tensor):
            found.append(value)
        elif isinstance(value, (list, tuple)):
            found.extend(v for v in value if isinstance(v, torch.Tensor))
    return found


def _device_error(message: str) -> CheckError:
    """A CheckError naming the line of the code under test that is running now."""
    for frame in inspect.stack(context=1)[2:]:
        if not is_harness_file(frame.filename) and frame.code_context:
            line = frame.code_context[0].strip()
            where = tr("line {number} of {function}").format(
                number=frame.lineno, function=frame.function
            )
            return CheckError(
                message + "\n      " + tr("at {where}: {source}").format(where=where, source=line)
            )
    return CheckError(message)


class _SizeWatch(_Watch):
    NAME = "size"

    def __init__(self):
        super().__init__()
        self.largest = (0, ())

    def report(self):
        return [int(self.largest[0]), [int(s) for s in self.largest[1]]]

    def merge(self, report) -> None:
        numel, shape = int(report[0]), tuple(int(s) for s in report[1])
        if numel > self.largest[0]:
            self.largest = (numel, shape)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in [out] if isinstance(out, torch.Tensor) else tree_leaves(out):
            if isinstance(t, torch.Tensor) and t.numel() > self.largest[0]:
                self.largest = (t.numel(), tuple(t.shape))
        return out


WATCHES = {watch.NAME: watch for watch in (_DeviceWatch, _SizeWatch)}
