"""Unusual but correct answers to the exercises of the chapter "Attention today"."""

import torch

from solutions.multihead import transpose_output, transpose_qkv
from tests.unusual import unusual

# ----------------------------------------------------------------- sliding_window_mask


@unusual("sliding_window_mask")
def window_by_tril_and_triu(num_queries, num_keys, window, device=None):
    """The band of a square mask, tril & triu(-(w - 1)), and its last m rows."""
    if window < 1:
        raise ValueError(f"the window must be positive, got {window}")
    if num_queries > num_keys:
        raise ValueError(f"{num_queries} queries cannot be the last of {num_keys} keys")
    ones = torch.ones(num_keys, num_keys, dtype=torch.bool, device=device)
    band = ones.tril() & ones.triu(diagonal=-(window - 1))
    return band[num_keys - num_queries :]


@unusual("sliding_window_mask")
def window_by_a_loop(num_queries, num_keys, window, device=None):
    """Nested list comprehensions, then torch.tensor(..., device=device)."""
    if not window >= 1:
        raise ValueError(f"window={window}: a query must see at least itself")
    if num_queries > num_keys:
        raise ValueError(f"num_queries={num_queries} > num_keys={num_keys}")
    offset = num_keys - num_queries
    rows = [[0 <= offset + i - j < window for j in range(num_keys)] for i in range(num_queries)]
    return torch.tensor(rows, dtype=torch.bool, device=device).reshape(num_queries, num_keys)


# ----------------------------------------------------------------- apply_rope


@unusual("apply_rope")
def rope_with_complex_numbers(X, offset=0, base=10000.0):
    """RoFormer's form: each pair a complex number, turned by multiplying with e^(i·p·θ)."""
    T, d = X.shape[-2], X.shape[-1]
    real = torch.float64 if X.dtype == torch.float64 else torch.float32
    pairs = torch.view_as_complex(X.to(real).reshape(*X.shape[:-1], d // 2, 2).contiguous())
    positions = torch.arange(offset, offset + T, device=X.device, dtype=real)
    theta = base ** (-torch.arange(0, d, 2, device=X.device, dtype=real) / d)
    angles = torch.outer(positions, theta)  # (T, d/2)
    turns = torch.polar(torch.ones_like(angles), angles)  # e^(i·angle), complex
    return torch.view_as_real(pairs * turns).reshape(X.shape).to(X.dtype)


@unusual("apply_rope")
def rope_with_rotation_matrices(X, offset=0, base=10000.0):
    """A 2 × 2 rotation matrix per position and pair, applied with einsum."""
    T, d = X.shape[-2], X.shape[-1]
    real = torch.float64 if X.dtype == torch.float64 else torch.float32
    p = torch.arange(T, device=X.device, dtype=real) + offset
    i = torch.arange(d // 2, device=X.device, dtype=real)
    angles = p[:, None] * torch.exp(-2 * i / d * torch.log(torch.tensor(base, dtype=real)))
    c, s = angles.cos(), angles.sin()
    R = torch.stack([torch.stack([c, -s], -1), torch.stack([s, c], -1)], -2)  # (T, d/2, 2, 2)
    pairs = X.to(real).unflatten(-1, (d // 2, 2))  # (..., T, d/2, 2)
    return torch.einsum("tpab,...tpb->...tpa", R, pairs).flatten(-2).to(X.dtype)


@unusual("apply_rope")
def rope_pair_by_pair(X, offset=0, base=10000.0):
    """A Python loop over the pairs, each turned with its own cos and sin column."""
    T, d = X.shape[-2], X.shape[-1]
    work = torch.float64 if X.dtype == torch.float64 else torch.float32
    x = X.to(work)
    p = offset + torch.arange(T, device=X.device, dtype=work)
    out = []
    for k in range(d // 2):
        angle = p * base ** (-2 * k / d)  # (T,)
        a, b = x[..., 2 * k], x[..., 2 * k + 1]
        out += [a * angle.cos() - b * angle.sin(), a * angle.sin() + b * angle.cos()]
    return torch.stack(out, dim=-1).to(X.dtype)


# ----------------------------------------------------------------- GroupedQueryAttention


@unusual("GroupedQueryAttention")
def grouped_without_copying(self, queries, keys, values, valid_lens=None):
    """The query heads of a group reshaped beside each other and broadcast against their one
    key head with einsum: no copy of the keys or values."""
    import math

    from solutions.masking import masked_softmax

    h, g = self.num_heads, self.num_groups
    B, m, d = queries.shape
    n, size = keys.shape[1], d // h
    q = self.W_q(queries).reshape(B, m, g, h // g, size)  # head i = (group i // r, i % r)
    k = self.W_k(keys).reshape(B, n, g, size)
    v = self.W_v(values).reshape(B, n, g, size)
    scores = torch.einsum("bmgrs,bngs->bgrmn", q, k) / math.sqrt(size)  # (B, g, r, m, n)
    lens = None if valid_lens is None else valid_lens.repeat_interleave(h, dim=0)
    weights = masked_softmax(scores.reshape(B * h, m, n), lens).reshape(B, g, h // g, m, n)
    out = torch.einsum("bgrmn,bngs->bmgrs", self.attention.dropout(weights), v)
    return self.W_o(out.reshape(B, m, d))


@unusual("GroupedQueryAttention")
def pytorch_grouped_query_attention(self, queries, keys, values, valid_lens=None):
    """F.scaled_dot_product_attention with enable_gqa=True, a boolean mask, and the dropout
    probability of self.attention in training only."""
    h, g = self.num_heads, self.num_groups
    B, m, d = queries.shape
    n, size = keys.shape[1], d // h
    q = self.W_q(queries).reshape(B, m, h, size).transpose(1, 2)  # (B, h, m, d/h)
    k = self.W_k(keys).reshape(B, n, g, size).transpose(1, 2)  # (B, g, n, d/h)
    v = self.W_v(values).reshape(B, n, g, size).transpose(1, 2)  # (B, g, n, d/h)
    mask = None
    if valid_lens is not None:
        lens = valid_lens if valid_lens.dim() == 2 else valid_lens[:, None].expand(B, m)
        mask = (torch.arange(n, device=q.device) < lens[..., None])[:, None]  # (B, 1, m, n)
    p = self.attention.dropout.p if self.training else 0.0
    out = torch.nn.functional.scaled_dot_product_attention(
        q, k, v, attn_mask=mask, dropout_p=p, enable_gqa=True
    )
    return self.W_o(out.transpose(1, 2).reshape(B, m, d))


@unusual("GroupedQueryAttention")
def keys_expanded_in_four_dimensions(self, queries, keys, values, valid_lens=None):
    """Llama's repeat_kv: (B, g, n, s) expanded to (B, g, r, n, s), a view, then reshaped."""
    h, g = self.num_heads, self.num_groups
    B, n = keys.shape[0], keys.shape[1]
    q = transpose_qkv(self.W_q(queries), h)
    k = transpose_qkv(self.W_k(keys), g)
    v = transpose_qkv(self.W_v(values), g)
    size = k.shape[-1]
    k = k.reshape(B, g, 1, n, size).expand(B, g, h // g, n, size).reshape(B * h, n, size)
    v = v.reshape(B, g, 1, n, size).expand(B, g, h // g, n, size).reshape(B * h, n, size)
    lens = valid_lens
    if lens is not None:
        lens = lens.reshape(B, 1, *lens.shape[1:]).expand(B, h, *lens.shape[1:])
        lens = lens.reshape(B * h, *valid_lens.shape[1:])
    return self.W_o(transpose_output(self.attention(q, k, v, lens), h))


# ---------------------------------------------------------------- check your understanding


@unusual("quiz_13_1")
def alibi_letter_in_capitals():
    """The right letter in capitals."""
    answer_13_1 = "A"  # noqa: F841


@unusual("quiz_13_1")
def alibi_letter_with_spaces():
    """The right letter with spaces around it."""
    answer_13_1 = " a "  # noqa: F841


@unusual("quiz_13_2")
def kv_bytes_computed():
    """The bytes as the product that gives them."""
    answer_13_2 = 2 * 80 * 8 * 128 * 2  # noqa: F841


@unusual("quiz_13_2")
def kv_bytes_as_a_float():
    """The bytes as a float, 320 KiB."""
    answer_13_2 = 320 * 1024.0  # noqa: F841


@unusual("quiz_13_3")
def window_reach_computed():
    """The position as the sum that gives it."""
    answer_13_3 = 20 - 3 * (4 - 1)  # noqa: F841


@unusual("quiz_13_3")
def window_reach_as_a_tensor():
    """The position as a 0-d tensor."""
    answer_13_3 = torch.tensor(11)  # noqa: F841
