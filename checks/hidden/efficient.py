"""Hidden checks for the chapter "Efficient attention".

References: the mask written as a double loop over (query, key), and attention
computed query by query with a plain softmax over the valid keys, in float64.
"""

import math

import torch
import torch.nn.functional as F

from checks._contract import properties
from checks._core import check, random_lengths, random_tensor, softmax_list
from checks._errors import CheckError
from checks._expect import expect_choice, expect_close, expect_number
from checks._i18n import N_, tr
from checks.efficient import expect_mask, get_mask, mask_contract

CASES = [(1, 1, 1), (2, 3, 5), (4, 6, 4), (3, 1, 9), (5, 7, 16)]  # (B, m, n)


@check("valid_lens_to_mask.values", hidden=True)
def matches_a_loop(valid_lens_to_mask, device):
    """Is key j attended by query i of sequence b exactly when j < ℓ (ℓ = 0, within and beyond n)?"""
    for seed, (B, m, n) in enumerate(CASES):
        for per_query in (False, True):
            shape = (B, m) if per_query else (B,)
            lens = random_lengths(*shape, high=n + 2, seed=seed, device=device)
            out = (B, 1, m if per_query else 1, n)
            mask = get_mask(valid_lens_to_mask, lens, m, n, out)
            ells = lens.tolist()
            expected = torch.tensor(
                [
                    [
                        [j < (ells[b][i] if per_query else ells[b]) for j in range(n)]
                        for i in range(out[2])
                    ]
                    for b in range(B)
                ],
                device=device,
            )
            expect_mask(mask, expected[:, None], f"valid_lens_to_mask({ells}, {m}, {n})")


def loop_attention(q, k, v, lens):
    """Attention query by query, softmax over keys j < lens[b][i] only, in float64."""
    B, h, m, d = q.shape
    out = torch.zeros(B, h, m, v.shape[-1], dtype=torch.float64)
    q, k, v = (t.detach().double().cpu() for t in (q, k, v))
    for b in range(B):
        for head in range(h):
            for i in range(m):
                n_valid = min(lens[b][i], k.shape[2])
                scores = [
                    float(q[b, head, i] @ k[b, head, j]) / math.sqrt(d) for j in range(n_valid)
                ]
                for j, weight in enumerate(softmax_list(scores) if scores else []):
                    out[b, head, i] += weight * v[b, head, j]
    return out


@check("valid_lens_to_mask.kernel", hidden=True)
def works_in_the_fused_kernel(valid_lens_to_mask, device):
    """Fed to SDPA with 3 heads (4-D inputs, the fused kernel), does the mask give attention over the valid keys only?"""
    B, h, m, n, d = 3, 3, 4, 6, 8
    q = random_tensor(B, h, m, d, seed=1, device=device)
    k = random_tensor(B, h, n, d, seed=2, device=device)
    v = random_tensor(B, h, n, 5, seed=3, device=device)
    for per_query in (False, True):
        shape = (B, m) if per_query else (B,)
        lens = random_lengths(*shape, low=1, high=n + 1, seed=4, device=device)
        mask = get_mask(valid_lens_to_mask, lens, m, n, (B, 1, m if per_query else 1, n))
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        ells = lens.tolist() if per_query else [[ell] * m for ell in lens.tolist()]
        expected = loop_attention(q, k, v, ells).to(device=device, dtype=out.dtype)
        expect_close(
            out,
            expected,
            tr("SDPA output with valid_lens_to_mask({lens}, {m}, {n})").format(
                lens=lens.tolist(), m=m, n=n
            ),
            atol=1e-4,
            labels=("batch", "head", "query"),
        )


@check("valid_lens_to_mask.values", hidden=True)
def mask_properties_hidden(valid_lens_to_mask, device):
    """Is valid_lens left unchanged (lengths beyond n too), and the mask made on its device, not the CPU?"""
    mask_contract(valid_lens_to_mask, device, seed=13, B=4, m=5, n=6)


# ------------------------------------------------ Check your understanding: the answers

WHY_NOT_10_1 = {
    "a": N_(
        "the fused kernel does the same 4Bhmnd FLOPs of the two products and computes every "
        "score once; what it saves is writing the (B, m, n) scores out and reading them back"
    ),
    "c": N_(
        "the online softmax is exact: the rescaling by exp(μ - μ') gives the same softmax, in "
        "another order, so the outputs agree to rounding (the chapter compares them to 1e-6)"
    ),
    "d": N_(
        "the comparison in this chapter runs every variant in float32; the gain comes from not "
        "writing and re-reading the (B, m, n) scores"
    ),
}


@check("quiz_10_1.key", hidden=True)
def quiz_10_1_key(answer, device):
    """Is the fused kernel faster for the reason the chapter measured?"""
    choice = expect_choice(answer(), "abcd", "answer_10_1")
    if choice != "b":
        raise CheckError(f"answer_10_1 = {choice!r}: {tr(WHY_NOT_10_1[choice])}")


@check("quiz_10_2.key", hidden=True)
def quiz_10_2_key(answer, device):
    """Is the mask of one length per sequence counted right (B = 8, h = 16, m = n = 1024)?"""
    got = expect_number(answer(), "answer_10_2")
    B, h, m, n = 8, 16, 1024, 1024
    # An independent construction: a (B, n) comparison, with the size-1 axes that let it
    # broadcast against the (B, h, m, n) scores; the count is that of its elements.
    lens = torch.randint(0, n + 1, (B,), generator=torch.Generator().manual_seed(0))
    mask = (torch.arange(n) < lens[:, None])[:, None, None, :]  # (B, 1, 1, n)
    assert torch.broadcast_shapes(mask.shape, (B, h, m, n)) == (B, h, m, n)
    if got != mask.numel():
        raise CheckError(
            tr(
                "answer_10_2 = {got:g} is not the number of booleans in the mask: the mask "
                "keeps an axis of size 1 wherever the lengths do not vary, and broadcasts over "
                "it"
            ).format(got=got)
        )


# ----------------------------------------------------------------- the property classes
# Which group tests each class of every graded target (checks._contract.properties);
# tests/test_properties.py proves each with a known-wrong answer that breaks it.

properties(
    "valid_lens_to_mask",
    float64="n/a: the mask is boolean and the lengths are integers",
    gradient="n/a: a boolean mask has no gradient",
    meta=("valid_lens_to_mask.values",),
    dropout="n/a: valid_lens_to_mask has no dropout",
    unchanged=("valid_lens_to_mask.values",),
)
