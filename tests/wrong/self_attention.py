"""Wrong answers to the exercises of the chapter "Self-attention and positional encoding"."""

import math

import torch

from solutions.masking import masked_softmax
from tests.wrong import wrong

# ----------------------------------------------------------------- RelativeSelfAttention


@wrong(
    "RelativeSelfAttention",
    {
        "RelativeSelfAttention": "the weights with W_q = 0 and relative_bias [1, 0, 2] (entry 0: keys before the query, 1: the query itself, 2: keys after it): row batch=0, query=0 is wrong",
        "RelativeSelfAttention.values": "attention_weights for B=2, N=4, max_distance=1, bias=False, valid_lens=None: row batch=0, query=0 is wrong",
        "RelativeSelfAttention.positions": "the output of items 1 to 5 with a bias of 30 on offset -1 (each should copy the value of the item before it): row batch=0, item - 1=0 is wrong",
    },
)
def offsets_reversed(self, X, valid_lens=None):
    """Offsets i - j instead of j - i: the bias of "the key before" goes to the key after."""
    queries, keys, values = self.W_q(X), self.W_k(X), self.W_v(X)
    scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(queries.shape[-1])
    positions = torch.arange(X.shape[1], device=X.device)
    offsets = positions[:, None] - positions[None, :]
    K = self.max_distance
    self.attention_weights = masked_softmax(
        scores + self.relative_bias[offsets.clamp(-K, K) + K], valid_lens
    )
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "RelativeSelfAttention",
    {
        "RelativeSelfAttention": "the forward on X (2, 5, 6), valid_lens [5, 2] raised IndexError: index 3 is out of bounds",
        "RelativeSelfAttention.values": "the forward on X (2, 4, 5), valid_lens None raised IndexError: index 3 is out of bounds",
    },
)
def offsets_not_clipped(self, X, valid_lens=None):
    """Indexes with j - i + K unclipped: past the end of relative_bias once N > K + 1."""
    queries, keys, values = self.W_q(X), self.W_k(X), self.W_v(X)
    scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(queries.shape[-1])
    positions = torch.arange(X.shape[1], device=X.device)
    offsets = positions[None, :] - positions[:, None]
    self.attention_weights = masked_softmax(
        scores + self.relative_bias[offsets + self.max_distance], valid_lens
    )
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "RelativeSelfAttention",
    {
        "RelativeSelfAttention": "the weights with W_q = 0 and relative_bias [1, 0, 2] (entry 0: keys before the query, 1: the query itself, 2: keys after it): row batch=0, query=0 is wrong",
        "RelativeSelfAttention.values": "attention_weights for B=2, N=4, max_distance=1, bias=False, valid_lens=None: row batch=0, query=0 is wrong",
        "RelativeSelfAttention.positions": "the output of items 1 to 5 with a bias of 30 on offset -1 (each should copy the value of the item before it): row batch=0, item - 1=0 is wrong",
    },
)
def offsets_wrap_around(self, X, valid_lens=None):
    """Keeps the index in range with % (2K + 1): far offsets wrap onto the wrong side."""
    queries, keys, values = self.W_q(X), self.W_k(X), self.W_v(X)
    scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(queries.shape[-1])
    positions = torch.arange(X.shape[1], device=X.device)
    offsets = positions[None, :] - positions[:, None]
    index = (offsets + self.max_distance) % self.relative_bias.shape[0]
    self.attention_weights = masked_softmax(scores + self.relative_bias[index], valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "RelativeSelfAttention",
    {
        "RelativeSelfAttention": "the weights with W_q = 0 and relative_bias [1, 0, 2] (entry 0: keys before the query, 1: the query itself, 2: keys after it): row batch=0, query=0 is wrong",
        "RelativeSelfAttention.values": "attention_weights for B=2, N=4, max_distance=1, bias=False, valid_lens=None: row batch=0, query=0 is wrong",
        "RelativeSelfAttention.positions": "the output of items 1 to 5 with a bias of 30 on offset -1 (each should copy the value of the item before it): row batch=0, item - 1=0 is wrong",
    },
)
def bias_of_the_key_position(self, X, valid_lens=None):
    """One bias per absolute key position j (clipped), the same for every query."""
    queries, keys, values = self.W_q(X), self.W_k(X), self.W_v(X)
    scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(queries.shape[-1])
    positions = torch.arange(X.shape[1], device=X.device)
    bias = self.relative_bias[positions.clamp(max=2 * self.max_distance)]  # (N,)
    self.attention_weights = masked_softmax(scores + bias, valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "RelativeSelfAttention",
    {
        "RelativeSelfAttention": "the weights with W_q = 0 and relative_bias [1, 0, 2] (entry 0: keys before the query, 1: the query itself, 2: keys after it): row batch=0, query=0 is wrong",
        "RelativeSelfAttention.values": "attention_weights for B=2, N=4, max_distance=1, bias=False, valid_lens=None: row batch=0, query=0 is wrong",
    },
)
def bias_scaled_with_the_scores(self, X, valid_lens=None):
    """Adds the bias before dividing by √D_Q, so the bias is scaled down too."""
    queries, keys, values = self.W_q(X), self.W_k(X), self.W_v(X)
    positions = torch.arange(X.shape[1], device=X.device)
    offsets = positions[None, :] - positions[:, None]
    K = self.max_distance
    bias = self.relative_bias[offsets.clamp(-K, K) + K]
    scores = (torch.bmm(queries, keys.transpose(1, 2)) + bias) / math.sqrt(queries.shape[-1])
    self.attention_weights = masked_softmax(scores, valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "RelativeSelfAttention",
    {
        "RelativeSelfAttention": "row sums of the weights: row index (0,) is wrong",
        "RelativeSelfAttention.values": "attention_weights for B=1, N=1, max_distance=0, bias=False, valid_lens=None: row batch=0, query=0 is wrong",
    },
)
def bias_added_to_the_weights(self, X, valid_lens=None):
    """Adds the bias after the softmax: the rows no longer sum to 1."""
    queries, keys, values = self.W_q(X), self.W_k(X), self.W_v(X)
    scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(queries.shape[-1])
    positions = torch.arange(X.shape[1], device=X.device)
    offsets = positions[None, :] - positions[:, None]
    K = self.max_distance
    bias = self.relative_bias[offsets.clamp(-K, K) + K]
    self.attention_weights = masked_softmax(scores, valid_lens) + bias
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "RelativeSelfAttention",
    {
        "RelativeSelfAttention": "__getitem__ got a tensor of shape (5, 5) on the CPU together with tensors on the inputs' device",
        "RelativeSelfAttention.values": "__getitem__ got a tensor of shape (5, 5) on the CPU together with tensors on the inputs' device",
    },
    breaks="meta",
)
def offsets_made_on_the_cpu(self, X, valid_lens=None):
    """torch.arange without device=: fine on the CPU, wrong wherever X lives elsewhere."""
    queries, keys, values = self.W_q(X), self.W_k(X), self.W_v(X)
    scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(queries.shape[-1])
    positions = torch.arange(X.shape[1])
    offsets = positions[None, :] - positions[:, None]
    K = self.max_distance
    bias = self.relative_bias[offsets.clamp(-K, K) + K]
    self.attention_weights = masked_softmax(scores + bias, valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "RelativeSelfAttention",
    {
        "RelativeSelfAttention": "the forward (B=2, N=5, D_X=5): no gradient reached relative_bias.",
        "RelativeSelfAttention.values": "the forward (B=3, N=5, D_X=6): no gradient reached relative_bias.",
        "RelativeSelfAttention.positions": "no gradient reached relative_bias (N=3, max_distance=4)",
    },
)
def bias_table_detached(self, X, valid_lens=None):
    """Reads the table through .detach(): the biases never learn."""
    queries, keys, values = self.W_q(X), self.W_k(X), self.W_v(X)
    scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(queries.shape[-1])
    positions = torch.arange(X.shape[1], device=X.device)
    offsets = positions[None, :] - positions[:, None]
    K = self.max_distance
    bias = self.relative_bias.detach()[offsets.clamp(-K, K) + K]
    self.attention_weights = masked_softmax(scores + bias, valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "RelativeSelfAttention",
    {
        "RelativeSelfAttention": "weights of padded keys: row query=0 is wrong",
        "RelativeSelfAttention.values": "attention_weights for B=1, N=1, max_distance=0, bias=False, valid_lens=[0]: row batch=0, query=0 is wrong",
    },
)
def padding_ignored(self, X, valid_lens=None):
    """Never passes valid_lens to masked_softmax, so padded positions get weight."""
    queries, keys, values = self.W_q(X), self.W_k(X), self.W_v(X)
    scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(queries.shape[-1])
    positions = torch.arange(X.shape[1], device=X.device)
    offsets = positions[None, :] - positions[:, None]
    K = self.max_distance
    self.attention_weights = masked_softmax(
        scores + self.relative_bias[offsets.clamp(-K, K) + K], None
    )
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "RelativeSelfAttention",
    {
        "RelativeSelfAttention.values": "attention_weights for B=2, N=4, max_distance=1, bias=False, valid_lens=None: row batch=0, query=0 is wrong",
    },
)
def scaled_by_the_input_size(self, X, valid_lens=None):
    """Divides the scores by √D_X instead of √D_Q."""
    queries, keys, values = self.W_q(X), self.W_k(X), self.W_v(X)
    scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(X.shape[-1])
    positions = torch.arange(X.shape[1], device=X.device)
    offsets = positions[None, :] - positions[:, None]
    K = self.max_distance
    self.attention_weights = masked_softmax(
        scores + self.relative_bias[offsets.clamp(-K, K) + K], valid_lens
    )
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "RelativeSelfAttention",
    {
        "RelativeSelfAttention.values": "attention_weights for B=2, N=4, max_distance=1, bias=False, valid_lens=None: row batch=0, query=0 is wrong",
    },
)
def queries_and_keys_swapped(self, X, valid_lens=None):
    """Scores K Qᵀ: row i holds kᵢ·qⱼ, the transpose of the right scores."""
    queries, keys, values = self.W_q(X), self.W_k(X), self.W_v(X)
    scores = torch.bmm(keys, queries.transpose(1, 2)) / math.sqrt(queries.shape[-1])
    positions = torch.arange(X.shape[1], device=X.device)
    offsets = positions[None, :] - positions[:, None]
    K = self.max_distance
    self.attention_weights = masked_softmax(
        scores + self.relative_bias[offsets.clamp(-K, K) + K], valid_lens
    )
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "RelativeSelfAttention",
    {
        "RelativeSelfAttention.dropout": "the output in eval mode with dropout=1 (dropout must be off): row batch=0, query=0 is wrong",
    },
)
def dropout_always_on(self, X, valid_lens=None):
    """Functional dropout with training=True: still dropping weights in eval mode."""
    queries, keys, values = self.W_q(X), self.W_k(X), self.W_v(X)
    scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(queries.shape[-1])
    positions = torch.arange(X.shape[1], device=X.device)
    offsets = positions[None, :] - positions[:, None]
    K = self.max_distance
    self.attention_weights = masked_softmax(
        scores + self.relative_bias[offsets.clamp(-K, K) + K], valid_lens
    )
    dropped = torch.nn.functional.dropout(self.attention_weights, self.dropout.p, training=True)
    return torch.bmm(dropped, values)


@wrong(
    "RelativeSelfAttention",
    {
        "RelativeSelfAttention": "the output in train mode (p=0.5, X = I, W_v = I so that the output is the weights): with dropout p=0.5 in",
        "RelativeSelfAttention.dropout": "the output in train mode (p=0.3, X = I, W_v = I so that the output is the weights): with dropout p=0.3 in",
    },
    breaks="dropout",
)
def dropout_twice(self, X, valid_lens=None):
    """Dropout on the weights and again on the output."""
    queries, keys, values = self.W_q(X), self.W_k(X), self.W_v(X)
    scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(queries.shape[-1])
    positions = torch.arange(X.shape[1], device=X.device)
    offsets = positions[None, :] - positions[:, None]
    K = self.max_distance
    self.attention_weights = masked_softmax(
        scores + self.relative_bias[offsets.clamp(-K, K) + K], valid_lens
    )
    return self.dropout(torch.bmm(self.dropout(self.attention_weights), values))


@wrong(
    "RelativeSelfAttention",
    {
        "RelativeSelfAttention": "the forward on X (2, 5, 6), valid_lens [5, 2] modified its input X in place: at index (1, 2, 0) it was",
        "RelativeSelfAttention.values": "the forward on X (1, 1, 5), valid_lens [0] modified its input X in place: at index (0, 0, 0) it was 1.541 and",
    },
    breaks="unchanged",
)
def padding_zeroed_in_place(self, X, valid_lens=None):
    """Zeroes the padded positions of the caller's X."""
    if valid_lens is not None and valid_lens.dim() == 1:
        X[torch.arange(X.shape[1], device=X.device) >= valid_lens[:, None]] = 0
    queries, keys, values = self.W_q(X), self.W_k(X), self.W_v(X)
    scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(queries.shape[-1])
    positions = torch.arange(X.shape[1], device=X.device)
    offsets = positions[None, :] - positions[:, None]
    K = self.max_distance
    self.attention_weights = masked_softmax(
        scores + self.relative_bias[offsets.clamp(-K, K) + K], valid_lens
    )
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "RelativeSelfAttention",
    {
        "RelativeSelfAttention": "the output has dtype torch.float32, expected torch.float64",
        "RelativeSelfAttention.values": "the output has dtype torch.float32, expected torch.float64",
    },
)
def relative_attention_forced_float32(self, X, valid_lens=None):
    """Casts the projections and the bias to float32: float64 inputs come back float32."""
    queries, keys, values = self.W_q(X).float(), self.W_k(X).float(), self.W_v(X).float()
    scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(queries.shape[-1])
    positions = torch.arange(X.shape[1], device=X.device)
    offsets = positions[None, :] - positions[:, None]
    K = self.max_distance
    bias = self.relative_bias[offsets.clamp(-K, K) + K].float()
    self.attention_weights = masked_softmax(scores + bias, valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values)


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


# ----------------------------------------------------------------- positional_encoding: precision


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


# ----------------------------------------------------------------- check your understanding
# A wrong answer to a question returns the value; pasted into the notebook it becomes
# ``answer_6_1 = <value>`` (see tests/wrong/__init__.py).


@wrong("quiz_6_1", {"quiz_6_1.key": "answer_6_1 = 'a' is not the right choice"})
def order_changes_nothing():
    """Reads "cannot see order" as invariance: the output would not change at all."""
    return "a"


@wrong("quiz_6_1", {"quiz_6_1.key": "answer_6_1 = 'c' is not the right choice"})
def every_row_changes():
    """Every output sums over all items, so every row would change."""
    return "c"


@wrong("quiz_6_1", {"quiz_6_1.key": "answer_6_1 = 'd' is not the right choice"})
def swapped_rows_get_new_values():
    """Rows 0 and 1 would change, not merely trade places."""
    return "d"


@wrong(
    "quiz_6_1", {"quiz_6_1": "answer_6_1 should be one of the letters 'a', 'b', 'c', 'd', got True"}
)
def true_for_a_letter():
    """Not a letter."""
    return True


@wrong("quiz_6_2", {"quiz_6_2.key": "answer_6_2 = 10448 is not the number of trainable parameters"})
def one_bias_per_pair_of_positions():
    """One bias per (query, key) pair of a 100-item sequence: 448 + 100·100."""
    return 10448


@wrong("quiz_6_2", {"quiz_6_2.key": "answer_6_2 = 448 is not the number of trainable parameters"})
def the_biases_forgotten():
    """Counts the three projections only."""
    return 448


@wrong("quiz_6_2", {"quiz_6_2": "answer_6_2 should be a finite number, got '457'"})
def the_count_as_a_string():
    """The right count, as a string."""
    return "457"


@wrong("quiz_6_3", {"quiz_6_3.key": "answer_6_3 = 'a' is not the right choice"})
def depth_sees_order():
    """Stacked layers with residuals: still a composition of equivariant layers."""
    return "a"


@wrong("quiz_6_3", {"quiz_6_3.key": "answer_6_3 = 'b' is not the right choice"})
def the_feed_forward_sees_order():
    """A feed-forward network applied to each item alone cannot see order either."""
    return "b"


@wrong("quiz_6_3", {"quiz_6_3.key": "answer_6_3 = 'd' is not the right choice"})
def only_the_input_can_carry_order():
    """Forgets that positions can enter the scores."""
    return "d"


# ----------------------------------------------------------------- property classes


@wrong(
    "RelativeSelfAttention",
    {
        "RelativeSelfAttention": "the forward in float64 (B=2, N=5, D_X=5): the gradient is not the derivative of the output. Along a random direction autograd",
        "RelativeSelfAttention.values": "float64 attention_weights (B=3, N=5, D_X=6): row index (1, 0) is wrong (10 of 15 rows differ)",
    },
    breaks="float64",
)
def relative_rounded_through_float32(self, X, valid_lens=None):
    """Right, but the weights and the output pass through float32 (a .float() left in): float64
    in and out, with float32's digits."""
    queries, keys, values = self.W_q(X), self.W_k(X), self.W_v(X)
    scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(queries.shape[-1])
    positions = torch.arange(X.shape[1], device=X.device)
    offsets = positions[None, :] - positions[:, None]
    K = self.max_distance
    bias = self.relative_bias[offsets.clamp(-K, K) + K]
    self.attention_weights = masked_softmax(scores + bias, valid_lens).float().to(X.dtype)
    out = torch.bmm(self.dropout(self.attention_weights), values)
    return out.float().to(X.dtype)


@wrong(
    "RelativeSelfAttention",
    {
        "RelativeSelfAttention": "the forward in float64 (B=2, N=5, D_X=5): the gradient is not the derivative of the output. Along a random direction autograd",
        "RelativeSelfAttention.values": "the forward in float64 (B=3, N=5, D_X=6): the gradient is not the derivative of the output. Along a random direction autograd",
    },
    breaks="gradient",
)
def relative_scores_half_detached(self, X, valid_lens=None):
    """Averages the scores with a detached copy: right values, half the gradient through them."""
    queries, keys, values = self.W_q(X), self.W_k(X), self.W_v(X)
    scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(queries.shape[-1])
    positions = torch.arange(X.shape[1], device=X.device)
    offsets = positions[None, :] - positions[:, None]
    K = self.max_distance
    scores = scores + self.relative_bias[offsets.clamp(-K, K) + K]
    scores = 0.5 * scores + 0.5 * scores.detach()
    self.attention_weights = masked_softmax(scores, valid_lens)
    return torch.bmm(self.dropout(self.attention_weights), values)
