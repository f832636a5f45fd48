"""Visible checks for the scoring-function chapters: additive, scaled dot-product, bilinear."""

import torch

from checks._core import (
    CheckError,
    calling,
    check,
    expect_close,
    expect_tensor,
    shape_str,
    softmax_list,
)


def build(cls, *args, seed=0, device="cpu", **kwargs):
    """Construct an attention module with reproducible weights, without touching the global RNG."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        module = cls(*args, **kwargs)
    return module.to(device).eval()


def describe_lengths(valid_lens) -> str:
    """valid_lens as a list if it is short, else by its shape."""
    if valid_lens is None:
        return "None"
    if valid_lens.numel() <= 8:
        return str(valid_lens.tolist())
    return f"of shape {shape_str(valid_lens.shape)}"


def attend(module, queries, keys, values, valid_lens=None):
    """Call the module; check it returns (B, m, v) and keeps (B, m, n) weights.

    If the forward raises, the message names the shapes it was called with; if it
    stored attention_weights of the wrong shape before it raised, it says that first.
    """
    B, m, n, v = queries.shape[0], queries.shape[1], keys.shape[1], values.shape[-1]
    what = (
        f"the forward on queries {shape_str(queries.shape)}, keys {shape_str(keys.shape)}, "
        f"values {shape_str(values.shape)}, valid_lens {describe_lengths(valid_lens)}"
    )
    before = getattr(module, "attention_weights", None)
    try:
        with calling(what, type(module)):
            out = module(queries, keys, values, valid_lens)
    except CheckError as crash:
        weights = getattr(module, "attention_weights", None)
        if (
            weights is not before
            and isinstance(weights, torch.Tensor)
            and tuple(weights.shape) != (B, m, n)
        ):
            raise CheckError(
                f"attention_weights has shape {shape_str(weights.shape)}, expected "
                f"{shape_str((B, m, n))} = (B, m, n), a row per query and a column per key; "
                f"then {crash}"
            ) from crash
        raise
    expect_tensor(out, "the output", shape=(B, m, v), device=queries.device)
    weights = getattr(module, "attention_weights", None)
    if weights is None:
        raise CheckError("forward must store the weights in self.attention_weights")
    expect_tensor(weights, "attention_weights", shape=(B, m, n), device=queries.device)
    return out, weights


def identical_keys_example(device):
    """d2l's toy example: every key is the same, so any scoring function gives uniform weights."""
    gen = torch.Generator().manual_seed(0)
    queries = torch.randn(2, 1, 20, generator=gen).to(device)
    keys = torch.ones(2, 10, 2, device=device)
    values = torch.arange(40, dtype=torch.float32, device=device).reshape(1, 10, 4).repeat(2, 1, 1)
    valid_lens = torch.tensor([2, 6], device=device)
    expected = torch.stack([values[0, :2].mean(0), values[1, :6].mean(0)])[:, None, :]
    return queries, keys, values, valid_lens, expected


@check("AdditiveAttention")
def additive_identical_keys(AdditiveAttention, device):
    """With identical keys, is the output the mean of the valid values (d2l's toy example)?"""
    queries, keys, values, valid_lens, expected = identical_keys_example(device)
    attention = build(AdditiveAttention, 2, 20, 8, 0.1, device=device)
    out, weights = attend(attention, queries, keys, values, valid_lens)
    expect_close(out, expected, "the output", labels=("batch", "query"))
    expect_close(
        weights[:, 0, 6:],
        torch.zeros(2, 4, device=device),
        "weights of padded keys",
        labels=("batch",),
    )


@check("AdditiveAttention")
def additive_different_sizes(AdditiveAttention, device):
    """Do queries of size 3 and keys of size 5 give (B, m, n) weights whose rows sum to 1?"""
    gen = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(*s, generator=gen).to(device) for s in [(2, 4, 3), (2, 6, 5), (2, 6, 7)])
    attention = build(AdditiveAttention, 5, 3, 16, 0.0, device=device)
    _, weights = attend(attention, q, k, v, torch.tensor([6, 3], device=device))
    expect_close(
        weights.sum(-1),
        torch.ones(2, 4, device=device),
        "row sums of the weights",
        labels=("batch",),
    )


@check("DotProductAttention")
def dot_identical_keys(DotProductAttention, device):
    """With identical keys, is the output the mean of the valid values (d2l's toy example)?"""
    _, keys, values, valid_lens, expected = identical_keys_example(device)
    queries = torch.randn(2, 1, 2, generator=torch.Generator().manual_seed(2)).to(device)
    out, _ = attend(
        build(DotProductAttention, 0.5, device=device), queries, keys, values, valid_lens
    )
    expect_close(out, expected, "the output", labels=("batch", "query"))


@check("DotProductAttention")
def dot_scaled_by_sqrt_d(DotProductAttention, device):
    """Is the score q·k/√d? (q = (1, 0, 0, 0) against k = (2, 0, 0, 0) and 0 scores 2/√4 = 1 and 0)"""
    queries = torch.tensor([[[1.0, 0.0, 0.0, 0.0]]], device=device)
    keys = torch.tensor([[[2.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]]], device=device)
    values = torch.tensor([[[1.0], [0.0]]], device=device)
    _, weights = attend(build(DotProductAttention, 0.0, device=device), queries, keys, values)
    expected = torch.tensor([[softmax_list([1.0, 0.0])]], device=device)
    expect_close(weights, expected, "attention_weights", labels=("batch", "query"))


@check("BilinearAttention")
def bilinear_shapes(BilinearAttention, device):
    """Do queries of size 3 and keys of size 5 work, with W of shape (3, 5) and rows summing to 1?"""
    gen = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(*s, generator=gen).to(device) for s in [(2, 4, 3), (2, 6, 5), (2, 6, 7)])
    attention = build(BilinearAttention, 3, 5, 0.0, device=device)
    expect_tensor(attention.W, "W", shape=(3, 5))
    _, weights = attend(attention, q, k, v, torch.tensor([6, 2], device=device))
    expect_close(
        weights.sum(-1),
        torch.ones(2, 4, device=device),
        "row sums of the weights",
        labels=("batch",),
    )
    expect_close(
        weights[1, :, 2:],
        torch.zeros(4, 4, device=device),
        "weights of padded keys",
        labels=("query",),
    )


@check("BilinearAttention")
def bilinear_small_example(BilinearAttention, device):
    """Is the score qᵀ W k? (q = (1, 2), W = [[1, 0, 1], [0, 1, 0]], keys e₁, e₂, e₃ score 1, 2, 1)"""
    attention = build(BilinearAttention, 2, 3, 0.0, device=device)
    with torch.no_grad():
        attention.W.copy_(torch.tensor([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]]))
    queries = torch.tensor([[[1.0, 2.0]]], device=device)
    keys = torch.eye(3, device=device)[None]
    _, weights = attend(attention, queries, keys, keys)
    expect_close(
        weights,
        torch.tensor([[softmax_list([1.0, 2.0, 1.0])]], device=device),
        "attention_weights",
        labels=("batch", "query"),
    )


@check("sum_scores")
def sum_scores_small_example(sum_scores, device):
    """Is score(q, k) = wᵀq + wᵀk, with shape (B, m, n)?"""
    queries = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]], device=device)
    keys = torch.tensor([[[1.0, 1.0], [2.0, 0.0], [0.0, 3.0]]], device=device)
    w = torch.tensor([1.0, 2.0], device=device)
    expected = torch.tensor([[[1 + 3.0, 1 + 2, 1 + 6], [2 + 3.0, 2 + 2, 2 + 6]]], device=device)
    expect_close(sum_scores(queries, keys, w), expected, "sum_scores", labels=("batch", "query"))


@check("vector_sum_answer")
def answered(answer, device):
    """Is your answer True or False?"""
    value = answer()
    if not isinstance(value, bool):
        raise CheckError(f"set same_weights_for_every_query to True or False, not {value!r}")


@check("distance_scores")
def distance_small_example(distance_scores, device):
    """Is score(q, k) = -‖q - k‖² / 2, with shape (B, m, n)?"""
    queries = torch.tensor([[[0.0, 0.0], [1.0, 1.0]]], device=device)
    keys = torch.tensor([[[0.0, 0.0], [3.0, 4.0], [1.0, 0.0]]], device=device)
    expected = torch.tensor([[[0.0, -12.5, -0.5], [-1.0, -6.5, -0.5]]], device=device)
    expect_close(
        distance_scores(queries, keys), expected, "distance_scores", labels=("batch", "query")
    )
