"""Wrong answers to the exercises of the chapter "Attention on images"."""

import math

import torch
import torch.nn.functional as F

from tests.wrong import wrong

# ----------------------------------------------------------------- patchify


@wrong(
    "patchify",
    {
        "patchify": "patchify(arange(32).reshape(1, 2, 4, 4): (1, 2, 4, 4), 2): row image=0, patch=0 is wrong",
        "patchify.values": "patchify(images (2, 3, 8, 12), 4): row image=0, patch=0 is wrong",
    },
)
def channels_and_pixels_mixed(images, patch_size):
    """One reshape, no permute: each "patch" is a run of consecutive numbers in memory."""
    B, C, H, W = images.shape
    p = patch_size
    if H % p or W % p:
        raise ValueError(f"patch_size={p} must divide the height {H} and the width {W}")
    return images.reshape(B, (H // p) * (W // p), C * p * p)


@wrong(
    "patchify",
    {
        "patchify": "patchify(arange(32).reshape(1, 2, 4, 4): (1, 2, 4, 4), 2): row image=0, patch=1 is wrong",
        "patchify.values": "patchify(images (2, 3, 8, 12), 4): row image=0, patch=1 is wrong",
    },
)
def patches_column_by_column(images, patch_size):
    """Numbers the patches down each column first: the grid's columns before its rows."""
    B, C, H, W = images.shape
    p = patch_size
    if H % p or W % p:
        raise ValueError(f"patch_size={p} must divide the height {H} and the width {W}")
    patches = images.reshape(B, C, H // p, p, W // p, p).permute(0, 4, 2, 1, 3, 5)
    return patches.reshape(B, (H // p) * (W // p), C * p * p)


@wrong(
    "patchify",
    {
        "patchify": "patchify(arange(32).reshape(1, 2, 4, 4): (1, 2, 4, 4), 2): row image=0, patch=0 is wrong",
        "patchify.values": "patchify(images (2, 3, 8, 12), 4): row image=0, patch=0 is wrong",
    },
)
def pixels_before_channels(images, patch_size):
    """Flattens each patch pixel by pixel, the channels innermost: (p, p, C), not (C, p, p)."""
    B, C, H, W = images.shape
    p = patch_size
    if H % p or W % p:
        raise ValueError(f"patch_size={p} must divide the height {H} and the width {W}")
    patches = images.reshape(B, C, H // p, p, W // p, p).permute(0, 2, 4, 3, 5, 1)
    return patches.reshape(B, (H // p) * (W // p), C * p * p)


@wrong(
    "patchify",
    {
        "patchify": "raised RuntimeError: view size is not compatible with input tensor's size and stride",
        "patchify.values": "raised RuntimeError: view size is not compatible with input tensor's size and stride",
    },
)
def view_after_permute(images, patch_size):
    """Ends with view: after a permute the patches are not contiguous, so only reshape can copy."""
    B, C, H, W = images.shape
    p = patch_size
    if H % p or W % p:
        raise ValueError(f"patch_size={p} must divide the height {H} and the width {W}")
    patches = images.view(B, C, H // p, p, W // p, p).permute(0, 2, 4, 1, 3, 5)
    return patches.view(B, (H // p) * (W // p), C * p * p)


@wrong(
    "patchify",
    {
        "patchify.safety": "patchify(a crop big[..., 1:9, 2:14]: (2, 3, 8, 12), 4): row image=0, patch=0 is wrong",
    },
)
def strides_of_a_contiguous_batch(images, patch_size):
    """as_strided with the strides a contiguous batch would have: a crop or a channels-last
    batch lies otherwise in memory, and the patches read the wrong pixels."""
    B, C, H, W = images.shape
    p = patch_size
    if H % p or W % p:
        raise ValueError(f"patch_size={p} must divide the height {H} and the width {W}")
    patches = images.as_strided(
        (B, H // p, W // p, C, p, p), (C * H * W, p * W, p, H * W, W, 1)
    )  # (B, rows, columns, C, p, p) read straight from memory
    return patches.reshape(B, (H // p) * (W // p), C * p * p)


@wrong(
    "patchify",
    {
        "patchify": "patchify(images (2, 3, 30, 32), 8) returned without an error: expected a ValueError",
        "patchify.errors": "patchify(images (1, 1, 12, 10), 4) returned without an error: expected a ValueError",
    },
)
def remainder_dropped_by_unfold(images, patch_size):
    """F.unfold with stride p: right patches, but the last rows of pixels vanish without a word."""
    p = patch_size
    return F.unfold(images, kernel_size=p, stride=p).transpose(1, 2)


@wrong(
    "patchify",
    {
        "patchify": "raised RuntimeError: shape '[2, 3, 3, 8, 4, 8]' is invalid for input of size 5760",
        "patchify.errors": "raised RuntimeError: shape '[1, 1, 3, 4, 2, 4]' is invalid for input of size 120",
    },
)
def reshape_error_left_to_torch(images, patch_size):
    """No check of its own: a size that p does not divide ends in reshape's error."""
    B, C, H, W = images.shape
    p = patch_size
    patches = images.reshape(B, C, H // p, p, W // p, p).permute(0, 2, 4, 1, 3, 5)
    return patches.reshape(B, (H // p) * (W // p), C * p * p)


@wrong(
    "patchify",
    {
        "patchify": "expected the message to name 30 and 8; it does not mention 30 or 8",
        "patchify.errors": "expected the message to name 10 and 4; it does not mention 10 or 4",
    },
)
def error_without_the_sizes(images, patch_size):
    """Raises the right error, but its message says neither which size fails nor p."""
    B, C, H, W = images.shape
    p = patch_size
    if H % p or W % p:
        raise ValueError("the patch size must divide the image size")
    patches = images.reshape(B, C, H // p, p, W // p, p).permute(0, 2, 4, 1, 3, 5)
    return patches.reshape(B, (H // p) * (W // p), C * p * p)


@wrong(
    "patchify",
    {
        "patchify": "__getitem__ got a tensor of shape (2, 3) on the CPU together with tensors on the inputs' device",
        "patchify.safety": "__getitem__ got a tensor of shape (4, 2) on the CPU together with tensors on the inputs' device",
    },
)
def index_made_on_the_cpu(images, patch_size):
    """Gathers the pixel rows and columns of each patch with index tensors made on the CPU."""
    B, C, H, W = images.shape
    p = patch_size
    if H % p or W % p:
        raise ValueError(f"patch_size={p} must divide the height {H} and the width {W}")
    rows = torch.arange(H).reshape(H // p, p)  # (rows of patches, p)
    columns = torch.arange(W).reshape(W // p, p)
    patches = images[:, :, rows][:, :, :, :, columns]  # (B, C, H/p, p, W/p, p)
    patches = patches.permute(0, 2, 4, 1, 3, 5)
    return patches.reshape(B, (H // p) * (W // p), C * p * p)


@wrong(
    "patchify",
    {
        "patchify": "has dtype torch.float32, expected torch.float64",
        "patchify.safety": "has dtype torch.float32, expected torch.float16",
    },
)
def always_float32(images, patch_size):
    """Casts the patches to float32: float64 and half-precision images change dtype."""
    B, C, H, W = images.shape
    p = patch_size
    if H % p or W % p:
        raise ValueError(f"patch_size={p} must divide the height {H} and the width {W}")
    patches = images.float().reshape(B, C, H // p, p, W // p, p).permute(0, 2, 4, 1, 3, 5)
    return patches.reshape(B, (H // p) * (W // p), C * p * p)


# ----------------------------------------------------------------- RelativeSelfAttention2d


@wrong(
    "RelativeSelfAttention2d",
    {
        "RelativeSelfAttention2d": "relative_bias[a, b] = (5a + b) / 10: row batch=0, query=0 is wrong",
        "RelativeSelfAttention2d.values": "attention_weights on a 1 × 4 grid (B=2, bias=True): row batch=0, query=0 is wrong",
        "RelativeSelfAttention2d.positions": "(each should copy the value of the patch to its left): row batch=0, patch=0 is wrong",
    },
)
def offsets_reversed(self, X):
    """Offsets i - j instead of j - i: the bias of "the key on my left" goes to the key on the right."""
    h, w = self.grid_size
    queries, keys, values = self.W_q(X), self.W_k(X), self.W_v(X)
    scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(queries.shape[-1])
    index = torch.arange(h * w, device=X.device)
    rows, columns = index // w, index % w
    d_rows = rows[:, None] - rows[None, :]
    d_columns = columns[:, None] - columns[None, :]
    bias = self.relative_bias[d_rows + h - 1, d_columns + w - 1]
    self.attention_weights = torch.softmax(scores + bias, dim=-1)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "RelativeSelfAttention2d",
    {
        "RelativeSelfAttention2d": "relative_bias[a, b] = (5a + b) / 10: row batch=0, query=0 is wrong",
        "RelativeSelfAttention2d.values": "attention_weights on a 2 × 3 grid (B=3, bias=False): row batch=0, query=0 is wrong",
    },
)
def rows_and_columns_swapped(self, X):
    """Reads patch i as row i % h, column i // h: the patches numbered column by column."""
    h, w = self.grid_size
    queries, keys, values = self.W_q(X), self.W_k(X), self.W_v(X)
    scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(queries.shape[-1])
    index = torch.arange(h * w, device=X.device)
    rows, columns = index % h, index // h
    d_rows = rows[None, :] - rows[:, None]
    d_columns = columns[None, :] - columns[:, None]
    bias = self.relative_bias[d_rows + h - 1, d_columns + w - 1]
    self.attention_weights = torch.softmax(scores + bias, dim=-1)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "RelativeSelfAttention2d",
    {
        "RelativeSelfAttention2d": "relative_bias[a, b] = (5a + b) / 10: row batch=0, query=1 is wrong",
        "RelativeSelfAttention2d.values": "attention_weights on a 1 × 4 grid (B=2, bias=True): row batch=0, query=0 is wrong (8 of 8 rows differ)",
    },
)
def offsets_not_shifted(self, X):
    """Indexes with the raw offsets: a negative offset silently reads the table from its end."""
    h, w = self.grid_size
    queries, keys, values = self.W_q(X), self.W_k(X), self.W_v(X)
    scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(queries.shape[-1])
    index = torch.arange(h * w, device=X.device)
    rows, columns = index // w, index % w
    bias = self.relative_bias[rows[None, :] - rows[:, None], columns[None, :] - columns[:, None]]
    self.attention_weights = torch.softmax(scores + bias, dim=-1)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "RelativeSelfAttention2d",
    {
        "RelativeSelfAttention2d": "relative_bias[a, b] = (5a + b) / 10: row batch=0, query=0 is wrong",
        "RelativeSelfAttention2d.values": "raised IndexError: index 21 is out of bounds for dimension 0 with size 7",
        "RelativeSelfAttention2d.positions": "(each should copy the value of the patch to its left): row batch=0, patch=0 is wrong",
    },
)
def flattened_with_the_wrong_stride(self, X):
    """Flattens the table and steps 2h - 1 entries per row of offsets, where a row has 2w - 1."""
    h, w = self.grid_size
    queries, keys, values = self.W_q(X), self.W_k(X), self.W_v(X)
    scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(queries.shape[-1])
    index = torch.arange(h * w, device=X.device)
    rows, columns = index // w, index % w
    d_rows = rows[None, :] - rows[:, None] + h - 1
    d_columns = columns[None, :] - columns[:, None] + w - 1
    bias = self.relative_bias.reshape(-1)[d_rows * (2 * h - 1) + d_columns]
    self.attention_weights = torch.softmax(scores + bias, dim=-1)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "RelativeSelfAttention2d",
    {
        "RelativeSelfAttention2d": "__getitem__ got a tensor of shape (6, 6) on the CPU together with tensors on the inputs' device",
        "RelativeSelfAttention2d.values": "__getitem__ got a tensor of shape (6, 6) on the CPU together with tensors on the inputs' device",
    },
)
def offsets_made_on_the_cpu(self, X):
    """torch.arange without device=: fine on the CPU, wrong wherever X lives elsewhere."""
    h, w = self.grid_size
    queries, keys, values = self.W_q(X), self.W_k(X), self.W_v(X)
    scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(queries.shape[-1])
    index = torch.arange(h * w)
    rows, columns = index // w, index % w
    d_rows = rows[None, :] - rows[:, None]
    d_columns = columns[None, :] - columns[:, None]
    bias = self.relative_bias[d_rows + h - 1, d_columns + w - 1]
    self.attention_weights = torch.softmax(scores + bias, dim=-1)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "RelativeSelfAttention2d",
    {
        "RelativeSelfAttention2d": "no gradient reached relative_bias.",
        "RelativeSelfAttention2d.values": "no gradient reached relative_bias.",
        "RelativeSelfAttention2d.positions": "no gradient reached relative_bias (a 2 × 3 grid)",
    },
)
def bias_table_detached(self, X):
    """Reads the table through .detach(): the biases never learn."""
    h, w = self.grid_size
    queries, keys, values = self.W_q(X), self.W_k(X), self.W_v(X)
    scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(queries.shape[-1])
    index = torch.arange(h * w, device=X.device)
    rows, columns = index // w, index % w
    d_rows = rows[None, :] - rows[:, None]
    d_columns = columns[None, :] - columns[:, None]
    bias = self.relative_bias.detach()[d_rows + h - 1, d_columns + w - 1]
    self.attention_weights = torch.softmax(scores + bias, dim=-1)
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "RelativeSelfAttention2d",
    {
        "RelativeSelfAttention2d": "row sums of the weights: row index (0,) is wrong",
        "RelativeSelfAttention2d.values": "attention_weights on a 1 × 1 grid (B=1, bias=False): row batch=0, query=0 is wrong",
    },
)
def bias_added_to_the_weights(self, X):
    """Adds the bias after the softmax: the rows no longer sum to 1."""
    h, w = self.grid_size
    queries, keys, values = self.W_q(X), self.W_k(X), self.W_v(X)
    scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(queries.shape[-1])
    index = torch.arange(h * w, device=X.device)
    rows, columns = index // w, index % w
    d_rows = rows[None, :] - rows[:, None]
    d_columns = columns[None, :] - columns[:, None]
    bias = self.relative_bias[d_rows + h - 1, d_columns + w - 1]
    self.attention_weights = torch.softmax(scores, dim=-1) + bias
    return torch.bmm(self.dropout(self.attention_weights), values)


@wrong(
    "RelativeSelfAttention2d",
    {
        "RelativeSelfAttention2d": "the output in train mode (p=0.5, X = I, W_v = I so that the output is the weights): with dropout p=0.5 in",
        "RelativeSelfAttention2d.dropout": "the output in train mode (p=0.3, X = I, W_v = I so that the output is the weights): with dropout p=0.3 in",
    },
)
def dropout_twice(self, X):
    """Dropout on the weights and again on the output."""
    h, w = self.grid_size
    queries, keys, values = self.W_q(X), self.W_k(X), self.W_v(X)
    scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(queries.shape[-1])
    index = torch.arange(h * w, device=X.device)
    rows, columns = index // w, index % w
    d_rows = rows[None, :] - rows[:, None]
    d_columns = columns[None, :] - columns[:, None]
    bias = self.relative_bias[d_rows + h - 1, d_columns + w - 1]
    self.attention_weights = torch.softmax(scores + bias, dim=-1)
    return self.dropout(torch.bmm(self.dropout(self.attention_weights), values))


# ----------------------------------------------------------------- check your understanding
# A wrong answer to a question returns the value; pasted into the notebook it becomes
# ``answer_11_1 = <value>`` (see tests/wrong/__init__.py).


@wrong("quiz_11_1", {"quiz_11_1.key": "answer_11_1 = 'b' is not the right choice"})
def patches_numbered_by_columns():
    """Numbers the patches down the columns first."""
    return "b"


@wrong("quiz_11_1", {"quiz_11_1.key": "answer_11_1 = 'c' is not the right choice"})
def four_patches_per_row():
    """Takes the grid's height, 4 patches, for the length of a row."""
    return "c"


@wrong(
    "quiz_11_1",
    {"quiz_11_1": "answer_11_1 should be one of the letters 'a', 'b', 'c', 'd', got 7"},
)
def the_patch_number_itself():
    """Not a letter."""
    return 7


@wrong("quiz_11_2", {"quiz_11_2.key": "answer_11_2 = 16 is not the right patch size"})
def the_patch_size_vit_uses():
    """ViT's own patch size, not the smallest one where the projections still dominate."""
    return 16


@wrong("quiz_11_2", {"quiz_11_2.key": "answer_11_2 = 8 is not the right patch size"})
def crossover_for_d_64():
    """The crossover of the chapter's table (d = 64 gives N > 384), not that of d = 768."""
    return 8


@wrong("quiz_11_2", {"quiz_11_2": "answer_11_2 should be a divisor of 224, got 3"})
def not_a_divisor():
    """3.3 rounded down: p = 3 does not divide 224."""
    return 3


@wrong("quiz_11_3", {"quiz_11_3.key": "answer_11_3 = 'a' is not the right choice"})
def the_learned_table_runs():
    """A table of 49 vectors has no row for patch 49 and beyond."""
    return "a"


@wrong("quiz_11_3", {"quiz_11_3.key": "answer_11_3 = 'c' is not the right choice"})
def the_offset_table_runs():
    """A 13 × 13 table has no entry for offsets beyond ±6."""
    return "c"


@wrong("quiz_11_3", {"quiz_11_3.key": "answer_11_3 = 'd' is not the right choice"})
def a_fixed_number_of_tokens():
    """Nothing in attention fixes the number of tokens."""
    return "d"
