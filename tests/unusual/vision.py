"""Unusual but correct answers to the chapter "Attention on images"."""

import math

import torch
import torch.nn.functional as F

from tests.unusual import unusual


@unusual("patchify")
def patches_by_unfold(images, patch_size):
    """F.unfold with stride p (im2col), after a check of its own."""
    p = patch_size
    if images.shape[-2] % p or images.shape[-1] % p:
        raise ValueError(f"{tuple(images.shape)}: {p} must divide both {images.shape[-2:]}")
    return F.unfold(images, kernel_size=p, stride=p).transpose(1, 2)  # (B, C·p², N) -> (B, N, C·p²)


@unusual("patchify")
def patches_by_tensor_unfold_and_einsum(images, patch_size):
    """Tensor.unfold twice for the windows; einsum, not permute, to reorder the axes."""
    B, C, H, W = images.shape
    for name, size in (("height", H), ("width", W)):
        if size % patch_size:
            raise ValueError(f"the {name} {size} is not a multiple of patch_size {patch_size}")
    windows = images.unfold(2, patch_size, patch_size).unfold(3, patch_size, patch_size)
    windows = torch.einsum("bcrsij->brscij", windows)  # (B, C, R, S, p, p) -> (B, R, S, C, p, p)
    return windows.flatten(3).flatten(1, 2)


@unusual("patchify")
def patches_by_loops(images, patch_size):
    """Python loops over the grid, each patch sliced and flattened, then stacked."""
    B, C, H, W = images.shape
    p = patch_size
    if H % p != 0 or W % p != 0:
        raise ValueError(f"images {tuple(images.shape)}: {H} or {W} is not divisible by {p}")
    patches = [
        images[:, :, r : r + p, c : c + p].reshape(B, -1)
        for r in range(0, H, p)
        for c in range(0, W, p)
    ]
    return torch.stack(patches, dim=1)


@unusual("RelativeSelfAttention2d")
def grid_by_divmod_and_gather(self, X):
    """Scores by einsum; rows and columns by torch.div; the bias gathered from the flattened table."""
    h, w = self.grid_size
    queries, keys, values = self.W_q(X), self.W_k(X), self.W_v(X)
    scores = torch.einsum("bid,bjd->bij", queries, keys) / queries.shape[-1] ** 0.5
    index = torch.arange(h * w, device=X.device)
    rows = torch.div(index, w, rounding_mode="floor")
    columns = index - rows * w
    flat = (rows[None, :] - rows[:, None] + h - 1) * (2 * w - 1) + (
        columns[None, :] - columns[:, None] + w - 1
    )
    bias = self.relative_bias.reshape(-1).gather(0, flat.reshape(-1)).reshape(h * w, h * w)
    self.attention_weights = torch.softmax(scores + bias, dim=-1)
    return torch.einsum("bij,bjd->bid", self.dropout(self.attention_weights), values)


@unusual("RelativeSelfAttention2d")
def grid_by_meshgrid_and_functional_dropout(self, X):
    """Coordinates from meshgrid, F.linear projections, Tensor.softmax, functional dropout."""
    h, w = self.grid_size
    linear = F.linear
    queries = linear(X, self.W_q.weight, self.W_q.bias)
    keys = linear(X, self.W_k.weight, self.W_k.bias)
    values = linear(X, self.W_v.weight, self.W_v.bias)
    r, c = torch.meshgrid(
        torch.arange(h, device=X.device), torch.arange(w, device=X.device), indexing="ij"
    )
    r, c = r.flatten(), c.flatten()  # row-major, as patchify numbers the patches
    bias = self.relative_bias[(r - r[:, None]) + (h - 1), (c - c[:, None]) + (w - 1)]
    scores = queries @ keys.transpose(-1, -2) * (1 / math.sqrt(keys.shape[-1])) + bias
    weights = scores.softmax(-1)
    self.attention_weights = weights
    return F.dropout(weights, self.dropout.p, self.training) @ values


@unusual("quiz_11_1")
def quiz_11_1_capital():
    """A capital letter."""
    return "A"


@unusual("quiz_11_1")
def quiz_11_1_spaces():
    """Spaces around the letter."""
    return " a "


@unusual("quiz_11_2")
def quiz_11_2_float():
    """A float."""
    return 4.0


@unusual("quiz_11_2")
def quiz_11_2_tensor():
    """A one-element tensor."""
    return torch.tensor(4)


@unusual("quiz_11_3")
def quiz_11_3_capital():
    """A capital letter."""
    return "B"


@unusual("quiz_11_3")
def quiz_11_3_spaces():
    """A trailing space."""
    return "b "
