"""Hidden checks for the chapter "Additive attention": Exercise 3.1 and the answer key.

References: an explicit loop over batch, queries and keys that concatenates each pair
[q; k] and applies the module's own hidden layer to it (in float64), the bound on the
largest tensor, dropout's statistics, and for the questions PyTorch's own parameter count.
"""

import torch
from torch import nn

from checks._contract import properties
from checks._core import check, random_tensor
from checks._errors import CheckError, CheckInternalError
from checks._expect import expect_choice, expect_number
from checks._i18n import N_, tr
from checks.additive import expect_no_concatenation
from checks.hidden.scoring import check_dropout, compare_with_loop, loop_reference
from checks.scoring import build, dropout_contract, module_contract

# ----------------------------------------------------------------- ConcatAttention


def concat_score(module):
    """score(q, k) = w_vᵀ tanh(W torch.cat([q, k]) + b), from the module's parameters."""
    W, b, w_v = (
        p.detach().double().cpu() for p in (module.W.weight, module.W.bias, module.w_v.weight[0])
    )
    return lambda q, k: (w_v @ torch.tanh(W @ torch.cat([q, k]) + b)).item()


@check("ConcatAttention.values", hidden=True)
def concat_matches_a_loop(ConcatAttention, device):
    """Does w_vᵀ tanh(W [q; k] + b) match an explicit loop over every pair, with 1-D, 2-D and no valid_lens?"""
    module = build(ConcatAttention, 5, 3, 7, 0.0, seed=41, device=device)
    with torch.no_grad():  # a bias large enough that adding it twice, or not at all, shows
        module.W.bias.copy_(random_tensor(7, seed=42, device=device, scale=2.0))
    compare_with_loop(module, concat_score(module), dq=3, dk=5, device=device)


@check("ConcatAttention.values", hidden=True)
def concat_contract_hidden(ConcatAttention, device):
    """float64 in and out (equal to a float64 loop), gradients to every parameter and input, inputs unchanged, no tensor made on the CPU?"""
    module_contract(
        lambda dev: build(ConcatAttention, 6, 5, 9, 0.0, seed=43, device=dev),
        device,
        seed=43,
        B=3,
        m=4,
        n=6,
        dq=5,
        dk=6,
        dv=2,
        reference=loop_reference(concat_score),
    )


@check("ConcatAttention.memory", hidden=True)
def concat_never_every_pair(ConcatAttention, device):
    """For three sizes, is the largest tensor made below the (B, m, n, d_q + d_k) pairs?"""
    for seed, (B, m, n, dq, dk, h) in enumerate(
        [(2, 5, 7, 6, 10, 4), (3, 4, 9, 3, 12, 5), (1, 8, 2, 16, 4, 8)], start=44
    ):
        module = build(ConcatAttention, dk, dq, h, 0.0, seed=seed, device=device)
        expect_no_concatenation(module, B, m, n, dq, dk, h, seed=seed, device=device)


@check("ConcatAttention.dropout", hidden=True)
def concat_dropout(ConcatAttention, device):
    """Is dropout applied to the weights in training only, with attention_weights kept before it?"""
    module = build(ConcatAttention, 4, 4, 8, 1.0, seed=47, device=device)
    q, k, v = (random_tensor(2, s, 4, seed=s, device=device) for s in (3, 5, 5))
    check_dropout(module, q, k, v, torch.tensor([5, 2], device=device))


@check("ConcatAttention.dropout", hidden=True)
def concat_dropout_statistics(ConcatAttention, device):
    """With dropout=0.3 in training, is a fraction ≈ 0.3 of the weights zeroed and the rest divided by 0.7, once?"""
    dropout_contract(
        lambda dev, p: build(ConcatAttention, 5, 3, 6, p, seed=48, device=dev),
        device,
        seed=48,
        B=6,
        m=7,
        n=9,
        dq=3,
        dk=5,
        p=0.3,
    )


# ----------------------------------------------------------------- the answer key
# Multiple choice: the key is a letter, and each wrong letter has its own explanation.
# A number: computed here, independently of the notebook.

WHY_NOT_3_1 = {
    "a": N_(
        "an untrained module has random W_q, W_k and w_v, and different keys get different "
        "scores from them; identical keys were what made the toy example's weights uniform"
    ),
    "c": N_(
        "the mask depends on the keys' positions, not on their values: the keys past the valid "
        "length still get weight 0"
    ),
    "d": N_(
        "a softmax puts all the weight on one key only when its score is far above the "
        "others'; the scores of an untrained module are close together"
    ),
}


def toy_weights_with_random_keys() -> torch.Tensor:
    """The toy example's weights with random keys, from an independent additive score: three
    bias-free torch.nn.Linear layers and a softmax with -inf at the masked keys (float64)."""
    gen = torch.Generator().manual_seed(31)
    with torch.random.fork_rng(devices=[]):  # the notebook's RNG untouched
        torch.manual_seed(31)
        W_q, W_k = nn.Linear(20, 8, bias=False).double(), nn.Linear(2, 8, bias=False).double()
        w_v = nn.Linear(8, 1, bias=False).double()
    queries = torch.randn(2, 1, 20, generator=gen, dtype=torch.float64)
    keys = torch.randn(2, 10, 2, generator=gen, dtype=torch.float64)
    with torch.no_grad():
        scores = w_v(torch.tanh(W_q(queries)[:, :, None, :] + W_k(keys)[:, None, :, :]))[..., 0]
    masked = torch.arange(10)[None, None, :] >= torch.tensor([2, 6])[:, None, None]  # (2, 1, 10)
    return torch.softmax(scores.masked_fill(masked, float("-inf")), dim=-1)[:, 0]  # (2, 10)


@check("quiz_3_1.key", hidden=True)
def quiz_3_1_key(answer, device):
    """Is answer_3_1 the right choice?"""
    choice = expect_choice(answer(), "abcd", "answer_3_1")
    weights, lengths = toy_weights_with_random_keys(), (2, 6)
    valid = [w[:n] for w, n in zip(weights, lengths)]
    masked = torch.cat([w[n:] for w, n in zip(weights, lengths)])
    uniform = all(torch.allclose(v, torch.full_like(v, 1 / len(v))) for v in valid)
    options = {
        "a": uniform and bool((masked == 0).all()),
        "b": not uniform and bool((masked == 0).all()),
        "c": not uniform and bool((masked > 0).any()),
        "d": bool((weights.max(dim=-1).values > 0.999).all()),
    }
    right = [k for k, holds in options.items() if holds]
    if len(right) != 1:
        raise CheckInternalError(f"expected exactly one option to hold, got {right}")
    if choice != right[0]:
        raise CheckError(
            tr("answer_3_1 = {choice!r}: {why}").format(choice=choice, why=tr(WHY_NOT_3_1[choice]))
        )


WHY_NOT_3_2 = {
    "a": N_(
        "the full version holds (B, m, n, h): doubling m and n makes it four times larger, not two"
    ),
    "c": N_(
        "chunks of c queries hold (B, c, n, h): c stays, but n doubles, so each chunk doubles "
        "too; chunking bounds the queries' axis only"
    ),
    "d": N_(
        "chunks of c queries hold (B, c, n, h): they do not grow with m, so doubling m and n "
        "only doubles them"
    ),
}


@check("quiz_3_2.key", hidden=True)
def quiz_3_2_key(answer, device):
    """Is answer_3_2 the right choice?"""
    choice = expect_choice(answer(), "abcd", "answer_3_2")
    if choice != "b":
        raise CheckError(
            tr("answer_3_2 = {choice!r}: {why}").format(choice=choice, why=tr(WHY_NOT_3_2[choice]))
        )


def translator_attention_parameters() -> int:
    """The learnable numbers of AdditiveAttention(key_size=128, query_size=64, num_hiddens=64),
    counted by PyTorch on its three bias-free layers (on meta: nothing is allocated)."""
    layers = [
        nn.Linear(128, 64, bias=False, device="meta"),  # W_k
        nn.Linear(64, 64, bias=False, device="meta"),  # W_q
        nn.Linear(64, 1, bias=False, device="meta"),  # w_v
    ]
    return sum(p.numel() for layer in layers for p in layer.parameters())


@check("quiz_3_3.key", hidden=True)
def quiz_3_3_key(answer, device):
    """Is answer_3_3 the number of parameters?"""
    value = expect_number(answer(), "answer_3_3")
    key, h = translator_attention_parameters(), 64
    if value == key:
        return
    if value == key - h:
        why = tr("w_v has h = 64 parameters too")
    elif value == key + 2 * h + 1:
        why = tr("the three layers have no bias (bias=False)")
    elif value > 10 * key:
        why = tr(
            "the parameters do not depend on how many keys there are: the same W_k projects "
            "every key, whether the source has 36 characters or 3600"
        )
    else:
        why = tr("count the entries of W_q (h × d_q), W_k (h × d_k) and w_v (h)")
    raise CheckError(
        tr("answer_3_3 = {value:g} is not the number of parameters: {why}").format(
            value=value, why=why
        )
    )


# ----------------------------------------------------------------- the property classes
# Which group tests each class of every graded target (checks._contract.properties);
# tests/test_properties.py proves each with a known-wrong answer that breaks it.

properties(
    "ConcatAttention",
    float64=("ConcatAttention.values",),
    gradient=("ConcatAttention.values",),
    meta=("ConcatAttention.values",),
    dropout=("ConcatAttention.dropout",),
    unchanged=("ConcatAttention.values",),
)
