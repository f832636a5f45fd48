"""Wrong answers to the exercises of the chapter "Self-attention and positional encoding"."""

import math

import torch

from solutions.masking import masked_softmax
from tests.wrong import wrong

# ----------------------------------------------------------------- SelfAttention


@wrong(
    "SelfAttention",
    {
        "SelfAttention.values": "attention_weights for B=2, N=4, bias=False, valid_lens=None: row batch=0, query=0 is wrong"
    },
)
def keys_from_the_query_projection(self, X, valid_lens=None):
    """Uses W_q for the keys too, so every score is a squared norm-like qᵢ·qⱼ."""
    queries, keys, values = self.W_q(X), self.W_q(X), self.W_v(X)
    return self.attention(queries, keys, values, valid_lens)


@wrong(
    "SelfAttention",
    {
        "SelfAttention": "the output has shape (2, 5, 6), expected (2, 5, 3)",
        "SelfAttention.values": "the output has shape (1, 1, 5), expected (1, 1, 4)",
    },
)
def values_not_projected(self, X, valid_lens=None):
    """Attends over X itself instead of X W_vᵀ."""
    return self.attention(self.W_q(X), self.W_k(X), X, valid_lens)


@wrong(
    "SelfAttention",
    {
        "SelfAttention.values": "attention_weights for B=2, N=4, bias=False, valid_lens=None: row batch=0, query=0 is wrong"
    },
)
def scaled_by_the_input_size(self, X, valid_lens=None):
    """Divides the scores by √D_X instead of √D_Q."""
    queries, keys, values = self.W_q(X), self.W_k(X), self.W_v(X)
    scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(X.shape[-1])
    self.attention.attention_weights = masked_softmax(scores, valid_lens)
    return torch.bmm(self.attention.dropout(self.attention.attention_weights), values)


@wrong(
    "SelfAttention",
    {
        "SelfAttention.values": "attention_weights for B=2, N=4, bias=False, valid_lens=None: row batch=0, query=0 is wrong"
    },
)
def queries_and_keys_swapped(self, X, valid_lens=None):
    """Scores K Qᵀ: row i holds kᵢ·qⱼ, the transpose of the right scores."""
    queries, keys, values = self.W_q(X), self.W_k(X), self.W_v(X)
    return self.attention(keys, queries, values, valid_lens)


@wrong(
    "SelfAttention",
    {
        "SelfAttention": "weights of padded keys: row query=0 is wrong",
        "SelfAttention.values": "attention_weights for B=1, N=1, bias=False, valid_lens=[0]: row batch=0, query=0 is wrong",
    },
)
def padding_ignored(self, X, valid_lens=None):
    """Never passes valid_lens on, so padded positions get weight."""
    return self.attention(self.W_q(X), self.W_k(X), self.W_v(X))


@wrong(
    "SelfAttention",
    {
        "SelfAttention.values": "attention_weights for B=2, N=4, bias=False, valid_lens=None: row batch=0, query=0 is wrong"
    },
)
def softmax_over_queries(self, X, valid_lens=None):
    """Normalises each column (over the queries) instead of each row."""
    queries, keys, values = self.W_q(X), self.W_k(X), self.W_v(X)
    scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(queries.shape[-1])
    weights = masked_softmax(scores.transpose(1, 2), valid_lens).transpose(1, 2)
    self.attention.attention_weights = weights
    return torch.bmm(self.attention.dropout(weights), values)


@wrong(
    "SelfAttention",
    {
        "SelfAttention.dropout": "the output in eval mode with dropout=1 (dropout must be off): row batch=0, query=0 is wrong"
    },
)
def dropout_always_on(self, X, valid_lens=None):
    """Functional dropout with training=True: still dropping weights in eval mode."""
    queries, keys, values = self.W_q(X), self.W_k(X), self.W_v(X)
    scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(queries.shape[-1])
    self.attention.attention_weights = masked_softmax(scores, valid_lens)
    p = self.attention.dropout.p
    dropped = torch.nn.functional.dropout(self.attention.attention_weights, p, training=True)
    return torch.bmm(dropped, values)


# ----------------------------------------------------------------- positional_encoding


@wrong(
    "positional_encoding",
    {
        "positional_encoding": "positional_encoding(3, 4): row position=0 is wrong",
        "positional_encoding.formula": "positional_encoding(1, 2): row position=0 is wrong",
    },
)
def sine_and_cosine_swapped(max_len, num_hiddens):
    """Cosines in the even columns, sines in the odd ones."""
    positions = torch.arange(max_len, dtype=torch.float32)[:, None]
    angles = positions / torch.pow(10000.0, torch.arange(0, num_hiddens, 2) / num_hiddens)
    P = torch.empty(max_len, num_hiddens)
    P[:, 0::2], P[:, 1::2] = torch.cos(angles), torch.sin(angles)
    return P


@wrong(
    "positional_encoding",
    {
        "positional_encoding": "positional_encoding(3, 4): row position=1 is wrong",
        "positional_encoding.formula": "positional_encoding(50, 8): row position=1 is wrong",
    },
)
def exponent_j_over_d(max_len, num_hiddens):
    """Uses 10000^(j/d) for pair j, not 10000^(2j/d): frequencies fall too slowly."""
    positions = torch.arange(max_len, dtype=torch.float32)[:, None]
    angles = positions / torch.pow(10000.0, torch.arange(num_hiddens // 2) / num_hiddens)
    P = torch.empty(max_len, num_hiddens)
    P[:, 0::2], P[:, 1::2] = torch.sin(angles), torch.cos(angles)
    return P


@wrong(
    "positional_encoding",
    {
        "positional_encoding.formula": "positional_encoding(50, 8): row position=0 is wrong",
        "positional_encoding.properties": "P[0] (sin 0, cos 0, …): the values are wrong",
    },
)
def halves_not_interleaved(max_len, num_hiddens):
    """All sines in the first half of the columns, all cosines in the second."""
    positions = torch.arange(max_len, dtype=torch.float32)[:, None]
    angles = positions / torch.pow(10000.0, torch.arange(0, num_hiddens, 2) / num_hiddens)
    return torch.cat([torch.sin(angles), torch.cos(angles)], dim=1)


@wrong(
    "positional_encoding",
    {
        "positional_encoding": "positional_encoding(3, 4): row position=0 is wrong",
        "positional_encoding.properties": "P[0] (sin 0, cos 0, …): the values are wrong",
    },
)
def positions_from_one(max_len, num_hiddens):
    """Counts positions from 1, so P[0] is not (0, 1, 0, 1, …)."""
    positions = torch.arange(1, max_len + 1, dtype=torch.float32)[:, None]
    angles = positions / torch.pow(10000.0, torch.arange(0, num_hiddens, 2) / num_hiddens)
    P = torch.empty(max_len, num_hiddens)
    P[:, 0::2], P[:, 1::2] = torch.sin(angles), torch.cos(angles)
    return P


@wrong(
    "positional_encoding",
    {
        "positional_encoding.formula": "positional_encoding(7, 2): row position=1 is wrong",
        "positional_encoding.properties": "sin² + cos² of each pair of columns: row position=1 is wrong",
    },
)
def own_frequency_for_the_cosine(max_len, num_hiddens):
    """Gives column 2j+1 the exponent (2j+1)/d, so a pair no longer shares a frequency."""
    positions = torch.arange(max_len, dtype=torch.float32)[:, None]
    angles = positions / torch.pow(10000.0, torch.arange(num_hiddens) / num_hiddens)
    P = torch.sin(angles)
    P[:, 1::2] = torch.cos(angles[:, 1::2])
    return P


@wrong(
    "positional_encoding",
    {
        "positional_encoding": "positional_encoding(3, 4): row position=1 is wrong",
        "positional_encoding.formula": "positional_encoding(50, 8): row position=1 is wrong",
    },
)
def multiplied_by_the_power(max_len, num_hiddens):
    """i · 10000^(2j/d) instead of i / 10000^(2j/d)."""
    positions = torch.arange(max_len, dtype=torch.float32)[:, None]
    angles = positions * torch.pow(10000.0, torch.arange(0, num_hiddens, 2) / num_hiddens)
    P = torch.empty(max_len, num_hiddens)
    P[:, 0::2], P[:, 1::2] = torch.sin(angles), torch.cos(angles)
    return P


@wrong(
    "positional_encoding",
    {
        "positional_encoding": "positional_encoding(3, 4) has dtype torch.float64, expected torch.float32",
        "positional_encoding.formula": "positional_encoding(1, 2) has dtype torch.float64, expected torch.float32",
    },
)
def float64_table(max_len, num_hiddens):
    """Right values, but float64: adding it to float32 inputs silently upcasts them."""
    positions = torch.arange(max_len, dtype=torch.float64)[:, None]
    angles = positions / torch.pow(10000.0, torch.arange(0, num_hiddens, 2) / num_hiddens)
    P = torch.empty(max_len, num_hiddens, dtype=torch.float64)
    P[:, 0::2], P[:, 1::2] = torch.sin(angles), torch.cos(angles)
    return P


# ----------------------------------------------------------------- classes that used to escape


@wrong(
    "SelfAttention",
    {
        "SelfAttention": "the forward on X (2, 5, 6), valid_lens [5, 2] modified its input X in place: at index (1, 2, 0) it was",
        "SelfAttention.values": "the forward on X (1, 1, 5), valid_lens [0] modified its input X in place: at index (0, 0, 0) it was 1.541 and",
    },
)
def padding_zeroed_in_place(self, X, valid_lens=None):
    """Zeroes the padded positions of the caller's X (the loop reference used to see it too)."""
    if valid_lens is not None:
        X[torch.arange(X.shape[1], device=X.device) >= valid_lens[:, None]] = 0
    queries, keys, values = self.W_q(X), self.W_k(X), self.W_v(X)
    return self.attention(queries, keys, values, valid_lens)


@wrong(
    "SelfAttention",
    {
        "SelfAttention": "the forward (B=2, N=4, D_X=5): no gradient reached W_q.weight, W_k.weight. Every parameter and every input",
        "SelfAttention.values": "the forward (B=3, N=5, D_X=6): no gradient reached W_q.weight, W_q.bias, W_k.weight, W_k.bias. Every",
    },
)
def projections_without_grad(self, X, valid_lens=None):
    """Queries and keys under torch.no_grad(): W_q and W_k never learn."""
    with torch.no_grad():
        queries, keys = self.W_q(X), self.W_k(X)
    return self.attention(queries, keys, self.W_v(X), valid_lens)


@wrong(
    "SelfAttention",
    {
        "SelfAttention": "the output has dtype torch.float32, expected torch.float64",
        "SelfAttention.values": "the output has dtype torch.float32, expected torch.float64",
    },
)
def self_attention_forced_float32(self, X, valid_lens=None):
    """Casts the projections to float32."""
    queries, keys, values = self.W_q(X).float(), self.W_k(X).float(), self.W_v(X).float()
    return self.attention(queries, keys, values, valid_lens)


@wrong(
    "SelfAttention",
    {
        "SelfAttention": "the output in train mode (p=0.5, X = I, W_v = I so that the output is the weights): with dropout p=0.5 in",
        "SelfAttention.dropout": "the output in train mode (p=0.3, X = I, W_v = I so that the output is the weights): with dropout p=0.3 in",
    },
)
def self_attention_dropout_twice(self, X, valid_lens=None):
    """Dropout inside the attention and again on its output."""
    out = self.attention(self.W_q(X), self.W_k(X), self.W_v(X), valid_lens)
    return self.attention.dropout(out)


@wrong(
    "positional_encoding",
    {
        "positional_encoding": "positional_encoding(3, 4) has dtype torch.float64, expected torch.float32",
        "positional_encoding.formula": "positional_encoding(1, 2) has dtype torch.float64, expected torch.float32",
    },
)
def table_in_float64(max_len, num_hiddens):
    """Builds the table in float64 and forgets the float32 the exercise asks for."""
    positions = torch.arange(max_len, dtype=torch.float64)[:, None]
    omega = 10000 ** (-torch.arange(0, num_hiddens, 2, dtype=torch.float64) / num_hiddens)
    P = torch.zeros(max_len, num_hiddens, dtype=torch.float64)
    P[:, 0::2], P[:, 1::2] = torch.sin(positions * omega), torch.cos(positions * omega)
    return P


@wrong(
    "positional_encoding",
    {
        "positional_encoding.formula": "positional_encoding(7, 2): row position=1 is wrong (3 of 7 rows differ)"
    },
)
def table_in_half_precision(max_len, num_hiddens):
    """Computes the angles in float16: positions beyond a few hundred lose their digits."""
    positions = torch.arange(max_len, dtype=torch.float16)[:, None]
    omega = 10000 ** (-torch.arange(0, num_hiddens, 2, dtype=torch.float16) / num_hiddens)
    P = torch.zeros(max_len, num_hiddens)
    P[:, 0::2], P[:, 1::2] = (
        torch.sin(positions * omega).float(),
        torch.cos(positions * omega).float(),
    )
    return P
