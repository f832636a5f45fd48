"""Does every reference solution pass every check, visible and hidden, on every device?

The checks compare with independent references (explicit loops, PyTorch
built-ins, properties), so this also tests the references against them.
"""

import pytest
import torch
import torch.nn.functional as F

import checks
from checks._core import REGISTRY
from solutions import masking, pooling, textbook, utils
from tests._sweep import chapter_of_group, one_per
from tests.wrong import exercise_of, reference

checks.groups()  # loads the hidden groups into the registry
ANSWERS = {"vector_sum_answer", "vector_sum_finding"}  # checks of a True/False answer, not code
FUNCTION_GROUPS = sorted(g for g in REGISTRY if g not in ANSWERS)


@pytest.mark.parametrize("group", one_per(FUNCTION_GROUPS, chapter_of_group, ids=str))
def test_reference_passes_check_group(group, device):
    """Does the reference in solutions/ pass this check group?"""
    ref = reference(exercise_of(group))
    answer = ref if callable(ref) else lambda: ref  # a conceptual question's answer is a value
    checks.run_hidden(group, answer, devices=[device], verbose=False)


def test_vector_sum_finding_accepts_only_the_right_answer(monkeypatch):
    """Does the finding check accept True and reject False, and the self-check too in
    self-study, while a graded self-check records both (checks/_quiz.py)?"""
    checks.run_hidden("vector_sum_finding", lambda: True, verbose=False)
    with pytest.raises(checks.CheckError, match="cancels in the softmax"):
        checks.run_hidden("vector_sum_finding", lambda: False, verbose=False)
    checks.run("vector_sum_answer", lambda: True, verbose=False)
    with pytest.raises(checks.CheckError, match="is not right"):
        checks.run("vector_sum_answer", lambda: False, verbose=False)
    monkeypatch.setenv("ATTENTION_COURSE_GRADED", "1")
    checks.run("vector_sum_answer", lambda: False, verbose=False)
    with pytest.raises(checks.CheckError, match="not None"):
        checks.run("vector_sum_answer", lambda: None, verbose=False)


def test_masked_softmax_matches_sdpa_masking(device):
    """Do masked weights times values equal SDPA with a True-means-attend boolean mask?"""
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(3, m, 8, generator=gen).to(device) for m in (5, 7, 7))
    lens = torch.tensor([[0, 7, 3, 1, 2], [4, 4, 4, 4, 4], [6, 0, 0, 5, 7]], device=device)
    attend = torch.arange(7, device=device) < lens[..., None]
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=attend)
    weights = masking.masked_softmax(q @ k.transpose(1, 2) / 8**0.5, lens)
    torch.testing.assert_close(weights @ v, expected, atol=1e-5, rtol=1e-5)


def test_dot_product_attention_matches_sdpa(device):
    """Does the reference DotProductAttention (shown in chapter 4, used by chapters 6 to 10)
    equal SDPA with a True-means-attend mask, for 1-D, 2-D and no valid_lens, and keep its
    weights before dropout?"""
    from solutions.dot_product import DotProductAttention

    gen = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(3, m, d, generator=gen).to(device) for m, d in ((5, 8), (7, 8), (7, 4)))
    attention = DotProductAttention(0.0).eval()
    for lens in (None, torch.tensor([7, 1, 4]), torch.tensor([[0, 7, 3, 1, 2]] * 3)):
        lens = None if lens is None else lens.to(device)
        mask = None
        if lens is not None:
            mask = (
                torch.arange(7, device=device)
                < (lens[:, None] if lens.dim() == 1 else lens)[..., None]
            )
        expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        torch.testing.assert_close(attention(q, k, v, lens), expected, atol=1e-5, rtol=1e-5)
    dropping = DotProductAttention(1.0).train()
    out = dropping(q, k, v)
    assert torch.equal(out, torch.zeros_like(out))
    torch.testing.assert_close(dropping.attention_weights.sum(-1), torch.ones(3, 5, device=device))


@pytest.mark.parametrize(
    "valid_lens, message",
    [
        (
            torch.tensor([1, 2, 3]),
            r"valid_lens must have shape \(2,\) or \(2, 3\) for X of shape \(2, 3, 4\), got \(3,\)",
        ),
        (torch.tensor([[1, 2]]), r"got \(1, 2\)"),
        (torch.tensor([True, False]), r"integer lengths, got dtype torch.bool"),
        ([1, 2], r"must be a torch.Tensor, got list"),
    ],
)
def test_masked_softmax_rejects_bad_valid_lens(valid_lens, message):
    """Does a wrong valid_lens raise an error naming expected against actual?"""
    with pytest.raises((ValueError, TypeError), match=message):
        masking.masked_softmax(torch.zeros(2, 3, 4), valid_lens)


def test_masked_softmax_rejects_other_device():
    """Does valid_lens on another device than X raise an error that says how to fix it?"""
    with pytest.raises(ValueError, match=r"valid_lens is on cpu but X is on meta; move it"):
        masking.masked_softmax(torch.zeros(2, 3, 4, device="meta"), torch.tensor([1, 2]))


def test_masked_softmax_rejects_bad_scores():
    """Does a 2-D or integer X raise an error naming its shape and dtype?"""
    with pytest.raises(ValueError, match=r"got shape \(3, 4\) and dtype torch.float32"):
        masking.masked_softmax(torch.zeros(3, 4), torch.tensor([1, 2, 3]))
    with pytest.raises(ValueError, match=r"dtype torch.int64"):
        masking.masked_softmax(torch.zeros(2, 3, 4, dtype=torch.long), torch.tensor([1, 2]))


def test_sequence_mask_rejects_bad_input():
    """Does sequence_mask name the expected and actual shapes?"""
    with pytest.raises(
        ValueError, match=r"valid_len must have shape \(2,\) for X of shape \(2, 5\), got \(3,\)"
    ):
        masking.sequence_mask(torch.zeros(2, 5), torch.tensor([1, 2, 3]))
    with pytest.raises(ValueError, match=r"X must have shape \(N, L, \*\), got shape \(5,\)"):
        masking.sequence_mask(torch.zeros(5), torch.tensor([1]))


def test_nadaraya_watson_rejects_bad_input():
    """Does nadaraya_watson name the shapes it got?"""
    with pytest.raises(ValueError, match=r"must be 1-D, got shapes \(2, 3\) and \(4,\)"):
        pooling.nadaraya_watson(torch.zeros(2, 3), torch.zeros(4), torch.zeros(4))
    with pytest.raises(ValueError, match=r"values must have the shape of keys \(4,\), got \(3,\)"):
        pooling.nadaraya_watson(torch.zeros(2), torch.zeros(4), torch.zeros(3))
    with pytest.raises(ValueError, match="bandwidth must be positive, got 0"):
        pooling.nadaraya_watson(torch.zeros(2), torch.zeros(4), torch.zeros(4), bandwidth=0)


def test_textbook_pitfalls_are_real():
    """Do the four pitfalls the chapter demonstrates actually happen with the textbook code?"""
    X = torch.randn(2, 2, 4)
    before = X.clone()
    textbook.textbook_masked_softmax(X, torch.tensor([2, 3]))
    assert not torch.equal(X, before), "pitfall 1: the input should be mutated"
    half = textbook.textbook_masked_softmax(before.clone().half(), torch.tensor([0, 3]))
    assert torch.isnan(half[0]).all(), "pitfall 2: float16 empty rows should be NaN"
    full = textbook.textbook_masked_softmax(before.clone(), torch.tensor([0, 3]))
    torch.testing.assert_close(
        full[0], torch.full((2, 4), 0.25), msg=lambda m: f"pitfall 3: uniform weights\n{m}"
    )
    with pytest.raises(RuntimeError, match="not on the expected device meta"):  # pitfall 4
        textbook.textbook_masked_softmax(torch.zeros(2, 2, 4, device="meta"), torch.tensor([2, 3]))


def test_try_gpu_falls_back_to_cpu(monkeypatch):
    """Without CUDA or MPS, do the device helpers return the CPU, like d2l's?"""
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    monkeypatch.setattr(utils, "mps_available", lambda: False)
    assert utils.try_gpu() == torch.device("cpu")
    assert utils.try_all_gpus() == [torch.device("cpu")]
    assert utils.num_gpus() == 0


def test_try_gpu_prefers_cuda_then_mps(monkeypatch):
    """Does try_gpu pick cuda:i when it exists, else MPS?"""
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert utils.try_gpu(1) == torch.device("cuda:1")
    assert utils.try_gpu(2) == torch.device("cpu")
    assert utils.try_all_gpus() == [torch.device("cuda:0"), torch.device("cuda:1")]
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    monkeypatch.setattr(utils, "mps_available", lambda: True)
    assert utils.try_gpu() == torch.device("mps")


def test_show_heatmaps_draws_labels_titles_and_a_colour_bar():
    """Does show_heatmaps label the axes, title the columns and add one colour bar?"""
    import matplotlib.pyplot as plt

    plt.close("all")
    utils.show_heatmaps(
        torch.rand(2, 3, 4, 5), xlabel="Keys", ylabel="Queries", titles=["a", "b", "c"]
    )
    fig = plt.gcf()
    axes = fig.axes
    assert len(axes) == 7  # 6 heatmaps + 1 colour bar
    assert axes[3].get_xlabel() == "Keys" and axes[0].get_ylabel() == "Queries"
    assert [ax.get_title() for ax in axes[:3]] == ["a", "b", "c"]
    plt.close(fig)


def test_show_heatmaps_rejects_wrong_rank():
    """Does a 2-D matrix raise an error that says how to pass it?"""
    with pytest.raises(
        ValueError, match=r"got shape \(4, 5\); for one matrix M pass M\[None, None\]"
    ):
        utils.show_heatmaps(torch.rand(4, 5), xlabel="k", ylabel="q")
