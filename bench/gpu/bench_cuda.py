"""CUDA target on a real GPU: workbench kernels vs torch, CUDA events, medians, one run.

Run on the GPU machine (numba-cuda, torch), from the repository root::

    python3 bench/gpu/bench_cuda.py [--quick] [--json FILE]

Every ratio is ``torch time / workbench time`` (> 1: workbench faster), both measured in
this run, same inputs, outputs preallocated. Correctness is checked against torch first.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time

import numpy as np

np.row_stack = np.vstack  # numba-cuda 0.30 on numpy 2.5 still names it
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import torch  # noqa: E402
from bench_cudamem import cuda_time as events_time  # noqa: E402  (this folder is sys.path[0])
from numba import cuda  # noqa: E402

import workbench as wb  # noqa: E402
from workbench import ops, recipes  # noqa: E402

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False

# each call timed with its launch (no sleep before it), as this bench has always measured
cuda_time = functools.partial(events_time, sleep_cycles=0)


def dev(t: torch.Tensor):
    return cuda.as_cuda_array(t)


def rows(results, name, ours, theirs, work, unit, note=""):
    row = {
        "bench": name,
        "workbench_ms": round(ours * 1e3, 4),
        "torch_ms": round(theirs * 1e3, 4),
        "ratio_torch_over_workbench": round(theirs / ours, 3),
        unit: round(work / ours / 1e12 if unit == "TFLOP/s" else work / ours / 1e9, 2),
        "note": note,
    }
    results.append(row)
    print(json.dumps(row), flush=True)


def bench_sgemm(results, n, variants):
    a = torch.randn(n, n, device="cuda")
    b = torch.randn(n, n, device="cuda")
    c = torch.empty(n, n, device="cuda")
    ref = torch.empty(n, n, device="cuda")
    theirs = cuda_time(lambda: torch.mm(a, b, out=ref))
    for label, sch in variants:
        start = time.perf_counter()
        kernel = wb.build(sch, target="cuda")
        da, db, dc = dev(a), dev(b), dev(c)
        kernel(da, db, dc)
        torch.cuda.synchronize()
        compile_s = time.perf_counter() - start
        err = (c - ref).abs().max().item() / ref.abs().max().item()
        assert err < 1e-4, f"{label}: relative error {err}"
        ours = cuda_time(lambda: kernel(da, db, dc))  # noqa: B023
        try:
            usage = kernel.resource_usage()[0]
        except Exception as err:  # noqa: BLE001
            usage = f"resource usage unavailable: {err}"
        rows(results, f"sgemm {n} {label}", ours, theirs, 2 * n**3, "TFLOP/s",
             f"first call (codegen + JIT) {compile_s:.1f}s; {usage}")


def bench_elementwise(results, m, n, recipe="rows"):
    func = ops.add_mul_gelu(m, n)
    if recipe == "rows":
        sch = recipes.get("add_mul_gelu", "rows", "cuda")(func, threads=256)
    else:
        sch = recipes.get("add_mul_gelu", "fused", "cuda")(func, threads=256)
    kernel = wb.build(sch, target="cuda")
    x = [torch.randn(m, n, device="cuda") for _ in range(3)]
    out = torch.empty(m, n, device="cuda")
    args = [dev(t) for t in x] + [dev(out)]
    kernel(*args)
    expected = torch.nn.functional.gelu((x[0] + x[1]) * x[2])
    assert torch.allclose(out, expected, atol=1e-5, rtol=1e-4)
    ours = cuda_time(lambda: kernel(*args))
    # the bandwidth reference: torch's copy of the same bytes (3 reads + 1 write)
    src = torch.randn(2 * m * n, device="cuda")
    dst = torch.empty(2 * m * n, device="cuda")
    copy = cuda_time(lambda: dst.copy_(src))
    rows(results, f"elementwise gelu((a+b)*c) {m}x{n} ({recipe}) vs torch copy of the same bytes",
         ours, copy, 4 * 4 * m * n, "GB/s", "torch_ms is a device copy moving the same 4 arrays")
    torch_chain = cuda_time(lambda: torch.nn.functional.gelu((x[0] + x[1]) * x[2]))
    rows(results, f"elementwise gelu((a+b)*c) {m}x{n} ({recipe}) vs torch eager chain", ours,
         torch_chain,
         4 * 4 * m * n, "GB/s")


def bench_rows(results, m, n, threads):
    a = torch.randn(m, n, device="cuda")
    out = torch.empty(m, n, device="cuda")
    ref = torch.empty(m, n, device="cuda")
    sch = recipes.get("softmax", "rfactor", "cuda")(ops.softmax(m, n), threads=threads)
    kernel = wb.build(sch, target="cuda")
    args = [dev(a), dev(out)]
    kernel(*args)
    torch.ops.aten._softmax.out(a, 1, False, out=ref)
    assert torch.allclose(out, ref, atol=1e-6, rtol=1e-4)
    ours = cuda_time(lambda: kernel(*args))
    theirs = cuda_time(lambda: torch.ops.aten._softmax.out(a, 1, False, out=ref))
    note = "rfactor partials in shared memory, statistics per thread; 3 passes over the row"
    rows(results, f"softmax {m}x{n} one block per row ({threads} threads)", ours, theirs,
         2 * 4 * m * n, "GB/s", note)
    gamma, beta = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    sch = recipes.get("layernorm", "rfactor", "cuda")(ops.layernorm(m, n), threads=threads)
    kernel = wb.build(sch, target="cuda")
    args = [dev(a), dev(gamma), dev(beta), dev(out)]
    kernel(*args)
    expected = torch.nn.functional.layer_norm(a, (n,), gamma, beta, 1e-5)
    assert torch.allclose(out, expected, atol=1e-4, rtol=1e-3)
    ours = cuda_time(lambda: kernel(*args))
    theirs = cuda_time(lambda: torch.nn.functional.layer_norm(a, (n,), gamma, beta, 1e-5))
    rows(results, f"layernorm {m}x{n} one block per row ({threads} threads)", ours, theirs,
         2 * 4 * m * n, "GB/s", "torch: F.layer_norm (allocates its output)")


def bench_launch_overhead(results):
    func = ops.add(32, 32)
    sch = recipes.get("add_mul_gelu", "fused", "cuda")(func, threads=256)
    kernel = wb.build(sch, target="cuda")
    x = [torch.randn(32, 32, device="cuda") for _ in range(3)]
    args = [dev(t) for t in x]
    kernel(*args)
    torch.cuda.synchronize()

    def host_time(fn, n=2000):
        for _ in range(50):
            fn()
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
        return (time.perf_counter() - start) / n

    ours = host_time(lambda: kernel(*args))
    raw = host_time(lambda: kernel._runner(*args))
    theirs = host_time(lambda: torch.add(x[0], x[1], out=x[2]))
    row = {"bench": "host time per call, add 32x32 (device arrays)",
           "workbench_us": round(ours * 1e6, 2), "workbench_launch_only_us": round(raw * 1e6, 2),
           "torch_us": round(theirs * 1e6, 2)}
    results.append(row)
    print(json.dumps(row), flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", default="", help="comma-separated bench names to run")
    parser.add_argument("--json")
    args = parser.parse_args()
    print(torch.cuda.get_device_name(), "numba-cuda", cuda.__name__, flush=True)
    results = []
    n = 1024 if args.quick else 4096
    m = 1024 if args.quick else 8192
    steps = [
        ("elementwise", lambda: bench_elementwise(results, 4096, 4096, "rows")),
        ("elementwise fused", lambda: bench_elementwise(results, 4096, 4096, "fused")),
        ("launch overhead", lambda: bench_launch_overhead(results)),
        ("row reductions", lambda: bench_rows(results, m, m, 256)),
        ("sgemm", lambda: bench_sgemm(results, n, [
            ("naive 16x16 threads",
             recipes.get("matmul", "naive", "cuda")(ops.matmul(n, n, n), tile=16)),
            ("shared tiles 16x16, k 16",
             recipes.get("matmul", "shared", "cuda")(ops.matmul(n, n, n), 16, 16, vector=False)),
            ("register-blocked 16x16 threads x 8x8, k 8",
             recipes.get("matmul", "register_local", "cuda")(ops.matmul(n, n, n), 16, 8, 8)),
        ])),
    ]
    wanted = [w for w in args.only.split(",") if w]
    for name, step in steps:
        if wanted and name not in wanted:
            continue
        try:
            step()
        except Exception:  # noqa: BLE001 - report and go on with the next bench
            import traceback

            print(f"== {name} failed", flush=True)
            traceback.print_exc()
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(results, handle, indent=1)


if __name__ == "__main__":
    main()
