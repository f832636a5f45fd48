"""Visible checks for the chapter "Efficient attention"."""

import functools

import torch

from checks._contract import invoke, on_meta
from checks._core import check, random_lengths
from checks._errors import CheckError
from checks._expect import expect_choice, expect_number, expect_tensor, shape_str
from checks._i18n import tr


def get_mask(valid_lens_to_mask, valid_lens, num_queries, num_keys, shape):
    """Call the student's function; check a boolean tensor of ``shape`` on the lengths' device."""
    lens = valid_lens.tolist() if valid_lens.device.type != "meta" else shape_str(valid_lens.shape)
    call = f"valid_lens_to_mask({lens}, {num_queries}, {num_keys})"
    mask = invoke(
        valid_lens_to_mask, valid_lens, num_queries, num_keys, what=call, names=("valid_lens",)
    )
    expect_tensor(mask, call, device=valid_lens.device)
    if mask.dtype != torch.bool:
        raise CheckError(
            tr(
                "{call} has dtype {dtype}, expected torch.bool. SDPA adds a floating-point "
                "attn_mask to the scores instead of reading it as attend / do not attend."
            ).format(call=call, dtype=mask.dtype)
        )
    if tuple(mask.shape) != tuple(shape):
        raise CheckError(
            tr("{call} has shape {mask_shape}, expected {shape}").format(
                call=call, mask_shape=shape_str(mask.shape), shape=shape_str(shape)
            )
        )
    return mask


def expect_mask(mask, expected, call):
    """Compare two boolean masks of one shape and name the first wrong (sequence, query) row."""
    if torch.equal(mask, expected):
        return
    b, _, i = (int(x) for x in torch.nonzero((mask != expected).any(-1))[0])
    query = tr(", query {i}").format(i=i) if mask.shape[2] > 1 else ""
    raise CheckError(
        tr(
            "{call}: sequence {b}{query} may attend keys {got}, expected {expected} (True = attend)"
        ).format(
            call=call,
            b=b,
            query=query,
            got=torch.nonzero(mask[b, 0, i]).flatten().tolist(),
            expected=torch.nonzero(expected[b, 0, i]).flatten().tolist(),
        )
    )


@check("valid_lens_to_mask")
def one_length_per_sequence(valid_lens_to_mask, device):
    """For valid_lens [3, 0] and 4 keys, is the (2, 1, 1, 4) mask True exactly on keys 0, 1, 2 of sequence 0?"""
    valid_lens = torch.tensor([3, 0], device=device)
    mask = get_mask(valid_lens_to_mask, valid_lens, 2, 4, (2, 1, 1, 4))
    expected = torch.tensor([[True, True, True, False], [False] * 4], device=device)
    expect_mask(mask, expected[:, None, None, :], "valid_lens_to_mask([3, 0], 2, 4)")


@check("valid_lens_to_mask")
def one_length_per_query(valid_lens_to_mask, device):
    """For per-query lengths [[1, 4], [2, 0]], is the mask (2, 1, 2, 4) with one row per query?"""
    valid_lens = torch.tensor([[1, 4], [2, 0]], device=device)
    mask = get_mask(valid_lens_to_mask, valid_lens, 2, 4, (2, 1, 2, 4))
    expected = torch.tensor(
        [[[1, 0, 0, 0], [1, 1, 1, 1]], [[1, 1, 0, 0], [0, 0, 0, 0]]], device=device
    ).bool()
    expect_mask(mask, expected[:, None], "valid_lens_to_mask([[1, 4], [2, 0]], 2, 4)")


def mask_contract(valid_lens_to_mask, device, *, seed, B, m, n):
    """valid_lens left unchanged (lengths beyond n too), and the mask made on its device (meta)."""
    for shape in ((B,), (B, m)):
        lens = random_lengths(*shape, low=0, high=n + 3, seed=seed, device=device)
        lens.view(-1)[-1] = n + 3  # beyond n: attends every key (and is not clamped in place)
        out = (B, 1, m if len(shape) == 2 else 1, n)
        get_mask(valid_lens_to_mask, lens, m, n, out)
        on_meta(
            functools.partial(get_mask, valid_lens_to_mask, lens.to("meta"), m, n, out),
            tr("valid_lens_to_mask on the meta device (lengths of shape {shape})").format(
                shape=shape_str(shape)
            ),
        )


@check("valid_lens_to_mask")
def mask_properties(valid_lens_to_mask, device):
    """Is valid_lens left unchanged (lengths beyond n too), and the mask made on its device, not the CPU?"""
    mask_contract(valid_lens_to_mask, device, seed=3, B=2, m=3, n=4)


# ------------------------------------------------ Check your understanding: the form only


@check("quiz_10_1")
def quiz_10_1_form(answer, device):
    """Is answer_10_1 one of the letters "a" to "d"?"""
    expect_choice(answer(), "abcd", "answer_10_1")


@check("quiz_10_2")
def quiz_10_2_form(answer, device):
    """Is answer_10_2 a number?"""
    expect_number(answer(), "answer_10_2")
