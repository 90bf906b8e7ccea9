"""Every shape (issue 20 item 3): the cuda recipes' defaults at shapes that are not multiples
of their tiles, against torch on the same GPU in the same run.

Run on the GPU machine (numba-cuda, torch), from a tree with ``workbench`` importable::

    PYTHONPATH=$PWD python3 bench/gpu/bench_shapes.py --json $OUT/bench_shapes.json

* SGEMM ``recipes.get("matmul", "register_blocked", "cuda")(ops.matmul(M, N, K))`` with no
  options (tile from the shape, interior/edge partition) at 4000^3, 1000x3000x2000 and
  511x257x129, beside variants (no partition: the old behaviour; other tiles), against
  ``torch.mm`` with TF32 off;
* softmax and layernorm ``block_per_row`` defaults (threads per row from the row length) at
  8192^2, 4096x3000, 30000x768, beside variants, against ``aten._softmax.out`` and
  ``F.layer_norm``.

Every output is checked first against torch in float64 (``|out - ref| / |ref|``, output
poisoned with NaN before the call). Timing: CUDA events, median of 20 after 3 warm-ups, the
host's launch hidden behind ``torch.cuda._sleep`` (``bench_cudamem.cuda_time``). Ceilings
measured in the same run: a device-to-device copy (bytes read + written) and torch.mm 4096.
A short table is printed last.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

np.row_stack = np.vstack  # numba-cuda 0.30 on numpy 2.5 still names it
os.environ.setdefault("WORKBENCH_CACHE_DIR", "/tmp/workbench-cache")  # no platformdirs there
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import torch  # noqa: E402
from bench_cudamem import cuda_time  # noqa: E402  (this folder is sys.path[0])
from numba import cuda  # noqa: E402

import workbench as wb  # noqa: E402
from workbench import ops, recipes  # noqa: E402

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False

RESULTS: list[dict] = []


def emit(row):
    RESULTS.append(row)
    print(json.dumps(row), flush=True)


def usage(kernel) -> dict:
    try:
        return kernel.resource_usage()[0]
    except Exception as err:  # noqa: BLE001
        return {"unavailable": repr(err)[:200]}


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    if torch.isnan(out).any():
        return float("nan")
    return ((out.double() - ref).norm() / ref.norm()).item()


def run_variant(name, sch, args, out, ref, theirs, work, unit, tol, **extra):
    try:
        out.fill_(float("nan"))
        start = time.perf_counter()
        kernel = wb.build(sch, target="cuda")
        kernel(*args)
        torch.cuda.synchronize()
        first = time.perf_counter() - start
        err = rel_err(out, ref)
        if not err < tol:
            emit({"bench": name, "error": f"relative error {err}"})
            return
        ours = cuda_time(lambda: kernel(*args))
        scale = 1e12 if unit == "TFLOP/s" else 1e9
        emit({
            "bench": name, "workbench_ms": round(ours * 1e3, 4), "torch_ms": round(theirs * 1e3, 4),
            "ratio_torch_over_workbench": round(theirs / ours, 3),
            f"workbench_{unit}": round(work / ours / scale, 2),
            f"torch_{unit}": round(work / theirs / scale, 2), "rel_err_vs_f64": err,
            "first_call_s": round(first, 1), "launch": str(kernel.launches),
            "usage": usage(kernel), **extra,
        })
    except Exception as err:  # noqa: BLE001
        emit({"bench": name, "error": repr(err)[:400]})


def ceilings():
    src = torch.randn(256 * 2**20, device="cuda")
    dst = torch.empty_like(src)
    t = cuda_time(lambda: dst.copy_(src))
    a, b = torch.randn(4096, 4096, device="cuda"), torch.randn(4096, 4096, device="cuda")
    c = torch.empty(4096, 4096, device="cuda")
    tm = cuda_time(lambda: torch.mm(a, b, out=c))
    emit({"bench": "ceilings", "copy_GB/s": round(2 * src.numel() * 4 / t / 1e9, 1),
          "torch_mm_4096_fp32_TFLOP/s": round(2 * 4096**3 / tm / 1e12, 2)})


def sgemm(m, n, k, variants):
    a = torch.randn(m, k, device="cuda")
    b = torch.randn(k, n, device="cuda")
    c = torch.empty(m, n, device="cuda")
    ref = a.double() @ b.double()
    mine = torch.empty(m, n, device="cuda")
    theirs = cuda_time(lambda: torch.mm(a, b, out=mine))
    func = ops.matmul(m, n, k)
    recipe = recipes.get("matmul", "register_blocked", "cuda")
    args = [cuda.as_cuda_array(t) for t in (a, b, c)]
    for label, options in variants:
        run_variant(f"sgemm {m}x{n}x{k}: {label}", recipe(func, **options), args, c, ref,
                    theirs, 2 * m * n * k, "TFLOP/s", 1e-5, options=str(options))


def rows(op, m, n, variants):
    x = torch.randn(m, n, device="cuda")
    out = torch.empty(m, n, device="cuda")
    mine = torch.empty(m, n, device="cuda")
    if op == "softmax":
        ref = torch.softmax(x.double(), 1)
        theirs = cuda_time(lambda: torch.ops.aten._softmax.out(x, 1, False, out=mine))
        tensors = (x, out)
        work = 2 * 4 * m * n
    else:
        gamma, beta = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
        ref = torch.nn.functional.layer_norm(x.double(), (n,), gamma.double(), beta.double(), 1e-5)
        theirs = cuda_time(lambda: torch.nn.functional.layer_norm(x, (n,), gamma, beta, 1e-5))
        tensors = (x, gamma, beta, out)
        work = 2 * 4 * m * n
    func = getattr(ops, op)(m, n)
    recipe = recipes.get(op, "block_per_row", "cuda")
    args = [cuda.as_cuda_array(t) for t in tensors]
    for label, options in variants:
        run_variant(f"{op} {m}x{n}: {label}", recipe(func, **options), args, out, ref, theirs,
                    work, "GB/s", 1e-5, options=str(options))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--json")
    parser.add_argument("--quick", action="store_true", help="defaults only")
    args = parser.parse_args()
    print(torch.cuda.get_device_name(), "torch", torch.__version__, flush=True)
    q = args.quick
    steps = [
        ceilings,
        lambda: sgemm(4000, 4000, 4000, [("default", {})]),
        lambda: sgemm(1000, 3000, 2000, [("default (split_k 4)", {})] + ([] if q else [
            ("no split (before)", {"split_k": 1}),
            ("split_k 2", {"split_k": 2}),
            ("tile 64, no split", {"threads": 16, "per_thread": 4, "split_k": 1})])),
        lambda: sgemm(511, 257, 129, [("default (tile 32, split_k 3)", {})] + ([] if q else [
            ("no split (before)", {"split_k": 1}),
            ("tile 64, split_k 3", {"threads": 16, "per_thread": 4, "split_k": 3}),
            ("tile 32, split_k 3, k_tile 16", {"split_k": 3, "k_tile": 16})])),
        lambda: sgemm(4096, 4096, 4096, [("default (aligned)", {})]),
    ]
    old = {8192: {"threads": 512, "stage": "shared"}, 3000: {"threads": 512, "stage": None},
           768: {"threads": 64, "rows_per_block": 2, "stage": None}}
    for op in ("softmax", "layernorm"):
        steps += [
            lambda op=op: rows(op, 8192, 8192, [("default (registers, 256 threads)", {})] + (
                [] if q else [
                    ("registers, 512 threads", {"threads": 512}),
                    ("registers, 1024 threads", {"threads": 1024}),
                    ("before: 512 threads, stage shared", old[8192])])),
            lambda op=op: rows(op, 4096, 3000, [("default (registers, 128 threads)", {})] + (
                [] if q else [
                    ("registers, 256 threads", {"threads": 256}),
                    ("registers, 512 threads", {"threads": 512}),
                    ("registers, 128 threads, 2 rows", {"threads": 128, "rows_per_block": 2}),
                    ("before: 512 threads, not staged", old[3000])])),
            lambda op=op: rows(op, 30000, 768, [("default (registers, warp x 4 rows)", {})] + (
                [] if q else [
                    ("registers, warp x 8 rows", {"threads": 32, "rows_per_block": 8}),
                    ("registers, warp x 2 rows", {"threads": 32, "rows_per_block": 2}),
                    ("registers, 64 threads x 2 rows", {"threads": 64, "rows_per_block": 2}),
                    ("before: 64 threads x 2 rows, not staged", old[768])])),
        ]
    for step in steps:
        try:
            step()
        except Exception:  # noqa: BLE001
            import traceback

            traceback.print_exc()
        if args.json:
            with open(args.json, "w") as handle:
                json.dump(RESULTS, handle, indent=1)
    print("\n| bench | workbench ms | torch ms | torch/workbench | rel err |")
    print("| --- | --- | --- | --- | --- |")
    for r in RESULTS:
        if "workbench_ms" in r:
            print(f"| {r['bench']} | {r['workbench_ms']} | {r['torch_ms']} | "
                  f"{r['ratio_torch_over_workbench']} | {r['rel_err_vs_f64']:.1e} |")
        elif "error" in r:
            print(f"| {r['bench']} | ERROR {r['error'][:120]} | | | |")
        else:
            print(r)


if __name__ == "__main__":
    main()
