"""Hidden checks for "Attention pooling": an explicit-loop reference and the kernel's limits."""

import math

import torch

from checks._contract import float64_device
from checks._core import check, expect_close, expect_finite, expect_tensor, softmax_list
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
            f"weights (m={m}, n={n}, σ={sigma})",
            labels=("query",),
        )
        expect_close(preds, ref_p.to(device), f"predictions (m={m}, n={n}, σ={sigma})")


@check("nadaraya_watson.limits", hidden=True)
def limits_and_stability(nadaraya_watson, device):
    """Do the kernel's limits hold (σ→0: nearest key, σ→∞: the mean) and stay finite far away?"""
    keys = torch.tensor([0.0, 1.0, 2.5, 4.0], device=device)
    values = torch.tensor([3.0, -1.0, 2.0, 5.0], device=device)
    queries = torch.tensor([0.1, 2.4, 3.9], device=device)
    preds, _ = _call(nadaraya_watson, queries, keys, values, bandwidth=0.01)
    expect_close(preds, torch.tensor([3.0, 2.0, 5.0], device=device), "predictions with σ = 0.01")
    preds, _ = _call(nadaraya_watson, queries, keys, values, bandwidth=1e4)
    expect_close(preds, values.mean().expand(3), "predictions with σ = 10⁴", atol=1e-4)
    far = torch.tensor([-100.0, 1000.0], device=device)
    preds, weights = _call(nadaraya_watson, far, keys, values)
    expect_finite(weights, "weights for queries far from every key")
    expect_close(preds, torch.tensor([3.0, 5.0], device=device), "predictions far from every key")
    dev64 = float64_device(device)
    q64, k64, v64 = (t.to(dev64, torch.float64) for t in (queries, keys, values))
    preds, weights = _call(nadaraya_watson, q64, k64, v64)
    expect_tensor(preds, "predictions for float64 input", dtype=torch.float64, device=dev64)
    expect_tensor(weights, "weights for float64 input", dtype=torch.float64, device=dev64)


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
