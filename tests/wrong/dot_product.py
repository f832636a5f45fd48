"""Wrong answers to the chapter "Scaled dot-product attention": cosine attention (4.4), the quiz.

For ``CosineAttention`` each wrong answer is a ``forward``; the checks run it on a subclass of
the reference, so ``__init__`` (``self.scale``, ``self.dropout``) is the given one. For a
question, the body is what a student would write in the answer cell.
"""

import math

import torch
import torch.nn.functional as F

from solutions.masking import masked_softmax
from tests.wrong import wrong

# ----------------------------------------------------------------- CosineAttention


@wrong(
    "CosineAttention",
    {
        "CosineAttention": "attention_weights: row batch=0, query=0 is wrong",
        "CosineAttention.values": "attention_weights for B=2, m=3, n=5, valid_lens=None: row batch=0, query=0 is wrong",
    },
)
def cosine_forgot_to_normalize(self, queries, keys, values, valid_lens=None):
    """s · qᵀk: a scaled dot product, lengths still count."""
    scores = self.scale * torch.bmm(queries, keys.transpose(1, 2))
    self.attention_weights = masked_softmax(scores, valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "CosineAttention",
    {
        "CosineAttention.values": "attention_weights for B=2, m=3, n=5, valid_lens=None: row batch=0, query=0 is wrong",
        "CosineAttention.builtin": "the output against scaled_dot_product_attention(q/‖q‖, k/‖k‖, v, scale=s): row batch=0, query=0 is wrong",
    },
)
def cosine_keys_only(self, queries, keys, values, valid_lens=None):
    """Normalises the keys but not the queries: a long query still sharpens its row."""
    k = F.normalize(keys, dim=-1)
    scores = self.scale * torch.bmm(queries, k.transpose(1, 2))
    self.attention_weights = masked_softmax(scores, valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "CosineAttention",
    {
        "CosineAttention": "attention_weights: row batch=0, query=0 is wrong",
        "CosineAttention.values": "attention_weights for B=2, m=3, n=5, valid_lens=None: row batch=0, query=0 is wrong",
    },
)
def cosine_normalized_over_positions(self, queries, keys, values, valid_lens=None):
    """F.normalize along dim=1, the positions, instead of the features."""
    q, k = F.normalize(queries, dim=1), F.normalize(keys, dim=1)
    scores = self.scale * torch.bmm(q, k.transpose(1, 2))
    self.attention_weights = masked_softmax(scores, valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "CosineAttention",
    {
        "CosineAttention": "attention_weights: row batch=0, query=0 is wrong",
        "CosineAttention.values": "attention_weights for B=2, m=3, n=5, valid_lens=None: row batch=0, query=0 is wrong",
    },
)
def cosine_still_divided_by_sqrt_d(self, queries, keys, values, valid_lens=None):
    """Keeps the 1/√d of dot-product attention on top of the learned scale."""
    q, k = F.normalize(queries, dim=-1), F.normalize(keys, dim=-1)
    scores = self.scale * torch.bmm(q, k.transpose(1, 2)) / math.sqrt(queries.shape[-1])
    self.attention_weights = masked_softmax(scores, valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "CosineAttention",
    {
        "CosineAttention": "has a non-finite value nan at index (0, 0, 0)",
        "CosineAttention.values": "has a non-finite value nan at index (0, 0, 0)",
    },
)
def cosine_divides_by_the_norm(self, queries, keys, values, valid_lens=None):
    """q / ‖q‖ with no guard: a zero query or key gives 0/0 = nan."""
    q = queries / torch.linalg.vector_norm(queries, dim=-1, keepdim=True)
    k = keys / torch.linalg.vector_norm(keys, dim=-1, keepdim=True)
    scores = self.scale * torch.bmm(q, k.transpose(1, 2))
    self.attention_weights = masked_softmax(scores, valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "CosineAttention",
    {
        "CosineAttention": "the gradient of scale has nan or inf, although the output is finite",
        "CosineAttention.values": "the gradient of scale has nan or inf, although the output is finite",
    },
)
def cosine_nan_to_num(self, queries, keys, values, valid_lens=None):
    """Replaces the nan of 0/0 after the fact: the forward is right, the backward still nan."""
    q = queries / torch.linalg.vector_norm(queries, dim=-1, keepdim=True)
    k = keys / torch.linalg.vector_norm(keys, dim=-1, keepdim=True)
    scores = torch.nan_to_num(self.scale * torch.bmm(q, k.transpose(1, 2)), nan=0.0)
    self.attention_weights = masked_softmax(scores, valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "CosineAttention",
    {
        "CosineAttention": "(B=2, m=3, n=4, queries of size 5, keys 5, values 3): no gradient reached scale",
        "CosineAttention.values": "(B=3, m=5, n=2, queries of size 7, keys 7, values 4): no gradient reached scale",
    },
)
def cosine_scale_as_a_number(self, queries, keys, values, valid_lens=None):
    """self.scale.item(): the right scores, but the scale can never be learned."""
    q, k = F.normalize(queries, dim=-1), F.normalize(keys, dim=-1)
    scores = self.scale.item() * torch.bmm(q, k.transpose(1, 2))
    self.attention_weights = masked_softmax(scores, valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "CosineAttention",
    {
        "CosineAttention.values": "attention_weights for B=1, m=1, n=1, valid_lens=[0]: row batch=0, query=0 is wrong",
        "CosineAttention.builtin": "the output against scaled_dot_product_attention(q/‖q‖, k/‖k‖, v, scale=s): row batch=0, query=1 is wrong",
    },
)
def cosine_ignores_valid_lens(self, queries, keys, values, valid_lens=None):
    """A plain softmax: the padding gets weight."""
    q, k = F.normalize(queries, dim=-1), F.normalize(keys, dim=-1)
    self.attention_weights = torch.softmax(self.scale * torch.bmm(q, k.transpose(1, 2)), dim=-1)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "CosineAttention",
    {
        "CosineAttention": "at (0, 0, 0) the weight 0.165487 became 0.165487 (ratio 1, expected 0 or 2)",
        "CosineAttention.dropout": "the output in train mode with dropout=1 (every weight dropped): row batch=0, query=0 is wrong",
    },
    breaks="dropout",
)
def cosine_forgot_dropout(self, queries, keys, values, valid_lens=None):
    """No dropout at all: training and evaluation give the same output."""
    q, k = F.normalize(queries, dim=-1), F.normalize(keys, dim=-1)
    self.attention_weights = masked_softmax(
        self.scale * torch.bmm(q, k.transpose(1, 2)), valid_lens
    )
    return torch.bmm(self.attention_weights, values)


# ----------------------------------------------------------------- check your understanding


@wrong(
    "quiz_4_1",
    {
        "quiz_4_1.key": "answer_4_1 = 1 is not the standard deviation",
    },
)
def quiz_4_1_scaling_always_gives_one():
    """Believes dividing by √d always gives unit variance, whatever the entries."""
    answer_4_1 = 1.0  # noqa: F841


@wrong(
    "quiz_4_1",
    {
        "quiz_4_1.key": "answer_4_1 = 16 is not the standard deviation",
    },
)
def quiz_4_1_variance_not_std():
    """Gives the variance, 16, where the standard deviation is asked."""
    answer_4_1 = 16  # noqa: F841


@wrong(
    "quiz_4_2",
    {
        "quiz_4_2.key": "answer_4_2: that change alters the output",
    },
)
def quiz_4_2_shift_the_values():
    """Thinks the weights absorb a shift of the values."""
    answer_4_2 = "d"  # noqa: F841


@wrong(
    "quiz_4_2",
    {
        "quiz_4_2": "should be one of the letters 'a', 'b', 'c', 'd', got 'adding c to every key'",
    },
)
def quiz_4_2_not_a_letter():
    """Answers with the change, not its letter."""
    answer_4_2 = "adding c to every key"  # noqa: F841


# ----------------------------------------------------------------- property classes


@wrong(
    "CosineAttention",
    {
        "CosineAttention": "the forward (B=2, m=3, n=4, queries of size 5, keys 5, values 3): the gradient is not the derivative of the output. Along a",
        "CosineAttention.values": "float64 attention_weights (B=3, m=5, n=2, queries of size 7, keys 7, values 4): row index (2, 0) is wrong (4 of 15 rows",
    },
    breaks="float64",
)
def cosine_rounded_through_float32(self, queries, keys, values, valid_lens=None):
    """Right, but the weights and the output pass through float32 (a .float() left in): float64
    in and out, with float32's digits."""
    q, k = F.normalize(queries, dim=-1), F.normalize(keys, dim=-1)
    scores = self.scale * torch.bmm(q, k.transpose(1, 2))
    self.attention_weights = masked_softmax(scores, valid_lens).float().to(queries.dtype)
    out = torch.bmm(self.dropout(self.attention_weights), values)
    return out.float().to(values.dtype)


@wrong(
    "CosineAttention",
    {
        "CosineAttention": "the forward (B=2, m=3, n=4, queries of size 5, keys 5, values 3): the gradient is not the derivative of the output. Along a",
        "CosineAttention.values": "the forward (B=3, m=5, n=2, queries of size 7, keys 7, values 4): the gradient is not the derivative of the output. Along a",
    },
    breaks="gradient",
)
def cosine_scores_half_detached(self, queries, keys, values, valid_lens=None):
    """Averages the scores with a detached copy: right values, half the gradient through them."""
    q, k = F.normalize(queries, dim=-1), F.normalize(keys, dim=-1)
    scores = self.scale * torch.bmm(q, k.transpose(1, 2))
    scores = 0.5 * scores + 0.5 * scores.detach()
    self.attention_weights = masked_softmax(scores, valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "CosineAttention",
    {
        "CosineAttention": "maximum got a tensor of shape (1,) on the CPU together with tensors on the inputs' device. A tensor made without device=",
        "CosineAttention.values": "maximum got a tensor of shape (1,) on the CPU together with tensors on the inputs' device. A tensor made without device=",
    },
    breaks="meta",
)
def cosine_floor_on_the_cpu(self, queries, keys, values, valid_lens=None):
    """Keeps the norms from 0 with torch.full((1,), 1e-12), made without device=: on the CPU
    whatever the inputs' device."""
    floor = torch.full((1,), 1e-12, dtype=queries.dtype)
    q = queries / torch.maximum(torch.linalg.vector_norm(queries, dim=-1, keepdim=True), floor)
    k = keys / torch.maximum(torch.linalg.vector_norm(keys, dim=-1, keepdim=True), floor)
    scores = self.scale * torch.bmm(q, k.transpose(1, 2))
    self.attention_weights = masked_softmax(scores, valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "CosineAttention",
    {
        "CosineAttention": "the forward on queries (1, 1, 2), keys (1, 3, 2), values (1, 3, 3), valid_lens None modified its input queries in place: at",
        "CosineAttention.builtin": "the forward on queries (3, 7, 16), keys (3, 9, 16), values (3, 9, 16), valid_lens of shape (3, 7) modified its input queries in",
        "CosineAttention.dropout": "the forward on queries (2, 3, 4), keys (2, 5, 4), values (2, 5, 4), valid_lens [5, 2] modified its input queries in place: at",
        "CosineAttention.values": "the forward on queries (1, 1, 6), keys (1, 1, 6), values (1, 1, 3), valid_lens None modified its input queries in place: at",
    },
    breaks="unchanged",
)
def cosine_zeroes_everything(self, queries, keys, values, valid_lens=None):
    """Computes nothing: zeroes its inputs and lengths in place and returns zeros, so that a
    reference computed from the inputs after the call would be zeros too."""
    with torch.no_grad():
        for t in (queries, keys, values) + ((valid_lens,) if valid_lens is not None else ()):
            t.zero_()
    B, m, n = queries.shape[0], queries.shape[1], keys.shape[1]
    self.attention_weights = torch.zeros(B, m, n, dtype=queries.dtype, device=queries.device)
    return torch.zeros(B, m, values.shape[-1], dtype=values.dtype, device=values.device)


@wrong(
    "CosineAttention",
    {
        "CosineAttention": "the gradient of queries at row 1, a zero vector, is",
        "CosineAttention.values": "the gradient of queries at row 1, a zero vector, is",
    },
)
def cosine_gradient_explodes_at_zero(self, queries, keys, values, valid_lens=None):
    """F.normalize with its ε = 10⁻¹² (the chapter's first reference): no nan, the right
    values, but a gradient of about 10¹² at a zero query or key."""
    q, k = F.normalize(queries, dim=-1), F.normalize(keys, dim=-1)
    scores = self.scale * torch.bmm(q, k.transpose(1, 2))
    self.attention_weights = masked_softmax(scores, valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values)
