"""Correctness of the efficient attention layers (chapter efficient_attention), on every device.

Not timed: speed is measured by ``benchmarks/attention.py``. The memory bound of the chunked
additive attention is asserted with exact tensor-storage accounting on the CPU, and with
``torch.cuda.max_memory_allocated`` on CUDA.
"""

import importlib.util
import json
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from solutions.additive import AdditiveAttention, peak_tensor_memory
from solutions.dot_product import DotProductAttention
from solutions.efficient import (
    ChunkedAdditiveAttention,
    FusedDotProductAttention,
    FusedMultiHeadAttention,
    additive_scores,
    operators,
    valid_lens_to_mask,
)
from solutions.multihead import MultiHeadAttention

ROOT = Path(__file__).resolve().parent.parent


def lengths(device):
    """None, (B,) and (B, m) valid lengths for B=3, m=5, n=7, with zeros and lengths > n."""
    return {
        "none": None,
        "per_sequence": torch.tensor([0, 3, 9], device=device),
        "per_query": torch.tensor(
            [[0, 1, 2, 3, 9], [7, 0, 0, 1, 2], [1, 1, 1, 1, 1]], device=device
        ),
    }


def test_mask_matches_a_loop(device):
    valid_lens = torch.tensor([[0, 2], [5, 1]], device=device)
    mask = valid_lens_to_mask(valid_lens, 2, 4)
    assert mask.shape == (2, 1, 2, 4) and mask.dtype == torch.bool
    expected = [
        [[j < valid_lens[b, i].item() for j in range(4)] for i in range(2)] for b in range(2)
    ]
    assert mask[:, 0].tolist() == expected
    mask = valid_lens_to_mask(torch.tensor([3, 0], device=device), 2, 4)
    assert mask.shape == (2, 1, 1, 4)  # broadcast over heads and queries: linear memory
    assert mask[:, 0, 0].tolist() == [[True] * 3 + [False], [False] * 4]
    with pytest.raises(ValueError):
        valid_lens_to_mask(torch.tensor([[1, 2, 3]], device=device), 2, 4)


@pytest.mark.parametrize("case", ["none", "per_sequence", "per_query"])
def test_fused_equals_textbook(device, case):
    torch.manual_seed(0)
    valid_lens = lengths(device)[case]
    queries = torch.randn(3, 5, 8, device=device, requires_grad=True)
    keys = torch.randn(3, 7, 8, device=device, requires_grad=True)
    values = torch.randn(3, 7, 6, device=device, requires_grad=True)
    textbook, fused = DotProductAttention(0.0).eval(), FusedDotProductAttention(0.0).eval()
    expected = textbook(queries, keys, values, valid_lens)
    output = fused(queries, keys, values, valid_lens)
    assert output.shape == (3, 5, 6)
    torch.testing.assert_close(output, expected, atol=1e-5, rtol=1e-5)
    assert fused.attention_weights is None
    if valid_lens is not None:
        assert not output.isnan().any()
        empty = (valid_lens == 0) if valid_lens.dim() == 2 else (valid_lens == 0)[:, None]
        empty = empty.expand(3, 5)
        assert (output[empty] == 0).all(), "a query with valid length 0 must give zero output"
    grads = torch.autograd.grad(output.square().sum(), (queries, keys, values))
    expected_grads = torch.autograd.grad(expected.square().sum(), (queries, keys, values))
    for grad, expected_grad in zip(grads, expected_grads):
        torch.testing.assert_close(grad, expected_grad, atol=1e-5, rtol=1e-5)


def test_fused_takes_the_fused_kernel_on_cpu():
    from torch.utils._python_dispatch import TorchDispatchMode

    class Names(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.names = set()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.names.add(func.overloadpacket.__name__)
            return func(*args, **(kwargs or {}))

    q = k = v = torch.randn(2, 16, 8)
    with torch.no_grad(), Names() as recorder:
        FusedDotProductAttention(0.0).eval()(q, k, v, torch.tensor([16, 3]))
    assert "_scaled_dot_product_flash_attention_for_cpu" in recorder.names
    assert "bmm" not in recorder.names


def test_teaching_path_keeps_weights(device):
    torch.manual_seed(0)
    queries, keys, values = (torch.randn(2, 4, 8, device=device) for _ in range(3))
    valid_lens = torch.tensor([2, 0], device=device)
    fused = FusedDotProductAttention(0.0, keep_weights=True).eval()
    textbook = DotProductAttention(0.0).eval()
    output = fused(queries, keys, values, valid_lens)
    torch.testing.assert_close(output, textbook(queries, keys, values, valid_lens))
    torch.testing.assert_close(fused.attention_weights, textbook.attention_weights)


def torch_copy(module, bias):
    """An nn.MultiheadAttention holding the module's weights (as checks/hidden/multihead.py)."""
    d, h = module.W_q.in_features, module.num_heads
    ref = nn.MultiheadAttention(d, h, bias=bias, batch_first=True).to(module.W_q.weight.device)
    ref.eval()
    with torch.no_grad():
        ref.in_proj_weight.copy_(
            torch.cat([module.W_q.weight, module.W_k.weight, module.W_v.weight])
        )
        ref.out_proj.weight.copy_(module.W_o.weight)
        if bias:
            ref.in_proj_bias.copy_(torch.cat([module.W_q.bias, module.W_k.bias, module.W_v.bias]))
            ref.out_proj.bias.copy_(module.W_o.bias)
    return ref


@pytest.mark.parametrize(
    "d, h, bias, B, m, n", [(8, 2, False, 1, 4, 4), (16, 4, True, 3, 5, 7), (12, 3, True, 2, 1, 6)]
)
def test_fused_multihead_equals_torch(device, d, h, bias, B, m, n):
    torch.manual_seed(d + m)
    fused = FusedMultiHeadAttention(d, h, 0.0, bias=bias).to(device).eval()
    ref = torch_copy(fused, bias)
    textbook = MultiHeadAttention(d, h, 0.0, bias=bias).to(device).eval()
    textbook.load_state_dict(fused.state_dict())
    queries = torch.randn(B, m, d, device=device)
    keys, values = torch.randn(B, n, d, device=device), torch.randn(B, n, d, device=device)
    valid_lens = torch.randint(1, n + 1, (B,), device=device)
    padding = torch.arange(n, device=device) >= valid_lens[:, None]  # True = padding
    with torch.no_grad():
        for lens, mask in [(None, None), (valid_lens, padding)]:
            expected, _ = ref(queries, keys, values, key_padding_mask=mask)
            output = fused(queries, keys, values, lens)
            torch.testing.assert_close(output, expected, atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(
                output, textbook(queries, keys, values, lens), atol=1e-5, rtol=1e-5
            )
        per_query = torch.randint(0, n + 1, (B, m), device=device)  # zeros included
        torch.testing.assert_close(
            fused(queries, keys, values, per_query),
            textbook(queries, keys, values, per_query),
            atol=1e-5,
            rtol=1e-5,
        )
    fused.attention.keep_weights = True
    with torch.no_grad():
        fused(queries, keys, values, valid_lens)
    assert fused.attention_weights.shape == (B, h, m, n)


@pytest.mark.parametrize("case", ["none", "per_sequence", "per_query"])
@pytest.mark.parametrize("chunk_size", [1, 2, None])
def test_chunked_additive_equals_textbook(device, case, chunk_size):
    torch.manual_seed(0)
    valid_lens = lengths(device)[case]
    textbook = AdditiveAttention(8, 6, 16, 0.0).to(device).eval()
    chunked = ChunkedAdditiveAttention(8, 6, 16, 0.0, chunk_size=chunk_size).to(device).eval()
    chunked.load_state_dict(textbook.state_dict())
    queries = torch.randn(3, 5, 6, device=device, requires_grad=True)
    keys = torch.randn(3, 7, 8, device=device, requires_grad=True)
    values = torch.randn(3, 7, 4, device=device, requires_grad=True)
    expected = textbook(queries, keys, values, valid_lens)
    output = chunked(queries, keys, values, valid_lens)
    torch.testing.assert_close(output, expected, atol=1e-5, rtol=1e-5)
    inputs = [queries, keys, values]
    grads = torch.autograd.grad(output.square().sum(), inputs + list(chunked.parameters()))
    expected_grads = torch.autograd.grad(
        expected.square().sum(), inputs + list(textbook.parameters())
    )
    for grad, expected_grad in zip(grads, expected_grads):
        torch.testing.assert_close(grad, expected_grad, atol=1e-5, rtol=1e-5)


def test_chunked_additive_keeps_weights_on_request():
    textbook = AdditiveAttention(4, 4, 8, 0.0).eval()
    chunked = ChunkedAdditiveAttention(4, 4, 8, 0.0, chunk_size=2, keep_weights=True).eval()
    chunked.load_state_dict(textbook.state_dict())
    q, k, v = torch.randn(2, 5, 4), torch.randn(2, 3, 4), torch.randn(2, 3, 4)
    with torch.no_grad():
        textbook(q, k, v, torch.tensor([1, 3]))
        chunked(q, k, v, torch.tensor([1, 3]))
    torch.testing.assert_close(chunked.attention_weights, textbook.attention_weights)


def test_additive_scores_gradcheck():
    torch.manual_seed(0)
    q = torch.randn(2, 5, 3, dtype=torch.float64, requires_grad=True)
    k = torch.randn(2, 4, 3, dtype=torch.float64, requires_grad=True)
    w = torch.randn(3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda q, k, w: additive_scores(q, k, w, 2), (q, k, w))


def extra_peak(fn, device):
    """Extra peak bytes of ``fn()``: exact storage accounting on CPU, the allocator on CUDA."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        before = torch.cuda.memory_allocated(device)
        fn()
        torch.cuda.synchronize(device)
        return torch.cuda.max_memory_allocated(device) - before
    if device.type == "cpu":
        return peak_tensor_memory(fn)
    pytest.skip(f"no peak-memory counter on {device.type}")


def test_chunked_additive_memory_is_bounded(device):
    """Forward + backward at B=2, m=n=256, h=64: at most 1/4 of one (B, m, n, h) tensor."""
    torch.manual_seed(0)
    B, n, h = 2, 256, 64
    full = B * n * n * h * 4  # 32 MiB in float32
    textbook = AdditiveAttention(h, h, h, 0.0).to(device)
    chunked = ChunkedAdditiveAttention(h, h, h, 0.0, memory_budget=2 * 2**20).to(device)
    chunked.load_state_dict(textbook.state_dict())
    queries, keys, values = (torch.randn(B, n, h, device=device) for _ in range(3))
    valid_lens = torch.randint(0, n + 1, (B,), device=device)

    def train_step(module):
        module(queries, keys, values, valid_lens).sum().backward()

    with torch.no_grad():
        forward = extra_peak(lambda: chunked(queries, keys, values, valid_lens), device)
    chunked_peak = extra_peak(lambda: train_step(chunked), device)
    textbook_peak = extra_peak(lambda: train_step(textbook), device)
    assert forward <= full / 4, f"forward used {forward / 2**20:.1f} MiB"
    assert chunked_peak <= full / 4, f"forward + backward used {chunked_peak / 2**20:.1f} MiB"
    assert textbook_peak >= 2 * full  # the textbook keeps (B, m, n, h) tensors for backward
    for p, q in zip(chunked.parameters(), textbook.parameters()):
        torch.testing.assert_close(p.grad, q.grad, atol=1e-4, rtol=1e-4)


def test_fused_memory_is_linear():
    """Extra memory of the fused path at n and 2n grows by about 2, the textbook's by 4."""
    B, d = 2, 32
    fused, textbook = FusedDotProductAttention(0.0).eval(), DotProductAttention(0.0).eval()
    peaks = {"fused": [], "textbook": []}
    for n in (256, 512):
        q, k, v = (torch.randn(B, n, d) for _ in range(3))
        lens = torch.tensor([n, n // 2])
        with torch.no_grad():
            peaks["fused"].append(peak_tensor_memory(lambda: fused(q, k, v, lens)))  # noqa: B023
            peaks["textbook"].append(peak_tensor_memory(lambda: textbook(q, k, v, lens)))  # noqa: B023
    assert peaks["fused"][1] <= 2.5 * peaks["fused"][0]
    assert peaks["textbook"][1] >= 3.5 * peaks["textbook"][0]


def test_fully_masked_rows_are_zero_for_raw_sdpa_too():
    """Documents the kernel's behaviour that the layer does not rely on (it zeroes them itself)."""
    q = k = v = torch.randn(2, 1, 4, 8)
    mask = valid_lens_to_mask(torch.tensor([4, 0]), 4, 4)
    output = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert not output[1].isnan().any()


def test_benchmark_writes_json(tmp_path):
    """The benchmark script runs at tiny sizes on the CPU and writes the JSON the chapter reads."""
    spec = importlib.util.spec_from_file_location(
        "bench_attention", ROOT / "benchmarks/attention.py"
    )
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    path = tmp_path / "results" / "cpu.json"
    argv = ["--sizes", "16", "--batch", "2", "--head-dim", "8", "--heads", "2"]
    argv += ["--mha-sizes", "8", "--additive-sizes", "8", "--additive-batch", "2"]
    argv += ["--repeats", "1", "--matmul-size", "32", "--json", str(path)]
    rows = bench.main(argv)
    result = json.loads(path.read_text())
    assert result["device_type"] == "cpu" and result["dtype"] == "float32"
    assert result["date"] and result["device"] and result["matmul_flops_per_s"] > 0
    sections = {row["section"] for row in result["rows"]}
    assert sections == {"dot_product", "multi_head", "additive", "additive_backward"}
    assert len(rows) == len(result["rows"])
    for row in result["rows"]:
        assert row["time_s"] > 0 and row["ratio"] > 0 and row["extra_memory_bytes"] >= 0
    assert bench.default_json_path("NVIDIA H100 80GB HBM3", "2026-01-02").name == (
        "nvidia-h100-80gb-hbm3-2026-01-02.json"
    )


def test_operators_tells_the_math_path_from_the_fused_kernel():
    """Does `operators` (the chapter's dispatch recorder) see bmm and softmax for 3-D inputs and
    one flash kernel, without bmm, for 4-D ones, on the CPU?"""
    q = torch.randn(2, 16, 8)
    with torch.no_grad():
        math_path = operators(lambda: F.scaled_dot_product_attention(q, q, q))
        fused = operators(
            lambda: F.scaled_dot_product_attention(q[:, None], q[:, None], q[:, None])
        )
    assert "bmm" in math_path and any("softmax" in name for name in math_path), math_path
    assert not any("flash" in name for name in math_path), math_path
    assert any("flash" in name for name in fused) and "bmm" not in fused, fused
    assert len(set(math_path)) == len(math_path)  # in order, without repeats
