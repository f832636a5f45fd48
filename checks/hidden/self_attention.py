"""Hidden checks for the chapter "Self-attention and positional encoding".

References: an explicit loop over batch, queries and keys in float64 from the
module's own projection weights; the permutation property; the formula of the
positional encoding entry by entry with ``math``; and its algebraic properties.
"""

import math

import torch

from checks._core import (
    CheckError,
    check,
    expect_close,
    expect_tensor,
    random_lengths,
    random_tensor,
)
from checks.hidden.masking import per_query_lengths
from checks.masking import masked_rows
from checks.scoring import build
from checks.self_attention import (
    self_attend,
    self_attention_contract,
    self_attention_dropout_contract,
)


def loop_self_attention(module, X, valid_lens):
    """y_i = Σ_j softmax_j((W_q x_i + b_q)·(W_k x_j + b_k) / √D_Q) (W_v x_j + b_v), by loops."""

    def params(linear):
        w = linear.weight.detach().double().cpu()
        b = linear.bias.detach().double().cpu() if linear.bias is not None else torch.zeros(len(w))
        return w, b

    (Wq, bq), (Wk, bk), (Wv, bv) = params(module.W_q), params(module.W_k), params(module.W_v)
    x = X.detach().double().cpu()
    B, N = x.shape[0], x.shape[1]
    scale = math.sqrt(Wq.shape[0])
    scores = [
        [
            [float((Wq @ x[b, i] + bq) @ (Wk @ x[b, j] + bk)) / scale for j in range(N)]
            for i in range(N)
        ]
        for b in range(B)
    ]
    lens = [[N] * N] * B if valid_lens is None else per_query_lengths(valid_lens.cpu(), N)
    weights = torch.tensor(masked_rows(scores, lens), dtype=torch.float64)
    out = torch.zeros(B, N, Wv.shape[0], dtype=torch.float64)
    for b in range(B):
        for i in range(N):
            for j in range(N):
                out[b, i] += weights[b, i, j] * (Wv @ x[b, j] + bv)
    return weights, out


@check("SelfAttention.values", hidden=True)
def self_attention_matches_a_loop(SelfAttention, device):
    """Does it match an explicit loop for D_X ≠ D_Q ≠ D_V, with and without bias and valid_lens?"""
    for seed, (B, N, bias) in enumerate([(1, 1, False), (2, 4, False), (3, 5, True), (2, 7, True)]):
        module = build(SelfAttention, 5, 3, 4, 0.0, bias=bias, seed=seed, device=device)
        X = random_tensor(B, N, 5, seed=seed, device=device)
        for lens in (
            None,
            random_lengths(B, low=0, high=N, seed=seed, device=device),
            random_lengths(B, N, low=0, high=N + 1, seed=seed + 1, device=device),
        ):
            out, weights = self_attend(module, X, lens)
            ref_w, ref_out = loop_self_attention(module, X, lens)
            what = f"for B={B}, N={N}, bias={bias}, valid_lens={None if lens is None else lens.tolist()}"
            expect_close(
                weights,
                ref_w.float().to(device),
                f"attention_weights {what}",
                labels=("batch", "query"),
            )
            expect_close(
                out, ref_out.float().to(device), f"the output {what}", labels=("batch", "query")
            )


@check("SelfAttention.equivariance", hidden=True)
def permutation_equivariance(SelfAttention, device):
    """Is f(s(X)) = s(f(X)), with the weights permuted along both axes?"""
    module = build(SelfAttention, 6, 4, 5, 0.0, seed=3, device=device)
    X = random_tensor(2, 7, 6, seed=3, device=device)
    perm = torch.randperm(7, generator=torch.Generator().manual_seed(3)).to(device)
    out, weights = self_attend(module, X, None)
    out, weights = out.detach().clone(), weights.detach().clone()
    out_s, weights_s = self_attend(module, X[:, perm], None)
    expect_close(out_s, out[:, perm], "f(s(X)) against s(f(X))", labels=("batch", "position"))
    expect_close(
        weights_s,
        weights[:, perm][:, :, perm],
        "the weights of s(X) against A with rows and columns permuted",
        labels=("batch", "query"),
    )


@check("SelfAttention.dropout", hidden=True)
def self_attention_dropout(SelfAttention, device):
    """With dropout=1, is the output zero in training, and untouched in evaluation?"""
    module = build(SelfAttention, 4, 4, 3, 1.0, seed=4, device=device)
    X = random_tensor(2, 5, 4, seed=4, device=device)
    lens = torch.tensor([5, 2], device=device)
    eval_out, eval_w = self_attend(module.eval(), X, lens)
    values = X @ module.W_v.weight.detach().T
    expect_close(
        eval_out,
        torch.bmm(eval_w, values),
        "the output in eval mode with dropout=1 (dropout must be off)",
        labels=("batch", "query"),
    )
    train_out, _ = self_attend(module.train(), X, lens)
    module.eval()
    expect_close(
        train_out,
        torch.zeros_like(train_out),
        "the output in train mode with dropout=1 (every weight dropped)",
        labels=("batch", "query"),
    )


@check("SelfAttention.values", hidden=True)
def self_attention_properties_hidden(SelfAttention, device):
    """float64 in and out (equal to a float64 loop), gradients to W_q, W_k, W_v and X, X unchanged, no tensor made on the CPU?"""
    self_attention_contract(
        lambda dev: build(SelfAttention, 6, 2, 5, 0.0, bias=True, seed=9, device=dev),
        device,
        seed=9,
        B=3,
        N=5,
        D=6,
        reference=loop_self_attention,
    )


@check("SelfAttention.dropout", hidden=True)
def self_attention_dropout_statistics(SelfAttention, device):
    """With dropout=0.3 in training, is a fraction ≈ 0.3 of the weights zeroed and the rest divided by 0.7, once?"""
    self_attention_dropout_contract(SelfAttention, device, seed=10, B=8, N=8, p=0.3)


def formula(max_len, d):
    return torch.tensor(
        [
            [
                (math.sin if k % 2 == 0 else math.cos)(i / 10000 ** ((k - k % 2) / d))
                for k in range(d)
            ]
            for i in range(max_len)
        ],
        dtype=torch.float32,
    )


@check("positional_encoding.formula", hidden=True)
def matches_the_formula(positional_encoding, device):
    """Does P match sin(i/10000^(2j/d)), cos(i/10000^(2j/d)) entry by entry, for several sizes?"""
    for max_len, d in [(1, 2), (7, 2), (50, 8), (200, 32), (64, 6)]:
        P = positional_encoding(max_len, d)
        expect_tensor(
            P, f"positional_encoding({max_len}, {d})", shape=(max_len, d), dtype=torch.float32
        )
        expect_close(
            P.cpu(),
            formula(max_len, d),
            f"positional_encoding({max_len}, {d})",
            atol=1e-4,
            labels=("position",),
        )


@check("positional_encoding.properties", hidden=True)
def has_the_properties(positional_encoding, device):
    """Are entries in [-1, 1], sin² + cos² = 1 per pair, and P[i + δ] the rotation of P[i] by δω_j?"""
    max_len, d, delta = 120, 16, 5
    P = positional_encoding(max_len, d)
    expect_tensor(P, "positional_encoding(120, 16)", shape=(max_len, d), dtype=torch.float32)
    P = P.detach().double().cpu()
    if bool((P.abs() > 1 + 1e-6).any()):
        raise CheckError(f"every entry of P must lie in [-1, 1], found {P.abs().max().item():.4g}")
    expect_close(
        P[0], torch.tensor([0.0, 1.0] * (d // 2), dtype=torch.float64), "P[0] (sin 0, cos 0, …)"
    )
    expect_close(
        P[:, 0::2] ** 2 + P[:, 1::2] ** 2,
        torch.ones(max_len, d // 2, dtype=torch.float64),
        "sin² + cos² of each pair of columns",
        atol=1e-5,
        labels=("position",),
    )
    omega = torch.tensor([10000 ** (-2 * j / d) for j in range(d // 2)], dtype=torch.float64)
    c, s = torch.cos(delta * omega), torch.sin(delta * omega)
    sin_i, cos_i = P[:-delta, 0::2], P[:-delta, 1::2]
    rotated = torch.stack([c * sin_i + s * cos_i, -s * sin_i + c * cos_i], dim=-1).flatten(1)
    expect_close(
        P[delta:],
        rotated,
        f"P[i + {delta}] against P[i] rotated by {delta}ω_j",
        atol=1e-4,
        labels=("i",),
    )
