"""Hidden checks for the scoring-function chapters.

References: explicit loops over batch, queries and keys (in float64, from the
module's own parameters) and PyTorch's scaled_dot_product_attention. The hidden checks
of Exercises 3.1, 4.4 and 5.1 are in ``checks/hidden/additive.py``,
``checks/hidden/dot_product.py`` and ``checks/hidden/bilinear.py``.
"""

import torch

from checks._contract import largest_intermediate, properties
from checks._core import check, random_lengths, random_tensor
from checks._errors import CheckError
from checks._expect import expect_close, expect_tensor, shape_str
from checks._i18n import tr
from checks.hidden.masking import per_query_lengths
from checks.masking import masked_rows
from checks.scoring import (
    attend,
    call_scores,
    scores_contract,
)

CASES = [(1, 1, 1), (2, 3, 5), (3, 4, 2), (2, 6, 6)]  # (B, m, n)


def loop_attention(score, queries, keys, values, valid_lens):
    """weights[b, i, j] = masked softmax over j of score(q_bi, k_bj); out = Σ_j weights v_bj."""
    B, m, n = queries.shape[0], queries.shape[1], keys.shape[1]
    q, k, v = (t.detach().double().cpu() for t in (queries, keys, values))
    scores = [
        [[float(score(q[b, i], k[b, j])) for j in range(n)] for i in range(m)] for b in range(B)
    ]
    lens = [[n] * m] * B if valid_lens is None else per_query_lengths(valid_lens.cpu(), m)
    weights = torch.tensor(masked_rows(scores, lens), dtype=torch.float64)
    out = torch.zeros(B, m, v.shape[-1], dtype=torch.float64)
    for b in range(B):
        for i in range(m):
            for j in range(n):
                out[b, i] += weights[b, i, j] * v[b, j]
    return weights, out


def lengths_for(b, m, n, seed, device):
    yield None
    yield random_lengths(b, low=0, high=n, seed=seed, device=device)
    yield random_lengths(b, m, low=0, high=n + 1, seed=seed + 1, device=device)


def compare_with_loop(module, score, dq, dk, device, dv=3):
    for seed, (b, m, n) in enumerate(CASES):
        q = random_tensor(b, m, dq, seed=seed, device=device)
        k = random_tensor(b, n, dk, seed=seed + 50, device=device)
        v = random_tensor(b, n, dv, seed=seed + 99, device=device)
        for lens in lengths_for(b, m, n, seed, device):
            out, weights = attend(module, q, k, v, lens)
            ref_w, ref_out = loop_attention(score, q, k, v, lens)
            what = tr("for B={b}, m={m}, n={n}, valid_lens={lens}").format(
                b=b, m=m, n=n, lens=None if lens is None else lens.tolist()
            )
            expect_close(
                weights,
                ref_w.float().to(device),
                f"attention_weights {what}",
                labels=("batch", "query"),
            )
            expect_close(
                out,
                ref_out.float().to(device),
                tr("the output {what}").format(what=what),
                labels=("batch", "query"),
            )


def check_dropout(module_with_p1, q, k, v, lens):
    """p = 1 drops every weight in training and none in evaluation."""
    module = module_with_p1
    eval_out, eval_w = attend(module.eval(), q, k, v, lens)
    expected = torch.bmm(eval_w, v)
    expect_close(
        eval_out,
        expected,
        tr("the output in eval mode with dropout=1 (dropout must be off)"),
        labels=("batch", "query"),
    )
    train_out, train_w = attend(module.train(), q, k, v, lens)
    module.eval()
    expect_close(
        train_out,
        torch.zeros_like(train_out),
        tr("the output in train mode with dropout=1 (every weight dropped)"),
        labels=("batch", "query"),
    )
    expect_close(
        train_w,
        eval_w,
        tr("attention_weights in train mode (stored before dropout)"),
        labels=("batch", "query"),
    )


# ----------------------------------------------------------------- the exercises on scores


@check("sum_scores.values", hidden=True)
def sum_scores_matches_a_loop(sum_scores, device):
    """Does wᵀq + wᵀk match an explicit loop for random shapes?"""
    for seed, (b, m, n) in enumerate(CASES):
        q, k = (
            random_tensor(b, m, 4, seed=seed, device=device),
            random_tensor(b, n, 4, seed=seed + 9, device=device),
        )
        w = random_tensor(4, seed=seed + 20, device=device)
        ref = torch.tensor(
            [
                [[(w @ q[x, i] + w @ k[x, j]).item() for j in range(n)] for i in range(m)]
                for x in range(b)
            ],
            device=device,
        )
        expect_close(
            sum_scores(q, k, w),
            ref,
            tr("sum_scores for B={b}, m={m}, n={n}").format(b=b, m=m, n=n),
            labels=("batch", "query"),
        )


@check("vector_sum_finding", hidden=True)
def finding(answer, device):
    """Did you find that every query gets the same weights?"""
    if answer() is not True:
        raise CheckError(
            tr(
                "with score wᵀq + wᵀk, the query term is the same for every key of a row, so "
                "it cancels in the softmax"
            )
        )


@check("distance_scores.values", hidden=True)
def distance_matches_a_loop(distance_scores, device):
    """Does -‖q - k‖²/2 match an explicit loop for random shapes?"""
    for seed, (b, m, n) in enumerate(CASES):
        q, k = (
            random_tensor(b, m, 5, seed=seed, device=device),
            random_tensor(b, n, 5, seed=seed + 9, device=device),
        )
        ref = torch.tensor(
            [
                [[-((q[x, i] - k[x, j]) ** 2).sum().item() / 2 for j in range(n)] for i in range(m)]
                for x in range(b)
            ],
            device=device,
        )
        expect_close(
            distance_scores(q, k),
            ref,
            tr("distance_scores for B={b}, m={m}, n={n}").format(b=b, m=m, n=n),
            labels=("batch", "query"),
            atol=1e-4,
        )


@check("distance_scores.kernel", hidden=True)
def distance_is_the_gaussian_kernel(distance_scores, device):
    """In one dimension, are its softmax weights the Nadaraya–Watson weights with σ = 1?"""
    q, k = (
        random_tensor(1, 6, 1, seed=30, device=device, scale=2.0),
        random_tensor(1, 9, 1, seed=31, device=device, scale=2.0),
    )
    scores = distance_scores(q, k)
    expect_tensor(scores, "distance_scores in 1-D", shape=(1, 6, 9), device=device)
    weights = torch.softmax(scores, dim=-1)[0]
    from checks.hidden.pooling import loop_reference

    _, expected = loop_reference(q[0, :, 0].cpu(), k[0, :, 0].cpu(), torch.zeros(9), 1.0)
    expect_close(
        weights, expected.float().to(device), "softmax(distance_scores) in 1-D", labels=("query",)
    )


# ----------------------------------------------------------------- properties of every answer
# float64 against a float64 loop, gradients, inputs unchanged, nothing made on the CPU, and
# dropout with 0 < p < 1; with m ≠ n, d_q ≠ d_k ≠ v and B > 1.


def loop_reference(score_of):
    return lambda module, q, k, v, lens: loop_attention(score_of(module), q, k, v, lens)


def loop_sum_scores(q, k, w):
    q, k, w = (t.detach().double().cpu() for t in (q, k, w))
    B, m, n = q.shape[0], q.shape[1], k.shape[1]
    return torch.tensor(
        [
            [[float(w @ q[b, i] + w @ k[b, j]) for j in range(n)] for i in range(m)]
            for b in range(B)
        ],
        dtype=torch.float64,
    )


def loop_distance_scores(q, k, w=None):
    q, k = (t.detach().double().cpu() for t in (q, k))
    B, m, n = q.shape[0], q.shape[1], k.shape[1]
    return torch.tensor(
        [
            [[-float(((q[b, i] - k[b, j]) ** 2).sum()) / 2 for j in range(n)] for i in range(m)]
            for b in range(B)
        ],
        dtype=torch.float64,
    )


@check("sum_scores.values", hidden=True)
def sum_scores_contract_hidden(sum_scores, device):
    """float64 in and out (equal to a float64 loop), gradients to queries, keys and w, inputs unchanged, no tensor made on the CPU?"""
    scores_contract(
        sum_scores, device, seed=27, B=3, m=4, n=6, d=5, with_w=True, reference=loop_sum_scores
    )


@check("distance_scores.values", hidden=True)
def distance_contract_hidden(distance_scores, device):
    """float64 in and out (equal to a float64 loop), gradients to queries and keys, inputs unchanged, no tensor made on the CPU?"""
    scores_contract(
        distance_scores,
        device,
        seed=28,
        B=3,
        m=4,
        n=6,
        d=5,
        with_w=False,
        reference=loop_distance_scores,
    )


@check("distance_scores.values", hidden=True)
def distance_without_differences(distance_scores, device):
    """Is no (B, m, n, d) tensor of differences made (matrix products only, as the exercise says)?"""
    B, m, n, d = 2, 6, 7, 16
    q = random_tensor(B, m, d, seed=29, device=device)
    k = random_tensor(B, n, d, seed=30, device=device)
    with largest_intermediate() as watch:
        call_scores(distance_scores, q, k)
    numel, shape = watch.largest
    if numel >= B * m * n * d:
        raise CheckError(
            tr(
                "distance_scores made a tensor of shape {shape} ({numel} numbers) for B={B}, "
                "m={m}, n={n}, d={d}: the (B, m, n, d) tensor of differences that the exercise "
                "rules out. Use ‖q‖² - 2 qᵀk + ‖k‖² (matrix products only)."
            ).format(shape=shape_str(shape), numel=numel, B=B, m=m, n=n, d=d)
        )


# ----------------------------------------------------------------- the property classes
# Which group tests each class of every graded target (checks._contract.properties);
# tests/test_properties.py proves each with a known-wrong answer that breaks it.

properties(
    "sum_scores",
    float64=("sum_scores.values",),
    gradient=("sum_scores.values",),
    meta=("sum_scores.values",),
    dropout="n/a: a score function has no dropout",
    unchanged=("sum_scores.values",),
)
properties(
    "distance_scores",
    float64=("distance_scores.values",),
    gradient=("distance_scores.values",),
    meta=("distance_scores.values",),
    dropout="n/a: a score function has no dropout",
    unchanged=("distance_scores.values",),
)
