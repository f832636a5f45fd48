"""The meta device without ``torch._dynamo``: PyTorch's Python meta kernels, made cheap to start.

On the meta device (the checks' test of where each tensor is made, :func:`checks._contract.
on_meta`) many operators run PyTorch's Python reference implementations (``torch._refs``:
``lt``, ``masked_fill``, ``where``, ...), which PyTorch wraps in ``torch._disable_dynamo``. On
its first call, that wrapper imports ``torch._dynamo``, the compiler, to build a function
that keeps the compiler out of the reference, and caches it on the reference as
``__dynamo_disable``. Nothing here compiles, yet the import costs about 2 s of CPU in every
process that runs a meta check, every kernel that grading starts included (three masking
references graded with one job: 35.9 s of CPU with it, 24.8 s without, 2026-11-27).

:func:`skip_dynamo_import` fills that cache with the reference itself for every such wrapper
that exists, so that a call runs the reference at once: what the call computes does not
change (``torch._dynamo.disable`` only matters inside ``torch.compile``, which never traces
into these references from the checks; a notebook that compiles a function after its checks
ran gets the same results, checked with the ``eager`` and ``aot_eager`` backends on the CPU,
2026-11-27). A wrapper made later, or a PyTorch whose wrapper no
longer looks like this, just imports ``torch._dynamo`` on its first call, as before.
``tests/test_checks_meta.py`` fails when a meta check imports it again.
"""

from __future__ import annotations

import gc
import sys
import types

import torch

# How many wrappers the first call filled; None until then.
filled: int | None = None


def skip_dynamo_import() -> int:
    """Fill the ``__dynamo_disable`` cache of every ``torch._disable_dynamo`` wrapper that
    exists with the function it wraps, once per process (about 0.1 s); how many it filled."""
    global filled
    if filled is not None:
        return 0
    filled = 0
    if "torch._dynamo" in sys.modules:  # imported already: nothing left to save
        return 0
    try:
        code = torch._compile._disable_dynamo(lambda: None).__code__
        slot = code.co_freevars.index("fn")
    except (AttributeError, TypeError, ValueError):  # another PyTorch: leave it as it is
        return 0
    for obj in gc.get_objects():
        if type(obj) is types.FunctionType and obj.__code__ is code:
            wrapped = obj.__closure__[slot].cell_contents
            if callable(wrapped) and getattr(wrapped, "__dynamo_disable", None) is None:
                try:
                    wrapped.__dynamo_disable = wrapped
                except (AttributeError, TypeError):
                    continue
                filled += 1
    return filled
