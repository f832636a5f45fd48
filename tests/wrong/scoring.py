"""Wrong answers to the scoring-function exercises (chapters 3 to 5).

For the attention modules each wrong answer is a ``forward``; the checks run it
on a subclass of the reference, so ``__init__`` (the parameters) is the given one.
"""

import torch

from tests.wrong import wrong

# ----------------------------------------------------------------- sum_scores


@wrong(
    "sum_scores",
    {
        "sum_scores": "sum_scores: row batch=0, query=0 is wrong",
        "sum_scores.values": "sum_scores for B=1, m=1, n=1: row batch=0, query=0 is wrong",
    },
)
def query_term_only(queries, keys, w):
    """wᵀq alone, broadcast over the keys."""
    return (queries @ w)[:, :, None].expand(-1, -1, keys.shape[1])


@wrong(
    "sum_scores",
    {
        "sum_scores": "sum_scores: row batch=0, query=0 is wrong",
        "sum_scores.values": "sum_scores for B=1, m=1, n=1: row batch=0, query=0 is wrong",
    },
)
def key_term_only(queries, keys, w):
    """wᵀk alone, broadcast over the queries."""
    return (keys @ w)[:, None, :].expand(-1, queries.shape[1], -1)


@wrong(
    "sum_scores",
    {
        "sum_scores": "sum_scores: row batch=0, query=0 is wrong",
        "sum_scores.values": "sum_scores for B=1, m=1, n=1: row batch=0, query=0 is wrong",
    },
)
def product_of_terms(queries, keys, w):
    """(wᵀq)(wᵀk): a product, not a sum."""
    return (queries @ w)[:, :, None] * (keys @ w)[:, None, :]


@wrong(
    "sum_scores",
    {
        "sum_scores": "sum_scores(queries, keys) has shape (1, 3, 2), expected (1, 2, 3)",
        "sum_scores.values": "sum_scores for B=2, m=3, n=5 has shape (2, 5, 3), expected (2, 3, 5)",
    },
)
def sum_scores_transposed(queries, keys, w):
    """Shape (B, n, m): keys on the rows."""
    return (keys @ w)[:, :, None] + (queries @ w)[:, None, :]


@wrong(
    "sum_scores",
    {
        "sum_scores": "sum_scores: row batch=0, query=0 is wrong",
        "sum_scores.values": "sum_scores for B=1, m=1, n=1: row batch=0, query=0 is wrong",
    },
)
def forgot_w(queries, keys, w):
    """Sums the entries of q and k without w."""
    return queries.sum(-1)[:, :, None] + keys.sum(-1)[:, None, :]


# ----------------------------------------------------------------- distance_scores


@wrong(
    "distance_scores",
    {
        "distance_scores": "distance_scores: row batch=0, query=0 is wrong",
        "distance_scores.values": "distance_scores for B=1, m=1, n=1: row batch=0, query=0 is wrong",
    },
)
def distance_forgot_half(queries, keys):
    """-‖q - k‖² without the 1/2."""
    return -(torch.cdist(queries, keys) ** 2)


@wrong(
    "distance_scores",
    {
        "distance_scores": "distance_scores: row batch=0, query=0 is wrong",
        "distance_scores.values": "distance_scores for B=1, m=1, n=1: row batch=0, query=0 is wrong",
    },
)
def distance_positive(queries, keys):
    """+‖q - k‖²/2: attends to the farthest keys."""
    return torch.cdist(queries, keys) ** 2 / 2


@wrong(
    "distance_scores",
    {
        "distance_scores": "distance_scores: row batch=0, query=0 is wrong",
        "distance_scores.values": "distance_scores for B=1, m=1, n=1: row batch=0, query=0 is wrong",
    },
)
def distance_not_squared(queries, keys):
    """-‖q - k‖/2: the Euclidean distance, not its square."""
    return -torch.cdist(queries, keys) / 2


@wrong(
    "distance_scores",
    {
        "distance_scores": "distance_scores: row batch=0, query=1 is wrong",
        "distance_scores.values": "distance_scores for B=1, m=1, n=1: row batch=0, query=0 is wrong",
    },
)
def distance_without_query_norm(queries, keys):
    """qᵀk - ‖k‖²/2: the right weights after softmax, but not the score asked for."""
    return torch.bmm(queries, keys.transpose(1, 2)) - (keys**2).sum(-1)[:, None, :] / 2


@wrong(
    "distance_scores",
    {
        "distance_scores": "distance_scores(queries, keys) has shape (1, 3, 2), expected (1, 2, 3)",
        "distance_scores.values": "distance_scores for B=2, m=3, n=5 has shape (2, 5, 3), expected (2, 3, 5)",
    },
)
def distance_transposed(queries, keys):
    """Shape (B, n, m): keys on the rows."""
    return -(torch.cdist(keys, queries) ** 2) / 2


@wrong(
    "distance_scores",
    {
        "distance_scores": "distance_scores: row batch=0, query=0 is wrong",
        "distance_scores.kernel": "softmax(distance_scores) in 1-D: row query=0 is wrong",
    },
)
def distance_l1(queries, keys):
    """-‖q - k‖₁/2: a Laplace kernel, not the Gaussian."""
    return -torch.cdist(queries, keys, p=1) / 2


# ----------------------------------------------------------------- classes that used to escape
# Forced float32, weights cut from the graph, dropout applied twice, inputs changed in place,
# a (B, m, n, d) tensor of differences.


@wrong(
    "sum_scores",
    {
        "sum_scores": "sum_scores(queries, keys) has dtype torch.float32, expected torch.float64",
        "sum_scores.values": "sum_scores(queries, keys) has dtype torch.float32, expected torch.float64",
    },
)
def sum_scores_forced_float32(queries, keys, w):
    """Casts to float32."""
    w = w.float()
    return (queries.float() @ w)[:, :, None] + (keys.float() @ w)[:, None, :]


@wrong(
    "sum_scores",
    {
        "sum_scores": "sum_scores on queries (1, 2, 2), keys (1, 3, 2), torch.float32 changed its input w in place: it was",
        "sum_scores.values": "sum_scores on queries (3, 4, 5), keys (3, 6, 5), torch.float32 changed its input w in place: it was",
    },
    breaks="unchanged",
)
def sum_scores_w_unsqueezed_in_place(queries, keys, w):
    """unsqueeze_ turns the caller's w into a column."""
    w.unsqueeze_(-1)  # (d,) -> (d, 1)
    return queries @ w + (keys @ w).transpose(1, 2)


@wrong(
    "sum_scores",
    {
        "sum_scores": "B=2, m=3, n=4, d=2: no gradient reached w. Every parameter and every input must stay in the graph: no",
        "sum_scores.values": "B=3, m=4, n=6, d=5: no gradient reached w. Every parameter and every input must stay in the graph: no",
    },
)
def sum_scores_detached_w(queries, keys, w):
    """w.detach(): the learned vector gets no gradient."""
    w = w.detach()
    return (queries @ w)[:, :, None] + (keys @ w)[:, None, :]


@wrong(
    "distance_scores",
    {
        "distance_scores": "distance_scores(queries, keys) has dtype torch.float32, expected torch.float64",
        "distance_scores.values": "distance_scores(queries, keys) has dtype torch.float32, expected torch.float64",
    },
)
def distance_forced_float32(queries, keys):
    """Casts to float32."""
    q, k = queries.float(), keys.float()
    qk = torch.bmm(q, k.transpose(1, 2))
    return qk - (q**2).sum(-1)[:, :, None] / 2 - (k**2).sum(-1)[:, None, :] / 2


@wrong(
    "distance_scores",
    {
        "distance_scores.values": "distance_scores made a tensor of shape (2, 6, 7, 16) (1344 numbers) for B=2, m=6, n=7, d=16: the (B, m, n, d)"
    },
)
def distance_by_differences(queries, keys):
    """The (B, m, n, d) tensor of differences that the exercise rules out."""
    return -(((queries[:, :, None, :] - keys[:, None, :, :]) ** 2).sum(-1)) / 2


@wrong(
    "distance_scores",
    {
        "distance_scores": "B=2, m=3, n=4, d=2: the gradient is not the derivative of the output. Along a random direction autograd gives",
        "distance_scores.values": "B=3, m=4, n=6, d=5: the gradient is not the derivative of the output. Along a random direction autograd gives",
    },
    breaks="gradient",
)
def distance_norms_without_grad(queries, keys):
    """The squared norms under torch.no_grad(): their gradient is lost."""
    with torch.no_grad():
        q2, k2 = (queries**2).sum(-1), (keys**2).sum(-1)
    return torch.bmm(queries, keys.transpose(1, 2)) - q2[:, :, None] / 2 - k2[:, None, :] / 2


# ----------------------------------------------------------------- property classes


@wrong(
    "sum_scores",
    {
        "sum_scores": "B=2, m=3, n=4, d=2: the gradient is not the derivative of the output. Along a random direction autograd gives",
        "sum_scores.values": "float64 scores (B=3, m=4, n=6, d=5): row index (0, 0) is wrong (12 of 12 rows differ)",
    },
    breaks="float64",
)
def sum_scores_in_float32(queries, keys, w):
    """Computes in float32 and casts back to the inputs' dtype: float32's digits in float64."""
    q, k, w32 = queries.float(), keys.float(), w.float()
    return ((q @ w32)[:, :, None] + (k @ w32)[:, None, :]).to(queries.dtype)


@wrong(
    "sum_scores",
    {
        "sum_scores": "B=2, m=3, n=4, d=2: the gradient is not the derivative of the output. Along a random direction autograd gives",
        "sum_scores.values": "B=3, m=4, n=6, d=5: the gradient is not the derivative of the output. Along a random direction autograd gives",
    },
    breaks="gradient",
)
def sum_scores_query_gradient_doubled(queries, keys, w):
    """2 wᵀq - (wᵀq).detach(): the right values, twice the gradient through the query term."""
    query_terms = queries @ w
    query_terms = 2 * query_terms - query_terms.detach()
    return query_terms[:, :, None] + (keys @ w)[:, None, :]


@wrong(
    "sum_scores",
    {
        "sum_scores": "mul got a tensor of shape (4,) on the CPU together with tensors on the inputs' device. A tensor made without device=",
        "sum_scores.values": "mul got a tensor of shape (6,) on the CPU together with tensors on the inputs' device. A tensor made without device=",
    },
    breaks="meta",
)
def sum_scores_ones_on_the_cpu(queries, keys, w):
    """Broadcasts with torch.ones(n), made without device=: on the CPU whatever the inputs' device."""
    ones = torch.ones(keys.shape[1], dtype=queries.dtype)
    return (queries @ w)[:, :, None] * ones + (keys @ w)[:, None, :]


@wrong(
    "distance_scores",
    {
        "distance_scores": "B=2, m=3, n=4, d=2: the gradient is not the derivative of the output. Along a random direction autograd gives",
        "distance_scores.values": "float64 scores (B=3, m=4, n=6, d=5): row index (0, 0) is wrong (12 of 12 rows differ)",
    },
    breaks="float64",
)
def distance_in_float32(queries, keys):
    """Computes in float32 and casts back to the inputs' dtype: float32's digits in float64."""
    q, k = queries.float(), keys.float()
    dots = torch.bmm(q, k.transpose(1, 2))
    scores = -((q**2).sum(-1)[:, :, None] - 2 * dots + (k**2).sum(-1)[:, None, :]) / 2
    return scores.to(queries.dtype)


@wrong(
    "distance_scores",
    {
        "distance_scores": "sub got a tensor of shape (3, 4) on the CPU together with tensors on the inputs' device. A tensor made without device=",
        "distance_scores.values": "sub got a tensor of shape (4, 6) on the CPU together with tensors on the inputs' device. A tensor made without device=",
    },
    breaks="meta",
)
def distance_zeros_on_the_cpu(queries, keys):
    """Starts from torch.zeros(m, n), made without device=: on the CPU whatever the inputs' device."""
    scores = torch.zeros(queries.shape[1], keys.shape[1], dtype=queries.dtype)
    dots = torch.bmm(queries, keys.transpose(1, 2))
    q_sq, k_sq = (queries**2).sum(-1), (keys**2).sum(-1)
    return scores - (q_sq[:, :, None] - 2 * dots + k_sq[:, None, :]) / 2


@wrong(
    "distance_scores",
    {
        "distance_scores": "distance_scores on queries (1, 2, 2), keys (1, 3, 2), torch.float32 modified its input queries in place: at index (0, 1, 0) it",
        "distance_scores.kernel": "softmax(distance_scores) in 1-D: row query=0 is wrong (6 of 6 rows differ)",
        "distance_scores.values": "distance_scores for B=1, m=1, n=1: row batch=0, query=0 is wrong",
    },
)
def distance_zeroes_everything(queries, keys):
    """Computes nothing: zeroes the queries and keys in place and returns zeros, so that a
    reference computed from the inputs after the call would be zeros too."""
    with torch.no_grad():
        queries.zero_()
        keys.zero_()
    B, m, n = queries.shape[0], queries.shape[1], keys.shape[1]
    return torch.zeros(B, m, n, dtype=queries.dtype, device=queries.device)


@wrong(
    "distance_scores",
    {
        "distance_scores": "distance_scores on queries (1, 2, 2), keys (1, 3, 2), torch.float32 modified its input queries in place: at index (0, 0, 0) it",
        "distance_scores.values": "distance_scores on queries (3, 4, 5), keys (3, 6, 5), torch.float32 modified its input queries in place: at index (0, 0, 0) it",
    },
    breaks="unchanged",
)
def distance_centred_in_place(queries, keys):
    """Centres the queries and keys in place on the keys' mean (distances do not change): the
    right scores, but the caller's queries and keys are changed."""
    centre = keys.detach().mean(dim=1, keepdim=True)  # (B, 1, d)
    with torch.no_grad():
        queries.sub_(centre)
        keys.sub_(centre)
    dots = torch.bmm(queries, keys.transpose(1, 2))
    q_sq, k_sq = (queries**2).sum(-1), (keys**2).sum(-1)
    return -(q_sq[:, :, None] - 2 * dots + k_sq[:, None, :]) / 2
