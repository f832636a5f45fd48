"""Hidden checks for "Attention pooling": an explicit-loop reference and the kernel's limits."""

import math

import torch

from checks._contract import float64_device, properties
from checks._core import check, softmax_list
from checks._errors import CheckError, CheckInternalError
from checks._expect import expect_choice, expect_close, expect_finite, expect_number, expect_tensor
from checks._i18n import tr
from checks.pooling import _call, pooling_contract


def loop_reference(queries, keys, values, bandwidth):
    """Nadaraya–Watson, one query at a time, in plain Python floats."""
    preds, rows = [], []
    for q in queries.tolist():
        w = softmax_list([-((q - k) ** 2) / (2 * bandwidth**2) for k in keys.tolist()])
        rows.append(w)
        preds.append(math.fsum(wi * vi for wi, vi in zip(w, values.tolist())))
    return torch.tensor(preds, dtype=torch.float64), torch.tensor(rows, dtype=torch.float64)


@check("nadaraya_watson.values", hidden=True)
def random_inputs_match_a_loop(nadaraya_watson, device):
    """Do random inputs and bandwidths match an explicit loop over queries and keys?"""
    gen = torch.Generator().manual_seed(11)
    device = float64_device(device)  # float64 inputs: the CPU where the device has no float64
    for m, n, sigma in [(1, 1, 1.0), (4, 9, 0.3), (13, 6, 2.5), (7, 7, 1.0)]:
        q = (torch.rand(m, generator=gen, dtype=torch.float64) * 5).to(device)
        k = (torch.rand(n, generator=gen, dtype=torch.float64) * 5).to(device)
        v = torch.randn(n, generator=gen, dtype=torch.float64).to(device)
        preds, weights = _call(nadaraya_watson, q, k, v, bandwidth=sigma)
        ref_p, ref_w = loop_reference(q.cpu(), k.cpu(), v.cpu(), sigma)
        expect_close(
            weights,
            ref_w.to(device),
            tr("weights (m={m}, n={n}, σ={sigma})").format(m=m, n=n, sigma=sigma),
            labels=("query",),
        )
        expect_close(
            preds,
            ref_p.to(device),
            tr("predictions (m={m}, n={n}, σ={sigma})").format(m=m, n=n, sigma=sigma),
        )


@check("nadaraya_watson.limits", hidden=True)
def limits_and_stability(nadaraya_watson, device):
    """Do the kernel's limits hold (σ→0: nearest key, σ→∞: the mean) and stay finite far away?"""
    keys = torch.tensor([0.0, 1.0, 2.5, 4.0], device=device)
    values = torch.tensor([3.0, -1.0, 2.0, 5.0], device=device)
    queries = torch.tensor([0.1, 2.4, 3.9], device=device)
    preds, _ = _call(nadaraya_watson, queries, keys, values, bandwidth=0.01)
    expect_close(
        preds, torch.tensor([3.0, 2.0, 5.0], device=device), tr("predictions with σ = 0.01")
    )
    preds, _ = _call(nadaraya_watson, queries, keys, values, bandwidth=1e4)
    expect_close(preds, values.mean().expand(3), tr("predictions with σ = 10⁴"), atol=1e-4)
    far = torch.tensor([-100.0, 1000.0], device=device)
    preds, weights = _call(nadaraya_watson, far, keys, values)
    expect_finite(weights, tr("weights for queries far from every key"))
    expect_close(
        preds, torch.tensor([3.0, 5.0], device=device), tr("predictions far from every key")
    )
    dev64 = float64_device(device)
    q64, k64, v64 = (t.to(dev64, torch.float64) for t in (queries, keys, values))
    preds, weights = _call(nadaraya_watson, q64, k64, v64)
    expect_tensor(preds, tr("predictions for float64 input"), dtype=torch.float64, device=dev64)
    expect_tensor(weights, tr("weights for float64 input"), dtype=torch.float64, device=dev64)


@check("nadaraya_watson.values", hidden=True)
def pooling_properties_hidden(nadaraya_watson, device):
    """float64 in and out (equal to a float64 loop), gradients to queries, keys and values, inputs unchanged, no tensor made on the CPU?"""
    pooling_contract(
        nadaraya_watson,
        device,
        seed=12,
        m=6,
        n=9,
        reference=lambda q, k, v: loop_reference(q, k, v, 1.0),
    )


# ---------------------------------------------------------------- check your understanding


@check("quiz_1_1.key", hidden=True)
def quiz_1_1_key(answer, device):
    """Does answer_1_1 name the one change to the scores that leaves every prediction unchanged?"""
    choice = expect_choice(answer(), "abcd", "answer_1_1")
    # The key, computed: apply each option to random scores and see which keeps the weights.
    scores = -(torch.randn(4, 6, generator=torch.Generator().manual_seed(3), dtype=torch.float64))
    weights = torch.softmax(scores, dim=-1)  # over the keys
    options = {
        "a": torch.softmax(2 * scores, dim=-1),
        "b": torch.softmax(scores + math.log(1 / math.sqrt(2 * math.pi)), dim=-1),
        "c": torch.softmax(scores.exp(), dim=-1),
        "d": torch.softmax(scores, dim=0),
    }
    keeps = [k for k, w in options.items() if torch.allclose(w, weights, rtol=0, atol=1e-12)]
    if len(keeps) != 1:
        raise CheckInternalError(
            tr("expected exactly one option to keep the weights, got {keeps}").format(keeps=keeps)
        )
    if choice != keeps[0]:
        raise CheckError(
            tr(
                "answer_1_1 = {choice!r}: that change alters the attention weights, so the "
                "predictions change; softmax(s) is invariant only to what cancels between the "
                "numerator exp(s_i) and the denominator Σ exp(s_j)"
            ).format(choice=choice)
        )


@check("quiz_1_2.key", hidden=True)
def quiz_1_2_key(answer, device):
    """Is answer_1_2 the soft dictionary's prediction for q = 100 (keys 1, 2, 3; σ = 0.25)?"""
    predicted = expect_number(answer(), "answer_1_2")
    keys = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    values = torch.tensor([10.0, 20.0, 30.0], dtype=torch.float64)
    weights = torch.softmax(-(((100.0 - keys) / 0.25) ** 2) / 2, dim=0)  # float64, max subtracted
    expected = (weights @ values).item()
    if abs(predicted - expected) <= 0.05:
        return
    hint = {
        0.0: tr("the weights are not all zero: a softmax's weights always sum to one"),
        20.0: tr(
            "the weights are not uniform: a softmax sees only the differences between scores, "
            "and those are huge here"
        ),
    }.get(predicted, tr("work out which key's score is largest, and by how much"))
    raise CheckError(
        tr("answer_1_2 = {predicted:g} is not the prediction for q = 100: {hint}").format(
            predicted=predicted, hint=hint
        )
    )


# ----------------------------------------------------------------- the property classes
# Which group tests each class of every graded target (checks._contract.properties);
# tests/test_properties.py proves each with a known-wrong answer that breaks it.

properties(
    "nadaraya_watson",
    float64=("nadaraya_watson.values",),
    gradient=("nadaraya_watson.values",),
    meta=("nadaraya_watson.values",),
    dropout="n/a: Nadaraya–Watson pooling has no dropout",
    unchanged=("nadaraya_watson.values",),
)
