"""From the chapter "Attention on images": draw_shapes, check_images, patchify, PatchEmbedding, positional_encoding_2d, RelativeSelfAttention2d.

Generated from book/vision_attention.ipynb by ``python -m autograder export``. Do not edit this
file: edit the ``#@save vision`` cells of the notebook, then run ``make export``.
"""

import math
import random

import torch
from torch import nn

from solutions.self_attention import check_sequence, positional_encoding


def draw_shapes(num_images, seed, size=28):
    """Black images with a red shape, a blue shape and distractors; label 1 if red is left of blue.

    Each image holds one red and one blue shape and one to three shapes of the other colours
    of ``COLOURS``; each shape is a square, a disc or a cross, 3 or 5 pixels across. The image
    is a grid of patches of 4 × 4 pixels, and each shape lies inside its own block of 2 × 2
    patches, at a random place within it. Blocks never overlap, and the red and the blue
    block are in different columns of blocks. So no patch shows parts of two shapes, and the
    place of a shape inside its patches says nothing about where its block is.

    Args:
        num_images: how many images to draw.
        seed: the seed of the drawing; the same seed gives the same images.
        size: the side of each image in pixels, a multiple of 4, at least 16.

    Shape:
        - output: images (num_images, 3, size, size), float32 in [0, 1], on the CPU, and
          labels (num_images,), int64: 1 if the red shape is left of the blue one, else 0
    """
    if size % 4 or size < 16:
        raise ValueError(f"size must be a multiple of 4, at least 16, got {size}")
    rng = random.Random(seed)
    grid = size // 4  # patches per row and per column
    blocks = [(r, c) for r in range(grid - 1) for c in range(grid - 1)]  # top-left patches

    def apart(a, b):  # two blocks of 2 × 2 patches that share no patch
        return max(abs(a[0] - b[0]), abs(a[1] - b[1])) >= 2

    shapes = []  # per image, up to 5 shapes: (centre row, centre column, colour, radius, kind)
    for _ in range(num_images):
        while True:
            red, blue = rng.sample(blocks, 2)
            if red[1] != blue[1] and apart(red, blue):
                break
        placed = [(red, 0), (blue, 1)]
        for _ in range(rng.randint(1, 3)):
            free = [b for b in blocks if all(apart(b, other) for other, _ in placed)]
            if free:
                placed.append((rng.choice(free), rng.randint(2, len(COLOURS) - 1)))
        # the centre lies 2 to 5 pixels into its 8-pixel block: every place in a patch alike
        shapes.append(
            [
                (
                    4 * r + rng.randint(2, 5),
                    4 * c + rng.randint(2, 5),
                    colour,
                    rng.randint(1, 2),
                    rng.randint(0, 2),
                )
                for (r, c), colour in placed
            ]
            + [(0, 0, -1, 0, 0)] * (5 - len(placed))  # absent shapes: colour -1
        )
    cy, cx, colour, radius, kind = torch.tensor(shapes).unbind(-1)  # each (num_images, 5)
    palette = torch.tensor(list(COLOURS.values()))  # (5, 3)
    y = torch.arange(size).view(1, size, 1)
    x = torch.arange(size).view(1, 1, size)
    images = torch.zeros(num_images, 3, size, size)
    for s in range(5):
        dy = (y - cy[:, s, None, None]).abs()  # (num_images, size, 1)
        dx = (x - cx[:, s, None, None]).abs()  # (num_images, 1, size)
        r, k = radius[:, s, None, None], kind[:, s, None, None]
        square = (dy <= r) & (dx <= r)
        disc = dy**2 + dx**2 <= r**2 + 1
        cross = ((dy <= r) & (dx == 0)) | ((dx <= r) & (dy == 0))
        inside = torch.where(k == 0, square, torch.where(k == 1, disc, cross))  # (n, size, size)
        inside = inside & (colour[:, s] >= 0)[:, None, None]
        paint = palette[colour[:, s].clamp(min=0)][:, :, None, None]  # (num_images, 3, 1, 1)
        images = torch.where(inside[:, None], paint, images)
    labels = (cx[:, 0] < cx[:, 1]).long()  # red's centre left of blue's
    return images, labels


COLOURS = {  # the colours draw_shapes paints with: red, blue, then the distractors
    "red": (0.95, 0.15, 0.15),
    "blue": (0.2, 0.4, 1.0),
    "green": (0.25, 0.75, 0.25),
    "yellow": (0.9, 0.8, 0.1),
    "grey": (0.6, 0.6, 0.6),
}


def check_images(images):
    """Raise a clear error unless ``images`` is a tensor of shape (B, C, H, W)."""
    if not isinstance(images, torch.Tensor):
        raise TypeError(f"images must be a torch.Tensor, got {type(images).__name__}")
    if images.dim() != 4:
        raise ValueError(
            "images must have shape (batch, channels, height, width), "
            f"got shape {tuple(images.shape)}"
        )


def patchify(images, patch_size):
    """Cut each image into square patches, row by row, and flatten each patch channel first.

    Patch ``n`` is row ``n // (W/p)``, column ``n % (W/p)`` of the grid of patches; entry
    ``c·p² + i·p + j`` of a patch is its pixel ``(i, j)`` of channel ``c``, the layout of
    ``nn.Conv2d``'s weight and of ``F.unfold``.

    Args:
        images: a batch of images.
        patch_size: p, the side of each square patch; it must divide H and W.

    Shape:
        - images: (B, C, H, W)
        - output: (B, N, C·p·p) with N = (H/p)·(W/p), same dtype and device as images
    """
    check_images(images)
    if not isinstance(patch_size, int) or patch_size < 1:
        raise ValueError(f"patch_size must be a positive integer, got {patch_size!r}")
    B, C, H, W = images.shape
    p = patch_size
    if H % p or W % p:
        raise ValueError(
            f"patch_size={p} must divide the height and the width, got images of shape "
            f"{tuple(images.shape)}: height {H} = {H // p}·{p} + {H % p}, "
            f"width {W} = {W // p}·{p} + {W % p}"
        )
    patches = images.reshape(B, C, H // p, p, W // p, p)  # (B, C, rows, p, columns, p)
    patches = patches.permute(0, 2, 4, 1, 3, 5)  # (B, rows, columns, C, p, p)
    return patches.reshape(B, (H // p) * (W // p), C * p * p)  # (B, N, C·p·p): a copy


class PatchEmbedding(nn.Module):
    """ViT's patch embedding: cut the images into patches and map each patch to a token.

    Args:
        in_channels: C, the channels of the images.
        patch_size: p, the side of each square patch.
        num_hiddens: d, the size of each token.

    Shape:
        - images: (B, C, H, W)
        - output: (B, N, d) with N = (H/p)·(W/p), in patchify's order
    """

    def __init__(self, in_channels, patch_size, num_hiddens):
        super().__init__()
        self.patch_size = patch_size
        self.proj = nn.Linear(in_channels * patch_size**2, num_hiddens)

    def forward(self, images):
        return self.proj(patchify(images, self.patch_size))  # (B, N, C·p²) -> (B, N, d)


def positional_encoding_2d(height, width, num_hiddens):
    """A 2-D sinusoidal encoding of a grid of patches, in patchify's (row-major) order.

    Row ``r·width + c`` is the 1-D sinusoidal encoding (chapter 6) of the row r, with
    num_hiddens/2 channels, followed by that of the column c.

    Args:
        height, width: the grid's rows and columns of patches.
        num_hiddens: d, the size of each encoding; a multiple of 4.

    Shape:
        - output: (height·width, num_hiddens), float32
    """
    if num_hiddens % 4:
        raise ValueError(f"num_hiddens must be a multiple of 4, got {num_hiddens}")
    half = num_hiddens // 2
    rows = positional_encoding(height, half)  # (height, d/2): entry r encodes row r
    columns = positional_encoding(width, half)  # (width, d/2)
    P = torch.cat(
        [rows[:, None].expand(height, width, half), columns[None].expand(height, width, half)],
        dim=-1,
    )  # (height, width, d): entry (r, c) is [rows[r], columns[c]]
    return P.reshape(height * width, num_hiddens)  # patch r·width + c


class RelativeSelfAttention2d(nn.Module):
    """Self-attention over a grid of patches with a learned bias for each 2-D offset.

    Patch i sits at row r_i = i // w and column c_i = i % w of an h × w grid (patchify's
    order). The score of query patch i against key patch j is
    q_i·k_j / √D_Q + relative_bias[r_j - r_i + h - 1, c_j - c_i + w - 1].

    Args:
        input_size: size D_X of each input vector.
        query_size: size D_Q of each query and each key.
        value_size: size D_V of each value, and of each output vector.
        grid_size: (h, w), the rows and columns of the grid of patches.
        dropout: dropout probability applied to the attention weights.
        bias: whether the three projections have a bias.

    Shape:
        - X: (B, h·w, D_X)
        - output: (B, h·w, D_V); ``attention_weights``: (B, h·w, h·w)
    """

    def __init__(
        self, input_size, query_size, value_size, grid_size, dropout, bias=False, **kwargs
    ):
        super().__init__(**kwargs)
        self.W_q = nn.Linear(input_size, query_size, bias=bias)
        self.W_k = nn.Linear(input_size, query_size, bias=bias)
        self.W_v = nn.Linear(input_size, value_size, bias=bias)
        self.grid_size = tuple(grid_size)
        h, w = self.grid_size
        # entry [h - 1 + δr, w - 1 + δc]: the bias of a key δr rows below, δc columns right
        self.relative_bias = nn.Parameter(torch.zeros(2 * h - 1, 2 * w - 1))
        self.dropout = nn.Dropout(dropout)
        self.attention_weights = None

    def forward(self, X):
        check_sequence(X, self.W_q.in_features)
        h, w = self.grid_size
        if X.shape[1] != h * w:
            raise ValueError(
                f"X must hold the h·w = {h * w} patches of a {h} × {w} grid, got {X.shape[1]}"
            )
        queries, keys, values = self.W_q(X), self.W_k(X), self.W_v(X)  # (B, N, D_Q), …, (B, N, D_V)
        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(
            queries.shape[-1]
        )  # (B, N, N)
        index = torch.arange(h * w, device=X.device)  # (N,)
        rows, columns = index // w, index % w  # patch i sits at (rows[i], columns[i])
        d_rows = rows[None, :] - rows[:, None]  # (N, N): entry (i, j) is r_j - r_i
        d_columns = columns[None, :] - columns[:, None]  # (N, N): c_j - c_i
        bias = self.relative_bias[d_rows + h - 1, d_columns + w - 1]  # (N, N)
        self.attention_weights = torch.softmax(scores + bias, dim=-1)  # (B, N, N) + (N, N)
        return torch.bmm(self.dropout(self.attention_weights), values)  # (B, N, D_V)
