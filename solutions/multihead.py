"""From the chapter "Causal and multi-head attention": causal_valid_lens, check_heads, transpose_qkv, transpose_output, MultiHeadAttention.

Generated from book/multi_head_attention.ipynb by ``python -m autograder export``. Do not edit this
file: edit the ``#@save multihead`` cells of the notebook, then run ``make export``.
"""

import torch
from torch import nn

from solutions.additive import check_qkv
from solutions.dot_product import DotProductAttention
from solutions.masking import check_lengths


def causal_valid_lens(X, valid_lens=None):
    """Per-query valid lengths for causal self-attention: query t sees keys 0..t, within the padding.

    Args:
        X: the batch of sequences (only its batch size, length and device are used).
        valid_lens: ``None``, or the valid length of each sequence.

    Shape:
        - X: (B, T, *)
        - valid_lens: None or (B,)
        - output: (B, T), int64, on X's device
    """
    if not isinstance(X, torch.Tensor) or X.dim() < 2:
        shape = tuple(X.shape) if isinstance(X, torch.Tensor) else type(X).__name__
        raise ValueError(f"X must have shape (B, T, *), got {shape}")
    B, T = X.shape[0], X.shape[1]
    if valid_lens is not None:
        check_lengths(X, valid_lens, [(B,)], "valid_lens")
    lens = torch.arange(1, T + 1, device=X.device).repeat(B, 1)  # (B, T): query t sees t + 1 keys
    if valid_lens is not None:
        lens = torch.minimum(lens, valid_lens[:, None].long())  # (B, T) and (B, 1) -> (B, T)
    return lens


def check_heads(X, num_heads, dim):
    """Raise a clear error unless X is 3-D and num_heads divides its axis ``dim``."""
    if not isinstance(X, torch.Tensor) or X.dim() != 3:
        shape = tuple(X.shape) if isinstance(X, torch.Tensor) else type(X).__name__
        raise ValueError(f"X must be a 3-D tensor, got {shape}")
    if X.shape[dim] % num_heads:
        raise ValueError(f"num_heads={num_heads} must divide X.shape[{dim}]={X.shape[dim]}")


def transpose_qkv(X, num_heads):
    """Split the features into heads and move the heads into the batch.

    Shape:
        - X: (B, T, num_hiddens)
        - output: (B * num_heads, T, num_hiddens / num_heads); entry b * num_heads + i is
          head i of example b
    """
    check_heads(X, num_heads, dim=2)
    B, T, H = X.shape
    X = X.reshape(B, T, num_heads, H // num_heads)  # (B, T, nh, hs)
    X = X.permute(0, 2, 1, 3)  # (B, nh, T, hs)
    return X.reshape(B * num_heads, T, H // num_heads)  # (B*nh, T, hs)


def transpose_output(X, num_heads):
    """Undo transpose_qkv: move the heads out of the batch and concatenate their features.

    Shape:
        - X: (B * num_heads, T, head_size)
        - output: (B, T, num_heads * head_size)
    """
    check_heads(X, num_heads, dim=0)
    BH, T, hs = X.shape
    X = X.reshape(BH // num_heads, num_heads, T, hs)  # (B, nh, T, hs)
    X = X.permute(0, 2, 1, 3)  # (B, T, nh, hs)
    return X.reshape(BH // num_heads, T, num_heads * hs)  # (B, T, nh*hs)


class MultiHeadAttention(nn.Module):
    """Multi-head scaled dot-product attention (d2l's signature).

    Args:
        num_hiddens: size d of the queries, keys, values and output.
        num_heads: number of heads h; must divide num_hiddens.
        dropout: dropout probability applied to the attention weights.
        bias: whether the four projections have a bias.

    Shape:
        - queries: (B, m, d)
        - keys: (B, n, d)
        - values: (B, n, d)
        - valid_lens: None, (B,) or (B, m)
        - output: (B, m, d); ``attention_weights``: (B, h, m, n)
    """

    def __init__(self, num_hiddens, num_heads, dropout, bias=False, **kwargs):
        super().__init__(**kwargs)
        if num_hiddens % num_heads:
            raise ValueError(f"num_heads={num_heads} must divide num_hiddens={num_hiddens}")
        self.num_heads = num_heads
        self.attention = DotProductAttention(dropout)
        self.W_q = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.W_k = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.W_v = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.W_o = nn.Linear(num_hiddens, num_hiddens, bias=bias)

    @property
    def attention_weights(self):
        weights = self.attention.attention_weights  # (B*h, m, n)
        return weights.reshape(-1, self.num_heads, *weights.shape[1:])  # (B, h, m, n)

    def forward(self, queries, keys, values, valid_lens=None):
        check_qkv(queries, keys, values)
        d = self.W_q.in_features
        if not queries.shape[-1] == keys.shape[-1] == values.shape[-1] == d:
            raise ValueError(
                f"queries, keys and values must have num_hiddens={d} features, got "
                f"{queries.shape[-1]}, {keys.shape[-1]} and {values.shape[-1]}"
            )
        queries = transpose_qkv(self.W_q(queries), self.num_heads)  # (B*h, m, d/h)
        keys = transpose_qkv(self.W_k(keys), self.num_heads)  # (B*h, n, d/h)
        values = transpose_qkv(self.W_v(values), self.num_heads)  # (B*h, n, d/h)
        if valid_lens is not None:
            # Head i of example b is entry b*h + i: (B,) -> (B*h,), (B, m) -> (B*h, m)
            valid_lens = torch.repeat_interleave(valid_lens, self.num_heads, dim=0)
        output = self.attention(queries, keys, values, valid_lens)  # (B*h, m, d/h)
        return self.W_o(transpose_output(output, self.num_heads))  # (B, m, d)
