"""Visible checks for the chapter "Masking"."""

import functools

import torch

from checks._contract import (
    FLOAT64,
    expect_gradient_values,
    expect_gradients,
    float64_device,
    invoke,
    on_meta,
)
from checks._core import check, random_lengths, random_tensor, softmax_list
from checks._crash import calling
from checks._errors import CheckError
from checks._expect import (
    expect_choice,
    expect_close,
    expect_finite,
    expect_number,
    expect_tensor,
    shape_str,
)
from checks._i18n import tr
from checks._mutation import expect_unchanged

WEIGHTS_FOR = "weights for valid_lens {lens}"  # a label (tr: checks/_i18n.py)

# The worked example of the chapter: 2 sequences, 2 queries each, 4 keys.
WORKED_X = [
    [[1.0, 2.0, 3.0, 4.0], [2.0, 1.0, 0.0, -1.0]],
    [[0.0, 1.0, 2.0, 3.0], [3.0, 2.0, 1.0, 0.0]],
]


def masked_rows(scores, lengths):
    """Reference rows for a (batch, queries, keys) list: softmax over the first `length` keys."""
    out = []
    for batch_rows, batch_lens in zip(scores, lengths):
        rows = []
        for row, n_valid in zip(batch_rows, batch_lens):
            n_valid = max(0, min(int(n_valid), len(row)))
            head = softmax_list(row[:n_valid]) if n_valid else []
            rows.append(head + [0.0] * (len(row) - n_valid))
        out.append(rows)
    return out


@check("sequence_mask")
def textbook_example(sequence_mask, device):
    """Does sequence_mask keep the first valid_len entries of each row and zero the rest?"""
    X = torch.tensor([[1, 2, 3], [4, 5, 6]], device=device)
    with calling(tr("sequence_mask(X, [1, 2]) for X = [[1, 2, 3], [4, 5, 6]]"), sequence_mask):
        out = sequence_mask(X, torch.tensor([1, 2], device=device))
    expected = torch.tensor([[1, 0, 0], [4, 5, 0]], device=device)
    expect_close(out, expected, "sequence_mask(X, [1, 2])", labels=("row",))


@check("sequence_mask")
def fill_value_and_trailing_dims(sequence_mask, device):
    """Does it use `value` and mask whole positions of an (N, L, D) input?"""
    X = torch.ones(2, 3, 2, device=device)
    with calling("sequence_mask(ones(2, 3, 2), [2, 0], value=-1)", sequence_mask):
        out = sequence_mask(X, torch.tensor([2, 0], device=device), value=-1)
    expected = torch.tensor(
        [
            [[1.0, 1.0], [1.0, 1.0], [-1.0, -1.0]],
            [[-1.0, -1.0], [-1.0, -1.0], [-1.0, -1.0]],
        ],
        device=device,
    )
    expect_close(
        out,
        expected,
        "sequence_mask(ones(2, 3, 2), [2, 0], value=-1)",
        labels=("row", "position"),
    )


@check("sequence_mask")
def input_left_alone(sequence_mask, device):
    """Is the input X left unchanged?"""
    X = torch.arange(8.0, device=device).reshape(2, 4)
    before = X.clone()
    with calling("sequence_mask(arange(8.0).reshape(2, 4), [1, 3])", sequence_mask):
        sequence_mask(X, torch.tensor([1, 3], device=device))
    expect_unchanged(before, X, "X")


@check("masked_softmax")
def worked_example_1d(masked_softmax, device):
    """Does the worked example (valid_lens = [2, 3]) give the weights in the text?"""
    X = torch.tensor(WORKED_X, device=device)
    out = masked_softmax(X, torch.tensor([2, 3], device=device))
    expected = torch.tensor(masked_rows(WORKED_X, [[2, 2], [3, 3]]), device=device)
    expect_close(out, expected, tr(WEIGHTS_FOR).format(lens=[2, 3]), labels=("batch", "query"))


@check("masked_softmax")
def worked_example_2d(masked_softmax, device):
    """Does a 2-D valid_lens give every query its own length?"""
    X = torch.tensor(WORKED_X, device=device)
    lens = [[1, 3], [2, 4]]
    out = masked_softmax(X, torch.tensor(lens, device=device))
    expected = torch.tensor(masked_rows(WORKED_X, lens), device=device)
    expect_close(out, expected, tr(WEIGHTS_FOR).format(lens=lens), labels=("batch", "query"))


@check("masked_softmax")
def no_mask(masked_softmax, device):
    """Does valid_lens=None give a plain softmax over the last axis?"""
    X = torch.tensor(WORKED_X, device=device)
    out = masked_softmax(X, None)
    expect_close(
        out, torch.softmax(X, dim=-1), tr(WEIGHTS_FOR).format(lens=None), labels=("batch", "query")
    )


@check("masked_softmax")
def empty_rows(masked_softmax, device):
    """Does a query with no valid key get all-zero weights (not NaN, not uniform)?"""
    X = torch.tensor(WORKED_X, device=device)
    out = masked_softmax(X, torch.tensor([0, 2], device=device))
    name = tr(WEIGHTS_FOR).format(lens=[0, 2])
    expect_tensor(out, name, shape=(2, 2, 4), dtype=torch.float32, device=device)
    expected = torch.tensor(masked_rows(WORKED_X, [[0, 0], [2, 2]]), device=device)
    expect_close(out, expected, name, labels=("batch", "query"))


def masked(masked_softmax, X, valid_lens):
    """masked_softmax(X, valid_lens), inputs unchanged, output of X's shape, dtype and device."""
    lens = "None" if valid_lens is None else f"valid_lens {shape_str(valid_lens.shape)}"
    what = f"masked_softmax(X {shape_str(X.shape)} {X.dtype}, {lens})"
    out = invoke(masked_softmax, X, valid_lens, what=what, names=("X", "valid_lens"))
    expect_tensor(out, what, shape=X.shape, dtype=X.dtype, device=X.device)
    return out


def masked_softmax_contract(masked_softmax, device, *, seed, B, m, n, reference):
    """Every dtype kept and right, gradients to X (zero where masked), nothing made on the CPU.

    Args:
        reference: ``reference(X, valid_lens)`` gives the float64 weights on the CPU.
    """
    X = random_tensor(B, m, n, seed=seed, device=device, scale=2.0)
    lens = random_lengths(B, m, low=0, high=n, seed=seed, device=device)
    lens[0, 0] = 0  # a row with no valid key
    lens[-1, -1] = (
        n + 2
    )  # a length beyond the keys: masks nothing (and must not be clamped in place)
    ref = reference(X, lens)
    dev64 = float64_device(device)
    for dtype, dev, tol in (
        (torch.float64, dev64, FLOAT64),
        (torch.float16, device, dict(atol=2e-3, rtol=2e-3)),
        (torch.bfloat16, device, dict(atol=2e-2, rtol=2e-2)),
    ):
        out = masked(masked_softmax, X.to(dev, dtype), lens.to(dev))
        name = tr("weights for {dtype} input").format(dtype=dtype)
        expect_finite(out, name)
        expect_close(out, ref.to(dev, dtype), name, labels=("batch", "query"), **tol)
    leaf = X.clone().requires_grad_()
    weights = masked(masked_softmax, leaf, lens)
    expect_gradients(weights, {"X": leaf}, f"masked_softmax (B={B}, m={m}, n={n})", seed=seed)
    expect_gradient_values(
        lambda X: masked(masked_softmax, X, lens.to(dev64)),
        {"X": X.to(dev64, torch.float64)},
        tr("masked_softmax in float64 (B={B}, m={m}, n={n})").format(B=B, m=m, n=n),
        seed=seed,
    )
    keep = torch.arange(n, device=device) < lens[..., None]
    leaked = (leaf.grad.abs() * ~keep).amax()
    if leaked.item() != 0:
        raise CheckError(
            tr(
                "masked scores got a gradient as large as {largest:.3g}: they change nothing "
                "in the output, so their gradient must be exactly 0"
            ).format(largest=leaked.item())
        )
    Xm, lm = X.to("meta"), lens.to("meta")
    on_meta(
        functools.partial(masked, masked_softmax, Xm, lm),
        tr("{name} on meta").format(name="masked_softmax"),
    )


def worked_reference(X, lens):
    return torch.tensor(
        masked_rows(X.double().cpu().tolist(), lens.cpu().tolist()), dtype=torch.float64
    )


@check("masked_softmax")
def masked_softmax_properties(masked_softmax, device):
    """float64, float16 and bfloat16 kept and right, X and valid_lens unchanged, gradients zero where masked, no tensor made on the CPU?"""
    masked_softmax_contract(
        masked_softmax, device, seed=5, B=2, m=3, n=4, reference=worked_reference
    )


def call_sequence_mask(sequence_mask, X, valid_len, value=0):
    """sequence_mask(X, valid_len, value), inputs unchanged, output of X's shape, dtype, device."""
    what = f"sequence_mask(X {shape_str(X.shape)} {X.dtype}, valid_len, value={value})"
    out = invoke(sequence_mask, X, valid_len, what=what, names=("X", "valid_len"), value=value)
    expect_tensor(out, what, shape=X.shape, dtype=X.dtype, device=X.device)
    return out


def sequence_mask_contract(sequence_mask, device, *, seed, shape):
    """float64 kept and exact, gradients the derivative, inputs unchanged, nothing made on the CPU."""
    X = random_tensor(*shape, seed=seed, device=device)
    lens = random_lengths(shape[0], low=0, high=shape[1] + 1, seed=seed, device=device)
    lens[-1] = shape[1] + 2  # beyond L: nothing masked (and not clamped in place)
    call_sequence_mask(sequence_mask, X, lens, value=-2.5)
    dev64 = float64_device(device)
    X64, lens64 = X.to(dev64, torch.float64), lens.to(dev64)
    out = call_sequence_mask(sequence_mask, X64, lens64, -2.5)
    # Selection only: every entry is X's own float64 value or the fill value, exactly.
    keep = torch.arange(shape[1], device=dev64)[None, :] < lens64[:, None]  # (N, L)
    keep = keep.reshape(keep.shape + (1,) * (len(shape) - 2))
    expected = torch.where(keep, X64, torch.tensor(-2.5, dtype=torch.float64, device=dev64))
    expect_close(
        out,
        expected,
        tr("sequence_mask of a float64 X {shape}").format(shape=shape),
        atol=0,
        rtol=0,
    )
    leaf = X.clone().requires_grad_()
    out = call_sequence_mask(sequence_mask, leaf, lens)
    expect_gradients(
        out, {"X": leaf}, tr("sequence_mask (X of shape {shape})").format(shape=shape), seed=seed
    )
    expect_gradient_values(
        lambda X: call_sequence_mask(sequence_mask, X, lens64, -2.5),
        {"X": X64},
        tr("sequence_mask in float64 (X of shape {shape})").format(shape=shape),
        seed=seed,
    )
    Xm, lm = X.to("meta"), lens.to("meta")
    on_meta(
        functools.partial(call_sequence_mask, sequence_mask, Xm, lm),
        tr("{name} on meta").format(name="sequence_mask"),
    )


@check("sequence_mask")
def sequence_mask_properties(sequence_mask, device):
    """float64 kept, gradients reach X, inputs unchanged, no tensor made on the CPU?"""
    sequence_mask_contract(sequence_mask, device, seed=3, shape=(3, 4, 2))


# ---------------------------------------------------------------- check your understanding
# The form only: checks/_quiz.py then says right or wrong (self-study) or "recorded"
# (graded); the hidden groups quiz_2_*.key grade the answers.


@check("quiz_2_1")
def quiz_2_1_form(answer, device):
    """Is answer_2_1 one of the letters "a" to "d"?"""
    expect_choice(answer(), "abcd", "answer_2_1")


@check("quiz_2_2")
def quiz_2_2_form(answer, device):
    """Is answer_2_2 a number?"""
    expect_number(answer(), "answer_2_2")
