"""Wrong answers to the scoring-function exercises (chapters 3 to 5).

For the attention modules each wrong answer is a ``forward``; the checks run it
on a subclass of the reference, so ``__init__`` (the parameters) is the given one.
"""

import torch

from solutions.masking import masked_softmax
from tests.wrong import wrong

# ----------------------------------------------------------------- AdditiveAttention


@wrong(
    "AdditiveAttention",
    {
        "AdditiveAttention.values": "attention_weights for B=2, m=3, n=5, valid_lens=None: row batch=0, query=0 is wrong"
    },
)
def forgot_tanh(self, queries, keys, values, valid_lens=None):
    """No tanh: the score becomes linear, w_vᵀ(W_q q + W_k k)."""
    features = self.W_q(queries).unsqueeze(2) + self.W_k(keys).unsqueeze(1)
    self.attention_weights = masked_softmax(self.w_v(features).squeeze(-1), valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "AdditiveAttention",
    {
        "AdditiveAttention.values": "attention_weights for B=2, m=3, n=5, valid_lens=None: row batch=0, query=0 is wrong"
    },
)
def relu_instead_of_tanh(self, queries, keys, values, valid_lens=None):
    """ReLU where the score has tanh."""
    features = torch.relu(self.W_q(queries).unsqueeze(2) + self.W_k(keys).unsqueeze(1))
    self.attention_weights = masked_softmax(self.w_v(features).squeeze(-1), valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "AdditiveAttention",
    {
        "AdditiveAttention": "the output: row batch=0, query=0 is wrong",
        "AdditiveAttention.values": "attention_weights for B=1, m=1, n=1, valid_lens=[0]: row batch=0, query=0 is wrong",
    },
)
def additive_ignores_valid_lens(self, queries, keys, values, valid_lens=None):
    """A plain softmax: the padding gets weight."""
    features = torch.tanh(self.W_q(queries).unsqueeze(2) + self.W_k(keys).unsqueeze(1))
    self.attention_weights = torch.softmax(self.w_v(features).squeeze(-1), dim=-1)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "AdditiveAttention",
    {
        "AdditiveAttention": "attention_weights has shape (2, 10, 1), expected (2, 1, 10)",
        "AdditiveAttention.values": "attention_weights has shape (2, 5, 3), expected (2, 3, 5)",
    },
)
def additive_keys_and_queries_swapped(self, queries, keys, values, valid_lens=None):
    """Broadcasts (B, 1, m, h) + (B, n, 1, h): scores come out (B, n, m)."""
    features = torch.tanh(self.W_q(queries).unsqueeze(1) + self.W_k(keys).unsqueeze(2))
    self.attention_weights = masked_softmax(self.w_v(features).squeeze(-1), valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "AdditiveAttention",
    {
        "AdditiveAttention.dropout": "the output in eval mode with dropout=1 (dropout must be off): row batch=0, query=0 is wrong"
    },
)
def additive_dropout_left_on(self, queries, keys, values, valid_lens=None):
    """Functional dropout with training=True: still dropping weights in eval mode."""
    features = torch.tanh(self.W_q(queries).unsqueeze(2) + self.W_k(keys).unsqueeze(1))
    self.attention_weights = masked_softmax(self.w_v(features).squeeze(-1), valid_lens)
    dropped = torch.nn.functional.dropout(self.attention_weights, self.dropout.p, training=True)
    return torch.bmm(dropped, values)


@wrong(
    "AdditiveAttention",
    {
        "AdditiveAttention.dropout": "attention_weights in train mode (stored before dropout): row batch=0, query=0 is wrong"
    },
)
def additive_stores_dropped_weights(self, queries, keys, values, valid_lens=None):
    """Keeps the weights after dropout in attention_weights."""
    features = torch.tanh(self.W_q(queries).unsqueeze(2) + self.W_k(keys).unsqueeze(1))
    self.attention_weights = self.dropout(
        masked_softmax(self.w_v(features).squeeze(-1), valid_lens)
    )
    return torch.bmm(self.attention_weights, values)


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
    "AdditiveAttention",
    {
        "AdditiveAttention": "the output has dtype torch.float32, expected torch.float64",
        "AdditiveAttention.values": "the output has dtype torch.float32, expected torch.float64",
    },
)
def additive_forced_float32(self, queries, keys, values, valid_lens=None):
    """Casts the projections to float32: float64 inputs give float32 weights and outputs."""
    features = torch.tanh(
        self.W_q(queries).float().unsqueeze(2) + self.W_k(keys).float().unsqueeze(1)
    )
    scores = (features @ self.w_v.weight.float().T).squeeze(-1)
    self.attention_weights = masked_softmax(scores, valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values.float())


@wrong(
    "AdditiveAttention",
    {
        "AdditiveAttention": "the forward (B=2, m=3, n=4, queries of size 3, keys 4, values 3): no gradient reached W_q.weight. Every",
        "AdditiveAttention.values": "the forward (B=3, m=4, n=6, queries of size 5, keys 6, values 2): no gradient reached W_q.weight. Every",
    },
)
def additive_detached_weights(self, queries, keys, values, valid_lens=None):
    """Uses W_q.weight.detach(): the forward is right, but W_q never learns."""
    projected = queries @ self.W_q.weight.detach().T
    features = torch.tanh(projected.unsqueeze(2) + self.W_k(keys).unsqueeze(1))
    self.attention_weights = masked_softmax(self.w_v(features).squeeze(-1), valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "AdditiveAttention",
    {
        "AdditiveAttention": "the output in train mode (p=0.5, B=4, m=6, n=8, values = identity so that the output is the weights): with",
        "AdditiveAttention.dropout": "the output in train mode (p=0.3, B=6, m=7, n=9, values = identity so that the output is the weights): with",
    },
)
def additive_dropout_twice(self, queries, keys, values, valid_lens=None):
    """Dropout applied twice: keeps (1 - p)² of the weights, scaled by 1 / (1 - p)²."""
    features = torch.tanh(self.W_q(queries).unsqueeze(2) + self.W_k(keys).unsqueeze(1))
    self.attention_weights = masked_softmax(self.w_v(features).squeeze(-1), valid_lens)
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
