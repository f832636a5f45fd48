"""Hidden checks for the chapter "Attention on images".

References: patches cut one at a time by slicing, and PyTorch's ``F.unfold``; an explicit
loop over batch, queries and keys in float64 from the module's own weights and bias table,
and PyTorch's ``scaled_dot_product_attention`` with the bias as a float mask; what a large
bias on one offset must do on a grid (copy the neighbour, never across a row's end); the
keys of the chapter's questions, computed where they can be.

Why one module: the grader's checks of one chapter notebook, apart from checks/vision.py
only because a release drops ``checks/hidden/``: ``patchify`` and the grid attention module
at length (against ``F.unfold``, loops and SDPA) and the keys of its three questions, with
the visible module's wrappers and contracts rather than copies of them.
"""

import math

import torch
import torch.nn.functional as F

from checks._contract import float64_device, properties
from checks._core import check, random_tensor
from checks._errors import CheckError
from checks._expect import expect_choice, expect_close, expect_number, shape_str
from checks._i18n import tr
from checks.vision import (
    attend_grid,
    call_patchify,
    expect_patches,
    expect_value_error,
    grid_contract,
    grid_dropout_contract,
    grid_module,
    offset_index,
    patchify_contract,
)

# ----------------------------------------------------------------- patchify


@check("patchify.values", hidden=True)
def patches_match_a_loop(patchify, device):
    """Do random batches (one patch, p = 1, square and not, 1 to 4 channels) match patches cut one at a time?"""
    shapes = [
        ((1, 1, 4, 4), 4),
        ((2, 3, 8, 12), 4),
        ((3, 2, 12, 8), 4),
        ((2, 3, 5, 3), 1),
        ((1, 3, 15, 10), 5),
        ((2, 4, 6, 9), 3),
    ]
    for seed, (shape, p) in enumerate(shapes):
        expect_patches(patchify, random_tensor(*shape, seed=seed, device=device), p)


@check("patchify.values", hidden=True)
def patches_match_unfold(patchify, device):
    """Is the output F.unfold(images, p, stride=p).transpose(1, 2), for images that are not square?"""
    for seed, (shape, p) in enumerate([((2, 3, 12, 20), 4), ((1, 2, 14, 6), 2)]):
        images = random_tensor(*shape, seed=10 + seed, device=device)
        expected = F.unfold(images.clone(), kernel_size=p, stride=p).transpose(1, 2)
        out = call_patchify(patchify, images, p)
        expect_close(
            out,
            expected,
            tr("patchify(images {shape}, {p}) against F.unfold").format(
                shape=shape_str(shape), p=p
            ),
            labels=("image", "patch"),
        )


@check("patchify.errors", hidden=True)
def width_not_divisible(patchify, device):
    """Does a width that p does not divide, (1, 1, 12, 10) with p = 4, raise a ValueError that names 10 and 4?"""
    images = torch.zeros(1, 1, 12, 10, device=device)
    expect_value_error(
        lambda: patchify(images, 4), "patchify(images (1, 1, 12, 10), 4)", patchify, ["10", "4"]
    )


@check("patchify.errors", hidden=True)
def patch_larger_than_the_image(patchify, device):
    """Does p = 16 for images (2, 3, 8, 8) raise a ValueError that names 8 and 16?"""
    images = torch.zeros(2, 3, 8, 8, device=device)
    expect_value_error(
        lambda: patchify(images, 16), "patchify(images (2, 3, 8, 8), 16)", patchify, ["8", "16"]
    )


@check("patchify.safety", hidden=True)
def views_that_are_not_contiguous(patchify, device):
    """Do a crop, a channels-last batch and a transposed batch, none of them contiguous, give the right patches?"""
    big = random_tensor(2, 3, 10, 16, seed=20, device=device)
    crop = big[..., 1:9, 2:14]  # (2, 3, 8, 12), rows of memory longer than the crop
    expect_patches(patchify, crop, 4, "a crop big[..., 1:9, 2:14]:")
    last = random_tensor(2, 3, 8, 12, seed=21, device=device)
    expect_patches(
        patchify, last.contiguous(memory_format=torch.channels_last), 4, "channels-last images"
    )
    tall = random_tensor(2, 3, 12, 8, seed=22, device=device).transpose(2, 3)  # (2, 3, 8, 12)
    expect_patches(patchify, tall, 2, "images.transpose(2, 3):")


@check("patchify.safety", hidden=True)
def half_precision_kept(patchify, device):
    """Are float16 and bfloat16 images cut into patches of the same dtype, exactly?"""
    for dtype in (torch.float16, torch.bfloat16):
        images = random_tensor(2, 3, 8, 12, seed=23, device=device, dtype=dtype)
        expect_patches(
            patchify, images, 4, tr("{dtype} images").format(dtype=dtype), atol=0, rtol=0
        )


@check("patchify.safety", hidden=True)
def patchify_properties_hidden(patchify, device):
    """float64 kept, gradients to the images (and right ones), images unchanged, no tensor made on the CPU?"""
    patchify_contract(patchify, device, seed=24, shape=(3, 1, 8, 4), p=2)


# ----------------------------------------------------------------- RelativeSelfAttention2d


def _params(linear):
    w = linear.weight.detach().double().cpu()
    b = linear.bias.detach().double().cpu() if linear.bias is not None else torch.zeros(len(w))
    return w, b


def loop_grid_attention(module, X):
    """y_i = Σ_j softmax_j(q_i·k_j / √D_Q + B[r_j - r_i + h - 1, c_j - c_i + w - 1]) v_j, by loops."""
    (Wq, bq), (Wk, bk), (Wv, bv) = _params(module.W_q), _params(module.W_k), _params(module.W_v)
    table = module.relative_bias.detach().double().cpu().tolist()
    grid = tuple(module.grid_size)
    x = X.detach().double().cpu()
    B, N = x.shape[0], x.shape[1]
    scale = math.sqrt(Wq.shape[0])
    weights = torch.zeros(B, N, N, dtype=torch.float64)
    out = torch.zeros(B, N, Wv.shape[0], dtype=torch.float64)
    for b in range(B):
        for i in range(N):
            q = Wq @ x[b, i] + bq
            scores = []
            for j in range(N):
                a, c = offset_index(i, j, grid)
                scores.append(float(q @ (Wk @ x[b, j] + bk)) / scale + table[a][c])
            top = max(scores)
            exps = [math.exp(s - top) for s in scores]
            for j in range(N):
                weights[b, i, j] = exps[j] / sum(exps)
                out[b, i] += weights[b, i, j] * (Wv @ x[b, j] + bv)
    return weights, out


@check("RelativeSelfAttention2d.values", hidden=True)
def grid_attention_matches_a_loop(RelativeSelfAttention2d, device):
    """Does it match an explicit loop on grids 1 × 1, 1 × 4, 4 × 1, 2 × 3, 3 × 2 and 3 × 3, with and without bias?"""
    configs = [((1, 1), 1, False), ((1, 4), 2, True), ((4, 1), 2, False)]
    configs += [((2, 3), 3, False), ((3, 2), 2, True), ((3, 3), 1, False)]
    for seed, (grid, B, bias) in enumerate(configs):
        module = grid_module(
            RelativeSelfAttention2d, 5, 3, 4, grid, bias=bias, seed=seed, device=device
        )
        X = random_tensor(B, grid[0] * grid[1], 5, seed=seed, device=device)
        ref_w, ref_out = loop_grid_attention(module, X)
        out, weights = attend_grid(module, X)
        what = tr("on a {rows} × {columns} grid (B={B}, bias={bias})").format(
            rows=grid[0], columns=grid[1], B=B, bias=bias
        )
        expect_close(
            weights,
            ref_w.float().to(device),
            f"attention_weights {what}",
            labels=("batch", "query"),
        )
        expect_close(
            out,
            ref_out.float().to(device),
            tr("the output {what}").format(what=what),
            labels=("batch", "query"),
        )


@check("RelativeSelfAttention2d.values", hidden=True)
def grid_attention_matches_sdpa(RelativeSelfAttention2d, device):
    """Is the output torch's scaled_dot_product_attention with the bias of each pair's offset as a float mask?"""
    grid, B = (3, 4), 2
    N = grid[0] * grid[1]
    module = grid_module(RelativeSelfAttention2d, 6, 4, 5, grid, bias=True, seed=11, device=device)
    X = random_tensor(B, N, 6, seed=11, device=device)
    table = module.relative_bias.detach().cpu().tolist()
    mask = torch.tensor(
        [[table[a][c] for a, c in (offset_index(i, j, grid) for j in range(N))] for i in range(N)]
    ).to(device)
    with torch.no_grad():
        q, k, v = (F.linear(X, m.weight, m.bias) for m in (module.W_q, module.W_k, module.W_v))
        expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    out, _ = attend_grid(module, X.clone())
    expect_close(
        out,
        expected,
        tr("the output against scaled_dot_product_attention (a 3 × 4 grid)"),
        labels=("batch", "query"),
    )


@check("RelativeSelfAttention2d.values", hidden=True)
def grid_attention_properties_hidden(RelativeSelfAttention2d, device):
    """float64 in and out (equal to a float64 loop), gradients to relative_bias, W_q, W_k, W_v and X (and right ones), X unchanged, no tensor made on the CPU?"""
    grid_contract(
        lambda dev: grid_module(
            RelativeSelfAttention2d, 6, 2, 5, (3, 2), bias=True, seed=9, device=dev
        ),
        device,
        seed=9,
        B=3,
        grid=(3, 2),
        D=6,
        reference=loop_grid_attention,
    )


@check("RelativeSelfAttention2d.positions", hidden=True)
def a_large_bias_copies_the_left_neighbour(RelativeSelfAttention2d, device):
    """With W_q = 0 and a bias of 30 on the offset (0, -1) only, does every patch outside the first column output the value of the patch to its left?"""
    grid = (3, 4)
    h, w = grid
    module = grid_module(RelativeSelfAttention2d, 5, 3, 4, grid, seed=12, device=device)
    with torch.no_grad():
        module.W_q.weight.zero_()
        module.relative_bias.zero_()
        module.relative_bias[h - 1, w - 2] = 30.0
    X = random_tensor(2, h * w, 5, seed=12, device=device)
    values = X @ module.W_v.weight.detach().T  # (B, N, D_V)
    out, _ = attend_grid(module, X)
    inside = [i for i in range(h * w) if i % w]  # every patch with a patch to its left
    expect_close(
        out[:, inside],
        values[:, [i - 1 for i in inside]],
        tr(
            "the output of the patches outside the first column of a 3 × 4 grid, with a bias "
            "of 30 on the offset (0, -1) (each should copy the value of the patch to its left)"
        ),
        atol=1e-4,
        labels=("batch", "patch"),
    )


@check("RelativeSelfAttention2d.positions", hidden=True)
def no_neighbour_across_the_row_end(RelativeSelfAttention2d, device):
    """With the same bias, do the patches of the first column (nothing to their left) spread their weight evenly?"""
    grid = (3, 4)
    h, w = grid
    module = grid_module(RelativeSelfAttention2d, 5, 3, 4, grid, seed=13, device=device)
    with torch.no_grad():
        module.W_q.weight.zero_()
        module.relative_bias.zero_()
        module.relative_bias[h - 1, w - 2] = 30.0
    _, weights = attend_grid(module, random_tensor(1, h * w, 5, seed=13, device=device))
    first = [r * w for r in range(h)]
    expect_close(
        weights[0, first],
        torch.full((h, h * w), 1 / (h * w), device=device),
        tr(
            "the weights of the patches 0, 4 and 8 (first column of a 3 × 4 grid: no patch to "
            "their left, so no bias applies and every weight is 1/12)"
        ),
        labels=("patch",),
    )


@check("RelativeSelfAttention2d.positions", hidden=True)
def gradient_of_each_offset(RelativeSelfAttention2d, device):
    """With W_q = 0 on a 2 × 3 grid, is the gradient of each entry of relative_bias the sum of the gradients of the scores of the pairs at that offset?"""
    grid, B = (2, 3), 2
    dev64 = float64_device(device)
    module = grid_module(RelativeSelfAttention2d, 5, 3, 4, grid, seed=14, device=dev64).double()
    with torch.no_grad():
        module.W_q.weight.zero_()  # every score is the bias of its offset
    X = random_tensor(B, 6, 5, seed=14, device=dev64, dtype=torch.float64)
    R = random_tensor(B, 6, 4, seed=15, device=dev64, dtype=torch.float64)
    # the reference, by loops: L = Σ R·y, y_i = Σ_j w_ij v_j, w_ij = softmax_j(table[offset])
    table = module.relative_bias.detach().cpu().tolist()
    v = (X @ module.W_v.weight.detach().T).cpu()  # (B, 6, 4)
    r = R.cpu()
    expected = torch.zeros(3, 5, dtype=torch.float64)
    for i in range(6):
        index = [offset_index(i, j, grid) for j in range(6)]
        scores = [table[a][c] for a, c in index]
        exps = [math.exp(s - max(scores)) for s in scores]
        w = [e / sum(exps) for e in exps]
        for b in range(B):
            g = [float(r[b, i] @ v[b, j]) for j in range(6)]  # dL/dw_ij
            mean = sum(wj * gj for wj, gj in zip(w, g))
            for j, (a, c) in enumerate(index):
                expected[a, c] += w[j] * (g[j] - mean)  # dL/de_ij, summed per offset
    out, _ = attend_grid(module, X)
    if not out.requires_grad:
        raise CheckError(tr("the output does not require grad: is relative_bias detached?"))
    module.relative_bias.grad = None
    (out * R).sum().backward()
    grad = module.relative_bias.grad
    if grad is None:
        raise CheckError(tr("no gradient reached relative_bias (a 2 × 3 grid)"))
    expect_close(
        grad,
        expected.to(dev64),
        tr(
            "the gradient of relative_bias on a 2 × 3 grid with W_q = 0 (entry [1 + δr, 2 + "
            "δc] should collect the gradients of the scores of every pair at offset (δr, δc))"
        ),
        atol=1e-8,
        rtol=1e-6,
        labels=("row offset + 1",),
    )


@check("RelativeSelfAttention2d.dropout", hidden=True)
def grid_attention_dropout(RelativeSelfAttention2d, device):
    """With dropout=1, is the output zero in training, and untouched in evaluation?"""
    module = grid_module(RelativeSelfAttention2d, 4, 4, 3, (2, 2), 1.0, seed=4, device=device)
    X = random_tensor(2, 4, 4, seed=4, device=device)
    eval_out, eval_w = attend_grid(module.eval(), X)
    values = X @ module.W_v.weight.detach().T
    expect_close(
        eval_out,
        torch.bmm(eval_w, values),
        tr("the output in eval mode with dropout=1 (dropout must be off)"),
        labels=("batch", "query"),
    )
    train_out, _ = attend_grid(module.train(), X)
    module.eval()
    expect_close(
        train_out,
        torch.zeros_like(train_out),
        tr("the output in train mode with dropout=1 (every weight dropped)"),
        labels=("batch", "query"),
    )


@check("RelativeSelfAttention2d.dropout", hidden=True)
def grid_attention_dropout_statistics(RelativeSelfAttention2d, device):
    """With dropout=0.3 in training, is a fraction ≈ 0.3 of the weights zeroed and the rest divided by 0.7, once?"""
    grid_dropout_contract(
        lambda N, p: grid_module(
            RelativeSelfAttention2d, N, 3, N, (3, 3), p, seed=10, device=device
        ),
        device,
        seed=10,
        B=8,
        grid=(3, 3),
        p=0.3,
    )


# ----------------------------------------------------------------- check your understanding


@check("quiz_11_1.key", hidden=True)
def quiz_11_1_key(answer, device):
    """Is answer_11_1 the right choice?"""
    value = expect_choice(answer(), "abcd", "answer_11_1")
    if value != "a":
        raise CheckError(
            tr(
                "answer_11_1 = {value!r} is not the right choice: how many patches does one "
                "row of the grid hold, and in which order are the patches numbered?"
            ).format(value=value)
        )


@check("quiz_11_2.key", hidden=True)
def quiz_11_2_key(answer, device):
    """Is answer_11_2 the right patch size?"""
    value = expect_number(answer(), "answer_11_2")
    d = 768
    cheaper = [
        p
        for p in range(1, 225)
        if 224 % p == 0 and 12 * (224 // p) ** 2 * d * d > 2 * (224 // p) ** 4 * d
    ]
    if abs(value - min(cheaper)) > 1e-9:
        raise CheckError(
            tr(
                "answer_11_2 = {value:g} is not the right patch size: for which N is 12 N d² "
                "larger than 2 N² d, and which N does each divisor of 224 give?"
            ).format(value=value)
        )


@check("quiz_11_3.key", hidden=True)
def quiz_11_3_key(answer, device):
    """Is answer_11_3 the right choice?"""
    value = expect_choice(answer(), "abcd", "answer_11_3")
    if value != "b":
        raise CheckError(
            tr(
                "answer_11_3 = {value!r} is not the right choice: which tables have a row, or "
                "an entry, for every patch and every offset of a 14 × 14 grid?"
            ).format(value=value)
        )


# ----------------------------------------------------------------- property classes
# Each graded target names the groups that test each class (tests/test_properties.py proves
# each with a wrong answer in tests/wrong/vision.py that breaks it).

properties(
    "patchify",
    float64=("patchify", "patchify.safety"),
    gradient=("patchify", "patchify.safety"),
    meta=("patchify", "patchify.safety"),
    dropout="n/a: patchify only moves pixels; it has no dropout",
    unchanged=("patchify", "patchify.safety"),
)
properties(
    "RelativeSelfAttention2d",
    float64=("RelativeSelfAttention2d", "RelativeSelfAttention2d.values"),
    gradient=("RelativeSelfAttention2d", "RelativeSelfAttention2d.values"),
    meta=("RelativeSelfAttention2d", "RelativeSelfAttention2d.values"),
    dropout=("RelativeSelfAttention2d", "RelativeSelfAttention2d.dropout"),
    unchanged=("RelativeSelfAttention2d", "RelativeSelfAttention2d.values"),
)
