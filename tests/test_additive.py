"""Chapter 3 beyond its graded groups: the module it shows, and what its questions rest on.

``AdditiveAttention`` is no longer an exercise (the chapter shows it; Exercise 3.1 is
``ConcatAttention``), but chapters 4, 5, 9 and 10 import it: these tests hold it to the
properties its checks used to test, against the same independent references.
"""

import torch

from checks.hidden.additive import translator_attention_parameters
from checks.hidden.scoring import check_dropout, compare_with_loop, loop_reference
from checks.scoring import build, dropout_contract, module_contract
from solutions.additive import AdditiveAttention, ConcatAttention


def additive_score(module):
    """score(q, k) = w_vᵀ tanh(W_q q + W_k k), in float64 from the module's parameters."""
    Wq, Wk, wv = (
        p.detach().double().cpu()
        for p in (module.W_q.weight, module.W_k.weight, module.w_v.weight[0])
    )
    return lambda q, k: (wv @ torch.tanh(Wq @ q + Wk @ k)).item()


def test_additive_attention_matches_a_loop(device):
    """Does the shown AdditiveAttention match an explicit loop, with 1-D, 2-D and no valid_lens?"""
    module = build(AdditiveAttention, 5, 3, 7, 0.0, seed=4, device=device)
    compare_with_loop(module, additive_score(module), dq=3, dk=5, device=device)


def test_additive_attention_contract(device):
    """float64 equal to a float64 loop, gradients everywhere, inputs unchanged, nothing on the CPU."""
    module_contract(
        lambda dev: build(AdditiveAttention, 6, 5, 9, 0.0, seed=21, device=dev),
        device,
        seed=21,
        B=3,
        m=4,
        n=6,
        dq=5,
        dk=6,
        dv=2,
        reference=loop_reference(additive_score),
    )


def test_additive_attention_dropout(device):
    """Dropout on the weights in training only, once, with attention_weights kept before it."""
    q, k, v = (torch.randn(2, s, 4, generator=torch.Generator().manual_seed(s)) for s in (3, 5, 5))
    module = build(AdditiveAttention, 4, 4, 8, 1.0, seed=5, device=device)
    check_dropout(
        module, q.to(device), k.to(device), v.to(device), torch.tensor([5, 2], device=device)
    )
    dropout_contract(
        lambda dev, p: build(AdditiveAttention, 5, 3, 6, p, seed=22, device=dev),
        device,
        seed=22,
        B=6,
        m=7,
        n=9,
        dq=3,
        dk=5,
        p=0.3,
    )


def test_concat_with_split_weights_is_additive_attention(device):
    """With W = [W_q W_k] and b = 0, is ConcatAttention AdditiveAttention (as the chapter shows)?"""
    additive = build(AdditiveAttention, 6, 5, 8, 0.0, seed=1, device=device)
    concat = build(ConcatAttention, 6, 5, 8, 0.0, seed=2, device=device)
    with torch.no_grad():
        concat.W.weight.copy_(torch.cat([additive.W_q.weight, additive.W_k.weight], dim=1))
        concat.W.bias.zero_()
        concat.w_v.weight.copy_(additive.w_v.weight)
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(*s, generator=gen).to(device) for s in [(2, 3, 5), (2, 4, 6), (2, 4, 3)])
    lens = torch.tensor([[4, 1, 2], [3, 0, 4]], device=device)
    torch.testing.assert_close(concat(q, k, v, lens), additive(q, k, v, lens))
    torch.testing.assert_close(concat.attention_weights, additive.attention_weights)


def test_question_3_3_key_counts_the_module_the_question_names():
    """Is the key of question 3.3 (counted from bias-free layers) the count of the real module?"""
    module = AdditiveAttention(key_size=128, query_size=64, num_hiddens=64, dropout=0.0)
    assert translator_attention_parameters() == sum(p.numel() for p in module.parameters())
