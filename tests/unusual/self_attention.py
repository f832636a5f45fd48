"""Unusual but correct answers to the self-attention chapter."""

import math

import torch

from solutions.masking import masked_softmax
from tests.unusual import unusual


@unusual("RelativeSelfAttention")
def relative_clamped_after_shifting(self, X, valid_lens=None):
    """Scores by einsum; the index shifted first, then clamped to [0, 2K]; keyword arguments."""
    queries, keys, values = self.W_q(X), self.W_k(X), self.W_v(X)
    scores = torch.einsum("bid,bjd->bij", queries, keys) / queries.shape[-1] ** 0.5
    N, K = X.shape[1], self.max_distance
    j = torch.arange(N, device=X.device)
    index = (j[None, :] - j[:, None] + K).clamp(min=0, max=2 * K)
    self.attention_weights = masked_softmax(
        X=scores + self.relative_bias[index], valid_lens=valid_lens
    )
    return torch.einsum("bij,bjd->bid", self.dropout(self.attention_weights), values)


@unusual("RelativeSelfAttention")
def relative_gathered_with_functional_dropout(self, X, valid_lens=None):
    """The bias by gather on a flattened index, F.linear projections, functional dropout."""
    linear = torch.nn.functional.linear
    queries = linear(X, self.W_q.weight, self.W_q.bias)
    keys = linear(X, self.W_k.weight, self.W_k.bias)
    values = linear(X, self.W_v.weight, self.W_v.bias)
    N, K = X.shape[1], self.max_distance
    rows = torch.arange(N, device=X.device).view(N, 1).expand(N, N)
    cols = torch.arange(N, device=X.device).view(1, N).expand(N, N)
    index = torch.minimum(
        torch.maximum(cols - rows, torch.full_like(rows, -K)), torch.full_like(rows, K)
    )
    bias = self.relative_bias.gather(0, (index + K).reshape(-1)).reshape(N, N)
    scores = queries @ keys.transpose(-1, -2) * (1 / math.sqrt(keys.shape[-1])) + bias
    self.attention_weights = masked_softmax(scores, valid_lens)
    dropped = torch.nn.functional.dropout(self.attention_weights, self.dropout.p, self.training)
    return dropped @ values


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


@unusual("quiz_6_1")
def quiz_6_1_capital():
    """A capital letter."""
    return "B"


@unusual("quiz_6_1")
def quiz_6_1_spaces():
    """Spaces around the letter."""
    return " b "


@unusual("quiz_6_2")
def quiz_6_2_float():
    """A float."""
    return 457.0


@unusual("quiz_6_2")
def quiz_6_2_tensor():
    """The count as a one-element tensor, as sum(p.numel() ...) over tensors might give."""
    return torch.tensor(457)


@unusual("quiz_6_3")
def quiz_6_3_capital():
    """A capital letter."""
    return "C"


@unusual("quiz_6_3")
def quiz_6_3_spaces():
    """A trailing space."""
    return "c "
