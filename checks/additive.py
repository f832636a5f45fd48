"""Visible checks for the chapter "Additive attention": Exercise 3.1 and its questions.

Exercise 3.1 is ``ConcatAttention``: additive attention written as one hidden layer on the
concatenation [q; k], computed without ever concatenating every query with every key.
The attention helpers (``attend``, ``build``, the float64/gradient/device and dropout
contracts) are the scoring chapters' own, from :mod:`checks.scoring`.
"""

import math

import torch

from checks._contract import largest_intermediate
from checks._core import check, random_tensor, softmax_list
from checks._errors import CheckError
from checks._expect import expect_choice, expect_close, expect_number, shape_str
from checks._i18n import tr
from checks.scoring import (
    attend,
    build,
    dropout_contract,
    identical_keys_example,
    module_contract,
)


def expect_no_concatenation(module, B, m, n, dq, dk, h, *, seed, device):
    """The largest tensor the forward makes must be smaller than the (B, m, n, d_q + d_k) pairs.

    The sizes must have d_q + d_k > h and m, n >= 2, so that the reference's largest
    tensors, (B, m, n, h) and (B, m, n), stay below the bound.
    """
    assert dq + dk > h and m >= 2 and n >= 2, "the check needs d_q + d_k > h and m, n >= 2"
    q = random_tensor(B, m, dq, seed=seed, device=device)
    k = random_tensor(B, n, dk, seed=seed + 1, device=device)
    v = random_tensor(B, n, 3, seed=seed + 2, device=device)
    with largest_intermediate() as watch:
        attend(module, q, k, v)
    numel, shape = watch.largest
    bound = B * m * n * (dq + dk)
    if numel >= bound:
        raise CheckError(
            tr(
                "the forward on B={B}, m={m}, n={n}, queries of size {dq}, keys {dk}, "
                "num_hiddens {h} made a tensor of shape {shape} ({numel} numbers), "
                "as large as the (B, m, n, d_q + d_k) = {pairs} tensor of "
                "every query concatenated with every key, which the exercise rules out. The "
                "exercise's hint shows where to look for a way around it."
            ).format(
                B=B,
                m=m,
                n=n,
                dq=dq,
                dk=dk,
                h=h,
                shape=shape_str(shape),
                numel=numel,
                pairs=shape_str((B, m, n, dq + dk)),
            )
        )


def concat_score(W, b, w_v, q, k) -> float:
    """w_vᵀ tanh(W [q; k] + b) for one query and one key, from Python lists."""
    x = list(q) + list(k)
    hidden = [math.tanh(sum(wij * xj for wij, xj in zip(row, x)) + bi) for row, bi in zip(W, b)]
    return sum(wi * hi for wi, hi in zip(w_v, hidden))


@check("ConcatAttention")
def concat_identical_keys(ConcatAttention, device):
    """With identical keys, is the output the mean of the valid values (d2l's toy example)?"""
    queries, keys, values, valid_lens, expected = identical_keys_example(device)
    attention = build(ConcatAttention, 2, 20, 8, 0.1, device=device)
    out, weights = attend(attention, queries, keys, values, valid_lens)
    expect_close(out, expected, tr("the output"), labels=("batch", "query"))
    expect_close(
        weights[:, 0, 6:],
        torch.zeros(2, 4, device=device),
        tr("weights of padded keys"),
        labels=("batch",),
    )


# A worked example small enough to do by hand: queries of size 2, keys of size 1, h = 2.
# The first hidden unit sees q₁ - k, the second q₂ + k; the bias is (0.5, -0.5).
SMALL_W = [[1.0, 0.0, -1.0], [0.0, 1.0, 1.0]]
SMALL_B = [0.5, -0.5]
SMALL_WV = [1.0, 2.0]
SMALL_Q = [[1.0, 0.0], [0.0, -1.0]]
SMALL_K = [[0.0], [1.0], [2.0]]


@check("ConcatAttention")
def concat_small_example(ConcatAttention, device):
    """Is the score w_vᵀ tanh(W [q; k] + b), with the query first? (a worked example: W = [[1, 0, -1], [0, 1, 1]], b = (0.5, -0.5), w_v = (1, 2))"""
    attention = build(ConcatAttention, 1, 2, 2, 0.0, device=device)
    with torch.no_grad():
        attention.W.weight.copy_(torch.tensor(SMALL_W))
        attention.W.bias.copy_(torch.tensor(SMALL_B))
        attention.w_v.weight.copy_(torch.tensor([SMALL_WV]))
    queries = torch.tensor([SMALL_Q], device=device)  # (1, 2, 2)
    keys = torch.tensor([SMALL_K], device=device)  # (1, 3, 1)
    _, weights = attend(attention, queries, keys, keys)
    rows = [
        softmax_list([concat_score(SMALL_W, SMALL_B, SMALL_WV, q, k) for k in SMALL_K])
        for q in SMALL_Q
    ]
    expect_close(
        weights,
        torch.tensor([rows], device=device),
        tr("attention_weights in the worked example"),
        labels=("batch", "query"),
    )


@check("ConcatAttention")
def concat_without_every_pair(ConcatAttention, device):
    """Is no (B, m, n, d_q + d_k) tensor of concatenated pairs made (queries of size 6, keys 10, h = 4)?"""
    module = build(ConcatAttention, 10, 6, 4, 0.0, seed=31, device=device)
    expect_no_concatenation(module, 2, 3, 4, 6, 10, 4, seed=31, device=device)


@check("ConcatAttention")
def concat_contract(ConcatAttention, device):
    """float64 in and out, gradients to W, its bias, w_v and every input, inputs unchanged, no tensor made on the CPU?"""
    module_contract(
        lambda dev: build(ConcatAttention, 4, 3, 6, 0.0, seed=32, device=dev),
        device,
        seed=32,
        B=2,
        m=3,
        n=4,
        dq=3,
        dk=4,
    )


@check("ConcatAttention")
def concat_dropout_half(ConcatAttention, device):
    """With dropout=0.5 in training, is a fraction ≈ 0.5 of the weights zeroed and the rest doubled, once?"""
    dropout_contract(
        lambda dev, p: build(ConcatAttention, 4, 4, 6, p, seed=33, device=dev), device, seed=33
    )


# ----------------------------------------------------------------- Check your understanding
# The form only: checks/_quiz.py then says right or wrong (self-study) or "recorded"
# (graded); the hidden groups quiz_3_*.key grade the answers.


@check("quiz_3_1")
def quiz_3_1_form(answer, device):
    """Is answer_3_1 one of the letters "a" to "d"?"""
    expect_choice(answer(), "abcd", "answer_3_1")


@check("quiz_3_2")
def quiz_3_2_form(answer, device):
    """Is answer_3_2 one of the letters "a" to "d"?"""
    expect_choice(answer(), "abcd", "answer_3_2")


@check("quiz_3_3")
def quiz_3_3_form(answer, device):
    """Is answer_3_3 a whole number?"""
    value = expect_number(answer(), "answer_3_3")
    if value != int(value) or value < 0:
        raise CheckError(
            tr("answer_3_3 counts parameters: a whole number ≥ 0, got {value!r}").format(
                value=value
            )
        )
