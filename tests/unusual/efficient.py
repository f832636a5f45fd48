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


# ------------------------------------------------ Check your understanding


@unusual("quiz_10_1")
def capital_letter():
    """A capital letter with spaces: the form check lowers and strips it."""
    answer_10_1 = " B "  # noqa: F841


@unusual("quiz_10_1")
def letter_from_a_list():
    """The letter picked from a list of the options."""
    answer_10_1 = ["a", "b", "c", "d"][1]  # noqa: F841


@unusual("quiz_10_2")
def count_as_a_float():
    """The count written as a float."""
    answer_10_2 = 8192.0  # noqa: F841


@unusual("quiz_10_2")
def count_as_a_tensor():
    """The count read off a tensor of the mask's shape: a one-element tensor, not an int."""
    answer_10_2 = torch.tensor(8 * 1024)  # noqa: F841
