"""From the chapter "Efficient attention": OperatorNames, operators, valid_lens_to_mask, fused_attention, FusedDotProductAttention, synchronize, median_time, attention_flops, matmul_rate, FusedMultiHeadAttention, AdditiveScores, additive_scores, ChunkedAdditiveAttention.

Generated from book/efficient_attention.ipynb by ``python -m autograder export``. Do not edit this
file: edit the ``#@save efficient`` cells of the notebook, then run ``make export``.
"""

import statistics
import time

import torch
from torch.nn import functional as F
from torch.utils._python_dispatch import TorchDispatchMode

from solutions.additive import AdditiveAttention, check_qkv
from solutions.dot_product import DotProductAttention
from solutions.masking import check_lengths, masked_softmax
from solutions.multihead import MultiHeadAttention


class OperatorNames(TorchDispatchMode):
    """Records the name of every operator that runs inside the ``with`` block."""

    def __init__(self):
        super().__init__()
        self.names = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.append(func.overloadpacket.__name__)
        return func(*args, **(kwargs or {}))


def operators(fn):
    """The operators that ``fn()`` dispatches, in the order of their first call."""
    with OperatorNames() as recorder:
        fn()
    return list(dict.fromkeys(recorder.names))  # in order, without repeats


def valid_lens_to_mask(valid_lens, num_queries, num_keys):
    """The boolean mask that ``F.scaled_dot_product_attention`` expects: True = attend.

    Key ``j`` is attended by a query of sequence ``b`` when ``j < valid_lens[b]`` (or
    ``j < valid_lens[b, i]`` for query ``i``). The mask keeps size-1 axes where the lengths
    do not vary, so it broadcasts over heads (and over queries for lengths of shape (B,))
    and costs memory linear in the sequence length.

    Shape:
        - valid_lens: (B,) or (B, num_queries)
        - output: bool, (B, 1, 1, num_keys) or (B, 1, num_queries, num_keys)
    """
    if not isinstance(valid_lens, torch.Tensor) or valid_lens.dim() not in (1, 2):
        shape = tuple(valid_lens.shape) if isinstance(valid_lens, torch.Tensor) else valid_lens
        raise ValueError(f"valid_lens must have shape (B,) or (B, m), got {shape}")
    if valid_lens.dim() == 2 and valid_lens.shape[1] != num_queries:
        raise ValueError(
            f"valid_lens of shape {tuple(valid_lens.shape)} must give one length per query "
            f"(B, {num_queries})"
        )
    positions = torch.arange(num_keys, device=valid_lens.device)  # (n,)
    if valid_lens.dim() == 1:
        lens = valid_lens[:, None, None, None]  # (B, 1, 1, 1): one length per sequence
    else:
        lens = valid_lens[:, None, :, None]  # (B, 1, m, 1): one length per query
    return positions < lens  # (n,) < (B, 1, 1 or m, 1) -> (B, 1, 1 or m, n)


def fused_attention(queries, keys, values, valid_lens=None, dropout_p=0.0):
    """Scaled dot-product attention through PyTorch's fused kernel, with d2l valid lengths.

    The inputs are 4-D, (batch, heads, length, features): only then does the CPU run
    its fused (flash) kernel. A query with valid length 0 gets an all-zero output, as it
    gets all-zero weights in ``masked_softmax``, whatever the kernel does with such a row.

    Shape:
        - queries: (B, h, m, d)
        - keys: (B, h, n, d)
        - values: (B, h, n, v)
        - valid_lens: None, (B,) or (B, m)
        - output: (B, h, m, v)
    """
    if valid_lens is None:
        return F.scaled_dot_product_attention(queries, keys, values, dropout_p=dropout_p)
    B, _, m, _ = queries.shape
    check_lengths(queries, valid_lens, [(B,), (B, m)], "valid_lens")
    mask = valid_lens_to_mask(valid_lens, m, keys.shape[-2])  # (B, 1, 1 or m, n)
    output = F.scaled_dot_product_attention(
        queries, keys, values, attn_mask=mask, dropout_p=dropout_p
    )
    # A query with no valid key: zero output (and zero gradient), on every kernel.
    empty = ~mask.any(dim=-1, keepdim=True)  # (B, 1, 1 or m, 1)
    if output.requires_grad:
        return output.masked_fill(empty, 0.0)  # the kernel's backward needs its output intact
    return output.masked_fill_(empty, 0.0)  # no autograd: in place, no copy


class FusedDotProductAttention(DotProductAttention):
    """``DotProductAttention`` that runs PyTorch's fused kernel.

    Same arguments, shapes and results as ``DotProductAttention``. The fused kernel never
    forms the attention weights, so ``attention_weights`` is ``None``; set
    ``keep_weights=True`` (the teaching path) to run the textbook computation instead and
    keep them.

    Shape:
        - queries: (B, m, d)
        - keys: (B, n, d)
        - values: (B, n, v)
        - valid_lens: None, (B,) or (B, m)
        - output: (B, m, v)
    """

    def __init__(self, dropout, keep_weights=False, **kwargs):
        super().__init__(dropout, **kwargs)
        self.keep_weights = keep_weights
        self.attention_weights = None

    def forward(self, queries, keys, values, valid_lens=None):
        if self.keep_weights:
            return super().forward(queries, keys, values, valid_lens)
        check_qkv(queries, keys, values)
        if queries.shape[-1] != keys.shape[-1]:
            raise ValueError(
                "dot-product attention needs queries and keys of one size d, got "
                f"{queries.shape[-1]} and {keys.shape[-1]}"
            )
        self.attention_weights = None
        dropout_p = self.dropout.p if self.training else 0.0
        # (B, m, d) -> (B, 1, m, d): one head, so that the CPU runs the fused kernel
        output = fused_attention(
            queries[:, None], keys[:, None], values[:, None], valid_lens, dropout_p
        )
        return output[:, 0]  # (B, 1, m, v) -> (B, m, v)


def synchronize(device):
    """Wait for the queued work of ``device`` to finish (timing GPU work needs it)."""
    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


def median_time(fn, repeats=5, warmup=1, device="cpu"):
    """The median wall-clock time of ``fn()`` over ``repeats`` calls, in seconds."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        synchronize(device)
        start = time.perf_counter()
        fn()
        synchronize(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def attention_flops(B, h, m, n, d, v=None):
    """Floating-point operations of the two products of attention: QKᵀ and (weights)V."""
    return 2 * B * h * m * n * d + 2 * B * h * m * n * (d if v is None else v)


def matmul_rate(device="cpu", dtype=torch.float32, size=1024, repeats=5):
    """The rate ``torch.mm`` reaches on ``size × size`` matrices, in FLOP/s."""
    a = torch.randn(size, size, device=device, dtype=dtype)
    b = torch.randn(size, size, device=device, dtype=dtype)
    return 2 * size**3 / median_time(lambda: torch.mm(a, b), repeats, device=device)


class FusedMultiHeadAttention(MultiHeadAttention):
    """``MultiHeadAttention`` whose heads run in one fused kernel call.

    Same parameters and results as ``MultiHeadAttention`` (and so as
    ``nn.MultiheadAttention`` given the same weights). Instead of moving the heads into
    the batch, it views the projections as (B, h, T, d/h), the layout the kernel takes,
    and broadcasts one padding mask over the heads. ``attention.keep_weights = True``
    switches to the textbook path and keeps ``attention_weights`` (B, h, m, n).
    """

    def __init__(self, num_hiddens, num_heads, dropout, bias=False, **kwargs):
        super().__init__(num_hiddens, num_heads, dropout, bias=bias, **kwargs)
        self.attention = FusedDotProductAttention(dropout)

    @property
    def attention_weights(self):
        if self.attention.attention_weights is None:
            return None
        return super().attention_weights

    def forward(self, queries, keys, values, valid_lens=None):
        if self.attention.keep_weights:
            return super().forward(queries, keys, values, valid_lens)
        check_qkv(queries, keys, values)
        d = self.W_q.in_features
        if not queries.shape[-1] == keys.shape[-1] == values.shape[-1] == d:
            raise ValueError(
                f"queries, keys and values must have num_hiddens={d} features, got "
                f"{queries.shape[-1]}, {keys.shape[-1]} and {values.shape[-1]}"
            )
        self.attention.attention_weights = None
        B, m, h = queries.shape[0], queries.shape[1], self.num_heads

        def heads(X):  # (B, T, d) -> (B, T, h, d/h) -> (B, h, T, d/h), a view
            return X.reshape(X.shape[0], X.shape[1], h, -1).transpose(1, 2)

        q, k, v = heads(self.W_q(queries)), heads(self.W_k(keys)), heads(self.W_v(values))
        dropout_p = self.attention.dropout.p if self.training else 0.0
        output = fused_attention(q, k, v, valid_lens, dropout_p)  # (B, h, m, d/h)
        return self.W_o(output.transpose(1, 2).reshape(B, m, d))  # (B, m, h, d/h) -> (B, m, d)


class AdditiveScores(torch.autograd.Function):
    """scores[b, i, j] = wᵀ tanh(q[b, i] + k[b, j]), ``chunk_size`` queries at a time.

    Neither pass keeps the (B, m, n, h) tensor: the forward pass saves only q, k and w,
    and the backward pass recomputes tanh one chunk at a time. Extra memory: one
    (chunk_size, B, n, h) buffer, reused for every chunk; pass it as ``workspace`` to
    share one buffer between calls. tanh is computed as tanh(x) = 2 σ(2x) - 1: PyTorch's
    sigmoid kernel is several times faster than its tanh on some CPUs, and the factors
    fold into q, k and w, so the identity costs no extra pass over the buffer.

    Shape:
        - q: (B, m, h), the projected queries
        - k: (B, n, h), the projected keys
        - w: (h,)
        - output: (B, m, n)
    """

    @staticmethod
    def forward(ctx, q, k, w, chunk_size, workspace=None):
        (B, m, h), n = q.shape, k.shape[1]
        fits = workspace is not None and workspace.shape[1:] == (B, n, h)
        if not fits or workspace.shape[0] < min(chunk_size, m):
            workspace = q.new_empty(min(chunk_size, m), B, n, h)  # chunk first: slices contiguous
        ctx.save_for_backward(q, k, w)
        ctx.chunk_size, ctx.workspace = chunk_size, workspace  # scratch, not a saved value
        scores = q.new_empty(B, m, n)
        buffer, k2, w_sum = workspace, 2 * k, w.sum()
        for start in range(0, m, chunk_size):
            q2 = 2 * q[:, start : start + chunk_size].transpose(0, 1)  # (c, B, h)
            s = buffer[: q2.shape[0]]  # (c, B, n, h)
            torch.add(q2[:, :, None], k2, out=s).sigmoid_()  # σ(2(q + k)) = (1 + tanh(q + k)) / 2
            # wᵀ tanh(q + k) = 2 wᵀσ(2(q + k)) - Σw: (c, B, n, h) @ (h,) -> (c, B, n)
            scores[:, start : start + chunk_size] = (2 * (s @ w) - w_sum).transpose(0, 1)
        return scores

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_scores):
        q, k, w = ctx.saved_tensors
        chunk_size, buffer = ctx.chunk_size, ctx.workspace
        h = q.shape[-1]
        grad_q, grad_k, grad_w = torch.empty_like(q), torch.zeros_like(k), torch.zeros_like(w)
        k2 = 2 * k
        for start in range(0, q.shape[1], chunk_size):
            q2 = 2 * q[:, start : start + chunk_size].transpose(0, 1)  # (c, B, h)
            c = q2.shape[0]
            t = torch.add(q2[:, :, None], k2, out=buffer[:c]).sigmoid_()  # recompute (c, B, n, h)
            t.mul_(2).sub_(1)  # tanh(q + k) = 2 σ(2(q + k)) - 1
            g = grad_scores[:, start : start + chunk_size].transpose(0, 1)  # (c, B, n)
            grad_w += (g.reshape(1, -1) @ t.reshape(-1, h))[0]  # Σ_(c,B,n) g · tanh: (h,)
            # d score / d (q + k) = w (1 - tanh²), times the incoming gradient, in place
            t.square_().neg_().add_(1).mul_(w).mul_(g[..., None])  # (c, B, n, h)
            grad_q[:, start : start + chunk_size] = t.sum(dim=2).transpose(0, 1)  # (B, c, h)
            grad_k += t.sum(dim=0)  # (B, n, h)
        return grad_q, grad_k, grad_w, None, None


def additive_scores(q, k, w, chunk_size=8, workspace=None):
    """Additive attention scores wᵀ tanh(q_i + k_j) in bounded memory, forward and backward.

    Shape:
        - q: (B, m, h)
        - k: (B, n, h)
        - w: (h,)
        - output: (B, m, n)
    """
    return AdditiveScores.apply(q, k, w, chunk_size, workspace)


class ChunkedAdditiveAttention(AdditiveAttention):
    """``AdditiveAttention`` that never holds the (B, m, n, h) tensor.

    Same parameters, arguments and results (output and gradients) as
    ``AdditiveAttention``: it takes ``chunk_size`` queries at a time through scores,
    softmax and the weighted sum of the values, so its extra memory in a forward pass
    is that of one chunk. By default the chunk is as many queries as fit in
    ``memory_budget`` bytes of (c, B, n, h) buffer. ``keep_weights=True`` also keeps
    ``attention_weights`` (B, m, n).

    Shape:
        - queries: (B, m, d_q)
        - keys: (B, n, d_k)
        - values: (B, n, v)
        - valid_lens: None, (B,) or (B, m)
        - output: (B, m, v)
    """

    def __init__(
        self,
        key_size,
        query_size,
        num_hiddens,
        dropout,
        chunk_size=None,
        memory_budget=16 * 2**20,
        keep_weights=False,
        **kwargs,
    ):
        super().__init__(key_size, query_size, num_hiddens, dropout, **kwargs)
        self.chunk_size, self.memory_budget = chunk_size, memory_budget
        self.keep_weights = keep_weights
        self.attention_weights = None

    def forward(self, queries, keys, values, valid_lens=None):
        check_qkv(queries, keys, values)
        B, m, n = queries.shape[0], queries.shape[1], keys.shape[1]
        if valid_lens is not None:
            check_lengths(queries, valid_lens, [(B,), (B, m)], "valid_lens")
        q, k = self.W_q(queries), self.W_k(keys)  # (B, m, h), (B, n, h)
        w = self.w_v.weight.squeeze(0)  # (1, h) -> (h,)
        row_bytes = B * n * q.shape[-1] * q.element_size()  # one query's (B, n, h) slice
        chunk = self.chunk_size or max(1, self.memory_budget // row_bytes)
        workspace = q.new_empty(min(chunk, m), B, n, q.shape[-1])  # one buffer for all chunks
        outputs, weights = [], []
        for start in range(0, m, chunk):
            scores = additive_scores(
                q[:, start : start + chunk], k, w, chunk, workspace
            )  # (B, c, n)
            lens = valid_lens
            if valid_lens is not None and valid_lens.dim() == 2:
                lens = valid_lens[:, start : start + chunk]  # (B, c)
            attention = masked_softmax(scores, lens)  # (B, c, n)
            if self.keep_weights:
                weights.append(attention)
            outputs.append(torch.bmm(self.dropout(attention), values))  # (B, c, v)
        self.attention_weights = torch.cat(weights, dim=1) if self.keep_weights else None
        return torch.cat(outputs, dim=1)  # (B, m, v)
