"""Hidden checks for the chapter "Scaled dot-product attention": cosine attention (4.4), the quiz.

References: an explicit loop over batch, queries and keys with ``F.cosine_similarity`` (in
float64, times the module's own scale), PyTorch's ``scaled_dot_product_attention`` on
normalised queries and keys, and a property (positive rescaling of a query or a key changes
nothing). The quiz's numbers are computed from the variance argument and by sampling.
"""

import math

import torch
import torch.nn.functional as F

from checks._contract import properties
from checks._core import check, random_tensor
from checks._errors import CheckError
from checks._expect import expect_choice, expect_close, expect_number
from checks._i18n import tr
from checks.dot_product import expect_zero_vectors_safe
from checks.hidden.scoring import check_dropout, compare_with_loop, loop_attention
from checks.scoring import attend, build, dropout_contract, module_contract


def cosine_score(module):
    """score(q, k) = s · cos(q, k) on float64 CPU vectors, s read from the module."""
    s = float(module.scale.detach().double().cpu())
    return lambda q, k: s * F.cosine_similarity(q, k, dim=0).item()


@check("CosineAttention.values", hidden=True)
def cosine_matches_a_loop(CosineAttention, device):
    """Does s·cos(q, k) match an explicit loop of F.cosine_similarity, with 1-D, 2-D and no valid_lens?"""
    module = build(CosineAttention, 0.0, scale=4.0, device=device)
    compare_with_loop(module, cosine_score(module), dq=6, dk=6, device=device)


@check("CosineAttention.values", hidden=True)
def cosine_zero_vectors_hidden(CosineAttention, device):
    """In float64 too, do zero queries and keys score 0, with no nan forward or backward and no gradient that explodes at a zero vector?"""
    expect_zero_vectors_safe(CosineAttention, device, dtype=torch.float64)


@check("CosineAttention.values", hidden=True)
def cosine_contract_hidden(CosineAttention, device):
    """float64 in and out (equal to a float64 loop), gradients to the scale and every input, inputs unchanged, no tensor made on the CPU?"""
    module_contract(
        lambda dev: build(CosineAttention, 0.0, scale=5.0, device=dev),
        device,
        seed=43,
        B=3,
        m=5,
        n=2,
        dq=7,
        dk=7,
        dv=4,
        reference=lambda module, q, k, v, lens: loop_attention(cosine_score(module), q, k, v, lens),
    )


@check("CosineAttention.builtin", hidden=True)
def cosine_matches_sdpa(CosineAttention, device):
    """Does it equal F.scaled_dot_product_attention on unit-length queries and keys, with scale s?"""
    module = build(CosineAttention, 0.0, scale=6.0, device=device)
    q, k, v = (random_tensor(3, s, 16, seed=s, device=device, scale=3.0) for s in (7, 9, 9))
    lens = torch.tensor([[9, 0, 3, 1, 5, 9, 2], [4] * 7, [1, 2, 3, 4, 5, 6, 7]], device=device)
    mask = torch.arange(9, device=device) < lens[..., None]
    unit_q = q / torch.linalg.vector_norm(q, dim=-1, keepdim=True)
    unit_k = k / torch.linalg.vector_norm(k, dim=-1, keepdim=True)
    expected = F.scaled_dot_product_attention(unit_q, unit_k, v, attn_mask=mask, scale=6.0)
    out, _ = attend(module, q, k, v, lens)
    expect_close(
        out,
        expected,
        tr("the output against scaled_dot_product_attention(q/‖q‖, k/‖k‖, v, scale=s)"),
        labels=("batch", "query"),
    )


@check("CosineAttention.builtin", hidden=True)
def cosine_ignores_lengths(CosineAttention, device):
    """Do queries and keys rescaled by positive numbers (0.01 to 100) give the same weights?"""
    module = build(CosineAttention, 0.0, scale=8.0, device=device)
    q = random_tensor(2, 4, 5, seed=50, device=device)
    k = random_tensor(2, 6, 5, seed=51, device=device)
    v = random_tensor(2, 6, 3, seed=52, device=device)
    lens = torch.tensor([6, 4], device=device)
    _, weights = attend(module, q, k, v, lens)
    weights = weights.detach().clone()
    gen = torch.Generator().manual_seed(53)
    q_factors = 10 ** (4 * torch.rand(2, 4, 1, generator=gen) - 2)  # 0.01 to 100
    k_factors = 10 ** (4 * torch.rand(2, 6, 1, generator=gen) - 2)
    _, rescaled = attend(module, q * q_factors.to(device), k * k_factors.to(device), v, lens)
    expect_close(
        rescaled,
        weights,
        tr("attention_weights after multiplying each query and key by its own positive number"),
        labels=("batch", "query"),
    )


@check("CosineAttention.dropout", hidden=True)
def cosine_dropout(CosineAttention, device):
    """Is dropout applied to the weights in training only, with attention_weights kept before it?"""
    q, k, v = (random_tensor(2, s, 4, seed=s, device=device) for s in (3, 5, 5))
    check_dropout(
        build(CosineAttention, 1.0, scale=3.0, device=device),
        q,
        k,
        v,
        torch.tensor([5, 2], device=device),
    )


@check("CosineAttention.dropout", hidden=True)
def cosine_dropout_statistics(CosineAttention, device):
    """With dropout=0.3 in training, is a fraction ≈ 0.3 of the weights zeroed and the rest divided by 0.7, once?"""
    dropout_contract(
        lambda dev, p: build(CosineAttention, p, scale=3.0, device=dev),
        device,
        seed=44,
        B=6,
        m=7,
        n=9,
        dq=5,
        dk=5,
        p=0.3,
    )


# ----------------------------------------------------------------- check your understanding


@check("quiz_4_1.key", hidden=True)
def quiz_4_1_key(answer, device):
    """Is the standard deviation of q·k/√d for entries of variance 4 (d = 64) right?"""
    value = expect_number(answer(), "answer_4_1")
    variance, d = 4.0, 64
    # Var(q_i k_i) = Var(q_i) Var(k_i) for independent zero-mean entries; d terms, divided by d.
    expected = math.sqrt(d * variance * variance / d)
    gen = torch.Generator().manual_seed(0)
    q = math.sqrt(variance) * torch.randn(20_000, d, generator=gen, dtype=torch.float64)
    k = math.sqrt(variance) * torch.randn(20_000, d, generator=gen, dtype=torch.float64)
    sampled = float(((q * k).sum(dim=1) / math.sqrt(d)).std())
    assert abs(sampled - expected) < 0.05 * expected, (sampled, expected)  # formula = sample
    if abs(value - expected) > 0.05 * expected:
        raise CheckError(
            tr(
                "answer_4_1 = {value:g} is not the standard deviation of q·k/√d here. Dividing "
                "by √d removes the growth with d, not the entries' own variance: what is the "
                "variance of one product q_i k_i when each factor has variance 4?"
            ).format(value=value)
        )


@check("quiz_4_2.key", hidden=True)
def quiz_4_2_key(answer, device):
    """Is the change that leaves the output unchanged the right one?"""
    if expect_choice(answer(), "abcd", "answer_4_2") != "b":
        raise CheckError(
            tr(
                "answer_4_2: that change alters the output. Only a change of the scores by the "
                "same amount for every key of a row cancels in the softmax, and the output "
                "must not move"
            )
        )


# ----------------------------------------------------------------- the property classes
# Which group tests each class of every graded target (checks._contract.properties);
# tests/test_properties.py proves each with a known-wrong answer that breaks it.

properties(
    "CosineAttention",
    float64=("CosineAttention.values",),
    gradient=("CosineAttention.values",),
    meta=("CosineAttention.values",),
    dropout=("CosineAttention.dropout",),
    unchanged=("CosineAttention.values",),
)
