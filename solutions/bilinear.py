"""From the chapter "Bilinear attention": BilinearAttention.

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
