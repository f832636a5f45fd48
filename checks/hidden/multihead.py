"""Hidden checks for the chapter "Causal and multi-head attention".

References: the causal mask built by a double loop, the perturbation property,
head-by-head slicing, and torch.nn.MultiheadAttention given the same weights.

Why one module: the grader's checks of one chapter notebook, apart from checks/multihead.py
only because a release drops ``checks/hidden/``: its three targets at length against loops,
slicing and ``nn.MultiheadAttention``, and the keys of its three questions, with the visible
module's wrappers and contracts rather than copies of them.
"""

import torch
from torch import nn

from checks._contract import properties
from checks._core import check, random_lengths, random_tensor
from checks._errors import CheckError
from checks._expect import expect_choice, expect_close, expect_number
from checks._i18n import tr
from checks.multihead import (
    causal_contract,
    causal_lengths,
    expect_causal,
    expect_mha_close,
    heads_of,
    independent,
    merge,
    mha,
    mha_contract,
    mha_dropout_contract,
    split,
    transpose_contract,
)
from checks.scoring import build


@check("causal_valid_lens.mask", hidden=True)
def matches_a_loop(causal_valid_lens, device):
    """Do the lengths give the mask M[b, t, j] = (j ≤ t and j < ℓ_b), for ℓ = 0, within and beyond T?"""
    for seed, (B, T) in enumerate([(1, 1), (3, 4), (4, 7), (2, 9)]):
        X = random_tensor(B, T, 2, seed=seed, device=device)
        for valid_lens in (None, random_lengths(B, low=0, high=T + 2, seed=seed, device=device)):
            lens = causal_lengths(causal_valid_lens, X, valid_lens)
            mask = torch.arange(T, device=device) < lens[..., None]  # (B, T, T)
            ells = [T] * B if valid_lens is None else valid_lens.tolist()
            expected = torch.tensor(
                [[[j <= t and j < ells[b] for j in range(T)] for t in range(T)] for b in range(B)],
                device=device,
            )
            if not torch.equal(mask, expected):
                b, t = (int(i) for i in torch.nonzero((mask != expected).any(-1))[0])
                raise CheckError(
                    tr(
                        "for T={T}, valid_lens={ells}: query {t} of sequence {b} may see keys "
                        "{got}, expected {expected}"
                    ).format(
                        T=T,
                        ells=ells,
                        t=t,
                        b=b,
                        got=torch.nonzero(mask[b, t]).flatten().tolist(),
                        expected=torch.nonzero(expected[b, t]).flatten().tolist(),
                    )
                )


@check("causal_valid_lens.perturbation", hidden=True)
def causal_with_padding(causal_valid_lens, device):
    """With padding, does changing x[t+1:] leave y[:t+1] unchanged, and are empty rows zero, not NaN?"""
    X = random_tensor(3, 6, 4, seed=5, device=device)
    valid_lens = torch.tensor([6, 3, 0], device=device)
    expect_causal(causal_valid_lens, X, valid_lens, tr("with valid_lens [6, 3, 0]"))
    lens = causal_lengths(causal_valid_lens, X, valid_lens)
    if bool((lens[2] != 0).any()):
        raise CheckError(
            tr("a sequence of valid length 0 must give lengths 0, got {got}").format(
                got=lens[2].tolist()
            )
        )


@check("causal_valid_lens.mask", hidden=True)
def causal_properties_hidden(causal_valid_lens, device):
    """Are the lengths int64 and made on X's device (not the CPU), with valid_lens left unchanged?"""
    causal_contract(causal_valid_lens, device, B=4, T=6)


@check("transpose_qkv.loop", hidden=True)
def split_properties_hidden(transpose_qkv, device):
    """float64 and float16 kept, gradients flow to X, X unchanged, no tensor made on the CPU?"""
    transpose_contract(transpose_qkv, device, B=3, T=5, d=12, h=3, inverse=False)


@check("transpose_output.loop", hidden=True)
def merge_properties_hidden(transpose_output, device):
    """float64 and float16 kept, gradients flow to X, X unchanged, no tensor made on the CPU?"""
    transpose_contract(transpose_output, device, B=3, T=5, d=12, h=3, inverse=True)


# (B, T, d, h). (2, 4, 8, 2) early: T divisible by h, so that a wrong reshape gives a wrong shape.
SHAPES = [(1, 1, 4, 1), (2, 4, 8, 2), (2, 5, 8, 4), (3, 4, 12, 3), (2, 3, 6, 6), (4, 2, 16, 2)]


@check("transpose_qkv.loop", hidden=True)
def split_matches_slicing(transpose_qkv, device):
    """Does transpose_qkv match slicing head by head for several shapes?"""
    for seed, (B, T, d, h) in enumerate(SHAPES):
        X = random_tensor(B, T, d, seed=seed, device=device)
        what = tr("transpose_qkv of {shape} with {h} heads").format(shape=(B, T, d), h=h)
        out = split(transpose_qkv, X, h)
        expect_close(out, heads_of(X, h), what, labels=("batch*head", "position"))


@check("transpose_output.loop", hidden=True)
def merge_matches_concatenation(transpose_output, device):
    """Does transpose_output concatenate each example's heads, for several shapes?"""
    for seed, (B, T, d, h) in enumerate(SHAPES):
        X = random_tensor(B, T, d, seed=seed, device=device)
        out = merge(transpose_output, heads_of(X, h), h)
        expect_close(
            out,
            X,
            tr("transpose_output of {h} heads of {shape}").format(h=h, shape=(B, T, d)),
            labels=("batch", "position"),
        )


def torch_copy(module, bias):
    """An nn.MultiheadAttention holding the module's weights."""
    d, h = module.W_q.in_features, module.num_heads
    ref = (
        nn.MultiheadAttention(d, h, bias=bias, batch_first=True).to(module.W_q.weight.device).eval()
    )
    with torch.no_grad():
        ref.in_proj_weight.copy_(
            torch.cat([module.W_q.weight, module.W_k.weight, module.W_v.weight])
        )
        ref.out_proj.weight.copy_(module.W_o.weight)
        if bias:
            ref.in_proj_bias.copy_(torch.cat([module.W_q.bias, module.W_k.bias, module.W_v.bias]))
            ref.out_proj.bias.copy_(module.W_o.bias)
    return ref


def torch_reference(module64, q, k, v, lens):
    """The float64 output of nn.MultiheadAttention holding the module's weights."""
    B, m, n = q.shape[0], q.shape[1], k.shape[1]
    ref = torch_copy(module64, module64.W_q.bias is not None).double()
    mask = None
    if lens is not None:
        per_query = lens if lens.dim() == 2 else lens[:, None].expand(B, m)
        mask = torch.arange(n, device=q.device) >= per_query[..., None]  # True = masked
        mask = mask.repeat_interleave(module64.num_heads, dim=0)  # (B*h, m, n)
    with torch.no_grad():
        return ref(q, k, v, attn_mask=mask)[0]


@check("MultiHeadAttention.torch", hidden=True)
@independent
def matches_torch(MultiHeadAttention, device):
    """Given the same weights, does it equal nn.MultiheadAttention to 1e-5, output and per-head weights, with keys ≠ values and m ≠ n?"""
    cases = [
        (8, 2, False, 1, 4, 4),
        (16, 4, True, 3, 5, 7),
        (12, 3, True, 2, 1, 6),
        (6, 1, False, 2, 3, 3),
    ]
    for seed, (d, h, bias, B, m, n) in enumerate(cases):
        module = build(MultiHeadAttention, d, h, 0.0, bias=bias, seed=seed, device=device)
        ref = torch_copy(module, bias)
        q = random_tensor(B, m, d, seed=seed, device=device)
        k = random_tensor(B, n, d, seed=seed + 9, device=device)
        v = random_tensor(B, n, d, seed=seed + 19, device=device) if seed % 2 else k
        lens_cases = [
            None,
            random_lengths(B, low=1, high=n, seed=seed, device=device),
            random_lengths(B, m, low=1, high=n, seed=seed + 1, device=device),
        ]
        for lens in lens_cases:
            what = tr(
                "d={d}, heads={h}, bias={bias}, keys {sign} values, valid_lens={lens}"
            ).format(
                d=d,
                h=h,
                bias=bias,
                sign="≠" if v is not k else "=",
                lens=None if lens is None else lens.tolist(),
            )
            out, weights = mha(module, q, k, v, lens)
            mask = None
            if lens is not None:
                per_query = lens if lens.dim() == 2 else lens[:, None].expand(B, m)
                mask = torch.arange(n, device=device) >= per_query[..., None]  # True = masked
                # (B*h, m, n), nn.MultiheadAttention's order
                mask = mask.repeat_interleave(h, dim=0)
            with torch.no_grad():
                expected, expected_w = ref(q, k, v, attn_mask=mask, average_attn_weights=False)
            expect_mha_close(
                module,
                out,
                expected,
                tr("the output against nn.MultiheadAttention ({what})").format(what=what),
                q,
                k,
                v,
                lens,
            )
            expect_close(
                weights,
                expected_w,
                tr("the weights against nn.MultiheadAttention ({what})").format(what=what),
                labels=("batch", "head", "query"),
            )


@check("MultiHeadAttention.torch", hidden=True)
@independent
def mha_properties_hidden(MultiHeadAttention, device):
    """float64 in and out (equal to nn.MultiheadAttention in float64), gradients to every projection and input, inputs unchanged, no tensor made on the CPU?"""
    mha_contract(
        MultiHeadAttention,
        device,
        seed=12,
        d=12,
        h=3,
        B=3,
        m=4,
        n=6,
        bias=True,
        reference=torch_reference,
    )


@check("MultiHeadAttention.dropout", hidden=True)
@independent
def dropout_on_weights(MultiHeadAttention, device):
    """With dropout=1, is the attention output zero in training (output = W_o's bias) and untouched in eval?"""
    module = build(MultiHeadAttention, 8, 2, 1.0, bias=True, seed=7, device=device)
    ref = torch_copy(module, bias=True)
    q = random_tensor(2, 3, 8, seed=7, device=device)
    out, _ = mha(module.eval(), q, q, q)
    with torch.no_grad():
        expected, _ = ref(q, q, q)
    expect_close(
        out,
        expected,
        tr("the output in eval mode with dropout=1 (dropout must be off)"),
        labels=("batch", "query"),
    )
    out, _ = mha(module.train(), q, q, q)
    module.eval()
    bias = module.W_o.bias.detach().expand(2, 3, 8)
    expect_close(
        out,
        bias,
        tr("the output in train mode with dropout=1 (all weights dropped: W_o's bias)"),
        labels=("batch", "query"),
    )


@check("MultiHeadAttention.dropout", hidden=True)
@independent
def dropout_statistics(MultiHeadAttention, device):
    """With dropout=0.3 in training, is a fraction ≈ 0.3 of the weights zeroed and the rest divided by 0.7, once?"""
    mha_dropout_contract(MultiHeadAttention, device, seed=8, B=6, m=7, p=0.3, h=2, n=8)


# --------------------------------------------------------------------------
# Check your understanding: the keys. Counts are computed here (a double loop,
# PyTorch's own module), never copied from the answer key. The book prints each
# check's question under the test cell, so the questions do not give the answer away.
# --------------------------------------------------------------------------


@check("quiz_7_1.key", hidden=True)
def quiz_causal_length(answer, device):
    """Is answer_7_1 the number of keys that query attends to?"""
    value = expect_number(answer(), "answer_7_1")
    T, length, t = 8, 5, 6
    allowed = sum(1 for j in range(T) if j <= t and j < length)  # causal and within the padding
    if value != allowed:
        raise CheckError(
            tr(
                "answer_7_1 = {value:g}, but query {t} of a sequence of valid length {length} "
                "may look at the keys j with j ≤ {t} (causal) and j < {length} (not padding): "
                "both limits cut the row, so the length is the smaller of t + 1 and the valid "
                "length; a padded query still attends to the valid keys before it"
            ).format(value=value, t=t, length=length)
        )


@check("quiz_7_2.key", hidden=True)
def quiz_head_entry(answer, device):
    """Is answer_7_2 the right option?"""
    choice = expect_choice(answer(), "abcd", "answer_7_2")
    if choice != "a":
        raise CheckError(
            tr(
                "answer_7_2 = {choice!r}: entry b·h + i holds head i of example b, so entry 4 "
                "with h = 3 is example 4 // 3 = 1, head 4 % 3 = 1, features 4 to 7; the mask "
                "is applied inside the attention of each entry, and every head of example 1 "
                "needs example 1's valid length, which repeat_interleave (not repeat) puts at "
                "entry 4"
            ).format(choice=choice)
        )


@check("quiz_7_3.key", hidden=True)
def quiz_parameters(answer, device):
    """Is answer_7_3 the number of parameters?"""
    value = expect_number(answer(), "answer_7_3")
    # On the meta device: no memory, no draw from the notebook's random number generator.
    expected, one_head = (
        sum(p.numel() for p in nn.MultiheadAttention(64, h, bias=False, device="meta").parameters())
        for h in (8, 1)
    )
    if value != expected:
        raise CheckError(
            tr(
                "answer_7_3 = {value:g}, but MultiHeadAttention(64, 8) has four 64 × 64 "
                "projections, as nn.MultiheadAttention(64, 8, bias=False) counts: the same "
                "{one_head} as with one head, since the 8 heads of size 8 are column blocks of "
                "one 64 × 64 matrix per role"
            ).format(value=value, one_head=one_head)
        )


# ----------------------------------------------------------------- the property classes
# Which group tests each class of every graded target (checks._contract.properties);
# tests/test_properties.py proves each with a known-wrong answer that breaks it.

properties(
    "causal_valid_lens",
    float64="n/a: the lengths are int64 (checked); X gives only its shape and device",
    gradient="n/a: integer lengths have no gradient",
    meta=("causal_valid_lens.mask",),
    dropout="n/a: causal_valid_lens has no dropout",
    unchanged=("causal_valid_lens.mask",),
)
for _name in ("transpose_qkv", "transpose_output"):
    properties(
        _name,
        float64=(f"{_name}.loop",),
        gradient=(f"{_name}.loop",),
        meta=(f"{_name}.loop",),
        dropout=f"n/a: {_name} only rearranges",
        unchanged=(f"{_name}.loop",),
    )
properties(
    "MultiHeadAttention",
    float64=("MultiHeadAttention.torch",),
    gradient=("MultiHeadAttention.torch",),
    meta=("MultiHeadAttention.torch",),
    dropout=("MultiHeadAttention.dropout",),
    unchanged=("MultiHeadAttention.torch",),
)
