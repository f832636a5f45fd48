"""Chapter 11 beyond its graded groups: the data it draws, the code it shows, its questions.

``draw_shapes`` must keep the promise the chapter's ablation rests on (no patch shows parts
of two shapes, every place inside a patch alike), ``positional_encoding_2d`` and
``PatchEmbedding`` must be what the text says, and bad input must get errors that name
what is wrong.
"""

import math

import pytest
import torch
import torch.nn.functional as F

import checks
from solutions import vision
from solutions.self_attention import positional_encoding

checks.groups()  # loads the hidden groups into the registry


def shape_pixels(images, colour):
    """(B, H, W) booleans: the pixels of one colour."""
    rgb = torch.tensor(vision.COLOURS[colour])[:, None, None]
    return (images == rgb).all(1)


def test_draw_shapes_is_deterministic_and_labels_red_left_of_blue():
    """Does a seed give the same images, and is the label 1 exactly when red's centre is left of blue's?"""
    images, labels = vision.draw_shapes(64, seed=3)
    again, labels_again = vision.draw_shapes(64, seed=3)
    assert torch.equal(images, again) and torch.equal(labels, labels_again)
    assert images.shape == (64, 3, 28, 28) and images.dtype == torch.float32
    assert labels.dtype == torch.int64 and set(labels.tolist()) == {0, 1}
    columns = torch.arange(28, dtype=torch.float64)
    for image, label in zip(images, labels):
        red, blue = shape_pixels(image[None], "red")[0], shape_pixels(image[None], "blue")[0]
        assert red.any() and blue.any()
        red_x = (red.double() * columns).sum() / red.sum()
        blue_x = (blue.double() * columns).sum() / blue.sum()
        assert bool(red_x < blue_x) == bool(label)


def test_no_patch_shows_two_shapes():
    """Does every 4 × 4 patch hold pixels of one shape at most, the promise the ablation needs?"""
    images, _ = vision.draw_shapes(300, seed=4)
    lit = (images > 0).any(1)  # (B, 28, 28): pixels of some shape
    # label the shapes: two shapes never touch, so a patch with two colours is two shapes
    colours = torch.stack([shape_pixels(images, c) for c in vision.COLOURS])  # (5, B, 28, 28)
    assert torch.equal(colours.any(0), lit)
    per_patch = colours.reshape(5, -1, 7, 4, 7, 4).any(5).any(3)  # (5, B, 7, 7)
    assert int(per_patch.sum(0).max()) == 1, "a patch shows two colours"


def test_labels_are_balanced_and_places_in_a_patch_alike():
    """Are about half the labels 1, and is the column of red's centre inside its patch spread
    evenly whatever the label?"""
    images, labels = vision.draw_shapes(4000, seed=5)
    assert abs(labels.float().mean().item() - 0.5) < 0.03
    red = shape_pixels(images, "red")  # (B, 28, 28)
    columns = torch.arange(28, dtype=torch.float64)
    centre = ((red.double() * columns).sum((1, 2)) / red.sum((1, 2))).round().long()
    for label in (0, 1):
        counts = torch.bincount(centre[labels == label] % 4, minlength=4).double()
        share = counts / counts.sum()
        assert (share - 0.25).abs().max() < 0.04, (label, share.tolist())


def test_draw_shapes_rejects_a_size_that_is_not_a_grid_of_patches():
    """Does a size that is no multiple of 4 get an error that names it?"""
    with pytest.raises(ValueError, match="multiple of 4, at least 16, got 30"):
        vision.draw_shapes(2, seed=0, size=30)


def test_positional_encoding_2d_is_a_row_half_and_a_column_half():
    """Is row r·w + c the 1-D encoding of r (first d/2 channels) followed by that of c?"""
    h, w, d = 3, 5, 12
    P = vision.positional_encoding_2d(h, w, d)
    assert P.shape == (h * w, d) and P.dtype == torch.float32
    for r in range(h):
        for c in range(w):
            expected = [
                (math.sin if k % 2 == 0 else math.cos)(i / 10000 ** ((k - k % 2) / (d // 2)))
                for i in (r, c)
                for k in range(d // 2)
            ]
            torch.testing.assert_close(P[r * w + c], torch.tensor(expected), atol=1e-6, rtol=0)
    torch.testing.assert_close(
        P[:, : d // 2].reshape(h, w, -1)[:, 0], positional_encoding(h, d // 2)
    )
    with pytest.raises(ValueError, match="multiple of 4, got 10"):
        vision.positional_encoding_2d(2, 2, 10)


def test_patch_embedding_is_a_convolution(device):
    """Does PatchEmbedding equal nn.Conv2d with kernel size and stride p, given the same weights?"""
    torch.manual_seed(0)
    embed = vision.PatchEmbedding(3, 4, 16).to(device)
    conv = torch.nn.Conv2d(3, 16, kernel_size=4, stride=4).to(device)
    with torch.no_grad():
        conv.weight.copy_(embed.proj.weight.reshape(16, 3, 4, 4))
        conv.bias.copy_(embed.proj.bias)
    images = torch.randn(2, 3, 8, 12, device=device)
    torch.testing.assert_close(
        embed(images), conv(images).flatten(2).transpose(1, 2), atol=1e-5, rtol=1e-5
    )


@pytest.mark.parametrize(
    "images, p, error, message",
    [
        ([[1.0]], 2, TypeError, "images must be a torch.Tensor, got list"),
        (torch.zeros(3, 8, 8), 2, ValueError, r"got shape \(3, 8, 8\)"),
        (torch.zeros(1, 3, 8, 8), 0, ValueError, "positive integer, got 0"),
        (torch.zeros(1, 3, 8, 8), 2.0, ValueError, "positive integer, got 2.0"),
        (torch.zeros(1, 3, 9, 8), 2, ValueError, r"height 9 = 4·2 \+ 1"),
    ],
)
def test_patchify_rejects_bad_input(images, p, error, message):
    """Does bad input get an error that names what was expected and what came?"""
    with pytest.raises(error, match=message):
        vision.patchify(images, p)


def test_grid_attention_rejects_the_wrong_number_of_patches():
    """Does a sequence that is not h·w patches (a class token added, say) get a clear error?"""
    attention = vision.RelativeSelfAttention2d(4, 4, 4, grid_size=(2, 3), dropout=0.0)
    with pytest.raises(ValueError, match=r"h·w = 6 patches of a 2 × 3 grid, got 7"):
        attention(torch.zeros(1, 7, 4))


@pytest.mark.parametrize("group, key", [("quiz_11_1", "a"), ("quiz_11_3", "b")])
def test_choice_self_check_accepts_every_letter_and_the_key_only_one(group, key):
    """Does the self-check accept a, b, c and d alike (it must not give the key away), while the
    hidden key accepts only the reference's answer?"""
    assert getattr(vision, group.replace("quiz", "answer")) == key
    for letter in "abcd":
        checks.run(group, lambda letter=letter: letter, verbose=False)
        if letter == key:
            checks.run_hidden(f"{group}.key", lambda letter=letter: letter, verbose=False)
        else:
            with pytest.raises(checks.CheckError, match="is not the right choice"):
                checks.run_hidden(f"{group}.key", lambda letter=letter: letter, verbose=False)


def test_patch_size_self_check_accepts_any_divisor_and_the_key_only_the_crossover():
    """Does the self-check of 11.2 accept every divisor of 224, and the key only the smallest
    p with 12 N d² > 2 N² d for d = 768 (N = 3136 < 6d = 4608)?"""
    divisors = [p for p in range(1, 225) if 224 % p == 0]
    for p in divisors:
        checks.run("quiz_11_2", lambda p=p: p, verbose=False)
    checks.run_hidden("quiz_11_2.key", lambda: 4, verbose=False)
    assert vision.answer_11_2 == 4 and (224 // 4) ** 2 < 6 * 768 < (224 // 2) ** 2
    for p in (d for d in divisors if d != 4):
        with pytest.raises(checks.CheckError, match="not the right patch size"):
            checks.run_hidden("quiz_11_2.key", lambda p=p: p, verbose=False)
    for bad in (3, 0, 4.5, "4"):
        with pytest.raises(checks.CheckError):
            checks.run("quiz_11_2", lambda bad=bad: bad, verbose=False)


def test_the_text_example_of_exercise_11_1():
    """Is patch 1 of arange(32).reshape(1, 2, 4, 4) with p = 2 the one the exercise quotes,
    and does F.unfold agree?"""
    x = torch.arange(32.0).reshape(1, 2, 4, 4)
    assert vision.patchify(x, 2)[0, 1].tolist() == [2, 3, 6, 7, 18, 19, 22, 23]
    torch.testing.assert_close(vision.patchify(x, 2), F.unfold(x, 2, stride=2).transpose(1, 2))
