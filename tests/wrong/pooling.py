"""Wrong answers to Exercise 1.1, nadaraya_watson."""

import torch

from tests.wrong import wrong


@wrong(
    "nadaraya_watson",
    {"nadaraya_watson.limits": "weights for queries far from every key has a non-finite value nan"},
)
def naive_exp_division(queries, keys, values, bandwidth=1.0):
    """exp / sum instead of softmax: 0/0 = NaN for a query far from every key."""
    kernel = torch.exp(-((queries[:, None] - keys[None, :]) ** 2) / (2 * bandwidth**2))
    weights = kernel / kernel.sum(dim=1, keepdim=True)
    return weights @ values, weights


@wrong(
    "nadaraya_watson",
    {
        "nadaraya_watson": "attention_weights: row query=0 is wrong",
        "nadaraya_watson.values": "weights (m=4, n=9, σ=0.3): row query=0 is wrong",
    },
)
def softmax_over_queries(queries, keys, values, bandwidth=1.0):
    """Normalises each key's column instead of each query's row."""
    weights = torch.softmax(-((queries[:, None] - keys[None, :]) ** 2) / (2 * bandwidth**2), dim=0)
    return weights @ values, weights


@wrong(
    "nadaraya_watson",
    {
        "nadaraya_watson": "attention_weights: row query=0 is wrong",
        "nadaraya_watson.values": "weights (m=4, n=9, σ=0.3): row query=0 is wrong",
    },
)
def forgot_the_half(queries, keys, values, bandwidth=1.0):
    """Score -(q - k)² / σ² : the kernel is too narrow by a factor √2."""
    weights = torch.softmax(-((queries[:, None] - keys[None, :]) ** 2) / bandwidth**2, dim=1)
    return weights @ values, weights


@wrong(
    "nadaraya_watson",
    {
        "nadaraya_watson": "attention_weights (σ = 0.5): row query=0 is wrong",
        "nadaraya_watson.values": "weights (m=4, n=9, σ=0.3): row query=0 is wrong",
    },
)
def bandwidth_not_squared(queries, keys, values, bandwidth=1.0):
    """Divides by 2σ instead of 2σ²: right for σ = 1 only."""
    weights = torch.softmax(-((queries[:, None] - keys[None, :]) ** 2) / (2 * bandwidth), dim=1)
    return weights @ values, weights


@wrong(
    "nadaraya_watson",
    {
        "nadaraya_watson": "attention_weights: row query=0 is wrong",
        "nadaraya_watson.values": "weights (m=4, n=9, σ=0.3): row query=0 is wrong",
    },
)
def absolute_distance(queries, keys, values, bandwidth=1.0):
    """A Laplace kernel, -|q - k|, instead of the Gaussian's -(q - k)²."""
    weights = torch.softmax(-(queries[:, None] - keys[None, :]).abs() / (2 * bandwidth**2), dim=1)
    return weights @ values, weights


@wrong(
    "nadaraya_watson",
    {
        "nadaraya_watson": "attention_weights (m=2, n=3) has shape (3, 2), expected (2, 3)",
        "nadaraya_watson.values": "attention_weights (m=4, n=9) has shape (9, 4), expected (4, 9)",
    },
)
def weights_transposed(queries, keys, values, bandwidth=1.0):
    """Returns the weights as (n, m)."""
    weights = torch.softmax(-((queries[:, None] - keys[None, :]) ** 2) / (2 * bandwidth**2), dim=1)
    return weights @ values, weights.T


@wrong(
    "nadaraya_watson",
    {
        "nadaraya_watson": "attention_weights: row query=0 is wrong",
        "nadaraya_watson.values": "weights (m=4, n=9, σ=0.3): row query=0 is wrong",
    },
)
def sign_flipped(queries, keys, values, bandwidth=1.0):
    """+(q - k)²: attends to the farthest keys."""
    weights = torch.softmax(((queries[:, None] - keys[None, :]) ** 2) / (2 * bandwidth**2), dim=1)
    return weights @ values, weights
