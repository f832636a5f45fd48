"""Wrong answers to Exercises 2.1 (sequence_mask) and 2.2 (masked_softmax)."""

import torch

from tests.wrong import wrong

# ----------------------------------------------------------------- sequence_mask


@wrong(
    "sequence_mask",
    {
        "sequence_mask": "X was modified in place",
        "sequence_mask.safety": "X (torch.float32) was modified in place",
    },
    breaks="unchanged",
)
def writes_into_input(X, valid_len, value=0):
    """The textbook version: X[~mask] = value changes the caller's tensor."""
    mask = torch.arange(X.shape[1], device=X.device)[None, :] < valid_len[:, None]
    X[~mask] = value
    return X


@wrong(
    "sequence_mask",
    {
        "sequence_mask": "sequence_mask(X, [1, 2]): row row=0 is wrong",
        "sequence_mask.values": "sequence_mask on shape (4, 4), lengths [1, 5, 0, 2], value=0: row row=0 is wrong",
    },
)
def off_by_one(X, valid_len, value=0):
    """<= instead of <: keeps one position too many."""
    mask = torch.arange(X.shape[1], device=X.device)[None, :] <= valid_len[:, None]
    mask = mask.reshape(mask.shape + (1,) * (X.dim() - 2))
    return torch.where(mask, X, torch.tensor(value, dtype=X.dtype, device=X.device))


@wrong(
    "sequence_mask",
    {
        "sequence_mask": "sequence_mask(ones(2, 3, 2), [2, 0], value=-1): row row=0, position=2 is wrong",
        "sequence_mask.values": "sequence_mask on shape (4, 4), lengths [1, 5, 0, 2], value=-1000000.0: row row=0 is wrong",
    },
)
def ignores_value(X, valid_len, value=0):
    """Always fills with zero."""
    mask = torch.arange(X.shape[1], device=X.device)[None, :] < valid_len[:, None]
    mask = mask.reshape(mask.shape + (1,) * (X.dim() - 2))
    return torch.where(mask, X, torch.zeros((), dtype=X.dtype, device=X.device))


@wrong(
    "sequence_mask",
    {
        "sequence_mask": "sequence_mask(ones(2, 3, 2), [2, 0], value=-1) raised RuntimeError",
        "sequence_mask.values": "sequence_mask on shape (4, 2, 3), lengths [2, 0, 1, 3], value=0 raised RuntimeError",
    },
)
def mask_not_reshaped(X, valid_len, value=0):
    """Works for (N, L) only: an (N, L) mask does not broadcast against (N, L, D)."""
    mask = torch.arange(X.shape[1], device=X.device)[None, :] < valid_len[:, None]
    return torch.where(mask, X, torch.tensor(value, dtype=X.dtype, device=X.device))


@wrong(
    "sequence_mask",
    {
        "sequence_mask": "sequence_mask(ones(2, 3, 2), [2, 0], value=-1): row row=0, position=0 is wrong",
        "sequence_mask.values": "sequence_mask on shape (4, 4), lengths [1, 5, 0, 2], value=0: row row=0 is wrong",
    },
)
def broadcast_transposed(X, valid_len, value=0):
    """A column of positions against a row of lengths: the mask comes out (L, N)."""
    mask = torch.arange(X.shape[1], device=X.device)[:, None] < valid_len[None, :]
    return torch.where(mask, X, torch.tensor(value, dtype=X.dtype, device=X.device))


@wrong(
    "sequence_mask",
    {
        "sequence_mask.safety": "output for torch.float16 has dtype torch.float32, expected torch.float16"
    },
)
def promotes_to_float32(X, valid_len, value=0):
    """Returns float32 whatever the input dtype."""
    mask = torch.arange(X.shape[1], device=X.device)[None, :] < valid_len[:, None]
    mask = mask.reshape(mask.shape + (1,) * (X.dim() - 2))
    return torch.where(mask, X.float(), torch.tensor(float(value), device=X.device))


# ----------------------------------------------------------------- masked_softmax


@wrong(
    "masked_softmax",
    {
        "masked_softmax": "weights for valid_lens [2, 3]: row batch=0, query=0 is wrong",
        "masked_softmax.values": "weights for X of shape (2, 3, 5) with 1-D valid_lens [1, 5]: row batch=0, query=0 is wrong",
    },
)
def mask_on_query_axis(X, valid_lens):
    """Masks queries (axis 1) instead of keys (axis 2)."""
    if valid_lens is None:
        return torch.softmax(X, dim=-1)
    lens = valid_lens if valid_lens.dim() == 1 else valid_lens[:, 0]
    mask = (torch.arange(X.shape[1], device=X.device)[None, :] < lens[:, None])[:, :, None]
    return torch.softmax(X.masked_fill(~mask, -1e6), dim=-1)


@wrong(
    "masked_softmax",
    {
        "masked_softmax": "weights for valid_lens [0, 2]: row batch=0, query=0 is wrong",
        "masked_softmax.edge_cases": "weights with valid_lens [0, 5, 2]: row batch=0, query=0 is wrong",
        "masked_softmax.dtypes": "weights for torch.float16 input has a non-finite value nan",
    },
)
def minus_1e6_fill(X, valid_lens):
    """Fills with -1e6 (without mutation): -inf in float16, so an empty row becomes NaN."""
    if valid_lens is None:
        return torch.softmax(X, dim=-1)
    lens = valid_lens[:, None] if valid_lens.dim() == 1 else valid_lens
    mask = torch.arange(X.shape[-1], device=X.device) < lens[..., None]
    fill = torch.tensor(-1e6, dtype=X.dtype, device=X.device)
    return torch.softmax(torch.where(mask, X, fill), dim=-1)


@wrong(
    "masked_softmax",
    {
        "masked_softmax": "weights for valid_lens [2, 3]: row batch=0, query=0 is wrong",
        "masked_softmax.values": "weights for X of shape (2, 3, 5) with 1-D valid_lens [1, 5]: row batch=0, query=0 is wrong",
    },
)
def softmax_before_masking(X, valid_lens):
    """Softmax over all keys, then zeroes the masked weights: rows no longer sum to 1."""
    if valid_lens is None:
        return torch.softmax(X, dim=-1)
    lens = valid_lens[:, None] if valid_lens.dim() == 1 else valid_lens
    mask = torch.arange(X.shape[-1], device=X.device) < lens[..., None]
    return torch.softmax(X, dim=-1) * mask


@wrong("masked_softmax", {"masked_softmax.safety": "X was modified in place"}, breaks="unchanged")
def writes_minus_inf_into_input(X, valid_lens):
    """Right weights, but writes -inf into the caller's scores."""
    if valid_lens is None:
        return torch.softmax(X, dim=-1)
    lens = valid_lens[:, None] if valid_lens.dim() == 1 else valid_lens
    mask = (torch.arange(X.shape[-1], device=X.device) < lens[..., None]).expand(X.shape)
    X.masked_fill_(~mask, float("-inf"))
    empty = ~mask.any(dim=-1, keepdim=True)
    return torch.softmax(X.masked_fill(empty, 0.0), dim=-1).masked_fill(~mask, 0.0)


@wrong(
    "masked_softmax",
    {
        "masked_softmax": "weights for valid_lens [2, 3]: row batch=0, query=1 is wrong",
        "masked_softmax.values": "weights for X of shape (2, 3, 5) with 1-D valid_lens [1, 5]: row batch=0, query=1 is wrong",
    },
)
def repeat_instead_of_repeat_interleave(X, valid_lens):
    """valid_lens.repeat(m) gives [2, 3, 2, 3] where [2, 2, 3, 3] is meant."""
    if valid_lens is None:
        return torch.softmax(X, dim=-1)
    B, m, n = X.shape
    lens = valid_lens.repeat(m) if valid_lens.dim() == 1 else valid_lens.reshape(-1)
    mask = (torch.arange(n, device=X.device) < lens[:, None]).reshape(B, m, n)
    scores = X.masked_fill(~mask, float("-inf"))
    empty = ~mask.any(dim=-1, keepdim=True)
    return torch.softmax(scores.masked_fill(empty, 0.0), dim=-1).masked_fill(~mask, 0.0)


@wrong(
    "masked_softmax",
    {
        "masked_softmax": "weights for valid_lens [0, 2]: row batch=0, query=0 is wrong",
        "masked_softmax.edge_cases": "weights with valid_lens [0, 5, 2]: row batch=0, query=0 is wrong",
    },
)
def uniform_weights_for_empty_rows(X, valid_lens):
    """-1e6 in float32 without mutation: an empty row attends uniformly to its padding."""
    if valid_lens is None:
        return torch.softmax(X, dim=-1)
    lens = valid_lens[:, None] if valid_lens.dim() == 1 else valid_lens
    mask = torch.arange(X.shape[-1], device=X.device) < lens[..., None]
    return torch.softmax(X.masked_fill(~mask, -1e4), dim=-1)


@wrong(
    "masked_softmax",
    {"masked_softmax.safety": "gradient with respect to X has a non-finite value nan"},
)
def nan_gradients(X, valid_lens):
    """An additive -inf mask, then NaN replaced by 0: right weights, NaN gradients for empty rows."""
    if valid_lens is None:
        return torch.softmax(X, dim=-1)
    lens = valid_lens[:, None] if valid_lens.dim() == 1 else valid_lens
    mask = torch.arange(X.shape[-1], device=X.device) < lens[..., None]
    additive = torch.zeros(mask.shape, dtype=X.dtype, device=X.device).masked_fill(
        ~mask, float("-inf")
    )
    weights = torch.softmax(X + additive, dim=-1)
    return torch.where(torch.isnan(weights), torch.zeros_like(weights), weights)


@wrong(
    "masked_softmax",
    {
        "masked_softmax": "weights for valid_lens [[1, 3], [2, 4]]: row batch=0, query=1 is wrong",
        "masked_softmax.values": "weights for X of shape (2, 3, 5) with 2-D valid_lens [[2, 3, 5], [2, 2, 3]]: row batch=0, query=1 is wrong",
    },
)
def ignores_per_query_lengths(X, valid_lens):
    """Uses the first query's length for every query of a 2-D valid_lens."""
    if valid_lens is None:
        return torch.softmax(X, dim=-1)
    lens = valid_lens[:, None] if valid_lens.dim() == 1 else valid_lens[:, :1]
    mask = (torch.arange(X.shape[-1], device=X.device) < lens[..., None]).expand(X.shape)
    scores = X.masked_fill(~mask, float("-inf"))
    empty = ~mask.any(dim=-1, keepdim=True)
    return torch.softmax(scores.masked_fill(empty, 0.0), dim=-1).masked_fill(~mask, 0.0)


# ----------------------------------------------------------------- classes that used to escape
# A tensor made on the CPU, forced float32, lengths clamped in place, a detached output.


@wrong(
    "sequence_mask",
    {
        "sequence_mask": "lt got a tensor of shape (4,) on the CPU together with tensors on the inputs' device. A tensor made without",
        "sequence_mask.safety": "lt got a tensor of shape (6,) on the CPU together with tensors on the inputs' device. A tensor made without",
    },
    breaks="meta",
)
def sequence_positions_on_the_cpu(X, valid_len, value=0):
    """torch.arange without device=: the positions live on the CPU whatever X's device."""
    mask = torch.arange(X.shape[1]) < valid_len[:, None]
    mask = mask.reshape(mask.shape + (1,) * (X.dim() - 2))
    return torch.where(mask, X, torch.tensor(value, dtype=X.dtype, device=X.device))


@wrong(
    "sequence_mask",
    {
        "sequence_mask": "sequence_mask(X, [1, 2]) has dtype torch.float32, expected torch.int64",
        "sequence_mask.safety": "output for torch.float16 has dtype torch.float32, expected torch.float16",
    },
)
def mask_forced_float32(X, valid_len, value=0):
    """Casts to float32: a float64 X comes back as float32."""
    mask = torch.arange(X.shape[1], device=X.device) < valid_len[:, None]
    mask = mask.reshape(mask.shape + (1,) * (X.dim() - 2))
    return torch.where(mask, X.float(), float(value))


@wrong(
    "sequence_mask",
    {
        "sequence_mask": "sequence_mask(X (3, 4, 2) torch.float32, valid_len, value=-2.5) modified its input valid_len in place: at",
        "sequence_mask.safety": "sequence_mask(X (4, 6, 3) torch.float32, valid_len, value=-2.5) modified its input valid_len in place: at",
    },
)
def sequence_lengths_clamped_in_place(X, valid_len, value=0):
    """clamp_ writes the clamped lengths back into the caller's valid_len."""
    valid_len.clamp_(max=X.shape[1])
    mask = torch.arange(X.shape[1], device=X.device) < valid_len[:, None]
    mask = mask.reshape(mask.shape + (1,) * (X.dim() - 2))
    return torch.where(mask, X, torch.tensor(value, dtype=X.dtype, device=X.device))


@wrong(
    "masked_softmax",
    {
        "masked_softmax": "masked_softmax(X (2, 3, 4) torch.float64, valid_lens (2, 3)) modified its input valid_lens in place: at index",
        "masked_softmax.safety": "masked_softmax(X (3, 4, 6) torch.float64, valid_lens (3, 4)) modified its input valid_lens in place: at index",
    },
)
def softmax_lengths_clamped_in_place(X, valid_lens):
    """clamp_ writes the clamped lengths back into the caller's valid_lens."""
    if valid_lens is None:
        return torch.softmax(X, dim=-1)
    if valid_lens.dim() == 1:
        valid_lens = valid_lens[:, None]
    valid_lens.clamp_(max=X.shape[-1])
    mask = torch.arange(X.shape[-1], device=X.device) < valid_lens[..., None]
    scores = X.masked_fill(~mask, float("-inf")).masked_fill(~mask.any(-1, keepdim=True), 0.0)
    return torch.softmax(scores, dim=-1).masked_fill(~mask, 0.0)


@wrong(
    "masked_softmax",
    {
        "masked_softmax": "lt got a tensor of shape (4,) on the CPU together with tensors on the inputs' device. A tensor made without",
        "masked_softmax.safety": "lt got a tensor of shape (6,) on the CPU together with tensors on the inputs' device. A tensor made without",
    },
)
def softmax_positions_on_the_cpu(X, valid_lens):
    """torch.arange without device=: fails as soon as X is on a GPU."""
    if valid_lens is None:
        return torch.softmax(X, dim=-1)
    if valid_lens.dim() == 1:
        valid_lens = valid_lens[:, None]
    mask = torch.arange(X.shape[-1]) < valid_lens[..., None]
    scores = X.masked_fill(~mask, float("-inf")).masked_fill(~mask.any(-1, keepdim=True), 0.0)
    return torch.softmax(scores, dim=-1).masked_fill(~mask, 0.0)


@wrong(
    "masked_softmax",
    {
        "masked_softmax": "masked_softmax(X (2, 3, 4) torch.float64, valid_lens (2, 3)) has dtype torch.float32, expected torch.float64",
        "masked_softmax.dtypes": "weights for torch.float16 input has dtype torch.float32, expected torch.float16",
    },
)
def softmax_forced_float32(X, valid_lens):
    """Computes in float32 and returns float32, whatever the input's dtype."""
    X = X.float()
    if valid_lens is None:
        return torch.softmax(X, dim=-1)
    if valid_lens.dim() == 1:
        valid_lens = valid_lens[:, None]
    mask = torch.arange(X.shape[-1], device=X.device) < valid_lens[..., None]
    scores = X.masked_fill(~mask, float("-inf")).masked_fill(~mask.any(-1, keepdim=True), 0.0)
    return torch.softmax(scores, dim=-1).masked_fill(~mask, 0.0)


# ---------------------------------------------------------------- check your understanding
# Each body is what a student writes in the answer cell; the checks get lambda: answer_2_Y.


@wrong("quiz_2_1", {"quiz_2_1.key": "answer_2_1 = 'a' does not describe the rows that leak"})
def no_row_leaks():
    """(a): forgets the rows of valid length 0, where every score is -1e6."""
    answer_2_1 = "a"  # noqa: F841


@wrong("quiz_2_1", {"quiz_2_1.key": "answer_2_1 = 'b' does not describe the rows that leak"})
def every_masked_key_leaks_a_little():
    """(b): "approximately zero", though exp(-1e6 - max) is exactly 0 in float32."""
    answer_2_1 = "b"  # noqa: F841


@wrong("quiz_2_1", {"quiz_2_1.key": "answer_2_1 = 'd' does not describe the rows that leak"})
def rows_with_mostly_padding_leak():
    """(d): many tiny weights thought to add up, where each is exactly 0 in float32."""
    answer_2_1 = "d"  # noqa: F841


@wrong("quiz_2_1", {"quiz_2_1.key": "answer_2_1 should be one of the letters"})
def two_letters_for_the_masking_question():
    """Hedging with two letters, "bc": a substring of "abcd", but not one letter."""
    answer_2_1 = "bc"  # noqa: F841


@wrong("quiz_2_1", {"quiz_2_1.key": "got True (bool)"})
def true_instead_of_a_letter():
    """A True/False answer, as in another chapter's finding, instead of a letter."""
    answer_2_1 = True  # noqa: F841


@wrong("quiz_2_2", {"quiz_2_2.key": "that is the textbook's count"})
def counts_the_textbook_zeros():
    """3: the textbook's count, which gives the empty rows uniform weights."""
    answer_2_2 = 3  # noqa: F841


@wrong("quiz_2_2", {"quiz_2_2.key": "one length per sequence, shared by all 3 of its queries"})
def one_length_per_row():
    """5: takes the lengths [0, 3] for the first two rows only (4 + 1 zeros)."""
    answer_2_2 = 5  # noqa: F841


@wrong("quiz_2_2", {"quiz_2_2.key": "that many weights are not zero"})
def counts_the_non_zero_weights():
    """9: the weights that are not zero, 24 - 15."""
    answer_2_2 = 9  # noqa: F841


@wrong("quiz_2_2", {"quiz_2_2.key": "answer_2_2 = 12 zeros is not the count"})
def forgets_the_padding_of_the_longer_sequence():
    """12: only the empty rows' zeros, not the fourth key of sequence 1."""
    answer_2_2 = 12  # noqa: F841


@wrong("quiz_2_2", {"quiz_2_2.key": "answer_2_2 should be a finite number, got '15' (str)"})
def count_as_text():
    """The right count, written as a string."""
    answer_2_2 = "15"  # noqa: F841


# ----------------------------------------------------------------- property classes
# Each breaks one property class that the checks of every graded target cover (breaks=...).


@wrong(
    "sequence_mask",
    {
        "sequence_mask": "sequence_mask in float64 (X of shape (3, 4, 2)): the gradient is not the derivative of the output. Along a random direction",
        "sequence_mask.safety": "sequence_mask in float64 (X of shape (4, 6, 3)): the gradient is not the derivative of the output. Along a random direction",
    },
    breaks="float64",
)
def sequence_mask_in_float32(X, valid_len, value=0):
    """Selects in float32 and casts back: a float64 X comes back float64, with float32's digits."""
    mask = torch.arange(X.shape[1], device=X.device)[None, :] < valid_len[:, None]
    mask = mask.reshape(mask.shape + (1,) * (X.dim() - 2))
    Y = X.float() if X.is_floating_point() else X
    out = torch.where(mask, Y, torch.tensor(value, dtype=Y.dtype, device=X.device))
    return out.to(X.dtype)


@wrong(
    "sequence_mask",
    {
        "sequence_mask": "sequence_mask in float64 (X of shape (3, 4, 2)): the gradient is not the derivative of the output. Along a random direction",
        "sequence_mask.safety": "gradient of sum(sequence_mask(X)): row row=0 is wrong (2 of 2 rows differ)",
    },
    breaks="gradient",
)
def sequence_mask_straight_through(X, valid_len, value=0):
    """Masks a detached X, then adds X - X.detach() (zero): right values, but the gradient
    also reaches the masked positions."""
    mask = torch.arange(X.shape[1], device=X.device)[None, :] < valid_len[:, None]
    mask = mask.reshape(mask.shape + (1,) * (X.dim() - 2))
    out = torch.where(mask, X.detach(), torch.tensor(value, dtype=X.dtype, device=X.device))
    return out + (X - X.detach()) if X.is_floating_point() else out


@wrong(
    "sequence_mask",
    {
        "sequence_mask": "sequence_mask(X, [1, 2]): row row=0 is wrong (2 of 2 rows differ)",
        "sequence_mask.safety": "X (torch.float32) was modified in place: at index (0, 0) it was",
        "sequence_mask.values": "sequence_mask on shape (1, 1), lengths [2], value=0: row row=0 is wrong",
    },
)
def sequence_mask_zeroes_everything(X, valid_len, value=0):
    """Masks nothing: zeroes X and valid_len in place and returns zeros, so that a reference
    computed from the inputs after the call would be zeros too."""
    with torch.no_grad():
        X.zero_()
        valid_len.zero_()
    return torch.zeros_like(X)


@wrong(
    "masked_softmax",
    {
        "masked_softmax": "weights for torch.float64 input: row batch=0, query=1 is wrong (3 of 6 rows differ)",
        "masked_softmax.safety": "weights for torch.float64 input: row batch=0, query=1 is wrong (9 of 12 rows differ)",
    },
    breaks="float64",
)
def masked_softmax_in_float32(X, valid_lens):
    """The softmax in float32 whatever X's dtype, cast back: float64 in and out, float32's digits."""
    if valid_lens is None:
        return torch.softmax(X.float(), dim=-1).to(X.dtype)
    lens = valid_lens if valid_lens.dim() == 2 else valid_lens[:, None]
    mask = torch.arange(X.shape[-1], device=X.device) < lens[..., None]
    scores = X.float().masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores.masked_fill(~mask.any(-1, keepdim=True), 0.0), dim=-1)
    return weights.masked_fill(~mask, 0.0).to(X.dtype)


@wrong(
    "masked_softmax",
    {
        "masked_softmax": "masked_softmax in float64 (B=2, m=3, n=4): the gradient is not the derivative of the output. Along a random direction autograd",
        "masked_softmax.safety": "masked_softmax in float64 (B=3, m=4, n=6): the gradient is not the derivative of the output. Along a random direction autograd",
    },
    breaks="gradient",
)
def masked_softmax_sum_detached(X, valid_lens):
    """A softmax by hand, exp(x - max) / sum, with the sum detached: right weights, wrong gradient."""
    B, m, n = X.shape
    if valid_lens is None:
        mask = torch.ones(B, m, n, dtype=torch.bool, device=X.device)
    else:
        lens = valid_lens if valid_lens.dim() == 2 else valid_lens[:, None]
        mask = (torch.arange(n, device=X.device) < lens[..., None]).expand(B, m, n)
    scores = X.masked_fill(~mask, float("-inf"))
    top = scores.amax(dim=-1, keepdim=True).masked_fill(~mask.any(-1, keepdim=True), 0.0)
    e = torch.exp(scores - top)  # 0 where masked
    total = e.sum(dim=-1, keepdim=True).clamp_min(torch.finfo(X.dtype).tiny)
    return e / total.detach()


@wrong(
    "masked_softmax",
    {
        "masked_softmax": "weights for valid_lens [2, 3]: row batch=0, query=0 is wrong (4 of 4 rows differ)",
        "masked_softmax.dtypes": "weights for torch.float16 input: row batch=0, query=1 is wrong (4 of 6 rows differ)",
        "masked_softmax.edge_cases": "weights with valid_lens [0, 5, 2]: row batch=1, query=0 is wrong (8 of 12 rows differ)",
        "masked_softmax.safety": "X was modified in place: at index (0, 0, 0) it was",
        "masked_softmax.values": "weights for X of shape (1, 1, 1) with 1-D valid_lens [1]: row batch=0, query=0 is wrong",
    },
)
def masked_softmax_zeroes_everything(X, valid_lens):
    """Computes nothing: zeroes the scores and the lengths in place and returns zeros, so that
    a reference computed from the inputs after the call would be zeros too."""
    with torch.no_grad():
        X.zero_()
        if valid_lens is not None:
            valid_lens.zero_()
    return torch.zeros_like(X)


@wrong(
    "masked_softmax",
    {
        "masked_softmax": "NotImplementedError: meta tensor: data-dependent, this needs values",
        "masked_softmax.safety": "NotImplementedError: meta tensor: data-dependent, this needs values",
    },
    breaks="meta",
)
def masked_softmax_dodges_the_device_check(X, valid_lens):
    """Builds its mask on the CPU, and on meta inputs raises NotImplementedError with the words
    the device check once read as "this needs values"."""
    if X.device.type == "meta":
        raise NotImplementedError("meta tensor: data-dependent, this needs values")
    if valid_lens is None:
        return torch.softmax(X, dim=-1)
    lens = (valid_lens if valid_lens.dim() == 2 else valid_lens[:, None]).cpu()
    mask = (torch.arange(X.shape[-1]) < lens[..., None]).to(X.device)
    scores = X.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores.masked_fill(~mask.any(-1, keepdim=True), 0.0), dim=-1)
    return weights.masked_fill(~mask, 0.0)
