"""Visible checks for the chapter "Attention pooling"."""

import torch

from checks._core import CheckError, check, expect_close, expect_tensor, softmax_list


class BadReturn(CheckError):
    def __init__(self, out):
        super().__init__(
            "nadaraya_watson should return a pair (predictions, attention_weights), "
            f"got {type(out).__name__}"
        )


def _call(nadaraya_watson, queries, keys, values, **kwargs):
    out = nadaraya_watson(queries, keys, values, **kwargs)
    if not (isinstance(out, tuple) and len(out) == 2):
        raise BadReturn(out)
    return out


@check("nadaraya_watson")
def worked_example(nadaraya_watson, device):
    """Does a small example give the weights and predictions worked out by hand?"""
    queries = torch.tensor([0.0, 1.0], device=device)
    keys = torch.tensor([0.0, 1.0, 3.0], device=device)
    values = torch.tensor([1.0, 2.0, 3.0], device=device)
    preds, weights = _call(nadaraya_watson, queries, keys, values)
    rows = [softmax_list([-((q - k) ** 2) / 2 for k in (0.0, 1.0, 3.0)]) for q in (0.0, 1.0)]
    expected_w = torch.tensor(rows, device=device)
    expect_close(weights, expected_w, "attention_weights", labels=("query",))
    expected_p = torch.tensor([sum(w * v for w, v in zip(r, (1.0, 2.0, 3.0))) for r in rows])
    expect_close(preds, expected_p.to(device), "predictions")


@check("nadaraya_watson")
def shapes_and_rows(nadaraya_watson, device):
    """Are the shapes (m,) and (m, n), and does every row of weights sum to 1?"""
    gen = torch.Generator().manual_seed(0)
    queries = (torch.rand(5, generator=gen) * 5).to(device)
    keys = (torch.rand(7, generator=gen) * 5).to(device)
    values = torch.randn(7, generator=gen).to(device)
    preds, weights = _call(nadaraya_watson, queries, keys, values)
    expect_tensor(preds, "predictions", shape=(5,), dtype=torch.float32, device=device)
    expect_tensor(weights, "attention_weights", shape=(5, 7), dtype=torch.float32, device=device)
    expect_close(weights.sum(dim=1), torch.ones(5, device=device), "row sums of the weights")


@check("nadaraya_watson")
def bandwidth(nadaraya_watson, device):
    """Does the bandwidth σ enter the score as -(q - k)² / (2σ²)?"""
    queries = torch.tensor([0.5], device=device)
    keys = torch.tensor([0.0, 1.0, 2.0], device=device)
    values = torch.tensor([0.0, 1.0, 2.0], device=device)
    _, weights = _call(nadaraya_watson, queries, keys, values, bandwidth=0.5)
    row = softmax_list([-((0.5 - k) ** 2) / (2 * 0.5**2) for k in (0.0, 1.0, 2.0)])
    expect_close(
        weights,
        torch.tensor([row], device=device),
        "attention_weights (σ = 0.5)",
        labels=("query",),
    )
