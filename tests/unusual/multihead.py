"""Unusual but correct answers to the causal and multi-head chapter."""

import torch

from solutions.multihead import transpose_output, transpose_qkv
from tests.unusual import unusual


@unusual("causal_valid_lens")
def causal_with_clamp(X, valid_lens=None):
    """clamp (not clamp_) with a (B, 1) maximum, expand instead of repeat."""
    B, T = X.shape[0], X.shape[1]
    lens = torch.arange(1, T + 1, device=X.device).expand(B, T)
    if valid_lens is None:
        return lens.clone()
    return torch.clamp(lens, max=valid_lens.reshape(B, 1).to(lens.dtype))


@unusual("causal_valid_lens")
def causal_with_where(X, valid_lens=None):
    """torch.where against the sequence length; full_like for the no-padding case."""
    B, T = X.shape[0], X.shape[1]
    lens = (torch.arange(T, device=X.device) + 1)[None, :].repeat(B, 1)
    ells = torch.full((B, 1), T, device=X.device) if valid_lens is None else valid_lens[:, None]
    return torch.where(lens <= ells, lens, ells).long()


@unusual("transpose_qkv")
def split_with_unflatten_and_transpose(X, num_heads):
    """unflatten, transpose and flatten."""
    X = X.unflatten(-1, (num_heads, -1)).transpose(1, 2)  # (B, h, T, d/h)
    return X.flatten(0, 1)


@unusual("transpose_qkv")
def split_with_chunks(X, num_heads):
    """chunk the features, stack the heads after the batch axis."""
    heads = torch.stack(X.chunk(num_heads, dim=-1), dim=1)  # (B, h, T, d/h)
    return heads.reshape(-1, X.shape[1], X.shape[2] // num_heads)


@unusual("transpose_output")
def merge_with_unflatten(X, num_heads):
    """unflatten the batch axis, transpose, flatten the features."""
    return X.unflatten(0, (-1, num_heads)).transpose(1, 2).flatten(2)


@unusual("transpose_output")
def merge_with_cat(X, num_heads):
    """Concatenate the heads of each example along the features."""
    heads = X.reshape(-1, num_heads, X.shape[1], X.shape[2])  # (B, h, T, d/h)
    return torch.cat(heads.unbind(1), dim=-1)


@unusual("MultiHeadAttention")
def multihead_lengths_first(self, queries, keys, values, valid_lens=None):
    """The lengths repeated first, with keyword arguments and a conditional expression."""
    h = self.num_heads
    lens = None if valid_lens is None else valid_lens.repeat_interleave(h, dim=0)
    out = self.attention(
        queries=transpose_qkv(self.W_q(queries), h),
        keys=transpose_qkv(self.W_k(keys), h),
        values=transpose_qkv(self.W_v(values), h),
        valid_lens=lens,
    )
    return self.W_o(transpose_output(out, h))


@unusual("MultiHeadAttention")
def multihead_linear_by_hand(self, queries, keys, values, valid_lens=None):
    """The projections as x @ Wᵀ (+ b) with torch.nn.functional.linear."""
    h, linear = self.num_heads, torch.nn.functional.linear
    q = transpose_qkv(linear(queries, self.W_q.weight, self.W_q.bias), h)
    k = transpose_qkv(linear(keys, self.W_k.weight, self.W_k.bias), h)
    v = transpose_qkv(linear(values, self.W_v.weight, self.W_v.bias), h)
    if valid_lens is not None:
        valid_lens = torch.repeat_interleave(valid_lens, repeats=h, dim=0)
    return linear(
        transpose_output(self.attention(q, k, v, valid_lens), h), self.W_o.weight, self.W_o.bias
    )


@unusual("causal_valid_lens")
def causal_row_by_row(X, valid_lens=None):
    """An explicit loop over the sequences, with Python's min on each length."""
    B, T = X.shape[0], X.shape[1]
    ells = [T] * B if valid_lens is None else valid_lens.tolist()
    rows = [torch.arange(1, T + 1, device=X.device).clamp(max=min(ell, T)) for ell in ells]
    return torch.stack(rows)


# ---------------------------------------------------------------- Check your understanding


@unusual("quiz_7_1")
def causal_length_as_a_float():
    """The length as a float."""
    answer_7_1 = 5.0  # noqa: F841


@unusual("quiz_7_1")
def causal_length_computed():
    """The length computed: the smaller of t + 1 and the valid length."""
    answer_7_1 = min(6 + 1, 5)  # noqa: F841


@unusual("quiz_7_2")
def head_entry_upper_case():
    """The letter in upper case."""
    answer_7_2 = "A"  # noqa: F841


@unusual("quiz_7_2")
def head_entry_with_spaces():
    """The letter with spaces around it."""
    answer_7_2 = " a "  # noqa: F841


@unusual("quiz_7_3")
def parameters_computed():
    """The count as a product: four 64 × 64 projections."""
    answer_7_3 = 4 * 64 * 64  # noqa: F841


@unusual("quiz_7_3")
def parameters_as_a_float():
    """The count as a float."""
    answer_7_3 = 16384.0  # noqa: F841
