"""Visible checks for the chapter "Causal and multi-head attention"."""

import math

import torch
import torch.nn.functional as F

from checks._core import (
    CheckError,
    calling,
    check,
    expect_close,
    expect_tensor,
    random_tensor,
)
from checks.scoring import build


def reference_attention(X, lens):
    """Self-attention of X with itself (no projections), keys j < lens[b, t] only, in float64.

    Rows with no valid key get zero weights: the rule of masked_softmax.
    """
    x = X.detach().double()
    scores = x @ x.transpose(1, 2) / math.sqrt(x.shape[-1])  # (B, T, T)
    keep = torch.arange(x.shape[1], device=x.device) < lens[..., None].to(x.device)  # (B, T, T)
    weights = torch.softmax(scores.masked_fill(~keep, float("-inf")), dim=-1)
    weights = torch.where(keep.any(-1, keepdim=True), weights, torch.zeros_like(weights))
    return weights @ x


def causal_lengths(causal_valid_lens, X, valid_lens=None):
    """Call the student's function and check it returns integer (B, T) lengths on X's device."""
    lens = causal_valid_lens(X, valid_lens)
    expect_tensor(lens, "causal_valid_lens(X)", shape=X.shape[:2], device=X.device)
    if lens.is_floating_point() or lens.dtype == torch.bool:
        raise CheckError(f"causal_valid_lens must return integer lengths, got dtype {lens.dtype}")
    return lens


def expect_causal(causal_valid_lens, X, valid_lens, name):
    """Changing x[t+1:] must leave y[:t+1] alone, and must change y[t+1] (a valid position)."""
    Y = reference_attention(X, causal_lengths(causal_valid_lens, X, valid_lens))
    T = X.shape[1]
    for t in range(T - 1):
        changed = X.clone()
        changed[:, t + 1 :] = random_tensor(*changed[:, t + 1 :].shape, seed=t, device=X.device) + 3
        Y2 = reference_attention(changed, causal_lengths(causal_valid_lens, changed, valid_lens))
        expect_close(
            Y2[:, : t + 1],
            Y[:, : t + 1],
            f"{name}: outputs at positions 0..{t} after changing the inputs from position {t + 1} on"
            " (a causal layer must not see them)",
            labels=("batch", "position"),
        )
    if valid_lens is None:
        changed = X.clone()
        changed[:, 1:] += 3
        Y2 = reference_attention(changed, causal_lengths(causal_valid_lens, changed, valid_lens))
        if torch.allclose(Y2[:, 1], Y[:, 1]):
            raise CheckError(
                f"{name}: output 1 did not change when input 1 changed: position 1 must see itself"
            )


@check("causal_valid_lens")
def small_example(causal_valid_lens, device):
    """For T = 4 and valid_lens [4, 2], are the lengths [[1, 2, 3, 4], [1, 2, 2, 2]]?"""
    X = torch.zeros(2, 4, 3, device=device)
    lens = causal_lengths(causal_valid_lens, X, torch.tensor([4, 2], device=device))
    expect_close(
        lens,
        torch.tensor([[1, 2, 3, 4], [1, 2, 2, 2]], device=device),
        "causal_valid_lens(X, [4, 2]) for T = 4",
        labels=("sequence",),
        check_dtype=False,
    )
    lens = causal_lengths(causal_valid_lens, X)
    expect_close(
        lens,
        torch.tensor([[1, 2, 3, 4]] * 2, device=device),
        "causal_valid_lens(X) for T = 4, without valid_lens",
        labels=("sequence",),
        check_dtype=False,
    )


@check("causal_valid_lens")
def perturbation(causal_valid_lens, device):
    """Does changing x[t+1:] leave the attention outputs y[:t+1] unchanged (T = 5, no padding)?"""
    X = random_tensor(2, 5, 4, seed=0, device=device)
    expect_causal(causal_valid_lens, X, None, "without padding")


def heads_of(X, num_heads):
    """The (B*h, T, d/h) tensor whose entry b*h + i is head i of example b, by slicing."""
    B, T, d = X.shape
    hs = d // num_heads
    return torch.stack([X[b, :, i * hs : (i + 1) * hs] for b in range(B) for i in range(num_heads)])


@check("transpose_qkv")
def split_small(transpose_qkv, device):
    """For X of shape (2, 3, 6) and 3 heads, is entry b*3 + i the features 2i, 2i+1 of example b?"""
    X = torch.arange(36, dtype=torch.float32, device=device).reshape(2, 3, 6)
    expect_close(
        transpose_qkv(X, 3),
        heads_of(X, 3),
        "transpose_qkv(X, 3)",
        labels=("batch*head", "position"),
    )


@check("transpose_output")
def merge_small(transpose_output, device):
    """Does transpose_output turn the (6, 3, 2) heads of a (2, 3, 6) tensor back into it?"""
    X = torch.arange(36, dtype=torch.float32, device=device).reshape(2, 3, 6)
    expect_close(
        transpose_output(heads_of(X, 3), 3),
        X,
        "transpose_output(heads, 3)",
        labels=("batch", "position"),
    )


def split_heads_reference(module, queries, keys, values, valid_lens):
    """Multi-head attention from the module's weights, head by head, with SDPA (True = attend)."""
    h, d = module.num_heads, module.W_q.in_features
    q, k, v = module.W_q(queries), module.W_k(keys), module.W_v(values)
    B, m, n = q.shape[0], q.shape[1], k.shape[1]
    # (B, T, d) -> (B, h, T, d/h), by slicing the features of each head
    q, k, v = (
        torch.stack([t[..., i * d // h : (i + 1) * d // h] for i in range(h)], 1) for t in (q, k, v)
    )
    mask = None
    if valid_lens is not None:
        lens = valid_lens if valid_lens.dim() == 2 else valid_lens[:, None].expand(B, m)
        mask = (torch.arange(n, device=q.device) < lens[..., None])[:, None]  # (B, 1, m, n)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # (B, h, m, d/h)
    return module.W_o(torch.cat(out.unbind(1), dim=-1)).detach()  # (B, m, d)


def stored_weights(module):
    """The weights the forward left in ``module.attention_weights``, or a CheckError."""
    weights = getattr(module, "attention_weights", None)
    if weights is None:
        raise CheckError("forward must store the weights in self.attention_weights")
    return weights


@check("MultiHeadAttention")
def shapes_and_heads(MultiHeadAttention, device):
    """Does d = 8 with 2 heads give outputs (2, 3, 8), weights (2, 2, 3, 5), and match SDPA head by head, for (B,) and (B, m) valid_lens?"""
    module = build(MultiHeadAttention, 8, 2, 0.0, device=device)
    q = random_tensor(2, 3, 8, seed=1, device=device)
    kv = random_tensor(2, 5, 8, seed=2, device=device)
    lens = torch.tensor([5, 2], device=device)
    with calling("the forward with valid_lens [5, 2]", MultiHeadAttention):
        out = module(q, kv, kv, lens)
    expect_tensor(out, "the output", shape=(2, 3, 8), device=device)
    expect_tensor(stored_weights(module), "attention_weights", shape=(2, 2, 3, 5), device=device)
    expected = split_heads_reference(module, q, kv, kv, lens)
    expect_close(out, expected, "the output against SDPA per head", labels=("batch", "query"))
    per_query = torch.tensor([[5, 1, 3], [2, 4, 0]], device=device)
    with calling(
        "the forward with per-query valid_lens [[5, 1, 3], [2, 4, 0]]", MultiHeadAttention
    ):
        out = module(q, kv, kv, per_query)
    expected = split_heads_reference(module, q, kv, kv, per_query)
    expect_close(
        out,
        expected,
        "the output with per-query valid_lens [[5, 1, 3], [2, 4, 0]] against SDPA per head",
        labels=("batch", "query"),
    )
