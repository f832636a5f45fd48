"""Wrong answers to the exercise of the chapter "The encoder–decoder transformer"."""

from solutions.multihead import causal_valid_lens
from tests.wrong import wrong


@wrong(
    "DecoderBlock",
    {
        "DecoderBlock": "outputs at target positions 0 and 1 after changing target positions 2 and 3 (the self-attention must be causal): row batch=0, position=0 is wrong",
        "DecoderBlock.torch": "the output against nn.TransformerDecoderLayer (post-norm, bias=True, enc_valid_lens=None, tgt_valid_lens=None): row batch=0, position=0 is wrong",
        "DecoderBlock.masks": "post-norm: the output at target position 0 against the block run on the prefix X[:, :1] (later target positions must be masked): row batch=0 is wrong",
    },
)
def no_causal_mask(self, X, enc_outputs, enc_valid_lens=None, tgt_valid_lens=None):
    """Masks only the target padding: every target position sees the positions after it."""
    H = enc_outputs
    if self.norm_first:
        Y = self.norm1(X)
        X = X + self.dropout(self.self_attention(Y, Y, Y, tgt_valid_lens))
        Y = self.norm2(X)
        X = X + self.dropout(self.cross_attention(Y, H, H, enc_valid_lens))
        X = X + self.dropout(self.ffn(self.norm3(X)))
    else:
        X = self.norm1(X + self.dropout(self.self_attention(X, X, X, tgt_valid_lens)))
        X = self.norm2(X + self.dropout(self.cross_attention(X, H, H, enc_valid_lens)))
        X = self.norm3(X + self.dropout(self.ffn(X)))
    return X


@wrong(
    "DecoderBlock",
    {
        "DecoderBlock.torch": "the output against nn.TransformerDecoderLayer (post-norm, bias=True, enc_valid_lens=None, tgt_valid_lens=[5, 2, 1]): row batch=1, position=2 is wrong",
    },
)
def causal_mask_ignores_target_padding(
    self, X, enc_outputs, enc_valid_lens=None, tgt_valid_lens=None
):
    """Builds the causal mask without tgt_valid_lens: padded targets are attended to."""
    self_lens = causal_valid_lens(X)
    H = enc_outputs
    if self.norm_first:
        Y = self.norm1(X)
        X = X + self.dropout(self.self_attention(Y, Y, Y, self_lens))
        Y = self.norm2(X)
        X = X + self.dropout(self.cross_attention(Y, H, H, enc_valid_lens))
        X = X + self.dropout(self.ffn(self.norm3(X)))
    else:
        X = self.norm1(X + self.dropout(self.self_attention(X, X, X, self_lens)))
        X = self.norm2(X + self.dropout(self.cross_attention(X, H, H, enc_valid_lens)))
        X = self.norm3(X + self.dropout(self.ffn(X)))
    return X


@wrong(
    "DecoderBlock",
    {
        "DecoderBlock": "the output after changing encoder outputs beyond enc_valid_lens=[5, 2] (the cross-attention must mask the source padding): row batch=1, position=0 is wrong",
        "DecoderBlock.torch": "the output against nn.TransformerDecoderLayer (post-norm, bias=True, enc_valid_lens=[7, 3, 1], tgt_valid_lens=None): row batch=1, position=0 is wrong",
        "DecoderBlock.masks": "post-norm: the output after changing encoder outputs beyond enc_valid_lens=[6, 1, 4]: row batch=1, position=0 is wrong",
    },
)
def source_padding_ignored(self, X, enc_outputs, enc_valid_lens=None, tgt_valid_lens=None):
    """Never passes enc_valid_lens to the cross-attention: padded source tokens are attended to."""
    self_lens = causal_valid_lens(X, tgt_valid_lens)
    H = enc_outputs
    if self.norm_first:
        Y = self.norm1(X)
        X = X + self.dropout(self.self_attention(Y, Y, Y, self_lens))
        Y = self.norm2(X)
        X = X + self.dropout(self.cross_attention(Y, H, H))
        X = X + self.dropout(self.ffn(self.norm3(X)))
    else:
        X = self.norm1(X + self.dropout(self.self_attention(X, X, X, self_lens)))
        X = self.norm2(X + self.dropout(self.cross_attention(X, H, H)))
        X = self.norm3(X + self.dropout(self.ffn(X)))
    return X


@wrong(
    "DecoderBlock",
    {
        "DecoderBlock": "no gradient reached enc_outputs: is it detached inside the block?",
        "DecoderBlock.torch": "the output against nn.TransformerDecoderLayer (post-norm, bias=True, enc_valid_lens=None, tgt_valid_lens=None): row batch=0, position=0 is wrong",
        "DecoderBlock.masks": "post-norm: changing the encoder output at source position 0 of sequence 0 did not change its output",
    },
)
def cross_attention_on_the_decoder(self, X, enc_outputs, enc_valid_lens=None, tgt_valid_lens=None):
    """Takes the keys and values of the cross-attention from the decoder: the source is never read."""
    self_lens = causal_valid_lens(X, tgt_valid_lens)
    if self.norm_first:
        Y = self.norm1(X)
        X = X + self.dropout(self.self_attention(Y, Y, Y, self_lens))
        Y = self.norm2(X)
        X = X + self.dropout(self.cross_attention(Y, Y, Y, self_lens))
        X = X + self.dropout(self.ffn(self.norm3(X)))
    else:
        X = self.norm1(X + self.dropout(self.self_attention(X, X, X, self_lens)))
        X = self.norm2(X + self.dropout(self.cross_attention(X, X, X, self_lens)))
        X = self.norm3(X + self.dropout(self.ffn(X)))
    return X


@wrong(
    "DecoderBlock",
    {
        "DecoderBlock": "the output against nn.TransformerDecoderLayer (pre-norm, bias=True, enc_valid_lens=[5, 2], tgt_valid_lens=[4, 3]): row batch=0, position=0 is wrong",
        "DecoderBlock.torch": "the output against nn.TransformerDecoderLayer (pre-norm, bias=True, enc_valid_lens=None, tgt_valid_lens=None): row batch=0, position=0 is wrong",
        "DecoderBlock.dtypes": "the output against nn.TransformerDecoderLayer (float64, pre-norm, bias=True, enc_valid_lens=[5, 2], tgt_valid_lens=[4, 3]): row batch=0, position=0 is wrong",
    },
)
def pre_norm_normalises_the_encoder_outputs(
    self, X, enc_outputs, enc_valid_lens=None, tgt_valid_lens=None
):
    """Pre-norm that also passes the encoder's outputs through norm2 before the cross-attention."""
    self_lens = causal_valid_lens(X, tgt_valid_lens)
    H = enc_outputs
    if self.norm_first:
        Y = self.norm1(X)
        X = X + self.dropout(self.self_attention(Y, Y, Y, self_lens))
        Y, H = self.norm2(X), self.norm2(H)
        X = X + self.dropout(self.cross_attention(Y, H, H, enc_valid_lens))
        X = X + self.dropout(self.ffn(self.norm3(X)))
    else:
        X = self.norm1(X + self.dropout(self.self_attention(X, X, X, self_lens)))
        X = self.norm2(X + self.dropout(self.cross_attention(X, H, H, enc_valid_lens)))
        X = self.norm3(X + self.dropout(self.ffn(X)))
    return X


@wrong(
    "DecoderBlock",
    {
        "DecoderBlock": "post-norm output with silent sublayers (expected LN₃(LN₂(LN₁(X))), in that order): row batch=0, position=0 is wrong",
        "DecoderBlock.torch": "the output against nn.TransformerDecoderLayer (post-norm, bias=True, enc_valid_lens=None, tgt_valid_lens=None): row batch=0, position=0 is wrong",
        "DecoderBlock.dropout": "the post-norm output in eval mode with dropout=1 (dropout must be off): row batch=0, position=0 is wrong",
    },
)
def norms_in_the_wrong_order(self, X, enc_outputs, enc_valid_lens=None, tgt_valid_lens=None):
    """Uses norm3 after the self-attention and norm1 after the FFN."""
    self_lens = causal_valid_lens(X, tgt_valid_lens)
    H = enc_outputs
    if self.norm_first:
        Y = self.norm3(X)
        X = X + self.dropout(self.self_attention(Y, Y, Y, self_lens))
        Y = self.norm2(X)
        X = X + self.dropout(self.cross_attention(Y, H, H, enc_valid_lens))
        X = X + self.dropout(self.ffn(self.norm1(X)))
    else:
        X = self.norm3(X + self.dropout(self.self_attention(X, X, X, self_lens)))
        X = self.norm2(X + self.dropout(self.cross_attention(X, H, H, enc_valid_lens)))
        X = self.norm1(X + self.dropout(self.ffn(X)))
    return X


@wrong(
    "DecoderBlock",
    {
        "DecoderBlock": "post-norm output with silent sublayers (expected LN₃(LN₂(LN₁(X))), in that order): row batch=0, position=0 is wrong",
        "DecoderBlock.torch": "the output against nn.TransformerDecoderLayer (post-norm, bias=True, enc_valid_lens=None, tgt_valid_lens=None): row batch=0, position=0 is wrong",
    },
)
def no_residual_around_the_cross_attention(
    self, X, enc_outputs, enc_valid_lens=None, tgt_valid_lens=None
):
    """Forgets to add X back around the cross-attention sublayer."""
    self_lens = causal_valid_lens(X, tgt_valid_lens)
    H = enc_outputs
    if self.norm_first:
        Y = self.norm1(X)
        X = X + self.dropout(self.self_attention(Y, Y, Y, self_lens))
        Y = self.norm2(X)
        X = self.dropout(self.cross_attention(Y, H, H, enc_valid_lens))
        X = X + self.dropout(self.ffn(self.norm3(X)))
    else:
        X = self.norm1(X + self.dropout(self.self_attention(X, X, X, self_lens)))
        X = self.norm2(self.dropout(self.cross_attention(X, H, H, enc_valid_lens)))
        X = self.norm3(X + self.dropout(self.ffn(X)))
    return X


@wrong(
    "DecoderBlock",
    {
        "DecoderBlock": "the output against nn.TransformerDecoderLayer (post-norm, bias=True, enc_valid_lens=[5, 2], tgt_valid_lens=[4, 3]): row batch=0, position=0 is wrong",
        "DecoderBlock.torch": "the output against nn.TransformerDecoderLayer (post-norm, bias=True, enc_valid_lens=None, tgt_valid_lens=None): row batch=0, position=0 is wrong",
    },
)
def causal_mask_hides_the_diagonal(self, X, enc_outputs, enc_valid_lens=None, tgt_valid_lens=None):
    """Position t sees only the positions before it, not itself (position 0 sees nothing)."""
    self_lens = causal_valid_lens(X, tgt_valid_lens) - 1
    H = enc_outputs
    if self.norm_first:
        Y = self.norm1(X)
        X = X + self.dropout(self.self_attention(Y, Y, Y, self_lens))
        Y = self.norm2(X)
        X = X + self.dropout(self.cross_attention(Y, H, H, enc_valid_lens))
        X = X + self.dropout(self.ffn(self.norm3(X)))
    else:
        X = self.norm1(X + self.dropout(self.self_attention(X, X, X, self_lens)))
        X = self.norm2(X + self.dropout(self.cross_attention(X, H, H, enc_valid_lens)))
        X = self.norm3(X + self.dropout(self.ffn(X)))
    return X


@wrong(
    "DecoderBlock",
    {
        "DecoderBlock": "the post-norm output in train mode with dropout=1 (expected LN₃(LN₂(LN₁(X)))): row batch=0, position=0 is wrong",
        "DecoderBlock.dropout": "the post-norm output in train mode with dropout=1 (each sublayer's output dropped, expected LN₃(LN₂(LN₁(X)))): row batch=0, position=0 is wrong",
    },
)
def dropout_on_the_sum(self, X, enc_outputs, enc_valid_lens=None, tgt_valid_lens=None):
    """Drops the residual sum instead of the sublayer's output, so dropout also hits X."""
    self_lens = causal_valid_lens(X, tgt_valid_lens)
    H = enc_outputs
    if self.norm_first:
        Y = self.norm1(X)
        X = self.dropout(X + self.self_attention(Y, Y, Y, self_lens))
        Y = self.norm2(X)
        X = self.dropout(X + self.cross_attention(Y, H, H, enc_valid_lens))
        X = self.dropout(X + self.ffn(self.norm3(X)))
    else:
        X = self.norm1(self.dropout(X + self.self_attention(X, X, X, self_lens)))
        X = self.norm2(self.dropout(X + self.cross_attention(X, H, H, enc_valid_lens)))
        X = self.norm3(self.dropout(X + self.ffn(X)))
    return X


@wrong(
    "DecoderBlock",
    {
        "DecoderBlock": "no gradient reached enc_outputs: is it detached inside the block?",
        "DecoderBlock.dtypes": "post-norm: no gradient reached enc_outputs",
    },
)
def detaches_the_encoder_outputs(self, X, enc_outputs, enc_valid_lens=None, tgt_valid_lens=None):
    """Detaches enc_outputs, so no gradient reaches the encoder."""
    self_lens = causal_valid_lens(X, tgt_valid_lens)
    H = enc_outputs.detach()
    if self.norm_first:
        Y = self.norm1(X)
        X = X + self.dropout(self.self_attention(Y, Y, Y, self_lens))
        Y = self.norm2(X)
        X = X + self.dropout(self.cross_attention(Y, H, H, enc_valid_lens))
        X = X + self.dropout(self.ffn(self.norm3(X)))
    else:
        X = self.norm1(X + self.dropout(self.self_attention(X, X, X, self_lens)))
        X = self.norm2(X + self.dropout(self.cross_attention(X, H, H, enc_valid_lens)))
        X = self.norm3(X + self.dropout(self.ffn(X)))
    return X


@wrong(
    "DecoderBlock",
    {
        "DecoderBlock": "X was modified in place: at index (0, 0, 0)",
        "DecoderBlock.dtypes": "X (pre-norm, float64) was modified in place: at index (0, 0, 0)",
    },
    breaks="unchanged",
)
def writes_into_the_input(self, X, enc_outputs, enc_valid_lens=None, tgt_valid_lens=None):
    """Adds the sublayers' outputs into X in place (X += ...), changing the caller's tensor."""
    self_lens = causal_valid_lens(X, tgt_valid_lens)
    H = enc_outputs
    if self.norm_first:
        Y = self.norm1(X)
        X += self.dropout(self.self_attention(Y, Y, Y, self_lens))
        Y = self.norm2(X)
        X += self.dropout(self.cross_attention(Y, H, H, enc_valid_lens))
        X += self.dropout(self.ffn(self.norm3(X)))
    else:
        X = self.norm1(X + self.dropout(self.self_attention(X, X, X, self_lens)))
        X = self.norm2(X + self.dropout(self.cross_attention(X, H, H, enc_valid_lens)))
        X = self.norm3(X + self.dropout(self.ffn(X)))
    return X


# ------------------------------------------------ Check your understanding


@wrong("quiz_9_1", {"quiz_9_1.key": "answer_9_1 = 'a', (B, h, 12, 5)"})
def keys_as_rows():
    """Rows and columns swapped: a row per source token, a column per prefix position."""
    answer_9_1 = "a"  # noqa: F841


@wrong("quiz_9_1", {"quiz_9_1.key": "answer_9_1 = 'c', (B, h, 5, 5)"})
def square_like_self_attention():
    """The weights of the decoder's self-attention, not of its cross-attention."""
    answer_9_1 = "c"  # noqa: F841


@wrong("quiz_9_1", {"quiz_9_1.key": "answer_9_1 = 'd', (B, h, 1, 12)"})
def only_the_new_position():
    """As with a KV cache: one query per step. The chapter's greedy loop reruns the prefix."""
    answer_9_1 = "d"  # noqa: F841


@wrong("quiz_9_2", {"quiz_9_2.key": "answer_9_2 = 'a': the whole source is known"})
def causal_over_the_source():
    """The decoder generates left to right, so every attention in it is thought causal."""
    answer_9_2 = "a"  # noqa: F841


@wrong("quiz_9_2", {"quiz_9_2.key": "answer_9_2 = 'b': the causal mask belongs to"})
def causal_and_padding():
    """Both masks of the decoder's self-attention, copied to the cross-attention."""
    answer_9_2 = "b"  # noqa: F841


@wrong("quiz_9_2", {"quiz_9_2.key": "answer_9_2 = 'd': the encoder's outputs at padded"})
def no_mask_at_all():
    """The encoder masked its padding, so its padded outputs are thought harmless."""
    answer_9_2 = "d"  # noqa: F841


# ----------------------------------------------------------------- property classes


@wrong(
    "DecoderBlock",
    {
        "DecoderBlock.dtypes": "the output against nn.TransformerDecoderLayer (float64, post-norm, bias=True, enc_valid_lens=[5, 2], tgt_valid_lens=[4, 3]): row",
    },
    breaks="float64",
)
def decoder_rounded_through_float32(self, X, enc_outputs, enc_valid_lens=None, tgt_valid_lens=None):
    """Right, but the output passes through float32 (a .float() left in): float64 in and out,
    with float32's digits."""
    self_lens = causal_valid_lens(X, tgt_valid_lens)
    H = enc_outputs
    if self.norm_first:
        Y = self.norm1(X)
        X = X + self.dropout(self.self_attention(Y, Y, Y, self_lens))
        Y = self.norm2(X)
        X = X + self.dropout(self.cross_attention(Y, H, H, enc_valid_lens))
        X = X + self.dropout(self.ffn(self.norm3(X)))
    else:
        X = self.norm1(X + self.dropout(self.self_attention(X, X, X, self_lens)))
        X = self.norm2(X + self.dropout(self.cross_attention(X, H, H, enc_valid_lens)))
        X = self.norm3(X + self.dropout(self.ffn(X)))
    return X.float().to(X.dtype)


@wrong(
    "DecoderBlock",
    {
        "DecoderBlock.dtypes": "post-norm: the gradient of X against nn.TransformerDecoderLayer's: row batch=0, position=0 is wrong (8 of 8 rows differ)",
    },
    breaks="gradient",
)
def decoder_output_half_detached(self, X, enc_outputs, enc_valid_lens=None, tgt_valid_lens=None):
    """Averages the output with a detached copy: the right values, half the gradient."""
    self_lens = causal_valid_lens(X, tgt_valid_lens)
    H = enc_outputs
    if self.norm_first:
        Y = self.norm1(X)
        X = X + self.dropout(self.self_attention(Y, Y, Y, self_lens))
        Y = self.norm2(X)
        X = X + self.dropout(self.cross_attention(Y, H, H, enc_valid_lens))
        X = X + self.dropout(self.ffn(self.norm3(X)))
    else:
        X = self.norm1(X + self.dropout(self.self_attention(X, X, X, self_lens)))
        X = self.norm2(X + self.dropout(self.cross_attention(X, H, H, enc_valid_lens)))
        X = self.norm3(X + self.dropout(self.ffn(X)))
    return 0.5 * X + 0.5 * X.detach()


@wrong(
    "DecoderBlock",
    {
        "DecoderBlock": ".cpu() moves a tensor off the inputs' device: on a GPU the result would come back on the CPU. Keep every tensor on the inputs'",
        "DecoderBlock.dtypes": ".cpu() moves a tensor off the inputs' device: on a GPU the result would come back on the CPU. Keep every tensor on the inputs'",
    },
    breaks="meta",
)
def decoder_lengths_on_the_cpu(self, X, enc_outputs, enc_valid_lens=None, tgt_valid_lens=None):
    """Moves the source lengths to the CPU (enc_valid_lens.cpu(), to print them, say): on a
    GPU the cross-attention then gets its lengths on another device than X."""
    if enc_valid_lens is not None:
        enc_valid_lens = enc_valid_lens.cpu()
    self_lens = causal_valid_lens(X, tgt_valid_lens)
    H = enc_outputs
    if self.norm_first:
        Y = self.norm1(X)
        X = X + self.dropout(self.self_attention(Y, Y, Y, self_lens))
        Y = self.norm2(X)
        X = X + self.dropout(self.cross_attention(Y, H, H, enc_valid_lens))
        X = X + self.dropout(self.ffn(self.norm3(X)))
    else:
        X = self.norm1(X + self.dropout(self.self_attention(X, X, X, self_lens)))
        X = self.norm2(X + self.dropout(self.cross_attention(X, H, H, enc_valid_lens)))
        X = self.norm3(X + self.dropout(self.ffn(X)))
    return X


@wrong(
    "DecoderBlock",
    {
        "DecoderBlock": "X_out - X of a pre-norm block whose only live sublayer is the self-attention, p=0.5, in train mode: with dropout p=0.5 in",
        "DecoderBlock.dropout": "X_out - X of a pre-norm block whose only live sublayer is the self-attention, p=0.3, in train mode: with dropout p=0.3 in",
    },
    breaks="dropout",
)
def decoder_dropout_twice(self, X, enc_outputs, enc_valid_lens=None, tgt_valid_lens=None):
    """Dropout twice on each sublayer's output: with p = 1 as right as once, with 0 < p < 1 it
    keeps (1 - p)² of the outputs, scaled by 1 / (1 - p)²."""
    self_lens = causal_valid_lens(X, tgt_valid_lens)
    H = enc_outputs

    def drop(Y):
        return self.dropout(self.dropout(Y))

    if self.norm_first:
        Y = self.norm1(X)
        X = X + drop(self.self_attention(Y, Y, Y, self_lens))
        Y = self.norm2(X)
        X = X + drop(self.cross_attention(Y, H, H, enc_valid_lens))
        X = X + drop(self.ffn(self.norm3(X)))
    else:
        X = self.norm1(X + drop(self.self_attention(X, X, X, self_lens)))
        X = self.norm2(X + drop(self.cross_attention(X, H, H, enc_valid_lens)))
        X = self.norm3(X + drop(self.ffn(X)))
    return X
