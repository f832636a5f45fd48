"""Unusual but correct answers to the self-attention chapter."""

import math

import torch

from tests.unusual import unusual


@unusual("SelfAttention")
def self_attention_one_projection_call_each(self, X, valid_lens=None):
    """Keyword arguments, the projections inline."""
    return self.attention(
        queries=self.W_q(X), keys=self.W_k(X), values=self.W_v(X), valid_lens=valid_lens
    )


@unusual("SelfAttention")
def self_attention_with_functional_linear(self, X, valid_lens=None):
    """torch.nn.functional.linear with the layers' weights and biases."""
    linear = torch.nn.functional.linear
    q = linear(X, self.W_q.weight, self.W_q.bias)
    k = linear(X, self.W_k.weight, self.W_k.bias)
    v = linear(X, self.W_v.weight, self.W_v.bias)
    return self.attention(q, k, v, valid_lens)


@unusual("positional_encoding")
def table_with_exp_log(max_len, num_hiddens):
    """ω_j = exp(-2j·ln(10000)/d), as in the annotated transformer; sin and cos interleaved by stack."""
    positions = torch.arange(max_len, dtype=torch.float32)[:, None]
    omega = torch.exp(torch.arange(0, num_hiddens, 2).float() * (-math.log(10000.0) / num_hiddens))
    angles = positions * omega  # (max_len, d/2)
    return torch.stack([torch.sin(angles), torch.cos(angles)], dim=-1).reshape(max_len, num_hiddens)


@unusual("positional_encoding")
def table_in_float64_then_cast(max_len, num_hiddens):
    """Computed in float64 (more accurate), returned as float32."""
    i = torch.arange(max_len, dtype=torch.float64)[:, None]
    j = torch.arange(num_hiddens // 2, dtype=torch.float64)[None, :]
    angles = i / 10000 ** (2 * j / num_hiddens)
    P = torch.empty(max_len, num_hiddens, dtype=torch.float64)
    P[:, 0::2] = torch.sin(angles)
    P[:, 1::2] = torch.cos(angles)
    return P.float()
