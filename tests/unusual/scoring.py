"""Unusual but correct answers to the scoring-function exercises (chapters 3 to 5)."""

import math

import torch

from solutions.masking import masked_softmax
from tests.unusual import unusual


@unusual("DotProductAttention")
def dot_scale_the_queries_first(self, queries, keys, values, valid_lens=None):
    """Scales the queries before the product, with einsum."""
    scores = torch.einsum("bmd,bnd->bmn", queries / math.sqrt(queries.shape[-1]), keys)
    self.attention_weights = masked_softmax(scores, valid_lens)
    return torch.einsum("bmn,bnv->bmv", self.dropout(self.attention_weights), values)


@unusual("DotProductAttention")
def dot_with_matmul_and_rsqrt(self, queries, keys, values, valid_lens=None):
    """@ instead of bmm, a multiplication by d^(-1/2)."""
    scores = (queries @ keys.mT) * queries.shape[-1] ** -0.5
    self.attention_weights = masked_softmax(scores, valid_lens)
    return self.dropout(self.attention_weights) @ values


@unusual("BilinearAttention")
def bilinear_keys_first(self, queries, keys, values, valid_lens=None):
    """W k first, (B, n, d_q), then the dot products with the queries."""
    scores = queries @ (keys @ self.W.T).transpose(1, 2)
    self.attention_weights = masked_softmax(scores, valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values)


@unusual("BilinearAttention")
def bilinear_one_einsum(self, queries, keys, values, valid_lens=None):
    """qᵀ W k in one einsum."""
    scores = torch.einsum("bmi,ij,bnj->bmn", queries, self.W, keys)
    self.attention_weights = masked_softmax(scores, valid_lens)
    return torch.einsum("bmn,bnv->bmv", self.dropout(self.attention_weights), values)


@unusual("sum_scores")
def sum_scores_with_einsum(queries, keys, w):
    """Two einsums and broadcasting with unsqueeze."""
    return torch.einsum("bmd,d->bm", queries, w).unsqueeze(-1) + torch.einsum(
        "bnd,d->bn", keys, w
    ).unsqueeze(1)


@unusual("sum_scores")
def sum_scores_by_broadcast_sum(queries, keys, w):
    """(q + k)·w summed over d: the (B, m, n, d) tensor is allowed here."""
    return ((queries[:, :, None, :] + keys[:, None, :, :]) * w).sum(-1)


@unusual("distance_scores")
def distance_with_baddbmm(queries, keys):
    """q·k - ‖q‖²/2 - ‖k‖²/2 with baddbmm, the norms as (B, m, 1) and (B, 1, n)."""
    q2 = queries.pow(2).sum(-1, keepdim=True) / 2  # (B, m, 1)
    k2 = keys.pow(2).sum(-1).unsqueeze(1) / 2  # (B, 1, n)
    return torch.baddbmm(-q2 - k2, queries, keys.transpose(1, 2))


@unusual("distance_scores")
def distance_with_einsum(queries, keys):
    """einsum for the products and the norms."""
    qk = torch.einsum("bmd,bnd->bmn", queries, keys)
    q2 = torch.einsum("bmd,bmd->bm", queries, queries)
    k2 = torch.einsum("bnd,bnd->bn", keys, keys)
    return -0.5 * (q2[:, :, None] - 2 * qk + k2[:, None, :])
