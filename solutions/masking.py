"""From the chapter "Masking": check_lengths, sequence_mask, masked_softmax.

Generated from book/masking.ipynb by ``python -m autograder export``. Do not edit this
file: edit the ``#@save masking`` cells of the notebook, then run ``make export``.
"""

import torch


def check_lengths(X, lengths, allowed_shapes, name):
    """Raise a clear error unless ``lengths`` is a real tensor on X's device with an allowed shape."""
    if not isinstance(lengths, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(lengths).__name__}")
    if lengths.dtype == torch.bool or lengths.is_complex():
        raise TypeError(f"{name} must hold integer lengths, got dtype {lengths.dtype}")
    if lengths.device != X.device:
        raise ValueError(
            f"{name} is on {lengths.device} but X is on {X.device}; "
            f"move it with {name}.to(X.device)"
        )
    if tuple(lengths.shape) not in allowed_shapes:
        expected = " or ".join(str(s) for s in allowed_shapes)
        raise ValueError(
            f"{name} must have shape {expected} for X of shape {tuple(X.shape)}, "
            f"got {tuple(lengths.shape)}"
        )


def sequence_mask(X, valid_len, value=0):
    """Replace the entries of each sequence past its valid length with ``value``.

    Returns a new tensor; ``X`` is never modified.

    Args:
        X: a batch of ``N`` sequences of length ``L``, with any trailing axes.
        valid_len: how many leading positions of each sequence to keep.
        value: the fill value for positions ``j >= valid_len[i]``.

    Shape:
        - X: (N, L, *)
        - valid_len: (N,)
        - output: (N, L, *), same dtype and device as X
    """
    if X.dim() < 2:
        raise ValueError(f"X must have shape (N, L, *), got shape {tuple(X.shape)}")
    check_lengths(X, valid_len, [(X.shape[0],)], "valid_len")
    positions = torch.arange(X.shape[1], device=X.device)
    mask = positions[None, :] < valid_len[:, None]  # (1, L) < (N, 1) -> (N, L)
    mask = mask.reshape(mask.shape + (1,) * (X.dim() - 2))  # (N, L, 1, ..., 1)
    fill = torch.tensor(value, dtype=X.dtype, device=X.device)
    return torch.where(mask, X, fill)


def masked_softmax(X, valid_lens):
    """Softmax over the last axis that gives zero weight to keys past each valid length.

    Unlike the textbook version it never modifies ``X``, works in float32, float16 and
    bfloat16 on any device, and gives a row with valid length 0 all-zero weights.

    Args:
        X: attention scores.
        valid_lens: ``None`` (no masking), one length per sequence, or one length
            per query.

    Shape:
        - X: (B, m, n): batch, queries, keys
        - valid_lens: None, (B,) or (B, m)
        - output: (B, m, n), same dtype and device as X
    """
    if valid_lens is None:
        return torch.softmax(X, dim=-1)
    if X.dim() != 3 or not X.is_floating_point():
        raise ValueError(
            "X must be a floating-point tensor of shape (batch, queries, keys), "
            f"got shape {tuple(X.shape)} and dtype {X.dtype}"
        )
    B, m, n = X.shape
    check_lengths(X, valid_lens, [(B,), (B, m)], "valid_lens")
    if valid_lens.dim() == 1:
        valid_lens = valid_lens[:, None]  # (B,) -> (B, 1): shared by every query
    positions = torch.arange(n, device=X.device)
    mask = positions < valid_lens[..., None]  # (n,) < (B, m or 1, 1) -> (B, m or 1, n)
    mask = mask.expand(B, m, n)
    scores = X.masked_fill(~mask, float("-inf"))
    # A row with no valid key is all -inf, and its softmax would be NaN. Give it
    # finite scores; its weights are set to zero below, with zero gradient.
    empty_rows = ~mask.any(dim=-1, keepdim=True)  # (B, m, 1)
    scores = scores.masked_fill(empty_rows, 0.0)
    return torch.softmax(scores, dim=-1).masked_fill(~mask, 0.0)
