"""Visible checks of chapter 4's score exercises, and the helpers every scoring chapter's checks share."""

import torch

from checks._contract import (
    FLOAT64,
    expect_dropout_pattern,
    expect_gradient_values,
    expect_gradients,
    float64_device,
    invoke,
    module_tensors,
    on_meta,
    seeded,
)
from checks._core import check, random_lengths, random_tensor
from checks._errors import CheckError
from checks._expect import expect_close, expect_tensor, shape_str
from checks._i18n import tr
from checks._quiz import declare


def build(cls, *args, seed=0, device="cpu", **kwargs):
    """Construct an attention module with reproducible weights, without touching the global RNG."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        module = cls(*args, **kwargs)
    return module.to(device).eval()


def describe_lengths(valid_lens) -> str:
    """valid_lens as a list if it is short, else by its shape."""
    if valid_lens is None:
        return "None"
    if valid_lens.numel() <= 8 and valid_lens.device.type != "meta":
        return str(valid_lens.tolist())
    return tr("of shape {valid_lens_shape}").format(valid_lens_shape=shape_str(valid_lens.shape))


def describe_forward(queries, keys, values, valid_lens) -> str:
    """How a check names the call of an attention module's forward, in the checks' language."""
    return tr(
        "the forward on queries {queries_shape}, keys {keys_shape}, values {values_shape}, "
        "valid_lens {lens}"
    ).format(
        queries_shape=shape_str(queries.shape),
        keys_shape=shape_str(keys.shape),
        values_shape=shape_str(values.shape),
        lens=describe_lengths(valid_lens),
    )


def attend(module, queries, keys, values, valid_lens=None):
    """Call the module; check it returns (B, m, v) and keeps (B, m, n) weights.

    If the forward raises, the message names the shapes it was called with; if it
    stored attention_weights of the wrong shape before it raised, it says that first.
    """
    B, m, n, v = queries.shape[0], queries.shape[1], keys.shape[1], values.shape[-1]
    what = describe_forward(queries, keys, values, valid_lens)
    before = getattr(module, "attention_weights", None)
    try:
        out = invoke(
            module, queries, keys, values, valid_lens, what=what, names=QKV, under=type(module)
        )
    except CheckError as crash:
        weights = getattr(module, "attention_weights", None)
        if (
            weights is not before
            and isinstance(weights, torch.Tensor)
            and tuple(weights.shape) != (B, m, n)
        ):
            raise CheckError(
                tr(
                    "attention_weights has shape {shape}, expected {expected} = (B, m, n), "
                    "a row per query and a column per key; then {crash}"
                ).format(shape=shape_str(weights.shape), expected=shape_str((B, m, n)), crash=crash)
            ) from crash
        raise
    expect_tensor(
        out, tr("the output"), shape=(B, m, v), dtype=queries.dtype, device=queries.device
    )
    weights = getattr(module, "attention_weights", None)
    if weights is None:
        raise CheckError(tr("forward must store the weights in self.attention_weights"))
    expect_tensor(
        weights, "attention_weights", shape=(B, m, n), dtype=queries.dtype, device=queries.device
    )
    return out, weights


QKV = ("queries", "keys", "values", "valid_lens")


def module_contract(make, device, *, seed, B, m, n, dq, dk, dv=3, reference=None):
    """The properties every attention module has, whatever its score (float64, gradients, device).

    - float64 in, float64 out (weights too), equal to ``reference`` (float64 weights and
      output from the module's parameters) or else to the module's own float32 result;
    - a gradient reaches every parameter and the queries, keys and values;
    - on another device (``meta``) nothing is made on the CPU.
    Every call also checks that the inputs are left unchanged (:func:`attend`).

    Args:
        make: ``make(device)`` returns the module (eval mode, dropout 0) on ``device``.
        reference: ``reference(module, q, k, v, valid_lens)`` returns float64 (weights, output).
    """
    dev64 = float64_device(device)
    q = random_tensor(B, m, dq, seed=seed, device=device)
    k = random_tensor(B, n, dk, seed=seed + 1, device=device)
    v = random_tensor(B, n, dv, seed=seed + 2, device=device)
    lens = random_lengths(B, low=1, high=n, seed=seed, device=device)
    shapes = tr("B={B}, m={m}, n={n}, queries of size {dq}, keys {dk}, values {dv}").format(
        B=B, m=m, n=n, dq=dq, dk=dk, dv=dv
    )
    module = make(device)
    out32, w32 = attend(module, q, k, v, lens)
    module64 = make(dev64).double()
    q64, k64, v64, lens64 = (t.to(dev64) for t in (q.double(), k.double(), v.double(), lens))
    out64, w64 = attend(module64, q64, k64, v64, lens64)
    if reference is not None:
        ref_w, ref_out = reference(module64, q64, k64, v64, lens64)
        ref_w, ref_out = ref_w.to(dev64), ref_out.to(dev64)
    else:
        ref_w, ref_out = w32.detach().to(dev64).double(), out32.detach().to(dev64).double()
    tol = FLOAT64 if reference is not None else dict(atol=1e-4, rtol=1e-3)
    expect_close(
        w64, ref_w, tr("float64 attention_weights ({shapes})").format(shapes=shapes), **tol
    )
    expect_close(out64, ref_out, tr("the float64 output ({shapes})").format(shapes=shapes), **tol)
    # gradients
    module = make(device)
    q, k, v = (t.clone() for t in (q, k, v))
    named = module_tensors(module, queries=q, keys=k, values=v)
    out, _ = attend(module, q, k, v, lens)
    expect_gradients(out, named, tr("the forward ({shapes})").format(shapes=shapes), seed=seed)
    expect_gradient_values(
        lambda queries, keys, values: attend(module64, queries, keys, values, lens64)[0],
        {"queries": q64, "keys": k64, "values": v64},
        tr("the forward ({shapes})").format(shapes=shapes),
        seed=seed,
    )
    # the device of tensors made inside
    meta = make("meta")
    qm, km, vm, lm = (t.detach().to("meta") for t in (q, k, v, lens))
    on_meta(
        lambda: attend(meta, qm, km, vm, lm),
        tr("the forward on the meta device ({shapes})").format(shapes=shapes),
    )


def dropout_contract(make, device, *, seed, B=4, m=6, n=8, dq=4, dk=4, p=0.5):
    """In training, dropout(p) zeroes a fraction ≈ p of the weights and divides the rest by 1 - p.

    The values are the identity, so the output *is* the dropped weights. In eval mode the
    output is the weights themselves. ``attention_weights`` holds the weights before dropout.
    """
    module = make(device, p)
    q = random_tensor(B, m, dq, seed=seed, device=device)
    k = random_tensor(B, n, dk, seed=seed + 1, device=device)
    v = torch.eye(n, device=device).expand(B, n, n).contiguous()
    lens = random_lengths(B, low=2, high=n, seed=seed, device=device)
    what = tr(
        "(p={p}, B={B}, m={m}, n={n}, values = identity so that the output is the weights)"
    ).format(p=p, B=B, m=m, n=n)
    out, weights = attend(module.eval(), q, k, v, lens)
    expect_close(
        out, weights, tr("the output in eval mode {what}: dropout must be off").format(what=what)
    )
    with seeded(seed):
        out, weights = attend(module.train(), q, k, v, lens)
    module.eval()
    expect_dropout_pattern(out, weights, p, tr("the output in train mode {what}").format(what=what))


def identical_keys_example(device):
    """d2l's toy example: every key is the same, so any scoring function gives uniform weights."""
    gen = torch.Generator().manual_seed(0)
    queries = torch.randn(2, 1, 20, generator=gen).to(device)
    keys = torch.ones(2, 10, 2, device=device)
    values = torch.arange(40, dtype=torch.float32, device=device).reshape(1, 10, 4).repeat(2, 1, 1)
    valid_lens = torch.tensor([2, 6], device=device)
    expected = torch.stack([values[0, :2].mean(0), values[1, :6].mean(0)])[:, None, :]
    return queries, keys, values, valid_lens, expected


@check("sum_scores")
def sum_scores_small_example(sum_scores, device):
    """Is score(q, k) = wᵀq + wᵀk, with shape (B, m, n)?"""
    queries = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]], device=device)
    keys = torch.tensor([[[1.0, 1.0], [2.0, 0.0], [0.0, 3.0]]], device=device)
    w = torch.tensor([1.0, 2.0], device=device)
    expected = torch.tensor([[[1 + 3.0, 1 + 2, 1 + 6], [2 + 3.0, 2 + 2, 2 + 6]]], device=device)
    scores = call_scores(sum_scores, queries, keys, w)
    expect_close(scores, expected, "sum_scores", labels=("batch", "query"))


@check("vector_sum_answer")
def answered(answer, device):
    """Is your answer True or False?"""
    value = answer()
    if not isinstance(value, bool):
        raise CheckError(
            tr("set same_weights_for_every_query to True or False, not {value!r}").format(
                value=value
            )
        )


# A graded finding: its self-check says right or wrong (self-study) or "recorded" (graded).
declare("vector_sum_answer", "same_weights_for_every_query")


@check("distance_scores")
def distance_small_example(distance_scores, device):
    """Is score(q, k) = -‖q - k‖² / 2, with shape (B, m, n)?"""
    queries = torch.tensor([[[0.0, 0.0], [1.0, 1.0]]], device=device)
    keys = torch.tensor([[[0.0, 0.0], [3.0, 4.0], [1.0, 0.0]]], device=device)
    expected = torch.tensor([[[0.0, -12.5, -0.5], [-1.0, -6.5, -0.5]]], device=device)
    scores = call_scores(distance_scores, queries, keys)
    expect_close(scores, expected, "distance_scores", labels=("batch", "query"))


def call_scores(fn, q, k, w=None):
    """Call sum_scores(q, k, w) or distance_scores(q, k); check (B, m, n) in q's dtype and device."""
    args = (q, k) if w is None else (q, k, w)
    name = "distance_scores" if w is None else "sum_scores"
    what = tr("{name} on queries {q_shape}, keys {k_shape}, {dtype}").format(
        name=name, q_shape=shape_str(q.shape), k_shape=shape_str(k.shape), dtype=q.dtype
    )
    out = invoke(fn, *args, what=what, names=("queries", "keys", "w"))
    shape = (q.shape[0], q.shape[1], k.shape[1])
    expect_tensor(out, f"{name}(queries, keys)", shape=shape, dtype=q.dtype, device=q.device)
    return out


def scores_contract(fn, device, *, seed, B, m, n, d, with_w, reference=None):
    """float64 in, float64 out; gradients reach queries, keys (and w); nothing made on the CPU.

    Args:
        reference: ``reference(q, k, w)`` gives the float64 scores, or None to compare
            float64 with the function's own float32 result.
    """
    dev64 = float64_device(device)
    q = random_tensor(B, m, d, seed=seed, device=device)
    k = random_tensor(B, n, d, seed=seed + 1, device=device)
    w = random_tensor(d, seed=seed + 2, device=device) if with_w else None
    shapes = f"B={B}, m={m}, n={n}, d={d}"
    out32 = call_scores(fn, q, k, w)
    as64 = [None if t is None else t.to(dev64, torch.float64) for t in (q, k, w)]
    out64 = call_scores(fn, *as64)
    if reference is not None:
        expect_close(
            out64,
            reference(*as64).to(dev64),
            tr("float64 scores ({shapes})").format(shapes=shapes),
            **FLOAT64,
        )
    else:
        ref = out32.detach().to(dev64, torch.float64)
        expect_close(
            out64, ref, tr("float64 scores ({shapes})").format(shapes=shapes), atol=1e-4, rtol=1e-3
        )
    leaves = [None if t is None else t.clone().requires_grad_() for t in (q, k, w)]
    named = dict(zip(("queries", "keys", "w"), leaves))
    out = call_scores(fn, *leaves)
    expect_gradients(out, {n: t for n, t in named.items() if t is not None}, shapes, seed=seed)
    inputs = {n: t.detach().to(dev64, torch.float64) for n, t in named.items() if t is not None}
    expect_gradient_values(
        lambda queries, keys, w=None: call_scores(fn, queries, keys, w), inputs, shapes, seed=seed
    )
    metas = [None if t is None else t.detach().to("meta") for t in (q, k, w)]
    on_meta(
        lambda: call_scores(fn, *metas),
        tr("scores on the meta device ({shapes})").format(shapes=shapes),
    )


# ----------------------------------------------------------------- every module and function
# Visible samples of the properties the hidden checks test more widely: float64, gradients,
# inputs left unchanged, no tensor made on the CPU, dropout with 0 < p < 1.


@check("sum_scores")
def sum_scores_contract(sum_scores, device):
    """float64 in and out, gradients to queries, keys and w, inputs unchanged, no tensor made on the CPU?"""
    scores_contract(sum_scores, device, seed=17, B=2, m=3, n=4, d=2, with_w=True)


@check("distance_scores")
def distance_contract(distance_scores, device):
    """float64 in and out, gradients to queries and keys, inputs unchanged, no tensor made on the CPU?"""
    scores_contract(distance_scores, device, seed=18, B=2, m=3, n=4, d=2, with_w=False)
