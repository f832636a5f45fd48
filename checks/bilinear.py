"""Visible checks for the chapter "Bilinear attention": Exercise 5.1 and its short questions.

Exercise 5.1 is ``LowRankBilinearAttention``: the bilinear score qᵀ W k with W stored
factorised, W = W_qᵀ W_k, and computed without ever forming the (d_q, d_k) matrix W.
"""

import torch

from checks._contract import largest_intermediate
from checks._core import check, softmax_list
from checks._errors import CheckError
from checks._expect import expect_choice, expect_close, expect_number, expect_tensor, shape_str
from checks._i18n import tr
from checks.scoring import attend, build, dropout_contract, module_contract

NAME = "LowRankBilinearAttention"


def set_factors(module, W_q, W_k):
    """Copy W_q (r, d_q) and W_k (r, d_k) into the module's two projections."""
    with torch.no_grad():
        module.W_q.weight.copy_(W_q)
        module.W_k.weight.copy_(W_k)


def expect_no_full_W(module, device, *, B, m, n, dq, dk, seed):
    """Call the module and fail if any tensor made inside has d_q · d_k numbers or more."""
    q = torch.randn(B, m, dq, generator=torch.Generator().manual_seed(seed)).to(device)
    k = torch.randn(B, n, dk, generator=torch.Generator().manual_seed(seed + 1)).to(device)
    v = torch.randn(B, n, 3, generator=torch.Generator().manual_seed(seed + 2)).to(device)
    with largest_intermediate() as watch:
        attend(module, q, k, v)
    numel, shape = watch.largest
    if numel >= dq * dk:
        raise CheckError(
            tr(
                "the forward made a tensor of shape {shape} ({numel} numbers) for "
                "queries of size d_q={dq}, keys of size d_k={dk} and rank r={r} "
                "(B={B}, m={m}, n={n}): at least the d_q·d_k = {full} numbers of the full W = "
                "W_qᵀ W_k that the factorised form exists to avoid. The exercise's hint shows "
                "where to look for another order of the products."
            ).format(
                shape=shape_str(shape),
                numel=numel,
                dq=dq,
                dk=dk,
                r=module.W_q.out_features,
                B=B,
                m=m,
                n=n,
                full=dq * dk,
            )
        )


@check(NAME)
def low_rank_shapes(LowRankBilinearAttention, device):
    """Do queries of size 3 and keys of size 5 work at rank 2, with rows summing to 1 and padding at 0?"""
    gen = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(*s, generator=gen).to(device) for s in [(2, 4, 3), (2, 6, 5), (2, 6, 7)])
    attention = build(LowRankBilinearAttention, 3, 5, 2, 0.0, device=device)
    expect_tensor(attention.W_q.weight, "W_q.weight", shape=(2, 3))
    expect_tensor(attention.W_k.weight, "W_k.weight", shape=(2, 5))
    _, weights = attend(attention, q, k, v, torch.tensor([6, 2], device=device))
    expect_close(
        weights.sum(-1),
        torch.ones(2, 4, device=device),
        tr("row sums of the weights"),
        labels=("batch",),
    )
    expect_close(
        weights[1, :, 2:],
        torch.zeros(4, 4, device=device),
        tr("weights of padded keys"),
        labels=("query",),
    )


@check(NAME)
def low_rank_small_example(LowRankBilinearAttention, device):
    """Is the score qᵀ W_qᵀ W_k k, unscaled? (W_q = [[1, 1], [0, 1]], W_k = [[1, 0, 1], [0, 1, 1]], q = (1, 2): keys e₁, e₂, e₃ score 3, 2, 5)"""
    attention = build(LowRankBilinearAttention, 2, 3, 2, 0.0, device=device)
    set_factors(
        attention,
        torch.tensor([[1.0, 1.0], [0.0, 1.0]]),
        torch.tensor([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]]),
    )
    queries = torch.tensor([[[1.0, 2.0]]], device=device)
    keys = torch.eye(3, device=device)[None]
    _, weights = attend(attention, queries, keys, keys)
    expect_close(
        weights,
        torch.tensor([[softmax_list([3.0, 2.0, 5.0])]], device=device),
        "attention_weights",
        labels=("batch", "query"),
    )


@check(NAME)
def low_rank_never_forms_W(LowRankBilinearAttention, device):
    """With d_q = d_k = 256 and r = 2, is no (d_q, d_k) matrix W = W_qᵀ W_k ever made?"""
    module = build(LowRankBilinearAttention, 256, 256, 2, 0.0, seed=4, device=device)
    expect_no_full_W(module, device, B=1, m=4, n=5, dq=256, dk=256, seed=4)


@check(NAME)
def low_rank_contract(LowRankBilinearAttention, device):
    """float64 in and out, gradients to W_q, W_k and every input, inputs unchanged, no tensor made on the CPU?"""
    module_contract(
        lambda dev: build(LowRankBilinearAttention, 3, 4, 2, 0.0, seed=15, device=dev),
        device,
        seed=15,
        B=2,
        m=3,
        n=4,
        dq=3,
        dk=4,
    )


@check(NAME)
def low_rank_dropout_half(LowRankBilinearAttention, device):
    """With dropout=0.5 in training, is a fraction ≈ 0.5 of the weights zeroed and the rest doubled, once?"""
    dropout_contract(
        lambda dev, p: build(LowRankBilinearAttention, 4, 4, 3, p, seed=16, device=dev),
        device,
        seed=16,
    )


# ----------------------------------------------------------------- check your understanding
# The form only (checks/_quiz.py says the rest); the hidden groups quiz_5_*.key grade.


@check("quiz_5_1")
def quiz_5_1_form(answer, device):
    """Is answer_5_1 one of the letters "a" to "d"?"""
    expect_choice(answer(), "abcd", "answer_5_1")


@check("quiz_5_2")
def quiz_5_2_form(answer, device):
    """Is answer_5_2 a whole number of at least 1?"""
    value = expect_number(answer(), "answer_5_2")
    if value != int(value) or value < 1:
        raise CheckError(
            tr("answer_5_2 should be a rank, a whole number of at least 1, got {value:g}").format(
                value=value
            )
        )


@check("quiz_5_3")
def quiz_5_3_form(answer, device):
    """Is answer_5_3 one of the letters "a" to "d"?"""
    expect_choice(answer(), "abcd", "answer_5_3")
