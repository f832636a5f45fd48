"""Wrong answers to the exercise of the chapter "The transformer block"."""

from tests.wrong import wrong


@wrong(
    "TransformerBlock",
    {
        "TransformerBlock": "post-norm output with silent sublayers (expected LN₂(LN₁(X)), norm1 first): row batch=0, position=0 is wrong",
        "TransformerBlock.torch": "the output against nn.TransformerEncoderLayer (post-norm, bias=True, valid_lens=None): row batch=0, position=0 is wrong",
        "TransformerBlock.dropout": "the post-norm output in eval mode with dropout=1 (dropout must be off): row batch=0, position=0 is wrong",
    },
)
def norm_placement_swapped(self, X, valid_lens=None):
    """Post-norm when norm_first is True and pre-norm when it is False."""
    if not self.norm_first:
        Y = self.norm1(X)
        X = X + self.dropout(self.attention(Y, Y, Y, valid_lens))
        X = X + self.dropout(self.ffn(self.norm2(X)))
    else:
        X = self.norm1(X + self.dropout(self.attention(X, X, X, valid_lens)))
        X = self.norm2(X + self.dropout(self.ffn(X)))
    return X


@wrong(
    "TransformerBlock",
    {
        "TransformerBlock": "pre-norm output with silent sublayers (expected X: the residual path is untouched): row batch=0, position=0 is wrong",
        "TransformerBlock.torch": "the output against nn.TransformerEncoderLayer (pre-norm, bias=True, valid_lens=None): row batch=0, position=0 is wrong",
        "TransformerBlock.dropout": "the pre-norm output in eval mode with dropout=1 (dropout must be off): row batch=0, position=0 is wrong",
    },
)
def pre_norm_normalises_the_stream(self, X, valid_lens=None):
    """Pre-norm that normalises the residual stream itself: X = LN(X); X = X + f(X)."""
    if self.norm_first:
        X = self.norm1(X)
        X = X + self.dropout(self.attention(X, X, X, valid_lens))
        X = self.norm2(X)
        X = X + self.dropout(self.ffn(X))
    else:
        X = self.norm1(X + self.dropout(self.attention(X, X, X, valid_lens)))
        X = self.norm2(X + self.dropout(self.ffn(X)))
    return X


@wrong(
    "TransformerBlock",
    {
        "TransformerBlock": "post-norm output with silent sublayers (expected LN₂(LN₁(X)), norm1 first): row batch=0, position=0 is wrong",
        "TransformerBlock.torch": "the output against nn.TransformerEncoderLayer (post-norm, bias=True, valid_lens=None): row batch=0, position=0 is wrong",
        "TransformerBlock.dropout": "the post-norm output in eval mode with dropout=1 (dropout must be off): row batch=0, position=0 is wrong",
    },
)
def no_residual_around_attention(self, X, valid_lens=None):
    """Forgets to add X back around the attention sublayer."""
    if self.norm_first:
        Y = self.norm1(X)
        X = self.dropout(self.attention(Y, Y, Y, valid_lens))
        X = X + self.dropout(self.ffn(self.norm2(X)))
    else:
        X = self.norm1(self.dropout(self.attention(X, X, X, valid_lens)))
        X = self.norm2(X + self.dropout(self.ffn(X)))
    return X


@wrong(
    "TransformerBlock",
    {
        "TransformerBlock": "post-norm output with silent sublayers (expected LN₂(LN₁(X)), norm1 first): row batch=0, position=0 is wrong",
        "TransformerBlock.torch": "the output against nn.TransformerEncoderLayer (post-norm, bias=True, valid_lens=None): row batch=0, position=0 is wrong",
        "TransformerBlock.dropout": "the post-norm output in eval mode with dropout=1 (dropout must be off): row batch=0, position=0 is wrong",
    },
)
def no_residual_around_the_ffn(self, X, valid_lens=None):
    """Forgets to add X back around the feed-forward sublayer."""
    if self.norm_first:
        Y = self.norm1(X)
        X = X + self.dropout(self.attention(Y, Y, Y, valid_lens))
        X = self.dropout(self.ffn(self.norm2(X)))
    else:
        X = self.norm1(X + self.dropout(self.attention(X, X, X, valid_lens)))
        X = self.norm2(self.dropout(self.ffn(X)))
    return X


@wrong(
    "TransformerBlock",
    {
        "TransformerBlock": "post-norm output with silent sublayers (expected LN₂(LN₁(X)), norm1 first): row batch=0, position=0 is wrong",
        "TransformerBlock.torch": "the output against nn.TransformerEncoderLayer (post-norm, bias=True, valid_lens=None): row batch=0, position=0 is wrong",
        "TransformerBlock.dropout": "the post-norm output in eval mode with dropout=1 (dropout must be off): row batch=0, position=0 is wrong",
    },
)
def one_norm_for_both(self, X, valid_lens=None):
    """Uses norm1 for both sublayers; norm2 is never used."""
    if self.norm_first:
        Y = self.norm1(X)
        X = X + self.dropout(self.attention(Y, Y, Y, valid_lens))
        X = X + self.dropout(self.ffn(self.norm1(X)))
    else:
        X = self.norm1(X + self.dropout(self.attention(X, X, X, valid_lens)))
        X = self.norm1(X + self.dropout(self.ffn(X)))
    return X


@wrong(
    "TransformerBlock",
    {
        "TransformerBlock.torch": "the output against nn.TransformerEncoderLayer (post-norm, bias=True, valid_lens=[6, 4, 1]): row batch=1, position=0 is wrong",
        "TransformerBlock.dropout": "the post-norm output in eval mode with dropout=1 (dropout must be off): row batch=1, position=0 is wrong",
        "TransformerBlock.properties": "post-norm outputs at valid positions after changing the padded inputs: row batch=1, position=0 is wrong",
    },
)
def padding_ignored(self, X, valid_lens=None):
    """Never passes valid_lens to the attention, so padded positions are attended to."""
    if self.norm_first:
        Y = self.norm1(X)
        X = X + self.dropout(self.attention(Y, Y, Y))
        X = X + self.dropout(self.ffn(self.norm2(X)))
    else:
        X = self.norm1(X + self.dropout(self.attention(X, X, X)))
        X = self.norm2(X + self.dropout(self.ffn(X)))
    return X


@wrong(
    "TransformerBlock",
    {
        "TransformerBlock.torch": "the output against nn.TransformerEncoderLayer (post-norm, bias=True, valid_lens=None): row batch=0, position=0 is wrong",
        "TransformerBlock.dropout": "the post-norm output in eval mode with dropout=1 (dropout must be off): row batch=0, position=0 is wrong",
    },
)
def ffn_without_activation(self, X, valid_lens=None):
    """Calls dense1 and dense2 directly and forgets the ReLU: the FFN is one linear map."""
    if self.norm_first:
        Y = self.norm1(X)
        X = X + self.dropout(self.attention(Y, Y, Y, valid_lens))
        X = X + self.dropout(self.ffn.dense2(self.ffn.dense1(self.norm2(X))))
    else:
        X = self.norm1(X + self.dropout(self.attention(X, X, X, valid_lens)))
        X = self.norm2(X + self.dropout(self.ffn.dense2(self.ffn.dense1(X))))
    return X


@wrong(
    "TransformerBlock",
    {
        "TransformerBlock.dropout": "the post-norm output in train mode with dropout=1 (each sublayer's output dropped, expected LN₂(LN₁(X))): row batch=0, position=0 is wrong"
    },
)
def dropout_on_the_sum(self, X, valid_lens=None):
    """Drops the residual sum instead of the sublayer's output, so dropout also hits X."""
    if self.norm_first:
        Y = self.norm1(X)
        X = self.dropout(X + self.attention(Y, Y, Y, valid_lens))
        X = self.dropout(X + self.ffn(self.norm2(X)))
    else:
        X = self.norm1(self.dropout(X + self.attention(X, X, X, valid_lens)))
        X = self.norm2(self.dropout(X + self.ffn(X)))
    return X


@wrong(
    "TransformerBlock",
    {
        "TransformerBlock.dropout": "the post-norm output in train mode with dropout=1 (each sublayer's output dropped, expected LN₂(LN₁(X))): row batch=0, position=0 is wrong"
    },
)
def no_dropout_on_the_sublayers(self, X, valid_lens=None):
    """Leaves out self.dropout: only the attention weights are ever dropped."""
    if self.norm_first:
        Y = self.norm1(X)
        X = X + self.attention(Y, Y, Y, valid_lens)
        X = X + self.ffn(self.norm2(X))
    else:
        X = self.norm1(X + self.attention(X, X, X, valid_lens))
        X = self.norm2(X + self.ffn(X))
    return X


# ----------------------------------------------------------------- classes that used to escape


@wrong(
    "TransformerBlock",
    {
        "TransformerBlock": "the forward on X (2, 3, 4), valid_lens [2, 3] raised RuntimeError: mat1 and mat2 must have the same dtype",
        "TransformerBlock.torch": "the forward on X (3, 5, 6), valid_lens [2, 5, 1] raised RuntimeError: mat1 and mat2 must have the same dtype",
    },
)
def block_forced_float32(self, X, valid_lens=None):
    """Casts to float32 at the start: float64 in, float32 out."""
    X = X.float()
    if self.norm_first:
        Y = self.norm1(X)
        X = X + self.dropout(self.attention(Y, Y, Y, valid_lens))
        return X + self.dropout(self.ffn(self.norm2(X)))
    X = self.norm1(X + self.dropout(self.attention(X, X, X, valid_lens)))
    return self.norm2(X + self.dropout(self.ffn(X)))


@wrong(
    "TransformerBlock",
    {
        "TransformerBlock": "the forward on X (2, 5, 8), valid_lens None modified its input X in place: at index (0, 0, 0) it was -2.31041",
        "TransformerBlock.torch": "the forward on X (3, 6, 12), valid_lens None modified its input X in place: at index (0, 0, 0) it was",
    },
    breaks="unchanged",
)
def residual_added_in_place(self, X, valid_lens=None):
    """X += ...: the caller's X changes (and a leaf that requires grad refuses it)."""
    if self.norm_first:
        Y = self.norm1(X)
        X += self.dropout(self.attention(Y, Y, Y, valid_lens))
        X += self.dropout(self.ffn(self.norm2(X)))
        return X
    X = self.norm1(X + self.dropout(self.attention(X, X, X, valid_lens)))
    return self.norm2(X + self.dropout(self.ffn(X)))


@wrong(
    "TransformerBlock",
    {
        "TransformerBlock": "X_out - X of a pre-norm block with a silent ffn (the attention sublayer), p=0.5 in train mode: with dropout",
        "TransformerBlock.dropout": "X_out - X of a pre-norm block with a silent ffn (the attention sublayer), p=0.3 in train mode: with dropout",
    },
    breaks="dropout",
)
def sublayer_dropout_twice(self, X, valid_lens=None):
    """Dropout twice on each sublayer's output."""
    if self.norm_first:
        Y = self.norm1(X)
        X = X + self.dropout(self.dropout(self.attention(Y, Y, Y, valid_lens)))
        return X + self.dropout(self.dropout(self.ffn(self.norm2(X))))
    X = self.norm1(X + self.dropout(self.dropout(self.attention(X, X, X, valid_lens))))
    return self.norm2(X + self.dropout(self.dropout(self.ffn(X))))


# ---------------------------------------------------------------- Check your understanding
# The body is what a student writes in the answer cell (a local here, hence the noqa).


@wrong(
    "quiz_8_1",
    {"quiz_8_1.key": "answer_8_1 = 'a': nn.LayerNorm(8) normalises over the last axis"},
)
def layer_norm_over_the_batch():
    """Batch normalisation's statistics: each feature over the batch and the positions."""
    answer_8_1 = "a"  # noqa: F841


@wrong(
    "quiz_8_1",
    {"quiz_8_1.key": "answer_8_1 = 'd': nn.LayerNorm(8) normalises over the last axis"},
)
def layer_norm_mixes_sequences():
    """The other sequences of the batch enter a position's statistics."""
    answer_8_1 = "d"  # noqa: F841


@wrong("quiz_8_2", {"quiz_8_2.key": "answer_8_2 = 25: the stream after 12 blocks"})
def stream_growth_as_variance():
    """The variance, 1 + 24, instead of the standard deviation."""
    answer_8_2 = 25  # noqa: F841


@wrong("quiz_8_2", {"quiz_8_2.key": "answer_8_2 = 13: the stream after 12 blocks"})
def stream_growth_adds_deviations():
    """One per block and one for the input, as if standard deviations added: 1 + 12."""
    answer_8_2 = 13  # noqa: F841


@wrong(
    "quiz_8_2",
    {
        "quiz_8_2": "answer_8_2: no answer yet: set it to a number",
        "quiz_8_2.key": "answer_8_2: no answer yet: set it to a number",
    },
)
def stream_growth_left_blank():
    """The stub's ``...`` left in place."""
    answer_8_2 = ...  # noqa: F841


@wrong(
    "quiz_8_3",
    {
        "quiz_8_3": "Hint: a pre-norm block returns X + f(LN(X)): which part of it is normalised?",
        "quiz_8_3.key": "answer_8_3 = 'b': a pre-norm block returns X + f(LN(X))",
    },
)
def pre_norm_normalises_the_stream_answer():
    """Pre-norm as X = LN(X); X = X + f(X): the stream itself normalised."""
    answer_8_3 = "b"  # noqa: F841


@wrong(
    "quiz_8_3",
    {
        "quiz_8_3": "Hint: the next section trains deep stacks of both forms side by side",
        "quiz_8_3.key": "answer_8_3 = 'd': post-norm is the form that is hard to train at depth",
    },
)
def post_norm_trains_as_easily():
    """A normalised output at every block taken for easy training at depth."""
    answer_8_3 = "d"  # noqa: F841


@wrong(
    "quiz_8_3",
    {
        "quiz_8_3": "Hint: both forms have the same two LayerNorms and sublayers",
        "quiz_8_3.key": "answer_8_3 = 'a': both forms have the same two LayerNorms",
    },
)
def pre_norm_adds_layer_norms():
    """Thinks pre-norm adds LayerNorms to the block, where it moves them."""
    answer_8_3 = "a"  # noqa: F841


# ----------------------------------------------------------------- property classes


@wrong(
    "TransformerBlock",
    {
        "TransformerBlock": "the forward in float64 (post-norm, B=2, T=3, d=4): the gradient is not the derivative of the output. Along a random direction",
        "TransformerBlock.torch": "the float64 output (post-norm, B=3, T=5, d=6): row batch=0, position=0 is wrong (15 of 15 rows differ)",
    },
    breaks="float64",
)
def block_rounded_through_float32(self, X, valid_lens=None):
    """Right, but the output passes through float32 (a .float() left in): float64 in and out,
    with float32's digits."""
    if self.norm_first:
        Y = self.norm1(X)
        X = X + self.dropout(self.attention(Y, Y, Y, valid_lens))
        X = X + self.dropout(self.ffn(self.norm2(X)))
    else:
        X = self.norm1(X + self.dropout(self.attention(X, X, X, valid_lens)))
        X = self.norm2(X + self.dropout(self.ffn(X)))
    return X.float().to(X.dtype)


@wrong(
    "TransformerBlock",
    {
        "TransformerBlock": "the forward in float64 (post-norm, B=2, T=3, d=4): the gradient is not the derivative of the output. Along a random direction",
        "TransformerBlock.torch": "the forward in float64 (post-norm, B=3, T=5, d=6): the gradient is not the derivative of the output. Along a random direction",
    },
    breaks="gradient",
)
def block_output_half_detached(self, X, valid_lens=None):
    """Averages the output with a detached copy: the right values, half the gradient."""
    if self.norm_first:
        Y = self.norm1(X)
        X = X + self.dropout(self.attention(Y, Y, Y, valid_lens))
        X = X + self.dropout(self.ffn(self.norm2(X)))
    else:
        X = self.norm1(X + self.dropout(self.attention(X, X, X, valid_lens)))
        X = self.norm2(X + self.dropout(self.ffn(X)))
    return 0.5 * X + 0.5 * X.detach()


@wrong(
    "TransformerBlock",
    {
        "TransformerBlock": ".cpu() moves a tensor off the inputs' device: on a GPU the result would come back on the CPU. Keep every tensor on the inputs'",
        "TransformerBlock.torch": ".cpu() moves a tensor off the inputs' device: on a GPU the result would come back on the CPU. Keep every tensor on the inputs'",
    },
    breaks="meta",
)
def block_lengths_on_the_cpu(self, X, valid_lens=None):
    """Moves the lengths to the CPU (valid_lens.cpu(), to print them, say): on a GPU the
    attention then gets its lengths on another device than X."""
    if valid_lens is not None:
        valid_lens = valid_lens.cpu()
    if self.norm_first:
        Y = self.norm1(X)
        X = X + self.dropout(self.attention(Y, Y, Y, valid_lens))
        X = X + self.dropout(self.ffn(self.norm2(X)))
    else:
        X = self.norm1(X + self.dropout(self.attention(X, X, X, valid_lens)))
        X = self.norm2(X + self.dropout(self.ffn(X)))
    return X
