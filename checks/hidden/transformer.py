"""Hidden checks for the chapter "The transformer block".

References: ``torch.nn.TransformerEncoderLayer`` given the same weights (its
slow path: the checks run with gradients enabled), LayerNorm by its formula,
and properties (padding invariance, permutation equivariance).
"""

import math

import torch
from torch import nn

from checks._contract import properties
from checks._core import check, random_tensor
from checks._errors import CheckError
from checks._expect import expect_choice, expect_close, expect_number
from checks._i18n import tr
from checks.transformer import block_contract, call, layer_norm, make_block, sublayer_dropout


def to_torch(block, num_heads, device):
    """An nn.TransformerEncoderLayer (no dropout) holding the weights of ``block``."""
    d, d_ffn = block.norm1.normalized_shape[0], block.ffn.dense1.out_features
    bias = block.attention.W_q.bias is not None
    layer = nn.TransformerEncoderLayer(
        d, num_heads, d_ffn, 0.0, batch_first=True, norm_first=block.norm_first, bias=bias
    )
    att = block.attention
    pairs = [
        (layer.self_attn.out_proj, att.W_o),
        (layer.linear1, block.ffn.dense1),
        (layer.linear2, block.ffn.dense2),
        (layer.norm1, block.norm1),
        (layer.norm2, block.norm2),
    ]
    with torch.no_grad():
        layer.self_attn.in_proj_weight.copy_(
            torch.cat([att.W_q.weight, att.W_k.weight, att.W_v.weight])
        )
        if bias:
            layer.self_attn.in_proj_bias.copy_(
                torch.cat([att.W_q.bias, att.W_k.bias, att.W_v.bias])
            )
        for theirs, ours in pairs:
            theirs.weight.copy_(ours.weight)
            if bias:
                theirs.bias.copy_(ours.bias)
    return layer.to(device).eval()


def torch_output(layer, X, valid_lens):
    padding = None
    if valid_lens is not None:
        padding = torch.arange(X.shape[1], device=X.device) >= valid_lens[:, None]  # True = padding
    with torch.enable_grad():  # keep PyTorch on its slow (reference) path
        return layer(X, src_key_padding_mask=padding).detach()


@check("TransformerBlock.torch", hidden=True)
def matches_torch(TransformerBlock, device):
    """Does it match nn.TransformerEncoderLayer given the same weights, post- and pre-norm, with and without bias and padding?"""
    for seed, (norm_first, bias) in enumerate(
        [(False, True), (True, True), (False, False), (True, False)]
    ):
        block = make_block(TransformerBlock, norm_first, seed=seed, device=device, bias=bias, d=12)
        with torch.no_grad():  # no all-zero biases: make every parameter count
            for p in block.parameters():
                p.add_(0.1 * random_tensor(*p.shape, seed=seed + 100, device=device))
        layer = to_torch(block, 2, device)
        X = random_tensor(3, 6, 12, seed=seed, device=device)
        for lens in (None, torch.tensor([6, 4, 1], device=device)):
            what = (
                tr("pre-norm, bias={bias}, valid_lens={lens}")
                if norm_first
                else tr("post-norm, bias={bias}, valid_lens={lens}")
            ).format(bias=bias, lens=None if lens is None else lens.tolist())
            expect_close(
                call(block, X, lens),
                torch_output(layer, X, lens),
                tr("the output against nn.TransformerEncoderLayer ({what})").format(what=what),
                labels=("batch", "position"),
            )


@check("TransformerBlock.dropout", hidden=True)
def dropout_on_the_sublayers(TransformerBlock, device):
    """With dropout=1 in training, is post-norm LN₂(LN₁(X)) and pre-norm X, and is eval mode untouched?"""
    X = random_tensor(2, 5, 8, seed=7, device=device, scale=2.0)
    lens = torch.tensor([5, 3], device=device)
    for norm_first in (False, True):
        block = make_block(TransformerBlock, norm_first, seed=7, device=device, dropout=1.0)
        name = tr("pre-norm") if norm_first else tr("post-norm")
        layer = to_torch(block, 2, device)
        expect_close(
            call(block.eval(), X, lens),
            torch_output(layer, X, lens),
            tr("the {name} output in eval mode with dropout=1 (dropout must be off)").format(
                name=name
            ),
            labels=("batch", "position"),
        )
        train_out = call(block.train(), X, lens)
        block.eval()
        expected = X if norm_first else layer_norm(layer_norm(X, block.norm1), block.norm2)
        expect_close(
            train_out,
            expected,
            tr(
                "the {name} output in train mode with dropout=1 (each sublayer's output "
                "dropped, expected {expected})"
            ).format(name=name, expected="X" if norm_first else "LN₂(LN₁(X))"),
            labels=("batch", "position"),
        )


@check("TransformerBlock.properties", hidden=True)
def padding_and_permutations(TransformerBlock, device):
    """Do padded positions leave valid ones unchanged, and without padding is the block permutation equivariant?"""
    X = random_tensor(3, 7, 8, seed=8, device=device)
    lens = torch.tensor([7, 2, 5], device=device)
    valid = torch.arange(7, device=device) < lens[:, None]  # (B, T)
    noise = random_tensor(3, 7, 8, seed=9, device=device, scale=5.0)
    X_changed = torch.where(valid[..., None], X, noise)
    perm = torch.randperm(7, generator=torch.Generator().manual_seed(8)).to(device)
    for norm_first in (False, True):
        block = make_block(TransformerBlock, norm_first, seed=8, device=device)
        name = tr("pre-norm") if norm_first else tr("post-norm")
        out = call(block, X, lens).detach()
        changed = call(block, X_changed, lens).detach()
        expect_close(
            torch.where(valid[..., None], changed, 0.0),
            torch.where(valid[..., None], out, 0.0),
            tr("{name} outputs at valid positions after changing the padded inputs").format(
                name=name
            ),
            labels=("batch", "position"),
        )
        out = call(block, X).detach()
        expect_close(
            call(block, X[:, perm]),
            out[:, perm],
            tr("{name}: f(X permuted) against f(X) permuted (no padding, no positions)").format(
                name=name
            ),
            labels=("batch", "position"),
        )


def torch_reference(block64, X, valid_lens):
    layer = to_torch(block64, 2, X.device).double()
    return torch_output(layer, X, valid_lens)


@check("TransformerBlock.torch", hidden=True)
def block_properties_hidden(TransformerBlock, device):
    """float64 in and out (equal to nn.TransformerEncoderLayer in float64), gradients to every parameter and X, X unchanged, no tensor made on the CPU?"""
    block_contract(TransformerBlock, device, seed=11, d=6, B=3, T=5, reference=torch_reference)


@check("TransformerBlock.dropout", hidden=True)
def sublayer_dropout_statistics(TransformerBlock, device):
    """With dropout=0.3 in training, is each sublayer's output dropped once (a fraction ≈ 0.3 zeroed, the rest divided by 0.7)?"""
    sublayer_dropout(TransformerBlock, device, seed=12, p=0.3, B=6, T=7, d=12)


# --------------------------------------------------------------------------
# Check your understanding: the keys. The number is computed here from the model
# the question states (variances of independent terms add), not copied from the key.
# The book prints each check's question under the test cell: they do not give the answer away.
# --------------------------------------------------------------------------


@check("quiz_8_1.key", hidden=True)
def quiz_layer_norm(answer, device):
    """Is answer_8_1 the right option?"""
    choice = expect_choice(answer(), "abcd", "answer_8_1")
    if choice != "b":
        raise CheckError(
            tr(
                "answer_8_1 = {choice!r}: nn.LayerNorm(8) normalises over the last axis only, "
                "the 8 features of one position; it uses no statistics across the batch or the "
                "sequence (that is batch normalisation), so other sequences and padding cannot "
                "change a position"
            ).format(choice=choice)
        )


@check("quiz_8_2.key", hidden=True)
def quiz_stream_growth(answer, device):
    """Is answer_8_2 the standard deviation, to 2 %?"""
    value = expect_number(answer(), "answer_8_2")
    num_layers = 12
    expected = math.sqrt(1 + 2 * num_layers)  # variances of independent terms add
    if not abs(value - expected) <= 0.02 * expected:
        raise CheckError(
            tr(
                "answer_8_2 = {value:g}: the stream after {num_layers} blocks is X_0 plus "
                "{terms} independent terms of variance 1, so its variance is the sum of "
                "theirs and its standard deviation the square root of that sum"
            ).format(value=value, num_layers=num_layers, terms=2 * num_layers)
        )


@check("quiz_8_3.key", hidden=True)
def quiz_pre_post(answer, device):
    """Is answer_8_3 the right option?"""
    choice = expect_choice(answer(), "abcd", "answer_8_3")
    why_not = {
        "a": tr(
            "both forms have the same two LayerNorms and the same sublayers; pre-norm only "
            "moves the LayerNorms in front of the sublayers"
        ),
        "b": tr(
            "a pre-norm block returns X + f(LN(X)): only each sublayer's input is normalised, "
            "never the residual stream, so its output is a plain sum"
        ),
        "d": tr(
            "post-norm is the form that is hard to train at depth; the next section trains "
            "both forms side by side and pre-norm gets there first"
        ),
    }
    if choice != "c":
        raise CheckError(f"answer_8_3 = {choice!r}: {why_not[choice]}")


# ----------------------------------------------------------------- the property classes
# Which group tests each class of every graded target (checks._contract.properties);
# tests/test_properties.py proves each with a known-wrong answer that breaks it.

properties(
    "TransformerBlock",
    float64=("TransformerBlock.torch",),
    gradient=("TransformerBlock.torch",),
    meta=("TransformerBlock.torch",),
    dropout=("TransformerBlock.dropout",),
    unchanged=("TransformerBlock.torch",),
)
