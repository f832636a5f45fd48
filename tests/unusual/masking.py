"""Unusual but correct answers to the masking exercises."""

import torch

from tests.unusual import unusual


@unusual("sequence_mask")
def sequence_mask_by_multiplication(X, valid_len, value=0):
    """No where and no fill: X·m + value·(1 - m) with a 0/1 mask in X's dtype."""
    keep = (torch.arange(X.shape[1], device=X.device)[None, :] < valid_len[:, None]).to(X.dtype)
    keep = keep.reshape(keep.shape + (1,) * (X.dim() - 2))
    return X * keep + value * (1 - keep)


@unusual("sequence_mask")
def sequence_mask_with_masked_fill(X, valid_len, value=0):
    """masked_fill on the complement (it returns a new tensor), the mask built by comparison."""
    L = X.shape[1]
    masked = valid_len.reshape(-1, 1) <= torch.arange(L, device=X.device).reshape(1, L)
    masked = masked.view(*masked.shape, *([1] * (X.dim() - 2)))
    return X.masked_fill(masked, value)


@unusual("masked_softmax")
def masked_softmax_upcast(X, valid_lens):
    """Hugging Face's idiom: the softmax in at least float32 (dtype=), cast back to X's dtype."""
    wide = torch.promote_types(X.dtype, torch.float32)  # float16 up to float32, float64 kept
    if valid_lens is None:
        return torch.softmax(X, dim=-1, dtype=wide).to(X.dtype)
    lens = valid_lens if valid_lens.dim() == 2 else valid_lens[:, None]
    mask = torch.arange(X.shape[-1], device=X.device) < lens[..., None]  # (B, m or 1, n)
    scores = torch.where(mask, X, torch.finfo(X.dtype).min)
    weights = torch.softmax(scores, dim=-1, dtype=wide).to(X.dtype)
    return torch.where(mask, weights, torch.zeros((), dtype=X.dtype, device=X.device))


@unusual("masked_softmax")
def masked_softmax_by_hand(X, valid_lens):
    """exp(x - max) by hand over the valid keys only, zero rows by dividing by max(sum, tiny)."""
    B, m, n = X.shape
    if valid_lens is None:
        valid_lens = torch.full((B,), n, device=X.device)
    lens = valid_lens.reshape(B, -1, 1).expand(B, m, 1)
    mask = torch.arange(n, device=X.device).reshape(1, 1, n) < lens  # (B, m, n)
    top = torch.where(mask, X, torch.full_like(X, -torch.inf)).amax(-1, keepdim=True)
    top = torch.where(torch.isfinite(top), top, torch.zeros_like(top)).detach()
    exps = torch.where(mask, torch.exp(torch.where(mask, X - top, torch.zeros_like(X))), 0.0)
    total = exps.sum(-1, keepdim=True)
    return exps / torch.where(total > 0, total, torch.ones_like(total))


@unusual("sequence_mask")
def sequence_mask_row_by_row(X, valid_len, value=0):
    """An explicit loop over the sequences, reading each length with .tolist()."""
    rows = []
    for row, n_valid in zip(X, valid_len.tolist()):
        keep = torch.arange(X.shape[1], device=X.device) < n_valid
        keep = keep.reshape(keep.shape + (1,) * (X.dim() - 2))
        rows.append(torch.where(keep, row, torch.tensor(value, dtype=X.dtype, device=X.device)))
    return torch.stack(rows)


# ---------------------------------------------------------------- check your understanding


@unusual("quiz_2_1")
def capital_letter():
    """The right letter in capitals."""
    answer_2_1 = "C"  # noqa: F841


@unusual("quiz_2_1")
def letter_with_a_newline():
    """The right letter with a trailing newline, as text pasted from elsewhere ends."""
    answer_2_1 = "c\n"  # noqa: F841


@unusual("quiz_2_2")
def count_as_a_float():
    """The count as a float."""
    answer_2_2 = 15.0  # noqa: F841


@unusual("quiz_2_2")
def count_as_a_tensor():
    """The count as a 0-d tensor, the way (weights == 0).sum() returns it."""
    answer_2_2 = torch.tensor(15)  # noqa: F841
