"""From the chapter "Bilinear attention": BilinearAttention, LowRankBilinearAttention.

Generated from book/bilinear_attention.ipynb by ``python -m autograder export``. Do not edit this
file: edit the ``#@save bilinear`` cells of the notebook, then run ``make export``.
"""

import torch
from torch import nn

from solutions.additive import check_qkv
from solutions.masking import masked_softmax


class BilinearAttention(nn.Module):
    """Bilinear (Luong's "general") attention: a(q, k) = qᵀ W k.

    Args:
        query_size: size d_q of each query.
        key_size: size d_k of each key.
        dropout: dropout probability applied to the attention weights.

    Shape:
        - queries: (B, m, d_q)
        - keys: (B, n, d_k)
        - values: (B, n, v)
        - valid_lens: None, (B,) or (B, m)
        - output: (B, m, v); ``attention_weights``: (B, m, n); ``W``: (d_q, d_k)
    """

    def __init__(self, query_size, key_size, dropout, **kwargs):
        super().__init__(**kwargs)
        self.W = nn.Parameter(torch.empty(query_size, key_size))
        nn.init.xavier_uniform_(self.W)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        check_qkv(queries, keys, values)
        # (B, m, d_q) @ (d_q, d_k) -> (B, m, d_k); @ (B, d_k, n) -> (B, m, n)
        scores = torch.bmm(queries @ self.W, keys.transpose(1, 2))
        self.attention_weights = masked_softmax(scores, valid_lens)
        # (B, m, n) @ (B, n, v) -> (B, m, v)
        return torch.bmm(self.dropout(self.attention_weights), values)


class LowRankBilinearAttention(nn.Module):
    """Bilinear attention with a rank-r W = W_qᵀ W_k, stored as its two factors.

    The score is a(q, k) = qᵀ W k with W = W_qᵀ W_k, unscaled, computed without forming the
    (d_q, d_k) matrix W.

    Args:
        query_size: size d_q of each query.
        key_size: size d_k of each key.
        rank: the rank r of W, the number of rows of each factor.
        dropout: dropout probability applied to the attention weights.

    Shape:
        - queries: (B, m, d_q)
        - keys: (B, n, d_k)
        - values: (B, n, v)
        - valid_lens: None, (B,) or (B, m)
        - output: (B, m, v); ``attention_weights``: (B, m, n)
        - ``W_q.weight``: (r, d_q); ``W_k.weight``: (r, d_k)
    """

    def __init__(self, query_size, key_size, rank, dropout, **kwargs):
        super().__init__(**kwargs)
        self.W_q = nn.Linear(query_size, rank, bias=False)
        self.W_k = nn.Linear(key_size, rank, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        check_qkv(queries, keys, values)
        # (B, m, d_q) -> (B, m, r) and (B, n, d_k) -> (B, n, r): W is never formed
        queries, keys = self.W_q(queries), self.W_k(keys)
        # (B, m, r) @ (B, r, n) -> (B, m, n)
        scores = torch.bmm(queries, keys.transpose(1, 2))
        self.attention_weights = masked_softmax(scores, valid_lens)
        # (B, m, n) @ (B, n, v) -> (B, m, v)
        return torch.bmm(self.dropout(self.attention_weights), values)
