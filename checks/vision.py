"""Visible checks for the chapter "Attention on images".

References: patches cut one at a time by slicing (an explicit loop), and the weights of a
relative 2-D bias written out by hand from the row and column of each patch.

Why one module: it mirrors one chapter notebook, with its two graded targets (``patchify``
and the grid attention module) and its three questions. The loop references, call wrappers
and contracts here are also what checks/hidden/vision.py imports: they live in the visible
module because a release keeps it and drops ``checks/hidden/``.
"""

import torch

from checks._contract import (
    expect_dropout_pattern,
    expect_gradient_values,
    expect_gradients,
    float64_device,
    invoke,
    module_tensors,
    on_meta,
    seeded,
)
from checks._core import check, random_tensor, softmax_list
from checks._crash import raised_by_code_under_test
from checks._errors import CheckError, CheckInternalError, CrashInCodeUnderTest
from checks._expect import expect_choice, expect_close, expect_number, expect_tensor, shape_str
from checks._i18n import tr
from checks.scoring import build
from checks.self_attention import cpu_twin

# ----------------------------------------------------------------- patchify


def loop_patches(images: torch.Tensor, p: int) -> torch.Tensor:
    """The patches cut one at a time by slicing: (B, N, C·p·p), row-major, channel first.

    Computed on the CPU in float64 from a copy of the images.
    """
    x = images.detach().to("cpu", torch.float64)
    B, C, H, W = x.shape
    return torch.stack(
        [
            torch.stack(
                [
                    x[b, :, r * p : (r + 1) * p, c * p : (c + 1) * p].reshape(-1)
                    for r in range(H // p)
                    for c in range(W // p)
                ]
            )
            for b in range(B)
        ]
    )


def call_patchify(patchify, images: torch.Tensor, p: int, name: str = "images"):
    """Call patchify; check it returns (B, N, C·p·p) with the images' dtype and device."""
    what = f"patchify({name} {shape_str(images.shape)}, {p})"
    out = invoke(patchify, images, p, what=what, names=("images", "patch_size"))
    B, C, H, W = images.shape
    expect_tensor(
        out,
        tr("the output of {what}").format(what=what),
        shape=(B, (H // p) * (W // p), C * p * p),
        dtype=images.dtype,
        device=images.device,
    )
    return out


def expect_patches(patchify, images: torch.Tensor, p: int, name: str = "images", **tol):
    """patchify(images, p) must equal the patches cut by a loop (computed before the call)."""
    expected = loop_patches(images, p)
    out = call_patchify(patchify, images, p, name)
    expect_close(
        out.detach().to("cpu", torch.float64),
        expected,
        f"patchify({name} {shape_str(images.shape)}, {p})",
        labels=("image", "patch"),
        **tol,
    )


def expect_value_error(call, what: str, under, names: list[str]) -> None:
    """``call()`` must raise a ValueError of the code under test whose message holds each name."""
    wanted = tr(" and ").join(names)
    try:
        call()
    except (CheckError, CheckInternalError, NotImplementedError):
        raise
    except CrashInCodeUnderTest as err:  # raised in the notebook's kernel, at grading
        kind, message = err.type_name, err.message
    except Exception as err:
        if not raised_by_code_under_test(err, under):
            raise
        kind, message = type(err).__name__, str(err)
    else:
        raise CheckError(
            tr(
                "{what} returned without an error: expected a ValueError whose message names "
                "{wanted}, so that the caller learns what is wrong"
            ).format(what=what, wanted=wanted)
        )
    if kind != "ValueError":
        raise CheckError(
            tr(
                "{what} raised {kind}: {message}\n      expected a ValueError of your own, "
                "raised before any reshape, whose message names {wanted}"
            ).format(what=what, kind=kind, message=message, wanted=wanted)
        )
    missing = [n for n in names if n not in message]
    if missing:
        raise CheckError(
            tr(
                "{what} raised ValueError: {message}\n      expected the message to name "
                "{wanted}; it does not mention {missing}"
            ).format(what=what, message=message, wanted=wanted, missing=tr(" or ").join(missing))
        )


def patchify_contract(patchify, device, *, seed, shape, p):
    """float64 kept and equal to the loop, gradients right, images unchanged, nothing on the CPU."""
    dev64 = float64_device(device)
    images64 = random_tensor(*shape, seed=seed, device=dev64, dtype=torch.float64)
    expect_patches(patchify, images64, p, "float64 images", atol=1e-12, rtol=0)
    leaf = random_tensor(*shape, seed=seed, device=device).requires_grad_()
    what = tr("patchify(images {shape}, {p})").format(shape=shape_str(shape), p=p)
    out = call_patchify(patchify, leaf, p)
    expect_gradients(out, {"images": leaf}, what, seed=seed)
    expect_gradient_values(
        lambda images: call_patchify(patchify, images, p),
        {"images": images64},
        what,
        seed=seed,
    )
    meta = torch.empty(shape, device="meta")
    on_meta(
        lambda: call_patchify(patchify, meta, p),
        tr("{what} on the meta device").format(what=what),
        patchify,
    )


@check("patchify")
def worked_example(patchify, device):
    """Does patchify(arange(32).reshape(1, 2, 4, 4), 2) give the four patches of the text, row by row, each channel first?"""
    images = torch.arange(32.0, device=device).reshape(1, 2, 4, 4)
    expect_patches(patchify, images, 2, "arange(32).reshape(1, 2, 4, 4):")


@check("patchify")
def wide_images(patchify, device):
    """For images (2, 3, 8, 12) and patch_size 4, are the 2 × 3 patches in row-major order (left to right, then top to bottom)?"""
    images = random_tensor(2, 3, 8, 12, seed=1, device=device)
    expect_patches(patchify, images, 4)


@check("patchify")
def height_not_divisible(patchify, device):
    """Does patchify raise a ValueError that names the height (30) and patch_size (8) for images (2, 3, 30, 32)?"""
    images = torch.zeros(2, 3, 30, 32, device=device)
    expect_value_error(
        lambda: patchify(images, 8), "patchify(images (2, 3, 30, 32), 8)", patchify, ["30", "8"]
    )


@check("patchify")
def patchify_properties(patchify, device):
    """float64 kept, gradients to the images (and right ones), images unchanged, no tensor made on the CPU?"""
    patchify_contract(patchify, device, seed=3, shape=(2, 2, 6, 9), p=3)


# ----------------------------------------------------------------- RelativeSelfAttention2d


def grid_module(cls, D_X, D_Q, D_V, grid, dropout=0.0, *, bias=False, seed=0, device="cpu"):
    """A RelativeSelfAttention2d with reproducible weights and a random relative_bias."""
    module = build(cls, D_X, D_Q, D_V, grid, dropout, bias=bias, seed=seed, device=device)
    h, w = grid
    table = getattr(module, "relative_bias", None)
    if not isinstance(table, torch.Tensor) or tuple(table.shape) != (2 * h - 1, 2 * w - 1):
        got = shape_str(table.shape) if isinstance(table, torch.Tensor) else type(table).__name__
        raise CheckError(
            tr(
                "keep the given __init__: with grid_size={grid}, relative_bias must be a "
                "tensor of shape ({rows}, {columns}), got {got}"
            ).format(grid=grid, rows=2 * h - 1, columns=2 * w - 1, got=got)
        )
    with torch.no_grad():
        table.copy_(random_tensor(2 * h - 1, 2 * w - 1, seed=seed + 100, device=table.device))
    return module


def attend_grid(module, X):
    """Call the module on X; check it returns (B, N, D_V) and keeps (B, N, N) weights.

    On an accelerator the forward is rehearsed first on a CPU copy of the module: an index
    past the end of relative_bias is an IndexError on the CPU, but a device-side assert on
    CUDA, after which the process can no longer use the GPU.
    """
    grid = tuple(getattr(module, "grid_size", ()))
    what = tr("the forward on X {X_shape} (grid_size {grid})").format(
        X_shape=shape_str(X.shape), grid=grid
    )
    under = type(module)
    twin = cpu_twin(module) if X.device.type not in ("cpu", "meta") else None
    if twin is not None:
        invoke(twin, X.detach().cpu(), what=what, names=("X",), under=under)
    out = invoke(module, X, what=what, names=("X",), under=under)
    B, N = X.shape[0], X.shape[1]
    expect_tensor(
        out, tr("the output"), shape=(B, N, module.W_v.out_features), dtype=X.dtype, device=X.device
    )
    weights = getattr(module, "attention_weights", None)
    if weights is None:
        raise CheckError(tr("forward must leave the weights in self.attention_weights"))
    expect_tensor(weights, "attention_weights", shape=(B, N, N), dtype=X.dtype, device=X.device)
    return out, weights


def offset_index(i: int, j: int, grid) -> tuple[int, int]:
    """The entry of relative_bias for query patch i and key patch j, by hand."""
    h, w = grid
    return h - 1 + j // w - i // w, w - 1 + j % w - i % w


def grid_contract(make, device, *, seed, B, grid, D, reference=None):
    """float64 in and out, gradients (right ones) to every parameter and X, nothing on the CPU.

    Args:
        make: ``make(device)`` returns the module (eval mode, dropout 0) with input size D.
        reference: ``reference(module, X)`` gives float64 (weights, output) on the CPU.
    """
    dev64 = float64_device(device)
    N = grid[0] * grid[1]
    X = random_tensor(B, N, D, seed=seed, device=device)
    shapes = tr("B={B}, grid {rows} × {columns}, D_X={D}").format(
        B=B, rows=grid[0], columns=grid[1], D=D
    )
    out32, w32 = attend_grid(make(device), X)
    module64 = make(dev64).double()
    X64 = X.to(dev64, torch.float64)
    if reference is not None:
        ref_w, ref_out = (t.to(dev64) for t in reference(module64, X64))
        tol = dict(atol=1e-6, rtol=1e-5)
    else:
        ref_w, ref_out = (t.detach().to(dev64, torch.float64) for t in (w32, out32))
        tol = dict(atol=1e-4, rtol=1e-3)
    out64, w64 = attend_grid(module64, X64)
    expect_close(
        w64, ref_w, tr("float64 attention_weights ({shapes})").format(shapes=shapes), **tol
    )
    expect_close(out64, ref_out, tr("the float64 output ({shapes})").format(shapes=shapes), **tol)
    module = make(device)
    X = X.clone()
    named = module_tensors(module, X=X)
    out, _ = attend_grid(module, X)
    expect_gradients(out, named, tr("the forward ({shapes})").format(shapes=shapes), seed=seed)
    expect_gradient_values(
        lambda X: attend_grid(module64, X)[0],
        {"X": X64},
        tr("the forward ({shapes})").format(shapes=shapes),
        seed=seed,
    )
    meta, Xm = make("meta"), X.detach().to("meta")
    on_meta(
        lambda: attend_grid(meta, Xm),
        tr("the forward on the meta device ({shapes})").format(shapes=shapes),
    )


def grid_dropout_contract(make, device, *, seed, B, grid, p):
    """Dropout(p) in training on the weights, once. X = I and W_v = I make the output the weights.

    Args:
        make: ``make(N, p)`` returns the module (eval mode) with input and value size N = h·w.
    """
    N = grid[0] * grid[1]
    module = make(N, p)
    with torch.no_grad():
        module.W_v.weight.copy_(torch.eye(N))
        if module.W_v.bias is not None:
            module.W_v.bias.zero_()
    X = torch.eye(N, device=device).expand(B, N, N).contiguous()
    what = tr("(p={p}, X = I, W_v = I so that the output is the weights)").format(p=p)
    out, weights = attend_grid(module.eval(), X)
    expect_close(
        out, weights, tr("the output in eval mode {what}: dropout must be off").format(what=what)
    )
    with seeded(seed):
        out, weights = attend_grid(module.train(), X)
    module.eval()
    expect_dropout_pattern(out, weights, p, tr("the output in train mode {what}").format(what=what))


@check("RelativeSelfAttention2d")
def grid_shapes(RelativeSelfAttention2d, device):
    """On a 2 × 3 grid, does X (2, 6, 5) give outputs (2, 6, 3) and weights (2, 6, 6) whose rows sum to 1?"""
    module = grid_module(RelativeSelfAttention2d, 5, 4, 3, (2, 3), device=device)
    X = random_tensor(2, 6, 5, seed=0, device=device)
    _, weights = attend_grid(module, X)
    expect_close(weights.sum(-1), torch.ones(2, 6, device=device), tr("row sums of the weights"))


@check("RelativeSelfAttention2d")
def bias_alone_on_a_grid(RelativeSelfAttention2d, device):
    """With W_q = 0 every q·k is 0: on a 2 × 3 grid, is row i of the weights the softmax over j of relative_bias[r_j - r_i + 1, c_j - c_i + 2]?"""
    grid = (2, 3)
    table = [[0.1 * (5 * a + b) for b in range(5)] for a in range(3)]  # 0.0, 0.1, …, 1.4
    module = grid_module(RelativeSelfAttention2d, 5, 4, 3, grid, device=device)
    with torch.no_grad():
        module.W_q.weight.zero_()
        module.relative_bias.copy_(torch.tensor(table))
    _, weights = attend_grid(module, random_tensor(1, 6, 5, seed=1, device=device))
    expected = [
        [
            softmax_list([table[a][b] for a, b in (offset_index(i, j, grid) for j in range(6))])
            for i in range(6)
        ]
    ]
    expect_close(
        weights,
        torch.tensor(expected, device=device),
        tr(
            "the weights with W_q = 0 on a 2 × 3 grid (patch i at row i // 3, column i % 3) "
            "and relative_bias[a, b] = (5a + b) / 10"
        ),
        labels=("batch", "query"),
    )


@check("RelativeSelfAttention2d")
def grid_properties(RelativeSelfAttention2d, device):
    """float64 in and out, gradients to relative_bias, W_q, W_k, W_v and X (and right ones), X unchanged, no tensor made on the CPU?"""
    grid_contract(
        lambda dev: grid_module(RelativeSelfAttention2d, 5, 3, 4, (2, 3), seed=5, device=dev),
        device,
        seed=5,
        B=2,
        grid=(2, 3),
        D=5,
    )


@check("RelativeSelfAttention2d")
def grid_dropout_half(RelativeSelfAttention2d, device):
    """With dropout=0.5 in training, is a fraction ≈ 0.5 of the weights zeroed and the rest doubled, once?"""
    grid_dropout_contract(
        lambda N, p: grid_module(
            RelativeSelfAttention2d, N, 3, N, (2, 3), p, seed=6, device=device
        ),
        device,
        seed=6,
        B=6,
        grid=(2, 3),
        p=0.5,
    )


# ----------------------------------------------------------------- check your understanding
# Only the form here; the keys are in checks/hidden/vision.py.


@check("quiz_11_1")
def quiz_11_1_form(answer, device):
    """Is answer_11_1 one of the letters "a" to "d"?"""
    expect_choice(answer(), "abcd", "answer_11_1")


@check("quiz_11_2")
def quiz_11_2_form(answer, device):
    """Is answer_11_2 a patch size, a whole number that divides 224?"""
    value = expect_number(answer(), "answer_11_2")
    if value != int(value) or value < 1 or 224 % int(value):
        raise CheckError(
            tr("answer_11_2 should be a divisor of 224, got {value:g}").format(value=value)
        )


@check("quiz_11_3")
def quiz_11_3_form(answer, device):
    """Is answer_11_3 one of the letters "a" to "d"?"""
    expect_choice(answer(), "abcd", "answer_11_3")
