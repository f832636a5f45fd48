"""Benchmark: the textbook attention layers against the efficient ones, side by side.

For each variant it prints the median time, the ratio to the textbook version, the extra
peak memory and the fraction of the matmul rate that ``torch.mm`` reaches in the same run
(the attention FLOPs count the two products QKᵀ and (weights)V, 4·B·h·m·n·d in all, plus
the projections for multi-head attention; additive attention is not a matmul, so it gets
no fraction).

    python benchmarks/attention.py                      # CPU, float32, about 2 minutes
    python benchmarks/attention.py --sizes 256 1024 --repeats 3
    python benchmarks/attention.py --device cuda --dtype bfloat16 \\
        --sweep 1024 2048 4096 8192 16384                # writes benchmarks/results/<gpu>-<date>.json

Extra peak memory is the memory of the tensors a call creates, its inputs excluded. On the
CPU it is counted exactly from tensor storages (``solutions.additive.peak_tensor_memory``);
on CUDA it is ``torch.cuda.max_memory_allocated`` above what was allocated before the call.

With ``--device cuda`` it also sweeps the sequence length (``--sweep``) and compares the
math path of ``F.scaled_dot_product_attention`` with the fused kernels (flash without a
mask, memory-efficient with a padding mask): time, memory (quadratic against linear in n)
and throughput as a fraction of the GPU's measured matmul rate. The results go to a JSON
file (``--json``, by default ``benchmarks/results/<device>-<date>.json`` on a GPU) that the
chapter ``book/efficient_attention.ipynb`` plots when it is present.

Not a test: run it by hand. Timings on a shared machine are noisy; check ``uptime``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import sys
import time
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402

from solutions.additive import AdditiveAttention, peak_tensor_memory  # noqa: E402
from solutions.dot_product import DotProductAttention  # noqa: E402
from solutions.efficient import (  # noqa: E402
    ChunkedAdditiveAttention,
    FusedDotProductAttention,
    FusedMultiHeadAttention,
    attention_flops,
    matmul_rate,
    median_time,
    synchronize,
    valid_lens_to_mask,
)
from solutions.multihead import MultiHeadAttention  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def extra_memory(fn, device):
    """Peak bytes of the tensors ``fn()`` creates, above what exists before the call."""
    device = torch.device(device)
    if device.type == "cuda":
        synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        before = torch.cuda.memory_allocated(device)
        fn()
        synchronize(device)
        return torch.cuda.max_memory_allocated(device) - before
    if device.type == "cpu":
        return peak_tensor_memory(fn)
    return None  # MPS: no peak counter


def device_name(device):
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    if device.type == "mps":
        return "Apple MPS"
    return f"{platform.processor() or platform.machine()} CPU, {torch.get_num_threads()} threads"


def padding_lengths(B, n, device):
    """Valid lengths between n/2 and n, and one sequence of length 0 (a fully masked row)."""
    g = torch.Generator().manual_seed(0)
    lens = torch.randint(n // 2, n + 1, (B,), generator=g)
    lens[-1] = 0
    return lens.to(device)


def run_variants(section, title, shape, variants, flops, args, rows):
    """Time and measure each variant; the first is the textbook baseline."""
    print(f"measuring: {title}", flush=True)
    baseline = None
    for name, fn in variants:
        row = {"section": section, "title": title, **shape, "variant": name, "flops": flops}
        try:
            seconds = median_time(fn, args.repeats, device=args.device)
            memory = extra_memory(fn, args.device)
        except torch.cuda.OutOfMemoryError:
            torch.cuda.empty_cache()
            rows.append({**row, "error": "out of memory"})
            continue
        baseline = baseline or seconds
        rows.append(
            {**row, "time_s": seconds, "ratio": baseline / seconds, "extra_memory_bytes": memory}
        )


def print_tables(rows, rate):
    """One table per section and size; fractions of the matmul rate ``rate`` (FLOP/s)."""
    for title in dict.fromkeys(row["title"] for row in rows if row["section"] != "sweep"):
        print(f"\n{title}")
        print(f"  {'variant':<34} {'median':>13} {'ratio':>8} {'extra memory':>14} {'of mm':>8}")
        for row in rows:
            if row["title"] != title:
                continue
            if "error" in row:
                print(f"  {row['variant']:<34} {row['error']}")
                continue
            memory = row["extra_memory_bytes"]
            memory = "—" if memory is None else f"{memory / 2**20:10.1f} MiB"
            fraction = row["matmul_fraction"]
            fraction = "—" if fraction is None else f"{100 * fraction:5.1f} %"
            print(
                f"  {row['variant']:<34} {1e3 * row['time_s']:10.2f} ms {row['ratio']:7.2f}x "
                f"{memory:>14} {fraction:>8}"
            )


def dot_product(args, dtype, rows):
    B, d = args.batch, args.head_dim
    for n in args.sizes:
        g = torch.Generator(device=args.device).manual_seed(n)
        q, k, v = (
            torch.randn(B, n, d, device=args.device, dtype=dtype, generator=g) for _ in range(3)
        )
        lens = padding_lengths(B, n, args.device)
        textbook = DotProductAttention(0.0).eval()
        fused = FusedDotProductAttention(0.0).eval()
        mask3 = valid_lens_to_mask(lens, n, n)[:, 0]  # (B, 1, n): a 3-D call

        variants = [
            ("textbook: bmm + masked_softmax", partial(textbook, q, k, v, lens)),
            (
                "SDPA on 3-D input (math path)",
                partial(F.scaled_dot_product_attention, q, k, v, mask3),
            ),
            ("fused: 4-D SDPA + mask", partial(fused, q, k, v, lens)),
        ]
        title = f"Dot-product attention, B={B}, m=n={n}, d={d}, {args.dtype}, padding masks"
        shape = {"B": B, "heads": 1, "n": n, "d": d}
        with torch.no_grad():
            run_variants(
                "dot_product", title, shape, variants, attention_flops(B, 1, n, n, d), args, rows
            )


def multi_head(args, dtype, rows):
    B, h, d = args.batch, args.heads, args.heads * args.head_dim
    for n in args.mha_sizes:
        torch.manual_seed(n)
        ours = MultiHeadAttention(d, h, 0.0, bias=True).to(args.device, dtype).eval()
        fused = FusedMultiHeadAttention(d, h, 0.0, bias=True).to(args.device, dtype).eval()
        fused.load_state_dict(ours.state_dict())
        torch_mha = nn.MultiheadAttention(d, h, bias=True, batch_first=True)
        torch_mha = torch_mha.to(args.device, dtype).eval()
        X = torch.randn(B, n, d, device=args.device, dtype=dtype)
        lens = padding_lengths(B, n, args.device).clamp(min=1)  # nn.MultiheadAttention: NaN at 0
        padding = torch.arange(n, device=args.device) >= lens[:, None]  # True = padding
        variants = [
            ("textbook MultiHeadAttention", partial(ours, X, X, X, lens)),
            ("FusedMultiHeadAttention", partial(fused, X, X, X, lens)),
            (
                "nn.MultiheadAttention",
                partial(torch_mha, X, X, X, key_padding_mask=padding, need_weights=False),
            ),
        ]
        flops = attention_flops(B, h, n, n, d // h) + 4 * 2 * B * n * d * d  # + projections
        title = f"Multi-head self-attention, B={B}, T={n}, d={d}, h={h}, {args.dtype}"
        shape = {"B": B, "heads": h, "n": n, "d": d}
        with torch.no_grad():
            run_variants("multi_head", title, shape, variants, flops, args, rows)


def additive(args, dtype, rows):
    B, hidden = args.additive_batch, args.additive_hidden
    for n in args.additive_sizes:
        torch.manual_seed(n)
        textbook = AdditiveAttention(hidden, hidden, hidden, 0.0).to(args.device, dtype).eval()
        chunked = ChunkedAdditiveAttention(hidden, hidden, hidden, 0.0).to(args.device, dtype)
        chunked.load_state_dict(textbook.state_dict())
        chunked.eval()
        q, k, v = (torch.randn(B, n, hidden, device=args.device, dtype=dtype) for _ in range(3))
        lens = padding_lengths(B, n, args.device)
        shape = {"B": B, "heads": 1, "n": n, "d": hidden}
        full = B * n * n * hidden * q.element_size()
        title = (
            f"Additive attention, B={B}, m=n={n}, h={hidden}, {args.dtype} "
            f"(the (B, m, n, h) tensor: {full / 2**20:.0f} MiB)"
        )
        with torch.no_grad():
            variants = [
                ("textbook AdditiveAttention", partial(textbook, q, k, v, lens)),
                ("ChunkedAdditiveAttention", partial(chunked, q, k, v, lens)),
            ]
            if args.compile:
                variants.append(compiled_additive(textbook, q, k, v, lens))
            run_variants("additive", title, shape, variants, None, args, rows)

        if args.skip_backward:
            continue

        title = f"Additive attention, forward + backward, B={B}, m=n={n}, h={hidden}, {args.dtype}"
        variants = [
            ("textbook AdditiveAttention", partial(train_step, textbook, q, k, v, lens)),
            ("ChunkedAdditiveAttention", partial(train_step, chunked, q, k, v, lens)),
        ]
        run_variants("additive_backward", title, shape, variants, None, args, rows)


def train_step(module, q, k, v, lens):
    """One forward and backward pass through ``module``."""
    module.zero_grad(set_to_none=True)
    module(q, k, v, lens).sum().backward()


def sdpa_with(backend, q, k, v, mask):
    """SDPA restricted to one backend (kernel) of ``torch.nn.attention.SDPBackend``."""
    from torch.nn.attention import sdpa_kernel

    with sdpa_kernel(backend):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def compiled_additive(textbook, q, k, v, lens):
    """``torch.compile`` of the textbook module; prints how long the compilation takes."""
    compiled = torch.compile(textbook)
    start = time.perf_counter()
    compiled(q, k, v, lens)
    synchronize(q.device)
    print(f"  (torch.compile: first call, with compilation, {time.perf_counter() - start:.1f} s)")
    return ("torch.compile(AdditiveAttention)", lambda: compiled(q, k, v, lens))


def gpu_sweep(args, dtype, rows):
    """Math path against the fused kernels over the sequence length (4-D, B × h heads)."""
    from torch.nn.attention import SDPBackend

    B, h, d = args.sweep_batch, args.heads, args.head_dim
    kernels = [
        ("math", SDPBackend.MATH, True),
        ("flash (no mask)", SDPBackend.FLASH_ATTENTION, False),
        ("memory-efficient + mask", SDPBackend.EFFICIENT_ATTENTION, True),
    ]
    print(f"measuring: sweep over the sequence length, B={B}, h={h}, d={d}", flush=True)
    for n in args.sweep:
        q, k, v = (torch.randn(B, h, n, d, device=args.device, dtype=dtype) for _ in range(3))
        mask = valid_lens_to_mask(padding_lengths(B, n, args.device).clamp(min=1), n, n)
        for name, backend, masked in kernels:
            row = {"section": "sweep", "title": "sweep", "B": B, "heads": h, "n": n, "d": d}
            row.update(variant=name, flops=attention_flops(B, h, n, n, d))
            call = partial(sdpa_with, backend, q, k, v, mask if masked else None)
            try:
                with torch.no_grad():
                    seconds = median_time(call, args.repeats, device=args.device)
                    memory = extra_memory(call, args.device)
            except (torch.cuda.OutOfMemoryError, RuntimeError) as error:
                torch.cuda.empty_cache()
                message = "out of memory" if "memory" in str(error) else str(error).split("\n")[0]
                rows.append({**row, "error": message})
                continue
            rows.append({**row, "time_s": seconds, "extra_memory_bytes": memory})


def print_sweep(rows, rate):
    sweep = [row for row in rows if row["section"] == "sweep"]
    if not sweep:
        return
    B, h, d = sweep[0]["B"], sweep[0]["heads"], sweep[0]["d"]
    print(f"\nSweep over the sequence length: math path against fused kernels, B={B}, h={h}, d={d}")
    print(f"  {'kernel':<26} {'n':>6} {'median':>13} {'extra memory':>14} {'of mm':>8}")
    for row in sweep:
        if "error" in row:
            print(f"  {row['variant']:<26} {row['n']:>6} {row['error'][:60]}")
            continue
        print(
            f"  {row['variant']:<26} {row['n']:>6} {1e3 * row['time_s']:10.2f} ms "
            f"{row['extra_memory_bytes'] / 2**20:10.1f} MiB {100 * row['matmul_fraction']:6.1f} %"
        )


def default_json_path(name, date):
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    return RESULTS / f"{slug}-{date}.json"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cpu", help="cpu, cuda, cuda:1 or mps")
    p.add_argument("--dtype", default="float32", choices=sorted(DTYPES))
    p.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        default=[128, 512, 2048],
        help="sequence lengths m = n for dot-product attention",
    )
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--head-dim", type=int, default=64)
    p.add_argument("--heads", type=int, default=8, help="heads of the multi-head layer")
    p.add_argument("--mha-sizes", type=int, nargs="*", default=[512])
    p.add_argument("--additive-sizes", type=int, nargs="*", default=[512])
    p.add_argument("--additive-batch", type=int, default=16)
    p.add_argument("--additive-hidden", type=int, default=64)
    p.add_argument("--skip-backward", action="store_true", help="no additive forward+backward")
    p.add_argument("--compile", action="store_true", help="add a torch.compile additive path")
    p.add_argument(
        "--sweep",
        type=int,
        nargs="*",
        default=None,
        help="CUDA only: sequence lengths of the kernel sweep (default 1024 2048 4096 8192 16384)",
    )
    p.add_argument("--sweep-batch", type=int, default=4)
    p.add_argument(
        "--matmul-size",
        type=int,
        default=None,
        help="size of the square torch.mm that sets the reference rate",
    )
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument(
        "--json",
        type=Path,
        default=None,
        help="write the results here (default on CUDA: benchmarks/results/<device>-<date>.json)",
    )
    return p.parse_args(argv)  # fmt: skip


def main(argv=None):
    args = parse_args(argv)
    device = torch.device(args.device)
    args.device = device
    dtype = DTYPES[args.dtype]
    if device.type == "cuda" and args.sweep is None:
        args.sweep = [1024, 2048, 4096, 8192, 16384]
    mm_size = args.matmul_size or (8192 if device.type == "cuda" else 2048)
    name = device_name(device)
    date = datetime.date.today().isoformat()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    print(f"torch {torch.__version__} on {name}, {args.dtype}, {date}")
    if load is not None:
        print(f"1-minute load average at start: {load:.2f}")
    if device.type == "cpu":
        print("extra memory: exact count of the tensor storages each call creates")
    matmul_rate(device, dtype, size=mm_size, repeats=1)  # warm up threads and allocator
    rate = matmul_rate(device, dtype, size=mm_size, repeats=max(args.repeats, 5))
    print(f"torch.mm {mm_size}x{mm_size}, {args.dtype}: {rate / 1e9:.1f} GFLOP/s (same run)")

    rows = []
    dot_product(args, dtype, rows)
    multi_head(args, dtype, rows)
    additive(args, dtype, rows)
    if device.type == "cuda" and args.sweep:
        gpu_sweep(args, dtype, rows)
    rate_end = matmul_rate(device, dtype, size=mm_size, repeats=max(args.repeats, 5))
    print(f"torch.mm {mm_size}x{mm_size} at the end of the run: {rate_end / 1e9:.1f} GFLOP/s")
    # The yardstick is the better of the two same-run measurements: fractions err low.
    best = max(rate, rate_end)
    for row in rows:
        if "time_s" in row:
            row["matmul_fraction"] = row["flops"] and row["flops"] / row["time_s"] / best
    print(f"fractions of the matmul rate are taken of {best / 1e9:.1f} GFLOP/s")
    print_tables(rows, best)
    print_sweep(rows, best)

    path = args.json
    if path is None and device.type == "cuda":
        path = default_json_path(name, date)
    if path is not None:
        result = {
            "device": name,
            "device_type": device.type,
            "dtype": args.dtype,
            "date": date,
            "torch": torch.__version__,
            "load_average": load,
            "matmul_flops_per_s": rate,
            "matmul_flops_per_s_end": rate_end,
            "matmul_size": mm_size,
            "command": " ".join(["python", "benchmarks/attention.py", *(argv or sys.argv[1:])]),
            "rows": rows,
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result, indent=1) + "\n")
        print(f"wrote {path}")
    return rows


if __name__ == "__main__":
    main()
