"""Wrong answers to Exercise 10.1 (valid_lens_to_mask)."""

import torch

from tests.wrong import wrong


@wrong(
    "valid_lens_to_mask",
    {
        "valid_lens_to_mask": "valid_lens_to_mask([3, 0], 2, 4): sequence 0 may attend keys [3], expected [0, 1, 2] (True = attend)",
        "valid_lens_to_mask.values": "valid_lens_to_mask([0], 1, 1): sequence 0 may attend keys [0], expected [] (True = attend)",
        "valid_lens_to_mask.kernel": "SDPA output with valid_lens_to_mask([4, 7, 6], 4, 6): row batch=0, head=0, query=0 is wrong",
    },
)
def true_means_padding(valid_lens, num_queries, num_keys):
    """The key_padding_mask convention of nn.MultiheadAttention: True marks the padding."""
    positions = torch.arange(num_keys, device=valid_lens.device)
    if valid_lens.dim() == 1:
        return positions >= valid_lens[:, None, None, None]
    return positions >= valid_lens[:, None, :, None]


@wrong(
    "valid_lens_to_mask",
    {
        "valid_lens_to_mask": "valid_lens_to_mask([3, 0], 2, 4): sequence 0 may attend keys [0, 1, 2, 3], expected [0, 1, 2] (True = attend)",
        "valid_lens_to_mask.values": "valid_lens_to_mask([0], 1, 1): sequence 0 may attend keys [0], expected [] (True = attend)",
        "valid_lens_to_mask.kernel": "SDPA output with valid_lens_to_mask([4, 7, 6], 4, 6): row batch=0, head=0, query=0 is wrong",
    },
)
def off_by_one(valid_lens, num_queries, num_keys):
    """<= instead of <: every query also attends the first padding key."""
    positions = torch.arange(num_keys, device=valid_lens.device)
    if valid_lens.dim() == 1:
        return positions <= valid_lens[:, None, None, None]
    return positions <= valid_lens[:, None, :, None]


@wrong(
    "valid_lens_to_mask",
    {
        "valid_lens_to_mask": "valid_lens_to_mask([3, 0], 2, 4) has dtype torch.float32, expected torch.bool",
        "valid_lens_to_mask.values": "valid_lens_to_mask([0], 1, 1) has dtype torch.float32, expected torch.bool",
        "valid_lens_to_mask.kernel": "valid_lens_to_mask([4, 7, 6], 4, 6) has dtype torch.float32, expected torch.bool",
    },
)
def float_mask(valid_lens, num_queries, num_keys):
    """A 0/1 float mask: SDPA adds it to the scores (+1 for valid keys) instead of masking."""
    positions = torch.arange(num_keys, device=valid_lens.device)
    if valid_lens.dim() == 1:
        return (positions < valid_lens[:, None, None, None]).float()
    return (positions < valid_lens[:, None, :, None]).float()


@wrong(
    "valid_lens_to_mask",
    {
        "valid_lens_to_mask": "valid_lens_to_mask([3, 0], 2, 4) has shape (2, 1, 2, 4), expected (2, 1, 1, 4)",
        "valid_lens_to_mask.kernel": "valid_lens_to_mask([4, 7, 6], 4, 6) has shape (3, 1, 4, 6), expected (3, 1, 1, 6)",
    },
)
def full_size_mask(valid_lens, num_queries, num_keys):
    """Right values, but a (B, 1, m, n) mask even for lengths (B,): memory quadratic in n."""
    positions = torch.arange(num_keys, device=valid_lens.device)
    if valid_lens.dim() == 1:
        valid_lens = valid_lens[:, None].expand(-1, num_queries)
    return (positions < valid_lens[:, :, None])[:, None].clone()


@wrong(
    "valid_lens_to_mask",
    {
        "valid_lens_to_mask": "valid_lens_to_mask([[1, 4], [2, 0]], 2, 4): sequence 0, query 1 may attend keys [0], expected [0, 1, 2, 3] (True = attend)",
        "valid_lens_to_mask.values": "valid_lens_to_mask([[5, 3, 4], [0, 7, 1]], 3, 5): sequence 0, query 1 may attend keys [0, 1, 2, 3, 4], expected [0, 1, 2] (True = attend)",
        "valid_lens_to_mask.kernel": "SDPA output with valid_lens_to_mask([[4, 7, 6, 4], [2, 1, 3, 5], [6, 1, 1, 6]], 4, 6): row batch=0, head=0, query=1 is wrong",
    },
)
def first_query_length_for_all(valid_lens, num_queries, num_keys):
    """Lengths per query replaced by the first query's: later queries see the wrong keys."""
    positions = torch.arange(num_keys, device=valid_lens.device)
    if valid_lens.dim() == 1:
        return positions < valid_lens[:, None, None, None]
    first = valid_lens[:, :1].expand(-1, num_queries)  # (B, m), every query with length [b, 0]
    return positions < first[:, None, :, None]


@wrong(
    "valid_lens_to_mask",
    {
        "valid_lens_to_mask": "valid_lens_to_mask([[1, 4], [2, 0]], 2, 4) has shape (2, 2, 1, 4), expected (2, 1, 2, 4)",
        "valid_lens_to_mask.values": "valid_lens_to_mask([[5, 3, 4], [0, 7, 1]], 3, 5) has shape (2, 3, 1, 5), expected (2, 1, 3, 5)",
        "valid_lens_to_mask.kernel": "valid_lens_to_mask([[4, 7, 6, 4], [2, 1, 3, 5], [6, 1, 1, 6]], 4, 6) has shape (3, 4, 1, 6), expected (3, 1, 4, 6)",
    },
)
def queries_on_the_heads_axis(valid_lens, num_queries, num_keys):
    """Lengths (B, m) become a (B, m, 1, n) mask: the queries land on the heads axis."""
    positions = torch.arange(num_keys, device=valid_lens.device)
    if valid_lens.dim() == 1:
        return positions < valid_lens[:, None, None, None]
    return positions < valid_lens[:, :, None, None]


@wrong(
    "valid_lens_to_mask",
    {
        "valid_lens_to_mask": "valid_lens_to_mask([3, 0], 2, 4) has shape (2, 4), expected (2, 1, 1, 4)",
        "valid_lens_to_mask.values": "valid_lens_to_mask([0], 1, 1) has shape (1, 1), expected (1, 1, 1, 1)",
    },
)
def lengths_not_broadcast(valid_lens, num_queries, num_keys):
    """A (B, n) mask: the query and heads axes are missing, so it does not broadcast by batch."""
    positions = torch.arange(num_keys, device=valid_lens.device)
    if valid_lens.dim() == 2:
        valid_lens = valid_lens.max(dim=1).values
    return positions < valid_lens[:, None]


# ----------------------------------------------------------------- classes that used to escape


@wrong(
    "valid_lens_to_mask",
    {
        "valid_lens_to_mask": "valid_lens_to_mask([2, 7], 3, 4) modified its input valid_lens in place: at index (1,) it was 7 and is now 4.",
        "valid_lens_to_mask.values": "valid_lens_to_mask([[5, 3, 4], [0, 7, 1]], 3, 5) modified its input valid_lens in place: at index (1, 1) it",
    },
    breaks="unchanged",
)
def mask_lengths_clamped_in_place(valid_lens, num_queries, num_keys):
    """clamp_ writes the clamped lengths back into the caller's valid_lens."""
    valid_lens.clamp_(max=num_keys)
    positions = torch.arange(num_keys, device=valid_lens.device)
    if valid_lens.dim() == 1:
        return positions < valid_lens[:, None, None, None]
    return positions < valid_lens[:, None, :, None]


@wrong(
    "valid_lens_to_mask",
    {
        "valid_lens_to_mask": "lt got a tensor of shape (4,) on the CPU together with tensors on the inputs' device. A tensor made without",
        "valid_lens_to_mask.values": "lt got a tensor of shape (6,) on the CPU together with tensors on the inputs' device. A tensor made without",
    },
    breaks="meta",
)
def mask_positions_on_the_cpu(valid_lens, num_queries, num_keys):
    """torch.arange without device=: fails as soon as the lengths are on a GPU."""
    positions = torch.arange(num_keys)
    if valid_lens.dim() == 1:
        return positions < valid_lens[:, None, None, None]
    return positions < valid_lens[:, None, :, None]


# ------------------------------------------------ Check your understanding


@wrong(
    "quiz_10_1",
    {
        "quiz_10_1": "Hint: count the multiply-adds of the two products",
        "quiz_10_1.key": "answer_10_1 = 'a': the fused kernel does the same 4Bhmnd FLOPs",
    },
)
def fewer_flops():
    """The fused kernel is thought to skip arithmetic, since it never stores the scores."""
    answer_10_1 = "a"  # noqa: F841


@wrong("quiz_10_1", {"quiz_10_1.key": "answer_10_1 = 'c': the online softmax is exact"})
def approximate_softmax():
    """The running maximum and sum are thought to approximate the softmax."""
    answer_10_1 = "c"  # noqa: F841


@wrong("quiz_10_1", {"quiz_10_1.key": "answer_10_1 = 'd': the comparison in this chapter"})
def lower_precision():
    """The speed is credited to a lower precision, which the chapter never uses."""
    answer_10_1 = "d"  # noqa: F841


@wrong("quiz_10_2", {"quiz_10_2.key": "answer_10_2 = 1.34218e+08 is not the number of booleans"})
def one_boolean_per_score():
    """B·h·m·n: a boolean for every score, as if the mask were materialised per head and query."""
    answer_10_2 = 8 * 16 * 1024 * 1024  # noqa: F841


@wrong("quiz_10_2", {"quiz_10_2.key": "answer_10_2 = 8.38861e+06 is not the number of booleans"})
def one_boolean_per_query_and_key():
    """B·m·n: the heads broadcast, but not the queries (that is the mask of lengths (B, m))."""
    answer_10_2 = 8 * 1024 * 1024  # noqa: F841


@wrong("quiz_10_2", {"quiz_10_2.key": "answer_10_2 = 131072 is not the number of booleans"})
def one_boolean_per_head_and_key():
    """B·h·n: the queries broadcast, but a copy of the mask per head."""
    answer_10_2 = 8 * 16 * 1024  # noqa: F841
