"""Hidden checks for the chapter "Bilinear attention": Exercise 5.1 and its short questions.

References, none of them the solution: an explicit float64 loop over batch, queries and
keys of (W_q q)·(W_k k) from the module's own parameters; PyTorch's
scaled_dot_product_attention on qᵀW with the full W = W_qᵀ W_k formed here (scale 1, the
bilinear identity); a property of every rank-r score (once each row's constant is removed,
log-weights of rank at most r); parameter counts of torch.nn.Linear; matrix_rank.
"""

import torch
import torch.nn.functional as F
from torch import nn

from checks._contract import properties
from checks._core import check, random_tensor
from checks._errors import CheckError
from checks._expect import expect_choice, expect_close, expect_number
from checks._i18n import tr
from checks.bilinear import expect_no_full_W
from checks.hidden.scoring import check_dropout, compare_with_loop, loop_attention
from checks.scoring import attend, build, dropout_contract, module_contract

NAME = "LowRankBilinearAttention"


def factors(module):
    """W_q (r, d_q) and W_k (r, d_k) of the module, in float64 on the CPU."""
    return (p.detach().cpu().double() for p in (module.W_q.weight, module.W_k.weight))


def low_rank_score(module):
    A, B = factors(module)
    return lambda q, k: float((A @ q) @ (B @ k))


@check(f"{NAME}.values", hidden=True)
def low_rank_matches_a_loop(LowRankBilinearAttention, device):
    """Does qᵀ W_qᵀ W_k k match an explicit loop, with d_q ≠ d_k and 1-D, 2-D or no valid_lens?"""
    module = build(LowRankBilinearAttention, 3, 5, 2, 0.0, seed=6, device=device)
    compare_with_loop(module, low_rank_score(module), dq=3, dk=5, device=device)


@check(f"{NAME}.values", hidden=True)
def low_rank_is_bilinear(LowRankBilinearAttention, device):
    """Is it bilinear attention with W = W_qᵀ W_k (scaled_dot_product_attention on qᵀW, scale 1)?"""
    dq, dk, r = 6, 4, 3
    module = build(LowRankBilinearAttention, dq, dk, r, 0.0, seed=7, device=device)
    q = random_tensor(2, 5, dq, seed=40, device=device)
    k = random_tensor(2, 7, dk, seed=41, device=device)
    v = random_tensor(2, 7, 3, seed=42, device=device)
    lens = torch.tensor([[7, 1, 0, 3, 5], [2, 2, 7, 6, 4]], device=device)
    mask = torch.arange(7, device=device) < lens[..., None]
    W = module.W_q.weight.detach().T @ module.W_k.weight.detach()  # (d_q, d_k)
    expected = F.scaled_dot_product_attention(q @ W, k, v, attn_mask=mask, scale=1.0)
    out, _ = attend(module, q, k, v, lens)
    expect_close(
        out,
        expected,
        tr("the output against bilinear attention with W = W_qᵀ W_k"),
        labels=("batch", "query"),
        atol=1e-4,
    )


@check(f"{NAME}.values", hidden=True)
def low_rank_contract_hidden(LowRankBilinearAttention, device):
    """float64 in and out (equal to a float64 loop), gradients to W_q, W_k and every input, inputs unchanged, no tensor made on the CPU?"""
    module_contract(
        lambda dev: build(LowRankBilinearAttention, 4, 6, 3, 0.0, seed=25, device=dev),
        device,
        seed=25,
        B=3,
        m=5,
        n=3,
        dq=4,
        dk=6,
        dv=2,
        reference=lambda module, q, k, v, lens: loop_attention(
            low_rank_score(module), q, k, v, lens
        ),
    )


@check(f"{NAME}.factorised", hidden=True)
def low_rank_scores_have_rank_r(LowRankBilinearAttention, device):
    """Once each row's constant is removed, do the log-weights of every example have rank ≤ r?"""
    dq, dk, r, m, n = 8, 9, 2, 7, 6
    module = build(LowRankBilinearAttention, dq, dk, r, 0.0, seed=8, device=device)
    q = random_tensor(3, m, dq, seed=43, device=device, scale=0.5)
    k = random_tensor(3, n, dk, seed=44, device=device, scale=0.5)
    _, weights = attend(module, q, k, random_tensor(3, n, 2, seed=45, device=device))
    # softmax shifts each row by a constant: log w = S - c 1ᵀ; centring the rows removes c
    logs = weights.detach().cpu().double().log()
    centred = logs - logs.mean(-1, keepdim=True)  # = S (I - 11ᵀ/n): rank ≤ rank S ≤ r
    for b in range(3):
        sv = torch.linalg.svdvals(centred[b])  # descending
        if sv[r] > 1e-4 * sv[0]:  # float32 rounding leaves about 1e-7 of sv[0]
            rank = int((sv > 1e-4 * sv[0]).sum())
            raise CheckError(
                tr(
                    "the scores of example {b} (queries of size {dq}, keys {dk}, r={r}, m={m}, "
                    "n={n}) have rank {rank} (singular value {index} is {value:.3g}, the "
                    "largest {largest:.3g}), expected at most r={r}: a score that passes "
                    "through the two projections to {r} numbers compares queries and keys in at "
                    "most {r} directions"
                ).format(
                    b=b,
                    dq=dq,
                    dk=dk,
                    r=r,
                    m=m,
                    n=n,
                    rank=rank,
                    index=r + 1,
                    value=sv[r].item(),
                    largest=sv[0].item(),
                )
            )


@check(f"{NAME}.factorised", hidden=True)
def low_rank_never_forms_W_hidden(LowRankBilinearAttention, device):
    """With d_q = 300, d_k = 200 and r = 3, and batches, is no (d_q, d_k) matrix ever made?"""
    module = build(LowRankBilinearAttention, 300, 200, 3, 0.0, seed=9, device=device)
    expect_no_full_W(module, device, B=2, m=6, n=5, dq=300, dk=200, seed=9)


@check(f"{NAME}.dropout", hidden=True)
def low_rank_dropout(LowRankBilinearAttention, device):
    """Is dropout applied to the weights in training only, with attention_weights kept before it?"""
    q, k, v = (random_tensor(2, s, 4, seed=s, device=device) for s in (3, 5, 5))
    check_dropout(
        build(LowRankBilinearAttention, 4, 4, 2, 1.0, device=device),
        q,
        k,
        v,
        torch.tensor([5, 2], device=device),
    )


@check(f"{NAME}.dropout", hidden=True)
def low_rank_dropout_statistics(LowRankBilinearAttention, device):
    """With dropout=0.3 in training, is a fraction ≈ 0.3 of the weights zeroed and the rest divided by 0.7, once?"""
    dropout_contract(
        lambda dev, p: build(LowRankBilinearAttention, 3, 5, 2, p, seed=26, device=dev),
        device,
        seed=26,
        B=6,
        m=7,
        n=9,
        dq=3,
        dk=5,
        p=0.3,
    )


# ----------------------------------------------------------------- check your understanding
# A question's test cell runs its visible and its hidden group, and the book shows that cell's
# output: so the questions (docstrings) here say nothing of the answer; the messages may.


@check("quiz_5_1.key", hidden=True)
def quiz_5_1_key(answer, device):
    """Is the answer to question 5.1 right?"""
    if expect_choice(answer(), "abcd", "answer_5_1") != "b":
        raise CheckError(
            tr(
                "softmax is unchanged by adding a constant to a row, not by multiplying it: W "
                "= 10 I multiplies every score by 10 (dot-product attention with d = 100 "
                "divides it by 10), a temperature of 1/10, so each row of weights moves "
                "towards a one-hot on its largest score"
            )
        )


@check("quiz_5_2.key", hidden=True)
def quiz_5_2_key(answer, device):
    """Is the answer to question 5.2 right?"""
    value = expect_number(answer(), "answer_5_2")
    full = nn.Linear(64, 64, bias=False).weight.numel()
    equal = [
        r
        for r in range(1, 65)
        if sum(nn.Linear(64, r, bias=False).weight.numel() for _ in range(2)) == full
    ]
    if value != equal[0]:
        raise CheckError(
            tr(
                "answer_5_2 is {value:g}: the factors W_q and W_k hold r·(d_q + d_k) numbers "
                "and W holds d_q·d_k = {full}, equal at r = d_q·d_k / (d_q + d_k)"
            ).format(value=value, full=full)
        )


@check("quiz_5_3.key", hidden=True)
def quiz_5_3_key(answer, device):
    """Is the answer to question 5.3 right?"""
    options = {"a": 1, "b": 3, "c": 5, "d": 15}
    W = torch.randn(3, 5, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    rank = int(torch.linalg.matrix_rank(W))  # a random W has the largest rank a (3, 5) can have
    key = next(letter for letter, r in options.items() if r == rank)
    if expect_choice(answer(), "abcd", "answer_5_3") != key:
        raise CheckError(
            tr(
                "W_qᵀ W_k has rank at most r, and a (3, 5) matrix has rank at most min(3, 5) = "
                "3: rank 3 already reaches every W, and more adds parameters but no new score"
            )
        )


# ----------------------------------------------------------------- the property classes
# Which group tests each class of every graded target (checks._contract.properties);
# tests/test_properties.py proves each with a known-wrong answer that breaks it.

properties(
    NAME,
    float64=(f"{NAME}.values",),
    gradient=(f"{NAME}.values",),
    meta=(f"{NAME}.values",),
    dropout=(f"{NAME}.dropout",),
    unchanged=(f"{NAME}.values",),
)
