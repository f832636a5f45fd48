"""Unusual but correct answers to the transformer-block exercise."""

from tests.unusual import unusual


@unusual("TransformerBlock")
def block_with_sublayer_helper(self, X, valid_lens=None):
    """The two orders written with one residual helper per sublayer."""

    def attend(Y):
        return self.attention(Y, Y, Y, valid_lens)

    def residual(X, f, norm):
        if self.norm_first:
            return X + self.dropout(f(norm(X)))
        return norm(X + self.dropout(f(X)))

    X = residual(X, attend, self.norm1)
    return residual(X, self.ffn, self.norm2)


@unusual("TransformerBlock")
def block_named_steps(self, X, valid_lens=None):
    """Every intermediate named, the residual added last."""
    if self.norm_first:
        normed = self.norm1(X)
        attended = self.attention(normed, normed, normed, valid_lens)
        H = self.dropout(attended) + X
        return self.dropout(self.ffn(self.norm2(H))) + H
    attended = self.attention(X, X, X, valid_lens)
    H = self.norm1(self.dropout(attended) + X)
    return self.norm2(self.dropout(self.ffn(H)) + H)


# ---------------------------------------------------------------- Check your understanding


@unusual("quiz_8_1")
def layer_norm_upper_case():
    """The letter in upper case."""
    answer_8_1 = "B"  # noqa: F841


@unusual("quiz_8_1")
def layer_norm_with_a_space():
    """The letter after a space."""
    answer_8_1 = " b"  # noqa: F841


@unusual("quiz_8_2")
def stream_growth_computed():
    """The square root of the summed variances, computed."""
    import math

    answer_8_2 = math.sqrt(1 + 2 * 12)  # noqa: F841


@unusual("quiz_8_2")
def stream_growth_measured():
    """A value read off a simulation, within 2 % of the exact one."""
    answer_8_2 = 4.98  # noqa: F841


@unusual("quiz_8_3")
def pre_post_upper_case():
    """The letter in upper case."""
    answer_8_3 = "C"  # noqa: F841


@unusual("quiz_8_3")
def pre_post_with_a_newline():
    """The letter with a trailing newline."""
    answer_8_3 = "c\n"  # noqa: F841
