"""Wrong answers to the exercises of the chapter "Attention today"."""

import math

import torch

from solutions.multihead import transpose_output, transpose_qkv
from tests.wrong import wrong

# ----------------------------------------------------------------- sliding_window_mask


@wrong(
    "sliding_window_mask",
    {
        "sliding_window_mask": "sliding_window_mask(5, 5, 3): query 3, at position 3, may attend to keys [0, 1, 2, 3], expected [1, 2, 3]",
        "sliding_window_mask.values": "sliding_window_mask(1, 9, 1): query 0, at position 8, may attend to keys [7, 8], expected [8]",
    },
)
def window_one_too_wide(num_queries, num_keys, window, device=None):
    """<= instead of <: each query sees w + 1 positions."""
    if window < 1:
        raise ValueError(f"window must be at least 1, got window={window}")
    if num_queries > num_keys:
        raise ValueError(f"num_queries={num_queries} exceeds num_keys={num_keys}")
    queries = torch.arange(num_keys - num_queries, num_keys, device=device)[:, None]
    keys = torch.arange(num_keys, device=device)[None, :]
    return (queries - keys >= 0) & (queries - keys <= window)


@wrong(
    "sliding_window_mask",
    {
        "sliding_window_mask": "sliding_window_mask(1, 6, 3): query 0, at position 5, may attend to keys [0], expected [3, 4, 5]",
        "sliding_window_mask.values": "sliding_window_mask(1, 9, 1): query 0, at position 8, may attend to keys [0], expected [8]",
    },
)
def queries_at_the_start(num_queries, num_keys, window, device=None):
    """The queries placed at positions 0 to m - 1: right only when m = n."""
    if window < 1:
        raise ValueError(f"window must be at least 1, got window={window}")
    if num_queries > num_keys:
        raise ValueError(f"num_queries={num_queries} exceeds num_keys={num_keys}")
    queries = torch.arange(num_queries, device=device)[:, None]
    keys = torch.arange(num_keys, device=device)[None, :]
    return (queries - keys >= 0) & (queries - keys < window)


@wrong(
    "sliding_window_mask",
    {
        "sliding_window_mask": "sliding_window_mask(2, 6, 3): query 0, at position 4, may attend to keys [2, 3, 4, 5], expected [2, 3, 4]",
        "sliding_window_mask.values": "sliding_window_mask(7, 7, 2): query 0, at position 0, may attend to keys [0, 1], expected [0]",
    },
)
def window_without_the_causal_side(num_queries, num_keys, window, device=None):
    """|t - j| < w: a window on both sides (Longformer's encoder), so queries see the future."""
    if window < 1:
        raise ValueError(f"window must be at least 1, got window={window}")
    if num_queries > num_keys:
        raise ValueError(f"num_queries={num_queries} exceeds num_keys={num_keys}")
    queries = torch.arange(num_keys - num_queries, num_keys, device=device)[:, None]
    keys = torch.arange(num_keys, device=device)[None, :]
    return (queries - keys).abs() < window


@wrong(
    "sliding_window_mask",
    {
        "sliding_window_mask": "sliding_window_mask(4, 4, 0) returned a mask; expected a ValueError",
        "sliding_window_mask.errors": "sliding_window_mask(3, 7, -2) returned a mask; expected a ValueError",
    },
)
def no_checks(num_queries, num_keys, window, device=None):
    """The mask without the checks of its arguments: bad input gives an empty mask, silently."""
    queries = torch.arange(num_keys - num_queries, num_keys, device=device)[:, None]
    keys = torch.arange(num_keys, device=device)[None, :]
    return (queries - keys >= 0) & (queries - keys < window)


@wrong(
    "sliding_window_mask",
    {
        "sliding_window_mask": "sub got a tensor of shape (3, 1) on the CPU",
        "sliding_window_mask.errors": "sub got a tensor of shape (4, 1) on the CPU",
    },
)
def positions_on_the_cpu(num_queries, num_keys, window, device=None):
    """Positions made without device=, then the mask moved: the CPU mixes with the device."""
    if window < 1:
        raise ValueError(f"window must be at least 1, got window={window}")
    if num_queries > num_keys:
        raise ValueError(f"num_queries={num_queries} exceeds num_keys={num_keys}")
    queries = torch.arange(num_keys - num_queries, num_keys)[:, None]
    keys = torch.arange(num_keys, device=device)[None, :]
    return (queries - keys >= 0) & (queries - keys < window)


@wrong(
    "sliding_window_mask",
    {
        "sliding_window_mask": "sliding_window_mask(5, 5, 3, device='cpu') has dtype torch.float32, expected torch.bool",
    },
)
def mask_of_zeros_and_ones(num_queries, num_keys, window, device=None):
    """A float mask of 0 and 1: F.scaled_dot_product_attention would add it to the scores."""
    if window < 1:
        raise ValueError(f"window must be at least 1, got window={window}")
    if num_queries > num_keys:
        raise ValueError(f"num_queries={num_queries} exceeds num_keys={num_keys}")
    queries = torch.arange(num_keys - num_queries, num_keys, device=device)[:, None]
    keys = torch.arange(num_keys, device=device)[None, :]
    return ((queries - keys >= 0) & (queries - keys < window)).float()


@wrong(
    "sliding_window_mask",
    {
        "sliding_window_mask": "sliding_window_mask(4, 4, 0) raised AssertionError (without a message); expected a ValueError",
    },
)
def checks_with_assert(num_queries, num_keys, window, device=None):
    """assert instead of raise: an AssertionError without a message (and none under python -O)."""
    assert window >= 1
    assert num_queries <= num_keys
    queries = torch.arange(num_keys - num_queries, num_keys, device=device)[:, None]
    keys = torch.arange(num_keys, device=device)[None, :]
    return (queries - keys >= 0) & (queries - keys < window)


# ----------------------------------------------------------------- apply_rope


@wrong(
    "apply_rope",
    {
        "apply_rope": "(the output is what RoPE gives when it pairs feature i with feature i + d/2",
        "apply_rope.values": "apply_rope(X of shape (2, 4, 6), offset=7, base=10000) in torch.float32: row index (0, 0) is wrong",
    },
)
def pairs_first_half_with_second(X, offset=0, base=10000.0):
    """Feature i turned with feature i + d/2 (the rotate_half layout): a valid RoPE, another one."""
    T, d = X.shape[-2], X.shape[-1]
    dtype = torch.float64 if X.dtype == torch.float64 else torch.float32
    positions = torch.arange(offset, offset + T, device=X.device, dtype=dtype)
    theta = base ** (-torch.arange(0, d, 2, device=X.device, dtype=dtype) / d)
    angles = positions[:, None] * theta[None, :]
    cos, sin = torch.cos(angles), torch.sin(angles)
    x = X.to(dtype)
    first, second = x[..., : d // 2], x[..., d // 2 :]
    turned = torch.cat([first * cos - second * sin, first * sin + second * cos], dim=-1)
    return turned.to(X.dtype)


@wrong(
    "apply_rope",
    {
        "apply_rope": "(the output is what RoPE gives when it counts positions from 1",
        "apply_rope.values": "apply_rope(X of shape (5, 2), offset=0, base=10000) in torch.float32: row index (0,) is wrong",
        "apply_rope.properties": "apply_rope(X, offset=0) at position 0 (an angle of 0: the vector must not change)",
    },
)
def positions_start_at_one(X, offset=0, base=10000.0):
    """Positions offset + 1 to offset + T: the relative property holds, position 0 turns."""
    T, d = X.shape[-2], X.shape[-1]
    dtype = torch.float64 if X.dtype == torch.float64 else torch.float32
    positions = torch.arange(offset + 1, offset + T + 1, device=X.device, dtype=dtype)
    theta = base ** (-torch.arange(0, d, 2, device=X.device, dtype=dtype) / d)
    angles = positions[:, None] * theta[None, :]
    cos, sin = torch.cos(angles), torch.sin(angles)
    x = X.to(dtype)
    even, odd = x[..., 0::2], x[..., 1::2]
    turned = torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1)
    return turned.flatten(-2).to(X.dtype)


@wrong(
    "apply_rope",
    {
        "apply_rope": "(the output is what RoPE gives when it turns the pairs the other way",
        "apply_rope.values": "apply_rope(X of shape (5, 2), offset=0, base=10000) in torch.float32: row index (1,) is wrong",
    },
)
def turns_the_wrong_way(X, offset=0, base=10000.0):
    """The transpose of the rotation: every pair turns by -p·θ_i."""
    T, d = X.shape[-2], X.shape[-1]
    dtype = torch.float64 if X.dtype == torch.float64 else torch.float32
    positions = torch.arange(offset, offset + T, device=X.device, dtype=dtype)
    theta = base ** (-torch.arange(0, d, 2, device=X.device, dtype=dtype) / d)
    angles = positions[:, None] * theta[None, :]
    cos, sin = torch.cos(angles), torch.sin(angles)
    x = X.to(dtype)
    even, odd = x[..., 0::2], x[..., 1::2]
    turned = torch.stack([even * cos + odd * sin, -even * sin + odd * cos], dim=-1)
    return turned.flatten(-2).to(X.dtype)


@wrong(
    "apply_rope",
    {
        "apply_rope": "(the output is RoPE at offset 0: offset=2 was not used)",
        "apply_rope.values": "(the output is RoPE at offset 0: offset=7 was not used)",
    },
)
def ignores_the_offset(X, offset=0, base=10000.0):
    """Positions 0 to T - 1 whatever the offset: a cached model would restart at 0 every step."""
    T, d = X.shape[-2], X.shape[-1]
    dtype = torch.float64 if X.dtype == torch.float64 else torch.float32
    positions = torch.arange(T, device=X.device, dtype=dtype)
    theta = base ** (-torch.arange(0, d, 2, device=X.device, dtype=dtype) / d)
    angles = positions[:, None] * theta[None, :]
    cos, sin = torch.cos(angles), torch.sin(angles)
    x = X.to(dtype)
    even, odd = x[..., 0::2], x[..., 1::2]
    turned = torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1)
    return turned.flatten(-2).to(X.dtype)


@wrong(
    "apply_rope",
    {
        "apply_rope": "mul got a tensor of shape (3, 3) on the CPU",
        "apply_rope.properties": "mul got a tensor of shape (4, 4) on the CPU",
    },
)
def tables_on_the_cpu(X, offset=0, base=10000.0):
    """torch.arange without device=: the cos/sin tables are made on the CPU."""
    T, d = X.shape[-2], X.shape[-1]
    dtype = torch.float64 if X.dtype == torch.float64 else torch.float32
    positions = torch.arange(offset, offset + T, dtype=dtype)
    theta = base ** (-torch.arange(0, d, 2, dtype=dtype) / d)
    angles = positions[:, None] * theta[None, :]
    cos, sin = torch.cos(angles), torch.sin(angles)
    x = X.to(dtype)
    even, odd = x[..., 0::2], x[..., 1::2]
    turned = torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1)
    return turned.flatten(-2).to(X.dtype)


@wrong(
    "apply_rope",
    {
        "apply_rope": "(the output is right to float32's precision only: for float64 input, compute the angles in float64)",
        "apply_rope.values": "apply_rope(X of shape (5, 2), offset=0, base=10000) in torch.float64: row index (1,) is wrong",
    },
)
def tables_in_float32(X, offset=0, base=10000.0):
    """The angles always in float32: float64 input gets float32's precision."""
    T, d = X.shape[-2], X.shape[-1]
    positions = torch.arange(offset, offset + T, device=X.device, dtype=torch.float32)
    theta = base ** (-torch.arange(0, d, 2, device=X.device, dtype=torch.float32) / d)
    angles = positions[:, None] * theta[None, :]
    cos, sin = torch.cos(angles).to(X.dtype), torch.sin(angles).to(X.dtype)
    even, odd = X[..., 0::2], X[..., 1::2]
    turned = torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1)
    return turned.flatten(-2)


@wrong(
    "apply_rope",
    {
        "apply_rope": "apply_rope(X of shape (2, 4, 32), offset=500, base=10000) in torch.float16: row index (0, 0) is wrong",
        "apply_rope.values": "apply_rope(X of shape (2, 8, 32), offset=1000, base=10000) in torch.float16: row index (0, 0) is wrong",
    },
)
def tables_in_the_input_dtype(X, offset=0, base=10000.0):
    """The angles in X's dtype: in float16, position 500 is known to a quarter, not to 1e-7."""
    T, d = X.shape[-2], X.shape[-1]
    positions = torch.arange(offset, offset + T, device=X.device).to(X.dtype)
    theta = base ** (-torch.arange(0, d, 2, device=X.device).to(X.dtype) / d)
    angles = positions[:, None] * theta[None, :]
    cos, sin = torch.cos(angles), torch.sin(angles)
    even, odd = X[..., 0::2], X[..., 1::2]
    turned = torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1)
    return turned.flatten(-2)


@wrong(
    "apply_rope",
    {
        "apply_rope": "apply_rope(X of shape (1, 3, 4) and dtype torch.float32) modified its input X in place",
        "apply_rope.properties": "apply_rope(X of shape (2, 3, 8) and dtype torch.float32, offset=0) modified its input X in place",
    },
)
def turns_in_place(X, offset=0, base=10000.0):
    """Writes the turned pairs back into X: the caller's queries change."""
    T, d = X.shape[-2], X.shape[-1]
    dtype = torch.float64 if X.dtype == torch.float64 else torch.float32
    positions = torch.arange(offset, offset + T, device=X.device, dtype=dtype)
    theta = base ** (-torch.arange(0, d, 2, device=X.device, dtype=dtype) / d)
    angles = positions[:, None] * theta[None, :]
    cos, sin = torch.cos(angles).to(X.dtype), torch.sin(angles).to(X.dtype)
    even, odd = X[..., 0::2].clone(), X[..., 1::2].clone()
    X[..., 0::2] = even * cos - odd * sin
    X[..., 1::2] = even * sin + odd * cos
    return X


# ----------------------------------------------------------------- GroupedQueryAttention


@wrong(
    "GroupedQueryAttention",
    {
        "GroupedQueryAttention": "(the output is what query head i gives with key-value head i % g, for g=2: the heads are paired in the wrong order",
        "GroupedQueryAttention.sdpa": "the float64 output (d=12, h=4, g=2, B=2, m=3, n=5): row batch=0, query=0 is wrong",
    },
)
def heads_paired_with_repeat(self, queries, keys, values, valid_lens=None):
    """repeat instead of repeat_interleave: query head i reads key head i % g."""
    h, g = self.num_heads, self.num_groups
    B, n = keys.shape[0], keys.shape[1]
    queries = transpose_qkv(self.W_q(queries), h)
    keys = transpose_qkv(self.W_k(keys), g)
    values = transpose_qkv(self.W_v(values), g)
    size = keys.shape[-1]
    keys = keys.reshape(B, g, n, size).repeat(1, h // g, 1, 1).reshape(B * h, n, size)
    values = values.reshape(B, g, n, size).repeat(1, h // g, 1, 1).reshape(B * h, n, size)
    if valid_lens is not None:
        valid_lens = torch.repeat_interleave(valid_lens, h, dim=0)
    output = self.attention(queries, keys, values, valid_lens)
    return self.W_o(transpose_output(output, h))


@wrong(
    "GroupedQueryAttention",
    {
        "GroupedQueryAttention": "(the output is what each head gives with the valid length of another example, as valid_lens.repeat(h) gives them",
        "GroupedQueryAttention.sdpa": "(the output is what each head gives with the valid length of another example",
    },
)
def lengths_tiled_with_repeat(self, queries, keys, values, valid_lens=None):
    """valid_lens.repeat(h): head i of example b gets the length of another example."""
    h, g = self.num_heads, self.num_groups
    queries = transpose_qkv(self.W_q(queries), h)
    keys = transpose_qkv(self.W_k(keys), g).repeat_interleave(h // g, dim=0)
    values = transpose_qkv(self.W_v(values), g).repeat_interleave(h // g, dim=0)
    if valid_lens is not None:
        valid_lens = valid_lens.repeat(h, *[1] * (valid_lens.dim() - 1))
    output = self.attention(queries, keys, values, valid_lens)
    return self.W_o(transpose_output(output, h))


@wrong(
    "GroupedQueryAttention",
    {
        "GroupedQueryAttention": "raised ValueError: dot-product attention needs queries and keys of one size d, got 2 and 1",
        "GroupedQueryAttention.sdpa": "raised ValueError: dot-product attention needs queries and keys of one size d, got 4 and 2",
    },
)
def keys_split_into_query_heads(self, queries, keys, values, valid_lens=None):
    """The g·d/h key features split into h heads, as for the queries: heads of the wrong size."""
    h = self.num_heads
    queries = transpose_qkv(self.W_q(queries), h)
    keys = transpose_qkv(self.W_k(keys), h)
    values = transpose_qkv(self.W_v(values), h)
    if valid_lens is not None:
        valid_lens = torch.repeat_interleave(valid_lens, h, dim=0)
    output = self.attention(queries, keys, values, valid_lens)
    return self.W_o(transpose_output(output, h))


@wrong(
    "GroupedQueryAttention",
    {
        "GroupedQueryAttention": "the output for g = h = 2 against nn.MultiheadAttention: row batch=0, query=0 is wrong",
        "GroupedQueryAttention.sdpa": "the float64 output (d=8, h=2, g=1, B=1, m=1, n=1): row batch=0, query=0 is wrong",
    },
)
def no_output_projection(self, queries, keys, values, valid_lens=None):
    """Forgets W_o after merging the heads."""
    h, g = self.num_heads, self.num_groups
    queries = transpose_qkv(self.W_q(queries), h)
    keys = transpose_qkv(self.W_k(keys), g).repeat_interleave(h // g, dim=0)
    values = transpose_qkv(self.W_v(values), g).repeat_interleave(h // g, dim=0)
    if valid_lens is not None:
        valid_lens = torch.repeat_interleave(valid_lens, h, dim=0)
    return transpose_output(self.attention(queries, keys, values, valid_lens), h)


@wrong(
    "GroupedQueryAttention",
    {
        "GroupedQueryAttention": "the output with valid_lens [5, 2]: row batch=0, query=0 is wrong (6 of 6 rows differ)",
        "GroupedQueryAttention.sdpa": "the float64 output (d=12, h=4, g=2, B=2, m=3, n=5): row batch=0, query=0 is wrong",
    },
)
def scaled_by_the_model_width(self, queries, keys, values, valid_lens=None):
    """Its own softmax, with the scores divided by √d instead of √(d/h)."""
    h, g = self.num_heads, self.num_groups
    d = self.W_q.in_features
    q = transpose_qkv(self.W_q(queries), h)
    k = transpose_qkv(self.W_k(keys), g).repeat_interleave(h // g, dim=0)
    v = transpose_qkv(self.W_v(values), g).repeat_interleave(h // g, dim=0)
    if valid_lens is not None:
        valid_lens = torch.repeat_interleave(valid_lens, h, dim=0)
    from solutions.masking import masked_softmax

    weights = masked_softmax(q @ k.transpose(1, 2) / math.sqrt(d), valid_lens)
    return self.W_o(transpose_output(self.attention.dropout(weights) @ v, h))


@wrong(
    "GroupedQueryAttention",
    {
        "GroupedQueryAttention": "the weights read from the output in eval mode (p=0.5, h=4, g=2",
        "GroupedQueryAttention.contract": "the weights read from the output in eval mode (p=0.3, h=6, g=3",
    },
)
def dropout_in_eval_too(self, queries, keys, values, valid_lens=None):
    """F.dropout(weights, p) without training=self.training: it drops in eval mode too."""
    h, g = self.num_heads, self.num_groups
    q = transpose_qkv(self.W_q(queries), h)
    k = transpose_qkv(self.W_k(keys), g).repeat_interleave(h // g, dim=0)
    v = transpose_qkv(self.W_v(values), g).repeat_interleave(h // g, dim=0)
    if valid_lens is not None:
        valid_lens = torch.repeat_interleave(valid_lens, h, dim=0)
    from solutions.masking import masked_softmax

    weights = masked_softmax(q @ k.transpose(1, 2) / math.sqrt(q.shape[-1]), valid_lens)
    weights = torch.nn.functional.dropout(weights, self.attention.dropout.p)
    return self.W_o(transpose_output(weights @ v, h))


@wrong(
    "GroupedQueryAttention",
    {
        "GroupedQueryAttention": "no gradient reached W_k.weight, W_k.bias, W_v.weight, W_v.bias, keys, values",
        "GroupedQueryAttention.contract": "no gradient reached W_k.weight, W_v.weight, keys, values",
    },
)
def keys_projected_without_gradient(self, queries, keys, values, valid_lens=None):
    """The key and value projections under torch.no_grad(), "to save memory": W_k never learns."""
    h, g = self.num_heads, self.num_groups
    queries = transpose_qkv(self.W_q(queries), h)
    with torch.no_grad():
        keys = transpose_qkv(self.W_k(keys), g).repeat_interleave(h // g, dim=0)
        values = transpose_qkv(self.W_v(values), g).repeat_interleave(h // g, dim=0)
    if valid_lens is not None:
        valid_lens = torch.repeat_interleave(valid_lens, h, dim=0)
    output = self.attention(queries, keys, values, valid_lens)
    return self.W_o(transpose_output(output, h))


@wrong(
    "GroupedQueryAttention",
    {
        "GroupedQueryAttention": "raised ValueError: valid_lens must have shape (8,) or (8, 3) for X of shape (8, 3, 5), got (2,)",
        "GroupedQueryAttention.sdpa": "raised ValueError: valid_lens must have shape (2,) or (2, 1) for X of shape (2, 1, 1), got (1,)",
    },
)
def lengths_not_repeated(self, queries, keys, values, valid_lens=None):
    """valid_lens passed on as it is: B lengths for B·h rows of heads."""
    h, g = self.num_heads, self.num_groups
    queries = transpose_qkv(self.W_q(queries), h)
    keys = transpose_qkv(self.W_k(keys), g).repeat_interleave(h // g, dim=0)
    values = transpose_qkv(self.W_v(values), g).repeat_interleave(h // g, dim=0)
    output = self.attention(queries, keys, values, valid_lens)
    return self.W_o(transpose_output(output, h))


# ---------------------------------------------------------------- check your understanding
# A wrong answer to a question returns the value; pasted into the notebook it becomes
# ``answer_13_1 = <value>`` (see tests/wrong/__init__.py).


@wrong("quiz_13_1", {"quiz_13_1.key": "answer_13_1 = 'b' is not the right choice"})
def per_key_bias_loses_the_distance():
    """The per-key bias looks as if it forgot the query."""
    return "b"


@wrong("quiz_13_1", {"quiz_13_1.key": "answer_13_1 = 'd' is not the right choice"})
def per_key_bias_needs_no_mask():
    """The causal mask is thought to break the equivalence."""
    return "d"


@wrong("quiz_13_2", {"quiz_13_2.key": "answer_13_2 = 2.62144e+06 is not the number of bytes"})
def kv_bytes_of_every_query_head():
    """Counts a key-value head per query head (64), as multi-head attention would."""
    return 2 * 80 * 64 * 128 * 2


@wrong("quiz_13_2", {"quiz_13_2.key": "answer_13_2 = 163840 is not the number of bytes"})
def kv_bytes_keys_only():
    """Forgets the values: only the keys."""
    return 80 * 8 * 128 * 2


@wrong("quiz_13_3", {"quiz_13_3.key": "answer_13_3 = 8 is not the earliest position"})
def window_reach_counts_w():
    """Three layers reaching w = 4 positions back each: 20 - 12."""
    return 8


@wrong("quiz_13_3", {"quiz_13_3.key": "answer_13_3 = 17 is not the earliest position"})
def window_reach_of_one_layer():
    """One layer's reach only, as if the layers below added nothing."""
    return 17
