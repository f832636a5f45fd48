"""From the chapter "Attention today": sliding_window_mask, apply_rope, alibi_slopes, alibi_bias, GroupedQueryAttention.

Generated from book/modern_attention.ipynb by ``python -m autograder export``. Do not edit this
file: edit the ``#@save modern`` cells of the notebook, then run ``make export``.
"""

import math

import torch
from torch import nn

from solutions.additive import check_qkv
from solutions.dot_product import DotProductAttention
from solutions.multihead import transpose_output, transpose_qkv


def sliding_window_mask(num_queries, num_keys, window, device=None):
    """The causal sliding-window mask: True where a query may attend to a key.

    The queries are the last ``num_queries`` positions of the ``num_keys`` keys' sequence:
    query i is at position num_keys - num_queries + i, and it sees the ``window`` positions
    that end at its own.

    Args:
        num_queries: number m of queries.
        num_keys: number n of keys, at positions 0 to n - 1; at least m.
        window: number w of positions each query sees, its own included; at least 1.
        device: where to make the mask.

    Shape:
        - output: (m, n), torch.bool; entry [i, j] is 0 <= (n - m + i) - j < w
    """
    if window < 1:
        raise ValueError(f"window must be at least 1, got window={window}")
    if num_queries > num_keys:
        raise ValueError(
            f"num_queries={num_queries} must not exceed num_keys={num_keys}: the queries are "
            "the last positions of the keys' sequence"
        )
    query_positions = torch.arange(num_keys - num_queries, num_keys, device=device)  # (m,)
    key_positions = torch.arange(num_keys, device=device)  # (n,)
    distance = query_positions[:, None] - key_positions[None, :]  # (m, 1) - (1, n) -> (m, n)
    return (distance >= 0) & (distance < window)


def apply_rope(X, offset=0, base=10000.0):
    """Rotary position embedding: turn each pair of features by an angle that grows with position.

    The vector at index t along axis -2 is at position p = offset + t; its features (2i, 2i+1)
    are turned by the angle p·θ_i, with θ_i = base^(-2i/d) (Su et al.).

    Args:
        X: queries or keys.
        offset: the position of the first vector.
        base: the base b of the frequencies.

    Shape:
        - X: (..., T, d), d even
        - output: (..., T, d), same dtype and device as X
    """
    if not isinstance(X, torch.Tensor) or X.dim() < 2 or not X.is_floating_point():
        what = f"{tuple(X.shape)} and dtype {X.dtype}" if isinstance(X, torch.Tensor) else X
        raise ValueError(f"X must be a floating-point tensor of shape (..., T, d), got {what}")
    if X.shape[-1] % 2:
        raise ValueError(f"RoPE turns pairs of features: d must be even, got d={X.shape[-1]}")
    T, d = X.shape[-2], X.shape[-1]
    dtype = torch.float64 if X.dtype == torch.float64 else torch.float32
    positions = torch.arange(offset, offset + T, device=X.device, dtype=dtype)  # (T,)
    theta = base ** (-torch.arange(0, d, 2, device=X.device, dtype=dtype) / d)  # (d/2,)
    angles = positions[:, None] * theta[None, :]  # (T, 1) * (1, d/2) -> (T, d/2)
    cos, sin = torch.cos(angles), torch.sin(angles)
    x = X.to(dtype)
    even, odd = x[..., 0::2], x[..., 1::2]  # (..., T, d/2) each
    turned = torch.stack(
        [even * cos - odd * sin, even * sin + odd * cos], dim=-1
    )  # (..., T, d/2, 2)
    return turned.flatten(-2).to(X.dtype)  # (..., T, d)


def alibi_slopes(num_heads, device=None):
    """ALiBi's fixed slope of each head (Press et al.): 2^(-8/H), 2^(-16/H), ..., for H heads.

    For a number of heads that is not a power of two, the slopes of the nearest power of two
    below, then every other slope of the next power of two, as in the paper's code.

    Shape:
        - output: (num_heads,), float32
    """
    if num_heads < 1:
        raise ValueError(f"num_heads must be at least 1, got {num_heads}")

    def geometric(n):  # the slopes for n heads, n a power of two
        return [2 ** (-8 * h / n) for h in range(1, n + 1)]

    below = 2 ** math.floor(math.log2(num_heads))
    slopes = geometric(below) + geometric(2 * below)[0::2][: num_heads - below]
    return torch.tensor(slopes, device=device)


def alibi_bias(num_heads, num_positions, device=None):
    """ALiBi's bias -m_h · (i - j) for the query at position i and the key at position j.

    Keys after the query get a positive bias; a causal mask hides them.

    Shape:
        - output: (num_heads, num_positions, num_positions), float32
    """
    slopes = alibi_slopes(num_heads, device)  # (h,)
    positions = torch.arange(num_positions, device=device)
    distance = positions[:, None] - positions[None, :]  # (T, 1) - (1, T) -> (T, T): i - j
    return -slopes[:, None, None] * distance  # (h, 1, 1) * (T, T) -> (h, T, T)


class GroupedQueryAttention(nn.Module):
    """Grouped-query attention (Ainslie et al.): h query heads share g key–value heads.

    Query head i reads key–value head i // (h / g). With g = h this is multi-head attention,
    with g = 1 multi-query attention (Shazeer).

    Args:
        num_hiddens: size d of the queries, keys, values and output.
        num_heads: number h of query heads; must divide num_hiddens.
        num_groups: number g of key–value heads; must divide num_heads.
        dropout: dropout probability applied to the attention weights.
        bias: whether the four projections have a bias.

    Shape:
        - queries: (B, m, d)
        - keys: (B, n, d)
        - values: (B, n, d)
        - valid_lens: None, (B,) or (B, m)
        - output: (B, m, d)
    """

    def __init__(self, num_hiddens, num_heads, num_groups, dropout, bias=False, **kwargs):
        super().__init__(**kwargs)
        if num_hiddens % num_heads:
            raise ValueError(f"num_heads={num_heads} must divide num_hiddens={num_hiddens}")
        if num_groups < 1 or num_heads % num_groups:
            raise ValueError(f"num_groups={num_groups} must divide num_heads={num_heads}")
        self.num_heads, self.num_groups = num_heads, num_groups
        kv_size = num_groups * (num_hiddens // num_heads)  # g heads of size d/h
        self.attention = DotProductAttention(dropout)
        self.W_q = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.W_k = nn.Linear(num_hiddens, kv_size, bias=bias)
        self.W_v = nn.Linear(num_hiddens, kv_size, bias=bias)
        self.W_o = nn.Linear(num_hiddens, num_hiddens, bias=bias)

    def forward(self, queries, keys, values, valid_lens=None):
        check_qkv(queries, keys, values)
        d = self.W_q.in_features
        if not queries.shape[-1] == keys.shape[-1] == values.shape[-1] == d:
            raise ValueError(
                f"queries, keys and values must have num_hiddens={d} features, got "
                f"{queries.shape[-1]}, {keys.shape[-1]} and {values.shape[-1]}"
            )
        h, g = self.num_heads, self.num_groups
        queries = transpose_qkv(self.W_q(queries), h)  # (B*h, m, d/h)
        keys = transpose_qkv(self.W_k(keys), g)  # (B*g, n, d/h)
        values = transpose_qkv(self.W_v(values), g)  # (B*g, n, d/h)
        # Entry b*g + j is key head j of example b. Repeating each entry h/g times in place
        # puts it at entries b*h + j*(h/g) ... b*h + (j+1)*(h/g) - 1: the query heads of group j.
        keys = keys.repeat_interleave(h // g, dim=0)  # (B*h, n, d/h)
        values = values.repeat_interleave(h // g, dim=0)  # (B*h, n, d/h)
        if valid_lens is not None:
            # Head i of example b is entry b*h + i: (B,) -> (B*h,), (B, m) -> (B*h, m)
            valid_lens = torch.repeat_interleave(valid_lens, h, dim=0)
        output = self.attention(queries, keys, values, valid_lens)  # (B*h, m, d/h)
        return self.W_o(transpose_output(output, h))  # (B, m, d)
