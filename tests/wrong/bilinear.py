"""Wrong answers to Exercise 5.1 (``LowRankBilinearAttention``) and chapter 5's questions.

Each wrong answer to the module is a ``forward``; the checks run it on a subclass of the
reference, so ``__init__`` (``W_q``, ``W_k``, ``dropout``) is the given one. A wrong answer
to a question is the cell a student would write: it sets ``answer_5_<i>``.
"""

import torch

from solutions.masking import masked_softmax
from tests.wrong import wrong

NAME = "LowRankBilinearAttention"


@wrong(
    NAME,
    {
        NAME: "the forward made a tensor of shape (256, 256) (65536 numbers) for queries of size d_q=256",
        f"{NAME}.factorised": "the forward made a tensor of shape (300, 200) (60000 numbers)",
    },
)
def forms_the_full_W(self, queries, keys, values, valid_lens=None):
    """Right values, but W_qᵀ W_k is formed: the (d_q, d_k) matrix the factors exist to avoid."""
    W = self.W_q.weight.T @ self.W_k.weight  # (d_q, d_k)
    scores = torch.bmm(queries @ W, keys.transpose(1, 2))
    self.attention_weights = masked_softmax(scores, valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    NAME,
    {
        f"{NAME}.values": "attention_weights for B=2, m=3, n=5, valid_lens=None: row batch=0, query=0 is wrong",
    },
)
def scaled_by_sqrt_r(self, queries, keys, values, valid_lens=None):
    """Divides by √r, the transformer's habit: not the bilinear score qᵀ W_qᵀ W_k k."""
    q, k = self.W_q(queries), self.W_k(keys)
    scores = torch.bmm(q, k.transpose(1, 2)) / q.shape[-1] ** 0.5  # no math in that notebook
    self.attention_weights = masked_softmax(scores, valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    NAME,
    {
        NAME: "the forward on queries (2, 4, 3), keys (2, 6, 5), values (2, 6, 7), valid_lens [6, 2] raised RuntimeError",
        f"{NAME}.values": "the forward on queries (1, 1, 3), keys (1, 1, 5), values (1, 1, 3), valid_lens None raised RuntimeError",
    },
)
def weight_not_transposed(self, queries, keys, values, valid_lens=None):
    """queries @ W_q.weight: nn.Linear's weight is (out, in), so this needs d_q = r."""
    q, k = queries @ self.W_q.weight, keys @ self.W_k.weight
    self.attention_weights = masked_softmax(torch.bmm(q, k.transpose(1, 2)), valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    NAME,
    {
        NAME: "weights of padded keys: row query=0 is wrong",
        f"{NAME}.values": "attention_weights for B=1, m=1, n=1, valid_lens=[0]: row batch=0, query=0 is wrong",
    },
)
def low_rank_ignores_valid_lens(self, queries, keys, values, valid_lens=None):
    """A plain softmax: the padding gets weight."""
    scores = torch.bmm(self.W_q(queries), self.W_k(keys).transpose(1, 2))
    self.attention_weights = torch.softmax(scores, dim=-1)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    NAME,
    {
        NAME: "row sums of the weights: row batch=0 is wrong",
        f"{NAME}.values": "attention_weights for B=2, m=3, n=5, valid_lens=None: row batch=0, query=0 is wrong",
    },
)
def low_rank_softmax_over_queries(self, queries, keys, values, valid_lens=None):
    """Masks the padded keys but normalises each column (over the queries), not each row."""
    scores = torch.bmm(self.W_q(queries), self.W_k(keys).transpose(1, 2))
    weights = torch.softmax(scores, dim=1)
    if valid_lens is not None:
        lens = valid_lens[:, None] if valid_lens.dim() == 1 else valid_lens
        weights = weights * (torch.arange(keys.shape[1], device=keys.device) < lens[..., None])
    self.attention_weights = weights
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    NAME,
    {
        NAME: "(B=2, m=3, n=4, queries of size 3, keys 4, values 3): no gradient reached W_k.weight, keys",
        f"{NAME}.values": "(B=3, m=5, n=3, queries of size 4, keys 6, values 2): no gradient reached W_k.weight, keys",
    },
)
def keys_projected_without_grad(self, queries, keys, values, valid_lens=None):
    """The keys' projection under torch.no_grad(): W_k never learns."""
    with torch.no_grad():
        k = self.W_k(keys)
    scores = torch.bmm(self.W_q(queries), k.transpose(1, 2))
    self.attention_weights = masked_softmax(scores, valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    NAME,
    {
        NAME: "the output has dtype torch.float32, expected torch.float64",
        f"{NAME}.values": "the output has dtype torch.float32, expected torch.float64",
    },
)
def low_rank_forced_float32(self, queries, keys, values, valid_lens=None):
    """Casts the projections to float32: float64 inputs give float32 weights and outputs."""
    q, k = self.W_q(queries).float(), self.W_k(keys).float()
    self.attention_weights = masked_softmax(torch.bmm(q, k.transpose(1, 2)), valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values.float())


@wrong(
    NAME,
    {
        NAME: "the output in train mode (p=0.5, B=4, m=6, n=8, values = identity so that the output is the weights): with",
        f"{NAME}.dropout": "the output in train mode (p=0.3, B=6, m=7, n=9, values = identity so that the output is the weights): with",
    },
    breaks="dropout",
)
def low_rank_dropout_on_the_scores(self, queries, keys, values, valid_lens=None):
    """Dropout on the scores, before the softmax: the weights are not dropped and rescaled."""
    scores = torch.bmm(self.W_q(queries), self.W_k(keys).transpose(1, 2))
    self.attention_weights = masked_softmax(self.dropout(scores), valid_lens)
    return torch.bmm(self.attention_weights, values)


@wrong(
    NAME,
    {
        f"{NAME}.dropout": "the output in eval mode with dropout=1 (dropout must be off): row batch=0, query=0 is wrong"
    },
)
def low_rank_dropout_left_on(self, queries, keys, values, valid_lens=None):
    """Functional dropout with training=True: still dropping weights in eval mode."""
    scores = torch.bmm(self.W_q(queries), self.W_k(keys).transpose(1, 2))
    self.attention_weights = masked_softmax(scores, valid_lens)
    dropped = torch.nn.functional.dropout(self.attention_weights, self.dropout.p, training=True)
    return torch.bmm(dropped, values)


# ----------------------------------------------------------------- check your understanding


@wrong("quiz_5_1", {"quiz_5_1.key": "softmax is unchanged by adding a constant to a row, not by"})
def softmax_is_scale_invariant():
    """The misconception: multiplying every score by 10 keeps the weights."""
    answer_5_1 = "a"  # noqa: F841


@wrong(
    "quiz_5_1",
    {
        "quiz_5_1": "Hint: for d = 100, dot-product attention divides every score by 10",
        "quiz_5_1.key": "dot-product attention with d = 100 divides it by 10",
    },
)
def ten_times_identity_is_scaled_dot_product():
    """Takes W = 10 I for the 1/√d of d = 100: a factor of 10 where that divides by 10."""
    answer_5_1 = "d"  # noqa: F841


@wrong("quiz_5_2", {"quiz_5_2.key": "answer_5_2 is 64: the factors W_q and W_k hold r·(d_q + d_k)"})
def rank_of_the_full_size():
    """Counts one factor only: 64 r = 4096 at r = 64."""
    answer_5_2 = 64  # noqa: F841


@wrong("quiz_5_3", {"quiz_5_3.key": "a (3, 5) matrix has rank at most min(3, 5) = 3"})
def one_rank_per_key_entry():
    """Takes the larger size: rank 5, but a (3, 5) matrix cannot have rank above 3."""
    answer_5_3 = "c"  # noqa: F841


# ----------------------------------------------------------------- property classes


@wrong(
    "LowRankBilinearAttention",
    {
        "LowRankBilinearAttention": "the forward (B=2, m=3, n=4, queries of size 3, keys 4, values 3): the gradient is not the derivative of the output. Along a",
        "LowRankBilinearAttention.values": "float64 attention_weights (B=3, m=5, n=3, queries of size 4, keys 6, values 2): row index (0, 0) is wrong (10 of 15 rows",
    },
    breaks="float64",
)
def low_rank_rounded_through_float32(self, queries, keys, values, valid_lens=None):
    """Right, but the weights and the output pass through float32 (a .float() left in): float64
    in and out, with float32's digits."""
    scores = torch.bmm(self.W_q(queries), self.W_k(keys).transpose(1, 2))
    self.attention_weights = masked_softmax(scores, valid_lens).float().to(queries.dtype)
    out = torch.bmm(self.dropout(self.attention_weights), values)
    return out.float().to(values.dtype)


@wrong(
    "LowRankBilinearAttention",
    {
        "LowRankBilinearAttention": "the forward (B=2, m=3, n=4, queries of size 3, keys 4, values 3): the gradient is not the derivative of the output. Along a",
        "LowRankBilinearAttention.values": "the forward (B=3, m=5, n=3, queries of size 4, keys 6, values 2): the gradient is not the derivative of the output. Along a",
    },
    breaks="gradient",
)
def low_rank_scores_half_detached(self, queries, keys, values, valid_lens=None):
    """Averages the scores with a detached copy: right values, half the gradient through them."""
    scores = torch.bmm(self.W_q(queries), self.W_k(keys).transpose(1, 2))
    scores = 0.5 * scores + 0.5 * scores.detach()
    self.attention_weights = masked_softmax(scores, valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "LowRankBilinearAttention",
    {
        "LowRankBilinearAttention": "add got a tensor of shape (4,) on the CPU together with tensors on the inputs' device. A tensor made without device=",
        "LowRankBilinearAttention.values": "add got a tensor of shape (3,) on the CPU together with tensors on the inputs' device. A tensor made without device=",
    },
    breaks="meta",
)
def low_rank_zero_scores_on_the_cpu(self, queries, keys, values, valid_lens=None):
    """Starts the scores from torch.zeros(n), made without device=: on the CPU whatever the
    inputs' device."""
    scores = torch.bmm(self.W_q(queries), self.W_k(keys).transpose(1, 2))
    scores = torch.zeros(keys.shape[1], dtype=queries.dtype) + scores
    self.attention_weights = masked_softmax(scores, valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "LowRankBilinearAttention",
    {
        "LowRankBilinearAttention": "the forward on queries (2, 4, 3), keys (2, 6, 5), values (2, 6, 7), valid_lens [6, 2] modified its input queries in place: at",
        "LowRankBilinearAttention.dropout": "the forward on queries (2, 3, 4), keys (2, 5, 4), values (2, 5, 4), valid_lens [5, 2] modified its input queries in place: at",
        "LowRankBilinearAttention.factorised": "the forward on queries (3, 7, 8), keys (3, 6, 9), values (3, 6, 2), valid_lens None modified its input queries in place: at",
        "LowRankBilinearAttention.values": "the forward on queries (1, 1, 3), keys (1, 1, 5), values (1, 1, 3), valid_lens None modified its input queries in place: at",
    },
    breaks="unchanged",
)
def low_rank_zeroes_everything(self, queries, keys, values, valid_lens=None):
    """Computes nothing: zeroes its inputs and lengths in place and returns zeros, so that a
    reference computed from the inputs after the call would be zeros too."""
    with torch.no_grad():
        for t in (queries, keys, values) + ((valid_lens,) if valid_lens is not None else ()):
            t.zero_()
    B, m, n = queries.shape[0], queries.shape[1], keys.shape[1]
    self.attention_weights = torch.zeros(B, m, n, dtype=queries.dtype, device=queries.device)
    return torch.zeros(B, m, values.shape[-1], dtype=values.dtype, device=values.device)
