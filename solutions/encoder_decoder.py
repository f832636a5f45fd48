"""From the chapter "The encoder–decoder transformer": DecoderBlock.

Generated from book/encoder_decoder.ipynb by ``python -m autograder export``. Do not edit this
file: edit the ``#@save encoder_decoder`` cells of the notebook, then run ``make export``.
"""

from torch import nn

from solutions.multihead import MultiHeadAttention, causal_valid_lens
from solutions.self_attention import check_sequence
from solutions.transformer import PositionWiseFFN


class DecoderBlock(nn.Module):
    """A transformer decoder block: causal self-attention, cross-attention and an FFN.

    Each sublayer has a residual connection, dropout on its output and a LayerNorm; H are the
    encoder's outputs. Post-norm (``norm_first=False``, Vaswani et al. 2017)::

        X = LN1(X + drop(SelfMHA(X, X, X)))  # causal
        X = LN2(X + drop(CrossMHA(X, H, H)))  # source padding
        X = LN3(X + drop(FFN(X)))

    Pre-norm (``norm_first=True``)::

        X = X + drop(SelfMHA(LN1(X), LN1(X), LN1(X)))
        X = X + drop(CrossMHA(LN2(X), H, H))
        X = X + drop(FFN(LN3(X)))

    Args:
        num_hiddens: size d of every position's vector, in the decoder and the encoder.
        ffn_num_hiddens: hidden size of the position-wise FFN.
        num_heads: number of attention heads; must divide num_hiddens.
        dropout: dropout on the attention weights and on each sublayer's output.
        norm_first: pre-norm if True, post-norm if False.
        bias: whether the linear layers and the LayerNorms have a bias.

    Shape:
        - X: (B, T, num_hiddens), the decoder's input (the target shifted right)
        - enc_outputs: (B, S, num_hiddens), the encoder's outputs (keys and values)
        - enc_valid_lens: None or (B,), the valid length of each source
        - tgt_valid_lens: None or (B,), the valid length of each target
        - output: (B, T, num_hiddens)
    """

    def __init__(
        self, num_hiddens, ffn_num_hiddens, num_heads, dropout, norm_first=False, bias=True
    ):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(num_hiddens, num_heads, dropout, bias=bias)
        self.norm1 = nn.LayerNorm(num_hiddens, bias=bias)
        self.cross_attention = MultiHeadAttention(num_hiddens, num_heads, dropout, bias=bias)
        self.norm2 = nn.LayerNorm(num_hiddens, bias=bias)
        self.ffn = PositionWiseFFN(num_hiddens, ffn_num_hiddens, bias=bias)
        self.norm3 = nn.LayerNorm(num_hiddens, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, X, enc_outputs, enc_valid_lens=None, tgt_valid_lens=None):
        d = self.norm1.normalized_shape[0]
        check_sequence(X, d)
        check_sequence(enc_outputs, d, "enc_outputs")
        if enc_outputs.shape[0] != X.shape[0]:
            raise ValueError(
                f"X and enc_outputs must have the same batch size, got {X.shape[0]} "
                f"and {enc_outputs.shape[0]}"
            )
        self_lens = causal_valid_lens(X, tgt_valid_lens)  # (B, T): query t sees keys 0..t
        H = enc_outputs  # (B, S, d): keys and values of the cross-attention
        if self.norm_first:
            Y = self.norm1(X)  # (B, T, d)
            X = X + self.dropout(self.self_attention(Y, Y, Y, self_lens))  # (B, T, d)
            Y = self.norm2(X)  # (B, T, d)
            X = X + self.dropout(self.cross_attention(Y, H, H, enc_valid_lens))  # (B, T, d)
            X = X + self.dropout(self.ffn(self.norm3(X)))  # (B, T, d)
        else:
            X = self.norm1(X + self.dropout(self.self_attention(X, X, X, self_lens)))
            X = self.norm2(X + self.dropout(self.cross_attention(X, H, H, enc_valid_lens)))
            X = self.norm3(X + self.dropout(self.ffn(X)))  # (B, T, d)
        return X
