"""Properties every graded function and module must have, whatever it computes.

Each helper tests one property that a wrong answer can break while its values
look right on the usual inputs:

- :func:`invoke`: the inputs are left unchanged (no ``X[...] = 0``, no ``clamp_``);
- :func:`expect_gradients`: a gradient reaches every parameter and every input
  that requires one (no ``.detach()``, no ``torch.no_grad()`` around a projection);
- :func:`on_meta`: tensors made inside stay on the inputs' device (no ``torch.arange``
  without ``device=``, no ``.cpu()``), proven on the ``meta`` device, so that a
  grader without a GPU sees it;
- :func:`float64_device`: where float64 is tested (the CPU for a device without it), and
  :data:`FLOAT64`, the tolerance that tells float64 from float32 computed and cast back;
- :func:`expect_gradient_values`: the gradient is the derivative (finite differences);
- :func:`expect_dropout_pattern`: dropout with 0 < p < 1 zeroes a fraction p of the
  weights and scales the rest by 1 / (1 - p), once;
- :func:`largest_intermediate`: the largest tensor the code under test creates.

Why one module: :data:`CLASSES` names the five properties every graded target declares with
:func:`properties` (``tests/test_properties.py`` holds each to a known-wrong answer), and
the helpers below are those properties' one implementation each; a property class and its
helper are added together, and every chapter imports both from here.
"""

from __future__ import annotations

import contextlib
import math

import torch

from checks._crash import calling, excerpt
from checks._errors import CheckError, CrashInCodeUnderTest
from checks._expect import shape_str
from checks._i18n import tr
from checks._mutation import _number, change_of, mutation_of
from checks._watch import _DeviceWatch, _SizeWatch

_clone = torch.Tensor.clone


# --------------------------------------------------------------------------
# The property classes every graded target's checks cover, declared target by target.
# --------------------------------------------------------------------------

CLASSES = ("float64", "gradient", "meta", "dropout", "unchanged")
CLASS_MEANING = {
    "float64": "float64 in, float64 out, computed in float64 (equal to a float64 reference "
    "to FLOAT64)",
    "gradient": "a gradient reaches every input and parameter, and it is the derivative "
    "(finite differences in float64)",
    "meta": "the forward on the meta device: no tensor made on the CPU, none moved off",
    "dropout": "dropout with 0 < p < 1 in training, applied once, and none in eval",
    "unchanged": "the inputs (and a module's own tensors) left as they were",
}
PROPERTIES: dict[str, dict[str, tuple[str, ...] | str]] = {}


def properties(target: str, **classes) -> None:
    """Declare, for a graded target, the check groups that test each property class.

    Each class of :data:`CLASSES` is given either the groups that test it (a tuple of group
    names; a known-wrong answer in ``tests/wrong`` that breaks the class must fail every one,
    see ``tests/test_properties.py``) or why it does not apply, a string ``"n/a: ..."``.

    Example::

        properties(
            "masked_softmax",
            float64=("masked_softmax.safety",),
            dropout="n/a: masked_softmax has no dropout",
            ...
        )
    """
    missing = set(CLASSES) - set(classes)
    unknown = set(classes) - set(CLASSES)
    if missing or unknown:
        raise TypeError(f"{target}: classes missing {sorted(missing)}, unknown {sorted(unknown)}")
    for name, groups in classes.items():
        if isinstance(groups, str):
            if not groups.startswith("n/a: ") or len(groups) < 12:
                raise TypeError(f"{target}.{name}: say why it does not apply: 'n/a: <why>'")
        elif not (isinstance(groups, tuple) and groups and all(isinstance(g, str) for g in groups)):
            raise TypeError(f"{target}.{name}: give a tuple of group names, got {groups!r}")
    PROPERTIES[target] = dict(classes)


# A float64 result against an independent float64 reference: float32 rounding (about 6e-8
# of each value) anywhere inside shows; summing in another order (about 1e-15) does not.
FLOAT64 = dict(atol=1e-10, rtol=1e-9)


def float64_device(device) -> torch.device:
    """``device``, or the CPU where ``device`` has no float64 (Apple's MPS)."""
    device = torch.device(device)
    return torch.device("cpu") if device.type == "mps" else device


def _tensors(args, kwargs, names=None) -> list[tuple[str, torch.Tensor]]:
    """The tensor arguments, each with its name (``names`` for the positional ones)."""
    names = names or ()
    named = [(names[i] if i < len(names) else f"argument {i + 1}", a) for i, a in enumerate(args)]
    named += list(kwargs.items())
    return [(n, t) for n, t in named if isinstance(t, torch.Tensor)]


def invoke(fn, *args, what: str, names=None, under=None, **kwargs):
    """Call ``fn(*args, **kwargs)`` and check that it left every tensor argument unchanged.

    The code under test gets copies (see :func:`checks._runner._run`): a change it makes in
    place is recorded, not made, and reported here. A module's forward must leave the
    module's parameters and buffers as they were, too.

    Args:
        fn: the function or module to call.
        what: the call as the student would write it, for messages.
        names: the names of the positional arguments (``("queries", "keys", ...)``).
        under: the function or class under test, to point at its line if it crashes.
    """
    named = _tensors(args, kwargs, names)
    before = [(n, t, _clone(t.detach()) if t.device.type != "meta" else t) for n, t in named]
    with calling(what, under if under is not None else fn):
        out = fn(*args, **kwargs)
    for name, t, copy in before:
        change = change_of(copy, t)
        if change is None:
            continue
        if change[0] == "layout":
            _, dtype, shape, now_dtype, now_shape = change
            raise CheckError(
                tr(
                    "{what} changed its input {name} in place: it was {dtype} of shape {shape} "
                    "and is now {now_dtype} of shape {now_shape}. Work on a new tensor "
                    "(unsqueeze, not unsqueeze_)."
                ).format(
                    what=what,
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
                "{what} modified its input {name} in place: at index {index} it was {was} and "
                "is now {now}. The caller may still need it: compute a new tensor (masked_fill, "
                "torch.where, clamp, not X[...] = ..., masked_fill_ or clamp_)."
            ).format(
                what=what, name=name, index=shape_str(index), was=_number(was), now=_number(now)
            )
        )
    change = mutation_of(_root_of(fn))
    if change is not None and change[0] == "parameters":
        raise CheckError(
            tr(
                "{what} changed the module's own tensors in place ({names}): a forward must "
                "leave its parameters and buffers as they are (no .data, copy_ or zero_ on them)."
            ).format(what=what, names=", ".join(change[1]))
        )
    return out


def _root_of(fn):
    """The module proxy whose tensors a call of ``fn`` may change (``fn`` itself otherwise)."""
    from checks._remote import RemoteModule

    return fn._root if isinstance(fn, RemoteModule) else fn


def expect_gradients(out: torch.Tensor, named: dict, what: str, *, seed: int = 0) -> None:
    """Backpropagate a random projection of ``out``; every tensor in ``named`` must get a gradient.

    Args:
        out: the output, computed from the tensors in ``named``.
        named: ``{"W_q.weight": tensor, "queries": tensor, ...}``, each requiring grad.
        what: the call, for messages.
    """
    if not isinstance(out, torch.Tensor) or not out.requires_grad:
        raise CheckError(
            tr(
                "{what}: the output does not require grad although its inputs and parameters "
                "do, so nothing can be learned: is it computed under torch.no_grad(), or "
                "detached (.detach(), .data, torch.tensor(...))?"
            ).format(what=what)
        )
    for t in named.values():
        t.grad = None
    gen = torch.Generator().manual_seed(seed)
    direction = torch.randn(out.shape, generator=gen, dtype=torch.float64)
    with calling(tr("backward through {what}").format(what=what)):
        (out * direction.to(device=out.device, dtype=out.dtype)).sum().backward()
    missing = [n for n, t in named.items() if t.grad is None]
    if missing:
        raise CheckError(
            tr(
                "{what}: no gradient reached {names}. Every parameter and every input must "
                "stay in the graph: no .detach(), .data or torch.no_grad() on the way from "
                "them to the output."
            ).format(what=what, names=", ".join(missing))
        )
    for name, t in named.items():
        if not bool(torch.isfinite(t.grad).all()):
            raise CheckError(
                tr("{what}: the gradient of {name} is not finite").format(what=what, name=name)
            )


def module_tensors(module, **inputs) -> dict:
    """The module's parameters (by name) and the given inputs, each set to require grad."""
    named = {n: p for n, p in module.named_parameters() if p.requires_grad}
    for name, t in inputs.items():
        if t is not None and t.is_floating_point():
            t.requires_grad_(True)
            named[name] = t
    return named


def on_meta(call, what: str, under=None):
    """Run ``call()`` (which builds its inputs on ``meta``) and check the result stays on meta.

    Returns the output, or None when the code under test read the values of a meta tensor
    (``.item()``, ``.tolist()``, boolean indexing), which a meta tensor does not have: the
    watch saw that read raise, and the check reached the exception it raised. Any other
    crash on meta, whatever its type or message, fails the property.
    """
    watch = _DeviceWatch()
    try:
        with watch:
            with calling(what, under):
                out = call()
    except NotImplementedError as err:  # calling() lets these through: an exercise not done yet
        if watch.blames(err):
            return None
        message = err.message if isinstance(err, CrashInCodeUnderTest) else str(err)
        raise CheckError(
            tr("{what} raised {error}: {message}").format(
                what=what, error="NotImplementedError", message=excerpt(message)
            )
            + "\n      "
            + tr(
                "The code must run on any device: on a GPU it gets tensors there, and on the "
                "meta device (tensors without data) the checks see where each tensor is made."
            )
        ) from None
    except CheckError as err:
        if watch.blames(err):
            return None
        cause = err.__cause__
        text = f"{type(cause).__name__}: {cause}" if cause is not None else ""
        if cause is not None and "expected device" in text:
            raise CheckError(
                f"{err}\n      "
                + tr(
                    "(a tensor was made on the CPU while the inputs were on another device: "
                    "pass device=... when you create it)"
                )
            ) from None
        raise
    for t in out if isinstance(out, tuple) else (out,):
        if isinstance(t, torch.Tensor) and t.device.type != "meta":
            raise CheckError(
                tr("{what}: the output is on {device}, expected the inputs' device meta").format(
                    what=what, device=t.device
                )
            )
    return out


def expect_dropout_pattern(dropped, weights, p: float, what: str) -> None:
    """``dropped`` must be ``weights`` with a fraction ≈ p zeroed and the rest divided by 1 - p.

    Dropout applied twice keeps (1 - p)² of the weights and scales them by 1 / (1 - p)²;
    dropout on the scores instead of the weights, or no dropout at all, gives other values.
    """
    d, w = dropped.detach().double().cpu(), weights.detach().double().cpu()
    live = w.abs() > 1e-6  # weights that are not zero before dropout
    kept = live & ((d - w / (1 - p)).abs() <= 1e-4 + 1e-3 * (w / (1 - p)).abs())
    zeroed = live & (d.abs() <= 1e-6)
    odd = live & ~kept & ~zeroed
    if bool(odd.any()):
        index = tuple(int(i) for i in torch.nonzero(odd)[0])
        raise CheckError(
            tr(
                "{what}: with dropout p={p} in training every weight should be 0 or its value "
                "divided by 1 - p = {keep}; at {index} the weight {weight:.6g} became "
                "{dropped:.6g} (ratio {ratio:.4g}, expected 0 or {scale:.4g}). Is dropout "
                "applied once, to the weights?"
            ).format(
                what=what,
                p=p,
                keep=1 - p,
                index=shape_str(index),
                weight=w[index].item(),
                dropped=d[index].item(),
                ratio=d[index].item() / w[index].item(),
                scale=1 / (1 - p),
            )
        )
    n = int(live.sum())
    fraction = int(zeroed.sum()) / max(n, 1)
    spread = 4 * math.sqrt(p * (1 - p) / max(n, 1))  # four standard deviations
    if abs(fraction - p) > spread:
        raise CheckError(
            tr(
                "{what}: with dropout p={p} in training, {fraction:.3f} of {n} weights were "
                "zeroed, expected about {p} (±{spread:.3f}). Is dropout applied once, to the "
                "weights, and only in training?"
            ).format(what=what, p=p, fraction=fraction, n=n, spread=spread)
        )


@contextlib.contextmanager
def largest_intermediate():
    """Record the largest tensor any PyTorch call returns inside the block: ``(numel, shape)``."""
    watch = _SizeWatch()
    with watch:
        yield watch


def seeded(seed: int):
    """Fork the global RNG and seed it, so that dropout draws are reproducible and private."""
    stack = contextlib.ExitStack()
    stack.enter_context(torch.random.fork_rng(devices=[]))
    torch.manual_seed(seed)
    return stack


def expect_gradient_values(f, inputs: dict, what: str, *, seed: int = 0, eps: float = 1e-6):
    """The gradient autograd gives must be the derivative, by finite differences in float64.

    The idea of ``torch.autograd.gradcheck``'s fast mode, written out: for L(x) = Σ f(x) ⊙ R
    with a random R, compare Σ_i ⟨∂L/∂x_i, u_i⟩ from autograd with the central difference
    (L(x + εu) - L(x - εu)) / 2ε along a random direction u: three calls of the code under
    test. ``tests/test_checks_contract.py`` proves that it gives the verdict of gradcheck's full
    Jacobian (its slow mode: two calls per input entry); gradcheck's fast mode, whose
    tolerance scales with the directions, passes a sine computed in float32, this does not.
    A value computed under ``torch.no_grad()``, detached somewhere inside (but not
    everywhere), or computed in float32 and cast back (the finite difference is then mostly
    rounding) fails.

    Args:
        f: ``f(**inputs)`` returns the output tensor.
        inputs: float64 tensors by name.
    """
    gen = torch.Generator().manual_seed(seed)
    leaves = {n: t.detach().clone().requires_grad_() for n, t in inputs.items()}
    out = f(**leaves)
    R = torch.randn(out.shape, generator=gen, dtype=torch.float64).to(out.device)
    grads = torch.autograd.grad((out * R).sum(), list(leaves.values()), allow_unused=True)
    dirs = {
        n: torch.randn(t.shape, generator=gen, dtype=torch.float64).to(t.device)
        for n, t in inputs.items()
    }
    analytic = sum(float((g * dirs[n]).sum()) for n, g in zip(leaves, grads) if g is not None)
    with torch.no_grad():
        plus = f(**{n: t.detach() + eps * dirs[n] for n, t in inputs.items()})
        minus = f(**{n: t.detach() - eps * dirs[n] for n, t in inputs.items()})
        numeric = float(((plus - minus) * R).sum()) / (2 * eps)
    if abs(analytic - numeric) > 1e-5 + 1e-4 * abs(numeric):
        raise CheckError(
            tr(
                "{what}: the gradient is not the derivative of the output. Along a random "
                "direction autograd gives {analytic:.8g}, the finite difference {numeric:.8g}. "
                "Is part of the computation detached, under torch.no_grad(), or done in float32?"
            ).format(what=what, analytic=analytic, numeric=numeric)
        )
