"""Visible checks for the chapter "The transformer block"."""

import functools

import torch

from checks._contract import (
    FLOAT64,
    expect_dropout_pattern,
    expect_gradient_values,
    expect_gradients,
    float64_device,
    invoke,
    module_tensors,
    on_meta,
    seeded,
)
from checks._core import check, random_lengths, random_tensor
from checks._errors import CheckError
from checks._expect import expect_choice, expect_close, expect_number, expect_tensor, shape_str
from checks._i18n import tr
from checks.scoring import build, describe_lengths

# The two arrangements of a block, in the labels of its checks (tr: checks/_i18n.py).
PRE_NORM = "pre-norm, B={B}, T={T}, d={d}"
POST_NORM = "post-norm, B={B}, T={T}, d={d}"


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
            raise CheckError(
                tr("the block has no attribute {name!r}: keep the given __init__").format(name=name)
            )
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
    """Call the block; check that the output has the shape, dtype and device of X, and X is unchanged."""
    what = tr("the forward on X {X_shape}, valid_lens {lens}").format(
        X_shape=shape_str(X.shape), lens=describe_lengths(valid_lens)
    )
    out = invoke(block, X, valid_lens, what=what, names=("X", "valid_lens"), under=type(block))
    expect_tensor(out, tr("the output"), shape=X.shape, dtype=X.dtype, device=X.device)
    return out


def silence_sublayers(block):
    """Zero the last linear layer of the attention (W_o) and of the FFN: both sublayers return 0."""
    with torch.no_grad():
        for linear in (block.attention.W_o, block.ffn.dense2):
            linear.weight.zero_()
            if linear.bias is not None:
                linear.bias.zero_()


def block_contract(TransformerBlock, device, *, seed, d, B, T, reference=None):
    """float64 in and out, gradients to every parameter and X, nothing made on the CPU, pre and post.

    Args:
        reference: ``reference(block64, X, valid_lens)`` gives the float64 output.
    """
    dev64 = float64_device(device)
    X = random_tensor(B, T, d, seed=seed, device=device)
    lens = random_lengths(B, low=1, high=T, seed=seed, device=device)
    for norm_first in (False, True):
        name = (tr(PRE_NORM) if norm_first else tr(POST_NORM)).format(B=B, T=T, d=d)
        make = functools.partial(make_block, TransformerBlock, norm_first, seed=seed, d=d)
        out32 = call(make(device=device), X, lens)
        block64 = make(device=dev64).double()
        out64 = call(block64, X.to(dev64, torch.float64), lens.to(dev64))
        if reference is not None:
            expected = reference(block64, X.to(dev64, torch.float64), lens.to(dev64))
            tol = FLOAT64
        else:
            expected, tol = out32.detach().to(dev64, torch.float64), dict(atol=1e-4, rtol=1e-3)
        expect_close(
            out64,
            expected,
            tr("the float64 output ({name})").format(name=name),
            labels=("batch", "position"),
            **tol,
        )
        block = make(device=device)
        leaf = X.clone()
        named = module_tensors(block, X=leaf)
        expect_gradients(
            call(block, leaf, lens), named, tr("the forward ({name})").format(name=name), seed=seed
        )
        expect_gradient_values(
            functools.partial(call, block64, valid_lens=lens.to(dev64)),
            {"X": X.to(dev64, torch.float64)},
            tr("the forward in float64 ({name})").format(name=name),
            seed=seed,
        )
        meta, Xm, lm = make(device="meta"), X.to("meta"), lens.to("meta")
        on_meta(
            functools.partial(call, meta, Xm, lm),
            tr("the forward on the meta device ({name})").format(name=name),
        )


def sublayer_dropout(TransformerBlock, device, *, seed, p, B=4, T=6, d=8):
    """Pre-norm, with one sublayer silenced: X_out - X is the other sublayer's output after
    dropout(p), which must zero a fraction ≈ p of it and divide the rest by 1 - p, once."""
    X = random_tensor(B, T, d, seed=seed, device=device)
    lens = torch.full((B,), T, device=device)
    for silent, other in (("ffn", "attention"), ("attention", "FFN")):
        block = make_block(TransformerBlock, True, seed=seed, device=device, dropout=p, d=d)
        block.attention.attention.dropout.p = 0.0  # the weights' dropout: only the sublayer's here
        with torch.no_grad():
            linear = block.ffn.dense2 if silent == "ffn" else block.attention.W_o
            linear.weight.zero_()
            if linear.bias is not None:
                linear.bias.zero_()
        what = tr(
            "X_out - X of a pre-norm block with a silent {silent} (the {other} sublayer), p={p}"
        ).format(silent=silent, other=other, p=p)
        clean = call(block.eval(), X, lens) - X
        with seeded(seed):
            noisy = call(block.train(), X, lens) - X
        block.eval()
        expect_dropout_pattern(noisy, clean, p, tr("{what} in train mode").format(what=what))


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
        tr("post-norm output with silent sublayers (expected LN₂(LN₁(X)), norm1 first)"),
        labels=("batch", "position"),
    )
    pre = make_block(TransformerBlock, True, seed=1, device=device)
    silence_sublayers(pre)
    expect_close(
        call(pre, X, lens),
        X,
        tr("pre-norm output with silent sublayers (expected X: the residual path is untouched)"),
        labels=("batch", "position"),
    )


@check("TransformerBlock")
def block_properties(TransformerBlock, device):
    """float64 in and out, gradients to every parameter and X, X unchanged, no tensor made on the CPU?"""
    block_contract(TransformerBlock, device, seed=3, d=4, B=2, T=3)


@check("TransformerBlock")
def block_dropout_half(TransformerBlock, device):
    """With dropout=0.5 in training, is each sublayer's output dropped once (a fraction ≈ 0.5 zeroed, the rest doubled)?"""
    sublayer_dropout(TransformerBlock, device, seed=4, p=0.5)


# --------------------------------------------------------------------------
# Check your understanding: the visible groups check only the form of an answer.
# --------------------------------------------------------------------------


@check("quiz_8_1")
def quiz_layer_norm_form(answer, device):
    """Is answer_8_1 one of the letters "a" to "d"?"""
    expect_choice(answer(), "abcd", "answer_8_1")


@check("quiz_8_2")
def quiz_stream_growth_form(answer, device):
    """Is answer_8_2 a number?"""
    expect_number(answer(), "answer_8_2")


@check("quiz_8_3")
def quiz_pre_post_form(answer, device):
    """Is answer_8_3 one of the letters "a" to "d"?"""
    expect_choice(answer(), "abcd", "answer_8_3")
