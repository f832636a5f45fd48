"""Hidden checks for the chapter "Attention today".

References: the sliding-window mask by a double loop, the RoPE formula pair by pair and its
relative-position property, and PyTorch's own grouped-query attention
(``F.scaled_dot_product_attention(..., enable_gqa=True)``) in float64.

Why one module: the grader's checks of one chapter notebook, apart from checks/modern.py
only because a release drops ``checks/hidden/``; they test the chapter's three targets at
length against PyTorch's own grouped-query attention and the RoPE formula, hold the keys of
its three questions, and reuse the visible module's contracts rather than copying them.
"""

import torch
import torch.nn.functional as F

from checks._contract import properties
from checks._core import check, random_lengths, random_tensor
from checks._errors import CheckError
from checks._expect import expect_choice, expect_close, expect_number
from checks._i18n import tr
from checks.modern import (
    attend_mask,
    call_rope,
    expect_gqa,
    expect_mask,
    expect_position_zero,
    expect_relative,
    expect_rope,
    gqa_contract,
    gqa_dropout_contract,
    gqa_inputs,
    mask_errors,
    mask_on_meta,
    rope_contract,
    weights_of,
)
from checks.scoring import build

# --------------------------------------------------------------------------
# Exercise 13.1: sliding_window_mask
# --------------------------------------------------------------------------

# (m, n, w): one query, all queries, windows of 1, within and beyond n.
WINDOW_CASES = [
    (1, 1, 1),
    (1, 9, 1),
    (4, 4, 1),
    (7, 7, 2),
    (3, 10, 4),
    (10, 10, 4),
    (5, 12, 12),
    (6, 8, 20),
    (2, 13, 5),
    (9, 16, 7),
]


@check("sliding_window_mask.values", hidden=True)
def window_matches_a_loop(sliding_window_mask, device):
    """Do random numbers of queries, keys and windows (1, within and beyond n) match a double loop?"""
    for m, n, w in WINDOW_CASES:
        expect_mask(sliding_window_mask, m, n, w, device)


@check("sliding_window_mask.errors", hidden=True)
def window_errors_hidden(sliding_window_mask, device):
    """Do windows of 0 and below and more queries than keys raise a ValueError naming the value, and is the mask made on the device asked for?"""
    mask_errors(
        sliding_window_mask,
        [
            ((3, 7, -2), ["window", "-2"]),
            ((1, 1, 0), ["window", "0"]),
            ((8, 6, 3), ["8", "6"]),
            ((2, 1, 1), ["2", "1"]),
        ],
    )
    mask_on_meta(sliding_window_mask, 4, 9, 3)
    mask_on_meta(sliding_window_mask, 5, 5, 8)


# --------------------------------------------------------------------------
# Exercise 13.2: apply_rope
# --------------------------------------------------------------------------

# (shape, offset, base)
ROPE_CASES = [
    ((5, 2), 0, 10000.0),
    ((2, 4, 6), 7, 10000.0),
    ((2, 3, 4, 8), 0, 10000.0),
    ((1, 2, 3, 16), 1000, 10000.0),
    ((3, 5, 10), 3, 500.0),
    ((1, 1, 1, 4), 12345, 10000.0),
]


@check("apply_rope.values", hidden=True)
def rope_matches_the_formula(apply_rope, device):
    """Do random shapes (T, d), (B, T, d) and (B, h, T, d), offsets up to 12345 and other bases match the formula pair by pair, in float32 and float64?"""
    for seed, (shape, offset, base) in enumerate(ROPE_CASES):
        X = random_tensor(*shape, seed=seed, device=device)
        tol = 1e-4 * (1 + offset / 100)  # float32 angles: about 1e-7 radian per unit of position
        expect_rope(apply_rope, X, offset, base, atol=tol, rtol=1e-4)
        X64 = random_tensor(*shape, seed=seed, device="cpu", dtype=torch.float64)
        expect_rope(apply_rope, X64, offset, base, atol=1e-9, rtol=1e-9)


@check("apply_rope.values", hidden=True)
def rope_half_precision(apply_rope, device):
    """Do float16 and bfloat16 inputs at positions near 1000 give the formula to their precision, in their dtype?"""
    for seed, dtype, tol in ((20, torch.float16, 1e-2), (21, torch.bfloat16, 3e-2)):
        X = random_tensor(2, 8, 32, seed=seed, device=device, dtype=dtype)
        expect_rope(apply_rope, X, 1000, atol=tol, rtol=tol)


@check("apply_rope.properties", hidden=True)
def rope_relative_hidden(apply_rope, device):
    """Do scores depend only on m - n for shifts up to 10000, with position 0 unchanged?"""
    expect_position_zero(apply_rope, device)
    expect_relative(apply_rope, device, d=32, shifts=[2, 37, 999, 10000], seed=30)


@check("apply_rope.properties", hidden=True)
def rope_keeps_lengths(apply_rope, device):
    """Does every pair (2i, 2i+1) keep its length (a rotation), at every position?"""
    X = random_tensor(3, 7, 12, seed=31, device="cpu", dtype=torch.float64)
    out = call_rope(apply_rope, X, offset=41)
    pair_lengths = lambda t: t.reshape(*t.shape[:-1], -1, 2).norm(dim=-1)  # noqa: E731
    expect_close(
        pair_lengths(out),
        pair_lengths(X),
        tr(
            "the length of each pair (2i, 2i+1) after apply_rope(X, offset=41): a rotation keeps it"
        ),
        atol=1e-10,
        rtol=1e-10,
    )


@check("apply_rope.properties", hidden=True)
def rope_properties_hidden(apply_rope, device):
    """float64 kept, float16 kept, gradients equal the derivative (finite differences), X unchanged, no tensor made on the CPU?"""
    rope_contract(apply_rope, device, shape=(2, 2, 4, 8), offset=77, seed=32)


# --------------------------------------------------------------------------
# Exercise 13.3: GroupedQueryAttention
# --------------------------------------------------------------------------


def sdpa_reference(module, queries, keys, values, valid_lens):
    """PyTorch's own grouped-query attention, with the module's weights, in the inputs' dtype."""
    h, g = module.num_heads, module.num_groups
    W = weights_of(module)
    with torch.no_grad():
        q, k, v = (
            F.linear(t, *W[name]) for t, name in ((queries, "W_q"), (keys, "W_k"), (values, "W_v"))
        )
        B, m, d = q.shape
        n, size = k.shape[1], d // h
        q = q.reshape(B, m, h, size).transpose(1, 2)  # (B, h, m, d/h)
        k = k.reshape(B, n, g, size).transpose(1, 2)  # (B, g, n, d/h)
        v = v.reshape(B, n, g, size).transpose(1, 2)  # (B, g, n, d/h)
        mask = attend_mask(valid_lens, B, m, n, q.device)
        mask = None if mask is None else mask[:, None]  # (B, 1, m, n)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
        return F.linear(out.transpose(1, 2).reshape(B, m, d), *W["W_o"])


# (d, h, g, B, m, n, bias)
GQA_CASES = [
    (8, 2, 1, 1, 1, 1, False),
    (12, 4, 2, 2, 3, 5, True),
    (16, 8, 4, 2, 4, 3, False),
    (24, 6, 3, 3, 2, 6, True),
    (16, 4, 4, 2, 5, 4, False),
    (32, 8, 2, 1, 3, 7, True),
]


@check("GroupedQueryAttention.sdpa", hidden=True)
def gqa_matches_pytorch(GroupedQueryAttention, device):
    """Do random sizes, heads and groups (g = 1, 1 < g < h, g = h), with (B,) and (B, m) valid lengths including 0, equal F.scaled_dot_product_attention(..., enable_gqa=True) in float64?"""
    dev = "cpu" if torch.device(device).type == "mps" else device
    for seed, (d, h, g, B, m, n, bias) in enumerate(GQA_CASES):
        module = build(GroupedQueryAttention, d, h, g, 0.0, bias=bias, seed=seed, device=dev)
        module = module.double()
        q, k, v = gqa_inputs(B, m, n, d, seed, dev, torch.float64)
        per_sequence = random_lengths(B, low=0, high=n + 1, seed=seed, device=dev)
        per_query = random_lengths(B, m, low=0, high=n, seed=seed + 50, device=dev)
        for lens in (None, per_sequence, per_query):
            expected = sdpa_reference(module, q, k, v, lens)
            name = tr("the float64 output (d={d}, h={h}, g={g}, B={B}, m={m}, n={n})").format(
                d=d, h=h, g=g, B=B, m=m, n=n
            )
            expect_gqa(module, q, k, v, lens, expected, name, atol=1e-10, rtol=1e-9)


@check("GroupedQueryAttention.sdpa", hidden=True)
def gqa_float32_cases(GroupedQueryAttention, device):
    """Does float32 give float32, equal to PyTorch's grouped-query attention to 1e-5?"""
    module = build(GroupedQueryAttention, 16, 4, 2, 0.0, bias=True, seed=40, device=device)
    q, k, v = gqa_inputs(3, 4, 6, 16, 40, device)
    lens = torch.tensor([6, 1, 4], device=device)
    expected = sdpa_reference(module, q, k, v, lens)
    expect_gqa(module, q, k, v, lens, expected, tr("the float32 output (d=16, h=4, g=2)"))


@check("GroupedQueryAttention.contract", hidden=True)
def gqa_properties_hidden(GroupedQueryAttention, device):
    """float64 in and out, gradients to every projection and input (equal to the derivative), inputs unchanged, no tensor made on the CPU?"""
    gqa_contract(GroupedQueryAttention, device, seed=41, d=12, h=6, g=3, B=2, m=2, n=4, bias=False)
    gqa_contract(GroupedQueryAttention, device, seed=42, d=8, h=4, g=1, B=1, m=3, n=3, bias=True)


@check("GroupedQueryAttention.contract", hidden=True)
def gqa_dropout_hidden(GroupedQueryAttention, device):
    """With dropout=0.3 in training, is a fraction ≈ 0.3 of the weights zeroed and the rest divided by 0.7, once, and none in eval?"""
    gqa_dropout_contract(GroupedQueryAttention, device, seed=43, B=6, m=6, p=0.3, h=6, g=3, n=8)


# --------------------------------------------------------------------------
# Check your understanding: the keys.
# --------------------------------------------------------------------------


@check("quiz_13_1.key", hidden=True)
def quiz_13_1_key(answer, device):
    """Is answer_13_1 the right choice?"""
    value = expect_choice(answer(), "abcd", "answer_13_1")
    # The property behind the key, proven on a row: m·j and -m(i - j) give one softmax.
    i, slope = 5, 0.25
    scores = random_tensor(i + 1, seed=60, device="cpu", dtype=torch.float64)
    j = torch.arange(i + 1, dtype=torch.float64)
    per_key = torch.softmax(scores + slope * j, dim=0)
    distance = torch.softmax(scores - slope * (i - j), dim=0)
    if not torch.allclose(per_key, distance, atol=1e-12):
        raise CheckError(
            tr("the key of question 13.1 no longer holds")
        )  # never: a softmax identity
    if value != "a":
        raise CheckError(
            tr(
                "answer_13_1 = {value!r} is not the right choice: write both biases for one "
                "row i and subtract them; what does a softmax do with a constant added to "
                "every score?"
            ).format(value=value)
        )


@check("quiz_13_2.key", hidden=True)
def quiz_13_2_key(answer, device):
    """Is answer_13_2 the number of bytes of KV cache per token?"""
    value = expect_number(answer(), "answer_13_2")
    layers, kv_heads, head_size = 80, 8, 128
    cache = torch.empty(2, layers, kv_heads, head_size, dtype=torch.bfloat16, device="meta")
    expected = cache.nbytes  # a key and a value per layer and key-value head, 2 bytes a number
    if abs(value - expected) > 0.5:
        raise CheckError(
            tr(
                "answer_13_2 = {value:g} is not the number of bytes: count a key and a value "
                "per layer and per key-value head (not per query head), and the bytes of a "
                "16-bit number"
            ).format(value=value)
        )


@check("quiz_13_3.key", hidden=True)
def quiz_13_3_key(answer, device):
    """Is answer_13_3 the earliest input position the third layer's output at 20 can depend on?"""
    value = expect_number(answer(), "answer_13_3")
    n, w, layers = 21, 4, 3
    step = torch.tensor([[int(0 <= t - j < w) for j in range(n)] for t in range(n)])
    reach = torch.eye(n, dtype=torch.long)
    for _ in range(layers):  # the inputs each output depends on: the masks composed
        reach = ((step @ reach) > 0).long()
    expected = int(torch.nonzero(reach[20]).min())
    if value != expected:
        raise CheckError(
            tr(
                "answer_13_3 = {value:g} is not the earliest position: how far back does one "
                "layer see, and where does the layer below it already look?"
            ).format(value=value)
        )


# ----------------------------------------------------------------- property classes
# Each graded target names the groups that test each class (tests/test_properties.py proves
# each with a wrong answer in tests/wrong/modern.py that breaks it).

properties(
    "sliding_window_mask",
    float64="n/a: sliding_window_mask makes a boolean mask from sizes; no float input",
    gradient="n/a: sliding_window_mask returns a boolean mask; nothing to differentiate",
    meta=("sliding_window_mask", "sliding_window_mask.errors"),
    dropout="n/a: sliding_window_mask has no dropout",
    unchanged="n/a: sliding_window_mask takes sizes and a device, no tensor to change",
)
properties(
    "apply_rope",
    float64=("apply_rope", "apply_rope.values"),
    gradient=("apply_rope", "apply_rope.properties"),
    meta=("apply_rope", "apply_rope.properties"),
    dropout="n/a: apply_rope has no dropout",
    unchanged=("apply_rope", "apply_rope.properties"),
)
properties(
    "GroupedQueryAttention",
    float64=("GroupedQueryAttention", "GroupedQueryAttention.contract"),
    gradient=("GroupedQueryAttention", "GroupedQueryAttention.contract"),
    meta=("GroupedQueryAttention", "GroupedQueryAttention.contract"),
    dropout=("GroupedQueryAttention", "GroupedQueryAttention.contract"),
    unchanged=("GroupedQueryAttention", "GroupedQueryAttention.contract"),
)
