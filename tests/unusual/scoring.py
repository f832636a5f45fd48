"""Unusual but correct answers to the scoring-function exercises (chapters 3 to 5)."""

import torch

from solutions.masking import masked_softmax
from tests.unusual import unusual


@unusual("AdditiveAttention")
def additive_with_einsum(self, queries, keys, values, valid_lens=None):
    """einsum for the projections, the score and the weighted sum."""
    q = torch.einsum("bmd,hd->bmh", queries, self.W_q.weight)
    k = torch.einsum("bnd,hd->bnh", keys, self.W_k.weight)
    scores = torch.einsum("bmnh,h->bmn", torch.tanh(q[:, :, None] + k[:, None]), self.w_v.weight[0])
    self.attention_weights = masked_softmax(scores, valid_lens)
    return torch.einsum("bmn,bnv->bmv", self.dropout(self.attention_weights), values)


@unusual("AdditiveAttention")
def additive_loop_over_queries(self, queries, keys, values, valid_lens=None):
    """One query at a time, the rows stacked: (B, n, h) per query, then (B, m, n)."""
    k = self.W_k(keys)  # (B, n, h)
    rows = [
        self.w_v(torch.tanh(self.W_q(queries[:, i])[:, None] + k)).squeeze(-1)
        for i in range(queries.shape[1])
    ]
    self.attention_weights = masked_softmax(torch.stack(rows, dim=1), valid_lens)
    return self.dropout(self.attention_weights) @ values


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
