"""From the chapter "Additive attention": check_qkv, AdditiveAttention, peak_tensor_memory, additive_scores_chunked, ConcatAttention.

Generated from book/additive_attention.ipynb by ``python -m autograder export``. Do not edit this
file: edit the ``#@save additive`` cells of the notebook, then run ``make export``.
"""

import torch
from torch import nn

from solutions.masking import masked_softmax


def check_qkv(queries, keys, values):
    """Raise a clear error unless queries (B, m, d_q), keys (B, n, d_k), values (B, n, v) fit."""
    for name, t in (("queries", queries), ("keys", keys), ("values", values)):
        if not isinstance(t, torch.Tensor) or t.dim() != 3:
            shape = tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
            raise ValueError(f"{name} must be a 3-D tensor (batch, items, features), got {shape}")
    if not queries.shape[0] == keys.shape[0] == values.shape[0]:
        raise ValueError(
            "queries, keys and values must have the same batch size, got "
            f"{queries.shape[0]}, {keys.shape[0]} and {values.shape[0]}"
        )
    if keys.shape[1] != values.shape[1]:
        raise ValueError(
            f"keys and values must have the same number of pairs, got {keys.shape[1]} keys "
            f"and {values.shape[1]} values"
        )
    if not queries.device == keys.device == values.device:
        raise ValueError(
            f"queries, keys and values are on {queries.device}, {keys.device} and "
            f"{values.device}; move them to one device"
        )


class AdditiveAttention(nn.Module):
    """Additive (Bahdanau) attention: a(q, k) = w_vᵀ tanh(W_q q + W_k k).

    Args:
        key_size: size d_k of each key.
        query_size: size d_q of each query.
        num_hiddens: size h of the space where queries and keys are added.
        dropout: dropout probability applied to the attention weights.

    Shape:
        - queries: (B, m, d_q)
        - keys: (B, n, d_k)
        - values: (B, n, v)
        - valid_lens: None, (B,) or (B, m)
        - output: (B, m, v); ``attention_weights``: (B, m, n)
    """

    def __init__(self, key_size, query_size, num_hiddens, dropout, **kwargs):
        super().__init__(**kwargs)
        self.W_k = nn.Linear(key_size, num_hiddens, bias=False)
        self.W_q = nn.Linear(query_size, num_hiddens, bias=False)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        check_qkv(queries, keys, values)
        queries, keys = self.W_q(queries), self.W_k(keys)  # (B, m, h), (B, n, h)
        # (B, m, 1, h) + (B, 1, n, h) -> (B, m, n, h)
        features = torch.tanh(queries.unsqueeze(2) + keys.unsqueeze(1))
        scores = self.w_v(features).squeeze(-1)  # (B, m, n, 1) -> (B, m, n)
        self.attention_weights = masked_softmax(scores, valid_lens)
        # (B, m, n) @ (B, n, v) -> (B, m, v)
        return torch.bmm(self.dropout(self.attention_weights), values)


import weakref

from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves


class _TensorMemoryTracker(TorchDispatchMode):
    """Counts the bytes of tensor storage created by operators, and the peak alive at once."""

    def __init__(self):
        super().__init__()
        self.live, self.current, self.peak = {}, 0, 0

    def _free(self, ptr):
        self.current -= self.live.pop(ptr, 0)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in tree_leaves(out):
            if isinstance(t, torch.Tensor):
                storage = t.untyped_storage()
                ptr = storage.data_ptr()
                if ptr and ptr not in self.live:  # a new storage, not a view of a known one
                    self.live[ptr] = storage.nbytes()
                    self.current += storage.nbytes()
                    self.peak = max(self.peak, self.current)
                    weakref.finalize(t, self._free, ptr)
        return out


def peak_tensor_memory(fn):
    """The peak memory of the tensors created while ``fn()`` runs, in bytes.

    Inputs that exist before the call are not counted; every intermediate and the
    result are, while they are alive.
    """
    with _TensorMemoryTracker() as tracker:
        fn()
    return tracker.peak


def additive_scores_chunked(attention, queries, keys, chunk_size=32):
    """The scores of an AdditiveAttention module, computed ``chunk_size`` queries at a time.

    Equal to ``attention.w_v(tanh(W_q q + W_k k)).squeeze(-1)`` without ever holding the
    full (B, m, n, h) tensor: at most (B, chunk_size, n, h).

    Shape:
        - queries: (B, m, d_q)
        - keys: (B, n, d_k)
        - output: (B, m, n)
    """
    q, k = attention.W_q(queries), attention.W_k(keys)  # (B, m, h), (B, n, h)
    w = attention.w_v.weight.squeeze(0)  # (1, h) -> (h,)
    chunks = []
    for start in range(0, q.shape[1], chunk_size):
        block = q[:, start : start + chunk_size].unsqueeze(2) + k.unsqueeze(1)  # (B, c, n, h)
        chunks.append(torch.tanh(block) @ w)  # (B, c, n)
    return torch.cat(chunks, dim=1)  # (B, m, n)


class ConcatAttention(nn.Module):
    """Additive attention as one hidden layer on [q; k]: a(q, k) = w_vᵀ tanh(W [q; k] + b).

    Luong et al.'s "concat" score. ``W`` reads the query and the key concatenated, the
    query first; the forward never concatenates them.

    Args:
        key_size: size d_k of each key.
        query_size: size d_q of each query.
        num_hiddens: size h of the hidden layer.
        dropout: dropout probability applied to the attention weights.

    Shape:
        - queries: (B, m, d_q)
        - keys: (B, n, d_k)
        - values: (B, n, v)
        - valid_lens: None, (B,) or (B, m)
        - output: (B, m, v); ``attention_weights``: (B, m, n)
    """

    def __init__(self, key_size, query_size, num_hiddens, dropout, **kwargs):
        super().__init__(**kwargs)
        self.query_size = query_size
        self.W = nn.Linear(query_size + key_size, num_hiddens)  # W: (h, d_q + d_k), b: (h,)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        check_qkv(queries, keys, values)
        # W [q; k] + b = W_q q + W_k k + b, with W_q, W_k the columns that meet q and k
        W_q = self.W.weight[:, : self.query_size]  # (h, d_q)
        W_k = self.W.weight[:, self.query_size :]  # (h, d_k)
        q = queries @ W_q.T + self.W.bias  # (B, m, h): the bias once, with the query
        k = keys @ W_k.T  # (B, n, h)
        # every pair: (B, m, 1, h) + (B, 1, n, h) -> (B, m, n, h), as in AdditiveAttention
        hidden = torch.tanh(q.unsqueeze(2) + k.unsqueeze(1))
        scores = self.w_v(hidden).squeeze(-1)  # (B, m, n)
        self.attention_weights = masked_softmax(scores, valid_lens)  # (B, m, n), before dropout
        return torch.bmm(self.dropout(self.attention_weights), values)  # (B, m, v)
