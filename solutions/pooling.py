"""From the chapter "Attention pooling": nadaraya_watson, NWKernelRegression.

Generated from book/attention_pooling.ipynb by ``python -m autograder export``. Do not edit this
file: edit the ``#@save pooling`` cells of the notebook, then run ``make export``.
"""

import torch
from torch import nn


def nadaraya_watson(queries, keys, values, bandwidth=1.0):
    """Nadaraya–Watson kernel regression with a Gaussian kernel, as attention pooling.

    Each query attends to every key with the weights
    ``softmax(-(q - k)**2 / (2 * bandwidth**2))`` over the keys, and returns the
    weighted sum of the values.

    Args:
        queries: the points where we want predictions.
        keys: the training inputs.
        values: the training targets, one per key.
        bandwidth: the kernel's width ``σ``, a positive number.

    Returns:
        A pair ``(predictions, attention_weights)``.

    Shape:
        - queries: (m,)
        - keys: (n,)
        - values: (n,)
        - predictions: (m,)
        - attention_weights: (m, n); every row sums to 1
    """
    if queries.dim() != 1 or keys.dim() != 1:
        raise ValueError(
            "queries and keys must be 1-D, got shapes "
            f"{tuple(queries.shape)} and {tuple(keys.shape)}"
        )
    if values.shape != keys.shape:
        raise ValueError(
            f"values must have the shape of keys {tuple(keys.shape)}, got {tuple(values.shape)}"
        )
    if not bandwidth > 0:
        raise ValueError(f"bandwidth must be positive, got {bandwidth}")
    # (m, 1) - (1, n) -> (m, n): every query against every key
    differences = queries[:, None] - keys[None, :]
    scores = -(differences**2) / (2 * bandwidth**2)
    attention_weights = torch.softmax(scores, dim=-1)  # (m, n), rows sum to 1
    predictions = attention_weights @ values  # (m, n) @ (n,) -> (m,)
    return predictions, attention_weights


class NWKernelRegression(nn.Module):
    """Nadaraya–Watson regression with a learnable inverse bandwidth ``w``.

    The score of query ``q`` against key ``k`` is ``-((q - k) * w)**2 / 2``: the
    larger ``w``, the narrower the kernel. The weights of the last call are kept
    in ``attention_weights``.

    Shape:
        - queries: (m,)
        - keys: (m, n); each query has its own keys (for leave-one-out training)
        - values: (m, n)
        - output: (m,)
        - attention_weights: (m, n)
    """

    def __init__(self, w=1.0):
        super().__init__()
        self.w = nn.Parameter(torch.tensor([float(w)]))

    def forward(self, queries, keys, values):
        # (m, 1) - (m, n) -> (m, n)
        scores = -(((queries[:, None] - keys) * self.w) ** 2) / 2
        self.attention_weights = torch.softmax(scores, dim=-1)
        # weighted sum over the keys: (m, n) -> (m,)
        return (self.attention_weights * values).sum(dim=-1)
