"""Issue 20 on the GPU machine: tuning through ``wb.tune`` and a device-resident,
graph-captured compiled model, against torch, in one run that writes JSON.

Run from the repository root on the GPU machine (numba-cuda, torch)::

    python3 bench/gpu/bench_gpu_e2e.py --part model --out $OUT
    python3 bench/gpu/bench_gpu_e2e.py --part tune --trials 24 --budget 200 --out $OUT

``model``: the pre-norm transformer block of ``tests/graph/graph_models.py`` (``Block(256,
4)``, fc 2 x d) at batch 16, 128 tokens, d 256, fp32, TF32 off, compiled with
``wb.compile(model, (x,), target="cuda")`` and called with a torch CUDA tensor, in each
launch mode of ``workbench.graph.compiled_cuda`` (``kernels``: ``CudaKernel`` per kernel,
Numba's dispatch; ``lean``: one packed ``cuLaunchKernel`` per kernel; ``graph``: one CUDA
graph replay), against torch eager, ``torch.compile`` (default) and ``torch.compile(mode=
"reduce-overhead")``. Per variant: relative L2 error against torch eager (outputs checked
first), device time per call (CUDA events around ``N`` back-to-back calls, divided by
``N``), host time per call (wall time of issuing the ``N`` calls, before the final
synchronize, divided by ``N``) and host time per kernel (host time over the kernel count).

``tune``: ``wb.tune(ops.matmul(2048, 2048, 2048), target="cuda", trials=T)`` with the
default ``LocalRunner`` (build workers, one measuring process timing with CUDA events);
every record's outcome, the best against ``torch.mm`` (TF32 off, events).
"""

from __future__ import annotations

import argparse
import collections
import copy
import json
import os
import statistics
import sys
import time
import traceback

import numpy as np

if not hasattr(np, "row_stack"):
    np.row_stack = np.vstack  # numba-cuda 0.30 on numpy 2.5
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)


def _events_ms(torch, fn, n: int) -> float:
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(n):
        fn()
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop) / n


def _host_us(torch, fn, n: int) -> float:
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(n):
        fn()
    host = time.perf_counter() - start
    torch.cuda.synchronize()
    return host / n * 1e6


def measure(torch, fn, kernels: int | None, n: int = 50, rounds: int = 5) -> dict:
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    device = [_events_ms(torch, fn, n) for _ in range(rounds)]
    host = [_host_us(torch, fn, n) for _ in range(rounds)]
    row = {"device_ms": statistics.median(device), "device_ms_all": device,
           "host_us": statistics.median(host), "host_us_all": host}
    if kernels:
        row["kernels"] = kernels
        row["host_us_per_kernel"] = row["host_us"] / kernels
    return row


def rel_err(torch, got, want) -> float:
    got, want = got.double(), want.double()
    return float(torch.linalg.norm(got - want) / torch.linalg.norm(want))


def part_model(args, out: dict) -> None:
    import torch

    import workbench as wb
    from tests.graph.graph_models import Block
    from workbench.backends import cuda_device

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    batch, tokens, dim = args.batch, args.tokens, args.dim
    model = Block(dim, 4).eval()
    x = torch.randn(batch, tokens, dim)
    start = time.perf_counter()
    compiled = wb.compile(model, (x,), target="cuda")
    out["compile_s"] = time.perf_counter() - start
    kernels = len(compiled.kernels)
    out["kernels"] = kernels
    out["shape"] = [batch, tokens, dim]
    gpu_model = copy.deepcopy(model).cuda()
    xd = x.cuda()
    rows = {}
    with torch.no_grad():
        want = gpu_model(xd)
        rows["torch eager"] = measure(torch, lambda: gpu_model(xd), None)
        for mode in ("kernels", "lean", "graph"):
            compiled.runtime.mode = mode
            start = time.perf_counter()
            got = compiled(xd)
            first = time.perf_counter() - start
            torch.cuda.synchronize()
            err = rel_err(torch, got, want)
            copies = dict(cuda_device.COPIES)
            row = measure(torch, lambda: compiled(xd), kernels)
            row.update(first_call_s=first, rel_err=err, out_is_cuda_tensor=bool(got.is_cuda),
                       host_copies_during_timing=int(cuda_device.COPIES["to_host"]
                                                     - copies["to_host"]
                                                     + cuda_device.COPIES["to_device"]
                                                     - copies["to_device"]))
            if compiled.runtime.sequence is not None:
                row["graph_stats"] = vars(compiled.runtime.sequence.stats)
            rows[f"workbench {mode}"] = row
            print(mode, {k: v for k, v in row.items() if not k.endswith("_all")}, flush=True)
        compiled.runtime.mode = "graph"
        frame = compiled.latency_report(xd, repeat=10)
        out["kernel_device_us"] = [
            {"kernel": k, "pattern": p, "median_us": float(u)}
            for k, p, u in zip(frame["kernel"], frame["pattern"], frame["median_us"],
                               strict=True)]
        for label, kwargs in (("torch.compile", {}),
                              ("torch.compile reduce-overhead", {"mode": "reduce-overhead"})):
            if args.no_torch_compile:
                break
            try:
                fn = torch.compile(copy.deepcopy(gpu_model), **kwargs)
                start = time.perf_counter()
                got = fn(xd).clone()  # reduce-overhead reuses its output buffer
                torch.cuda.synchronize()
                compile_s = time.perf_counter() - start
                err = rel_err(torch, got, want)
                step = torch.compiler.cudagraph_mark_step_begin

                def call(fn=fn, step=step, graphs="mode" in kwargs):
                    if graphs:
                        step()
                    return fn(xd)

                row = measure(torch, call, None)
                row.update(compile_s=compile_s, rel_err=err)
                rows[label] = row
            except Exception as err:  # noqa: BLE001 - recorded, the run goes on
                rows[label] = {"error": f"{type(err).__name__}: {err}"[:500]}
            print(label, {k: v for k, v in rows[label].items() if not k.endswith("_all")},
                  flush=True)
    eager = rows["torch eager"]["device_ms"]
    for row in rows.values():
        if "device_ms" in row:
            row["speed_vs_eager"] = eager / row["device_ms"]
    out["rows"] = rows


def part_tune(args, out: dict) -> None:
    import torch

    import workbench as wb
    from workbench import ops
    from workbench.tune.runner import LocalRunner

    torch.backends.cuda.matmul.allow_tf32 = False
    n = args.n
    func = ops.matmul(n, n, n)
    db = os.path.join(args.out, f"tune_matmul{n}.jsonl")
    start = time.perf_counter()
    with LocalRunner(n_build=4, measure_timeout_s=120) as runner:
        result = wb.tune(func, target="cuda", trials=args.trials, db=db, progress=False,
                         runner=runner, time_budget_s=args.budget, resume=False)
    out["wall_s"] = time.perf_counter() - start
    out["records"] = len(result.records)
    out["ok"] = sum(r.ok for r in result.records)
    out["errors"] = dict(collections.Counter(r.error_kind for r in result.records if not r.ok))
    out["first_errors"] = [r.error[:300] for r in result.records if not r.ok][:5]
    out["latencies_ms"] = [r.latency_s * 1e3 if r.ok else None for r in result.records]
    best = result.best
    if best is not None:
        out["best_ms"] = best.latency_s * 1e3
        out["best_tflops"] = 2 * n**3 / best.latency_s / 1e12
        out["best_config"] = best.config
        a, b = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")
        c = torch.empty(n, n, device="cuda")
        out["torch_mm_ms"] = min(_events_ms(torch, lambda: torch.mm(a, b, out=c), 20)
                                 for _ in range(5))
        out["torch_over_best"] = out["torch_mm_ms"] / out["best_ms"]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--part", choices=["model", "tune"], required=True)
    parser.add_argument("--out", default=".")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--no-torch-compile", action="store_true")
    parser.add_argument("--n", type=int, default=2048)
    parser.add_argument("--trials", type=int, default=24)
    parser.add_argument("--budget", type=float, default=200.0)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    out: dict = {"part": args.part, "argv": sys.argv, "started": time.strftime("%F %T")}
    try:
        import torch

        out["device"] = torch.cuda.get_device_name()
        out["torch"] = torch.__version__
        (part_model if args.part == "model" else part_tune)(args, out)
    except Exception:  # noqa: BLE001 - what ran is still written
        out["traceback"] = traceback.format_exc()
        print(out["traceback"], flush=True)
    name = f"e2e_{args.part}" + (f"_b{args.batch}" if args.part == "model" else "")
    with open(os.path.join(args.out, name + ".json"), "w") as f:
        json.dump(out, f, indent=1, default=str)
    return 0 if "traceback" not in out else 1


if __name__ == "__main__":
    sys.exit(main())
