"""Visible checks for the chapter "Self-attention and positional encoding"."""

import math

import torch

from checks._contract import (
    expect_dropout_pattern,
    expect_gradients,
    float64_device,
    invoke,
    module_tensors,
    on_meta,
    seeded,
)
from checks._core import (
    CheckError,
    check,
    expect_close,
    expect_tensor,
    random_lengths,
    random_tensor,
    shape_str,
)
from checks.scoring import build, describe_lengths


def self_attend(module, X, valid_lens=None):
    """Call a self-attention module; check it returns (B, N, D_V) and keeps (B, N, N) weights."""
    what = f"the forward on X {shape_str(X.shape)}, valid_lens {describe_lengths(valid_lens)}"
    out = invoke(module, X, valid_lens, what=what, names=("X", "valid_lens"), under=type(module))
    B, N = X.shape[0], X.shape[1]
    shape = (B, N, module.W_v.out_features)
    expect_tensor(out, "the output", shape=shape, dtype=X.dtype, device=X.device)
    weights = getattr(module, "attention_weights", None)
    if weights is None:
        raise CheckError("forward must leave the weights in self.attention.attention_weights")
    expect_tensor(weights, "attention_weights", shape=(B, N, N), dtype=X.dtype, device=X.device)
    return out, weights


def self_attention_contract(make, device, *, seed, B, N, D, reference=None):
    """float64 in and out, gradients to W_q, W_k, W_v and X, nothing made on the CPU.

    Args:
        make: ``make(device)`` returns the module (eval mode, dropout 0) with input size D.
        reference: ``reference(module, X, valid_lens)`` gives float64 (weights, output).
    """
    dev64 = float64_device(device)
    X = random_tensor(B, N, D, seed=seed, device=device)
    lens = random_lengths(B, low=1, high=N, seed=seed, device=device)
    shapes = f"B={B}, N={N}, D_X={D}"
    out32, w32 = self_attend(make(device), X, lens)
    module64 = make(dev64).double()
    out64, w64 = self_attend(module64, X.to(dev64, torch.float64), lens.to(dev64))
    if reference is not None:
        ref_w, ref_out = (t.to(dev64) for t in reference(module64, X, lens))
        tol = dict(atol=1e-6, rtol=1e-5)
    else:
        ref_w, ref_out = (t.detach().to(dev64, torch.float64) for t in (w32, out32))
        tol = dict(atol=1e-4, rtol=1e-3)
    expect_close(w64, ref_w, f"float64 attention_weights ({shapes})", **tol)
    expect_close(out64, ref_out, f"the float64 output ({shapes})", **tol)
    module = make(device)
    X = X.clone()
    named = module_tensors(module, X=X)
    out, _ = self_attend(module, X, lens)
    expect_gradients(out, named, f"the forward ({shapes})", seed=seed)
    meta, Xm, lm = make("meta"), X.detach().to("meta"), lens.to("meta")
    on_meta(lambda: self_attend(meta, Xm, lm), f"the forward on the meta device ({shapes})")


def self_attention_dropout_contract(SelfAttention, device, *, seed, B, N, p, query_size=3):
    """Dropout(p) in training on the weights, once. X = I and W_v = I make the output the weights."""
    module = build(SelfAttention, N, query_size, N, p, seed=seed, device=device)
    with torch.no_grad():
        module.W_v.weight.copy_(torch.eye(N))
        if module.W_v.bias is not None:
            module.W_v.bias.zero_()
    X = torch.eye(N, device=device).expand(B, N, N).contiguous()
    lens = random_lengths(B, low=2, high=N, seed=seed, device=device)
    what = f"(p={p}, X = I, W_v = I so that the output is the weights)"
    out, weights = self_attend(module.eval(), X, lens)
    expect_close(out, weights, f"the output in eval mode {what}: dropout must be off")
    with seeded(seed):
        out, weights = self_attend(module.train(), X, lens)
    module.eval()
    expect_dropout_pattern(out, weights, p, f"the output in train mode {what}")


@check("SelfAttention")
def shapes_and_padding(SelfAttention, device):
    """Does X (2, 5, 6) give outputs (2, 5, 3), weights (2, 5, 5) with rows summing to 1 and none on padding?"""
    gen = torch.Generator().manual_seed(0)
    X = torch.randn(2, 5, 6, generator=gen).to(device)
    module = build(SelfAttention, 6, 4, 3, 0.0, device=device)
    _, weights = self_attend(module, X, torch.tensor([5, 2], device=device))
    expect_close(weights.sum(-1), torch.ones(2, 5, device=device), "row sums of the weights")
    expect_close(
        weights[1, :, 2:],
        torch.zeros(5, 3, device=device),
        "weights of padded keys",
        labels=("query",),
    )


@check("SelfAttention")
def zero_queries_average_the_values(SelfAttention, device):
    """With W_q = 0 every score is 0: is each output the mean of W_v(x_j) over the valid positions j?"""
    gen = torch.Generator().manual_seed(1)
    X = torch.randn(2, 4, 6, generator=gen).to(device)
    module = build(SelfAttention, 6, 4, 3, 0.0, device=device)
    with torch.no_grad():
        module.W_q.weight.zero_()
    out, _ = self_attend(module, X, torch.tensor([4, 3], device=device))
    values = X @ module.W_v.weight.detach().T  # (B, N, D_V)
    expected = torch.stack([values[0].mean(0), values[1, :3].mean(0)])[:, None].expand(2, 4, 3)
    expect_close(out, expected, "the output with W_q = 0", labels=("batch", "query"))


@check("SelfAttention")
def self_attention_properties(SelfAttention, device):
    """float64 in and out, gradients to W_q, W_k, W_v and X, X unchanged, no tensor made on the CPU?"""
    self_attention_contract(
        lambda dev: build(SelfAttention, 5, 3, 4, 0.0, seed=5, device=dev),
        device,
        seed=5,
        B=2,
        N=4,
        D=5,
    )


@check("SelfAttention")
def self_attention_dropout_half(SelfAttention, device):
    """With dropout=0.5 in training, is a fraction ≈ 0.5 of the weights zeroed and the rest doubled, once?"""
    self_attention_dropout_contract(SelfAttention, device, seed=6, B=6, N=6, p=0.5)


@check("positional_encoding")
def small_table(positional_encoding, device):
    """Is positional_encoding(3, 4) the table [sin(i), cos(i), sin(i/100), cos(i/100)] in float32?"""
    P = positional_encoding(3, 4)
    expected = torch.tensor(
        [
            [f(i / 10000 ** (2 * j / 4)) for j in range(2) for f in (math.sin, math.cos)]
            for i in range(3)
        ]
    )
    expect_tensor(P, "positional_encoding(3, 4)", shape=(3, 4), dtype=torch.float32)
    expect_close(P.cpu(), expected, "positional_encoding(3, 4)", labels=("position",))
