"""Wrong answers to the scoring-function exercises (chapters 3 to 5).

For the attention modules each wrong answer is a ``forward``; the checks run it
on a subclass of the reference, so ``__init__`` (the parameters) is the given one.
"""

import math

import torch

from solutions.masking import masked_softmax
from tests.wrong import wrong

# ----------------------------------------------------------------- DotProductAttention


@wrong(
    "DotProductAttention",
    {
        "DotProductAttention": "attention_weights: row batch=0, query=0 is wrong",
        "DotProductAttention.values": "attention_weights for B=2, m=3, n=5, valid_lens=None: row batch=0, query=0 is wrong",
    },
)
def forgot_sqrt_d(self, queries, keys, values, valid_lens=None):
    """No scaling at all."""
    self.attention_weights = masked_softmax(torch.bmm(queries, keys.transpose(1, 2)), valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "DotProductAttention",
    {
        "DotProductAttention": "attention_weights: row batch=0, query=0 is wrong",
        "DotProductAttention.values": "attention_weights for B=2, m=3, n=5, valid_lens=None: row batch=0, query=0 is wrong",
    },
)
def scaled_by_d(self, queries, keys, values, valid_lens=None):
    """Divides by d instead of √d."""
    scores = torch.bmm(queries, keys.transpose(1, 2)) / queries.shape[-1]
    self.attention_weights = masked_softmax(scores, valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "DotProductAttention",
    {
        "DotProductAttention.values": "attention_weights for B=2, m=3, n=5, valid_lens=None: row batch=0, query=0 is wrong"
    },
)
def scaled_by_number_of_keys(self, queries, keys, values, valid_lens=None):
    """Divides by √n, the number of keys, instead of √d."""
    scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(keys.shape[1])
    self.attention_weights = masked_softmax(scores, valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "DotProductAttention",
    {
        "DotProductAttention": "attention_weights has shape (2, 10, 1), expected (2, 1, 10)",
        "DotProductAttention.values": "attention_weights has shape (2, 5, 3), expected (2, 3, 5)",
    },
)
def keys_times_queries(self, queries, keys, values, valid_lens=None):
    """bmm(keys, queriesᵀ): scores of shape (B, n, m), keys and queries transposed."""
    scores = torch.bmm(keys, queries.transpose(1, 2)) / math.sqrt(queries.shape[-1])
    self.attention_weights = masked_softmax(scores, valid_lens)
    return torch.bmm(self.dropout(self.attention_weights).transpose(1, 2), values)


@wrong(
    "DotProductAttention",
    {
        "DotProductAttention.values": "attention_weights for B=2, m=3, n=5, valid_lens=None: row batch=0, query=0 is wrong"
    },
)
def dot_softmax_over_queries(self, queries, keys, values, valid_lens=None):
    """Normalises over the queries (axis 1), then masks."""
    scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(queries.shape[-1])
    weights = torch.softmax(scores, dim=1)
    if valid_lens is not None:
        lens = valid_lens[:, None] if valid_lens.dim() == 1 else valid_lens
        weights = weights * (torch.arange(keys.shape[1], device=keys.device) < lens[..., None])
    self.attention_weights = weights
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "DotProductAttention",
    {
        "DotProductAttention": "the output: row batch=0, query=0 is wrong",
        "DotProductAttention.sdpa": "the output against scaled_dot_product_attention: row batch=0, query=1 is wrong",
    },
)
def dot_ignores_valid_lens(self, queries, keys, values, valid_lens=None):
    """A plain softmax: the padding gets weight."""
    scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(queries.shape[-1])
    self.attention_weights = torch.softmax(scores, dim=-1)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "DotProductAttention",
    {
        "DotProductAttention.dropout": "the output in eval mode with dropout=1 (dropout must be off): row batch=0, query=0 is wrong"
    },
)
def dot_dropout_left_on(self, queries, keys, values, valid_lens=None):
    """Functional dropout with training=True: still dropping weights in eval mode."""
    scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(queries.shape[-1])
    self.attention_weights = masked_softmax(scores, valid_lens)
    dropped = torch.nn.functional.dropout(self.attention_weights, self.dropout.p, training=True)
    return torch.bmm(dropped, values)


# ----------------------------------------------------------------- BilinearAttention


@wrong(
    "BilinearAttention",
    {
        "BilinearAttention": "the forward on queries (2, 4, 3), keys (2, 6, 5), values (2, 6, 7), valid_lens [6, 2] raised RuntimeError",
        "BilinearAttention.values": "the forward on queries (1, 1, 3), keys (1, 1, 5), values (1, 1, 3), valid_lens None raised RuntimeError",
        "BilinearAttention.identities": "the output with W = AᵀB against dot products of Aq and Bk: row batch=0, query=0 is wrong",
    },
)
def forgot_W(self, queries, keys, values, valid_lens=None):
    """A plain dot product: fails as soon as d_q ≠ d_k."""
    self.attention_weights = masked_softmax(torch.bmm(queries, keys.transpose(1, 2)), valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "BilinearAttention",
    {
        "BilinearAttention": "the forward on queries (2, 4, 3), keys (2, 6, 5), values (2, 6, 7), valid_lens [6, 2] raised RuntimeError",
        "BilinearAttention.values": "the forward on queries (1, 1, 3), keys (1, 1, 5), values (1, 1, 3), valid_lens None raised RuntimeError",
        "BilinearAttention.identities": "the output with W = AᵀB against dot products of Aq and Bk: row batch=0, query=0 is wrong",
    },
)
def W_transposed(self, queries, keys, values, valid_lens=None):
    """qᵀ Wᵀ k: fails for d_q ≠ d_k, and is the wrong score when they are equal."""
    scores = torch.bmm(queries @ self.W.T, keys.transpose(1, 2))
    self.attention_weights = masked_softmax(scores, valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "BilinearAttention",
    {
        "BilinearAttention": "attention_weights: row batch=0, query=0 is wrong",
        "BilinearAttention.values": "attention_weights for B=2, m=3, n=5, valid_lens=None: row batch=0, query=0 is wrong",
    },
)
def bilinear_scaled(self, queries, keys, values, valid_lens=None):
    """Divides by √d_k as if it were scaled dot-product attention."""
    scores = torch.bmm(queries @ self.W, keys.transpose(1, 2)) / math.sqrt(keys.shape[-1])
    self.attention_weights = masked_softmax(scores, valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "BilinearAttention",
    {
        "BilinearAttention": "weights of padded keys: row query=0 is wrong",
        "BilinearAttention.identities": "the output with W = I against unscaled dot-product attention: row batch=0, query=1 is wrong",
    },
)
def bilinear_ignores_valid_lens(self, queries, keys, values, valid_lens=None):
    """A plain softmax: the padding gets weight."""
    self.attention_weights = torch.softmax(
        torch.bmm(queries @ self.W, keys.transpose(1, 2)), dim=-1
    )
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "BilinearAttention",
    {
        "BilinearAttention": "row sums of the weights: row batch=0 is wrong",
        "BilinearAttention.values": "attention_weights for B=2, m=3, n=5, valid_lens=None: row batch=0, query=0 is wrong",
    },
)
def bilinear_softmax_over_queries(self, queries, keys, values, valid_lens=None):
    """Masks the scores but normalises over the queries."""
    scores = torch.bmm(queries @ self.W, keys.transpose(1, 2))
    weights = masked_softmax(scores.transpose(1, 2), None).transpose(1, 2)
    if valid_lens is not None:
        lens = valid_lens[:, None] if valid_lens.dim() == 1 else valid_lens
        weights = weights * (torch.arange(keys.shape[1], device=keys.device) < lens[..., None])
    self.attention_weights = weights
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "BilinearAttention",
    {
        "BilinearAttention.dropout": "the output in eval mode with dropout=1 (dropout must be off): row batch=0, query=0 is wrong"
    },
)
def bilinear_dropout_left_on(self, queries, keys, values, valid_lens=None):
    """Functional dropout with training=True: still dropping weights in eval mode."""
    self.attention_weights = masked_softmax(
        torch.bmm(queries @ self.W, keys.transpose(1, 2)), valid_lens
    )
    dropped = torch.nn.functional.dropout(self.attention_weights, self.dropout.p, training=True)
    return torch.bmm(dropped, values)


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
    "DotProductAttention",
    {
        "DotProductAttention": "the output has dtype torch.float32, expected torch.float64",
        "DotProductAttention.values": "the output has dtype torch.float32, expected torch.float64",
    },
)
def dot_forced_float32(self, queries, keys, values, valid_lens=None):
    """Casts to float32: float64 inputs give float32 weights and outputs."""
    d = queries.shape[-1]
    scores = torch.bmm(queries.float(), keys.float().transpose(1, 2)) / math.sqrt(d)
    self.attention_weights = masked_softmax(scores, valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values.float())


@wrong(
    "DotProductAttention",
    {
        "DotProductAttention": "the forward (B=2, m=3, n=4, queries of size 5, keys 5, values 3): no gradient reached queries, keys. Every",
        "DotProductAttention.values": "the forward (B=3, m=5, n=2, queries of size 7, keys 7, values 4): no gradient reached queries, keys. Every",
    },
)
def dot_scores_without_grad(self, queries, keys, values, valid_lens=None):
    """Scores under torch.no_grad(): no gradient reaches the queries or the keys."""
    with torch.no_grad():
        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(queries.shape[-1])
    self.attention_weights = masked_softmax(scores, valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "DotProductAttention",
    {
        "DotProductAttention": "the output in train mode (p=0.5, B=4, m=6, n=8, values = identity so that the output is the weights): with",
        "DotProductAttention.dropout": "the output in train mode (p=0.3, B=6, m=7, n=9, values = identity so that the output is the weights): with",
    },
)
def dot_dropout_twice(self, queries, keys, values, valid_lens=None):
    """Dropout on the weights and again on the output."""
    scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(queries.shape[-1])
    self.attention_weights = masked_softmax(scores, valid_lens)
    return self.dropout(torch.bmm(self.dropout(self.attention_weights), values))


@wrong(
    "BilinearAttention",
    {
        "BilinearAttention": "the output has dtype torch.float32, expected torch.float64",
        "BilinearAttention.values": "the output has dtype torch.float32, expected torch.float64",
    },
)
def bilinear_forced_float32(self, queries, keys, values, valid_lens=None):
    """Casts to float32: float64 inputs give float32 weights and outputs."""
    scores = torch.bmm(queries.float() @ self.W.float(), keys.float().transpose(1, 2))
    self.attention_weights = masked_softmax(scores, valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values.float())


@wrong(
    "BilinearAttention",
    {
        "BilinearAttention": "the forward (B=2, m=3, n=4, queries of size 3, keys 4, values 3): no gradient reached W. Every parameter and",
        "BilinearAttention.values": "the forward (B=3, m=5, n=3, queries of size 4, keys 6, values 2): no gradient reached W. Every parameter and",
    },
)
def bilinear_detached_W(self, queries, keys, values, valid_lens=None):
    """W.detach(): the forward is right, but W never learns."""
    scores = torch.bmm(queries @ self.W.detach(), keys.transpose(1, 2))
    self.attention_weights = masked_softmax(scores, valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "BilinearAttention",
    {
        "BilinearAttention": "the output in train mode (p=0.5, B=4, m=6, n=8, values = identity so that the output is the weights): with",
        "BilinearAttention.dropout": "the output in train mode (p=0.3, B=6, m=7, n=9, values = identity so that the output is the weights): with",
    },
)
def bilinear_dropout_twice(self, queries, keys, values, valid_lens=None):
    """Dropout applied twice to the weights."""
    scores = torch.bmm(queries @ self.W, keys.transpose(1, 2))
    self.attention_weights = masked_softmax(scores, valid_lens)
    return torch.bmm(self.dropout(self.dropout(self.attention_weights)), values)


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
)
def distance_norms_without_grad(queries, keys):
    """The squared norms under torch.no_grad(): their gradient is lost."""
    with torch.no_grad():
        q2, k2 = (queries**2).sum(-1), (keys**2).sum(-1)
    return torch.bmm(queries, keys.transpose(1, 2)) - q2[:, :, None] / 2 - k2[:, None, :] / 2
