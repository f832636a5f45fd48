"""Wrong answers to Exercises 12.1 (sampling_probs) and 12.2 (attend_with_cache)."""

import math

import torch

from tests.wrong import wrong

# ------------------------------------------------------------------ Exercise 12.1: sampling_probs


@wrong(
    "sampling_probs",
    {
        "sampling_probs": "sampling_probs([2.0, 1.0, 0.5, -1.0], temperature=0.5, top_k=None): the values are wrong",
        "sampling_probs.values": "temperature=0.25, top_k=2): the values are wrong",
        "sampling_probs.safety": "sampling_probs(<(3, 2, 9)>, temperature=1.4, top_k=3): row index (0, 0) is wrong",
    },
)
def temperature_multiplies(logits, temperature=1.0, top_k=None):
    """The scores multiplied by the temperature: T = 0.5 flattens instead of sharpening."""
    if not temperature > 0:
        raise ValueError(f"temperature must be positive, got {temperature!r}")
    V = logits.shape[-1]
    if top_k is not None and not 1 <= top_k <= V:
        raise ValueError(f"top_k must be an integer from 1 to {V}, got {top_k!r}")
    scores = logits * temperature
    if top_k is not None:
        kth = scores.topk(top_k, dim=-1).values[..., -1:]
        scores = scores.masked_fill(scores < kth, float("-inf"))
    return torch.softmax(scores, dim=-1)


@wrong(
    "sampling_probs",
    {
        "sampling_probs": "sampling_probs([2.0, 1.0, 0.5, -1.0], temperature=1.0, top_k=2): the values are wrong",
        "sampling_probs.values": "temperature=0.25, top_k=2): the values are wrong",
        "sampling_probs.safety": "sampling_probs(<(3, 2, 9)>, temperature=1.4, top_k=3): row index (0, 0) is wrong",
    },
)
def top_k_keeps_one_fewer(logits, temperature=1.0, top_k=None):
    """<= instead of <: the k-th largest score is filtered out too, so only k - 1 remain."""
    if not temperature > 0:
        raise ValueError(f"temperature must be positive, got {temperature!r}")
    V = logits.shape[-1]
    if top_k is not None and not 1 <= top_k <= V:
        raise ValueError(f"top_k must be an integer from 1 to {V}, got {top_k!r}")
    scores = logits / temperature
    if top_k is not None:
        kth = scores.topk(top_k, dim=-1).values[..., -1:]
        scores = scores.masked_fill(scores <= kth, float("-inf"))
    return torch.softmax(scores, dim=-1)


@wrong(
    "sampling_probs",
    {
        "sampling_probs": "the token at (2,) is outside the top 2 of its row but gets probability 0.08259, expected exactly 0",
        "sampling_probs.values": "the token at (0,) is outside the top 2 of its row but gets probability",
        "sampling_probs.safety": "the token at (0, 0, 0) is outside the top 3 of its row but gets probability 0.05229",
    },
)
def filtered_scores_set_to_zero(logits, temperature=1.0, top_k=None):
    """The filtered scores set to 0 instead of -inf: exp(0) = 1, so they keep a probability."""
    if not temperature > 0:
        raise ValueError(f"temperature must be positive, got {temperature!r}")
    V = logits.shape[-1]
    if top_k is not None and not 1 <= top_k <= V:
        raise ValueError(f"top_k must be an integer from 1 to {V}, got {top_k!r}")
    scores = logits / temperature
    if top_k is not None:
        kth = scores.topk(top_k, dim=-1).values[..., -1:]
        scores = scores.masked_fill(scores < kth, 0.0)
    return torch.softmax(scores, dim=-1)


@wrong(
    "sampling_probs",
    {
        "sampling_probs": "the row sums to 0.8337, expected 1: are the kept probabilities renormalised",
        "sampling_probs.values": "row (0,) sums to 0.2645, expected 1",
        "sampling_probs.safety": "row (0, 0) sums to 0.6338, expected 1",
    },
)
def top_k_not_renormalised(logits, temperature=1.0, top_k=None):
    """The softmax first, then the filtered probabilities zeroed: the rest no longer sums to 1."""
    if not temperature > 0:
        raise ValueError(f"temperature must be positive, got {temperature!r}")
    V = logits.shape[-1]
    if top_k is not None and not 1 <= top_k <= V:
        raise ValueError(f"top_k must be an integer from 1 to {V}, got {top_k!r}")
    probs = torch.softmax(logits / temperature, dim=-1)
    if top_k is not None:
        kth = probs.topk(top_k, dim=-1).values[..., -1:]
        probs = probs.masked_fill(probs < kth, 0.0)
    return probs


@wrong(
    "sampling_probs",
    {
        "sampling_probs": "sampling_probs(<(3, 6)>, temperature=0.7, top_k=3): the token at (0, 2) is outside the top 3 of its row",
        "sampling_probs.values": "sampling_probs(<(4, 17)>, temperature=3.0, top_k=1): the token at (1, 0) is outside the top 1 of its row",
        "sampling_probs.safety": "the token at (0, 0, 0) is outside the top 3 of its row but gets probability nan",
    },
)
def top_k_over_the_whole_batch(logits, temperature=1.0, top_k=None):
    """One k-th largest score for the whole tensor, not one per row."""
    if not temperature > 0:
        raise ValueError(f"temperature must be positive, got {temperature!r}")
    V = logits.shape[-1]
    if top_k is not None and not 1 <= top_k <= V:
        raise ValueError(f"top_k must be an integer from 1 to {V}, got {top_k!r}")
    scores = logits / temperature
    if top_k is not None:
        kth = scores.flatten().topk(top_k).values[-1]
        scores = scores.masked_fill(scores < kth, float("-inf"))
    return torch.softmax(scores, dim=-1)


@wrong(
    "sampling_probs",
    {
        "sampling_probs": "temperature=-0.5, top_k=None) returned without an error; expected a ValueError that names temperature and the value -0.5",
        "sampling_probs.errors": "temperature=0.0, top_k=None) returned without an error; expected a ValueError that names temperature",
    },
)
def no_checks_of_the_arguments(logits, temperature=1.0, top_k=None):
    """Right for good arguments, silent for bad ones: a negative temperature inverts the choice."""
    scores = logits / temperature
    if top_k is not None:
        kth = scores.topk(top_k, dim=-1).values[..., -1:]
        scores = scores.masked_fill(scores < kth, float("-inf"))
    return torch.softmax(scores, dim=-1)


@wrong(
    "sampling_probs",
    {
        "sampling_probs": "modified its input logits in place: at index (0,) it was 2 and is now 4",
        "sampling_probs.values": "modified its input logits in place: at index (0,) it was -4.17152 and is now -16.6861",
        "sampling_probs.safety": "modified its input logits in place: at index (0, 0, 0) it was 1.10825 and is now 0.791608",
    },
)
def divides_the_logits_in_place(logits, temperature=1.0, top_k=None):
    """div_ writes the scaled scores back into the caller's logits."""
    if not temperature > 0:
        raise ValueError(f"temperature must be positive, got {temperature!r}")
    V = logits.shape[-1]
    if top_k is not None and not 1 <= top_k <= V:
        raise ValueError(f"top_k must be an integer from 1 to {V}, got {top_k!r}")
    scores = logits.div_(temperature)
    if top_k is not None:
        kth = scores.topk(top_k, dim=-1).values[..., -1:]
        scores = scores.masked_fill(scores < kth, float("-inf"))
    return torch.softmax(scores, dim=-1)


# --------------------------------------------------------------- Exercise 12.2: attend_with_cache


@wrong(
    "attend_with_cache",
    {
        "attend_with_cache": "cache=None, window=None): the output: row batch=0, head=0, new position=0 is wrong (6 of 8 rows differ)",
        "attend_with_cache.values": "a cache of 1 positions, window=None): the output: row batch=0, head=0, new position=0 is wrong",
        "attend_with_cache.window": "cache=None, window=4): the output: row batch=0, head=0, new position=0 is wrong (12 of 12 rows differ)",
        "attend_with_cache.safety": "a cache of 3 positions, window=3) in float64: row index (0, 0, 0) is wrong",
    },
)
def sees_one_position_ahead(queries, keys, values, cache=None, window=None):
    """Off by one position: new query i also sees new position i + 1 (a token of the future)."""
    if cache is not None:
        keys = torch.cat([cache[0], keys], dim=2)
        values = torch.cat([cache[1], values], dim=2)
    t, total = queries.shape[2], keys.shape[2]
    rows = torch.arange(total - t + 1, total + 1, device=queries.device)[:, None]
    cols = torch.arange(total, device=queries.device)[None, :]
    attend = cols <= rows
    if window is not None:
        attend = attend & (cols > rows - window)
    scores = queries @ keys.transpose(-2, -1) / math.sqrt(queries.shape[-1])
    weights = torch.softmax(scores.masked_fill(~attend, float("-inf")), dim=-1)
    output = weights @ values
    if window is not None:
        keys, values = keys[:, :, -window:], values[:, :, -window:]
    return output, (keys, values)


@wrong(
    "attend_with_cache",
    {
        "attend_with_cache": "the new cache's keys have shape (1, 2, 4, 4), expected (1, 2, 3, 4) (3 positions): the cache keeps only the last 3 positions with window=3",
        "attend_with_cache.window": "the new cache's keys have shape (1, 2, 6, 4), expected (1, 2, 4, 4) (4 positions): the cache keeps only the last 4 positions",
    },
)
def cache_grows_past_the_window(queries, keys, values, cache=None, window=None):
    """The window limits what a query sees, but the cache keeps every position."""
    if cache is not None:
        keys = torch.cat([cache[0], keys], dim=2)
        values = torch.cat([cache[1], values], dim=2)
    t, total = queries.shape[2], keys.shape[2]
    rows = torch.arange(total - t, total, device=queries.device)[:, None]
    cols = torch.arange(total, device=queries.device)[None, :]
    attend = cols <= rows
    if window is not None:
        attend = attend & (cols > rows - window)
    scores = queries @ keys.transpose(-2, -1) / math.sqrt(queries.shape[-1])
    weights = torch.softmax(scores.masked_fill(~attend, float("-inf")), dim=-1)
    return weights @ values, (keys, values)


@wrong(
    "attend_with_cache",
    {
        "attend_with_cache": "The one new query attended only to the oldest position: a causal mask aligned to the top left",
        "attend_with_cache.values": "a cache of 5 positions, window=None): the output: row batch=0, head=0, new position=0 is wrong",
        "attend_with_cache.window": "a cache of 4 positions, window=4): the output: row batch=0, head=0, new position=0 is wrong",
        "attend_with_cache.safety": "a cache of 3 positions, window=3) in float64: row index (0, 0, 0) is wrong",
    },
)
def causal_mask_from_the_top_left(queries, keys, values, cache=None, window=None):
    """The causal triangle of a full pass (SDPA's is_causal=True): query i sees positions 0..i,
    so one new token sees only the oldest cached position."""
    if cache is not None:
        keys = torch.cat([cache[0], keys], dim=2)
        values = torch.cat([cache[1], values], dim=2)
    t, total = queries.shape[2], keys.shape[2]
    rows = torch.arange(t, device=queries.device)[:, None]
    cols = torch.arange(total, device=queries.device)[None, :]
    attend = cols <= rows
    if window is not None:
        attend = attend & (cols > rows - window)
    scores = queries @ keys.transpose(-2, -1) / math.sqrt(queries.shape[-1])
    weights = torch.softmax(scores.masked_fill(~attend, float("-inf")), dim=-1)
    output = weights @ values
    if window is not None:
        keys, values = keys[:, :, -window:], values[:, :, -window:]
    return output, (keys, values)


@wrong(
    "attend_with_cache",
    {
        "attend_with_cache": "raised RuntimeError: Sizes of tensors must match except in dimension 3. Expected size 3 but got size 1",
        "attend_with_cache.values": "raised RuntimeError: Sizes of tensors must match except in dimension 3. Expected size 5 but got size 1",
        "attend_with_cache.window": "raised RuntimeError: Sizes of tensors must match except in dimension 3. Expected size 4 but got size 3",
        "attend_with_cache.safety": "raised RuntimeError: Sizes of tensors must match except in dimension 3. Expected size 3 but got size 2",
    },
)
def concatenated_on_the_feature_axis(queries, keys, values, cache=None, window=None):
    """torch.cat(..., dim=-1): the cached keys and the new ones side by side as features."""
    if cache is not None:
        keys = torch.cat([cache[0], keys], dim=-1)
        values = torch.cat([cache[1], values], dim=-1)
    t, total = queries.shape[2], keys.shape[2]
    rows = torch.arange(total - t, total, device=queries.device)[:, None]
    cols = torch.arange(total, device=queries.device)[None, :]
    attend = cols <= rows
    if window is not None:
        attend = attend & (cols > rows - window)
    scores = queries @ keys.transpose(-2, -1) / math.sqrt(queries.shape[-1])
    weights = torch.softmax(scores.masked_fill(~attend, float("-inf")), dim=-1)
    output = weights @ values
    if window is not None:
        keys, values = keys[:, :, -window:], values[:, :, -window:]
    return output, (keys, values)


@wrong(
    "attend_with_cache",
    {
        "attend_with_cache": "cache[0] was modified in place: at index (0, 0, 0, 0) it was -0.479467 and is now -1.74947",
        "attend_with_cache.window": "cache[0] was modified in place: at index (0, 0, 0, 0) it was 0.233709 and is now 0.182017",
        "attend_with_cache.safety": "cache[0] was modified in place: at index (0, 0, 0, 0) it was 0.514733 and is now 1.42524",
    },
)
def rolls_the_callers_cache_in_place(queries, keys, values, cache=None, window=None):
    """A full window rolled in place, to save memory: the caller's cache tensors change, and with
    them every other sequence (a beam) that shares them."""
    if cache is not None:
        all_keys = torch.cat([cache[0], keys], dim=2)
        all_values = torch.cat([cache[1], values], dim=2)
    else:
        all_keys, all_values = keys, values
    t, total = queries.shape[2], all_keys.shape[2]
    rows = torch.arange(total - t, total, device=queries.device)[:, None]
    cols = torch.arange(total, device=queries.device)[None, :]
    attend = cols <= rows
    if window is not None:
        attend = attend & (cols > rows - window)
    scores = queries @ all_keys.transpose(-2, -1) / math.sqrt(queries.shape[-1])
    weights = torch.softmax(scores.masked_fill(~attend, float("-inf")), dim=-1)
    output = weights @ all_values
    if window is not None and cache is not None and cache[0].shape[2] == window and t < window:
        for old, new in ((cache[0], keys), (cache[1], values)):
            old[:, :, :-t] = old[:, :, t:].clone()  # the oldest t positions out ...
            old[:, :, -t:] = new  # ... the new ones in, in the caller's tensor
        return output, cache
    if window is not None:
        all_keys, all_values = all_keys[:, :, -window:], all_values[:, :, -window:]
    return output, (all_keys, all_values)


@wrong(
    "attend_with_cache",
    {
        "attend_with_cache": "Each query attended to 4 positions, one more than the window: with window=3",
        "attend_with_cache.window": "a cache of 4 positions, window=4): the output: row batch=0, head=0, new position=0 is wrong",
        "attend_with_cache.safety": "a cache of 3 positions, window=3) in float64: row index (0, 0, 0) is wrong",
    },
)
def window_cut_before_appending(queries, keys, values, cache=None, window=None):
    """The cache is cut to W before the new positions join it: a new query sees W + 1 positions."""
    if cache is not None:
        cached_keys, cached_values = cache
        if window is not None:
            cached_keys, cached_values = cached_keys[:, :, -window:], cached_values[:, :, -window:]
        keys = torch.cat([cached_keys, keys], dim=2)
        values = torch.cat([cached_values, values], dim=2)
    t, total = queries.shape[2], keys.shape[2]
    rows = torch.arange(total - t, total, device=queries.device)[:, None]
    cols = torch.arange(total, device=queries.device)[None, :]
    attend = cols <= rows
    if window is not None and cache is None:
        attend = attend & (cols > rows - window)
    scores = queries @ keys.transpose(-2, -1) / math.sqrt(queries.shape[-1])
    weights = torch.softmax(scores.masked_fill(~attend, float("-inf")), dim=-1)
    output = weights @ values
    if window is not None:
        keys, values = keys[:, :, -window:], values[:, :, -window:]
    return output, (keys, values)


@wrong(
    "attend_with_cache",
    {
        "attend_with_cache": "masked_fill got a tensor of shape (1, 3) on the CPU together with tensors on the inputs' device",
        "attend_with_cache.safety": "masked_fill got a tensor of shape (2, 5) on the CPU together with tensors on the inputs' device",
    },
)
def positions_made_on_the_cpu(queries, keys, values, cache=None, window=None):
    """torch.arange without device=: fine on the CPU, an error as soon as the inputs are on a GPU."""
    if cache is not None:
        keys = torch.cat([cache[0], keys], dim=2)
        values = torch.cat([cache[1], values], dim=2)
    t, total = queries.shape[2], keys.shape[2]
    rows = torch.arange(total - t, total)[:, None]
    cols = torch.arange(total)[None, :]
    attend = cols <= rows
    if window is not None:
        attend = attend & (cols > rows - window)
    scores = queries @ keys.transpose(-2, -1) / math.sqrt(queries.shape[-1])
    weights = torch.softmax(scores.masked_fill(~attend, float("-inf")), dim=-1)
    output = weights @ values
    if window is not None:
        keys, values = keys[:, :, -window:], values[:, :, -window:]
    return output, (keys, values)


# ------------------------------------------------------------------ Check your understanding


@wrong(
    "quiz_12_1",
    {
        "quiz_12_1.key": "answer_12_1 = 384 MiB is not the size of that cache",
    },
)
def keys_only():
    """Only the keys counted: half the cache."""
    answer_12_1 = 384  # noqa: F841


@wrong(
    "quiz_12_1",
    {
        "quiz_12_1.key": "answer_12_1 = 1536 MiB is not the size of that cache",
    },
)
def four_bytes_a_number():
    """float32's 4 bytes instead of bfloat16's 2."""
    answer_12_1 = 1536  # noqa: F841


@wrong(
    "quiz_12_1",
    {
        "quiz_12_1.key": "answer_12_1 = 32 MiB is not the size of that cache",
    },
)
def one_layer():
    """One layer's cache, not 24."""
    answer_12_1 = 32  # noqa: F841


@wrong(
    "quiz_12_2",
    {
        "quiz_12_2.key": "answer_12_2 = 93 is not that position",
    },
)
def one_layer_reach():
    """Only the last layer's window: 100 - 7."""
    answer_12_2 = 93  # noqa: F841


@wrong(
    "quiz_12_2",
    {
        "quiz_12_2.key": "answer_12_2 = 68 is not that position",
    },
)
def window_per_layer():
    """W, not W - 1, per layer: 100 - 4 · 8."""
    answer_12_2 = 68  # noqa: F841


@wrong(
    "quiz_12_3",
    {
        "quiz_12_3.key": "answer_12_3 = 'a': more heads split the same keys and values",
    },
)
def more_heads():
    """Thinks more heads break the cache."""
    answer_12_3 = "a"  # noqa: F841


@wrong(
    "quiz_12_3",
    {
        "quiz_12_3.key": "answer_12_3 = 'b': where the LayerNorm sits",
    },
)
def post_norm():
    """Thinks the place of the LayerNorm breaks the cache."""
    answer_12_3 = "b"  # noqa: F841


@wrong(
    "quiz_12_3",
    {
        "quiz_12_3.key": "answer_12_3 = 'd': the decoding rule only chooses",
    },
)
def sampling():
    """Thinks sampling breaks the cache."""
    answer_12_3 = "d"  # noqa: F841
