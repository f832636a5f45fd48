"""Visible checks for the chapter "The encoder–decoder transformer".

Each samples one case of every property the hidden checks test at length: the shape, the
residual paths and norms, ``nn.TransformerDecoderLayer``, the two masks, float64 and gradients.

Why one module: it mirrors one chapter notebook, whose one graded target, the decoder block,
needs fixtures of its own (a block with random LayerNorms, its copy as
``nn.TransformerDecoderLayer``, the two padding masks). checks/hidden/encoder_decoder.py
imports them from here, the module every release keeps, so that both test with the same
fixtures.
"""

import functools

import torch
from torch import nn

from checks._contract import expect_dropout_pattern, on_meta, seeded
from checks._core import check, random_tensor
from checks._crash import calling
from checks._errors import CheckError
from checks._expect import (
    expect_attached,
    expect_choice,
    expect_close,
    expect_finite,
    expect_tensor,
)
from checks._i18n import tr
from checks._mutation import expect_unchanged
from checks.scoring import build, describe_lengths
from checks.transformer import layer_norm

PARTS = ("self_attention", "cross_attention", "ffn", "norm1", "norm2", "norm3")
PARTS_OF_CALL = ("X", "enc_outputs", "enc_valid_lens", "tgt_valid_lens")


def make_decoder_block(
    DecoderBlock, norm_first, *, seed, device, dropout=0.0, bias=True, d=8, num_heads=2
):
    """A decoder block with d features and an FFN of width 2d, with random LayerNorm parameters.

    The LayerNorms start as γ = 1, β = 0, which would make norm1, norm2 and norm3
    interchangeable; random values tell them apart.
    """
    block = build(
        DecoderBlock,
        d,
        2 * d,
        num_heads,
        dropout,
        norm_first=norm_first,
        bias=bias,
        seed=seed,
        device=device,
    )
    for name in PARTS:
        if not hasattr(block, name):
            raise CheckError(
                tr("the block has no attribute {name!r}: keep the given __init__").format(name=name)
            )
    with torch.no_grad():
        for i, norm in enumerate((block.norm1, block.norm2, block.norm3)):
            norm.weight.copy_(1 + 0.5 * random_tensor(d, seed=seed + 10 + i, device=device))
            if norm.bias is not None:
                norm.bias.copy_(0.5 * random_tensor(d, seed=seed + 20 + i, device=device))
    return block


def call(block, X, enc_outputs, enc_valid_lens=None, tgt_valid_lens=None):
    """Call the block; check that the output has the shape, dtype and device of X."""
    what = tr(
        "the forward on X {X}, enc_outputs {enc_outputs}, enc_valid_lens {enc}, "
        "tgt_valid_lens {tgt}"
    ).format(
        X=tuple(X.shape),
        enc_outputs=tuple(enc_outputs.shape),
        enc=describe_lengths(enc_valid_lens),
        tgt=describe_lengths(tgt_valid_lens),
    )
    with calling(what, type(block)):
        out = block(X, enc_outputs, enc_valid_lens, tgt_valid_lens)
    expect_tensor(out, tr("the output"), shape=X.shape, dtype=X.dtype, device=X.device)
    return out


def silence_sublayers(block):
    """Zero W_o of both attentions and the FFN's dense2: all three sublayers return 0."""
    with torch.no_grad():
        for linear in (block.self_attention.W_o, block.cross_attention.W_o, block.ffn.dense2):
            linear.weight.zero_()
            if linear.bias is not None:
                linear.bias.zero_()


def to_torch(block, num_heads):
    """An nn.TransformerDecoderLayer (no dropout) holding the weights of ``block``."""
    d, d_ffn = block.norm1.normalized_shape[0], block.ffn.dense1.out_features
    bias = block.self_attention.W_q.bias is not None
    weight = block.norm1.weight
    layer = nn.TransformerDecoderLayer(
        d, num_heads, d_ffn, 0.0, batch_first=True, norm_first=block.norm_first, bias=bias
    ).to(device=weight.device, dtype=weight.dtype)
    pairs = [
        (layer.self_attn.out_proj, block.self_attention.W_o),
        (layer.multihead_attn.out_proj, block.cross_attention.W_o),
        (layer.linear1, block.ffn.dense1),
        (layer.linear2, block.ffn.dense2),
        (layer.norm1, block.norm1),
        (layer.norm2, block.norm2),
        (layer.norm3, block.norm3),
    ]
    with torch.no_grad():
        for theirs, ours in (
            (layer.self_attn, block.self_attention),
            (layer.multihead_attn, block.cross_attention),
        ):
            theirs.in_proj_weight.copy_(
                torch.cat([ours.W_q.weight, ours.W_k.weight, ours.W_v.weight])
            )
            if bias:
                theirs.in_proj_bias.copy_(torch.cat([ours.W_q.bias, ours.W_k.bias, ours.W_v.bias]))
        for theirs, ours in pairs:
            theirs.weight.copy_(ours.weight)
            if bias:
                theirs.bias.copy_(ours.bias)
    return layer.eval()


def padding_mask(lens, n, device):
    """(B, n), True where a position is padding (PyTorch's convention); None for no lengths."""
    if lens is None:
        return None
    return torch.arange(n, device=device) >= lens[:, None]


def torch_output(layer, X, enc_outputs, enc_valid_lens=None, tgt_valid_lens=None):
    """The decoder layer's output with a causal target mask and both padding masks."""
    T, S = X.shape[1], enc_outputs.shape[1]
    causal = torch.ones(T, T, dtype=torch.bool, device=X.device).triu(1)  # True = masked
    with torch.enable_grad():  # keep PyTorch on its slow (reference) path
        return layer(
            X,
            enc_outputs,
            tgt_mask=causal,
            tgt_key_padding_mask=padding_mask(tgt_valid_lens, T, X.device),
            memory_key_padding_mask=padding_mask(enc_valid_lens, S, X.device),
        )


def describe(norm_first, bias, enc_valid_lens, tgt_valid_lens):
    if norm_first:
        text = tr("pre-norm, bias={bias}, enc_valid_lens={enc}, tgt_valid_lens={tgt}")
    else:
        text = tr("post-norm, bias={bias}, enc_valid_lens={enc}, tgt_valid_lens={tgt}")
    return text.format(
        bias=bias, enc=describe_lengths(enc_valid_lens), tgt=describe_lengths(tgt_valid_lens)
    )


def expect_unchanged_before(out, changed, cut, name):
    """Outputs at target positions < cut must be equal."""
    expect_close(changed[:, :cut], out[:, :cut], name, labels=("batch", "position"))


@check("DecoderBlock")
def keeps_the_shape(DecoderBlock, device):
    """Do X (2, 4, 8) and enc_outputs (2, 6, 8) give an output (2, 4, 8), post- and pre-norm, with and without valid lengths?"""
    X = random_tensor(2, 4, 8, seed=0, device=device)
    enc = random_tensor(2, 6, 8, seed=1, device=device)
    for norm_first in (False, True):
        block = make_decoder_block(DecoderBlock, norm_first, seed=0, device=device)
        call(block, X, enc)
        call(block, X, enc, torch.tensor([6, 2], device=device))
        call(
            block, X, enc, torch.tensor([3, 6], device=device), torch.tensor([4, 1], device=device)
        )


@check("DecoderBlock")
def silent_sublayers(DecoderBlock, device):
    """With W_o of both attentions and the FFN's dense2 set to 0, is post-norm LN₃(LN₂(LN₁(X))) and pre-norm X?"""
    X = random_tensor(2, 4, 8, seed=1, device=device, scale=3.0)
    enc = random_tensor(2, 5, 8, seed=2, device=device)
    lens = torch.tensor([5, 3], device=device)
    post = make_decoder_block(DecoderBlock, False, seed=1, device=device)
    silence_sublayers(post)
    expected = layer_norm(layer_norm(layer_norm(X, post.norm1), post.norm2), post.norm3)
    expect_close(
        call(post, X, enc, lens),
        expected,
        tr("post-norm output with silent sublayers (expected LN₃(LN₂(LN₁(X))), in that order)"),
        labels=("batch", "position"),
    )
    pre = make_decoder_block(DecoderBlock, True, seed=1, device=device)
    silence_sublayers(pre)
    expect_close(
        call(pre, X, enc, lens),
        X,
        tr("pre-norm output with silent sublayers (expected X: the residual path is untouched)"),
        labels=("batch", "position"),
    )


@check("DecoderBlock")
def sample_against_torch(DecoderBlock, device):
    """Does it match nn.TransformerDecoderLayer given the same weights, post- and pre-norm, with padding on both sides?"""
    X = random_tensor(2, 4, 8, seed=3, device=device)
    enc = random_tensor(2, 5, 8, seed=4, device=device)
    enc_lens, tgt_lens = torch.tensor([5, 2], device=device), torch.tensor([4, 3], device=device)
    for norm_first in (False, True):
        block = make_decoder_block(DecoderBlock, norm_first, seed=3, device=device)
        layer = to_torch(block, 2)
        expect_close(
            call(block, X, enc, enc_lens, tgt_lens),
            torch_output(layer, X, enc, enc_lens, tgt_lens).detach(),
            tr("the output against nn.TransformerDecoderLayer ({what})").format(
                what=describe(norm_first, True, enc_lens, tgt_lens)
            ),
            labels=("batch", "position"),
        )


@check("DecoderBlock")
def sample_masks(DecoderBlock, device):
    """Do later target positions and padded encoder outputs leave the output unchanged, post-norm?"""
    X = random_tensor(2, 4, 8, seed=5, device=device)
    enc = random_tensor(2, 5, 8, seed=6, device=device)
    enc_lens = torch.tensor([5, 2], device=device)
    block = make_decoder_block(DecoderBlock, False, seed=5, device=device)
    out = call(block, X, enc, enc_lens).detach()
    X_later = X.clone()
    X_later[:, 2:] = random_tensor(2, 2, 8, seed=7, device=device, scale=5.0)
    expect_unchanged_before(
        out,
        call(block, X_later, enc, enc_lens).detach(),
        2,
        tr(
            "outputs at target positions 0 and 1 after changing target positions 2 and 3 (the "
            "self-attention must be causal)"
        ),
    )
    enc_padded = enc.clone()
    enc_padded[1, 2:] = random_tensor(3, 8, seed=8, device=device, scale=5.0)
    expect_close(
        call(block, X, enc_padded, enc_lens),
        out,
        tr(
            "the output after changing encoder outputs beyond enc_valid_lens=[5, 2] (the "
            "cross-attention must mask the source padding)"
        ),
        labels=("batch", "position"),
    )


@check("DecoderBlock")
def sample_dropout(DecoderBlock, device):
    """With dropout=1 in training, is post-norm LN₃(LN₂(LN₁(X))): every sublayer's output dropped?"""
    X = random_tensor(2, 3, 8, seed=12, device=device, scale=2.0)
    enc = random_tensor(2, 4, 8, seed=13, device=device)
    block = make_decoder_block(DecoderBlock, False, seed=12, device=device, dropout=1.0)
    out = call(block.train(), X, enc, torch.tensor([4, 2], device=device))
    block.eval()
    expect_close(
        out,
        layer_norm(layer_norm(layer_norm(X, block.norm1), block.norm2), block.norm3),
        tr("the post-norm output in train mode with dropout=1 (expected LN₃(LN₂(LN₁(X))))"),
        labels=("batch", "position"),
    )


def decoder_on_meta(DecoderBlock, *, seed, d=8, every=False):
    """The forward on meta tensors, post- and pre-norm, with both lengths (and, if ``every``,
    without them too): nothing made on the CPU."""
    X = torch.empty(2, 4, d, device="meta")
    enc = torch.empty(2, 5, d, device="meta")
    lens = (torch.tensor([5, 2]).to("meta"), torch.tensor([4, 3]).to("meta"))
    for norm_first in (False, True):
        block = make_decoder_block(DecoderBlock, norm_first, seed=seed, device="meta", d=d)
        for enc_lens, tgt_lens in ((None, None), lens) if every else (lens,):
            on_meta(
                functools.partial(call, block, X, enc, enc_lens, tgt_lens),
                tr("the forward on the meta device ({shapes})").format(
                    shapes=describe(norm_first, True, enc_lens, tgt_lens)
                ),
            )


def decoder_sublayer_dropout(DecoderBlock, device, *, seed, p, B=4, T=6, S=5, d=8):
    """Pre-norm, with two sublayers silenced: X_out - X is the third one's output after
    dropout(p), which must zero a fraction ≈ p of it and divide the rest by 1 - p, once."""
    X = random_tensor(B, T, d, seed=seed, device=device)
    enc = random_tensor(B, S, d, seed=seed + 1, device=device)
    sublayers = {
        "self-attention": lambda block: block.self_attention.W_o,
        "cross-attention": lambda block: block.cross_attention.W_o,
        "FFN": lambda block: block.ffn.dense2,
    }
    for other in sublayers:
        block = make_decoder_block(DecoderBlock, True, seed=seed, device=device, dropout=p, d=d)
        for attention in (block.self_attention, block.cross_attention):
            attention.attention.dropout.p = 0.0  # the weights' dropout: only the sublayers' here
        with torch.no_grad():
            for name, linear_of in sublayers.items():
                if name != other:
                    linear = linear_of(block)
                    linear.weight.zero_()
                    if linear.bias is not None:
                        linear.bias.zero_()
        named = {"self-attention": tr("self-attention"), "cross-attention": tr("cross-attention")}
        what = tr(
            "X_out - X of a pre-norm block whose only live sublayer is the {other}, p={p}"
        ).format(other=named.get(other, other), p=p)
        clean = call(block.eval(), X, enc) - X
        with seeded(seed):
            noisy = call(block.train(), X, enc) - X
        block.eval()
        expect_dropout_pattern(noisy, clean, p, tr("{what}, in train mode").format(what=what))


@check("DecoderBlock")
def sample_on_meta(DecoderBlock, device):
    """On the meta device, post- and pre-norm, is no tensor made on the CPU?"""
    decoder_on_meta(DecoderBlock, seed=14)


@check("DecoderBlock")
def sample_dropout_half(DecoderBlock, device):
    """With dropout=0.5 in training, is each sublayer's output dropped once (a fraction ≈ 0.5 zeroed, the rest doubled)?"""
    decoder_sublayer_dropout(DecoderBlock, device, seed=15, p=0.5)


@check("DecoderBlock")
def sample_float64_and_gradients(DecoderBlock, device):
    """In float64, does it keep the dtype, leave its inputs unchanged and pass gradients to X and enc_outputs?"""
    block = make_decoder_block(DecoderBlock, True, seed=9, device=device).double()
    X = random_tensor(2, 3, 8, seed=9, device=device, dtype=torch.float64)
    enc = random_tensor(2, 4, 8, seed=10, device=device, dtype=torch.float64)
    enc_lens, tgt_lens = torch.tensor([4, 1], device=device), torch.tensor([3, 2], device=device)
    inputs = (X, enc, enc_lens, tgt_lens)
    saved = [t.clone() for t in inputs]
    call(block, *inputs)
    for before, after, name in zip(saved, inputs, PARTS_OF_CALL):
        expect_unchanged(before, after, name)
    X, enc = X.requires_grad_(), enc.requires_grad_()
    out = call(block, X, enc, enc_lens, tgt_lens)
    expect_attached(out, tr("the output for X and enc_outputs that require grad"))
    (out * random_tensor(2, 3, 8, seed=11, device=device, dtype=torch.float64)).sum().backward()
    for t, name in ((X, "X"), (enc, "enc_outputs")):
        if t.grad is None:
            raise CheckError(
                tr("no gradient reached {name}: is it detached inside the block?").format(name=name)
            )
        expect_finite(t.grad, tr("the gradient of {name}").format(name=name))
    if not bool(enc.grad[0].abs().sum() > 0):
        raise CheckError(
            tr("the gradient of enc_outputs is zero: the cross-attention ignores the encoder")
        )


# ------------------------------------------------ Check your understanding: the form only


@check("quiz_9_1")
def quiz_9_1_form(answer, device):
    """Is answer_9_1 one of the letters "a" to "d"?"""
    expect_choice(answer(), "abcd", "answer_9_1")


@check("quiz_9_2")
def quiz_9_2_form(answer, device):
    """Is answer_9_2 one of the letters "a" to "d"?"""
    expect_choice(answer(), "abcd", "answer_9_2")
