"""Visible checks for the chapter "Masking"."""

import torch

from checks._core import (
    calling,
    check,
    expect_close,
    expect_tensor,
    expect_unchanged,
    softmax_list,
)

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
    with calling("sequence_mask(X, [1, 2]) for X = [[1, 2, 3], [4, 5, 6]]", sequence_mask):
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
    expect_close(out, expected, "weights for valid_lens [2, 3]", labels=("batch", "query"))


@check("masked_softmax")
def worked_example_2d(masked_softmax, device):
    """Does a 2-D valid_lens give every query its own length?"""
    X = torch.tensor(WORKED_X, device=device)
    lens = [[1, 3], [2, 4]]
    out = masked_softmax(X, torch.tensor(lens, device=device))
    expected = torch.tensor(masked_rows(WORKED_X, lens), device=device)
    expect_close(out, expected, f"weights for valid_lens {lens}", labels=("batch", "query"))


@check("masked_softmax")
def no_mask(masked_softmax, device):
    """Does valid_lens=None give a plain softmax over the last axis?"""
    X = torch.tensor(WORKED_X, device=device)
    out = masked_softmax(X, None)
    expect_close(
        out, torch.softmax(X, dim=-1), "weights for valid_lens None", labels=("batch", "query")
    )


@check("masked_softmax")
def empty_rows(masked_softmax, device):
    """Does a query with no valid key get all-zero weights (not NaN, not uniform)?"""
    X = torch.tensor(WORKED_X, device=device)
    out = masked_softmax(X, torch.tensor([0, 2], device=device))
    name = "weights for valid_lens [0, 2]"
    expect_tensor(out, name, shape=(2, 2, 4), dtype=torch.float32, device=device)
    expected = torch.tensor(masked_rows(WORKED_X, [[0, 0], [2, 2]]), device=device)
    expect_close(out, expected, name, labels=("batch", "query"))
