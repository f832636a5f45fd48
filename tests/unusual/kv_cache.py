"""Unusual but correct answers to Exercises 12.1 (sampling_probs) and 12.2 (attend_with_cache)."""

import math

import torch
import torch.nn.functional as F

from tests.unusual import unusual

# ------------------------------------------------------------------ Exercise 12.1: sampling_probs


@unusual("sampling_probs")
def sort_and_scatter(logits, temperature=1.0, top_k=None):
    """The scores sorted, the tail masked in sorted order and scattered back; exp and a sum by hand."""
    if temperature <= 0 or temperature != temperature:
        raise ValueError(f"temperature must be > 0, got temperature={temperature}")
    V = logits.shape[-1]
    k = V if top_k is None else top_k
    if isinstance(k, bool) or not isinstance(k, int) or k < 1 or k > V:
        raise ValueError(f"top_k={top_k} is outside 1..{V}")
    ordered, order = torch.sort(logits, dim=-1, descending=True)
    kth = ordered[..., k - 1 : k]  # (..., 1)
    keep_sorted = ordered >= kth
    keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
    scaled = (logits - logits.amax(dim=-1, keepdim=True)) / temperature
    weights = torch.where(keep, scaled.exp(), torch.zeros_like(scaled))
    return weights / weights.sum(dim=-1, keepdim=True)


@unusual("sampling_probs")
def topk_indices_into_minus_infinity(logits, temperature=1.0, top_k=None):
    """Exactly the top k by their indices, written into a tensor of -inf; half precision upcast."""
    if not (isinstance(temperature, (int, float)) and temperature > 0):
        raise ValueError(f"temperature must be a positive number, got {temperature}")
    if top_k is None:
        scores = logits / temperature
    else:
        if not isinstance(top_k, int) or not 0 < top_k <= logits.shape[-1]:
            raise ValueError(f"bad top_k: {top_k} (there are {logits.shape[-1]} tokens)")
        best = logits.topk(top_k, dim=-1)
        scores = torch.full_like(logits, float("-inf")).scatter(-1, best.indices, best.values)
        scores = scores / temperature
    if scores.dtype in (torch.float16, torch.bfloat16):
        return torch.softmax(scores.float(), dim=-1).to(logits.dtype)
    return torch.softmax(scores, dim=-1)


# --------------------------------------------------------------- Exercise 12.2: attend_with_cache


@unusual("attend_with_cache")
def sdpa_with_a_band_mask(queries, keys, values, cache=None, window=None):
    """PyTorch's fused attention, with a boolean mask: tril(diagonal=n), and triu for the window."""
    if cache is not None:
        keys = torch.cat((cache[0], keys), dim=-2)
        values = torch.cat((cache[1], values), dim=-2)
    t, total = queries.shape[-2], keys.shape[-2]
    n = total - t
    ones = torch.ones(t, total, dtype=torch.bool, device=queries.device)
    mask = ones.tril(diagonal=n)
    if window is not None:
        mask = mask & ones.triu(diagonal=n - window + 1)
    output = F.scaled_dot_product_attention(queries, keys, values, attn_mask=mask)
    if window is not None and total > window:
        keys, values = keys[..., total - window :, :], values[..., total - window :, :]
    return output, (keys, values)


@unusual("attend_with_cache")
def one_query_at_a_time(queries, keys, values, cache=None, window=None):
    """A loop over the new queries: each attends to a slice of the positions, with einsum."""
    if cache is None:
        all_keys, all_values = keys, values
    else:
        all_keys = torch.cat([cache[0], keys], dim=2)
        all_values = torch.cat([cache[1], values], dim=2)
    n = all_keys.shape[2] - queries.shape[2]
    outputs = []
    for i in range(queries.shape[2]):
        last = n + i + 1  # positions 0 .. n + i
        first = 0 if window is None else max(0, last - window)
        k, v = all_keys[:, :, first:last], all_values[:, :, first:last]
        scores = torch.einsum("bhd,bhjd->bhj", queries[:, :, i], k) / math.sqrt(k.shape[-1])
        outputs.append(torch.einsum("bhj,bhjv->bhv", scores.softmax(dim=-1), v))
    keep = all_keys.shape[2] if window is None else min(window, all_keys.shape[2])
    new_cache = (all_keys[:, :, -keep:], all_values[:, :, -keep:])
    return torch.stack(outputs, dim=2), new_cache


@unusual("attend_with_cache")
def into_a_new_buffer(queries, keys, values, cache=None, window=None):
    """A new buffer of n + t positions filled by slice assignment (a new tensor, never the cache)."""
    B, h, t, d = queries.shape
    n = 0 if cache is None else cache[0].shape[2]
    all_keys = keys.new_empty(B, h, n + t, d)
    all_values = values.new_empty(B, h, n + t, values.shape[-1])
    if cache is not None:
        all_keys[:, :, :n] = cache[0]
        all_values[:, :, :n] = cache[1]
    all_keys[:, :, n:] = keys
    all_values[:, :, n:] = values
    position = torch.arange(n + t, device=queries.device)
    offset = position[None, :] - position[n:, None]  # (t, n + t): key position - query position
    allowed = offset <= 0
    if window is not None:
        allowed = allowed & (offset > -window)
    scores = torch.matmul(queries, all_keys.transpose(2, 3)) * d**-0.5
    scores = torch.where(allowed, scores, torch.finfo(scores.dtype).min)
    output = torch.matmul(torch.softmax(scores, dim=-1), all_values)
    if window is not None:
        all_keys, all_values = all_keys[:, :, -window:], all_values[:, :, -window:]
    return output, (all_keys, all_values)


# ------------------------------------------------------------------ Check your understanding


@unusual("quiz_12_1")
def computed_in_mebibytes():
    """The size worked out in a line: layers · (keys and values) · d · bytes · tokens / 2**20."""
    answer_12_1 = 24 * 2 * 2048 * 2 * 4096 / 2**20  # noqa: F841


@unusual("quiz_12_1")
def as_a_tensor():
    """The count as a one-element tensor."""
    answer_12_1 = torch.tensor(768)  # noqa: F841


@unusual("quiz_12_2")
def as_a_float():
    """The position written as a float."""
    answer_12_2 = 72.0  # noqa: F841


@unusual("quiz_12_2")
def as_a_formula():
    """The position as its formula."""
    answer_12_2 = 100 - 4 * (8 - 1)  # noqa: F841


@unusual("quiz_12_3")
def capital_letter():
    """A capital letter with spaces around it."""
    answer_12_3 = " C "  # noqa: F841


@unusual("quiz_12_3")
def letter_from_a_list():
    """The letter picked from a list."""
    answer_12_3 = ["a", "b", "c", "d"][2]  # noqa: F841
