"""The capstone's reference code (chapter kv_cache): the model, its cache, and decoding.

Not timed: the chapter measures the cache's speed-up side by side. Here the cache is proven
equal to the full pass (float64 to 1e-10, float32 to 1e-5), beam search against an
exhaustive search, and the attention step against PyTorch's fused attention.
"""

import itertools

import pytest
import torch
import torch.nn.functional as F

from checks._contract import on_meta
from solutions.kv_cache import (
    FABLES,
    KVCache,
    TinyLM,
    Vocab,
    attend_with_cache,
    beam_search,
    cached_step,
    detokenize,
    generate,
    sampling_probs,
    tokenize,
)


def tiny_model(device, vocab_size=11, dtype=torch.float64, seed=0, num_layers=2, max_len=64):
    torch.manual_seed(seed)
    model = TinyLM(
        vocab_size,
        num_hiddens=8,
        ffn_num_hiddens=16,
        num_heads=2,
        num_layers=num_layers,
        max_len=max_len,
    )
    return model.to(device=device, dtype=dtype).eval()


def test_the_text_round_trips_through_the_tokens():
    """Does detokenize give the text back, and does the vocabulary number every token once?"""
    tokens = tokenize(FABLES)
    assert detokenize(tokens) == FABLES
    vocab = Vocab(tokens)
    assert vocab.decode(vocab.encode(tokens)) == tokens
    assert len(vocab) == len(set(tokens)) and vocab.idx_to_token == sorted(vocab.idx_to_token)
    assert tokenize('"Wolf! Wolf!" won\'t') == ['"', "Wolf", "!", "Wolf", "!", '"', "won't"]


@pytest.mark.parametrize("dtype, tolerance", [(torch.float64, 1e-10), (torch.float32, 1e-5)])
def test_cached_steps_equal_the_full_pass(device, dtype, tolerance):
    """Are the logits of a prompt and then pieces of 1 and 3 tokens those of one full pass?"""
    model = tiny_model(device, dtype=dtype)
    tokens = torch.randint(0, 11, (3, 12), generator=torch.Generator().manual_seed(1)).to(device)
    with torch.no_grad():
        expected = model(tokens)
        logits, cache, start, pieces = [], None, 0, [5, 1, 3, 1, 1, 1]
        for size in pieces:
            out, cache = cached_step(model, tokens[:, start : start + size], cache)
            logits.append(out)
            start += size
    torch.testing.assert_close(torch.cat(logits, dim=1), expected, atol=tolerance, rtol=tolerance)
    assert cache.length == 12 and len(cache.layers) == 2
    assert cache.layers[0][0].shape == (3, 2, 12, 4)  # (B, h, n, d / h)


def test_the_cache_counts_its_bytes():
    """Is KVCache.nbytes 2 · layers · B · n · d · bytes per number?"""
    model = tiny_model("cpu", dtype=torch.float32, num_layers=3)
    with torch.no_grad():
        _, cache = cached_step(model, torch.zeros(2, 7, dtype=torch.long))
    assert cache.nbytes() == 2 * 3 * 2 * 7 * 8 * 4


def test_a_step_never_changes_the_cache_it_is_given(device):
    """Do cached_step and select leave the given cache's tensors as they were?"""
    model = tiny_model(device)
    with torch.no_grad():
        _, cache = cached_step(model, torch.ones(2, 4, dtype=torch.long, device=device))
        before = [x.clone() for pair in cache.layers for x in pair]
        _, longer = cached_step(model, torch.ones(2, 1, dtype=torch.long, device=device), cache)
    after = [x for pair in cache.layers for x in pair]
    assert all(torch.equal(a, b) for a, b in zip(before, after))
    assert cache.length == 4 and longer.length == 5
    picked = cache.select(torch.tensor([1, 1, 0], device=device))
    assert picked.layers[0][0].shape[0] == 3 and picked.length == 4
    assert torch.equal(picked.layers[1][1][2], cache.layers[1][1][0])


def test_generation_with_and_without_the_cache_agrees(device):
    """Do greedy decoding and seeded sampling give the same tokens with and without the cache?"""
    model = tiny_model(device)
    prompt = torch.tensor([[1, 2, 3], [4, 5, 6]], device=device)
    assert torch.equal(generate(model, prompt, 15), generate(model, prompt, 15, use_cache=False))
    runs = []
    for use_cache in (True, False):
        generator = torch.Generator(device=device).manual_seed(3)
        runs.append(generate(model, prompt, 15, 1.5, 4, use_cache=use_cache, generator=generator))
    assert torch.equal(*runs)
    top_1 = generate(model, prompt, 15, 0.7, top_k=1, generator=torch.Generator(device=device))
    assert torch.equal(top_1, generate(model, prompt, 15))


def sequence_log_probability(model, sequence, start):
    with torch.no_grad():
        log_probs = torch.log_softmax(model(sequence[None, :-1]), dim=-1)[0]
    return log_probs[start - 1 :].gather(-1, sequence[start:, None]).sum().item()


def test_beam_search_with_one_beam_is_greedy(device):
    model = tiny_model(device)
    prompt = torch.tensor([2, 7], device=device)
    best, score = beam_search(model, prompt, 10, beam_size=1)
    assert torch.equal(best, generate(model, prompt[None], 10)[0])
    assert score == pytest.approx(sequence_log_probability(model, best, 2), abs=1e-5)


def test_beam_search_with_every_beam_is_exhaustive():
    """With as many beams as sequences, does beam search return the likeliest of all V³?"""
    model = tiny_model("cpu", vocab_size=4, seed=5)
    prompt = torch.tensor([1, 3])
    best, score = beam_search(model, prompt, 3, beam_size=16)  # 4² beams keep every prefix
    scores = {}
    for tail in itertools.product(range(4), repeat=3):
        sequence = torch.cat([prompt, torch.tensor(tail)])
        scores[tail] = sequence_log_probability(model, sequence, 2)
    likeliest = max(scores, key=scores.get)
    assert tuple(best[2:].tolist()) == likeliest
    assert score == pytest.approx(scores[likeliest], abs=1e-5)


@pytest.mark.parametrize("n, t", [(0, 4), (5, 1), (5, 3)])
def test_the_step_equals_fused_attention_with_a_bottom_right_mask(device, n, t):
    gen = torch.Generator().manual_seed(n + t)
    q, k, v = (torch.randn(2, 3, t, 4, generator=gen).to(device) for _ in range(3))
    cache = None
    if n:
        cache = tuple(torch.randn(2, 3, n, 4, generator=gen).to(device) for _ in range(2))
    output, (keys, values) = attend_with_cache(q, k, v, cache)
    all_k = k if cache is None else torch.cat([cache[0], k], dim=2)
    all_v = v if cache is None else torch.cat([cache[1], v], dim=2)
    # Imported here: torch.nn.attention.bias imports torch's compiler (about 2 s of CPU), which
    # every pytest process would pay at collection.
    from torch.nn.attention.bias import causal_lower_right

    expected = F.scaled_dot_product_attention(
        q, all_k, all_v, attn_mask=causal_lower_right(t, n + t)
    )
    torch.testing.assert_close(output, expected, atol=1e-5, rtol=1e-5)
    assert torch.equal(keys, all_k) and torch.equal(values, all_v)


def test_a_window_is_a_band(device):
    """With window=3, is the step a band of width 3, and the cache the last 3 positions?"""
    gen = torch.Generator().manual_seed(9)
    q, k, v = (torch.randn(1, 2, 4, 5, generator=gen).to(device) for _ in range(3))
    cache = tuple(torch.randn(1, 2, 3, 5, generator=gen).to(device) for _ in range(2))
    output, (keys, _) = attend_with_cache(q, k, v, cache, window=3)
    rows, cols = torch.arange(3, 7)[:, None], torch.arange(7)[None, :]
    band = ((cols <= rows) & (cols > rows - 3)).to(device)
    all_k, all_v = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2)
    expected = F.scaled_dot_product_attention(q, all_k, all_v, attn_mask=band)
    torch.testing.assert_close(output, expected, atol=1e-5, rtol=1e-5)
    assert torch.equal(keys, all_k[:, :, -3:])


def test_the_cached_model_makes_no_tensor_on_the_cpu():
    """Does cached_step on a model and tokens on the meta device keep every tensor there?"""
    model = tiny_model("cpu", dtype=torch.float32).to("meta")
    tokens = torch.zeros(2, 3, dtype=torch.long, device="meta")
    on_meta(lambda: cached_step(model, tokens)[0], "cached_step on the meta device")


@pytest.mark.parametrize(
    "arguments, message",
    [
        ((0.0, None), r"temperature must be positive, got 0\.0"),
        ((1.0, 0), r"top_k must be None or an integer from 1 to V = 5, got 0"),
        ((1.0, 6), r"got 6"),
        ((1.0, True), r"got True"),
    ],
)
def test_sampling_probs_names_a_bad_argument(arguments, message):
    with pytest.raises(ValueError, match=message):
        sampling_probs(torch.zeros(5), *arguments)


def test_bad_inputs_name_their_shapes():
    q = torch.zeros(1, 2, 3, 4)
    with pytest.raises(ValueError, match=r"keys must have the shape of queries, \(1, 2, 3, 4\)"):
        attend_with_cache(q, torch.zeros(1, 2, 3, 5), q)
    with pytest.raises(
        ValueError, match=r"cache keys must have shape \(1, 2\) \+ \(n, 4\), got \(1, 3, 6, 4\)"
    ):
        attend_with_cache(q, q, q, (torch.zeros(1, 3, 6, 4), torch.zeros(1, 3, 6, 4)))
    with pytest.raises(ValueError, match=r"window must be None or a positive integer, got 0"):
        attend_with_cache(q, q, q, None, 0)
    with pytest.raises(
        ValueError, match=r"queries must be a floating-point tensor .* got shape \(2, 3\)"
    ):
        attend_with_cache(torch.zeros(2, 3), q, q)
    model = tiny_model("cpu", max_len=8)
    with (
        torch.no_grad(),
        pytest.raises(ValueError, match=r"positions up to 9 are beyond max_len=8"),
    ):
        cached_step(model, torch.zeros(1, 10, dtype=torch.long))


def test_kv_cache_is_not_a_module_and_keeps_pairs():
    cache = KVCache([[torch.zeros(1, 1, 2, 3), torch.ones(1, 1, 2, 3)]], 2)
    assert isinstance(cache.layers[0], tuple) and cache.length == 2 and cache.nbytes() == 48
