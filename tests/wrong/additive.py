"""Wrong answers to the exercise and questions of chapter 3, "Additive attention".

Each ``ConcatAttention`` answer is a ``forward``; the checks run it on a subclass of the
reference, so ``__init__`` (``self.query_size``, ``self.W``, ``self.w_v``, ``self.dropout``)
is the given one. Each answer to a question is the assignment a student would write.
"""

import torch

from solutions.masking import masked_softmax
from tests.wrong import wrong

# ----------------------------------------------------------------- ConcatAttention


@wrong(
    "ConcatAttention",
    {
        "ConcatAttention": "the forward on B=2, m=3, n=4, queries of size 6, keys 10, num_hiddens 4 made a tensor of shape (2, 3, 4, 16)",
        "ConcatAttention.memory": "made a tensor of shape (2, 5, 7, 16) (1120 numbers)",
    },
)
def concatenates_every_pair(self, queries, keys, values, valid_lens=None):
    """The formula as written: every query concatenated with every key, (B, m, n, d_q + d_k)."""
    B, m, n = queries.shape[0], queries.shape[1], keys.shape[1]
    pairs = torch.cat(
        [queries.unsqueeze(2).expand(B, m, n, -1), keys.unsqueeze(1).expand(B, m, n, -1)], dim=-1
    )
    scores = self.w_v(torch.tanh(self.W(pairs))).squeeze(-1)
    self.attention_weights = masked_softmax(scores, valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "ConcatAttention",
    {
        "ConcatAttention": "attention_weights in the worked example: row batch=0, query=0 is wrong",
        "ConcatAttention.values": "attention_weights for B=2, m=3, n=5, valid_lens=None: row batch=0, query=0 is wrong",
    },
)
def bias_added_twice(self, queries, keys, values, valid_lens=None):
    """F.linear with the bias for the queries and again for the keys: b counts twice."""
    W_q, W_k = self.W.weight[:, : self.query_size], self.W.weight[:, self.query_size :]
    q, k = (
        torch.nn.functional.linear(queries, W_q, self.W.bias),
        torch.nn.functional.linear(keys, W_k, self.W.bias),
    )
    features = torch.tanh(q.unsqueeze(2) + k.unsqueeze(1))
    self.attention_weights = masked_softmax(self.w_v(features).squeeze(-1), valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "ConcatAttention",
    {
        "ConcatAttention": "no gradient reached W.bias",
        "ConcatAttention.values": "attention_weights for B=2, m=3, n=5, valid_lens=None: row batch=0, query=0 is wrong",
    },
)
def bias_left_out(self, queries, keys, values, valid_lens=None):
    """Only the weight is split; the bias b is never added."""
    W_q, W_k = self.W.weight[:, : self.query_size], self.W.weight[:, self.query_size :]
    features = torch.tanh((queries @ W_q.T).unsqueeze(2) + (keys @ W_k.T).unsqueeze(1))
    self.attention_weights = masked_softmax(self.w_v(features).squeeze(-1), valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "ConcatAttention",
    {
        "ConcatAttention": "attention_weights in the worked example: row batch=0, query=0 is wrong",
        "ConcatAttention.values": "attention_weights for B=2, m=3, n=5, valid_lens=None: row batch=0, query=0 is wrong",
    },
)
def key_columns_first(self, queries, keys, values, valid_lens=None):
    """Reads W as [W_k W_q], the key's columns first: the concatenation is [q; k]."""
    key_size = keys.shape[-1]
    W_k, W_q = self.W.weight[:, :key_size], self.W.weight[:, key_size:]
    q = queries @ W_q.T + self.W.bias
    features = torch.tanh(q.unsqueeze(2) + (keys @ W_k.T).unsqueeze(1))
    self.attention_weights = masked_softmax(self.w_v(features).squeeze(-1), valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "ConcatAttention",
    {
        "ConcatAttention": "the output: row batch=0, query=0 is wrong",
        "ConcatAttention.values": "attention_weights for B=1, m=1, n=1, valid_lens=[0]: row batch=0, query=0 is wrong",
    },
)
def concat_ignores_valid_lens(self, queries, keys, values, valid_lens=None):
    """A plain softmax: the padding gets weight."""
    W_q, W_k = self.W.weight[:, : self.query_size], self.W.weight[:, self.query_size :]
    q = queries @ W_q.T + self.W.bias
    features = torch.tanh(q.unsqueeze(2) + (keys @ W_k.T).unsqueeze(1))
    self.attention_weights = torch.softmax(self.w_v(features).squeeze(-1), dim=-1)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "ConcatAttention",
    {
        "ConcatAttention": "no gradient reached W.weight",
        "ConcatAttention.values": "no gradient reached W.weight",
    },
)
def weight_cut_from_the_graph(self, queries, keys, values, valid_lens=None):
    """Splits self.W.weight.data: the values are right, but W never learns."""
    W = self.W.weight.data
    q = queries @ W[:, : self.query_size].T + self.W.bias
    features = torch.tanh(q.unsqueeze(2) + (keys @ W[:, self.query_size :].T).unsqueeze(1))
    self.attention_weights = masked_softmax(self.w_v(features).squeeze(-1), valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "ConcatAttention",
    {
        "ConcatAttention": "the output has dtype torch.float32, expected torch.float64",
        "ConcatAttention.values": "the output has dtype torch.float32, expected torch.float64",
    },
)
def concat_forced_float32(self, queries, keys, values, valid_lens=None):
    """Casts the parameters to float32: float64 inputs give float32 weights and outputs."""
    W, b = self.W.weight.float(), self.W.bias.float()
    q = queries.float() @ W[:, : self.query_size].T + b
    k = keys.float() @ W[:, self.query_size :].T
    scores = torch.tanh(q.unsqueeze(2) + k.unsqueeze(1)) @ self.w_v.weight.float()[0]
    self.attention_weights = masked_softmax(scores, valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values.float())


@wrong(
    "ConcatAttention",
    {
        "ConcatAttention": "(ratio 1, expected 0 or 2). Is dropout applied once, to the weights?",
        "ConcatAttention.dropout": "attention_weights in train mode (stored before dropout): row batch=0, query=0 is wrong",
    },
)
def concat_stores_dropped_weights(self, queries, keys, values, valid_lens=None):
    """Keeps the weights after dropout in attention_weights."""
    W_q, W_k = self.W.weight[:, : self.query_size], self.W.weight[:, self.query_size :]
    q = queries @ W_q.T + self.W.bias
    features = torch.tanh(q.unsqueeze(2) + (keys @ W_k.T).unsqueeze(1))
    self.attention_weights = self.dropout(
        masked_softmax(self.w_v(features).squeeze(-1), valid_lens)
    )
    return torch.bmm(self.attention_weights, values)


@wrong(
    "ConcatAttention",
    {
        "ConcatAttention": "the output in train mode (p=0.5, B=4, m=6, n=8, values = identity so that the output is the weights): with",
        "ConcatAttention.dropout": "the output in train mode (p=0.3, B=6, m=7, n=9, values = identity so that the output is the weights): with",
    },
    breaks="dropout",
)
def concat_dropout_twice(self, queries, keys, values, valid_lens=None):
    """Dropout applied twice: keeps (1 - p)² of the weights, scaled by 1 / (1 - p)²."""
    W_q, W_k = self.W.weight[:, : self.query_size], self.W.weight[:, self.query_size :]
    q = queries @ W_q.T + self.W.bias
    features = torch.tanh(q.unsqueeze(2) + (keys @ W_k.T).unsqueeze(1))
    self.attention_weights = masked_softmax(self.w_v(features).squeeze(-1), valid_lens)
    return torch.bmm(self.dropout(self.dropout(self.attention_weights)), values)


# ----------------------------------------------------------------- Check your understanding
# Every wrong letter of a multiple-choice question, and the slips of form a student makes.


@wrong(
    "quiz_3_1",
    {
        "quiz_3_1": "Hint: an untrained module has random W_q, W_k and w_v",
        "quiz_3_1.key": "an untrained module has random W_q, W_k and w_v, and different keys",
    },
)
def quiz_3_1_untrained_is_uniform():
    """Thinks an untrained module scores every key alike, as the toy example seemed to show."""
    answer_3_1 = "a"  # noqa: F841


@wrong(
    "quiz_3_1",
    {
        "quiz_3_1": "Hint: the mask looks at the keys' positions, not at their values",
        "quiz_3_1.key": "the mask depends on the keys' positions, not on their values",
    },
)
def quiz_3_1_mask_leaks():
    """Thinks different keys make the mask leak onto the padding."""
    answer_3_1 = "c"  # noqa: F841


@wrong(
    "quiz_3_1",
    {
        "quiz_3_1": "Hint: a softmax gives all the weight to one key only when its score",
        "quiz_3_1.key": "a softmax puts all the weight on one key only when its score is far",
    },
)
def quiz_3_1_softmax_as_argmax():
    """Takes the softmax for an argmax."""
    answer_3_1 = "d"  # noqa: F841


@wrong(
    "quiz_3_1",
    {
        "quiz_3_1": "answer_3_1 should be one of the letters 'a', 'b', 'c', 'd', got '(b)' (str)",
        "quiz_3_1.key": "got '(b)' (str)",
    },
)
def quiz_3_1_option_label():
    """Copies the option's label with its parentheses."""
    answer_3_1 = "(b)"  # noqa: F841


@wrong(
    "quiz_3_1",
    {
        "quiz_3_1": "answer_3_1: no answer yet: set it to one of 'a', 'b', 'c', 'd'",
        "quiz_3_1.key": "answer_3_1: no answer yet",
    },
)
def quiz_3_1_left_as_given():
    """Deletes the stub's raise but leaves answer_3_1 = ... as the notebook gives it."""
    answer_3_1 = ...  # noqa: F841


@wrong("quiz_3_2", {"quiz_3_2.key": "doubling m and n makes it four times larger"})
def quiz_3_2_both_double():
    """Thinks every peak grows like the inputs."""
    answer_3_2 = "a"  # noqa: F841


@wrong("quiz_3_2", {"quiz_3_2.key": "c stays, but n doubles, so each chunk doubles too"})
def quiz_3_2_chunks_fixed():
    """Thinks chunking bounds the memory whatever the sizes."""
    answer_3_2 = "c"  # noqa: F841


@wrong("quiz_3_2", {"quiz_3_2.key": "they do not grow with m, so doubling m and n only doubles"})
def quiz_3_2_chunks_quadruple():
    """Thinks chunking saves a constant factor only."""
    answer_3_2 = "d"  # noqa: F841


@wrong(
    "quiz_3_2",
    {
        "quiz_3_2": "answer_3_2 should be one of the letters 'a', 'b', 'c', 'd', got 2 (int)",
        "quiz_3_2.key": "letters 'a', 'b', 'c', 'd', got 2 (int)",
    },
)
def quiz_3_2_option_number():
    """Answers with the option's position instead of its letter."""
    answer_3_2 = 2  # noqa: F841


@wrong(
    "quiz_3_2",
    {
        "quiz_3_2": "answer_3_2 should be one of the letters 'a', 'b', 'c', 'd', got 'b, then c' (str)",
        "quiz_3_2.key": "got 'b, then c' (str)",
    },
)
def quiz_3_2_two_letters():
    """Hedges with two letters."""
    answer_3_2 = "b, then c"  # noqa: F841


@wrong("quiz_3_3", {"quiz_3_3.key": "answer_3_3 = 12288 is not the number of parameters: w_v has"})
def quiz_3_3_forgets_w_v():
    """Counts W_q and W_k only."""
    answer_3_3 = 64 * 64 + 64 * 128  # noqa: F841


@wrong(
    "quiz_3_3", {"quiz_3_3.key": "answer_3_3 = 12481 is not the number of parameters: the three"}
)
def quiz_3_3_counts_biases():
    """Gives each of the three layers a bias, as nn.Linear has by default."""
    answer_3_3 = (64 * 64 + 64) + (64 * 128 + 64) + (64 + 1)  # noqa: F841


@wrong("quiz_3_3", {"quiz_3_3.key": "the parameters do not depend on how many keys there are"})
def quiz_3_3_weights_per_key():
    """Thinks the attention has weights for each of the 36 source characters."""
    answer_3_3 = 64 * 64 + 36 * 64 * 128 + 64  # noqa: F841


@wrong("quiz_3_3", {"quiz_3_3.key": "answer_3_3 = 193 is not the number of parameters: count"})
def quiz_3_3_one_hidden_unit():
    """Adds the sizes instead of counting the entries of the matrices."""
    answer_3_3 = 64 + 128 + 1  # noqa: F841


@wrong(
    "quiz_3_3",
    {
        "quiz_3_3": "answer_3_3 should be a finite number, got '12,352' (str)",
        "quiz_3_3.key": "got '12,352' (str)",
    },
)
def quiz_3_3_written_as_text():
    """Writes the number as text, with a thousands separator."""
    answer_3_3 = "12,352"  # noqa: F841


# ----------------------------------------------------------------- property classes


@wrong(
    "ConcatAttention",
    {
        "ConcatAttention": "the forward (B=2, m=3, n=4, queries of size 3, keys 4, values 3): the gradient is not the derivative of the output. Along a",
        "ConcatAttention.values": "float64 attention_weights (B=3, m=4, n=6, queries of size 5, keys 6, values 2): row index (0, 0) is wrong (8 of 12 rows",
    },
    breaks="float64",
)
def concat_rounded_through_float32(self, queries, keys, values, valid_lens=None):
    """Right, but the weights and the output pass through float32 (a .float() left in): float64
    in and out, with float32's digits."""
    W_q = self.W.weight[:, : self.query_size]
    W_k = self.W.weight[:, self.query_size :]
    hidden = torch.tanh((queries @ W_q.T + self.W.bias).unsqueeze(2) + (keys @ W_k.T).unsqueeze(1))
    scores = self.w_v(hidden).squeeze(-1)
    self.attention_weights = masked_softmax(scores, valid_lens).float().to(queries.dtype)
    out = torch.bmm(self.dropout(self.attention_weights), values)
    return out.float().to(values.dtype)


@wrong(
    "ConcatAttention",
    {
        "ConcatAttention": "the forward (B=2, m=3, n=4, queries of size 3, keys 4, values 3): the gradient is not the derivative of the output. Along a",
        "ConcatAttention.values": "the forward (B=3, m=4, n=6, queries of size 5, keys 6, values 2): the gradient is not the derivative of the output. Along a",
    },
    breaks="gradient",
)
def concat_scores_half_detached(self, queries, keys, values, valid_lens=None):
    """Averages the scores with a detached copy: right values, half the gradient through them."""
    W_q = self.W.weight[:, : self.query_size]
    W_k = self.W.weight[:, self.query_size :]
    hidden = torch.tanh((queries @ W_q.T + self.W.bias).unsqueeze(2) + (keys @ W_k.T).unsqueeze(1))
    scores = self.w_v(hidden).squeeze(-1)
    scores = 0.5 * scores + 0.5 * scores.detach()
    self.attention_weights = masked_softmax(scores, valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "ConcatAttention",
    {
        "ConcatAttention": "add got a tensor of shape (4,) on the CPU together with tensors on the inputs' device. A tensor made without device=",
        "ConcatAttention.values": "add got a tensor of shape (6,) on the CPU together with tensors on the inputs' device. A tensor made without device=",
    },
    breaks="meta",
)
def concat_zero_scores_on_the_cpu(self, queries, keys, values, valid_lens=None):
    """Starts the scores from torch.zeros(n), made without device=: on the CPU whatever the
    inputs' device."""
    W_q = self.W.weight[:, : self.query_size]
    W_k = self.W.weight[:, self.query_size :]
    hidden = torch.tanh((queries @ W_q.T + self.W.bias).unsqueeze(2) + (keys @ W_k.T).unsqueeze(1))
    scores = torch.zeros(keys.shape[1], dtype=queries.dtype) + self.w_v(hidden).squeeze(-1)
    self.attention_weights = masked_softmax(scores, valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "ConcatAttention",
    {
        "ConcatAttention": "the forward on queries (2, 1, 20), keys (2, 10, 2), values (2, 10, 4), valid_lens [2, 6] modified its input queries in place: at",
        "ConcatAttention.dropout": "the forward on queries (2, 3, 4), keys (2, 5, 4), values (2, 5, 4), valid_lens [5, 2] modified its input queries in place: at",
        "ConcatAttention.memory": "the forward on queries (2, 5, 6), keys (2, 7, 10), values (2, 7, 3), valid_lens None modified its input queries in place: at",
        "ConcatAttention.values": "the forward on queries (1, 1, 3), keys (1, 1, 5), values (1, 1, 3), valid_lens None modified its input queries in place: at",
    },
    breaks="unchanged",
)
def concat_zeroes_everything(self, queries, keys, values, valid_lens=None):
    """Computes nothing: zeroes its inputs and lengths in place and returns zeros, so that a
    reference computed from the inputs after the call would be zeros too."""
    with torch.no_grad():
        for t in (queries, keys, values) + ((valid_lens,) if valid_lens is not None else ()):
            t.zero_()
    B, m, n = queries.shape[0], queries.shape[1], keys.shape[1]
    self.attention_weights = torch.zeros(B, m, n, dtype=queries.dtype, device=queries.device)
    return torch.zeros(B, m, values.shape[-1], dtype=values.dtype, device=values.device)
