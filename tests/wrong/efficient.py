"""Wrong answers to Exercise 9.1 (valid_lens_to_mask)."""

import torch

from tests.wrong import wrong


@wrong(
    "valid_lens_to_mask",
    "valid_lens_to_mask",
    "valid_lens_to_mask.values",
    "valid_lens_to_mask.kernel",
)
def true_means_padding(valid_lens, num_queries, num_keys):
    """The key_padding_mask convention of nn.MultiheadAttention: True marks the padding."""
    positions = torch.arange(num_keys, device=valid_lens.device)
    if valid_lens.dim() == 1:
        return positions >= valid_lens[:, None, None, None]
    return positions >= valid_lens[:, None, :, None]


@wrong(
    "valid_lens_to_mask",
    "valid_lens_to_mask",
    "valid_lens_to_mask.values",
    "valid_lens_to_mask.kernel",
)
def off_by_one(valid_lens, num_queries, num_keys):
    """<= instead of <: every query also attends the first padding key."""
    positions = torch.arange(num_keys, device=valid_lens.device)
    if valid_lens.dim() == 1:
        return positions <= valid_lens[:, None, None, None]
    return positions <= valid_lens[:, None, :, None]


@wrong(
    "valid_lens_to_mask",
    "valid_lens_to_mask",
    "valid_lens_to_mask.values",
    "valid_lens_to_mask.kernel",
)
def float_mask(valid_lens, num_queries, num_keys):
    """A 0/1 float mask: SDPA adds it to the scores (+1 for valid keys) instead of masking."""
    positions = torch.arange(num_keys, device=valid_lens.device)
    if valid_lens.dim() == 1:
        return (positions < valid_lens[:, None, None, None]).float()
    return (positions < valid_lens[:, None, :, None]).float()


@wrong("valid_lens_to_mask", "valid_lens_to_mask", "valid_lens_to_mask.kernel")
def full_size_mask(valid_lens, num_queries, num_keys):
    """Right values, but a (B, 1, m, n) mask even for lengths (B,): memory quadratic in n."""
    positions = torch.arange(num_keys, device=valid_lens.device)
    if valid_lens.dim() == 1:
        valid_lens = valid_lens[:, None].expand(-1, num_queries)
    return (positions < valid_lens[:, :, None])[:, None].clone()


@wrong(
    "valid_lens_to_mask",
    "valid_lens_to_mask",
    "valid_lens_to_mask.values",
    "valid_lens_to_mask.kernel",
)
def first_query_length_for_all(valid_lens, num_queries, num_keys):
    """Lengths per query replaced by the first query's: later queries see the wrong keys."""
    positions = torch.arange(num_keys, device=valid_lens.device)
    if valid_lens.dim() == 1:
        return positions < valid_lens[:, None, None, None]
    first = valid_lens[:, :1].expand(-1, num_queries)  # (B, m), every query with length [b, 0]
    return positions < first[:, None, :, None]


@wrong(
    "valid_lens_to_mask",
    "valid_lens_to_mask",
    "valid_lens_to_mask.values",
    "valid_lens_to_mask.kernel",
)
def queries_on_the_heads_axis(valid_lens, num_queries, num_keys):
    """Lengths (B, m) become a (B, m, 1, n) mask: the queries land on the heads axis."""
    positions = torch.arange(num_keys, device=valid_lens.device)
    if valid_lens.dim() == 1:
        return positions < valid_lens[:, None, None, None]
    return positions < valid_lens[:, :, None, None]


@wrong("valid_lens_to_mask", "valid_lens_to_mask", "valid_lens_to_mask.values")
def lengths_not_broadcast(valid_lens, num_queries, num_keys):
    """A (B, n) mask: the query and heads axes are missing, so it does not broadcast by batch."""
    positions = torch.arange(num_keys, device=valid_lens.device)
    if valid_lens.dim() == 2:
        valid_lens = valid_lens.max(dim=1).values
    return positions < valid_lens[:, None]
