"""Unusual but correct answers to the scoring-function exercises (chapters 3 to 5)."""

import torch

from tests.unusual import unusual


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
