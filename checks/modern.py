"""Visible checks for the chapter "Attention today".

References: the sliding-window mask and the rotation formula written out with explicit loops,
the relative-position property of RoPE, grouped-query attention head by head with
``F.scaled_dot_product_attention``, and ``nn.MultiheadAttention`` for as many groups as heads.

Why one module: it mirrors one chapter notebook, with its three graded targets
(``sliding_window_mask``, ``apply_rope`` and the grouped-query attention module), each with
a loop reference and a diagnosis of the classic mistakes, and its three questions; one
module per chapter is how ``checks/`` is laid out, and checks/hidden/modern.py imports the
wrappers and contracts from here.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

from checks._contract import (
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
from checks._errors import CheckError, CrashInCodeUnderTest
from checks._expect import expect_choice, expect_close, expect_number, expect_tensor, shape_str
from checks._i18n import N_, tr
from checks.scoring import build, describe_lengths

# --------------------------------------------------------------------------
# Exercise 13.1: sliding_window_mask
# --------------------------------------------------------------------------


def window_loop(m, n, w):
    """The (m, n) mask by a double loop: query i at position n - m + i sees keys 0 <= p - j < w."""
    return torch.tensor([[0 <= (n - m + i) - j < w for j in range(n)] for i in range(m)])


def describe_device(device) -> str:
    return repr(str(device)) if device is not None else "None"


def call_mask(fn, m, n, w, device):
    """sliding_window_mask(m, n, w, device=device), checked for shape, dtype and device."""
    what = f"sliding_window_mask({m}, {n}, {w}, device={describe_device(device)})"
    out = invoke(fn, m, n, w, device=device, what=what)
    expect_tensor(out, what, shape=(m, n), device=device)
    if out.dtype != torch.bool:
        raise CheckError(
            tr(
                "{what} has dtype {dtype}, expected torch.bool: a mask whose True means 'may "
                "attend', as F.scaled_dot_product_attention takes it"
            ).format(what=what, dtype=out.dtype)
        )
    return out


def expect_mask(fn, m, n, w, device):
    """The mask of the student's function equals the double loop's, row by row."""
    expected = window_loop(m, n, w)
    out = call_mask(fn, m, n, w, device)
    got = out.cpu()
    if torch.equal(got, expected):
        return
    i = int(torch.nonzero((got != expected).any(-1))[0])
    seen = lambda row: torch.nonzero(row).flatten().tolist()  # noqa: E731
    if w > 1:
        window = tr("the {w} positions ending at its own").format(w=w)
    else:
        window = tr("the {w} position ending at its own").format(w=w)
    if m < n:
        window += tr("; the queries are the last positions of the keys")
    raise CheckError(
        tr(
            "sliding_window_mask({m}, {n}, {w}): query {i}, at position {position}, may attend "
            "to keys {got}, expected {expected} ({window})"
        ).format(
            m=m,
            n=n,
            w=w,
            i=i,
            position=n - m + i,
            got=seen(got[i]),
            expected=seen(expected[i]),
            window=window,
        )
    )


def raised(call):
    """Run ``call()``; return (type name, message) of what it raised, or None if nothing.

    The code under test may run in another process (checks._remote), where its exception
    becomes a CrashInCodeUnderTest that carries the type's name. A NotImplementedError (an
    exercise not done yet) passes through.
    """
    try:
        call()
    except NotImplementedError:
        raise
    except CheckError:
        raise
    except CrashInCodeUnderTest as err:
        return err.type_name, err.message
    except Exception as err:
        return type(err).__name__, str(err)
    return None


def expect_value_error(fn, args, names, what):
    """fn(*args) must raise ValueError with a message that names each of ``names``."""
    got = raised(lambda: fn(*args))
    if got is None:
        raise CheckError(
            tr("{what} returned a mask; expected a ValueError that says what is wrong").format(
                what=what
            )
        )
    kind, message = got
    if kind != "ValueError":
        said = tr(": {message}").format(message=message) if message else tr(" (without a message)")
        raise CheckError(
            tr("{what} raised {kind}{said}; expected a ValueError").format(
                what=what, kind=kind, said=said
            )
        )
    missing = [name for name in names if name not in message]
    if missing:
        raise CheckError(
            tr(
                "{what} raised ValueError({message!r}), which does not name {missing}: say "
                "which argument is wrong and its value"
            ).format(
                what=what,
                message=message,
                missing=tr(" and ").join(repr(n) for n in missing),
            )
        )


def mask_errors(fn, cases):
    """Each (args, names) must raise a ValueError naming the argument and its value."""
    for args, names in cases:
        what = f"sliding_window_mask({', '.join(map(str, args))})"
        expect_value_error(fn, args, names, what)


def mask_on_meta(fn, m, n, w):
    """The mask is made where device= says: on meta, with no tensor made on the CPU."""
    meta = torch.device("meta")
    on_meta(lambda: call_mask(fn, m, n, w, meta), f"sliding_window_mask({m}, {n}, {w}, 'meta')")


@check("sliding_window_mask")
def window_small(sliding_window_mask, device):
    """For 5 queries over 5 keys and a window of 3, does query t see keys t-2, t-1 and t only?"""
    expected = torch.tensor(
        [
            [1, 0, 0, 0, 0],
            [1, 1, 0, 0, 0],
            [1, 1, 1, 0, 0],
            [0, 1, 1, 1, 0],
            [0, 0, 1, 1, 1],
        ],
        dtype=torch.bool,
    )
    assert torch.equal(window_loop(5, 5, 3), expected)  # the loop is the text's matrix
    expect_mask(sliding_window_mask, 5, 5, 3, device)


@check("sliding_window_mask")
def window_last_queries_and_causal(sliding_window_mask, device):
    """Are fewer queries the last positions (1 query over 6 keys, window 3: keys 3, 4, 5), and does a window of n or more give the causal mask?"""
    expect_mask(sliding_window_mask, 1, 6, 3, device)
    expect_mask(sliding_window_mask, 2, 6, 3, device)
    for w in (6, 9):
        out = call_mask(sliding_window_mask, 6, 6, w, device).cpu()
        causal = torch.ones(6, 6, dtype=torch.bool).tril()
        if not torch.equal(out, causal):
            raise CheckError(
                tr(
                    "sliding_window_mask(6, 6, {w}) is not the causal mask torch.ones(6, 6)"
                    ".tril(): a window of n or more lets query t see every key up to t\n"
                    "      got {got}"
                ).format(w=w, got=out.int().tolist())
            )


@check("sliding_window_mask")
def window_errors_and_device(sliding_window_mask, device):
    """Do window=0 and 5 queries over 3 keys raise a ValueError naming the value, and is the mask made on the device asked for (meta)?"""
    mask_errors(sliding_window_mask, [((4, 4, 0), ["window", "0"]), ((5, 3, 2), ["5", "3"])])
    mask_on_meta(sliding_window_mask, 3, 5, 2)


# --------------------------------------------------------------------------
# Exercise 13.2: apply_rope
# --------------------------------------------------------------------------


def rope_loop(X, offset=0, base=10000.0, pairs="adjacent", sign=1.0, start=0, two=2):
    """RoPE written out pair by pair in float64 on the CPU: the formula of the text.

    The other arguments give the classic mistakes, for diagnoses only: ``pairs="halves"``
    pairs feature i with i + d/2, ``sign=-1`` turns the other way, ``start=1`` counts
    positions from 1, ``two=1`` forgets the 2 in θ_i = base^(-2i/d).
    """
    x = X.detach().to("cpu", torch.float64)
    T, d = x.shape[-2], x.shape[-1]
    out = torch.empty_like(x)
    for t in range(T):
        p = offset + start + t
        for i in range(d // 2):
            angle = p * base ** (-two * i / d)
            c, s = math.cos(angle), sign * math.sin(angle)
            a, b = (2 * i, 2 * i + 1) if pairs == "adjacent" else (i, i + d // 2)
            out[..., t, a] = x[..., t, a] * c - x[..., t, b] * s
            out[..., t, b] = x[..., t, a] * s + x[..., t, b] * c
    return out


# The classic mistakes, and what the check says of each (translated where it is said).
MISTAKES = [
    (
        dict(pairs="halves"),
        N_(
            "it pairs feature i with feature i + d/2 (the layout of the Hugging Face port of "
            "LLaMA); this exercise turns the neighbours (2i, 2i + 1)"
        ),
    ),
    (dict(sign=-1.0), N_("it turns the pairs the other way: R(p·θ) has -sin in its first row")),
    (
        dict(start=1),
        N_("it counts positions from 1: the vector at index t is at position offset + t"),
    ),
    (dict(two=1), N_("its frequencies are base^(-i/d): θ_i = base^(-2i/d)")),
]


def rope_diagnosis(out, X, offset, base) -> str:
    """Which classic mistake the output matches, in words, or ''.

    A mistake counts only where it changes the result (for d = 2 the two layouts agree).
    """
    got = out.detach().to("cpu", torch.float64)
    right = rope_loop(X, offset, base)
    close = lambda a, b, tol=1e-3: torch.allclose(a, b, atol=tol, rtol=tol)  # noqa: E731
    if X.dtype == torch.float64 and close(got, right, 1e-4):
        return "\n      " + tr(
            "(the output is right to float32's precision only: for float64 input, "
            "compute the angles in float64)"
        )
    candidates = [(rope_loop(X, offset, base, **kwargs), words) for kwargs, words in MISTAKES]
    for expected, words in candidates:
        if not close(expected, right) and close(got, expected):
            return "\n      " + tr("(the output is what RoPE gives when {words})").format(
                words=tr(words)
            )
    if offset and close(got, rope_loop(X, 0, base)) and not close(right, rope_loop(X, 0, base)):
        return "\n      " + tr(
            "(the output is RoPE at offset 0: offset={offset} was not used)"
        ).format(offset=offset)
    if X.dtype in (torch.float16, torch.bfloat16):
        bits = 10 if X.dtype == torch.float16 else 7  # of the significand
        return "\n      " + tr(
            "(in {dtype} an angle near {offset} is rounded to a multiple of {step:g}"
            " radian: compute the angles in float32 and cast the result back)"
        ).format(
            dtype=X.dtype, offset=offset, step=2.0 ** (math.floor(math.log2(max(offset, 1))) - bits)
        )
    return ""


def call_rope(fn, X, offset=None, base=None):
    """apply_rope(X, offset=..., base=...) with X left unchanged; same shape, dtype, device."""
    kwargs = {}
    if offset is not None:
        kwargs["offset"] = offset
    if base is not None:
        kwargs["base"] = base
    args = "".join(f", {k}={v}" for k, v in kwargs.items())
    what = tr("apply_rope(X of shape {X_shape} and dtype {dtype}{args})").format(
        X_shape=shape_str(X.shape), dtype=X.dtype, args=args
    )
    out = invoke(fn, X, what=what, names=("X",), **kwargs)
    expect_tensor(out, what, shape=X.shape, dtype=X.dtype, device=X.device)
    return out


def expect_rope(fn, X, offset=0, base=10000.0, *, atol, rtol, default_args=False):
    """apply_rope matches the loop; on failure, say which classic mistake it matches."""
    expected = rope_loop(X, offset, base).to(X.device, X.dtype)  # before fn sees X
    if default_args:
        out = call_rope(fn, X)
    else:
        out = call_rope(fn, X, offset=offset, base=base)
    try:
        expect_close(
            out,
            expected,
            tr(
                "apply_rope(X of shape {X_shape}, offset={offset}, base={base:g}) in {dtype}"
            ).format(X_shape=shape_str(X.shape), offset=offset, base=base, dtype=X.dtype),
            atol=atol,
            rtol=rtol,
        )
    except CheckError as err:
        raise CheckError(f"{err}{rope_diagnosis(out, X, offset, base)}") from None
    return out


def expect_relative(fn, device, *, d, shifts, seed):
    """rope(q, m)·rope(k, n) depends only on m - n: shift both positions, the score stays."""
    q = random_tensor(1, d, seed=seed, device=device, dtype=torch.float64)
    k = random_tensor(1, d, seed=seed + 1, device=device, dtype=torch.float64)

    def score(m, n):
        return (call_rope(fn, q, offset=m) * call_rope(fn, k, offset=n)).sum().item()

    for m, n in [(3, 1), (0, 5), (7, 7)]:
        base_score = score(m, n)
        for s in shifts:
            shifted = score(m + s, n + s)
            if abs(shifted - base_score) > 1e-8 * max(1.0, abs(base_score)) * (1 + s / 100):
                raise CheckError(
                    tr(
                        "the score of a query at position {m} and a key at position {n} is "
                        "{base_score:.10g}, but with both shifted by {s}, to {m_s} and {n_s}, "
                        "it is {shifted:.10g}: with RoPE it must depend only on m - n = {gap}"
                    ).format(
                        m=m,
                        n=n,
                        base_score=base_score,
                        s=s,
                        m_s=m + s,
                        n_s=n + s,
                        shifted=shifted,
                        gap=m - n,
                    )
                )


def expect_position_zero(fn, device):
    """The vector at position 0 turns by angle 0: it stays as it is."""
    X = random_tensor(2, 3, 8, seed=11, device=device)
    out = call_rope(fn, X, offset=0)
    expect_close(
        out[:, 0],
        X[:, 0],
        tr("apply_rope(X, offset=0) at position 0 (an angle of 0: the vector must not change)"),
        labels=("batch",),
    )


def rope_contract(fn, device, *, shape, offset, seed):
    """float64 kept to 1e-10 at a large offset, float16 kept, gradients by finite differences,
    X unchanged, nothing made on the CPU."""
    dev64 = float64_device(device)
    X = random_tensor(*shape, seed=seed, device=dev64, dtype=torch.float64)
    expect_rope(fn, X, offset, atol=1e-10, rtol=1e-9)
    half = random_tensor(2, 4, 32, seed=seed + 1, device=device, dtype=torch.float16)
    expect_rope(fn, half, 500, atol=1e-2, rtol=1e-2)  # float16 angles are off by up to 0.1
    expect_gradient_values(
        lambda X: call_rope(fn, X, offset=offset),
        {"X": X},
        tr("apply_rope(X of shape {shape}, offset={offset}) in float64").format(
            shape=shape_str(shape), offset=offset
        ),
        seed=seed,
    )
    Xm = torch.zeros(*shape, device="meta")
    on_meta(
        lambda: call_rope(fn, Xm, offset=offset),
        tr("apply_rope(X of shape {shape}) on the meta device").format(shape=shape_str(shape)),
    )


@check("apply_rope")
def rope_small(apply_rope, device):
    """For X of shape (1, 3, 4) at offsets 0 and 2, is each pair (2i, 2i+1) turned by p·θ_i, θ_i = 10000^(-2i/d)?"""
    X = torch.arange(1.0, 13.0, device=device).reshape(1, 3, 4)
    expect_rope(apply_rope, X, 0, atol=1e-5, rtol=1e-4, default_args=True)
    expect_rope(apply_rope, X, 2, atol=1e-5, rtol=1e-4)


@check("apply_rope")
def rope_relative(apply_rope, device):
    """Does position 0 leave its vector unchanged, and is q·k unchanged when both positions are shifted by the same amount?"""
    expect_position_zero(apply_rope, device)
    expect_relative(apply_rope, device, d=8, shifts=[1, 10, 100], seed=3)


@check("apply_rope")
def rope_properties(apply_rope, device):
    """float64 kept (to 1e-10 at offset 1000), float16 kept, gradients equal the derivative (finite differences), X unchanged, no tensor made on the CPU?"""
    rope_contract(apply_rope, device, shape=(2, 3, 6), offset=1000, seed=5)


# --------------------------------------------------------------------------
# Exercise 13.3: GroupedQueryAttention
# --------------------------------------------------------------------------

PROJECTIONS = ("W_q", "W_k", "W_v", "W_o")


def weights_of(module):
    """{name: (weight, bias)} of the four projections, read from the module's parameters."""
    out = {}
    for name in PROJECTIONS:
        layer = getattr(module, name)
        out[name] = (layer.weight, getattr(layer, "bias", None))
    return out


def attend_mask(valid_lens, B, m, n, device):
    """(B, m, n) boolean mask, True = attend, from (B,) or (B, m) valid lengths; or None."""
    if valid_lens is None:
        return None
    lens = valid_lens if valid_lens.dim() == 2 else valid_lens[:, None].expand(B, m)
    return torch.arange(n, device=device) < lens[..., None].to(device)


def gqa_loop(module, queries, keys, values, valid_lens, group_of=None, tiled_lengths=False):
    """Grouped-query attention head by head, with SDPA: head i reads group i // (h/g).

    For diagnoses only: ``group_of(i, h, g)`` pairs heads and groups otherwise, and
    ``tiled_lengths`` gives head i of example b the lengths of example (b·h + i) mod B, as
    ``valid_lens.repeat(h)`` does.
    """
    h, g = module.num_heads, module.num_groups
    group_of = group_of or (lambda i, h, g: i // (h // g))
    W = weights_of(module)
    with torch.no_grad():
        q, k, v = (
            F.linear(t, *W[n]) for t, n in ((queries, "W_q"), (keys, "W_k"), (values, "W_v"))
        )
        B, m, d = q.shape
        n, size = k.shape[1], d // h
        heads = []
        for i in range(h):
            lens = valid_lens
            if tiled_lengths and valid_lens is not None:
                lens = valid_lens[[(b * h + i) % B for b in range(B)]]
            mask = attend_mask(lens, B, m, n, q.device)
            j = group_of(i, h, g)
            qi = q[..., i * size : (i + 1) * size]
            kj, vj = (t[..., j * size : (j + 1) * size] for t in (k, v))
            heads.append(F.scaled_dot_product_attention(qi, kj, vj, attn_mask=mask))
        return F.linear(torch.cat(heads, dim=-1), *W["W_o"])  # (B, m, d)


def gqa(module, queries, keys, values, valid_lens=None):
    """Call the module with its inputs left unchanged; check the (B, m, d) output."""
    B, m, d = queries.shape
    what = tr(
        "the forward (h={num_heads}, g={num_groups}) on queries {queries_shape}, keys "
        "{keys_shape}, values {values_shape}, valid_lens {lens}"
    ).format(
        num_heads=module.num_heads,
        num_groups=module.num_groups,
        queries_shape=shape_str(queries.shape),
        keys_shape=shape_str(keys.shape),
        values_shape=shape_str(values.shape),
        lens=describe_lengths(valid_lens),
    )
    names = ("queries", "keys", "values", "valid_lens")
    out = invoke(
        module, queries, keys, values, valid_lens, what=what, names=names, under=type(module)
    )
    expect_tensor(
        out, tr("the output"), shape=(B, m, d), dtype=queries.dtype, device=queries.device
    )
    return out


def gqa_diagnosis(module, out, queries, keys, values, valid_lens) -> str:
    """In words, when the output is grouped-query attention with the heads paired wrongly."""
    h, g = module.num_heads, module.num_groups
    got = out.detach()
    close = lambda expected: torch.allclose(got, expected, atol=1e-4, rtol=1e-3)  # noqa: E731
    if g not in (1, h) and close(
        gqa_loop(module, queries, keys, values, valid_lens, lambda i, h, g: i % g)
    ):
        return "\n      " + tr(
            "(the output is what query head i gives with key-value head i % g, for "
            "g={g}: the heads are paired in the wrong order; head i must read group "
            "i // (h/g), the {size} consecutive heads of a group the same key head)"
        ).format(g=g, size=h // g)
    B = queries.shape[0]
    if (
        valid_lens is not None
        and B > 1
        and close(gqa_loop(module, queries, keys, values, valid_lens, tiled_lengths=True))
    ):
        return "\n      " + tr(
            "(the output is what each head gives with the valid length of another "
            "example, as valid_lens.repeat(h) gives them: head i of example b is entry b·h + i)"
        )
    return ""


def expect_gqa(module, queries, keys, values, valid_lens, expected, name, **tol):
    """The output equals ``expected`` (computed before the call); on failure, a diagnosis."""
    out = gqa(module, queries, keys, values, valid_lens)
    try:
        expect_close(out, expected, name, labels=("batch", "query"), **tol)
    except CheckError as err:
        where = gqa_diagnosis(module, out, queries, keys, values, valid_lens)
        raise CheckError(f"{err}{where}") from None
    return out


def gqa_inputs(B, m, n, d, seed, device, dtype=torch.float32):
    q = random_tensor(B, m, d, seed=seed, device=device, dtype=dtype)
    k = random_tensor(B, n, d, seed=seed + 1, device=device, dtype=dtype)
    v = random_tensor(B, n, d, seed=seed + 2, device=device, dtype=dtype)
    return q, k, v


def torch_mha_reference(module, queries, keys, values, valid_lens):
    """nn.MultiheadAttention holding the module's weights (g = h), True = masked."""
    d, h = module.W_q.in_features, module.num_heads
    W = weights_of(module)
    bias = W["W_q"][1] is not None
    ref = nn.MultiheadAttention(d, h, bias=bias, batch_first=True).to(queries.device).eval()
    ref = ref.to(queries.dtype)
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([W[n][0] for n in ("W_q", "W_k", "W_v")]))
        ref.out_proj.weight.copy_(W["W_o"][0])
        if bias:
            ref.in_proj_bias.copy_(torch.cat([W[n][1] for n in ("W_q", "W_k", "W_v")]))
            ref.out_proj.bias.copy_(W["W_o"][1])
        B, m, n = queries.shape[0], queries.shape[1], keys.shape[1]
        mask = attend_mask(valid_lens, B, m, n, queries.device)
        mask = None if mask is None else (~mask).repeat_interleave(h, dim=0)  # (B*h, m, n)
        return ref(queries, keys, values, attn_mask=mask)[0]


def gqa_contract(GroupedQueryAttention, device, *, seed, d, h, g, B, m, n, bias):
    """float64 in and out, equal to the loop in float64; gradients reach every projection and
    input and equal the derivative; inputs unchanged; nothing made on the CPU."""
    dev64 = float64_device(device)
    shapes = f"d={d}, h={h}, g={g}, B={B}, m={m}, n={n}, bias={bias}"
    module64 = build(GroupedQueryAttention, d, h, g, 0.0, bias=bias, seed=seed, device=dev64)
    module64 = module64.double()
    q, k, v = gqa_inputs(B, m, n, d, seed, dev64, torch.float64)
    lens = random_lengths(B, low=1, high=n, seed=seed, device=dev64)
    expected = gqa_loop(module64, q, k, v, lens)
    expect_gqa(
        module64,
        q,
        k,
        v,
        lens,
        expected,
        tr("the float64 output ({shapes})").format(shapes=shapes),
        atol=1e-10,
        rtol=1e-9,
    )
    module = build(GroupedQueryAttention, d, h, g, 0.0, bias=bias, seed=seed, device=device)
    q, k, v = gqa_inputs(B, m, n, d, seed, device)
    named = module_tensors(module, queries=q, keys=k, values=v)
    lens = lens.to(device)
    expect_gradients(
        gqa(module, q, k, v, lens),
        named,
        tr("the forward ({shapes})").format(shapes=shapes),
        seed=seed,
    )
    q, k, v = gqa_inputs(B, m, n, d, seed, dev64, torch.float64)
    expect_gradient_values(
        lambda queries, keys, values: gqa(module64, queries, keys, values, lens.to(dev64)),
        {"queries": q, "keys": k, "values": v},
        tr("the forward in float64 ({shapes})").format(shapes=shapes),
        seed=seed,
    )
    meta = build(GroupedQueryAttention, d, h, g, 0.0, bias=bias, seed=seed, device="meta")
    qm, km, vm = (torch.zeros(B, s, d, device="meta") for s in (m, n, n))
    lm = lens.to("meta")
    on_meta(
        lambda: gqa(meta, qm, km, vm, lm),
        tr("the forward on the meta device ({shapes})").format(shapes=shapes),
    )


def gqa_dropout_contract(GroupedQueryAttention, device, *, seed, B, m, p, h=4, g=2, n=6):
    """Dropout(p) on the weights in training, once, and none in eval.

    With d = h·n, values whose key k carries e_k in every head's features, W_v picking the
    first n features for every key-value head and W_o = I, the output of head i is its
    (dropped) weights: (B, m, h·n) -> (B, h, m, n).
    """
    d = h * n
    module = build(GroupedQueryAttention, d, h, g, p, seed=seed, device=device)
    pick = torch.zeros(g * n, d)
    for j in range(g):
        pick[j * n : (j + 1) * n, :n] = torch.eye(n)
    with torch.no_grad():
        module.W_v.weight.copy_(pick)
        module.W_o.weight.copy_(torch.eye(d))
    q = random_tensor(B, m, d, seed=seed, device=device)
    k = random_tensor(B, n, d, seed=seed + 1, device=device)
    v = torch.eye(n, device=device).repeat(1, h).expand(B, n, d).contiguous()
    lens = random_lengths(B, low=2, high=n, seed=seed, device=device)
    what = tr(
        "(p={p}, h={h}, g={g}, W_v picking the values' first {n} features and W_o = I, so that "
        "the output is every head's weights side by side)"
    ).format(p=p, h=h, g=g, n=n)
    heads = lambda out: out.reshape(B, m, h, n).transpose(1, 2)  # noqa: E731
    reference = gqa_loop(module, q, k, v, lens)  # before the code under test sees anything
    weights = heads(gqa(module.eval(), q, k, v, lens))
    expect_close(
        weights,
        heads(reference),
        tr(
            "the weights read from the output in eval mode {what} (in eval, dropout must be off)"
        ).format(what=what),
    )
    with seeded(seed):
        dropped = heads(gqa(module.train(), q, k, v, lens))
    module.eval()
    expect_dropout_pattern(
        dropped, weights, p, tr("the output in train mode {what}").format(what=what)
    )


@check("GroupedQueryAttention")
def gqa_heads_and_groups(GroupedQueryAttention, device):
    """With d = 8, 4 heads and 2 groups, does query head i read key-value head i // 2? Against SDPA head by head, keys ≠ values, valid_lens (B,) and (B, m)."""
    module = build(GroupedQueryAttention, 8, 4, 2, 0.0, device=device)
    q, k, v = gqa_inputs(2, 3, 5, 8, seed=1, device=device)
    for lens in (
        torch.tensor([5, 2], device=device),
        torch.tensor([[5, 1, 3], [2, 4, 1]], device=device),
    ):
        expected = gqa_loop(module, q, k, v, lens)
        expect_gqa(
            module,
            q,
            k,
            v,
            lens,
            expected,
            tr("the output with valid_lens {lens}").format(lens=lens.tolist()),
        )


@check("GroupedQueryAttention")
def gqa_special_cases(GroupedQueryAttention, device):
    """With as many groups as heads, is it nn.MultiheadAttention given the same weights; with one group, does every head read the one key-value head?"""
    module = build(GroupedQueryAttention, 8, 2, 2, 0.0, bias=True, seed=2, device=device)
    q, k, v = gqa_inputs(2, 4, 3, 8, seed=2, device=device)
    lens = torch.tensor([3, 2], device=device)
    expected = torch_mha_reference(module, q, k, v, lens)
    expect_gqa(
        module,
        q,
        k,
        v,
        lens,
        expected,
        tr("the output for g = h = 2 against nn.MultiheadAttention"),
    )
    module = build(GroupedQueryAttention, 12, 3, 1, 0.0, seed=3, device=device)
    q, k, v = gqa_inputs(2, 2, 4, 12, seed=3, device=device)
    expected = gqa_loop(module, q, k, v, None)
    expect_gqa(module, q, k, v, None, expected, tr("the output for h = 3 heads and g = 1 group"))


@check("GroupedQueryAttention")
def gqa_properties(GroupedQueryAttention, device):
    """float64 in and out, gradients to every projection and input (equal to the derivative), inputs unchanged, no tensor made on the CPU?"""
    gqa_contract(GroupedQueryAttention, device, seed=4, d=8, h=4, g=2, B=2, m=3, n=2, bias=True)


@check("GroupedQueryAttention")
def gqa_dropout_half(GroupedQueryAttention, device):
    """With dropout=0.5 in training, is a fraction ≈ 0.5 of the weights zeroed and the rest doubled, once, and none in eval?"""
    gqa_dropout_contract(GroupedQueryAttention, device, seed=5, B=4, m=5, p=0.5)


# --------------------------------------------------------------------------
# Check your understanding: the visible groups check only the form of an answer.
# --------------------------------------------------------------------------


@check("quiz_13_1")
def quiz_alibi_per_key_form(answer, device):
    """Is answer_13_1 one of the letters "a" to "d"?"""
    expect_choice(answer(), "abcd", "answer_13_1")


@check("quiz_13_2")
def quiz_kv_bytes_form(answer, device):
    """Is answer_13_2 a number (of bytes, not KiB)?"""
    expect_number(answer(), "answer_13_2")


@check("quiz_13_3")
def quiz_window_reach_form(answer, device):
    """Is answer_13_3 a position from 0 to 20?"""
    value = expect_number(answer(), "answer_13_3")
    if value != int(value) or not 0 <= value <= 20:
        raise CheckError(
            tr("answer_13_3 should be a position from 0 to 20, got {value:g}").format(value=value)
        )
