"""From the chapter "Scaled dot-product attention": DotProductAttention, sum_scores, distance_scores, CosineAttention.

Generated from book/dot_product_attention.ipynb by ``python -m autograder export``. Do not edit this
file: edit the ``#@save dot_product`` cells of the notebook, then run ``make export``.
"""

import math

import torch
from torch import nn

from solutions.additive import check_qkv
from solutions.masking import masked_softmax


class DotProductAttention(nn.Module):
    """Scaled dot-product attention: a(q, k) = qᵀk / √d.

    Args:
        dropout: dropout probability applied to the attention weights.

    Shape:
        - queries: (B, m, d)
        - keys: (B, n, d)
        - values: (B, n, v)
        - valid_lens: None, (B,) or (B, m)
        - output: (B, m, v); ``attention_weights``: (B, m, n)
    """

    def __init__(self, dropout, **kwargs):
        super().__init__(**kwargs)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        check_qkv(queries, keys, values)
        if queries.shape[-1] != keys.shape[-1]:
            raise ValueError(
                "dot-product attention needs queries and keys of one size d, got "
                f"{queries.shape[-1]} and {keys.shape[-1]}"
            )
        d = queries.shape[-1]
        # (B, m, d) @ (B, d, n) -> (B, m, n)
        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)
        self.attention_weights = masked_softmax(scores, valid_lens)
        # (B, m, n) @ (B, n, v) -> (B, m, v)
        return torch.bmm(self.dropout(self.attention_weights), values)


def sum_scores(queries, keys, w):
    """The vector-sum score wᵀq + wᵀk of every query against every key.

    Shape:
        - queries: (B, m, d)
        - keys: (B, n, d)
        - w: (d,)
        - output: (B, m, n)
    """
    query_terms = queries @ w  # (B, m)
    key_terms = keys @ w  # (B, n)
    return query_terms[:, :, None] + key_terms[:, None, :]  # (B, m, 1) + (B, 1, n) -> (B, m, n)


def distance_scores(queries, keys):
    """The score -‖q - k‖² / 2 of every query against every key, from matrix products.

    Shape:
        - queries: (B, m, d)
        - keys: (B, n, d)
        - output: (B, m, n)
    """
    q_sq = (queries**2).sum(dim=-1)  # (B, m)
    k_sq = (keys**2).sum(dim=-1)  # (B, n)
    dots = torch.bmm(queries, keys.transpose(1, 2))  # (B, m, d) @ (B, d, n) -> (B, m, n)
    return -(q_sq[:, :, None] - 2 * dots + k_sq[:, None, :]) / 2


class CosineAttention(DotProductAttention):
    """Cosine attention: a(q, k) = s · cos(q, k), with a learned scale s.

    A zero query or key has cosine 0 with everything.

    Args:
        dropout: dropout probability applied to the attention weights.
        scale: the initial value of the learned scale s.

    Shape:
        - queries: (B, m, d)
        - keys: (B, n, d)
        - values: (B, n, v)
        - valid_lens: None, (B,) or (B, m)
        - output: (B, m, v); ``attention_weights``: (B, m, n)
    """

    def __init__(self, dropout, scale=10.0, **kwargs):
        super().__init__(dropout, **kwargs)
        self.scale = nn.Parameter(torch.tensor(float(scale)))

    def forward(self, queries, keys, values, valid_lens=None):
        check_qkv(queries, keys, values)
        if queries.shape[-1] != keys.shape[-1]:
            raise ValueError(
                "cosine attention needs queries and keys of one size d, got "
                f"{queries.shape[-1]} and {keys.shape[-1]}"
            )
        # Unit rows; a zero row stays zero, with a zero gradient. Divide by the length only
        # where it is not 0: x / max(‖x‖, ε), as F.normalize does, has a gradient of 1/ε
        # (10¹² for its ε) at a zero row.
        q_len = torch.linalg.vector_norm(queries, dim=-1, keepdim=True)  # (B, m, 1)
        k_len = torch.linalg.vector_norm(keys, dim=-1, keepdim=True)  # (B, n, 1)
        q = torch.where(q_len > 0, queries / torch.where(q_len > 0, q_len, 1.0), 0.0)
        k = torch.where(k_len > 0, keys / torch.where(k_len > 0, k_len, 1.0), 0.0)
        cosines = torch.bmm(q, k.transpose(1, 2))  # (B, m, d) @ (B, d, n) -> (B, m, n)
        self.attention_weights = masked_softmax(self.scale * cosines, valid_lens)
        weights = self.dropout(self.attention_weights)  # (B, m, n)
        return torch.bmm(weights, values)  # (B, m, n) @ (B, n, v) -> (B, m, v)
