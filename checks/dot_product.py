"""Visible checks for the chapter "Scaled dot-product attention": cosine attention (4.4), the quiz."""

import torch

from checks._contract import module_tensors
from checks._core import check, softmax_list
from checks._errors import CheckError
from checks._expect import expect_choice, expect_close, expect_finite, expect_number
from checks._i18n import tr
from checks.scoring import attend, build, dropout_contract, module_contract


def zero_vectors_example(device):
    """Queries and keys with zero rows: a zero key that is valid, one that is padded, a zero query.

    Returns the inputs, valid_lens, and the expected weights for scale s = 2 (a cosine with a
    zero vector is 0), computed from the cosines of the nonzero pairs written out by hand.
    """
    queries = torch.tensor([[[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]], device=device)  # 2nd: zero
    keys = torch.tensor(
        [[[2.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, -3.0, 0.0], [0.0, 0.0, 0.0]]], device=device
    )  # key 1: zero and valid; key 3: zero and padded
    values = torch.arange(8.0, device=device).reshape(1, 4, 2)
    valid_lens = torch.tensor([3], device=device)
    s = 2.0
    expected = torch.tensor(
        [[softmax_list([s * 1, 0.0, s * 0]) + [0.0], softmax_list([0.0, 0.0, 0.0]) + [0.0]]],
        device=device,
    )  # (1, 2, 4)
    return queries, keys, values, valid_lens, expected


@check("CosineAttention")
def cosine_small_example(CosineAttention, device):
    """Is the score s·cos(q, k)? (q = (1, 0) against keys (3, 0), (0, 2), (-1, 0) with s = 2 scores 2, 0, -2)"""
    attention = build(CosineAttention, 0.0, scale=2.0, device=device)
    queries = torch.tensor([[[1.0, 0.0]]], device=device)
    keys = torch.tensor([[[3.0, 0.0], [0.0, 2.0], [-1.0, 0.0]]], device=device)
    values = torch.eye(3, device=device)[None]
    _, weights = attend(attention, queries, keys, values)
    expected = torch.tensor([[softmax_list([2.0, 0.0, -2.0])]], device=device)
    expect_close(weights, expected, "attention_weights", labels=("batch", "query"))


ZERO_GRADIENT_BOUND = 1e4  # the largest gradient a zero vector may get, for inputs of order 1


def expect_zero_vectors_safe(CosineAttention, device, *, dtype=torch.float32):
    """Zero query, zero valid key, zero padded key: right weights, no nan forward or backward,
    and a small gradient at the zero vectors (no division by a tiny ε)."""
    queries, keys, values, valid_lens, expected = (
        t.to(dtype) if t.is_floating_point() else t for t in zero_vectors_example(device)
    )
    attention = build(CosineAttention, 0.0, scale=2.0, device=device).to(dtype)
    what = tr("with a zero query (query 1), a zero valid key (key 1) and a zero padded key (key 3)")
    queries, keys, values = (t.clone().requires_grad_() for t in (queries, keys, values))
    named = module_tensors(attention, queries=queries, keys=keys, values=values)
    out, weights = attend(attention, queries, keys, values, valid_lens)
    expect_finite(weights, f"attention_weights {what}")
    expect_finite(out, tr("the output {what}").format(what=what))
    expect_close(
        weights,
        expected,
        tr("attention_weights {what}: a zero vector has cosine 0 with every vector").format(
            what=what
        ),
        labels=("batch", "query"),
    )
    for t in named.values():
        t.grad = None
    direction = torch.linspace(-1, 1, out.numel(), dtype=dtype, device=device).reshape(out.shape)
    (out * direction).sum().backward()
    for name, t in named.items():
        if t.grad is None:
            raise CheckError(
                tr("the forward {what}: no gradient reached {name}").format(what=what, name=name)
            )
        if not bool(torch.isfinite(t.grad).all()):
            raise CheckError(
                tr(
                    "the forward {what}: the gradient of {name} has nan or inf, although the "
                    "output is finite. 0/0 somewhere in the graph poisons the gradient even "
                    "where the forward masks or replaces it; divide by a length that cannot be "
                    "0."
                ).format(what=what, name=name)
            )
    for name, rows in (("queries", [1]), ("keys", [1, 3])):
        grad = named[name].grad.detach()[0, rows].abs()
        largest = float(grad.max())
        if largest > ZERO_GRADIENT_BOUND:
            row = rows[int(grad.amax(dim=-1).argmax())]
            raise CheckError(
                tr(
                    "the forward {what}: the gradient of {name} at row {row}, a zero vector, "
                    "is {largest:.3g}, above {ZERO_GRADIENT_BOUND:.0e} for inputs of order 1: "
                    "the gradient explodes at a zero vector. Dividing by max(‖x‖, ε) gives a "
                    "gradient of 1/ε there (10¹² for F.normalize's ε); divide only where the "
                    "length is not 0."
                ).format(
                    what=what,
                    name=name,
                    row=row,
                    largest=largest,
                    ZERO_GRADIENT_BOUND=ZERO_GRADIENT_BOUND,
                )
            )


@check("CosineAttention")
def cosine_zero_vectors(CosineAttention, device):
    """Does a zero key (valid or padded) or a zero query score 0, with no nan in the weights, output or gradients, and a small gradient at the zero vectors?"""
    expect_zero_vectors_safe(CosineAttention, device)


@check("CosineAttention")
def cosine_contract(CosineAttention, device):
    """float64 in and out, gradients to the scale and every input, inputs unchanged, no tensor made on the CPU?"""
    module_contract(
        lambda dev: build(CosineAttention, 0.0, scale=3.0, device=dev),
        device,
        seed=41,
        B=2,
        m=3,
        n=4,
        dq=5,
        dk=5,
    )


@check("CosineAttention")
def cosine_dropout_half(CosineAttention, device):
    """With dropout=0.5 in training, is a fraction ≈ 0.5 of the weights zeroed and the rest doubled, once?"""
    dropout_contract(
        lambda dev, p: build(CosineAttention, p, scale=3.0, device=dev), device, seed=42
    )


# ----------------------------------------------------------------- check your understanding


@check("quiz_4_1")
def quiz_4_1_form(answer, device):
    """Is answer_4_1 a number?"""
    value = expect_number(answer(), "answer_4_1")
    if value < 0:
        raise CheckError(
            tr("answer_4_1 is a standard deviation, which is never negative; got {value!r}").format(
                value=value
            )
        )


@check("quiz_4_2")
def quiz_4_2_form(answer, device):
    """Is answer_4_2 one of the letters "a" to "d"?"""
    expect_choice(answer(), "abcd", "answer_4_2")
