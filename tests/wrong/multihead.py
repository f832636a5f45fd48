"""Wrong answers to the exercises of the chapter "Causal and multi-head attention"."""

import torch

from solutions.multihead import transpose_output, transpose_qkv
from tests.wrong import wrong

# ----------------------------------------------------------------- causal_valid_lens


@wrong(
    "causal_valid_lens",
    {
        "causal_valid_lens": "causal_valid_lens(X, [4, 2]) for T = 4: row sequence=0 is wrong",
        "causal_valid_lens.mask": "for T=1, valid_lens=[1]: query 0 of sequence 0 may see keys [], expected [0]",
    },
)
def diagonal_masked_too(X, valid_lens=None):
    """Query t sees keys 0..t-1 only: off by one, position 0 sees nothing."""
    B, T = X.shape[0], X.shape[1]
    lens = torch.arange(T, device=X.device).repeat(B, 1)
    if valid_lens is not None:
        lens = torch.minimum(lens, valid_lens[:, None])
    return lens


@wrong(
    "causal_valid_lens",
    {
        "causal_valid_lens": "causal_valid_lens(X, [4, 2]) for T = 4: row sequence=0 is wrong",
        "causal_valid_lens.mask": "for T=4, valid_lens=[4, 4, 4]: query 0 of sequence 0 may see keys [0, 1], expected [0]",
        "causal_valid_lens.perturbation": "with valid_lens [6, 3, 0]: outputs at positions 0..0 after changing the inputs from position 1 on",
    },
)
def one_step_ahead(X, valid_lens=None):
    """Query t sees keys 0..t+1: the next token leaks."""
    B, T = X.shape[0], X.shape[1]
    lens = torch.arange(2, T + 2, device=X.device).repeat(B, 1)
    if valid_lens is not None:
        lens = torch.minimum(lens, valid_lens[:, None])
    return lens


@wrong(
    "causal_valid_lens",
    {
        "causal_valid_lens": "causal_valid_lens(X, [4, 2]) for T = 4: row sequence=1 is wrong",
        "causal_valid_lens.mask": "for T=1, valid_lens=[0]: query 0 of sequence 0 may see keys [0], expected []",
        "causal_valid_lens.perturbation": "a sequence of valid length 0 must give lengths 0, got [1, 2, 3, 4, 5, 6]",
    },
)
def padding_forgotten(X, valid_lens=None):
    """Ignores valid_lens: queries see padded keys, and empty sequences are not empty."""
    B, T = X.shape[0], X.shape[1]
    return torch.arange(1, T + 1, device=X.device).repeat(B, 1)


@wrong(
    "causal_valid_lens",
    {
        "causal_valid_lens": "causal_valid_lens(X, [4, 2]) for T = 4: row sequence=0 is wrong",
        "causal_valid_lens.mask": "for T=1, valid_lens=[0]: query 0 of sequence 0 may see keys [0], expected []",
        "causal_valid_lens.perturbation": "with valid_lens [6, 3, 0]: outputs at positions 0..0 after changing the inputs from position 1 on",
    },
)
def maximum_instead_of_minimum(X, valid_lens=None):
    """Combines the two limits with max: padding wins over causality."""
    B, T = X.shape[0], X.shape[1]
    lens = torch.arange(1, T + 1, device=X.device).repeat(B, 1)
    if valid_lens is not None:
        lens = torch.maximum(lens, valid_lens[:, None])
    return lens


@wrong(
    "causal_valid_lens",
    {
        "causal_valid_lens": "causal_valid_lens(X, [4, 2]) for T = 4: row sequence=0 is wrong",
        "causal_valid_lens.mask": "for T=4, valid_lens=[4, 4, 4]: query 0 of sequence 0 may see keys [0, 1, 2, 3], expected [0]",
        "causal_valid_lens.perturbation": "with valid_lens [6, 3, 0]: outputs at positions 0..0 after changing the inputs from position 1 on",
    },
)
def padding_only(X, valid_lens=None):
    """Every query sees the whole valid sequence: no causal mask at all."""
    B, T = X.shape[0], X.shape[1]
    if valid_lens is None:
        return torch.full((B, T), T, device=X.device)
    return valid_lens[:, None].repeat(1, T)


@wrong(
    "causal_valid_lens",
    {
        "causal_valid_lens": "causal_valid_lens must return int64 lengths (the dtype of torch.arange and of valid_lens), got dtype torch.float32",
        "causal_valid_lens.mask": "causal_valid_lens must return int64 lengths (the dtype of torch.arange and of valid_lens), got dtype torch.float32",
    },
)
def float_lengths(X, valid_lens=None):
    """Right values as floats, where the exercise asks for integer lengths (they count positions)."""
    B, T = X.shape[0], X.shape[1]
    lens = torch.arange(1, T + 1, device=X.device, dtype=torch.float32).repeat(B, 1)
    if valid_lens is not None:
        lens = torch.minimum(lens, valid_lens[:, None].float())
    return lens


# ----------------------------------------------------------------- transpose_qkv / transpose_output


@wrong(
    "transpose_qkv",
    {
        "transpose_qkv": "transpose_qkv(X, 3): row batch*head=0, position=1 is wrong",
        "transpose_qkv.loop": "transpose_qkv of (2, 4, 8) with 2 heads: row batch*head=0, position=1 is wrong",
    },
)
def split_without_permute(X, num_heads):
    """Reshapes (B, T, d) straight to (B*h, T, d/h): mixes positions into heads."""
    B, T, H = X.shape
    return X.reshape(B * num_heads, T, H // num_heads)


@wrong(
    "transpose_qkv",
    {
        "transpose_qkv": "transpose_qkv(X, 3): row batch*head=1, position=0 is wrong",
        "transpose_qkv.loop": "transpose_qkv of (2, 4, 8) with 2 heads: row batch*head=1, position=0 is wrong",
    },
)
def heads_major(X, num_heads):
    """Orders the batch head-major (i*B + b) instead of example-major (b*h + i)."""
    B, T, H = X.shape
    X = X.reshape(B, T, num_heads, H // num_heads).permute(2, 0, 1, 3)  # (h, B, T, hs)
    return X.reshape(B * num_heads, T, H // num_heads)


@wrong(
    "transpose_qkv",
    {
        "transpose_qkv": "transpose_qkv(X, 3): row batch*head=0, position=0 is wrong",
        "transpose_qkv.loop": "transpose_qkv of (2, 4, 8) with 2 heads: row batch*head=0, position=0 is wrong",
    },
)
def interleaved_features(X, num_heads):
    """Gives head i the features i, i+h, i+2h, … instead of a contiguous block."""
    B, T, H = X.shape
    X = X.reshape(B, T, H // num_heads, num_heads).permute(0, 3, 1, 2)  # (B, h, T, hs)
    return X.reshape(B * num_heads, T, H // num_heads)


@wrong(
    "transpose_qkv",
    {
        "transpose_qkv": "transpose_qkv(X, 3) has shape (2, 3, 3, 2), expected (6, 3, 2)",
        "transpose_qkv.loop": "transpose_qkv(X, 1) has shape (1, 1, 1, 4), expected (1, 1, 4)",
    },
)
def heads_not_in_batch(X, num_heads):
    """Stops at (B, h, T, d/h): the heads are never folded into the batch."""
    B, T, H = X.shape
    return X.reshape(B, T, num_heads, H // num_heads).permute(0, 2, 1, 3)


@wrong(
    "transpose_qkv",
    {
        "transpose_qkv": "transpose_qkv(X, 3) has shape (6, 1, 6), expected (6, 3, 2)",
        "transpose_qkv.loop": "transpose_qkv(X, 2) has shape (4, 2, 8), expected (4, 4, 4)",
    },
)
def split_the_sequence(X, num_heads):
    """Splits positions, not features: (B, T, d) -> (B*h, T/h, d)."""
    B, T, H = X.shape
    return X.reshape(B * num_heads, T // num_heads, H)


@wrong(
    "transpose_output",
    {
        "transpose_output": "transpose_output(heads, 3): row batch=0, position=0 is wrong",
        "transpose_output.loop": "transpose_output of 2 heads of (2, 4, 8): row batch=0, position=0 is wrong",
    },
)
def merge_without_permute(X, num_heads):
    """Reshapes (B*h, T, hs) straight to (B, T, h*hs)."""
    BH, T, hs = X.shape
    return X.reshape(BH // num_heads, T, num_heads * hs)


@wrong(
    "transpose_output",
    {
        "transpose_output": "transpose_output(heads, 3): row batch=0, position=0 is wrong",
        "transpose_output.loop": "transpose_output of 2 heads of (2, 4, 8): row batch=0, position=0 is wrong",
    },
)
def merge_heads_major(X, num_heads):
    """Reads the batch as head-major (i*B + b)."""
    BH, T, hs = X.shape
    X = X.reshape(num_heads, BH // num_heads, T, hs).permute(1, 2, 0, 3)  # (B, T, h, hs)
    return X.reshape(BH // num_heads, T, num_heads * hs)


@wrong(
    "transpose_output",
    {
        "transpose_output": "transpose_output(heads, 3): row batch=0, position=0 is wrong",
        "transpose_output.loop": "transpose_output of 2 heads of (2, 4, 8): row batch=0, position=0 is wrong",
    },
)
def merge_interleaved(X, num_heads):
    """Interleaves the heads' features instead of concatenating them."""
    BH, T, hs = X.shape
    X = X.reshape(BH // num_heads, num_heads, T, hs).permute(0, 2, 3, 1)  # (B, T, hs, h)
    return X.reshape(BH // num_heads, T, num_heads * hs)


@wrong(
    "transpose_output",
    {
        "transpose_output": "transpose_output(heads, 3): row batch=0, position=0 is wrong",
        "transpose_output.loop": "transpose_output of 2 heads of (2, 4, 8): row batch=0, position=0 is wrong",
    },
)
def merge_wrong_axes(X, num_heads):
    """Permutes (0, 1, 3, 2): positions and heads swapped, features scrambled."""
    BH, T, hs = X.shape
    X = X.reshape(BH // num_heads, num_heads, T, hs).permute(0, 2, 1, 3).transpose(1, 2)
    return X.reshape(BH // num_heads, T, num_heads * hs)


@wrong(
    "transpose_output",
    {
        "transpose_output": "transpose_output(heads, 3) has shape (2, 3, 3, 2), expected (2, 3, 6)",
        "transpose_output.loop": "transpose_output(heads, 1) has shape (1, 1, 1, 4), expected (1, 1, 4)",
    },
)
def merge_keeps_heads(X, num_heads):
    """Returns (B, h, T, hs): the heads are never concatenated."""
    BH, T, hs = X.shape
    return X.reshape(BH // num_heads, num_heads, T, hs)


# ----------------------------------------------------------------- MultiHeadAttention


@wrong(
    "MultiHeadAttention",
    {
        "MultiHeadAttention.torch": "(the valid_lens given to self.attention are not repeat_interleave(valid_lens, h, dim=0) (step 2))"
    },
)
def lengths_repeated_not_interleaved(self, queries, keys, values, valid_lens=None):
    """torch.repeat copies the whole batch h times: head i of example b gets the wrong lengths."""
    queries = transpose_qkv(self.W_q(queries), self.num_heads)
    keys = transpose_qkv(self.W_k(keys), self.num_heads)
    values = transpose_qkv(self.W_v(values), self.num_heads)
    if valid_lens is not None:
        valid_lens = valid_lens.repeat(self.num_heads, *[1] * (valid_lens.dim() - 1))
    output = self.attention(queries, keys, values, valid_lens)
    return self.W_o(transpose_output(output, self.num_heads))


@wrong(
    "MultiHeadAttention",
    {
        "MultiHeadAttention": "(the forward never applied W_o (step 4))",
        "MultiHeadAttention.torch": "(the forward never applied W_o (step 4))",
    },
)
def no_output_projection(self, queries, keys, values, valid_lens=None):
    """Forgets W_o after merging the heads."""
    queries = transpose_qkv(self.W_q(queries), self.num_heads)
    keys = transpose_qkv(self.W_k(keys), self.num_heads)
    values = transpose_qkv(self.W_v(values), self.num_heads)
    if valid_lens is not None:
        valid_lens = torch.repeat_interleave(valid_lens, self.num_heads, dim=0)
    return transpose_output(self.attention(queries, keys, values, valid_lens), self.num_heads)


@wrong(
    "MultiHeadAttention",
    {
        "MultiHeadAttention": "(the queries given to self.attention are not W_q(queries) split into heads",
        "MultiHeadAttention.torch": "(the queries given to self.attention are not W_q(queries) split into heads",
    },
)
def one_big_head(self, queries, keys, values, valid_lens=None):
    """Never splits: one head of size d, scaled by √d instead of √(d/h)."""
    self.attention(self.W_q(queries), self.W_k(keys), self.W_v(values), valid_lens)
    weights = self.attention.attention_weights
    self.attention.attention_weights = weights.repeat_interleave(self.num_heads, dim=0)
    return self.W_o(torch.bmm(weights, self.W_v(values)))


@wrong(
    "MultiHeadAttention",
    {
        "MultiHeadAttention": "(the keys given to self.attention are not W_k(keys) split into heads",
        "MultiHeadAttention.torch": "(the keys given to self.attention are not W_k(keys) split into heads",
    },
)
def keys_projected_with_w_q(self, queries, keys, values, valid_lens=None):
    """Uses W_q on the keys: right only if W_q = W_k."""
    queries = transpose_qkv(self.W_q(queries), self.num_heads)
    keys = transpose_qkv(self.W_q(keys), self.num_heads)
    values = transpose_qkv(self.W_v(values), self.num_heads)
    if valid_lens is not None:
        valid_lens = torch.repeat_interleave(valid_lens, self.num_heads, dim=0)
    output = self.attention(queries, keys, values, valid_lens)
    return self.W_o(transpose_output(output, self.num_heads))


@wrong(
    "MultiHeadAttention",
    {
        "MultiHeadAttention": "(the input of W_o is not the heads merged with transpose_output (step 4))",
        "MultiHeadAttention.torch": "(the input of W_o is not the heads merged with transpose_output (step 4))",
    },
)
def merged_by_plain_reshape(self, queries, keys, values, valid_lens=None):
    """Merges the heads with reshape(B, m, d), which scrambles positions and heads."""
    B, m, d = queries.shape
    queries = transpose_qkv(self.W_q(queries), self.num_heads)
    keys = transpose_qkv(self.W_k(keys), self.num_heads)
    values = transpose_qkv(self.W_v(values), self.num_heads)
    if valid_lens is not None:
        valid_lens = torch.repeat_interleave(valid_lens, self.num_heads, dim=0)
    output = self.attention(queries, keys, values, valid_lens)
    return self.W_o(output.reshape(B, m, d))


@wrong(
    "MultiHeadAttention",
    {
        "MultiHeadAttention": "(the valid_lens given to self.attention are not repeat_interleave(valid_lens, h, dim=0) (step 2))",
        "MultiHeadAttention.torch": "(the valid_lens given to self.attention are not repeat_interleave(valid_lens, h, dim=0) (step 2))",
    },
)
def padding_dropped(self, queries, keys, values, valid_lens=None):
    """Never passes the lengths on: padded keys get weight."""
    queries = transpose_qkv(self.W_q(queries), self.num_heads)
    keys = transpose_qkv(self.W_k(keys), self.num_heads)
    values = transpose_qkv(self.W_v(values), self.num_heads)
    output = self.attention(queries, keys, values)
    return self.W_o(transpose_output(output, self.num_heads))


@wrong(
    "MultiHeadAttention",
    {
        "MultiHeadAttention.dropout": "the output in eval mode with dropout=1 (dropout must be off): row batch=0, query=0 is wrong"
    },
    breaks="dropout",
)
def dropout_after_merging(self, queries, keys, values, valid_lens=None):
    """Drops the merged output instead of the weights (and keeps dropping in eval)."""
    queries = transpose_qkv(self.W_q(queries), self.num_heads)
    keys = transpose_qkv(self.W_k(keys), self.num_heads)
    values = transpose_qkv(self.W_v(values), self.num_heads)
    if valid_lens is not None:
        valid_lens = torch.repeat_interleave(valid_lens, self.num_heads, dim=0)
    p = self.attention.dropout.p
    self.attention.dropout.p = 0.0
    output = transpose_output(self.attention(queries, keys, values, valid_lens), self.num_heads)
    self.attention.dropout.p = p
    return self.W_o(torch.nn.functional.dropout(output, p, training=True))


@wrong(
    "MultiHeadAttention",
    {
        "MultiHeadAttention": "valid_lens [[5, 1, 3], [2, 4, 0]] raised ValueError: valid_lens must have shape (4,) or (4, 3)",
        "MultiHeadAttention.torch": "valid_lens [[2, 4, 1, 1]] raised ValueError: valid_lens must have shape (2,) or (2, 4)",
    },
)
def lengths_flattened(self, queries, keys, values, valid_lens=None):
    """repeat_interleave without dim=0: fine for (B,) lengths, flattens (B, m) ones."""
    queries = transpose_qkv(self.W_q(queries), self.num_heads)
    keys = transpose_qkv(self.W_k(keys), self.num_heads)
    values = transpose_qkv(self.W_v(values), self.num_heads)
    if valid_lens is not None:
        valid_lens = torch.repeat_interleave(valid_lens, self.num_heads)
    output = self.attention(queries, keys, values, valid_lens)
    return self.W_o(transpose_output(output, self.num_heads))


# ----------------------------------------------------------------- classes that used to escape


@wrong(
    "causal_valid_lens",
    {
        "causal_valid_lens": "causal_valid_lens(X of shape (2, 3, 3), [4, 5]) modified its input valid_lens in place: at index (0,) it was",
        "causal_valid_lens.mask": "causal_valid_lens(X of shape (4, 7, 2), [8, 7, 1, 4]) modified its input valid_lens in place: at index (0,)",
    },
    breaks="unchanged",
)
def causal_lengths_clamped_in_place(X, valid_lens=None):
    """clamp_ writes the clamped lengths back into the caller's valid_lens."""
    B, T = X.shape[0], X.shape[1]
    lens = torch.arange(1, T + 1, device=X.device).repeat(B, 1)
    if valid_lens is None:
        return lens
    return torch.minimum(lens, valid_lens.clamp_(max=T)[:, None])


@wrong(
    "causal_valid_lens",
    {
        "causal_valid_lens": "causal_valid_lens must return int64 lengths (the dtype of torch.arange and of valid_lens), got dtype",
        "causal_valid_lens.mask": "causal_valid_lens must return int64 lengths (the dtype of torch.arange and of valid_lens), got dtype",
    },
)
def causal_int32_lengths(X, valid_lens=None):
    """int32 lengths where the specification says int64."""
    B, T = X.shape[0], X.shape[1]
    lens = torch.arange(1, T + 1, device=X.device, dtype=torch.int32).repeat(B, 1)
    if valid_lens is not None:
        lens = torch.minimum(lens, valid_lens[:, None].int())
    return lens


@wrong(
    "causal_valid_lens",
    {
        "causal_valid_lens": "causal_valid_lens(X) is on device cpu, expected meta",
        "causal_valid_lens.mask": "causal_valid_lens(X) is on device cpu, expected meta",
    },
    breaks="meta",
)
def causal_positions_on_the_cpu(X, valid_lens=None):
    """torch.arange without device=: the lengths live on the CPU whatever X's device."""
    B, T = X.shape[0], X.shape[1]
    lens = torch.arange(1, T + 1).repeat(B, 1)
    if valid_lens is not None:
        lens = torch.minimum(lens, valid_lens[:, None])
    return lens


@wrong(
    "causal_valid_lens",
    {
        "causal_valid_lens.perturbation": "with valid_lens [6, 3, 0]: output 0 of sequence 0 did not change when input 0 changed: position 0 must see",
        "causal_valid_lens.mask": "for T=1, valid_lens=[1]: query 0 of sequence 0 may see keys [], expected [0]",
    },
)
def causal_off_by_one(X, valid_lens=None):
    """Query t gets t keys, not t + 1: it cannot see itself (query 0 sees nothing)."""
    B, T = X.shape[0], X.shape[1]
    lens = torch.arange(T, device=X.device).repeat(B, 1)
    if valid_lens is not None:
        lens = torch.minimum(lens, valid_lens[:, None])
    return lens


@wrong(
    "transpose_qkv",
    {
        "transpose_qkv": "transpose_qkv(X, 2) has dtype torch.float32, expected torch.float64",
        "transpose_qkv.loop": "transpose_qkv(X, 3) has dtype torch.float32, expected torch.float64",
    },
)
def split_forced_float32(X, num_heads):
    """Casts to float32."""
    B, T, H = X.shape
    X = X.float().reshape(B, T, num_heads, H // num_heads).permute(0, 2, 1, 3)
    return X.reshape(B * num_heads, T, H // num_heads)


@wrong(
    "transpose_qkv",
    {
        "transpose_qkv": "transpose_qkv(X, 2): the output does not require grad although its inputs and parameters do, so nothing can",
        "transpose_qkv.loop": "transpose_qkv(X, 3): the output does not require grad although its inputs and parameters do, so nothing can",
    },
)
def split_through_data(X, num_heads):
    """Reshapes X.data: the values are right, but no gradient flows back to the projections."""
    B, T, H = X.shape
    X = X.data.reshape(B, T, num_heads, H // num_heads).permute(0, 2, 1, 3)
    return X.reshape(B * num_heads, T, H // num_heads)


@wrong(
    "transpose_output",
    {
        "transpose_output": "transpose_output(heads, 2) has dtype torch.float32, expected torch.float64",
        "transpose_output.loop": "transpose_output(heads, 3) has dtype torch.float32, expected torch.float64",
    },
)
def merge_forced_float32(X, num_heads):
    """Casts to float32."""
    BH, T, hs = X.shape
    X = X.float().reshape(BH // num_heads, num_heads, T, hs).permute(0, 2, 1, 3)
    return X.reshape(BH // num_heads, T, num_heads * hs)


@wrong(
    "transpose_output",
    {
        "transpose_output": "transpose_output(X, 2): the output does not require grad although its inputs and parameters do, so nothing",
        "transpose_output.loop": "transpose_output(X, 3): the output does not require grad although its inputs and parameters do, so nothing",
    },
)
def merge_detached(X, num_heads):
    """Detaches the heads: no gradient flows back to the attention."""
    BH, T, hs = X.shape
    X = X.detach().reshape(BH // num_heads, num_heads, T, hs).permute(0, 2, 1, 3)
    return X.reshape(BH // num_heads, T, num_heads * hs)


@wrong(
    "MultiHeadAttention",
    {
        "MultiHeadAttention": "the output with valid_lens [5, 2] against SDPA per head: row batch=0, query=0 is wrong (6 of 6 rows differ)",
        "MultiHeadAttention.torch": "the output against nn.MultiheadAttention (d=16, heads=4, bias=True, keys ≠ values, valid_lens=None): row",
    },
)
def values_projected_from_keys(self, queries, keys, values, valid_lens=None):
    """W_v applied to the keys: right whenever keys and values are the same tensor."""
    queries = transpose_qkv(self.W_q(queries), self.num_heads)
    keys_h = transpose_qkv(self.W_k(keys), self.num_heads)
    values = transpose_qkv(self.W_v(keys), self.num_heads)
    if valid_lens is not None:
        valid_lens = torch.repeat_interleave(valid_lens, self.num_heads, dim=0)
    output = self.attention(queries, keys_h, values, valid_lens)
    return self.W_o(transpose_output(output, self.num_heads))


@wrong(
    "MultiHeadAttention",
    {
        "MultiHeadAttention": "attention_weights has dtype torch.float32, expected torch.float64",
        "MultiHeadAttention.torch": "attention_weights has dtype torch.float32, expected torch.float64",
    },
)
def multihead_forced_float32(self, queries, keys, values, valid_lens=None):
    """Casts the heads to float32."""
    queries = transpose_qkv(self.W_q(queries), self.num_heads).float()
    keys = transpose_qkv(self.W_k(keys), self.num_heads).float()
    values = transpose_qkv(self.W_v(values), self.num_heads).float()
    if valid_lens is not None:
        valid_lens = torch.repeat_interleave(valid_lens, self.num_heads, dim=0)
    output = self.attention(queries, keys, values, valid_lens)
    return self.W_o(transpose_output(output, self.num_heads).to(self.W_o.weight.dtype))


@wrong(
    "MultiHeadAttention",
    {
        "MultiHeadAttention": "the forward (d=4, heads=2, B=2, m=2, n=3, bias=True): no gradient reached W_q.weight, W_q.bias, queries.",
        "MultiHeadAttention.torch": "the forward (d=12, heads=3, B=3, m=4, n=6, bias=True): no gradient reached W_q.weight, W_q.bias, queries.",
    },
)
def query_projection_without_grad(self, queries, keys, values, valid_lens=None):
    """W_q under torch.no_grad(): the queries' projection never learns."""
    with torch.no_grad():
        queries = transpose_qkv(self.W_q(queries), self.num_heads)
    keys = transpose_qkv(self.W_k(keys), self.num_heads)
    values = transpose_qkv(self.W_v(values), self.num_heads)
    if valid_lens is not None:
        valid_lens = torch.repeat_interleave(valid_lens, self.num_heads, dim=0)
    output = self.attention(queries, keys, values, valid_lens)
    return self.W_o(transpose_output(output, self.num_heads))


@wrong(
    "MultiHeadAttention",
    {
        "MultiHeadAttention": "reading attention_weights failed ('MultiHeadAttention' object has no attribute 'attention_weights'): the",
        "MultiHeadAttention.torch": "reading attention_weights failed ('MultiHeadAttention' object has no attribute 'attention_weights'): the",
    },
)
def sdpa_instead_of_self_attention(self, queries, keys, values, valid_lens=None):
    """Calls SDPA directly: the output is right, but attention_weights is never stored."""
    queries = transpose_qkv(self.W_q(queries), self.num_heads)
    keys = transpose_qkv(self.W_k(keys), self.num_heads)
    values = transpose_qkv(self.W_v(values), self.num_heads)
    mask = None
    if valid_lens is not None:
        lens = torch.repeat_interleave(valid_lens, self.num_heads, dim=0)
        lens = lens[:, None] if lens.dim() == 1 else lens
        mask = torch.arange(keys.shape[1], device=keys.device) < lens[..., None]
    output = torch.nn.functional.scaled_dot_product_attention(queries, keys, values, attn_mask=mask)
    return self.W_o(transpose_output(output, self.num_heads))


@wrong(
    "transpose_qkv",
    {
        "transpose_qkv": "transpose_qkv(X of shape (2, 3, 6), 3) raised RuntimeError: view size is not compatible with input tensor's",
        "transpose_qkv.loop": "transpose_qkv(X of shape (3, 5, 12), 3) raised RuntimeError: view size is not compatible with input tensor's",
    },
)
def view_after_permute(X, num_heads):
    """view on the non-contiguous tensor that permute returns: a RuntimeError (it used to cost
    Exercise 7.3 its points as well)."""
    B, T, H = X.shape
    X = X.reshape(B, T, num_heads, H // num_heads).permute(0, 2, 1, 3)
    return X.view(B * num_heads, T, H // num_heads)


# ---------------------------------------------------------------- Check your understanding
# The body is what a student writes in the answer cell (a local here, hence the noqa).


@wrong("quiz_7_1", {"quiz_7_1.key": "answer_7_1 = 7, but query 6 of a sequence of valid length 5"})
def causal_length_ignores_padding():
    """Only the causal limit: query 6 sees t + 1 = 7 keys, padding or not."""
    answer_7_1 = 7  # noqa: F841


@wrong("quiz_7_1", {"quiz_7_1.key": "answer_7_1 = 0, but query 6 of a sequence of valid length 5"})
def padded_query_sees_nothing():
    """A padded query gets no keys at all."""
    answer_7_1 = 0  # noqa: F841


@wrong(
    "quiz_7_1",
    {
        "quiz_7_1": "answer_7_1 should be a finite number, got '5' (str)",
        "quiz_7_1.key": "answer_7_1 should be a finite number, got '5' (str)",
    },
)
def causal_length_as_text():
    """The right length, as a string."""
    answer_7_1 = "5"  # noqa: F841


@wrong("quiz_7_2", {"quiz_7_2.key": "answer_7_2 = 'b': entry b·h + i holds head i of example b"})
def heads_outermost():
    """Entry i·B + b: the heads as the outer index."""
    answer_7_2 = "b"  # noqa: F841


@wrong("quiz_7_2", {"quiz_7_2.key": "answer_7_2 = 'c': entry b·h + i holds head i of example b"})
def entry_right_lengths_repeated():
    """The right entry, with the lengths of valid_lens.repeat(h)."""
    answer_7_2 = "c"  # noqa: F841


@wrong(
    "quiz_7_2",
    {
        "quiz_7_2": "Hint: the mask is applied inside the attention, where every entry is one head",
        "quiz_7_2.key": "the mask is applied inside the attention of each entry",
    },
)
def mask_after_merging_heads():
    """Thinks the mask waits until the heads are merged."""
    answer_7_2 = "d"  # noqa: F841


@wrong(
    "quiz_7_2",
    {"quiz_7_2": "answer_7_2 should be one of the letters 'a', 'b', 'c', 'd', got 'e'"},
)
def head_entry_not_an_option():
    """A letter that is not one of the options."""
    answer_7_2 = "e"  # noqa: F841


@wrong("quiz_7_3", {"quiz_7_3.key": "answer_7_3 = 131072, but MultiHeadAttention(64, 8)"})
def eight_full_size_heads():
    """Each of the 8 heads with its own four 64 × 64 projections: 8 · 4 · 64²."""
    answer_7_3 = 8 * 4 * 64 * 64  # noqa: F841


@wrong("quiz_7_3", {"quiz_7_3.key": "answer_7_3 = 2048, but MultiHeadAttention(64, 8)"})
def one_head_of_size_eight():
    """The four projections of a single head of size 8: 4 · 64 · 8."""
    answer_7_3 = 4 * 64 * 8  # noqa: F841


# ----------------------------------------------------------------- property classes


@wrong(
    "transpose_qkv",
    {
        "transpose_qkv": "transpose_qkv(X, 2) in float64: the gradient is not the derivative of the output. Along a random direction autograd gives",
        "transpose_qkv.loop": "transpose_qkv(X, 3) in float64: the gradient is not the derivative of the output. Along a random direction autograd gives",
    },
    breaks="float64",
)
def split_in_float32(X, num_heads):
    """Rearranges a float32 copy and casts back: float64 in and out, with float32's digits."""
    B, T, H = X.shape
    heads = X.float().reshape(B, T, num_heads, H // num_heads).permute(0, 2, 1, 3)
    return heads.reshape(B * num_heads, T, H // num_heads).to(X.dtype)


@wrong(
    "transpose_qkv",
    {
        "transpose_qkv": "transpose_qkv(X, 2) in float64: the gradient is not the derivative of the output. Along a random direction autograd gives",
        "transpose_qkv.loop": "transpose_qkv(X, 3) in float64: the gradient is not the derivative of the output. Along a random direction autograd gives",
    },
    breaks="gradient",
)
def split_half_detached(X, num_heads):
    """Averages the heads with a detached copy: the right values, half the gradient."""
    B, T, H = X.shape
    heads = X.reshape(B, T, num_heads, H // num_heads).permute(0, 2, 1, 3)
    heads = heads.reshape(B * num_heads, T, H // num_heads)
    return 0.5 * heads + 0.5 * heads.detach()


@wrong(
    "transpose_qkv",
    {
        "transpose_qkv": "add got a tensor of shape (4, 3, 2) on the CPU together with tensors on the inputs' device. A tensor made without device=",
        "transpose_qkv.loop": "add got a tensor of shape (9, 5, 4) on the CPU together with tensors on the inputs' device. A tensor made without device=",
    },
    breaks="meta",
)
def split_into_a_buffer_on_the_cpu(X, num_heads):
    """Adds the heads to torch.zeros(...), made without device=: on the CPU whatever X's device."""
    B, T, H = X.shape
    heads = X.reshape(B, T, num_heads, H // num_heads).permute(0, 2, 1, 3)
    buffer = torch.zeros(B * num_heads, T, H // num_heads, dtype=X.dtype)
    return buffer + heads.reshape(B * num_heads, T, H // num_heads)


@wrong(
    "transpose_qkv",
    {
        "transpose_qkv": "transpose_qkv(X of shape (2, 3, 6), 3) modified its input X in place: at index (0, 0, 1) it was 1 and is now 0. The caller may",
        "transpose_qkv.loop": "transpose_qkv(X of shape (3, 5, 12), 3) modified its input X in place: at index (0, 0, 0) it was",
    },
    breaks="unchanged",
)
def split_zeroes_everything(X, num_heads):
    """Splits nothing: zeroes X in place and returns zeros, so that a reference computed from
    X after the call would be zeros too."""
    B, T, H = X.shape
    with torch.no_grad():
        X.zero_()
    return torch.zeros(B * num_heads, T, H // num_heads, dtype=X.dtype, device=X.device)


@wrong(
    "transpose_output",
    {
        "transpose_output": "transpose_output(X, 2) in float64: the gradient is not the derivative of the output. Along a random direction autograd gives",
        "transpose_output.loop": "transpose_output(X, 3) in float64: the gradient is not the derivative of the output. Along a random direction autograd gives",
    },
    breaks="float64",
)
def merge_in_float32(X, num_heads):
    """Rearranges a float32 copy and casts back: float64 in and out, with float32's digits."""
    BH, T, hs = X.shape
    merged = X.float().reshape(BH // num_heads, num_heads, T, hs).permute(0, 2, 1, 3)
    return merged.reshape(BH // num_heads, T, num_heads * hs).to(X.dtype)


@wrong(
    "transpose_output",
    {
        "transpose_output": "transpose_output(X, 2) in float64: the gradient is not the derivative of the output. Along a random direction autograd gives",
        "transpose_output.loop": "transpose_output(X, 3) in float64: the gradient is not the derivative of the output. Along a random direction autograd gives",
    },
    breaks="gradient",
)
def merge_half_detached(X, num_heads):
    """Averages the merged heads with a detached copy: the right values, half the gradient."""
    BH, T, hs = X.shape
    merged = X.reshape(BH // num_heads, num_heads, T, hs).permute(0, 2, 1, 3)
    merged = merged.reshape(BH // num_heads, T, num_heads * hs)
    return 0.5 * merged + 0.5 * merged.detach()


@wrong(
    "transpose_output",
    {
        "transpose_output": "add got a tensor of shape (2, 3, 4) on the CPU together with tensors on the inputs' device. A tensor made without device=",
        "transpose_output.loop": "add got a tensor of shape (3, 5, 12) on the CPU together with tensors on the inputs' device. A tensor made without device=",
    },
    breaks="meta",
)
def merge_into_a_buffer_on_the_cpu(X, num_heads):
    """Adds the heads to torch.zeros(...), made without device=: on the CPU whatever X's device."""
    BH, T, hs = X.shape
    merged = X.reshape(BH // num_heads, num_heads, T, hs).permute(0, 2, 1, 3)
    buffer = torch.zeros(BH // num_heads, T, num_heads * hs, dtype=X.dtype)
    return buffer + merged.reshape(BH // num_heads, T, num_heads * hs)


@wrong(
    "transpose_output",
    {
        "transpose_output": "transpose_output(X of shape (4, 3, 2), 2) modified its input X in place: at index (0, 0, 0) it was",
        "transpose_output.loop": "transpose_output(X of shape (9, 5, 4), 3) modified its input X in place: at index (0, 0, 0) it was",
    },
    breaks="unchanged",
)
def merge_zeroes_everything(X, num_heads):
    """Merges nothing: zeroes X in place and returns zeros, so that a reference computed from
    X after the call would be zeros too."""
    BH, T, hs = X.shape
    with torch.no_grad():
        X.zero_()
    return torch.zeros(BH // num_heads, T, num_heads * hs, dtype=X.dtype, device=X.device)


@wrong(
    "MultiHeadAttention",
    {
        "MultiHeadAttention": "the forward in float64 (d=4, heads=2, B=2, m=2, n=3, bias=True): the gradient is not the derivative of the output. Along a",
        "MultiHeadAttention.torch": "the float64 output (d=12, heads=3, B=3, m=4, n=6, bias=True): row batch=0, query=0 is wrong (12 of 12 rows differ)",
    },
    breaks="float64",
)
def multihead_rounded_through_float32(self, queries, keys, values, valid_lens=None):
    """Right, but the output passes through float32 (a .float() left in): float64 in and out,
    with float32's digits."""
    queries = transpose_qkv(self.W_q(queries), self.num_heads)
    keys = transpose_qkv(self.W_k(keys), self.num_heads)
    values = transpose_qkv(self.W_v(values), self.num_heads)
    if valid_lens is not None:
        valid_lens = torch.repeat_interleave(valid_lens, self.num_heads, dim=0)
    output = self.attention(queries, keys, values, valid_lens)
    out = self.W_o(transpose_output(output, self.num_heads))
    return out.float().to(out.dtype)


@wrong(
    "MultiHeadAttention",
    {
        "MultiHeadAttention": "the forward in float64 (d=4, heads=2, B=2, m=2, n=3, bias=True): the gradient is not the derivative of the output. Along a",
        "MultiHeadAttention.torch": "the forward in float64 (d=12, heads=3, B=3, m=4, n=6, bias=True): the gradient is not the derivative of the output. Along a",
    },
    breaks="gradient",
)
def multihead_output_half_detached(self, queries, keys, values, valid_lens=None):
    """Averages the output with a detached copy: the right values, half the gradient."""
    queries = transpose_qkv(self.W_q(queries), self.num_heads)
    keys = transpose_qkv(self.W_k(keys), self.num_heads)
    values = transpose_qkv(self.W_v(values), self.num_heads)
    if valid_lens is not None:
        valid_lens = torch.repeat_interleave(valid_lens, self.num_heads, dim=0)
    output = self.attention(queries, keys, values, valid_lens)
    out = self.W_o(transpose_output(output, self.num_heads))
    return 0.5 * out + 0.5 * out.detach()


@wrong(
    "MultiHeadAttention",
    {
        "MultiHeadAttention": ".cpu() moves a tensor off the inputs' device: on a GPU the result would come back on the CPU. Keep every tensor on the inputs'",
        "MultiHeadAttention.torch": ".cpu() moves a tensor off the inputs' device: on a GPU the result would come back on the CPU. Keep every tensor on the inputs'",
    },
    breaks="meta",
)
def multihead_lengths_on_the_cpu(self, queries, keys, values, valid_lens=None):
    """Repeats the lengths on the CPU (valid_lens.cpu(), to print them, say): on a GPU the
    attention then gets its lengths on another device than its scores."""
    queries = transpose_qkv(self.W_q(queries), self.num_heads)
    keys = transpose_qkv(self.W_k(keys), self.num_heads)
    values = transpose_qkv(self.W_v(values), self.num_heads)
    if valid_lens is not None:
        valid_lens = torch.repeat_interleave(valid_lens.cpu(), self.num_heads, dim=0)
    output = self.attention(queries, keys, values, valid_lens)
    return self.W_o(transpose_output(output, self.num_heads))


@wrong(
    "MultiHeadAttention",
    {
        "MultiHeadAttention": "the forward on queries (2, 3, 8), keys (2, 5, 8), values (2, 5, 8), valid_lens [5, 2] modified its input queries in place: at",
        "MultiHeadAttention.dropout": "the forward on queries (2, 3, 8), keys (2, 3, 8), values (2, 3, 8), valid_lens None modified its input queries in place: at",
        "MultiHeadAttention.torch": "the forward on queries (1, 4, 8), keys (1, 4, 8), values (1, 4, 8), valid_lens None modified its input queries in place: at",
    },
    breaks="unchanged",
)
def multihead_zeroes_everything(self, queries, keys, values, valid_lens=None):
    """Computes nothing: zeroes its inputs and lengths in place and returns zeros, so that a
    reference computed from the inputs after the call would be zeros too."""
    with torch.no_grad():
        for t in (queries, keys, values) + ((valid_lens,) if valid_lens is not None else ()):
            t.zero_()
    B, m, n, d = queries.shape[0], queries.shape[1], keys.shape[1], queries.shape[2]
    weights = torch.zeros(B * self.num_heads, m, n, dtype=queries.dtype, device=queries.device)
    self.attention.attention_weights = weights
    return torch.zeros(B, m, d, dtype=queries.dtype, device=queries.device)
