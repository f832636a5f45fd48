"""Visible checks for the chapter "A small language model, and how it is served".

References: a sort of each row in plain Python for ``sampling_probs``, and attention computed
query by query in float64, over the positions each query may see, for ``attend_with_cache``.
Every reference is computed from copies of the inputs made before the code under test runs.

Why one module: it mirrors one chapter notebook, with its two graded targets
(``sampling_probs`` and ``attend_with_cache``) and its three questions. Its plain-Python
references, call wrappers and contracts are also what checks/hidden/kv_cache.py imports, and
they live here because a release keeps this module and drops ``checks/hidden/``.
"""

from __future__ import annotations

import functools
import math

import torch

from checks._contract import expect_gradient_values, float64_device, invoke, on_meta
from checks._core import check, random_tensor, softmax_list
from checks._crash import calling, raised_by_code_under_test
from checks._errors import CheckError, CrashInCodeUnderTest
from checks._expect import expect_choice, expect_close, expect_number, expect_tensor, shape_str
from checks._i18n import tr
from checks._mutation import expect_unchanged

# ================================================================ Exercise 12.1: sampling_probs


def reference_probs(logits: torch.Tensor, temperature: float, top_k: int | None) -> torch.Tensor:
    """Row by row in plain Python: keep the scores at least the k-th largest, softmax of z / T."""
    V = logits.shape[-1]
    rows = logits.detach().double().cpu().reshape(-1, V).tolist()
    out = []
    for row in rows:
        k = V if top_k is None else top_k
        kth = sorted(row, reverse=True)[k - 1]
        kept = [z >= kth for z in row]
        probs = iter(softmax_list([z / temperature for z, keep in zip(row, kept) if keep]))
        out.append([next(probs) if keep else 0.0 for keep in kept])
    return torch.tensor(out, dtype=torch.float64).reshape(logits.shape)


def describe_call(logits, temperature, top_k) -> str:
    shown = (
        logits.tolist()
        if logits.device.type != "meta" and logits.numel() <= 6
        else f"<{shape_str(logits.shape)}>"
    )
    return f"sampling_probs({shown}, temperature={temperature}, top_k={top_k})"


def get_probs(sampling_probs, logits, temperature, top_k):
    """Call the code under test with logits unchanged; check a tensor of logits' shape and dtype."""
    what = describe_call(logits, temperature, top_k)
    out = invoke(
        sampling_probs,
        logits,
        temperature,
        top_k,
        what=what,
        names=("logits",),
        under=sampling_probs,
    )
    expect_tensor(out, what, shape=logits.shape, dtype=logits.dtype, device=logits.device)
    return out


def expect_probs(sampling_probs, logits, temperature, top_k, *, atol=1e-6, labels=None):
    """The output against the plain-Python reference (computed first, from a copy)."""
    expected = reference_probs(logits.clone(), temperature, top_k)
    out = get_probs(sampling_probs, logits, temperature, top_k)
    what = describe_call(logits, temperature, top_k)
    got = out.detach().double().cpu()
    expected_zero = expected == 0
    if bool((got[expected_zero] != 0).any()):
        index = tuple(int(i) for i in torch.nonzero(expected_zero & (got != 0))[0])
        raise CheckError(
            tr(
                "{what}: the token at {index} is outside the top {top_k} of its row but "
                "gets probability {p:.4g}, expected exactly 0"
            ).format(what=what, index=shape_str(index), top_k=top_k, p=got[index].item())
        )
    sums = got.sum(-1)
    if bool(((sums - 1).abs() > 1e-3 + 10 * atol).any()):
        index = tuple(int(i) for i in torch.nonzero((sums - 1).abs() > 1e-3 + 10 * atol)[0])
        where = tr("row {index}").format(index=shape_str(index)) if index else tr("the row")
        raise CheckError(
            tr(
                "{what}: {where} sums to {total:.4g}, expected 1: are the kept "
                "probabilities renormalised (a softmax over the kept scores)?"
            ).format(what=what, where=where, total=sums[index].item())
        )
    expect_close(
        out,
        expected.to(device=out.device, dtype=out.dtype),
        what,
        atol=atol,
        rtol=1e-4 if atol < 1e-3 else 1e-2,
        labels=labels,
    )
    return out


EXAMPLE = [2.0, 1.0, 0.5, -1.0]  # the worked example of the chapter


@check("sampling_probs")
def worked_example(sampling_probs, device):
    """Do the scores (2, 1, 0.5, -1) give the probabilities in the text at T = 1, T = 0.5 and with top_k = 2?"""
    for temperature, top_k in ((1.0, None), (0.5, None), (1.0, 2), (2.0, 3)):
        logits = torch.tensor(EXAMPLE, device=device)
        expect_probs(sampling_probs, logits, temperature, top_k)


@check("sampling_probs")
def each_row_on_its_own(sampling_probs, device):
    """Does each row of a (3, 6) batch keep its own 3 largest scores, at T = 0.7?"""
    logits = random_tensor(3, 6, seed=12, device=device, scale=2.0)
    logits[2] += 5.0  # one row far above the others: a top-k over the whole batch keeps it only
    expect_probs(sampling_probs, logits, 0.7, 3, labels=("row",))


def expect_value_error(sampling_probs, logits, temperature, top_k, argument, value):
    """The call must raise a ValueError whose message names the argument and the value."""
    what = describe_call(logits, temperature, top_k)
    try:
        sampling_probs(logits, temperature, top_k)
    except NotImplementedError:
        raise
    except CheckError:
        raise
    except CrashInCodeUnderTest as err:
        type_name, message = err.type_name, err.message
    except Exception as err:
        if not raised_by_code_under_test(err, sampling_probs):
            raise
        type_name, message = type(err).__name__, str(err)
    else:
        raise CheckError(
            tr(
                "{what} returned without an error; expected a ValueError that names {argument} "
                "and the value {value!r}"
            ).format(what=what, argument=argument, value=value)
        )
    if type_name != "ValueError":
        raise CheckError(
            tr(
                "{what} raised {type_name}: {message}\n      expected a ValueError that names "
                "{argument} and the value {value!r}"
            ).format(
                what=what, type_name=type_name, message=message, argument=argument, value=value
            )
        )
    if argument not in message or repr(value) not in message:
        raise CheckError(
            tr(
                "{what} raised ValueError({message!r}), which should name the argument "
                "{argument!r} and the value it got, {value!r}"
            ).format(what=what, message=message, argument=argument, value=value)
        )


@check("sampling_probs")
def bad_arguments(sampling_probs, device):
    """Do temperature=-0.5 and top_k=0 or 7 (for 6 tokens) raise a ValueError that names the argument and the value?"""
    logits = random_tensor(6, seed=3, device=device)
    expect_value_error(sampling_probs, logits, -0.5, None, "temperature", -0.5)
    expect_value_error(sampling_probs, logits, 1.0, 0, "top_k", 0)
    expect_value_error(sampling_probs, logits, 1.0, 7, "top_k", 7)


def probs_contract(sampling_probs, device, *, seed, shape, temperature, top_k):
    """float64 kept and right, gradients equal to finite differences, logits unchanged, meta."""
    where = float64_device(device)
    logits = random_tensor(*shape, seed=seed, device=where, dtype=torch.float64, scale=2.0)
    expect_probs(sampling_probs, logits, temperature, top_k, atol=1e-10)
    expect_gradient_values(
        lambda logits: sampling_probs(logits, temperature, top_k),
        {"logits": logits},
        describe_call(logits, temperature, top_k),
        seed=seed,
    )
    meta = torch.empty(*shape, device="meta")
    on_meta(
        functools.partial(sampling_probs, meta, temperature, top_k),
        tr("sampling_probs on the meta device (logits of shape {shape}, top_k={top_k})").format(
            shape=shape_str(shape), top_k=top_k
        ),
        sampling_probs,
    )


@check("sampling_probs")
def probs_properties(sampling_probs, device):
    """float64 kept and right, gradients equal to finite differences, logits unchanged, no tensor made on the CPU?"""
    probs_contract(sampling_probs, device, seed=5, shape=(2, 7), temperature=0.8, top_k=4)


# ============================================================= Exercise 12.2: attend_with_cache


def split_returned(out, what):
    """``(output, (keys, values))`` from what the code under test returned, or a CheckError."""
    if (
        not isinstance(out, (tuple, list))
        or len(out) != 2
        or not isinstance(out[1], (tuple, list))
        or len(out[1]) != 2
    ):
        kind = type(out).__name__
        length = tr(" of length {n}").format(n=len(out)) if isinstance(out, (tuple, list)) else ""
        raise CheckError(
            tr("{what} should return (output, (keys, values)), got a {kind}{length}").format(
                what=what, kind=kind, length=length
            )
        )
    output, (keys, values) = out[0], out[1]
    for name, x in ((tr("the output"), output), (tr("the new cache's keys"), keys)):
        expect_tensor(x, f"{what}: {name}")
    expect_tensor(values, tr("{what}: the new cache's values").format(what=what))
    return output, keys, values


def describe_step(queries, values, cache, window):
    B, h, t, d = queries.shape
    n = 0 if cache is None else cache[0].shape[2]
    cached = "cache=None" if cache is None else tr("a cache of {n} positions").format(n=n)
    return tr(
        "attend_with_cache(queries (B={B}, h={h}, t={t}, d={d}), values with d_v={dv}, {cached}, "
        "window={window})"
    ).format(B=B, h=h, t=t, d=d, dv=values.shape[-1], cached=cached, window=window)


def run_step(attend_with_cache, queries, keys, values, cache=None, window=None):
    """Call the code under test; check its form and that it left every input unchanged."""
    what = describe_step(queries, values, cache, window)
    named = [("queries", queries), ("keys", keys), ("values", values)]
    if cache is not None:
        named += [("cache[0]", cache[0]), ("cache[1]", cache[1])]
    before = [(name, x, x.detach().clone()) for name, x in named]
    with calling(what, attend_with_cache):
        out = attend_with_cache(queries, keys, values, cache, window)
    for name, x, copy in before:
        if x.device.type == "meta":
            continue
        if tuple(x.shape) != tuple(copy.shape) or x.dtype != copy.dtype:
            raise CheckError(
                tr("{what} changed {name} in place: its shape or dtype changed").format(
                    what=what, name=name
                )
            )
        try:
            # x itself, not x.detach(): a change the code made to its copy is noted by x
            expect_unchanged(copy, x, f"{what}: {name}")
        except CheckError as err:
            hint = (
                tr(
                    " A cache is shared (beam search keeps several sequences on one cache): "
                    "return new tensors (torch.cat, slicing) and never write into the ones you "
                    "get."
                )
                if "cache" in name
                else ""
            )
            raise CheckError(f"{err}{hint}") from None
    return split_returned(out, what)


def reference_step(queries, keys, values, cache, window):
    """Attention query by query over the positions each may see, in float64, and the new cache.

    Positions are numbered over the cache and the new ones together, 0 .. n + t - 1; new query
    i is position n + i and sees positions j with j <= n + i (and j > n + i - W with a window).
    """
    q, k, v = (x.detach().double().cpu() for x in (queries, keys, values))
    B, h, t, d = q.shape
    if cache is None:
        all_k, all_v = k, v
    else:
        all_k = torch.cat([cache[0].detach().double().cpu(), k], dim=2)
        all_v = torch.cat([cache[1].detach().double().cpu(), v], dim=2)
    n = all_k.shape[2] - t
    out = torch.zeros(B, h, t, v.shape[-1], dtype=torch.float64)
    for b in range(B):
        for head in range(h):
            for i in range(t):
                own = n + i
                first = 0 if window is None else max(0, own - window + 1)
                seen = range(first, own + 1)
                scores = [float(q[b, head, i] @ all_k[b, head, j]) / math.sqrt(d) for j in seen]
                for weight, j in zip(softmax_list(scores), seen):
                    out[b, head, i] += weight * all_v[b, head, j]
    keep = all_k.shape[2] if window is None else min(all_k.shape[2], window)
    return out, all_k[:, :, all_k.shape[2] - keep :], all_v[:, :, all_v.shape[2] - keep :]


def make_step(seed, B, h, n, t, d, dv, device, dtype=torch.float32):
    """Queries, keys and values of t new positions, and a cache of n (None when n = 0)."""
    q = random_tensor(B, h, t, d, seed=seed, device=device, dtype=dtype)
    k = random_tensor(B, h, t, d, seed=seed + 1, device=device, dtype=dtype)
    v = random_tensor(B, h, t, dv, seed=seed + 2, device=device, dtype=dtype)
    cache = None
    if n:
        cache = (
            random_tensor(B, h, n, d, seed=seed + 3, device=device, dtype=dtype),
            random_tensor(B, h, n, dv, seed=seed + 4, device=device, dtype=dtype),
        )
    return q, k, v, cache


def diagnose_step(output, q, k, v, cache, window) -> str:
    """A hint for two classic mistakes, when the output matches what they give."""
    t = q.shape[2]
    n = 0 if cache is None else cache[0].shape[2]
    got = output.detach().double().cpu()
    # The causal triangle from the top left (SDPA's is_causal=True): query i sees positions 0..i.
    if n and t == 1:
        oldest = cache[1][:, :, :1].detach().double().cpu()  # attention over key 0 alone
        if torch.allclose(got, oldest, atol=1e-4):
            return tr(
                "The one new query attended only to the oldest position: a causal mask aligned "
                "to the top left (is_causal=True, or causal lengths of the new positions "
                "alone) hides the cache. A new query sees every cached position."
            )
    if window is not None and n + t > window:
        wider = reference_step(q, k, v, cache, window + 1)[0]
        if torch.allclose(got, wider, atol=1e-4):
            return tr(
                "Each query attended to {seen} positions, one more than the window: "
                "with window={window} a query sees itself and the {before} positions before it."
            ).format(seen=window + 1, window=window, before=window - 1)
    return ""


def expect_step(attend_with_cache, device, *, seed, B, h, n, t, d, dv, window=None):
    """The output and the new cache against the loop reference (computed first)."""
    q, k, v, cache = make_step(seed, B, h, n, t, d, dv, device)
    expected, expected_k, expected_v = reference_step(q, k, v, cache, window)
    output, new_k, new_v = run_step(attend_with_cache, q, k, v, cache, window)
    what = describe_step(q, v, cache, window)
    keep = expected_k.shape[2]
    for name, got, want in (
        (tr("the new cache's keys"), new_k, expected_k),
        (tr("the new cache's values"), new_v, expected_v),
    ):
        if tuple(got.shape) != tuple(want.shape):
            hint = ""
            if window is not None and got.dim() == 4 and got.shape[2] > window:
                hint = tr(
                    ": the cache keeps only the last {window} positions with window={window}"
                ).format(window=window)
            elif got.dim() == 4 and got.shape[2] == keep and tuple(got.shape) != tuple(want.shape):
                hint = tr(": the positions are axis 2 of (B, h, positions, features)")
            raise CheckError(
                tr(
                    "{what}: {name} have shape {got_shape}, expected {want_shape} ({keep} "
                    "positions){hint}"
                ).format(
                    what=what,
                    name=name,
                    got_shape=shape_str(got.shape),
                    want_shape=shape_str(want.shape),
                    keep=keep,
                    hint=hint,
                )
            )
        expect_close(
            got,
            want.to(device=got.device, dtype=got.dtype),
            tr("{what}: {name} (oldest position first)").format(what=what, name=name),
            labels=("batch", "head", "position"),
        )
    expect_tensor(
        output,
        tr("{what}: the output").format(what=what),
        shape=expected.shape,
        dtype=q.dtype,
        device=device,
    )
    try:
        expect_close(
            output,
            expected.to(device=output.device, dtype=output.dtype),
            tr("{what}: the output").format(what=what),
            labels=("batch", "head", "new position"),
        )
    except CheckError as err:
        hint = diagnose_step(output, q, k, v, cache, window)
        raise CheckError(f"{err}\n      {hint}" if hint else str(err)) from None


@check("attend_with_cache")
def one_new_token(attend_with_cache, device):
    """Does one new token after 3 cached positions attend to all 4, and is the new cache the 4 positions in order?"""
    expect_step(attend_with_cache, device, seed=20, B=1, h=2, n=3, t=1, d=4, dv=3)


@check("attend_with_cache")
def prompt_without_cache(attend_with_cache, device):
    """With no cache, do 4 new positions attend causally (position i to 0..i), and become the cache?"""
    expect_step(attend_with_cache, device, seed=30, B=2, h=1, n=0, t=4, d=4, dv=2)


@check("attend_with_cache")
def new_positions_after_a_cache(attend_with_cache, device):
    """Do 2 new positions after 3 cached ones see the cache and the new positions up to their own?"""
    expect_step(attend_with_cache, device, seed=40, B=1, h=2, n=3, t=2, d=4, dv=3)


@check("attend_with_cache")
def sliding_window(attend_with_cache, device):
    """With window=3 and 3 cached positions, does the new token see the last 3 positions only, and does the cache keep those 3?"""
    expect_step(attend_with_cache, device, seed=50, B=1, h=2, n=3, t=1, d=4, dv=3, window=3)


def step_contract(attend_with_cache, device, *, seed, B, h, n, t, d, dv, window):
    """float64 kept and right, gradients equal to finite differences, inputs unchanged, meta."""
    where = float64_device(device)
    q, k, v, cache = make_step(seed, B, h, n, t, d, dv, where, torch.float64)
    expected = reference_step(q, k, v, cache, window)[0]
    output = run_step(attend_with_cache, q, k, v, cache, window)[0]
    what = describe_step(q, v, cache, window)
    expect_close(
        output, expected.to(where), tr("{what} in float64").format(what=what), atol=1e-10, rtol=1e-8
    )

    def f(queries, keys, values, cached_keys, cached_values):
        pair = None if cached_keys is None else (cached_keys, cached_values)
        with calling(what, attend_with_cache):
            return split_returned(attend_with_cache(queries, keys, values, pair, window), what)[0]

    inputs = {"queries": q, "keys": k, "values": v}
    if cache is not None:
        inputs |= {"cached_keys": cache[0], "cached_values": cache[1]}
    expect_gradient_values(
        lambda **x: f(
            x["queries"], x["keys"], x["values"], x.get("cached_keys"), x.get("cached_values")
        ),
        inputs,
        what,
        seed=seed,
    )
    meta = make_step(seed, B, h, n, t, d, dv, "meta")
    on_meta(
        lambda: run_step(attend_with_cache, *meta, window),
        tr("{what} on the meta device").format(
            what=describe_step(meta[0], meta[2], meta[3], window)
        ),
        attend_with_cache,
    )


@check("attend_with_cache")
def step_properties(attend_with_cache, device):
    """float64 kept and right, gradients reach the queries, keys, values and cache, inputs unchanged (a full window too), no tensor made on the CPU?"""
    step_contract(attend_with_cache, device, seed=60, B=1, h=2, n=2, t=1, d=3, dv=2, window=2)
    step_contract(attend_with_cache, device, seed=70, B=2, h=1, n=2, t=2, d=3, dv=4, window=None)


# ======================================================= Check your understanding: the form only


@check("quiz_12_1")
def quiz_12_1_form(answer, device):
    """Is answer_12_1 a number (of MiB)?"""
    expect_number(answer(), "answer_12_1")


@check("quiz_12_2")
def quiz_12_2_form(answer, device):
    """Is answer_12_2 a number (a position)?"""
    expect_number(answer(), "answer_12_2")


@check("quiz_12_3")
def quiz_12_3_form(answer, device):
    """Is answer_12_3 one of the letters "a" to "d"?"""
    expect_choice(answer(), "abcd", "answer_12_3")
