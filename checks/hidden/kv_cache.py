"""Hidden checks for the chapter "A small language model, and how it is served".

References: a sort of each row in plain Python (``sampling_probs``); attention query by query
in float64 over the positions each query may see, and one pass of attention with a band mask
built position by position (``attend_with_cache``); for the questions, meta tensors of the
cache's shape and a reachability computed layer by layer.

Why one module: the grader's checks of one chapter notebook, apart from checks/kv_cache.py
only because a release drops ``checks/hidden/``: its two targets at length (decoding in
pieces against one pass, windows, half precision) and the keys of its three questions, with
the visible module's wrappers and contracts rather than copies of them.
"""

import torch

from checks._contract import properties
from checks._core import check, random_tensor
from checks._errors import CheckError
from checks._expect import expect_choice, expect_close, expect_number, shape_str
from checks._i18n import N_, tr
from checks.kv_cache import (
    describe_step,
    expect_probs,
    expect_step,
    expect_value_error,
    get_probs,
    make_step,
    probs_contract,
    run_step,
    step_contract,
)

# ================================================================ Exercise 12.1: sampling_probs


@check("sampling_probs.values", hidden=True)
def random_rows(sampling_probs, device):
    """Do rows of 1 to 50 tokens, with one to three leading axes, temperatures from 0.25 to 3 and top_k from 1 to V match a sort in plain Python?"""
    cases = [((1,), 1.0, None), ((5,), 0.25, 2), ((4, 17), 3.0, 1), ((2, 3, 50), 0.5, 50)]
    cases += [((3, 9), 1.0, 9), ((6, 12), 1.7, 5), ((2, 2, 8), 0.8, None)]
    for seed, (shape, temperature, top_k) in enumerate(cases):
        logits = random_tensor(*shape, seed=100 + seed, device=device, scale=3.0)
        expect_probs(sampling_probs, logits, temperature, top_k, labels=None)


@check("sampling_probs.values", hidden=True)
def limits(sampling_probs, device):
    """Is top_k = 1 the one-hot greedy choice, top_k = V no top-k at all, and a temperature of 0.001 finite and near one-hot?"""
    logits = random_tensor(4, 10, seed=7, device=device, scale=2.0)
    one_hot = get_probs(sampling_probs, logits, 1.0, 1)
    expected = torch.nn.functional.one_hot(logits.argmax(-1), 10).to(logits.dtype)
    expect_close(one_hot, expected, "sampling_probs(logits (4, 10), top_k=1)", labels=("row",))
    everything = get_probs(sampling_probs, logits, 1.3, 10)
    expect_close(
        everything,
        torch.softmax(logits / 1.3, dim=-1),
        "sampling_probs(logits (4, 10), temperature=1.3, top_k=10)",
        labels=("row",),
    )
    cold = get_probs(sampling_probs, logits, 0.001, None)
    if not bool(torch.isfinite(cold).all()):
        raise CheckError(tr("sampling_probs(logits, temperature=0.001) is not finite (NaN or inf)"))
    expect_close(
        cold, expected, "sampling_probs(logits (4, 10), temperature=0.001)", atol=1e-3, rtol=0
    )


@check("sampling_probs.values", hidden=True)
def half_precision(sampling_probs, device):
    """Are float16 and bfloat16 scores kept in their dtype, with the right probabilities?"""
    for dtype in (torch.float16, torch.bfloat16):
        logits = random_tensor(3, 11, seed=9, device=device, dtype=dtype, scale=2.0)
        expect_probs(sampling_probs, logits, 0.9, 4, atol=2e-2, labels=("row",))


@check("sampling_probs.errors", hidden=True)
def more_bad_arguments(sampling_probs, device):
    """Do temperatures of 0 and -2 and top_k of -1 and V + 1 raise a ValueError that names the argument and the value?"""
    logits = random_tensor(2, 5, seed=4, device=device)
    expect_value_error(sampling_probs, logits, 0.0, None, "temperature", 0.0)
    expect_value_error(sampling_probs, logits, -2, 3, "temperature", -2)
    expect_value_error(sampling_probs, logits, 1.0, -1, "top_k", -1)
    expect_value_error(sampling_probs, logits, 0.5, 6, "top_k", 6)


@check("sampling_probs.safety", hidden=True)
def probs_properties_hidden(sampling_probs, device):
    """float64 kept and right, gradients equal to finite differences, logits unchanged, no tensor made on the CPU?"""
    probs_contract(sampling_probs, device, seed=15, shape=(3, 2, 9), temperature=1.4, top_k=3)
    probs_contract(sampling_probs, device, seed=16, shape=(6,), temperature=0.6, top_k=None)


@check("sampling_probs.safety", hidden=True)
def leaf_left_unchanged(sampling_probs, device):
    """Is a leaf that requires grad left unchanged (no in-place division), with a gradient?"""
    logits = random_tensor(2, 6, seed=17, device=device).requires_grad_()
    probs = get_probs(sampling_probs, logits, 0.5, 2)
    if not probs.requires_grad:
        raise CheckError(
            tr(
                "sampling_probs(a leaf that requires grad, ...) does not require grad: is it "
                "detached (.detach(), .data, torch.tensor(...))?"
            )
        )


# ============================================================= Exercise 12.2: attend_with_cache


@check("attend_with_cache.values", hidden=True)
def random_steps(attend_with_cache, device):
    """Do random batches, heads, cache lengths (none, 1, 6) and new positions (1, 2, 5), with values of another size than the keys, match a loop?"""
    cases = [
        (1, 1, 0, 1, 2, 3),  # the very first token: no cache
        (2, 3, 5, 1, 4, 2),
        (2, 2, 1, 3, 8, 5),
        (3, 1, 6, 5, 3, 3),
        (1, 4, 6, 2, 5, 7),
        (2, 2, 0, 5, 4, 1),
    ]
    for seed, (B, h, n, t, d, dv) in enumerate(cases):
        expect_step(attend_with_cache, device, seed=200 + 10 * seed, B=B, h=h, n=n, t=t, d=d, dv=dv)


def band_attention(q, k, v, window):
    """One pass over all positions, the mask built position by position: i sees j <= i (> i - W)."""
    T = q.shape[2]
    mask = torch.tensor(
        [[j <= i and (window is None or j > i - window) for j in range(T)] for i in range(T)],
        device=q.device,
    )
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def decode_in_pieces(attend_with_cache, q, k, v, pieces, window):
    """Feed the positions in pieces of the given sizes; return the outputs and cache lengths."""
    cache, outputs, lengths, start = None, [], [], 0
    for size in pieces:
        part = slice(start, start + size)
        output, new_k, new_v = run_step(
            attend_with_cache, q[:, :, part], k[:, :, part], v[:, :, part], cache, window
        )
        outputs.append(output)
        lengths.append(int(new_k.shape[2]))
        cache, start = (new_k, new_v), start + size
    return torch.cat(outputs, dim=2), lengths, cache


@check("attend_with_cache.values", hidden=True)
def token_by_token_equals_one_pass(attend_with_cache, device):
    """Does decoding 7 positions token by token, or as 3 then 1 then 3, equal one causal pass over the 7?"""
    q, k, v = (random_tensor(2, 2, 7, 4, seed=300 + s, device=device) for s in range(3))
    expected = band_attention(q, k, v, None)
    for pieces in ([1] * 7, [3, 1, 3]):
        outputs, lengths, cache = decode_in_pieces(attend_with_cache, q, k, v, pieces, None)
        what = tr("attend_with_cache fed the 7 positions in pieces {pieces}").format(pieces=pieces)
        expect_close(outputs, expected, what, atol=1e-5, labels=("batch", "head", "position"))
        expect_close(
            cache[0],
            k,
            tr("{what}: the final cache's keys").format(what=what),
            labels=("batch", "head", "position"),
        )


@check("attend_with_cache.window", hidden=True)
def windowed_steps(attend_with_cache, device):
    """With windows of 1, 2 and 4: a prompt longer than the window, and new positions after a full cache, against a loop?"""
    cases = [
        (1, 2, 0, 6, 4, 3, 4),  # a prompt of 6 with a window of 4: the cache keeps the last 4
        (2, 1, 4, 3, 3, 2, 4),  # 3 new positions after a full cache of 4
        (1, 2, 2, 1, 4, 4, 2),
        (2, 2, 0, 3, 2, 2, 1),  # a window of 1: each position sees only itself
        (1, 1, 5, 2, 3, 3, 9),  # a window longer than everything: no effect
    ]
    for seed, (B, h, n, t, d, dv, window) in enumerate(cases):
        expect_step(
            attend_with_cache,
            device,
            seed=400 + 10 * seed,
            B=B,
            h=h,
            n=n,
            t=t,
            d=d,
            dv=dv,
            window=window,
        )


@check("attend_with_cache.window", hidden=True)
def cache_stops_growing(attend_with_cache, device):
    """Over 12 steps token by token with window=4, does the cache hold min(step, 4) positions, with outputs equal to one banded pass?"""
    q, k, v = (random_tensor(1, 2, 12, 4, seed=500 + s, device=device) for s in range(3))
    outputs, lengths, cache = decode_in_pieces(attend_with_cache, q, k, v, [1] * 12, 4)
    expected_lengths = [min(i + 1, 4) for i in range(12)]
    if lengths != expected_lengths:
        raise CheckError(
            tr(
                "attend_with_cache with window=4, fed 12 positions one at a time: the cache "
                "held {lengths} positions after each step, expected {expected_lengths}"
            ).format(lengths=lengths, expected_lengths=expected_lengths)
        )
    what = tr("attend_with_cache with window=4, fed 12 positions one at a time")
    expect_close(
        outputs, band_attention(q, k, v, 4), what, atol=1e-5, labels=("batch", "head", "position")
    )
    expect_close(
        cache[0],
        k[:, :, -4:],
        tr("{what}: the final cache's keys").format(what=what),
        labels=("batch", "head", "position"),
    )


@check("attend_with_cache.window", hidden=True)
def window_of_one(attend_with_cache, device):
    """With window=1, is every output exactly its own value, and the cache the last position?"""
    q, k, v, cache = make_step(600, 2, 2, 3, 4, 3, 5, device)
    output, new_k, new_v = run_step(attend_with_cache, q, k, v, cache, 1)
    what = describe_step(q, v, cache, 1)
    expect_close(
        output,
        v,
        tr("{what}: the output (each query sees only itself)").format(what=what),
        labels=("batch", "head", "new position"),
    )
    if tuple(new_k.shape) != (2, 2, 1, 3):
        raise CheckError(
            tr(
                "{what}: the new cache's keys have shape {new_k_shape}, expected (2, 2, 1, 3)"
            ).format(what=what, new_k_shape=shape_str(new_k.shape))
        )


@check("attend_with_cache.safety", hidden=True)
def step_properties_hidden(attend_with_cache, device):
    """float64 kept and right, gradients reach the queries, keys, values and cache, a full cache left unchanged, no tensor made on the CPU?"""
    step_contract(attend_with_cache, device, seed=700, B=2, h=2, n=3, t=2, d=3, dv=2, window=3)
    step_contract(attend_with_cache, device, seed=710, B=1, h=1, n=0, t=3, d=2, dv=3, window=None)
    step_contract(attend_with_cache, device, seed=720, B=1, h=2, n=4, t=1, d=2, dv=2, window=4)


# ================================================================ Check your understanding: keys


@check("quiz_12_1.key", hidden=True)
def quiz_12_1_key(answer, device):
    """Is answer_12_1 the cache's size, in MiB, for that model and sequence?"""
    got = expect_number(answer(), "answer_12_1")
    layers, heads, head_size, tokens = 24, 16, 128, 4096
    # An independent construction: the cache's tensors themselves, on the meta device.
    cache = [
        torch.empty(1, heads, tokens, head_size, dtype=torch.bfloat16, device="meta")
        for _ in range(2 * layers)
    ]
    mib = sum(x.nbytes for x in cache) / 2**20
    if abs(got - mib) > 0.5:
        raise CheckError(
            tr(
                "answer_12_1 = {got:g} MiB is not the size of that cache: count a key and a "
                "value per token in every layer, each of d numbers"
            ).format(got=got)
        )


@check("quiz_12_2.key", hidden=True)
def quiz_12_2_key(answer, device):
    """Is answer_12_2 the first input position that can reach position 100 through 4 windowed layers?"""
    got = expect_number(answer(), "answer_12_2")
    W, layers, position = 8, 4, 100
    # Reachability, layer by layer: which inputs can the output at `position` depend on?
    reach = torch.zeros(position + 1, dtype=torch.bool)
    reach[position] = True
    for _ in range(layers):
        reach = torch.tensor(
            [any(reach[i] for i in range(j, min(j + W, position + 1))) for j in range(position + 1)]
        )
    first = int(torch.nonzero(reach)[0])
    if got != first:
        raise CheckError(
            tr(
                "answer_12_2 = {got:g} is not that position: follow what each layer's query at "
                "a position can see, from the top layer down"
            ).format(got=got)
        )


WHY_NOT_12_3 = {
    "a": N_(
        "more heads split the same keys and values differently; each head's are still those of "
        "an earlier position that no later token changes"
    ),
    "b": N_(
        "where the LayerNorm sits changes what a block computes, not which positions it reads: "
        "position i still depends on tokens 0..i only"
    ),
    "d": N_(
        "the decoding rule only chooses the next token from the logits; the logits themselves "
        "are the same with and without a cache"
    ),
}


@check("quiz_12_3.key", hidden=True)
def quiz_12_3_key(answer, device):
    """Does answer_12_3 name the change that makes the cache inexact?"""
    choice = expect_choice(answer(), "abcd", "answer_12_3")
    if choice != "c":
        raise CheckError(f"answer_12_3 = {choice!r}: {tr(WHY_NOT_12_3[choice])}")


# ----------------------------------------------------------------- property classes
# Each graded target names the groups that test each class (tests/test_properties.py proves
# each with a wrong answer in tests/wrong/kv_cache.py that breaks it).

properties(
    "sampling_probs",
    float64=("sampling_probs", "sampling_probs.safety"),
    gradient=("sampling_probs", "sampling_probs.safety"),
    meta=("sampling_probs", "sampling_probs.safety"),
    dropout="n/a: sampling_probs has no dropout",
    unchanged=("sampling_probs", "sampling_probs.safety"),
)
properties(
    "attend_with_cache",
    float64=("attend_with_cache", "attend_with_cache.safety"),
    gradient=("attend_with_cache", "attend_with_cache.safety"),
    meta=("attend_with_cache", "attend_with_cache.safety"),
    dropout="n/a: attend_with_cache has no dropout (decoding runs in eval mode)",
    unchanged=("attend_with_cache", "attend_with_cache.safety"),
)
