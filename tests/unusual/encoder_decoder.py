"""Unusual but correct answers to the decoder-block exercise."""

import torch

from solutions.multihead import causal_valid_lens
from tests.unusual import unusual


@unusual("DecoderBlock")
def decoder_with_inline_causal_lengths(
    self, X, enc_outputs, enc_valid_lens=None, tgt_valid_lens=None
):
    """The causal lengths made inline (arange, then torch.minimum with the padding)."""
    B, T = X.shape[0], X.shape[1]
    lens = torch.arange(1, T + 1, device=X.device).expand(B, T)  # (B, T): query t sees t + 1 keys
    if tgt_valid_lens is not None:
        lens = torch.minimum(lens, tgt_valid_lens.to(lens.dtype)[:, None])
    H = enc_outputs
    if self.norm_first:
        Y = self.norm1(X)
        X = X + self.dropout(self.self_attention(Y, Y, Y, lens))
        Y = self.norm2(X)
        X = X + self.dropout(self.cross_attention(Y, H, H, enc_valid_lens))
        return X + self.dropout(self.ffn(self.norm3(X)))
    X = self.norm1(X + self.dropout(self.self_attention(X, X, X, lens)))
    X = self.norm2(X + self.dropout(self.cross_attention(X, H, H, enc_valid_lens)))
    return self.norm3(X + self.dropout(self.ffn(X)))


@unusual("DecoderBlock")
def decoder_with_sublayer_helper(self, X, enc_outputs, enc_valid_lens=None, tgt_valid_lens=None):
    """One residual helper for the three sublayers, in either order."""
    self_lens = causal_valid_lens(X, tgt_valid_lens)

    def sublayer(X, f, norm):
        if self.norm_first:
            return X + self.dropout(f(norm(X)))
        return norm(X + self.dropout(f(X)))

    X = sublayer(X, lambda Y: self.self_attention(Y, Y, Y, self_lens), self.norm1)
    X = sublayer(
        X, lambda Y: self.cross_attention(Y, enc_outputs, enc_outputs, enc_valid_lens), self.norm2
    )
    return sublayer(X, self.ffn, self.norm3)


# ------------------------------------------------ Check your understanding


@unusual("quiz_9_1")
def capital_letter():
    """A capital letter: the form check lowers it."""
    answer_9_1 = "B"  # noqa: F841


@unusual("quiz_9_1")
def letter_with_spaces():
    """A letter with spaces around it."""
    answer_9_1 = " b\n"  # noqa: F841


@unusual("quiz_9_2")
def capital_letter_9_2():
    """A capital letter: the form check lowers it."""
    answer_9_2 = "C"  # noqa: F841


@unusual("quiz_9_2")
def letter_with_spaces_9_2():
    """A letter with spaces around it."""
    answer_9_2 = "  c"  # noqa: F841
