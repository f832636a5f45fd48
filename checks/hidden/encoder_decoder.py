"""Hidden checks for the chapter "The encoder–decoder transformer".

References: ``torch.nn.TransformerDecoderLayer`` given the same weights (its slow path, with
a causal ``tgt_mask`` and both key-padding masks), in float32 and float64 with its gradients;
LayerNorm by its formula; an explicit loop over target prefixes; and masking properties
(perturbing later targets, padded targets or padded encoder outputs changes nothing, while a
valid encoder output does change the output).

Why one module: the grader's checks of one chapter notebook, apart from
checks/encoder_decoder.py only because a release drops ``checks/hidden/``: the decoder block
against ``nn.TransformerDecoderLayer`` at length, and the keys of the chapter's two
questions, with the visible module's fixtures rather than copies of them.
"""

import functools

import torch
from torch import nn

from checks._contract import expect_gradient_values, properties
from checks._core import check, random_tensor
from checks._errors import CheckError
from checks._expect import expect_choice, expect_close
from checks._i18n import N_, tr
from checks._mutation import expect_unchanged
from checks.encoder_decoder import (
    call,
    decoder_on_meta,
    decoder_sublayer_dropout,
    describe,
    make_decoder_block,
    to_torch,
    torch_output,
)
from checks.transformer import layer_norm


def randomise(block, seed, device):
    """Add noise to every parameter, so that no all-zero bias hides a mistake."""
    with torch.no_grad():
        for i, p in enumerate(block.parameters()):
            p.add_(0.1 * random_tensor(*p.shape, seed=seed + 100 + i, device=device, dtype=p.dtype))


@check("DecoderBlock.torch", hidden=True)
def matches_torch(DecoderBlock, device):
    """Does it match nn.TransformerDecoderLayer given the same weights, post- and pre-norm, with and without bias and padding of the source and the target?"""
    configs = [(False, True), (True, True), (False, False), (True, False)]
    for seed, (norm_first, bias) in enumerate(configs):
        block = make_decoder_block(
            DecoderBlock, norm_first, seed=seed, device=device, bias=bias, d=12, num_heads=3
        )
        randomise(block, seed, device)
        layer = to_torch(block, 3)
        X = random_tensor(3, 5, 12, seed=seed, device=device)
        enc = random_tensor(3, 7, 12, seed=seed + 50, device=device)
        cases = [
            (None, None),
            (torch.tensor([7, 3, 1], device=device), None),
            (None, torch.tensor([5, 2, 1], device=device)),
            (torch.tensor([2, 7, 5], device=device), torch.tensor([3, 5, 4], device=device)),
        ]
        for enc_lens, tgt_lens in cases:
            expect_close(
                call(block, X, enc, enc_lens, tgt_lens),
                torch_output(layer, X, enc, enc_lens, tgt_lens).detach(),
                tr("the output against nn.TransformerDecoderLayer ({what})").format(
                    what=describe(norm_first, bias, enc_lens, tgt_lens)
                ),
                labels=("batch", "position"),
            )


@check("DecoderBlock.masks", hidden=True)
def masks(DecoderBlock, device):
    """Is each output position t the output of the prefix 0..t (a loop), unchanged by padded targets and padded encoder outputs, and changed by a valid encoder output?"""
    B, T, S, d = 3, 5, 6, 8
    X = random_tensor(B, T, d, seed=20, device=device)
    enc = random_tensor(B, S, d, seed=21, device=device)
    enc_lens = torch.tensor([6, 1, 4], device=device)
    tgt_lens = torch.tensor([5, 2, 3], device=device)
    tgt_valid = torch.arange(T, device=device) < tgt_lens[:, None]  # (B, T)
    for norm_first in (False, True):
        name = tr("pre-norm") if norm_first else tr("post-norm")
        block = make_decoder_block(DecoderBlock, norm_first, seed=20, device=device)
        randomise(block, 20, device)
        out = call(block, X, enc, enc_lens).detach()
        for t in range(T):  # the loop over prefixes: position t sees targets 0..t only
            prefix = call(block, X[:, : t + 1], enc, enc_lens).detach()
            expect_close(
                out[:, t],
                prefix[:, t],
                tr(
                    "{name}: the output at target position {t} against the block run on the "
                    "prefix X[:, :{end}] (later target positions must be masked)"
                ).format(name=name, t=t, end=t + 1),
                labels=("batch",),
            )
        noise = random_tensor(B, T, d, seed=22, device=device, scale=5.0)
        out = call(block, X, enc, enc_lens, tgt_lens).detach()
        changed = call(block, torch.where(tgt_valid[..., None], X, noise), enc, enc_lens, tgt_lens)
        expect_close(
            torch.where(tgt_valid[..., None], changed.detach(), 0.0),
            torch.where(tgt_valid[..., None], out, 0.0),
            tr(
                "{name}: outputs at valid target positions after changing the padded targets "
                "(tgt_valid_lens={tgt_lens})"
            ).format(name=name, tgt_lens=tgt_lens.tolist()),
            labels=("batch", "position"),
        )
        enc_valid = torch.arange(S, device=device) < enc_lens[:, None]  # (B, S)
        enc_noise = random_tensor(B, S, d, seed=23, device=device, scale=5.0)
        expect_close(
            call(block, X, torch.where(enc_valid[..., None], enc, enc_noise), enc_lens, tgt_lens),
            out,
            tr(
                "{name}: the output after changing encoder outputs beyond enc_valid_lens={enc_lens}"
            ).format(name=name, enc_lens=enc_lens.tolist()),
            labels=("batch", "position"),
        )
        enc_changed = enc.clone()
        enc_changed[:, 0] += 3.0  # a valid source position of every sequence
        moved = call(block, X, enc_changed, enc_lens, tgt_lens).detach()
        for b in range(B):
            if not bool(((moved[b] - out[b]).abs() > 1e-4).any()):
                raise CheckError(
                    tr(
                        "{name}: changing the encoder output at source position 0 of sequence "
                        "{b} did not change its output: the cross-attention must read the "
                        "encoder outputs as keys and values"
                    ).format(name=name, b=b)
                )


@check("DecoderBlock.dropout", hidden=True)
def dropout_on_the_sublayers(DecoderBlock, device):
    """With dropout=1 in training, is post-norm LN₃(LN₂(LN₁(X))) and pre-norm X, and is eval mode untouched?"""
    X = random_tensor(2, 4, 8, seed=30, device=device, scale=2.0)
    enc = random_tensor(2, 5, 8, seed=31, device=device)
    enc_lens = torch.tensor([5, 3], device=device)
    for norm_first in (False, True):
        block = make_decoder_block(DecoderBlock, norm_first, seed=30, device=device, dropout=1.0)
        name = tr("pre-norm") if norm_first else tr("post-norm")
        layer = to_torch(block, 2)
        expect_close(
            call(block.eval(), X, enc, enc_lens),
            torch_output(layer, X, enc, enc_lens).detach(),
            tr("the {name} output in eval mode with dropout=1 (dropout must be off)").format(
                name=name
            ),
            labels=("batch", "position"),
        )
        train_out = call(block.train(), X, enc, enc_lens)
        block.eval()
        expected = X
        if not norm_first:
            expected = layer_norm(layer_norm(layer_norm(X, block.norm1), block.norm2), block.norm3)
        expect_close(
            train_out,
            expected,
            tr(
                "the {name} output in train mode with dropout=1 (each sublayer's output "
                "dropped, expected {expected})"
            ).format(name=name, expected="X" if norm_first else "LN₃(LN₂(LN₁(X)))"),
            labels=("batch", "position"),
        )


@check("DecoderBlock.dropout", hidden=True)
def sublayer_dropout_statistics(DecoderBlock, device):
    """With dropout=0.3 in training, is each sublayer's output dropped once (a fraction ≈ 0.3 zeroed, the rest divided by 0.7)?"""
    decoder_sublayer_dropout(DecoderBlock, device, seed=33, p=0.3, B=6, T=7, S=6, d=12)


@check("DecoderBlock.dtypes", hidden=True)
def on_the_meta_device(DecoderBlock, device):
    """On the meta device, post- and pre-norm, with and without lengths, is no tensor made on the CPU?"""
    decoder_on_meta(DecoderBlock, seed=45, d=12, every=True)


@check("DecoderBlock.dtypes", hidden=True)
def float64_and_gradients(DecoderBlock, device):
    """In float64, does it match nn.TransformerDecoderLayer to 1e-10, with the same gradients for X, enc_outputs and the weights, leaving its inputs unchanged?"""
    for seed, norm_first in enumerate((False, True), start=40):
        name = tr("pre-norm") if norm_first else tr("post-norm")
        block = make_decoder_block(DecoderBlock, norm_first, seed=seed, device=device).double()
        randomise(block, seed, device)
        layer = to_torch(block, 2)
        X = random_tensor(2, 4, 8, seed=seed, device=device, dtype=torch.float64)
        enc = random_tensor(2, 5, 8, seed=seed + 1, device=device, dtype=torch.float64)
        enc_lens, tgt_lens = (
            torch.tensor([5, 2], device=device),
            torch.tensor([4, 3], device=device),
        )
        R = random_tensor(2, 4, 8, seed=seed + 2, device=device, dtype=torch.float64)
        inputs = {"X": X, "enc_outputs": enc, "enc_valid_lens": enc_lens}
        inputs["tgt_valid_lens"] = tgt_lens
        saved = {k: v.clone() for k, v in inputs.items()}
        call(block, X, enc, enc_lens, tgt_lens)
        for key, before in saved.items():
            expect_unchanged(before, inputs[key], f"{key} ({name}, float64)")
        X_ours, enc_ours = X.clone().requires_grad_(), enc.clone().requires_grad_()
        out = call(block, X_ours, enc_ours, enc_lens, tgt_lens)
        X_ref, enc_ref = X.clone().requires_grad_(), enc.clone().requires_grad_()
        expected = torch_output(layer, X_ref, enc_ref, enc_lens, tgt_lens)
        what = f"float64, {describe(norm_first, True, enc_lens, tgt_lens)}"
        expect_close(
            out,
            expected.detach(),
            tr("the output against nn.TransformerDecoderLayer ({what})").format(what=what),
            atol=1e-10,
            rtol=1e-8,
            labels=("batch", "position"),
        )
        (out * R).sum().backward()
        (expected * R).sum().backward()
        for ours, ref, what_grad in ((X_ours, X_ref, "X"), (enc_ours, enc_ref, "enc_outputs")):
            if ours.grad is None:
                raise CheckError(
                    tr("{name}: no gradient reached {what_grad}").format(
                        name=name, what_grad=what_grad
                    )
                )
            expect_close(
                ours.grad,
                ref.grad,
                tr(
                    "{name}: the gradient of {what_grad} against nn.TransformerDecoderLayer's"
                ).format(name=name, what_grad=what_grad),
                atol=1e-9,
                rtol=1e-7,
                labels=("batch", "position"),
            )
        for ours, ref, what_grad in (
            (
                block.cross_attention.W_o.weight,
                layer.multihead_attn.out_proj.weight,
                tr("the cross-attention's W_o"),
            ),
            (block.ffn.dense1.weight, layer.linear1.weight, tr("the FFN's dense1")),
        ):
            if ours.grad is None:
                raise CheckError(
                    tr("{name}: no gradient reached {what_grad}").format(
                        name=name, what_grad=what_grad
                    )
                )
            expect_close(
                ours.grad,
                ref.grad,
                tr(
                    "{name}: the gradient of {what_grad} against nn.TransformerDecoderLayer's"
                ).format(name=name, what_grad=what_grad),
                atol=1e-9,
                rtol=1e-7,
            )
        expect_gradient_values(
            functools.partial(call, block, enc_valid_lens=enc_lens, tgt_valid_lens=tgt_lens),
            {"X": X, "enc_outputs": enc},
            tr("the forward ({what})").format(what=what),
            seed=seed,
        )


# ------------------------------------------------ Check your understanding: the answers

QUIZ_9_1 = {"a": "B, h, S, P", "b": "B, h, P, S", "c": "B, h, P, P", "d": "B, h, 1, S"}


@check("quiz_9_1.key", hidden=True)
def quiz_9_1_key(answer, device):
    """Is the shape of those cross-attention weights the one nn.MultiheadAttention gives?"""
    choice = expect_choice(answer(), "abcd", "answer_9_1")
    B, h, P, S, d = 2, 4, 5, 12, 8  # P: <bos> and the 4 characters generated so far
    sizes = {"B": B, "h": h, "P": P, "S": S, "1": 1}
    options = {k: tuple(sizes[a] for a in v.split(", ")) for k, v in QUIZ_9_1.items()}
    with torch.random.fork_rng(devices=[]), torch.no_grad():  # the notebook's RNG untouched
        attention = nn.MultiheadAttention(d, h, batch_first=True)
        X, H = torch.randn(B, P, d), torch.randn(B, S, d)  # the decoder's prefix, the encoder's
        _, weights = attention(X, H, H, need_weights=True, average_attn_weights=False)
    if options[choice] != tuple(weights.shape):
        raise CheckError(
            tr(
                "answer_9_1 = {choice!r}, ({shape}): greedy decoding runs the decoder on the "
                "whole prefix, each prefix position is a query, and each source token a key"
            ).format(choice=choice, shape=QUIZ_9_1[choice].replace("P", "5").replace("S", "12"))
        )


WHY_NOT_9_2 = {
    "a": N_(
        "the whole source is known before decoding starts, so no target position can see too "
        "much of it; causality is about the decoder's own inputs"
    ),
    "b": N_(
        "the causal mask belongs to the decoder's self-attention; over the source, which is "
        "given in full, it would hide real source tokens from the early target positions"
    ),
    "d": N_(
        "the encoder's outputs at padded positions are vectors like any other (attention mixes "
        "the valid tokens into them); only enc_valid_lens keeps the decoder off them"
    ),
}


@check("quiz_9_2.key", hidden=True)
def quiz_9_2_key(answer, device):
    """Is that the mask the decoder's cross-attention needs?"""
    choice = expect_choice(answer(), "abcd", "answer_9_2")
    if choice != "c":
        raise CheckError(f"answer_9_2 = {choice!r}: {tr(WHY_NOT_9_2[choice])}")


# ----------------------------------------------------------------- the property classes
# Which group tests each class of every graded target (checks._contract.properties);
# tests/test_properties.py proves each with a known-wrong answer that breaks it.

properties(
    "DecoderBlock",
    float64=("DecoderBlock.dtypes",),
    gradient=("DecoderBlock.dtypes",),
    meta=("DecoderBlock.dtypes",),
    dropout=("DecoderBlock.dropout",),
    unchanged=("DecoderBlock.dtypes",),
)
