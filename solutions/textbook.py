"""From the chapter "Masking": textbook_sequence_mask, textbook_masked_softmax.

Generated from book/masking.ipynb by ``python -m autograder export``. Do not edit this
file: edit the ``#@save textbook`` cells of the notebook, then run ``make export``.
"""

import torch


def textbook_sequence_mask(X, valid_len, value=0):
    """d2l's ``sequence_mask``: writes ``value`` into X in place."""
    maxlen = X.size(1)
    mask = torch.arange(maxlen, dtype=torch.float32, device=X.device)[None, :] < valid_len[:, None]
    X[~mask] = value
    return X


def textbook_masked_softmax(X, valid_lens):
    """d2l's ``masked_softmax``: fills masked scores with -1e6, then takes a softmax."""
    if valid_lens is None:
        return torch.softmax(X, dim=-1)
    shape = X.shape
    if valid_lens.dim() == 1:
        valid_lens = torch.repeat_interleave(valid_lens, shape[1])
    else:
        valid_lens = valid_lens.reshape(-1)
    X = textbook_sequence_mask(X.reshape(-1, shape[-1]), valid_lens, value=-1e6)
    return torch.softmax(X.reshape(shape), dim=-1)
