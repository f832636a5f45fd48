"""Visible checks for the chapter "Attention pooling"."""

import functools

import torch

from checks._contract import (
    expect_gradient_values,
    expect_gradients,
    float64_device,
    invoke,
    on_meta,
)
from checks._core import check, random_tensor, softmax_list
from checks._errors import CheckError
from checks._expect import expect_choice, expect_close, expect_number, expect_tensor, shape_str
from checks._i18n import tr


class BadReturn(CheckError):
    def __init__(self, out):
        super().__init__(
            tr(
                "nadaraya_watson should return a pair (predictions, attention_weights), got {type}"
            ).format(type=type(out).__name__)
        )


def _call(nadaraya_watson, queries, keys, values, **kwargs):
    what = (
        f"nadaraya_watson(queries {shape_str(queries.shape)}, keys {shape_str(keys.shape)}, "
        f"values {shape_str(values.shape)}, {queries.dtype})"
    )
    names = ("queries", "keys", "values")
    out = invoke(nadaraya_watson, queries, keys, values, what=what, names=names, **kwargs)
    if not (isinstance(out, tuple) and len(out) == 2):
        raise BadReturn(out)
    m, n = queries.shape[0], keys.shape[0]
    expect_tensor(
        out[0],
        tr("predictions (m={m}, n={n})").format(m=m, n=n),
        shape=(m,),
        dtype=queries.dtype,
        device=queries.device,
    )
    expect_tensor(
        out[1],
        f"attention_weights (m={m}, n={n})",
        shape=(m, n),
        dtype=queries.dtype,
        device=queries.device,
    )
    return out


def pooling_contract(nadaraya_watson, device, *, seed, m, n, reference=None):
    """float64 in and out, gradients to queries, keys and values, nothing made on the CPU.

    Args:
        reference: ``reference(q, k, v)`` gives float64 (predictions, weights) on the CPU.
    """
    dev64 = float64_device(device)
    q = random_tensor(m, seed=seed, device=device, scale=2.0)
    k = random_tensor(n, seed=seed + 1, device=device, scale=2.0)
    v = random_tensor(n, seed=seed + 2, device=device)
    shapes = f"m={m}, n={n}"
    preds32, weights32 = _call(nadaraya_watson, q, k, v)
    as64 = [t.to(dev64, torch.float64) for t in (q, k, v)]
    preds64, weights64 = _call(nadaraya_watson, *as64)
    if reference is not None:
        ref_p, ref_w = (t.to(dev64) for t in reference(*(t.cpu() for t in as64)))
        tol = dict(atol=1e-9, rtol=1e-9)
    else:
        ref_p, ref_w = (t.detach().to(dev64, torch.float64) for t in (preds32, weights32))
        tol = dict(atol=1e-4, rtol=1e-3)
    expect_close(
        weights64, ref_w, tr("float64 attention_weights ({shapes})").format(shapes=shapes), **tol
    )
    expect_close(preds64, ref_p, tr("float64 predictions ({shapes})").format(shapes=shapes), **tol)
    leaves = [t.clone().requires_grad_() for t in (q, k, v)]
    preds, _ = _call(nadaraya_watson, *leaves)
    named = dict(zip(("queries", "keys", "values"), leaves))
    expect_gradients(preds, named, f"nadaraya_watson ({shapes})", seed=seed)
    expect_gradient_values(
        lambda queries, keys, values: _call(nadaraya_watson, queries, keys, values)[0],
        dict(zip(("queries", "keys", "values"), as64)),
        f"nadaraya_watson ({shapes})",
        seed=seed,
    )
    metas = [t.to("meta") for t in (q, k, v)]
    on_meta(
        functools.partial(_call, nadaraya_watson, *metas),
        tr("nadaraya_watson on meta ({shapes})").format(shapes=shapes),
    )


@check("nadaraya_watson")
def worked_example(nadaraya_watson, device):
    """Does a small example give the weights and predictions worked out by hand?"""
    queries = torch.tensor([0.0, 1.0], device=device)
    keys = torch.tensor([0.0, 1.0, 3.0], device=device)
    values = torch.tensor([1.0, 2.0, 3.0], device=device)
    preds, weights = _call(nadaraya_watson, queries, keys, values)
    rows = [softmax_list([-((q - k) ** 2) / 2 for k in (0.0, 1.0, 3.0)]) for q in (0.0, 1.0)]
    expected_w = torch.tensor(rows, device=device)
    expect_close(weights, expected_w, "attention_weights", labels=("query",))
    expected_p = torch.tensor([sum(w * v for w, v in zip(r, (1.0, 2.0, 3.0))) for r in rows])
    expect_close(preds, expected_p.to(device), tr("predictions"))


@check("nadaraya_watson")
def shapes_and_rows(nadaraya_watson, device):
    """Are the shapes (m,) and (m, n), and does every row of weights sum to 1?"""
    gen = torch.Generator().manual_seed(0)
    queries = (torch.rand(5, generator=gen) * 5).to(device)
    keys = (torch.rand(7, generator=gen) * 5).to(device)
    values = torch.randn(7, generator=gen).to(device)
    preds, weights = _call(nadaraya_watson, queries, keys, values)
    expect_tensor(preds, tr("predictions"), shape=(5,), dtype=torch.float32, device=device)
    expect_tensor(weights, "attention_weights", shape=(5, 7), dtype=torch.float32, device=device)
    expect_close(weights.sum(dim=1), torch.ones(5, device=device), tr("row sums of the weights"))


@check("nadaraya_watson")
def bandwidth(nadaraya_watson, device):
    """Does the bandwidth σ enter the score as -(q - k)² / (2σ²)?"""
    queries = torch.tensor([0.5], device=device)
    keys = torch.tensor([0.0, 1.0, 2.0], device=device)
    values = torch.tensor([0.0, 1.0, 2.0], device=device)
    _, weights = _call(nadaraya_watson, queries, keys, values, bandwidth=0.5)
    row = softmax_list([-((0.5 - k) ** 2) / (2 * 0.5**2) for k in (0.0, 1.0, 2.0)])
    expect_close(
        weights,
        torch.tensor([row], device=device),
        "attention_weights (σ = 0.5)",
        labels=("query",),
    )


@check("nadaraya_watson")
def pooling_properties(nadaraya_watson, device):
    """float64 in and out, gradients to queries, keys and values, inputs unchanged, no tensor made on the CPU?"""
    pooling_contract(nadaraya_watson, device, seed=3, m=3, n=4)


# ---------------------------------------------------------------- check your understanding
# The form only: checks/_quiz.py then says right or wrong (self-study) or "recorded"
# (graded); the hidden groups quiz_1_*.key grade the answers.


@check("quiz_1_1")
def quiz_1_1_form(answer, device):
    """Is answer_1_1 one of the letters "a" to "d"?"""
    expect_choice(answer(), "abcd", "answer_1_1")


@check("quiz_1_2")
def quiz_1_2_form(answer, device):
    """Is answer_1_2 a number?"""
    expect_number(answer(), "answer_1_2")
