"""Unusual but correct answers to the chapter "Scaled dot-product attention" (4.4, the quiz)."""

import math

import torch

from solutions.dot_product import DotProductAttention
from solutions.masking import masked_softmax
from tests.unusual import unusual


@unusual("CosineAttention")
def cosine_through_dot_product_attention(self, queries, keys, values, valid_lens=None):
    """Reuses DotProductAttention.forward: unit queries times s·√d undo its 1/√d; lengths
    clamped at 10⁻³, so a zero row stays zero with a gradient of at most 10³."""
    d = queries.shape[-1]
    q = queries / torch.linalg.vector_norm(queries, dim=-1, keepdim=True).clamp_min(1e-3)
    k = keys / torch.linalg.vector_norm(keys, dim=-1, keepdim=True).clamp_min(1e-3)
    return DotProductAttention.forward(self, q * (self.scale * math.sqrt(d)), k, values, valid_lens)


@unusual("CosineAttention")
def cosine_divide_the_products(self, queries, keys, values, valid_lens=None):
    """einsum for qᵀk, then divides by the product of the lengths, kept away from 0."""
    dots = torch.einsum("bmd,bnd->bmn", queries, keys)
    lengths = queries.norm(dim=-1)[:, :, None] * keys.norm(dim=-1)[:, None, :]  # (B, m, n)
    scores = self.scale * dots / torch.where(lengths > 0, lengths, torch.ones_like(lengths))
    self.attention_weights = masked_softmax(scores, valid_lens)
    return torch.einsum("bmn,bnv->bmv", self.dropout(self.attention_weights), values)


@unusual("quiz_4_1")
def quiz_4_1_as_arithmetic():
    """The square root of the variance, written out: 16 ** 0.5."""
    answer_4_1 = (4 * 4) ** 0.5  # noqa: F841


@unusual("quiz_4_1")
def quiz_4_1_as_an_int():
    """An int, not a float."""
    answer_4_1 = 4  # noqa: F841


@unusual("quiz_4_2")
def quiz_4_2_capital_letter():
    """Upper case, with a space."""
    answer_4_2 = " B"  # noqa: F841


@unusual("quiz_4_2")
def quiz_4_2_from_a_variable():
    """Built from a name."""
    choice = "b"
    answer_4_2 = choice  # noqa: F841
