"""Wrong answers to Exercise 1.1, nadaraya_watson."""

import torch

from tests.wrong import wrong


@wrong(
    "nadaraya_watson",
    {"nadaraya_watson.limits": "weights for queries far from every key has a non-finite value nan"},
)
def naive_exp_division(queries, keys, values, bandwidth=1.0):
    """exp / sum instead of softmax: 0/0 = NaN for a query far from every key."""
    kernel = torch.exp(-((queries[:, None] - keys[None, :]) ** 2) / (2 * bandwidth**2))
    weights = kernel / kernel.sum(dim=1, keepdim=True)
    return weights @ values, weights


@wrong(
    "nadaraya_watson",
    {
        "nadaraya_watson": "attention_weights: row query=0 is wrong",
        "nadaraya_watson.values": "weights (m=4, n=9, σ=0.3): row query=0 is wrong",
    },
)
def softmax_over_queries(queries, keys, values, bandwidth=1.0):
    """Normalises each key's column instead of each query's row."""
    weights = torch.softmax(-((queries[:, None] - keys[None, :]) ** 2) / (2 * bandwidth**2), dim=0)
    return weights @ values, weights


@wrong(
    "nadaraya_watson",
    {
        "nadaraya_watson": "attention_weights: row query=0 is wrong",
        "nadaraya_watson.values": "weights (m=4, n=9, σ=0.3): row query=0 is wrong",
    },
)
def forgot_the_half(queries, keys, values, bandwidth=1.0):
    """Score -(q - k)² / σ² : the kernel is too narrow by a factor √2."""
    weights = torch.softmax(-((queries[:, None] - keys[None, :]) ** 2) / bandwidth**2, dim=1)
    return weights @ values, weights


@wrong(
    "nadaraya_watson",
    {
        "nadaraya_watson": "attention_weights (σ = 0.5): row query=0 is wrong",
        "nadaraya_watson.values": "weights (m=4, n=9, σ=0.3): row query=0 is wrong",
    },
)
def bandwidth_not_squared(queries, keys, values, bandwidth=1.0):
    """Divides by 2σ instead of 2σ²: right for σ = 1 only."""
    weights = torch.softmax(-((queries[:, None] - keys[None, :]) ** 2) / (2 * bandwidth), dim=1)
    return weights @ values, weights


@wrong(
    "nadaraya_watson",
    {
        "nadaraya_watson": "attention_weights: row query=0 is wrong",
        "nadaraya_watson.values": "weights (m=4, n=9, σ=0.3): row query=0 is wrong",
    },
)
def absolute_distance(queries, keys, values, bandwidth=1.0):
    """A Laplace kernel, -|q - k|, instead of the Gaussian's -(q - k)²."""
    weights = torch.softmax(-(queries[:, None] - keys[None, :]).abs() / (2 * bandwidth**2), dim=1)
    return weights @ values, weights


@wrong(
    "nadaraya_watson",
    {
        "nadaraya_watson": "attention_weights (m=2, n=3) has shape (3, 2), expected (2, 3)",
        "nadaraya_watson.values": "attention_weights (m=4, n=9) has shape (9, 4), expected (4, 9)",
    },
)
def weights_transposed(queries, keys, values, bandwidth=1.0):
    """Returns the weights as (n, m)."""
    weights = torch.softmax(-((queries[:, None] - keys[None, :]) ** 2) / (2 * bandwidth**2), dim=1)
    return weights @ values, weights.T


@wrong(
    "nadaraya_watson",
    {
        "nadaraya_watson": "attention_weights: row query=0 is wrong",
        "nadaraya_watson.values": "weights (m=4, n=9, σ=0.3): row query=0 is wrong",
    },
)
def sign_flipped(queries, keys, values, bandwidth=1.0):
    """+(q - k)²: attends to the farthest keys."""
    weights = torch.softmax(((queries[:, None] - keys[None, :]) ** 2) / (2 * bandwidth**2), dim=1)
    return weights @ values, weights


# ----------------------------------------------------------------- classes that used to escape
# Forced float32, a detached input, an input changed in place, a tensor moved to the CPU.


@wrong(
    "nadaraya_watson",
    {
        "nadaraya_watson": "predictions (m=3, n=4) has dtype torch.float32, expected torch.float64",
        "nadaraya_watson.values": "predictions (m=1, n=1) has dtype torch.float32, expected torch.float64",
    },
)
def pooling_forced_float32(queries, keys, values, bandwidth=1.0):
    """Casts to float32: a float64 input gives float32 predictions."""
    scores = -((queries.float()[:, None] - keys.float()[None, :]) ** 2) / (2 * bandwidth**2)
    weights = torch.softmax(scores, dim=-1)
    return weights @ values.float(), weights


@wrong(
    "nadaraya_watson",
    {
        "nadaraya_watson": "nadaraya_watson (m=3, n=4): no gradient reached keys. Every parameter and every input must stay in the graph",
        "nadaraya_watson.values": "nadaraya_watson (m=6, n=9): no gradient reached keys. Every parameter and every input must stay in the graph",
    },
)
def pooling_detached_keys(queries, keys, values, bandwidth=1.0):
    """Keys detached: no gradient reaches them (a learned key position could not move)."""
    scores = -((queries[:, None] - keys.detach()[None, :]) ** 2) / (2 * bandwidth**2)
    weights = torch.softmax(scores, dim=-1)
    return weights @ values, weights


@wrong(
    "nadaraya_watson",
    {
        "nadaraya_watson": "nadaraya_watson(queries (2,), keys (3,), values (3,), torch.float32) changed its input queries in place: it",
        "nadaraya_watson.values": "nadaraya_watson(queries (1,), keys (1,), values (1,), torch.float64) changed its input queries in place: it",
    },
    breaks="unchanged",
)
def pooling_queries_unsqueezed_in_place(queries, keys, values, bandwidth=1.0):
    """unsqueeze_ turns the caller's queries into a column."""
    scores = -((queries.unsqueeze_(1) - keys[None, :]) ** 2) / (2 * bandwidth**2)
    weights = torch.softmax(scores, dim=-1)
    return weights @ values, weights


@wrong(
    "nadaraya_watson",
    {
        "nadaraya_watson": ".cpu() moves a tensor off the inputs' device: on a GPU the result would come back on the CPU. Keep every",
        "nadaraya_watson.values": ".cpu() moves a tensor off the inputs' device: on a GPU the result would come back on the CPU. Keep every",
    },
    breaks="meta",
)
def pooling_values_to_cpu(queries, keys, values, bandwidth=1.0):
    """Moves the values to the CPU (to print them, say): on a GPU the predictions come back there."""
    scores = -((queries[:, None] - keys[None, :]) ** 2) / (2 * bandwidth**2)
    weights = torch.softmax(scores, dim=-1)
    return (weights.cpu() @ values.cpu()).to(weights.dtype), weights


# ---------------------------------------------------------------- check your understanding
# Each body is what a student writes in the answer cell; the checks get lambda: answer_1_Y.


@wrong("quiz_1_1", {"quiz_1_1.key": "answer_1_1 = 'a': that change alters the attention weights"})
def doubling_the_scores_keeps_the_weights():
    """(a): doubling every score is the kernel of width σ/√2, a sharper softmax."""
    answer_1_1 = "a"  # noqa: F841


@wrong("quiz_1_1", {"quiz_1_1.key": "answer_1_1 = 'c': that change alters the attention weights"})
def exponentiating_the_scores_keeps_the_weights():
    """(c): exp(s) before the softmax is monotone but changes the weights."""
    answer_1_1 = "c"  # noqa: F841


@wrong("quiz_1_1", {"quiz_1_1.key": "answer_1_1 = 'd': that change alters the attention weights"})
def softmax_over_queries_keeps_the_weights():
    """(d): a softmax over the queries normalises each key's column, not each query's row."""
    answer_1_1 = "d"  # noqa: F841


@wrong("quiz_1_1", {"quiz_1_1.key": "answer_1_1 should be one of the letters"})
def two_letters():
    """Hedging with two letters: a substring of "abcd", but not one letter."""
    answer_1_1 = "ab"  # noqa: F841


@wrong("quiz_1_1", {"quiz_1_1.key": "should be one of the letters 'a', 'b', 'c', 'd', got 2 (int)"})
def option_number_instead_of_letter():
    """The option's position, 2, instead of its letter."""
    answer_1_1 = 2  # noqa: F841


@wrong("quiz_1_2", {"quiz_1_2.key": "the weights are not all zero"})
def far_query_gets_no_weight():
    """Far from every key every kernel value is 0, so the prediction must be 0 (it is not)."""
    answer_1_2 = 0  # noqa: F841


@wrong("quiz_1_2", {"quiz_1_2.key": "the weights are not uniform"})
def far_query_gets_the_mean():
    """All keys are about equally far from 100, so the weights are uniform (they are not)."""
    answer_1_2 = 20  # noqa: F841


@wrong("quiz_1_2", {"quiz_1_2.key": "answer_1_2 = 10 is not the prediction for q = 100"})
def first_key_wins():
    """The value of the first key instead of the nearest one."""
    answer_1_2 = 10  # noqa: F841


@wrong("quiz_1_2", {"quiz_1_2.key": "answer_1_2 should be a finite number, got nan"})
def naive_formula_gives_nan():
    """What exp / sum gives (0 / 0), not what the softmax gives."""
    answer_1_2 = float("nan")  # noqa: F841


@wrong("quiz_1_2", {"quiz_1_2.key": "answer_1_2 should be a finite number, got '30' (str)"})
def number_as_text():
    """The right value, written as a string."""
    answer_1_2 = "30"  # noqa: F841


# ----------------------------------------------------------------- property classes


@wrong(
    "nadaraya_watson",
    {
        "nadaraya_watson": "nadaraya_watson (m=3, n=4): the gradient is not the derivative of the output. Along a random direction autograd gives",
        "nadaraya_watson.values": "float64 attention_weights (m=6, n=9): row index (0,) is wrong (6 of 6 rows differ)",
    },
    breaks="float64",
)
def pooling_in_float32(queries, keys, values, bandwidth=1.0):
    """Computes in float32 and casts back: float64 in and out, with float32's digits."""
    q, k, v = queries.float(), keys.float(), values.float()
    weights = torch.softmax(-((q[:, None] - k[None, :]) ** 2) / (2 * bandwidth**2), dim=-1)
    return (weights @ v).to(queries.dtype), weights.to(queries.dtype)


@wrong(
    "nadaraya_watson",
    {
        "nadaraya_watson": "nadaraya_watson (m=3, n=4): the gradient is not the derivative of the output. Along a random direction autograd gives",
        "nadaraya_watson.values": "nadaraya_watson (m=6, n=9): the gradient is not the derivative of the output. Along a random direction autograd gives",
    },
    breaks="gradient",
)
def pooling_normaliser_detached(queries, keys, values, bandwidth=1.0):
    """A softmax by hand with its normaliser detached: right weights, wrong gradient."""
    scores = -((queries[:, None] - keys[None, :]) ** 2) / (2 * bandwidth**2)
    e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    weights = e / e.sum(dim=-1, keepdim=True).detach()
    return weights @ values, weights
