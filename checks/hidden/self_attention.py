"""Hidden checks for the chapter "Self-attention and positional encoding".

References: an explicit loop over batch, queries and keys in float64 from the
module's own projection weights and bias table; PyTorch's
``scaled_dot_product_attention`` with the bias as a float mask; the properties of a
relative bias (copying the previous item, shared far offsets, gradients only to the
offsets that occur); the formula of the positional encoding entry by entry with
``math``, and its algebraic properties; the keys of the chapter's questions.

Why one module: the grader's checks of one chapter notebook (its visible checks are
checks/self_attention.py; a release drops ``checks/hidden/``): the relative-bias attention
module against a loop and SDPA, the positional encoding against its formula, and the keys of
the chapter's three questions.
"""

import math

import torch
import torch.nn.functional as F

from checks._contract import properties
from checks._core import check, random_lengths, random_tensor
from checks._errors import CheckError
from checks._expect import expect_choice, expect_close, expect_number, expect_tensor
from checks._i18n import tr
from checks.hidden.masking import per_query_lengths
from checks.masking import masked_rows
from checks.self_attention import (
    clipped,
    relative_module,
    self_attend,
    self_attention_contract,
    self_attention_dropout_contract,
)


def _params(linear):
    w = linear.weight.detach().double().cpu()
    b = linear.bias.detach().double().cpu() if linear.bias is not None else torch.zeros(len(w))
    return w, b


def loop_relative_attention(module, X, valid_lens):
    """y_i = Σ_j softmax_j(q_i·k_j / √D_Q + b[K + clip(j - i, -K, K)]) v_j, by loops."""
    (Wq, bq), (Wk, bk), (Wv, bv) = _params(module.W_q), _params(module.W_k), _params(module.W_v)
    table = module.relative_bias.detach().double().cpu().tolist()
    K = (len(table) - 1) // 2
    x = X.detach().double().cpu()
    B, N = x.shape[0], x.shape[1]
    scale = math.sqrt(Wq.shape[0])
    scores = [
        [
            [
                float((Wq @ x[b, i] + bq) @ (Wk @ x[b, j] + bk)) / scale + table[clipped(j, i, K)]
                for j in range(N)
            ]
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


@check("RelativeSelfAttention.values", hidden=True)
def relative_attention_matches_a_loop(RelativeSelfAttention, device):
    """Does it match an explicit loop for D_X ≠ D_Q ≠ D_V, N below and above K + 1, with and without bias and valid_lens?"""
    configs = [
        (1, 1, 0, False),
        (2, 4, 1, False),
        (3, 5, 3, True),
        (2, 7, 2, True),
        (1, 3, 5, False),
    ]
    for seed, (B, N, K, bias) in enumerate(configs):
        module = relative_module(
            RelativeSelfAttention, 5, 3, 4, K, bias=bias, seed=seed, device=device
        )
        X = random_tensor(B, N, 5, seed=seed, device=device)
        for lens in (
            None,
            random_lengths(B, low=0, high=N, seed=seed, device=device),
            random_lengths(B, N, low=0, high=N + 1, seed=seed + 1, device=device),
        ):
            out, weights = self_attend(module, X, lens)
            ref_w, ref_out = loop_relative_attention(module, X, lens)
            what = tr("for B={B}, N={N}, max_distance={K}, bias={bias}, valid_lens={lens}").format(
                B=B, N=N, K=K, bias=bias, lens=None if lens is None else lens.tolist()
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


@check("RelativeSelfAttention.values", hidden=True)
def relative_attention_matches_sdpa(RelativeSelfAttention, device):
    """Is the output torch's scaled_dot_product_attention with the bias table, -inf on padded keys, as a float mask?"""
    B, N, K = 3, 9, 3
    module = relative_module(RelativeSelfAttention, 6, 4, 5, K, bias=True, seed=11, device=device)
    X = random_tensor(B, N, 6, seed=11, device=device)
    lens = random_lengths(B, low=1, high=N, seed=11, device=device)
    out, _ = self_attend(module, X, lens)
    table = module.relative_bias.detach().cpu().tolist()
    mask = torch.tensor(
        [
            [[table[clipped(j, i, K)] if j < n else -math.inf for j in range(N)] for i in range(N)]
            for n in lens.tolist()
        ]
    ).to(device)
    with torch.no_grad():
        q, k, v = (F.linear(X, m.weight, m.bias) for m in (module.W_q, module.W_k, module.W_v))
        expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    expect_close(
        out,
        expected,
        tr(
            "the output against scaled_dot_product_attention (B={B}, N={N}, max_distance={K}, "
            "valid_lens {lens})"
        ).format(B=B, N=N, K=K, lens=lens.tolist()),
        labels=("batch", "query"),
    )


@check("RelativeSelfAttention.values", hidden=True)
def relative_attention_properties_hidden(RelativeSelfAttention, device):
    """float64 in and out (equal to a float64 loop), gradients to relative_bias, W_q, W_k, W_v and X, X unchanged, no tensor made on the CPU?"""
    self_attention_contract(
        lambda dev: relative_module(
            RelativeSelfAttention, 6, 2, 5, 1, bias=True, seed=9, device=dev
        ),
        device,
        seed=9,
        B=3,
        N=5,
        D=6,
        reference=loop_relative_attention,
    )


@check("RelativeSelfAttention.positions", hidden=True)
def a_large_bias_copies_the_previous_item(RelativeSelfAttention, device):
    """With W_q = 0 and a bias of 30 on offset -1 only, does each item but the first output the value of the item before it?"""
    B, N, K = 2, 6, 2
    module = relative_module(RelativeSelfAttention, 5, 3, 4, K, seed=12, device=device)
    with torch.no_grad():
        module.W_q.weight.zero_()
        module.relative_bias.zero_()
        module.relative_bias[K - 1] = 30.0
    X = random_tensor(B, N, 5, seed=12, device=device)
    out, _ = self_attend(module, X)
    values = X @ module.W_v.weight.detach().T  # (B, N, D_V)
    expect_close(
        out[:, 1:],
        values[:, :-1],
        tr(
            "the output of items 1 to 5 with a bias of 30 on offset -1 (each should copy the "
            "value of the item before it)"
        ),
        atol=1e-4,
        labels=("batch", "item - 1"),
    )


@check("RelativeSelfAttention.positions", hidden=True)
def far_offsets_share_one_bias(RelativeSelfAttention, device):
    """With W_q = 0 and max_distance=1, does each query give equal weights to all keys two or more positions before it, and to all two or more after it?"""
    N, K = 7, 1
    module = relative_module(RelativeSelfAttention, 5, 3, 4, K, seed=13, device=device)
    with torch.no_grad():
        module.W_q.weight.zero_()
    X = random_tensor(1, N, 5, seed=13, device=device)
    _, weights = self_attend(module, X)
    w = weights.detach()[0]
    for i in range(N):
        for side, js in ((tr("before"), range(0, i - 1)), (tr("after"), range(i + 2, N))):
            js = list(js)
            if len(js) > 1:
                expect_close(
                    w[i, js],
                    w[i, js[:1]].expand(len(js)),
                    tr(
                        "the weights of query {i} on keys {js} (all more than 1 position "
                        "{side} it, so one bias)"
                    ).format(i=i, js=js, side=side),
                )


@check("RelativeSelfAttention.positions", hidden=True)
def gradients_only_to_offsets_that_occur(RelativeSelfAttention, device):
    """For N=3 and max_distance=4, do entries 2 to 6 of relative_bias (offsets -2 to 2) get a gradient, and the others none?"""
    N, K = 3, 4
    module = relative_module(RelativeSelfAttention, 5, 3, 4, K, seed=14, device=device)
    X = random_tensor(2, N, 5, seed=14, device=device)
    out, _ = self_attend(module, X)
    if not out.requires_grad:
        raise CheckError(tr("the output does not require grad: is relative_bias detached?"))
    direction = random_tensor(*out.shape, seed=15, device=device)
    module.relative_bias.grad = None
    (out * direction).sum().backward()
    grad = module.relative_bias.grad
    if grad is None:
        raise CheckError(tr("no gradient reached relative_bias (N=3, max_distance=4)"))
    got = [k for k, g in enumerate(grad.abs().cpu().tolist()) if g > 0]
    expected = [K + d for d in range(-(N - 1), N)]
    if got != expected:
        raise CheckError(
            tr(
                "for N={N} and max_distance={K} the offsets -2 to 2 occur, so entries "
                "{expected} of relative_bias should get a gradient and no others; entries "
                "{got} got one"
            ).format(N=N, K=K, expected=expected, got=got)
        )


@check("RelativeSelfAttention.dropout", hidden=True)
def relative_attention_dropout(RelativeSelfAttention, device):
    """With dropout=1, is the output zero in training, and untouched in evaluation?"""
    module = relative_module(RelativeSelfAttention, 4, 4, 3, 2, 1.0, seed=4, device=device)
    X = random_tensor(2, 5, 4, seed=4, device=device)
    lens = torch.tensor([5, 2], device=device)
    eval_out, eval_w = self_attend(module.eval(), X, lens)
    values = X @ module.W_v.weight.detach().T
    expect_close(
        eval_out,
        torch.bmm(eval_w, values),
        tr("the output in eval mode with dropout=1 (dropout must be off)"),
        labels=("batch", "query"),
    )
    train_out, _ = self_attend(module.train(), X, lens)
    module.eval()
    expect_close(
        train_out,
        torch.zeros_like(train_out),
        tr("the output in train mode with dropout=1 (every weight dropped)"),
        labels=("batch", "query"),
    )


@check("RelativeSelfAttention.dropout", hidden=True)
def relative_attention_dropout_statistics(RelativeSelfAttention, device):
    """With dropout=0.3 in training, is a fraction ≈ 0.3 of the weights zeroed and the rest divided by 0.7, once?"""
    self_attention_dropout_contract(
        lambda N, p: relative_module(RelativeSelfAttention, N, 3, N, 3, p, seed=10, device=device),
        device,
        seed=10,
        B=8,
        N=8,
        p=0.3,
    )


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
        raise CheckError(
            tr("every entry of P must lie in [-1, 1], found {largest:.4g}").format(
                largest=P.abs().max().item()
            )
        )
    expect_close(
        P[0], torch.tensor([0.0, 1.0] * (d // 2), dtype=torch.float64), "P[0] (sin 0, cos 0, …)"
    )
    expect_close(
        P[:, 0::2] ** 2 + P[:, 1::2] ** 2,
        torch.ones(max_len, d // 2, dtype=torch.float64),
        tr("sin² + cos² of each pair of columns"),
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
        tr("P[i + {delta}] against P[i] rotated by {delta}ω_j").format(delta=delta),
        atol=1e-4,
        labels=("i",),
    )


# ----------------------------------------------------------------- check your understanding


@check("quiz_6_1.key", hidden=True)
def quiz_6_1_key(answer, device):
    """Is answer_6_1 the right choice?"""
    value = expect_choice(answer(), "abcd", "answer_6_1")
    if value != "b":
        raise CheckError(
            tr(
                "answer_6_1 = {value!r} is not the right choice: swap items 0 and 1 of X in "
                "the shuffle cell and compare the two outputs row by row"
            ).format(value=value)
        )


@check("quiz_6_2.key", hidden=True)
def quiz_6_2_key(answer, device):
    """Is answer_6_2 the number of trainable parameters, counted from PyTorch's own layers?"""
    value = expect_number(answer(), "answer_6_2")
    D_X, D_Q, D_V, K = 16, 8, 12, 4
    layers = [torch.nn.Linear(D_X, size, bias=False) for size in (D_Q, D_Q, D_V)]
    expected = sum(p.numel() for layer in layers for p in layer.parameters())
    expected += 2 * K + 1  # one bias per clipped offset, -K to K
    if abs(value - expected) > 0.5:
        raise CheckError(
            tr(
                "answer_6_2 = {value:g} is not the number of trainable parameters: count each "
                "projection's weights, then the biases of the offsets (does their number "
                "depend on the length of the sequence?)"
            ).format(value=value)
        )


@check("quiz_6_3.key", hidden=True)
def quiz_6_3_key(answer, device):
    """Is answer_6_3 the right choice?"""
    value = expect_choice(answer(), "abcd", "answer_6_3")
    if value != "c":
        raise CheckError(
            tr(
                "answer_6_3 = {value!r} is not the right choice: which of these layers is a "
                "composition of permutation-equivariant pieces, and which sees offsets?"
            ).format(value=value)
        )


# ----------------------------------------------------------------- the property classes
# Which group tests each class of every graded target (checks._contract.properties);
# tests/test_properties.py proves each with a known-wrong answer that breaks it.

properties(
    "RelativeSelfAttention",
    float64=("RelativeSelfAttention.values",),
    gradient=("RelativeSelfAttention.values",),
    meta=("RelativeSelfAttention.values",),
    dropout=("RelativeSelfAttention.dropout",),
    unchanged=("RelativeSelfAttention.values",),
)
properties(
    "positional_encoding",
    float64="n/a: the table is float32 by its specification, whatever it is computed in; "
    "positional_encoding.formula compares it entry by entry with the formula",
    gradient="n/a: positional_encoding takes no tensor, so nothing flows back",
    meta="n/a: positional_encoding takes no tensor and no device: the table is made on the "
    "CPU, as its specification says, and moved by its caller",
    dropout="n/a: positional_encoding has no dropout",
    unchanged="n/a: positional_encoding takes no tensor to change",
)
