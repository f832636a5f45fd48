"""From the chapter "Self-attention and positional encoding": check_sequence, SelfAttention, positional_encoding, PositionalEncoding, RelativeSelfAttention.

Generated from book/self_attention.ipynb by ``python -m autograder export``. Do not edit this
file: edit the ``#@save self_attention`` cells of the notebook, then run ``make export``.
"""

import math

import torch
from torch import nn

from solutions.dot_product import DotProductAttention
from solutions.masking import masked_softmax


def check_sequence(X, size, name="X"):
    """Raise a clear error unless ``X`` is a floating-point (B, N, size) tensor."""
    if not isinstance(X, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(X).__name__}")
    if X.dim() != 3 or X.shape[-1] != size or not X.is_floating_point():
        raise ValueError(
            f"{name} must be a floating-point tensor of shape (batch, steps, {size}), "
            f"got shape {tuple(X.shape)} and dtype {X.dtype}"
        )


class SelfAttention(nn.Module):
    """Single-head self-attention: queries, keys and values are projections of one input.

    Args:
        input_size: size D_X of each input vector.
        query_size: size D_Q of each query and each key.
        value_size: size D_V of each value, and of each output vector.
        dropout: dropout probability applied to the attention weights.
        bias: whether the three projections have a bias.

    Shape:
        - X: (B, N, D_X)
        - valid_lens: None, (B,) or (B, N)
        - output: (B, N, D_V); ``attention_weights``: (B, N, N)
    """

    def __init__(self, input_size, query_size, value_size, dropout, bias=False, **kwargs):
        super().__init__(**kwargs)
        self.W_q = nn.Linear(input_size, query_size, bias=bias)
        self.W_k = nn.Linear(input_size, query_size, bias=bias)
        self.W_v = nn.Linear(input_size, value_size, bias=bias)
        self.attention = DotProductAttention(dropout)

    @property
    def attention_weights(self):
        return self.attention.attention_weights

    def forward(self, X, valid_lens=None):
        check_sequence(X, self.W_q.in_features)
        queries = self.W_q(X)  # (B, N, D_X) -> (B, N, D_Q)
        keys = self.W_k(X)  # (B, N, D_X) -> (B, N, D_Q)
        values = self.W_v(X)  # (B, N, D_X) -> (B, N, D_V)
        return self.attention(queries, keys, values, valid_lens)  # (B, N, D_V)


def positional_encoding(max_len, num_hiddens):
    """The sinusoidal positional encoding P of Vaswani et al. (2017).

    P[i, 2j] = sin(i / 10000^(2j / num_hiddens)) and P[i, 2j + 1] = cos(i / 10000^(2j / num_hiddens)).

    Args:
        max_len: number of positions, 0 to max_len - 1.
        num_hiddens: size d of each encoding; must be even.

    Shape:
        - output: (max_len, num_hiddens), float32
    """
    if num_hiddens <= 0 or num_hiddens % 2:
        raise ValueError(f"num_hiddens must be a positive even number, got {num_hiddens}")
    positions = torch.arange(max_len, dtype=torch.float64)[:, None]  # (max_len, 1)
    exponents = torch.arange(0, num_hiddens, 2, dtype=torch.float64) / num_hiddens  # (d/2,)
    angles = positions / torch.pow(10000.0, exponents)  # (max_len, 1) / (d/2,) -> (max_len, d/2)
    P = torch.empty(max_len, num_hiddens, dtype=torch.float64)
    P[:, 0::2] = torch.sin(angles)
    P[:, 1::2] = torch.cos(angles)
    return P.float()


class PositionalEncoding(nn.Module):
    """Add the sinusoidal positional encoding to a batch of sequences, then dropout.

    Args:
        num_hiddens: size d of each input vector; must be even.
        dropout: dropout probability applied to the sum.
        max_len: the longest sequence it can encode.

    Shape:
        - X: (B, N, num_hiddens) with N <= max_len
        - output: (B, N, num_hiddens)
    """

    def __init__(self, num_hiddens, dropout, max_len=1000):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        P = positional_encoding(max_len, num_hiddens)[None]  # (1, max_len, d)
        self.register_buffer("P", P, persistent=False)

    def forward(self, X):
        check_sequence(X, self.P.shape[-1])
        if X.shape[1] > self.P.shape[1]:
            raise ValueError(
                f"sequences of length {X.shape[1]} are longer than max_len={self.P.shape[1]}"
            )
        return self.dropout(X + self.P[:, : X.shape[1]].to(X.dtype))  # (B, N, d) + (1, N, d)


class RelativeSelfAttention(nn.Module):
    """Self-attention with a learned bias for each clipped relative position j - i.

    The score of query i against key j is q_i·k_j / √D_Q + relative_bias[K + clip(j - i, -K, K)].

    Args:
        input_size: size D_X of each input vector.
        query_size: size D_Q of each query and each key.
        value_size: size D_V of each value, and of each output vector.
        max_distance: K; offsets beyond ±K share the bias of ±K.
        dropout: dropout probability applied to the attention weights.
        bias: whether the three projections have a bias.

    Shape:
        - X: (B, N, D_X)
        - valid_lens: None, (B,) or (B, N)
        - output: (B, N, D_V); ``attention_weights``: (B, N, N)
    """

    def __init__(
        self, input_size, query_size, value_size, max_distance, dropout, bias=False, **kwargs
    ):
        super().__init__(**kwargs)
        self.W_q = nn.Linear(input_size, query_size, bias=bias)
        self.W_k = nn.Linear(input_size, query_size, bias=bias)
        self.W_v = nn.Linear(input_size, value_size, bias=bias)
        self.max_distance = max_distance
        # entry K + δ: the bias of a key δ positions after its query, δ = -K, ..., K
        self.relative_bias = nn.Parameter(torch.zeros(2 * max_distance + 1))
        self.dropout = nn.Dropout(dropout)
        self.attention_weights = None

    def forward(self, X, valid_lens=None):
        check_sequence(X, self.W_q.in_features)
        queries, keys, values = self.W_q(X), self.W_k(X), self.W_v(X)  # (B, N, D_Q), …, (B, N, D_V)
        d = queries.shape[-1]
        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)  # (B, N, N)
        positions = torch.arange(X.shape[1], device=X.device)  # (N,)
        offsets = positions[None, :] - positions[:, None]  # (N, N): entry (i, j) is j - i
        K = self.max_distance
        bias = self.relative_bias[offsets.clamp(-K, K) + K]  # (N, N)
        self.attention_weights = masked_softmax(scores + bias, valid_lens)  # (B, N, N) + (N, N)
        return torch.bmm(self.dropout(self.attention_weights), values)  # (B, N, D_V)
