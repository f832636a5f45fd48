"""Unusual but correct answers to the efficient-attention exercise."""

import torch

from tests.unusual import unusual


@unusual("valid_lens_to_mask")
def mask_by_unsqueeze(valid_lens, num_queries, num_keys):
    """unsqueeze calls and a >= comparison the other way round."""
    lens = valid_lens.unsqueeze(1).unsqueeze(-1)  # (B, 1, 1 or m, 1)
    if valid_lens.dim() == 1:
        lens = lens.unsqueeze(1)  # (B, 1, 1, 1)
    return lens > torch.arange(num_keys, device=valid_lens.device)


@unusual("valid_lens_to_mask")
def mask_with_view_and_where(valid_lens, num_queries, num_keys):
    """A view to (B, 1, rows, 1) and torch.lt, built with new_ones."""
    rows = 1 if valid_lens.dim() == 1 else num_queries
    positions = torch.arange(num_keys, device=valid_lens.device).view(1, 1, 1, num_keys)
    return torch.lt(positions, valid_lens.reshape(-1, 1, rows, 1))
