"""Visible checks for the chapter "The transformer block"."""

import torch

from checks._core import CheckError, check, expect_close, expect_tensor, random_tensor
from checks.scoring import build


def make_block(TransformerBlock, norm_first, *, seed, device, dropout=0.0, bias=True, d=8):
    """A block with d features, 2 heads and an FFN of width 2d, with random LayerNorm parameters.

    The LayerNorms start as γ = 1, β = 0, which would make norm1 and norm2 interchangeable;
    random values tell them apart.
    """
    block = build(
        TransformerBlock,
        d,
        2 * d,
        2,
        dropout,
        norm_first=norm_first,
        bias=bias,
        seed=seed,
        device=device,
    )
    for name in ("attention", "ffn", "norm1", "norm2"):
        if not hasattr(block, name):
            raise CheckError(f"the block has no attribute {name!r}: keep the given __init__")
    with torch.no_grad():
        for i, norm in enumerate((block.norm1, block.norm2)):
            norm.weight.copy_(1 + 0.5 * random_tensor(d, seed=seed + 10 + i, device=device))
            if norm.bias is not None:
                norm.bias.copy_(0.5 * random_tensor(d, seed=seed + 20 + i, device=device))
    return block


def layer_norm(X, norm):
    """γ ⊙ (x - μ) / √(σ² + ε) + β over the last axis, from the formula."""
    mu = X.mean(-1, keepdim=True)
    var = ((X - mu) ** 2).mean(-1, keepdim=True)
    out = (X - mu) / torch.sqrt(var + norm.eps) * norm.weight.detach()
    return out + norm.bias.detach() if norm.bias is not None else out


def call(block, X, valid_lens=None):
    """Call the block; check that the output has the shape, dtype and device of X."""
    out = block(X, valid_lens)
    expect_tensor(out, "the output", shape=X.shape, dtype=X.dtype, device=X.device)
    return out


def silence_sublayers(block):
    """Zero the last linear layer of the attention (W_o) and of the FFN: both sublayers return 0."""
    with torch.no_grad():
        for linear in (block.attention.W_o, block.ffn.dense2):
            linear.weight.zero_()
            if linear.bias is not None:
                linear.bias.zero_()


@check("TransformerBlock")
def keeps_the_shape(TransformerBlock, device):
    """Does X of shape (2, 5, 8) give an output of shape (2, 5, 8), post- and pre-norm, with and without valid_lens?"""
    X = random_tensor(2, 5, 8, seed=0, device=device)
    for norm_first in (False, True):
        block = make_block(TransformerBlock, norm_first, seed=0, device=device)
        call(block, X)
        call(block, X, torch.tensor([5, 2], device=device))


@check("TransformerBlock")
def silent_sublayers(TransformerBlock, device):
    """With W_o and the FFN's dense2 set to 0, is post-norm LN₂(LN₁(X)) and pre-norm X?"""
    X = random_tensor(2, 5, 8, seed=1, device=device, scale=3.0)
    lens = torch.tensor([5, 3], device=device)
    post = make_block(TransformerBlock, False, seed=1, device=device)
    silence_sublayers(post)
    expected = layer_norm(layer_norm(X, post.norm1), post.norm2)
    expect_close(
        call(post, X, lens),
        expected,
        "post-norm output with silent sublayers (expected LN₂(LN₁(X)), norm1 first)",
        labels=("batch", "position"),
    )
    pre = make_block(TransformerBlock, True, seed=1, device=device)
    silence_sublayers(pre)
    expect_close(
        call(pre, X, lens),
        X,
        "pre-norm output with silent sublayers (expected X: the residual path is untouched)",
        labels=("batch", "position"),
    )
