"""Row softmax / layernorm (one block per row, warp-shuffle allreduces) and the host cost of
a call, on a real GPU, against torch in the same run: CUDA events, medians.

Run on the GPU machine (numba-cuda, torch), from the repository root::

    python3 bench/gpu/bench_cuda_reduce.py [--json FILE]

Ratios are ``torch time / workbench time`` (> 1: workbench faster), measured in this run on
the same inputs with preallocated outputs. Every variant is checked against torch twice
(outputs poisoned with NaN first): after its first call (the checked path, which compiles)
and after a call through the lean path (``cuda_launch``), before it is timed.

``--dry`` runs the script's logic under Numba's CUDA simulator at a tiny size with torch on
the CPU (no timings worth reading): a check of the script, not a measurement.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
import traceback

import numpy as np

np.row_stack = np.vstack  # numba-cuda 0.30 on numpy 2.5 still names it
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

DRY = "--dry" in sys.argv
if DRY:
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"

import torch  # noqa: E402
from bench_cudamem import cuda_time as events_time  # noqa: E402  (this folder is sys.path[0])

import workbench as wb  # noqa: E402
from workbench import ops, recipes  # noqa: E402
from workbench.backends.cuda.cuda_launch import _DriverLaunch  # noqa: E402

DEVICE = "cpu" if DRY else "cuda"
RESULTS: list[dict] = []


def sync():
    if not DRY:
        torch.cuda.synchronize()


# 25 calls, each timed with its launch (no sleep before it); the dry run: one call by the clock
cuda_time = functools.partial(events_time, repeats=25, sleep_cycles=0, wall_clock=DRY)


def args_of(*tensors):
    """Device tensors go to the kernel as they are (``__cuda_array_interface__``); in the
    dry run, numpy views of the CPU tensors (the kernel copies them in and out)."""
    return [t.numpy() if DRY else t for t in tensors]


def emit(row: dict) -> None:
    RESULTS.append(row)
    print(json.dumps(row), flush=True)


def check(out: torch.Tensor, ref: torch.Tensor, what: str) -> float:
    err = float((out.double() - ref.double()).norm() / ref.double().norm())
    if not err < 1e-4 or torch.isnan(out).any():
        raise AssertionError(f"{what}: relative error {err}")
    return err


def run_variant(op, label, sch, inputs, out, ref, torch_s, nbytes, fastmath=False):
    start = time.perf_counter()
    kernel = wb.build(sch, target="cuda", fastmath=fastmath)
    args = args_of(*inputs, out)
    out.fill_(float("nan"))
    kernel(*args)  # checked path; compiles
    sync()
    compile_s = time.perf_counter() - start
    check(out, ref, f"{label} (first call)")
    out.fill_(float("nan"))
    kernel(*args)  # lean path
    sync()
    err = check(out, ref, f"{label} (lean call)")
    plans = kernel._lean.plans.values()
    lean = [type(launch).__name__ for plan in plans for launch in plan.launches]
    ours = cuda_time(lambda: kernel(*args))
    usage = {}
    if not DRY:
        usage = kernel.resource_usage()[0]
    emit({
        "bench": f"{op} {label}",
        "workbench_ms": round(ours * 1e3, 4),
        "torch_ms": round(torch_s * 1e3, 4),
        "ratio_torch_over_workbench": round(torch_s / ours, 3),
        "GB/s": round(nbytes / ours / 1e9, 1),
        "rel_err": f"{err:.1e}",
        "compile_s": round(compile_s, 2),
        "lean_launchers": lean,
        **usage,
    })
    return ours


def bench_softmax(m, n, variants):
    x = torch.randn(m, n, device=DEVICE) * 3
    out = torch.empty(m, n, device=DEVICE)
    ref = torch.empty(m, n, device=DEVICE)
    torch.ops.aten._softmax.out(x, 1, False, out=ref)
    theirs = cuda_time(lambda: torch.ops.aten._softmax.out(x, 1, False, out=ref))
    emit({"bench": f"softmax {m}x{n} torch aten._softmax.out", "torch_ms": round(theirs * 1e3, 4),
          "GB/s": round(8 * m * n / theirs / 1e9, 1)})
    best = None
    for threads, stage, fastmath in variants:
        sch = recipes.get("softmax", "block_per_row", "cuda")(
            ops.softmax(m, n), threads=threads, stage=stage
        )
        label = f"{m}x{n} block_per_row threads={threads} stage={stage} fastmath={fastmath}"
        try:
            ours = run_variant("softmax", label, sch, [x], out, ref, theirs, 8 * m * n, fastmath)
            best = min(best or ours, ours)
        except Exception:
            traceback.print_exc()
    if best:
        emit({"bench": f"softmax {m}x{n} best", "ratio_torch_over_workbench":
              round(theirs / best, 3), "target": 1.0, "met": theirs / best >= 1.0})


def bench_layernorm(m, n, variants):
    x = torch.randn(m, n, device=DEVICE)
    gamma, beta = torch.randn(n, device=DEVICE), torch.randn(n, device=DEVICE)
    out = torch.empty(m, n, device=DEVICE)
    ref = torch.nn.functional.layer_norm(x, (n,), gamma, beta, 1e-5)
    mean, rstd = torch.empty(m, 1, device=DEVICE), torch.empty(m, 1, device=DEVICE)
    ref_out = torch.empty(m, n, device=DEVICE)

    def native_out():
        torch.ops.aten.native_layer_norm.out(
            x, [n], gamma, beta, 1e-5, out0=ref_out, out1=mean, out2=rstd
        )

    timings = {}
    try:
        native_out()
        timings["aten.native_layer_norm.out"] = cuda_time(native_out)
    except Exception as err:  # an out= overload this torch lacks
        print("native_layer_norm.out:", err)
    timings["F.layer_norm (allocates)"] = cuda_time(
        lambda: torch.nn.functional.layer_norm(x, (n,), gamma, beta, 1e-5)
    )
    for name, seconds in timings.items():
        emit({"bench": f"layernorm {m}x{n} torch {name}", "torch_ms": round(seconds * 1e3, 4),
              "GB/s": round(8 * m * n / seconds / 1e9, 1)})
    theirs = min(timings.values())
    best = None
    for threads, stage, fastmath in variants:
        sch = recipes.get("layernorm", "block_per_row", "cuda")(
            ops.layernorm(m, n), threads=threads, stage=stage
        )
        label = f"{m}x{n} block_per_row threads={threads} stage={stage} fastmath={fastmath}"
        try:
            ours = run_variant("layernorm", label, sch, [x, gamma, beta], out, ref, theirs,
                               8 * m * n, fastmath)
            best = min(best or ours, ours)
        except Exception:
            traceback.print_exc()
    if best:
        emit({"bench": f"layernorm {m}x{n} best (vs the faster torch)",
              "ratio_torch_over_workbench": round(theirs / best, 3), "target": 1.0,
              "met": theirs / best >= 1.0})


def host_time(fn, n=3000) -> float:
    """Host seconds per call: ``n`` back-to-back calls of a tiny kernel, then one sync."""
    for _ in range(50):
        fn()
    sync()
    start = time.perf_counter()
    for _ in range(n):
        fn()
    sync()
    return (time.perf_counter() - start) / n


def bench_launch_overhead():
    func = ops.add(32, 32)
    sch = recipes.get("add_mul_gelu", "fused", "cuda")(func, threads=256)
    kernel = wb.build(sch, target="cuda")
    x = [torch.randn(32, 32, device=DEVICE) for _ in range(3)]
    args = args_of(*x)
    n = 20 if DRY else 3000
    kernel(*args)
    sync()
    np.testing.assert_allclose(np.asarray(x[2].cpu()), np.asarray((x[0] + x[1]).cpu()), rtol=1e-6)
    lean = host_time(lambda: kernel(*args), n)
    kernel._lean.enabled = False
    checked = host_time(lambda: kernel(*args), n)
    kernel._lean.enabled = True
    raw = host_time(lambda: kernel._runner(*args), n)
    theirs = host_time(lambda: torch.add(x[0], x[1], out=x[2]), n)
    launchers = [type(launch).__name__ for plan in kernel._lean.plans.values()
                 for launch in plan.launches]
    x[2].fill_(float("nan"))
    kernel(*args)
    sync()
    np.testing.assert_allclose(np.asarray(x[2].cpu()), np.asarray((x[0] + x[1]).cpu()), rtol=1e-6)
    emit({
        "bench": "host time per call, add 32x32, torch tensors",
        "workbench_lean_us": round(lean * 1e6, 2),
        "workbench_checked_us (lean off: checks + Numba dispatch)": round(checked * 1e6, 2),
        "numba_dispatch_only_us (no checks)": round(raw * 1e6, 2),
        "torch_add_out_us": round(theirs * 1e6, 2),
        "lean_over_torch": round(lean / theirs, 2),
        "lean_launchers": launchers,
    })
    if not DRY:
        assert launchers and all(name == _DriverLaunch.__name__ for name in launchers)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--json")
    parser.add_argument("--dry", action="store_true")
    options = parser.parse_args()
    if DRY:
        m, n, variants = 2, 64, [(32, None, False), (64, "shared", True)]
    else:
        m = n = 8192
        variants = [(512, None, False), (1024, None, False), (512, "shared", False),
                    (1024, "shared", False), (1024, "shared", True)]
        print(torch.cuda.get_device_name(), "torch", torch.__version__, flush=True)
    for step in (bench_launch_overhead, lambda: bench_softmax(m, n, variants),
                 lambda: bench_layernorm(m, n, variants)):
        try:
            step()
        except Exception:
            traceback.print_exc()
    if options.json:
        with open(options.json, "w") as handle:
            json.dump(RESULTS, handle, indent=1)
    print("\nSUMMARY")
    for row in RESULTS:
        keys = ("workbench_ms", "torch_ms", "ratio_torch_over_workbench", "GB/s", "met",
                "workbench_lean_us", "torch_add_out_us")
        print(row["bench"], {k: row[k] for k in keys if k in row})


if __name__ == "__main__":
    main()
