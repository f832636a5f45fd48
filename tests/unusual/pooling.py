"""Unusual but correct answers to the attention-pooling exercise."""

import torch

from tests.unusual import unusual


@unusual("nadaraya_watson")
def pooling_with_einsum_and_logsumexp(queries, keys, values, bandwidth=1.0):
    """Weights as exp(s - logsumexp(s)), the weighted sums with einsum."""
    scores = -((queries[:, None] - keys[None, :]) ** 2) / (2 * bandwidth**2)
    weights = torch.exp(scores - torch.logsumexp(scores, dim=-1, keepdim=True))
    return torch.einsum("mn,n->m", weights, values), weights


@unusual("nadaraya_watson")
def pooling_expanded_square(queries, keys, values, bandwidth=1.0):
    """(q - k)² expanded as q² - 2qk + k², with torch.outer; the sums as (weights * values).sum."""
    sq = queries[:, None] ** 2 - 2 * torch.outer(queries, keys) + keys[None, :] ** 2
    weights = torch.nn.functional.softmax(sq / (-2 * bandwidth**2), dim=1)
    return (weights * values).sum(dim=1), weights


# ---------------------------------------------------------------- check your understanding


@unusual("quiz_1_1")
def capital_letter_with_spaces():
    """The right letter in capitals with spaces around it."""
    answer_1_1 = " B "  # noqa: F841


@unusual("quiz_1_1")
def letter_from_an_expression():
    """The right letter computed, not typed: the second of "abcd"."""
    answer_1_1 = "abcd"[1]  # noqa: F841


@unusual("quiz_1_2")
def a_float_close_to_the_value():
    """The prediction rounded to two decimals, as the run cell prints it."""
    answer_1_2 = 30.00  # noqa: F841


@unusual("quiz_1_2")
def a_one_element_tensor():
    """The prediction as a 0-d tensor, straight from a computation."""
    answer_1_2 = torch.tensor(30.0)  # noqa: F841
