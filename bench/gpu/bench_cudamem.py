"""Wide loads, cooperative fetch, double buffering: the cuda recipes of
``workbench/recipes/matmul_cuda.py`` and ``elementwise_cuda.py`` against torch on a GPU.

Run on the GPU machine from the repository root (numba-cuda, torch)::

    python3 bench/gpu/bench_cudamem.py [--quick] [--json FILE]

Timing: CUDA events around one call, medians of 20 after 3 warm-ups; before each timed
call the stream is given ~0.3 ms of work (``torch.cuda._sleep``) so that the host's launch
path (Numba's dispatch, ~50-100 us) is not counted in a kernel's time: what is compared is
the kernels. Every ratio is ``torch time / workbench time`` (> 1: workbench faster), both
measured in this run on the same inputs, outputs preallocated; each kernel's output is
checked against torch first. TF32 is off for torch.mm.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time

import numpy as np

np.row_stack = np.vstack  # numba-cuda 0.30 on numpy 2.5 still names it
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import torch  # noqa: E402
from numba import cuda  # noqa: E402

import workbench as wb  # noqa: E402
from workbench import ops, recipes  # noqa: E402

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False

SLEEP_CYCLES = 600_000  # ~0.3 ms at ~1.9 GHz: the stream is busy while the host launches


def cuda_time(fn, *, warmup: int = 3, repeats: int = 20, sleep_cycles: int = SLEEP_CYCLES,
              wall_clock: bool = False) -> float:
    """Median seconds of ``fn()`` by CUDA events, the host's launch hidden behind a sleep of
    ``sleep_cycles`` (0: no sleep, the launch path counted in the time, as ``bench_cuda`` and
    ``bench_cuda_reduce`` measure). ``wall_clock``: one call after the warm-ups timed by the
    host's clock (a dry run under the simulator, no GPU)."""
    for _ in range(warmup):
        fn()
    if wall_clock:
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        if sleep_cycles:
            torch.cuda._sleep(sleep_cycles)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return statistics.median(times)


def dev(t: torch.Tensor):
    return cuda.as_cuda_array(t)


def ptx_text(kernel) -> str:
    """The PTX of the kernel's compiled overloads (numba-cuda 0.30 wants the target cc)."""
    cc = cuda.get_current_device().compute_capability
    texts = []
    for dispatcher in kernel._compiled.kernels:
        for overload in dispatcher.overloads.values():
            try:
                texts.append(overload.inspect_asm(cc))
            except TypeError:
                texts.append(overload.inspect_asm())
    return "\n".join(t if isinstance(t, str) else "\n".join(t.values()) for t in texts)


def ptx_counts(kernel) -> dict:
    try:
        ptx = ptx_text(kernel)
    except Exception as err:  # noqa: BLE001
        return {"ptx": f"unavailable: {err}"}
    pats = {
        "ld.global.v4": r"ld\.global(\.nc)?\.v4\.f32",
        "st.global.v4": r"st\.global\.v4\.f32",
        "ld.shared.v4": r"ld\.shared\.v4\.f32",
        "st.shared.v4": r"st\.shared\.v4\.f32",
        "ld.global.f32": r"ld\.global(\.nc)?\.f32",
        "fma": r"fma\.rn\.f32",
        "bar.sync": r"bar\.sync",
    }
    return {k: len(re.findall(p, ptx)) for k, p in pats.items()}


def usage(kernel) -> dict:
    try:
        return kernel.resource_usage()[0]
    except Exception as err:  # noqa: BLE001
        return {"resource_usage": f"unavailable: {err}"}


def emit(results, row):
    results.append(row)
    print(json.dumps(row), flush=True)


def row(name, ours, theirs, work, unit, **extra):
    rate = work / ours / 1e12 if unit == "TFLOP/s" else work / ours / 1e9
    torch_rate = work / theirs / 1e12 if unit == "TFLOP/s" else work / theirs / 1e9
    return {
        "bench": name,
        "workbench_ms": round(ours * 1e3, 4),
        "torch_ms": round(theirs * 1e3, 4),
        "ratio_torch_over_workbench": round(theirs / ours, 3),
        f"workbench_{unit}": round(rate, 2),
        f"torch_{unit}": round(torch_rate, 2),
        **extra,
    }


def build_and_check(sch, args, out, expected, tolerance):
    """Build, call once (Numba compiles), compare ``out`` with torch's ``expected``."""
    out.fill_(float("nan"))
    start = time.perf_counter()
    kernel = wb.build(sch, target="cuda")
    kernel(*args)
    torch.cuda.synchronize()
    first_call = time.perf_counter() - start
    err = (out - expected).abs().max().item() / expected.abs().max().item()
    assert err < tolerance, f"relative error {err}"
    return kernel, first_call


def bench_sgemm(results, n, keep: str = ""):
    a = torch.randn(n, n, device="cuda")
    b = torch.randn(n, n, device="cuda")
    c = torch.empty(n, n, device="cuda")
    ref = torch.empty(n, n, device="cuda")
    torch.mm(a, b, out=ref)
    theirs = cuda_time(lambda: torch.mm(a, b, out=ref))
    func = ops.matmul(n, n, n)
    get = recipes.get
    variants = [
        ("register_blocked 128x128 (16x16 threads x 8x8), k 8, v4 fetch, double buffer + "
         "register prefetch, k_1 rolled", get("matmul", "register_blocked", "cuda")(
             func, unroll_k=False)),
        ("register_blocked 128x128, k 8, v4 fetch, double buffer + prefetch, k_1 unrolled "
         "(pragma_unroll_explicit; the recipe's default)",
         get("matmul", "register_blocked", "cuda")(func, unroll_k=True)),
        ("register_blocked 128x128, k 8, v4 fetch, single buffer, k_1 rolled",
         get("matmul", "register_blocked", "cuda")(func, double_buffer=False, unroll_k=False)),
        ("register_blocked 128x128, k 16, v4 fetch, double buffer + prefetch, k_1 rolled",
         get("matmul", "register_blocked", "cuda")(func, k_tile=16, unroll_k=False)),
        ("shared 16x16, k 16, cooperative v4 fetch", get("matmul", "shared", "cuda")(func)),
        ("recipes matmul/register_local (cooperative scalar fetch, C in registers)",
         recipes.get("matmul", "register_local", "cuda")(func, 16, 8, 8)),
    ]
    if keep:
        variants = [variants[int(i)] for i in keep.split(",")]
    for label, sch in variants:
        try:
            args = [dev(a), dev(b), dev(c)]
            kernel, first = build_and_check(sch, args, c, ref, 1e-4)
            ours = cuda_time(lambda: kernel(*args))  # noqa: B023
            emit(results, row(f"sgemm {n} fp32: {label}", ours, theirs, 2 * n**3, "TFLOP/s",
                              first_call_s=round(first, 1), usage=usage(kernel),
                              ptx=ptx_counts(kernel)))
        except Exception as err:  # noqa: BLE001
            emit(results, {"bench": f"sgemm {n} {label}", "error": repr(err)[:400]})


def bench_elementwise(results, m, n):
    x = [torch.randn(m, n, device="cuda") for _ in range(3)]
    out = torch.empty(m, n, device="cuda")
    expected = torch.nn.functional.gelu((x[0] + x[1]) * x[2])
    src = torch.randn(2 * m * n, device="cuda")
    dst = torch.empty(2 * m * n, device="cuda")
    copy = cuda_time(lambda: dst.copy_(src))  # moves 4 arrays' bytes: 2 read + 2 written
    chain = cuda_time(lambda: torch.nn.functional.gelu((x[0] + x[1]) * x[2]))
    func = ops.add_mul_gelu(m, n)
    variants = [
        ("v4 (256 threads x 4 elements, 128-bit loads/stores)",
         recipes.get("add_mul_gelu", "v4", "cuda")(func, threads=256)),
        ("v4, 128 threads", recipes.get("add_mul_gelu", "v4", "cuda")(func, threads=128)),
        ("grid_stride (one block per row, 256 threads, v4)",
         recipes.get("add_mul_gelu", "grid_stride", "cuda")(func, threads=256)),
        ("previous recipe: one block per row, 1 element per thread",
         recipes.get("add_mul_gelu", "rows", "cuda")(func, threads=256)),
    ]
    for label, sch in variants:
        try:
            args = [dev(t) for t in x] + [dev(out)]
            kernel, first = build_and_check(sch, args, out, expected, 1e-5)
            ours = cuda_time(lambda: kernel(*args))  # noqa: B023
            work = 4 * 4 * m * n
            emit(results, row(f"elementwise gelu((a+b)*c) {m}x{n} {label} vs torch copy of "
                              "the same bytes", ours, copy, work, "GB/s",
                              torch_chain_ms=round(chain * 1e3, 4),
                              ratio_vs_torch_chain=round(chain / ours, 3),
                              first_call_s=round(first, 1), usage=usage(kernel),
                              ptx=ptx_counts(kernel)))
        except Exception as err:  # noqa: BLE001
            emit(results, {"bench": f"elementwise {label}", "error": repr(err)[:400]})


def bench_multiply(results, m, n):
    a, b = torch.randn(m, n, device="cuda"), torch.randn(m, n, device="cuda")
    c, ref = torch.empty(m, n, device="cuda"), torch.empty(m, n, device="cuda")
    torch.mul(a, b, out=ref)
    theirs = cuda_time(lambda: torch.mul(a, b, out=ref))
    src = torch.randn(3 * m * n // 2, device="cuda")
    dst = torch.empty(3 * m * n // 2, device="cuda")
    copy = cuda_time(lambda: dst.copy_(src))
    func = ops.multiply(m, n)
    for label, threads in (("v4, 256 threads", 256), ("v4, 128 threads", 128)):
        sch = recipes.get("multiply", "v4", "cuda")(func, threads=threads)
        args = [dev(a), dev(b), dev(c)]
        kernel, first = build_and_check(sch, args, c, ref, 1e-6)
        ours = cuda_time(lambda: kernel(*args))  # noqa: B023
        emit(results, row(f"multiply {m}x{n} {label} vs torch.mul(out=)", ours, theirs,
                          3 * 4 * m * n, "GB/s", torch_copy_same_bytes_ms=round(copy * 1e3, 4),
                          ratio_vs_copy=round(copy / ours, 3), ptx=ptx_counts(kernel)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", default="")
    parser.add_argument("--json")
    parser.add_argument("--sgemm-variants", default="", help="indices of the variants to run")
    args = parser.parse_args()
    print(torch.cuda.get_device_name(), "torch", torch.__version__, flush=True)
    results = []
    n = 1024 if args.quick else 4096
    steps = [
        ("multiply", lambda: bench_multiply(results, n, n)),
        ("elementwise", lambda: bench_elementwise(results, n, n)),
        ("sgemm", lambda: bench_sgemm(results, n, args.sgemm_variants)),
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
