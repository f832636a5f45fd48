"""Chapter 13, "Attention today": the reference code the chapter shows, and its questions.

The exercises' references are checked by every check group in ``tests/test_solutions.py``;
here: the code the chapter gives (ALiBi's slopes and biases, the constructors' and
validators' errors), the claims the chapter's text makes, and the questions' self-checks.
"""

import math

import pytest
import torch
import torch.nn.functional as F

import checks
from solutions import modern
from solutions.modern import (
    GroupedQueryAttention,
    alibi_bias,
    alibi_slopes,
    apply_rope,
    sliding_window_mask,
)
from solutions.multihead import MultiHeadAttention

checks.groups()  # loads the hidden groups into the registry


# ---------------------------------------------------------------- ALiBi (given code)


def test_alibi_slopes_are_the_papers():
    """8 heads: 1/2 ... 1/256; 12 heads: those of 8, then every other slope of 16 (the paper's
    rule for a number of heads that is not a power of two)."""
    assert alibi_slopes(8).tolist() == [2.0**-k for k in range(1, 9)]
    sixteen = [2 ** (-k / 2) for k in range(1, 17)]
    expected = [2.0**-k for k in range(1, 9)] + sixteen[0::2][:4]
    torch.testing.assert_close(alibi_slopes(12), torch.tensor(expected))
    assert alibi_slopes(1).tolist() == [2.0**-8]
    with pytest.raises(ValueError, match="num_heads must be at least 1, got 0"):
        alibi_slopes(0)


def test_alibi_bias_matches_a_loop(device):
    """Entry [h, i, j] is -m_h · (i - j)."""
    bias = alibi_bias(4, 7, device)
    assert bias.shape == (4, 7, 7) and bias.device.type == torch.device(device).type
    slopes = alibi_slopes(4).tolist()
    expected = [[[-slopes[h] * (i - j) for j in range(7)] for i in range(7)] for h in range(4)]
    torch.testing.assert_close(bias.cpu(), torch.tensor(expected))
    assert alibi_bias(2, 5, "meta").device.type == "meta"


def test_alibi_per_key_bias_gives_the_same_weights():
    """Question 13.1's property: with or without the causal mask, m·j and -m(i - j) give one
    softmax, since they differ by m·i along every row."""
    scores = torch.randn(8, 6, 6, dtype=torch.float64)
    slopes = alibi_slopes(8).double()[:, None, None]
    j = torch.arange(6, dtype=torch.float64)
    causal = sliding_window_mask(6, 6, 6)
    for mask in (torch.ones_like(causal), causal):
        distance = scores + alibi_bias(8, 6).double()
        per_key = scores + slopes * j
        torch.testing.assert_close(
            torch.softmax(per_key.masked_fill(~mask, -torch.inf), dim=-1),
            torch.softmax(distance.masked_fill(~mask, -torch.inf), dim=-1),
        )


# ---------------------------------------------------------------- errors of the references


def test_apply_rope_rejects_bad_input():
    """Does apply_rope name the shape and dtype it got, and an odd d?"""
    with pytest.raises(ValueError, match=r"got \(4,\) and dtype torch.float32"):
        apply_rope(torch.zeros(4))
    with pytest.raises(ValueError, match=r"dtype torch.int64"):
        apply_rope(torch.zeros(2, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="d must be even, got d=5"):
        apply_rope(torch.zeros(3, 5))


def test_grouped_query_attention_rejects_bad_sizes():
    """Do the constructor and the forward name the sizes that do not fit?"""
    with pytest.raises(ValueError, match="num_groups=3 must divide num_heads=4"):
        GroupedQueryAttention(8, 4, 3, 0.0)
    with pytest.raises(ValueError, match="num_groups=0 must divide num_heads=4"):
        GroupedQueryAttention(8, 4, 0, 0.0)
    with pytest.raises(ValueError, match="num_heads=3 must divide num_hiddens=8"):
        GroupedQueryAttention(8, 3, 1, 0.0)
    layer = GroupedQueryAttention(8, 4, 2, 0.0)
    with pytest.raises(ValueError, match="num_hiddens=8 features, got 8, 6 and 6"):
        layer(torch.zeros(1, 2, 8), torch.zeros(1, 3, 6), torch.zeros(1, 3, 6))


def test_grouped_query_attention_shapes_of_the_projections():
    """W_k and W_v map d to g·d/h: the parameter counts the chapter prints."""
    d, h = 256, 8
    counts = {
        g: sum(p.numel() for p in GroupedQueryAttention(d, h, g, 0.0).parameters())
        for g in (8, 2, 1)
    }
    assert counts == {
        8: 4 * d * d,
        2: 2 * d * d + 2 * d * d * 2 // h,
        1: 2 * d * d + 2 * d * d // h,
    }
    assert counts[8] * 4 == 1_048_576  # four layers, as in the chapter's table


# ---------------------------------------------------------------- the chapter's claims


def test_gqa_with_a_group_per_head_is_the_books_multi_head_attention(device):
    """GroupedQueryAttention(d, h, h) holding chapter 7's MultiHeadAttention's weights gives its
    output, with padding, on every device."""
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4, dropout=0.0, bias=True).to(device).eval()
    gqa = GroupedQueryAttention(16, 4, 4, dropout=0.0, bias=True).to(device).eval()
    gqa.load_state_dict(mha.state_dict())
    X = torch.randn(2, 5, 16, device=device)
    Y = torch.randn(2, 7, 16, device=device)
    lens = torch.tensor([7, 0], device=device)
    with torch.no_grad():
        torch.testing.assert_close(gqa(X, Y, Y, lens), mha(X, Y, Y, lens))


def test_the_kv_cache_is_what_the_formula_says():
    """The keys and values a cache keeps: 2 · layers · g · d/h numbers per token."""
    L, d, h, T = 2, 64, 8, 10
    for g in (8, 4, 1):
        layers = [GroupedQueryAttention(d, h, g, 0.0) for _ in range(L)]
        x = torch.randn(1, T, d)
        cache = [t for layer in layers for t in (layer.W_k(x), layer.W_v(x))]
        assert sum(t.nbytes for t in cache) / T == 2 * L * g * (d // h) * 4


def test_rope_scores_depend_only_on_the_offset(device):
    """The chapter's proof: S[m, n] is constant along diagonals, and unchanged by a shift."""
    q, k = torch.randn(64, device=device), torch.randn(64, device=device)
    Q, K = q.expand(16, 64), k.expand(16, 64)
    S = apply_rope(Q) @ apply_rope(K).T
    for offset in range(-15, 16):
        diagonal = S.diagonal(offset)
        torch.testing.assert_close(diagonal, diagonal[:1].expand_as(diagonal), atol=1e-4, rtol=0)
    shifted = apply_rope(Q, offset=1000) @ apply_rope(K, offset=1000).T
    torch.testing.assert_close(shifted, S, atol=1e-3, rtol=0)


def test_sliding_window_blocks_equal_the_full_mask():
    """A block of queries, last of its keys (the offset of 13.1), sees what the rows of the full
    mask let it see: the chapter's blocked computation rests on this."""
    n, w, block = 50, 7, 8
    full = sliding_window_mask(n, n, w)
    for start in range(0, n, block):
        stop = min(start + block, n)
        first = max(0, start - w + 1)
        part = sliding_window_mask(stop - start, stop - first, w)
        assert torch.equal(part, full[start:stop, first:stop])
        assert not full[start:stop, :first].any()  # nothing before `first` is needed


def test_window_reach_through_layers_is_the_questions_key():
    """Question 13.3: three layers with w = 4 reach 9 positions back, by perturbation."""
    torch.manual_seed(1)
    x = 0.1 * torch.randn(1, 21, 8, dtype=torch.float64)
    mask = sliding_window_mask(21, 21, 4)

    def three_layers(x):
        for _ in range(3):
            x = x + F.scaled_dot_product_attention(x, x, x, attn_mask=mask)
        return x

    out = three_layers(x)[0, 20]
    reached = []
    for p in range(21):
        changed = x.clone()
        changed[0, p] += 1.0
        if (three_layers(changed)[0, 20] - out).abs().max() > 0:
            reached.append(p)
    assert reached == list(range(modern.answer_13_3, 21))


# ---------------------------------------------------------------- the questions


def test_choice_self_check_accepts_every_letter_and_the_key_only_one():
    """Does the self-check of 13.1 accept a to d alike (it must not give the key away), while the
    hidden key accepts the reference answer only?"""
    for letter in "abcd":
        checks.run("quiz_13_1", lambda letter=letter: letter, verbose=False)
        if letter == modern.answer_13_1:
            checks.run_hidden("quiz_13_1.key", lambda letter=letter: letter, verbose=False)
        else:
            with pytest.raises(checks.CheckError, match="is not the right choice"):
                checks.run_hidden("quiz_13_1.key", lambda letter=letter: letter, verbose=False)
    for bad, message in [(..., "no answer yet"), ("e", "got 'e'"), (1, r"got 1 \(int\)")]:
        with pytest.raises(checks.CheckError, match=message):
            checks.run("quiz_13_1", lambda bad=bad: bad, verbose=False)


def test_number_self_checks_accept_numbers_and_the_keys_only_theirs():
    """Do the self-checks of 13.2 and 13.3 accept any number of the right kind, and the keys
    only the bytes 2·80·8·128·2 and the position 20 - 3·3?"""
    for value in (327_680, 2_621_440, 0.5):
        checks.run("quiz_13_2", lambda value=value: value, verbose=False)
    checks.run_hidden("quiz_13_2.key", lambda: 2 * 80 * 8 * 128 * 2, verbose=False)
    with pytest.raises(checks.CheckError, match="is not the number of bytes"):
        checks.run_hidden("quiz_13_2.key", lambda: 320, verbose=False)  # KiB, not bytes
    for value in (0, 11, 17.0, 20):
        checks.run("quiz_13_3", lambda value=value: value, verbose=False)
    for bad in (21, -1, 11.5):
        with pytest.raises(checks.CheckError, match="should be a position from 0 to 20"):
            checks.run("quiz_13_3", lambda bad=bad: bad, verbose=False)
    assert modern.answer_13_3 == 20 - 3 * (4 - 1)
    assert math.isclose(modern.answer_13_2, 320 * 1024)
