"""Hidden checks for "Masking": explicit loops, every dtype, zero lengths, gradients, no mutation."""

import torch

from checks._contract import float64_device, properties
from checks._core import check, random_lengths, random_tensor
from checks._crash import calling
from checks._errors import CheckError, CheckInternalError
from checks._expect import (
    expect_attached,
    expect_choice,
    expect_close,
    expect_finite,
    expect_number,
    expect_tensor,
)
from checks._i18n import tr
from checks._mutation import expect_unchanged
from checks.masking import (
    masked_rows,
    masked_softmax_contract,
    sequence_mask_contract,
)

SHAPES = [(1, 1, 1), (2, 3, 5), (4, 1, 7), (3, 6, 2), (5, 4, 9)]


def loop_sequence_mask(X, valid_len, value):
    """sequence_mask one position at a time."""
    out = X.detach().cpu().clone()
    for i, n_valid in enumerate(valid_len.tolist()):
        for j in range(X.shape[1]):
            if j >= n_valid:
                out[i, j] = value
    return out.to(X.device)


def per_query_lengths(valid_lens, m):
    """Expand (B,) or (B, m) lengths into a list of per-query lists, by hand."""
    lens = valid_lens.tolist()
    if valid_lens.dim() == 1:
        return [[n] * m for n in lens]
    return lens


def loop_masked_softmax(X, valid_lens):
    scores = X.detach().double().cpu().tolist()
    lens = per_query_lengths(valid_lens.cpu(), X.shape[1])
    return torch.tensor(masked_rows(scores, lens), dtype=torch.float64)


@check("sequence_mask.values", hidden=True)
def sequence_mask_matches_a_loop(sequence_mask, device):
    """Do random (N, L) and (N, L, D) inputs, lengths 0 and > L, and fill values match a loop?"""
    # (4, 4) first: with N = L a mask built the wrong way round still broadcasts, to wrong values.
    for seed, shape in enumerate([(1, 1), (4, 4), (3, 5), (4, 2, 3), (2, 6, 1, 2)]):
        X = random_tensor(*shape, seed=seed, device=device)
        lens = random_lengths(shape[0], high=shape[1] + 1, seed=seed, device=device)
        for value in (0, -1e6, 7.5):
            what = tr("sequence_mask on shape {shape}, lengths {lens}, value={value}").format(
                shape=tuple(shape), lens=lens.tolist(), value=value
            )
            with calling(what, sequence_mask):
                out = sequence_mask(X, lens, value=value)
            ref = loop_sequence_mask(X, lens, value)
            expect_close(out, ref, what, labels=("row", "position"))
    X = torch.arange(12, device=device).reshape(3, 4)
    out = sequence_mask(X, torch.tensor([4, 0, 2], device=device))
    expect_close(
        out,
        loop_sequence_mask(X, torch.tensor([4, 0, 2]), 0),
        tr("sequence_mask on an integer tensor"),
        labels=("row",),
    )


@check("sequence_mask.safety", hidden=True)
def sequence_mask_keeps_its_input(sequence_mask, device):
    """Is the input never modified, even a leaf tensor that requires grad, in every float dtype?"""
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        X = random_tensor(3, 4, seed=5, device=device, dtype=dtype)
        before = X.clone()
        out = sequence_mask(X, torch.tensor([1, 4, 0], device=device), value=-1)
        expect_unchanged(before, X, f"X ({dtype})")
        expect_tensor(
            out,
            tr("output for {dtype}").format(dtype=dtype),
            shape=(3, 4),
            dtype=dtype,
            device=device,
        )
    leaf = random_tensor(2, 3, seed=6, device=device).requires_grad_()
    out = sequence_mask(leaf, torch.tensor([1, 2], device=device))
    expect_attached(out, tr("sequence_mask(X) for an X that requires grad"))
    out.sum().backward()
    expect_close(
        leaf.grad,
        torch.tensor([[1.0, 0, 0], [1, 1, 0]], device=device),
        tr("gradient of sum(sequence_mask(X))"),
        labels=("row",),
    )


@check("masked_softmax.values", hidden=True)
def masked_softmax_matches_a_loop(masked_softmax, device):
    """Do random shapes with 1-D and 2-D valid_lens match an explicit loop?"""
    for seed, (b, m, n) in enumerate(SHAPES):
        X = random_tensor(b, m, n, seed=seed, device=device, scale=3.0)
        for lens in (
            random_lengths(b, low=1, high=n, seed=seed, device=device),
            random_lengths(b, m, low=1, high=n, seed=seed + 100, device=device),
        ):
            out = masked_softmax(X, lens)
            kind = "1-D" if lens.dim() == 1 else "2-D"
            expect_close(
                out,
                loop_masked_softmax(X, lens).float().to(device),
                tr("weights for X of shape {shape} with {kind} valid_lens {lens}").format(
                    shape=(b, m, n), kind=kind, lens=lens.tolist()
                ),
                labels=("batch", "query"),
            )


@check("masked_softmax.edge_cases", hidden=True)
def masked_softmax_edge_cases(masked_softmax, device):
    """Do zero lengths give zero rows, and lengths beyond the keys give a plain softmax?"""
    X = random_tensor(3, 4, 5, seed=21, device=device, scale=3.0)
    for lens in (
        torch.tensor([0, 5, 2], device=device),
        torch.tensor([[0, 1, 0, 5], [2, 0, 3, 0], [0, 0, 0, 0]], device=device),
        torch.tensor([9, 6, 5], device=device),
    ):
        out = masked_softmax(X, lens)
        expect_finite(out, tr("weights with valid_lens {lens}").format(lens=lens.tolist()))
        expect_close(
            out,
            loop_masked_softmax(X, lens).float().to(device),
            tr("weights with valid_lens {lens}").format(lens=lens.tolist()),
            labels=("batch", "query"),
        )


@check("masked_softmax.dtypes", hidden=True)
def masked_softmax_every_dtype(masked_softmax, device):
    """Does it work in float16, bfloat16 and float64, keeping the dtype and zero rows?"""
    X32 = random_tensor(2, 3, 6, seed=31, device=device, scale=2.0)
    lens = torch.tensor([[0, 3, 6], [1, 0, 4]], device=device)
    ref = loop_masked_softmax(X32, lens)
    for dtype, tol in (
        (torch.float16, 2e-3),
        (torch.bfloat16, 2e-2),
        (torch.float64, 1e-6),
    ):
        dev = float64_device(device) if dtype == torch.float64 else device
        X = X32.to(dev, dtype)
        out = masked_softmax(X, lens.to(dev))
        expect_tensor(
            out,
            tr("weights for {dtype} input").format(dtype=dtype),
            shape=(2, 3, 6),
            dtype=dtype,
            device=dev,
        )
        expect_finite(out, tr("weights for {dtype} input").format(dtype=dtype))
        expect_close(
            out,
            ref.to(device=dev, dtype=dtype),
            tr("weights for {dtype} input").format(dtype=dtype),
            atol=tol,
            rtol=tol,
            labels=("batch", "query"),
        )


@check("masked_softmax.safety", hidden=True)
def masked_softmax_safety(masked_softmax, device):
    """Is the input left unchanged, and are gradients finite and zero where masked?"""
    X = random_tensor(2, 3, 4, seed=41, device=device)
    before = X.clone()
    lens = torch.tensor([0, 2], device=device)
    lens_before = lens.clone()
    masked_softmax(X, lens)
    expect_unchanged(before, X, "X")
    expect_unchanged(lens_before, lens, "valid_lens")
    leaf = X.clone().requires_grad_()
    weights = masked_softmax(leaf, lens)
    expect_tensor(weights, "weights", shape=(2, 3, 4), device=device)
    expect_attached(weights, tr("masked_softmax(X, valid_lens) for an X that requires grad"))
    (weights * random_tensor(2, 3, 4, seed=42, device=device)).sum().backward()
    if leaf.grad is None:
        raise CheckError(tr("no gradient reached X: is the output detached from the input?"))
    expect_finite(leaf.grad, tr("gradient with respect to X"))
    masked = leaf.grad[:, :, 2:].abs().amax()
    if masked.item() != 0 or leaf.grad[0].abs().amax().item() != 0:
        raise CheckError(
            tr("masked scores must get zero gradient; they change nothing in the output")
        )


@check("sequence_mask.safety", hidden=True)
def sequence_mask_properties_hidden(sequence_mask, device):
    """float64 kept, gradients reach X, inputs unchanged, no tensor made on the CPU?"""
    sequence_mask_contract(sequence_mask, device, seed=13, shape=(4, 6, 3))


@check("masked_softmax.safety", hidden=True)
def masked_softmax_properties_hidden(masked_softmax, device):
    """float64, float16 and bfloat16 kept and right, inputs unchanged, gradients zero where masked, no tensor made on the CPU?"""
    masked_softmax_contract(
        masked_softmax, device, seed=15, B=3, m=4, n=6, reference=loop_masked_softmax
    )


# ---------------------------------------------------------------- check your understanding


@check("quiz_2_1.key", hidden=True)
def quiz_2_1_key(answer, device):
    """Does answer_2_1 name the rows where a -1e6 fill leaves a masked key a non-zero weight?"""
    choice = expect_choice(answer(), "abcd", "answer_2_1")
    # The key, computed: fill -1e6 by torch.where, softmax in float32, see which rows leak.
    gen = torch.Generator().manual_seed(5)
    lengths = torch.arange(6).repeat_interleave(4)  # every valid length 0..5, 4 rows each
    scores = torch.randn(len(lengths), 5, generator=gen) * 3  # (rows, n)
    masked = torch.arange(5)[None, :] >= lengths[:, None]  # (rows, n), True = padding
    weights = torch.softmax(torch.where(masked, torch.tensor(-1e6), scores), dim=-1)
    leaks = ((weights != 0) & masked).any(dim=-1)  # (rows,)
    has_padding = masked.any(dim=-1)
    options = {
        "a": torch.zeros_like(leaks),  # no row
        "b": has_padding,  # every row with a masked key
        "c": lengths == 0,
        "d": 2 * lengths < 5,  # more masked keys than valid ones
    }
    right = [k for k, rows in options.items() if torch.equal(rows, leaks)]
    if len(right) != 1:
        raise CheckInternalError(
            tr("expected exactly one option to match, got {right}").format(right=right)
        )
    if choice != right[0]:
        raise CheckError(
            tr(
                "answer_2_1 = {choice!r} does not describe the rows that leak: a softmax "
                "subtracts its row's largest score first; compare exp(-1e6 - max) in a row "
                "with a valid key and in a row without one"
            ).format(choice=choice)
        )


@check("quiz_2_2.key", hidden=True)
def quiz_2_2_key(answer, device):
    """Is answer_2_2 the number of zero weights for X (2, 3, 4) and valid_lens [0, 3]?"""
    predicted = expect_number(answer(), "answer_2_2")
    # Independent reference: -inf at the padding, softmax, and 0 for the rows with no key.
    X = torch.randn(2, 3, 4, generator=torch.Generator().manual_seed(7))
    valid_lens = torch.tensor([0, 3])
    padding = torch.arange(4)[None, None, :] >= valid_lens[:, None, None]  # (2, 1, 4) -> (2, 3, 4)
    weights = torch.softmax(X.masked_fill(padding, float("-inf")), dim=-1).nan_to_num(0.0)
    expected = int((weights == 0).sum())
    if abs(predicted - expected) < 0.01:
        return
    hint = {
        3.0: tr(
            "that is the textbook's count; yours gives the rows of valid length 0 zero weights"
        ),
        5.0: tr("a 1-D valid_lens holds one length per sequence, shared by all 3 of its queries"),
        9.0: tr("that many weights are not zero"),
    }.get(predicted, tr("count, row by row, the keys at or past each row's valid length"))
    raise CheckError(
        tr("answer_2_2 = {predicted:g} zeros is not the count: {hint}").format(
            predicted=predicted, hint=hint
        )
    )


# ----------------------------------------------------------------- the property classes
# Which group tests each class of every graded target (checks._contract.properties);
# tests/test_properties.py proves each with a known-wrong answer that breaks it.

properties(
    "sequence_mask",
    float64=("sequence_mask.safety",),
    gradient=("sequence_mask.safety",),
    meta=("sequence_mask.safety",),
    dropout="n/a: sequence_mask has no dropout",
    unchanged=("sequence_mask.safety",),
)
properties(
    "masked_softmax",
    float64=("masked_softmax.safety",),
    gradient=("masked_softmax.safety",),
    meta=("masked_softmax.safety",),
    dropout="n/a: masked_softmax has no dropout",
    unchanged=("masked_softmax.safety",),
)
