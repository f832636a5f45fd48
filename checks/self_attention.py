"""Visible checks for the chapter "Self-attention and positional encoding"."""

import math

import torch

from checks._core import CheckError, check, expect_close, expect_tensor
from checks.scoring import build


def self_attend(module, X, valid_lens=None):
    """Call a self-attention module; check it returns (B, N, D_V) and keeps (B, N, N) weights."""
    out = module(X, valid_lens)
    B, N = X.shape[0], X.shape[1]
    expect_tensor(out, "the output", shape=(B, N, module.W_v.out_features), device=X.device)
    weights = getattr(module, "attention_weights", None)
    if weights is None:
        raise CheckError("forward must leave the weights in self.attention.attention_weights")
    expect_tensor(weights, "attention_weights", shape=(B, N, N), device=X.device)
    return out, weights


@check("SelfAttention")
def shapes_and_padding(SelfAttention, device):
    """Does X (2, 5, 6) give outputs (2, 5, 3), weights (2, 5, 5) with rows summing to 1 and none on padding?"""
    gen = torch.Generator().manual_seed(0)
    X = torch.randn(2, 5, 6, generator=gen).to(device)
    module = build(SelfAttention, 6, 4, 3, 0.0, device=device)
    _, weights = self_attend(module, X, torch.tensor([5, 2], device=device))
    expect_close(weights.sum(-1), torch.ones(2, 5, device=device), "row sums of the weights")
    expect_close(
        weights[1, :, 2:],
        torch.zeros(5, 3, device=device),
        "weights of padded keys",
        labels=("query",),
    )


@check("SelfAttention")
def zero_queries_average_the_values(SelfAttention, device):
    """With W_q = 0 every score is 0: is each output the mean of W_v(x_j) over the valid positions j?"""
    gen = torch.Generator().manual_seed(1)
    X = torch.randn(2, 4, 6, generator=gen).to(device)
    module = build(SelfAttention, 6, 4, 3, 0.0, device=device)
    with torch.no_grad():
        module.W_q.weight.zero_()
    out, _ = self_attend(module, X, torch.tensor([4, 3], device=device))
    values = X @ module.W_v.weight.detach().T  # (B, N, D_V)
    expected = torch.stack([values[0].mean(0), values[1, :3].mean(0)])[:, None].expand(2, 4, 3)
    expect_close(out, expected, "the output with W_q = 0", labels=("batch", "query"))


@check("positional_encoding")
def small_table(positional_encoding, device):
    """Is positional_encoding(3, 4) the table [sin(i), cos(i), sin(i/100), cos(i/100)] in float32?"""
    P = positional_encoding(3, 4)
    expected = torch.tensor(
        [
            [f(i / 10000 ** (2 * j / 4)) for j in range(2) for f in (math.sin, math.cos)]
            for i in range(3)
        ]
    )
    expect_tensor(P, "positional_encoding(3, 4)", shape=(3, 4), dtype=torch.float32)
    expect_close(P.cpu(), expected, "positional_encoding(3, 4)", labels=("position",))
