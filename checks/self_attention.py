"""Visible checks for the chapter "Self-attention and positional encoding"."""

import copy
import math

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
from checks._core import check, random_lengths, random_tensor, softmax_list
from checks._errors import CheckError
from checks._expect import expect_choice, expect_close, expect_number, expect_tensor, shape_str
from checks._i18n import tr
from checks.scoring import build, describe_lengths


def cpu_twin(module):
    """A copy of ``module`` on the CPU, or None where it cannot be copied.

    Tensors kept from an earlier forward (``attention_weights``) are not graph leaves, which
    deepcopy refuses: they are shared, detached, instead of copied.
    """
    memo = {
        id(t): t.detach()
        for m in module.modules()
        for t in vars(m).values()
        if isinstance(t, torch.Tensor) and not t.is_leaf
    }
    try:
        return copy.deepcopy(module, memo).cpu()
    except Exception:  # a module that cannot be copied is run on the accelerator only
        return None


def self_attend(module, X, valid_lens=None):
    """Call a self-attention module; check it returns (B, N, D_V) and keeps (B, N, N) weights.

    On an accelerator the forward is rehearsed first on a CPU copy of the module: an index
    past the end of a tensor (``relative_bias[j - i + K]`` unclipped) is an IndexError on the
    CPU, but a device-side assert on CUDA, after which the process can no longer use the GPU.
    """
    what = tr("the forward on X {X_shape}, valid_lens {lens}").format(
        X_shape=shape_str(X.shape), lens=describe_lengths(valid_lens)
    )
    twin = cpu_twin(module) if X.device.type not in ("cpu", "meta") else None
    if twin is not None:
        lens = None if valid_lens is None else valid_lens.cpu()
        names = ("X", "valid_lens")
        invoke(twin, X.detach().cpu(), lens, what=what, names=names, under=type(module))
    out = invoke(module, X, valid_lens, what=what, names=("X", "valid_lens"), under=type(module))
    B, N = X.shape[0], X.shape[1]
    shape = (B, N, module.W_v.out_features)
    expect_tensor(out, tr("the output"), shape=shape, dtype=X.dtype, device=X.device)
    weights = getattr(module, "attention_weights", None)
    if weights is None:
        raise CheckError(tr("forward must leave the weights in self.attention_weights"))
    expect_tensor(weights, "attention_weights", shape=(B, N, N), dtype=X.dtype, device=X.device)
    return out, weights


def relative_module(cls, D_X, D_Q, D_V, K, dropout=0.0, *, bias=False, seed=0, device="cpu"):
    """A RelativeSelfAttention with reproducible weights and a random relative_bias (2K + 1,)."""
    module = build(cls, D_X, D_Q, D_V, K, dropout, bias=bias, seed=seed, device=device)
    table = getattr(module, "relative_bias", None)
    if not isinstance(table, torch.Tensor) or tuple(table.shape) != (2 * K + 1,):
        got = shape_str(table.shape) if isinstance(table, torch.Tensor) else type(table).__name__
        raise CheckError(
            tr(
                "keep the given __init__: with max_distance={K}, relative_bias must be a "
                "tensor of shape ({size},), got {got}"
            ).format(K=K, size=2 * K + 1, got=got)
        )
    with torch.no_grad():
        table.copy_(random_tensor(2 * K + 1, seed=seed + 100, device=table.device))
    return module


def clipped(j, i, K):
    """The index into relative_bias of key j for query i, by hand."""
    return K + max(-K, min(K, j - i))


def self_attention_contract(make, device, *, seed, B, N, D, reference=None):
    """float64 in and out, gradients to every parameter and X, nothing made on the CPU.

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
        tol = FLOAT64
    else:
        ref_w, ref_out = (t.detach().to(dev64, torch.float64) for t in (w32, out32))
        tol = dict(atol=1e-4, rtol=1e-3)
    expect_close(
        w64, ref_w, tr("float64 attention_weights ({shapes})").format(shapes=shapes), **tol
    )
    expect_close(out64, ref_out, tr("the float64 output ({shapes})").format(shapes=shapes), **tol)
    module = make(device)
    X = X.clone()
    named = module_tensors(module, X=X)
    out, _ = self_attend(module, X, lens)
    expect_gradients(out, named, tr("the forward ({shapes})").format(shapes=shapes), seed=seed)
    expect_gradient_values(
        lambda X: self_attend(module64, X, lens.to(dev64))[0],
        {"X": X.detach().to(dev64, torch.float64)},
        tr("the forward in float64 ({shapes})").format(shapes=shapes),
        seed=seed,
    )
    meta, Xm, lm = make("meta"), X.detach().to("meta"), lens.to("meta")
    on_meta(
        lambda: self_attend(meta, Xm, lm),
        tr("the forward on the meta device ({shapes})").format(shapes=shapes),
    )


def self_attention_dropout_contract(make, device, *, seed, B, N, p):
    """Dropout(p) in training on the weights, once. X = I and W_v = I make the output the weights.

    Args:
        make: ``make(N, p)`` returns the module (eval mode) with input and value size N.
    """
    module = make(N, p)
    with torch.no_grad():
        module.W_v.weight.copy_(torch.eye(N))
        if module.W_v.bias is not None:
            module.W_v.bias.zero_()
    X = torch.eye(N, device=device).expand(B, N, N).contiguous()
    lens = random_lengths(B, low=2, high=N, seed=seed, device=device)
    what = tr("(p={p}, X = I, W_v = I so that the output is the weights)").format(p=p)
    out, weights = self_attend(module.eval(), X, lens)
    expect_close(
        out, weights, tr("the output in eval mode {what}: dropout must be off").format(what=what)
    )
    with seeded(seed):
        out, weights = self_attend(module.train(), X, lens)
    module.eval()
    expect_dropout_pattern(out, weights, p, tr("the output in train mode {what}").format(what=what))


@check("RelativeSelfAttention")
def shapes_and_padding(RelativeSelfAttention, device):
    """Does X (2, 5, 6) with max_distance=1 give outputs (2, 5, 3), weights (2, 5, 5) with rows summing to 1 and none on padding?"""
    gen = torch.Generator().manual_seed(0)
    X = torch.randn(2, 5, 6, generator=gen).to(device)
    module = relative_module(RelativeSelfAttention, 6, 4, 3, 1, device=device)
    _, weights = self_attend(module, X, torch.tensor([5, 2], device=device))
    expect_close(weights.sum(-1), torch.ones(2, 5, device=device), tr("row sums of the weights"))
    expect_close(
        weights[1, :, 2:],
        torch.zeros(5, 3, device=device),
        tr("weights of padded keys"),
        labels=("query",),
    )


@check("RelativeSelfAttention")
def bias_alone_with_zero_queries(RelativeSelfAttention, device):
    """With W_q = 0 every q·k is 0: for N=4, max_distance=1 and relative_bias [1, 0, 2], is row i of the weights the softmax over j of the bias of clip(j - i, -1, 1)?"""
    gen = torch.Generator().manual_seed(1)
    N, K, table = 4, 1, [1.0, 0.0, 2.0]
    X = torch.randn(1, N, 6, generator=gen).to(device)
    module = relative_module(RelativeSelfAttention, 6, 4, 3, K, device=device)
    with torch.no_grad():
        module.W_q.weight.zero_()
        module.relative_bias.copy_(torch.tensor(table))
    _, weights = self_attend(module, X)
    expected = [[softmax_list([table[clipped(j, i, K)] for j in range(N)]) for i in range(N)]]
    expect_close(
        weights,
        torch.tensor(expected, device=device),
        tr(
            "the weights with W_q = 0 and relative_bias [1, 0, 2] (entry 0: keys before the "
            "query, 1: the query itself, 2: keys after it)"
        ),
        labels=("batch", "query"),
    )


@check("RelativeSelfAttention")
def relative_self_attention_properties(RelativeSelfAttention, device):
    """float64 in and out, gradients to relative_bias, W_q, W_k, W_v and X, X unchanged, no tensor made on the CPU?"""
    self_attention_contract(
        lambda dev: relative_module(RelativeSelfAttention, 5, 3, 4, 2, seed=5, device=dev),
        device,
        seed=5,
        B=2,
        N=5,
        D=5,
    )


@check("RelativeSelfAttention")
def relative_self_attention_dropout_half(RelativeSelfAttention, device):
    """With dropout=0.5 in training, is a fraction ≈ 0.5 of the weights zeroed and the rest doubled, once?"""
    self_attention_dropout_contract(
        lambda N, p: relative_module(RelativeSelfAttention, N, 3, N, 2, p, seed=6, device=device),
        device,
        seed=6,
        B=6,
        N=6,
        p=0.5,
    )


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


# ----------------------------------------------------------------- check your understanding
# The form only: checks/_quiz.py then says right or wrong (self-study) or "recorded"
# (graded); the hidden groups quiz_6_*.key grade the answers.


@check("quiz_6_1")
def quiz_6_1_form(answer, device):
    """Is answer_6_1 one of the letters "a" to "d"?"""
    expect_choice(answer(), "abcd", "answer_6_1")


@check("quiz_6_2")
def quiz_6_2_form(answer, device):
    """Is answer_6_2 a number?"""
    expect_number(answer(), "answer_6_2")


@check("quiz_6_3")
def quiz_6_3_form(answer, device):
    """Is answer_6_3 one of the letters "a" to "d"?"""
    expect_choice(answer(), "abcd", "answer_6_3")
