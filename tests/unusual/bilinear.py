"""Unusual but correct answers to Exercise 5.1 (``LowRankBilinearAttention``)."""

import torch

from solutions.masking import masked_softmax
from tests.unusual import unusual


@unusual("LowRankBilinearAttention")
def low_rank_with_einsum(self, queries, keys, values, valid_lens=None):
    """The two projections and the score as einsums over the factors' weights."""
    q = torch.einsum("bmd,rd->bmr", queries, self.W_q.weight)
    k = torch.einsum("bnd,rd->bnr", keys, self.W_k.weight)
    self.attention_weights = masked_softmax(torch.einsum("bmr,bnr->bmn", q, k), valid_lens)
    return torch.einsum("bmn,bnv->bmv", self.dropout(self.attention_weights), values)


@unusual("LowRankBilinearAttention")
def low_rank_keys_as_columns(self, queries, keys, values, valid_lens=None):
    """W_k kᵀ as (B, r, n) columns straight away, with @ and .mT."""
    projected_keys = self.W_k.weight @ keys.mT  # (r, d_k) @ (B, d_k, n) -> (B, r, n)
    scores = (queries @ self.W_q.weight.mT) @ projected_keys
    self.attention_weights = masked_softmax(scores, valid_lens)
    return self.dropout(self.attention_weights) @ values


@unusual("LowRankBilinearAttention")
def low_rank_left_to_right(self, queries, keys, values, valid_lens=None):
    """Another order that never forms W: (qᵀ W_qᵀ) W_k, back in the keys' space, then kᵀ."""
    carried = queries @ self.W_q.weight.mT @ self.W_k.weight  # (B, m, r) @ (r, d_k) -> (B, m, d_k)
    self.attention_weights = masked_softmax(carried @ keys.mT, valid_lens)  # (B, m, n)
    return self.dropout(self.attention_weights) @ values
