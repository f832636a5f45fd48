"""Unusual but correct answers to the exercise and questions of chapter 3."""

import torch

from solutions.masking import masked_softmax
from tests.unusual import unusual


@unusual("ConcatAttention")
def concat_einsum_bias_with_the_keys(self, queries, keys, values, valid_lens=None):
    """torch.split and einsum; the bias goes with the keys instead of the queries."""
    W_q, W_k = self.W.weight.split([queries.shape[-1], keys.shape[-1]], dim=1)
    q = torch.einsum("bmd,hd->bmh", queries, W_q)
    k = torch.einsum("bnd,hd->bnh", keys, W_k) + self.W.bias
    scores = torch.einsum("bmnh,h->bmn", torch.tanh(q[:, :, None] + k[:, None]), self.w_v.weight[0])
    self.attention_weights = masked_softmax(scores, valid_lens)
    return torch.einsum("bmn,bnv->bmv", self.dropout(self.attention_weights), values)


@unusual("ConcatAttention")
def concat_zero_padded_inputs(self, queries, keys, values, valid_lens=None):
    """self.W itself on [q; 0] and on [0; k] (zeros padded on), its bias taken off the second."""
    d_q, d_k = queries.shape[-1], keys.shape[-1]
    q = self.W(torch.nn.functional.pad(queries, (0, d_k)))  # W [q; 0] + b: (B, m, h)
    k = self.W(torch.nn.functional.pad(keys, (d_q, 0))) - self.W.bias  # W [0; k]: (B, n, h)
    scores = self.w_v(torch.tanh(q.unsqueeze(2) + k.unsqueeze(1))).squeeze(-1)
    self.attention_weights = masked_softmax(scores, valid_lens)
    return self.dropout(self.attention_weights) @ values


@unusual("quiz_3_1")
def quiz_3_1_capital_letter():
    """A capital letter."""
    answer_3_1 = "B"  # noqa: F841


@unusual("quiz_3_1")
def quiz_3_1_with_spaces():
    """The letter with spaces around it."""
    answer_3_1 = " b "  # noqa: F841


@unusual("quiz_3_2")
def quiz_3_2_capital_letter():
    """A capital letter."""
    answer_3_2 = "B"  # noqa: F841


@unusual("quiz_3_2")
def quiz_3_2_from_a_string():
    """The letter picked out of the options."""
    answer_3_2 = "abcd"[1]  # noqa: F841


@unusual("quiz_3_3")
def quiz_3_3_a_float():
    """A float that is a whole number."""
    answer_3_3 = 12352.0  # noqa: F841


@unusual("quiz_3_3")
def quiz_3_3_from_the_formula():
    """The count as h (d_q + d_k + 1), with the sizes named."""
    h, d_q, d_k = 64, 64, 128
    answer_3_3 = h * (d_q + d_k + 1)  # noqa: F841
