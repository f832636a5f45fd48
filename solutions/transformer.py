"""From the chapter "The transformer block": PositionWiseFFN, TransformerBlock.

Generated from book/transformer_block.ipynb by ``python -m autograder export``. Do not edit this
file: edit the ``#@save transformer`` cells of the notebook, then run ``make export``.
"""

from torch import nn

from solutions.multihead import MultiHeadAttention
from solutions.self_attention import check_sequence


class PositionWiseFFN(nn.Module):
    """The position-wise feed-forward network: Linear -> ReLU -> Linear at every position.

    Args:
        num_hiddens: size d of the input and output vectors.
        ffn_num_hiddens: size of the hidden layer (usually 4 d).
        bias: whether the two linear layers have a bias.

    Shape:
        - X: (B, T, num_hiddens)
        - output: (B, T, num_hiddens)
    """

    def __init__(self, num_hiddens, ffn_num_hiddens, bias=True):
        super().__init__()
        self.dense1 = nn.Linear(num_hiddens, ffn_num_hiddens, bias=bias)
        self.relu = nn.ReLU()
        self.dense2 = nn.Linear(ffn_num_hiddens, num_hiddens, bias=bias)

    def forward(self, X):
        return self.dense2(self.relu(self.dense1(X)))  # (B, T, d) -> (B, T, d_ffn) -> (B, T, d)


class TransformerBlock(nn.Module):
    """A transformer (encoder) block: self-attention and an FFN, each with a residual and a LayerNorm.

    Post-norm (``norm_first=False``, Vaswani et al. 2017):
    ``X = LN1(X + drop(MHA(X))); X = LN2(X + drop(FFN(X)))``.
    Pre-norm (``norm_first=True``): ``X = X + drop(MHA(LN1(X))); X = X + drop(FFN(LN2(X)))``.

    Args:
        num_hiddens: size d of every position's vector.
        ffn_num_hiddens: hidden size of the position-wise FFN.
        num_heads: number of attention heads; must divide num_hiddens.
        dropout: dropout on the attention weights and on each sublayer's output.
        norm_first: pre-norm if True, post-norm if False.
        bias: whether the linear layers and the LayerNorms have a bias.

    Shape:
        - X: (B, T, num_hiddens)
        - valid_lens: None or (B,), the valid length of each sequence (keys beyond it are padding)
        - output: (B, T, num_hiddens)
    """

    def __init__(
        self, num_hiddens, ffn_num_hiddens, num_heads, dropout, norm_first=False, bias=True
    ):
        super().__init__()
        self.norm_first = norm_first
        self.attention = MultiHeadAttention(num_hiddens, num_heads, dropout, bias=bias)
        self.norm1 = nn.LayerNorm(num_hiddens, bias=bias)
        self.ffn = PositionWiseFFN(num_hiddens, ffn_num_hiddens, bias=bias)
        self.norm2 = nn.LayerNorm(num_hiddens, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, X, valid_lens=None):
        check_sequence(X, self.norm1.normalized_shape[0])
        if self.norm_first:
            Y = self.norm1(X)  # (B, T, d)
            X = X + self.dropout(self.attention(Y, Y, Y, valid_lens))  # (B, T, d)
            X = X + self.dropout(self.ffn(self.norm2(X)))  # (B, T, d)
        else:
            X = self.norm1(X + self.dropout(self.attention(X, X, X, valid_lens)))  # (B, T, d)
            X = self.norm2(X + self.dropout(self.ffn(X)))  # (B, T, d)
        return X
