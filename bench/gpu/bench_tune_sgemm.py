"""Tuned SGEMM from the generated ``cuda`` space vs cuBLAS (torch.mm, TF32 off), one run.

Run on the GPU machine (numba-cuda, torch), from the repository root::

    python3 bench/gpu/bench_tune_sgemm.py --n 4096 --budget 90 --out $OUT

The tuning loop runs in this process (no worker processes: one CUDA context): the
evolutionary strategy proposes configurations of ``GeneratedSpace(matmul, target="cuda")``
(no hand schedule as a seed); each is scheduled, built, checked against torch.mm and timed
with CUDA events (median of 10 calls after 2 warm-ups; before each timed call the stream is
given ~0.3 ms of work, ``torch.cuda._sleep``, so Numba's host dispatch is not counted: kernels
are compared, as in ``bench_cudamem.py``). A candidate that fails to schedule (too many
threads), to compile (too much shared memory) or to launch is recorded as failed and the run
goes on. Every record is appended to ``OUT/sgemm_tune.jsonl`` as it is measured; at the end
the best kernel, the hand recipe ``matmul/register_blocked/cuda`` (the 128 x 128 SGEMM of
bench/RESULTS.md, built after the tuning, not a seed) and torch.mm are timed side by side
(interleaved rounds, median of 20 calls each) and ``OUT/sgemm_tune.json`` holds the summary
with the best-so-far curve (wall seconds, TFLOP/s).

``--quick`` runs a 64 matmul for 10 s (also under ``NUMBA_ENABLE_CUDASIM=1``, with numpy
instead of torch when torch has no GPU: a smoke test of this script on a CPU machine).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

np.row_stack = np.vstack  # numba-cuda 0.30 on numpy 2.5 still names it
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from numba import cuda  # noqa: E402

from workbench import build, ops, recipes  # noqa: E402
from workbench.tune.strategies import get_strategy  # noqa: E402

SLEEP_CYCLES = 600_000  # ~0.3 ms at ~1.9 GHz: the stream is busy while the host launches


def _torch_or_none():
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


class Device:
    """Arrays, the reference product and event timing: torch on a GPU, numpy otherwise."""

    def __init__(self, n: int):
        self.torch = _torch_or_none()
        rng = np.random.default_rng(0)
        a = rng.standard_normal((n, n), dtype=np.float32)
        b = rng.standard_normal((n, n), dtype=np.float32)
        if self.torch is not None:
            t = self.torch
            t.backends.cuda.matmul.allow_tf32 = False
            t.backends.cudnn.allow_tf32 = False
            self.a, self.b = t.from_numpy(a).cuda(), t.from_numpy(b).cuda()
            self.c, self.ref = t.empty(n, n, device="cuda"), t.empty(n, n, device="cuda")
            t.mm(self.a, self.b, out=self.ref)
            self.args = [cuda.as_cuda_array(x) for x in (self.a, self.b, self.c)]
        else:
            self.ref = a.astype(np.float64) @ b
            self.c = np.empty((n, n), np.float32)
            self.args = [a, b, self.c]

    def error(self) -> float:
        if self.torch is not None:
            return ((self.c - self.ref).abs().max() / self.ref.abs().max()).item()
        return float(np.abs(self.c - self.ref).max() / np.abs(self.ref).max())

    def cublas(self) -> None:
        self.torch.mm(self.a, self.b, out=self.ref)

    def time(self, fn, warmup: int = 2, repeats: int = 10) -> float:
        """Median seconds per call (CUDA events on a GPU, perf_counter otherwise)."""
        for _ in range(warmup):
            fn()
        times = []
        for _ in range(repeats):
            if self.torch is not None:
                start = self.torch.cuda.Event(enable_timing=True)
                end = self.torch.cuda.Event(enable_timing=True)
                self.sleep()
                start.record()
                fn()
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end) / 1e3)
            else:
                t0 = time.perf_counter()
                fn()
                times.append(time.perf_counter() - t0)
        return statistics.median(times)

    def sleep(self) -> None:
        """Keep the stream busy while the host launches (not on the simulator)."""
        if self.torch is not None:
            self.torch.cuda._sleep(SLEEP_CYCLES)


def measure(space, config: dict, device: Device, tol: float) -> dict:
    """Schedule, build, check and time one configuration; a dict for the records."""
    record = {"config": config}
    start = time.perf_counter()
    try:
        sch = space.schedule(config)
    except Exception as err:  # noqa: BLE001 - a failed trial, recorded
        return dict(record, error_kind="schedule", error=f"{type(err).__name__}: {err}"[:300])
    return dict(record, **measure_schedule(sch, device, tol, start))


def measure_schedule(sch, device: Device, tol: float, start: float | None = None) -> dict:
    """Build, check and time one schedule (``kernel``: the built kernel, when it ran)."""
    record = {}
    start = time.perf_counter() if start is None else start
    try:
        kernel = build(sch, target="cuda")
        if device.torch is not None:
            device.c.fill_(float("nan"))
        kernel(*device.args)
        if device.torch is not None:
            device.torch.cuda.synchronize()
        record["build_s"] = round(time.perf_counter() - start, 2)
        error = device.error()
        if not error < tol:
            return dict(record, error_kind="wrong_result", error=f"relative error {error}")
        record["latency_s"] = device.time(lambda: kernel(*device.args))
        record["kernel"] = kernel
    except Exception as err:  # noqa: BLE001
        message = f"{type(err).__name__}: {err}"[:300]
        return dict(record, error_kind="build_or_launch", error=message)
    return record


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=4096)
    p.add_argument("--budget", type=float, default=90.0, help="seconds of tuning")
    p.add_argument("--out", default=os.environ.get("OUT", "."))
    p.add_argument("--strategy", default="evolutionary")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--no-hand", action="store_true", help="skip the hand recipe's timing")
    args = p.parse_args()
    n, budget = (64, 10.0) if args.quick else (args.n, args.budget)
    flops = 2.0 * n**3
    os.makedirs(args.out, exist_ok=True)
    log_path = os.path.join(args.out, "sgemm_tune.jsonl")

    from workbench.tune.space_generated import GeneratedSpace

    func = ops.matmul(n, n, n)
    space = GeneratedSpace(func, target="cuda")
    device = Device(n)
    search = get_strategy(args.strategy, seed=0)
    search.setup(space, None)  # no cost model: scikit-learn may be missing on the GPU host
    print(f"space {space}; knobs {space.knobs}", flush=True)
    start = time.perf_counter()
    best, seen, trial = None, set(), 0
    from workbench.tune.database import config_key

    with open(log_path, "w") as log:
        while time.perf_counter() - start < budget:
            configs = search.propose(args.batch, seen)
            if not configs:
                break
            latencies = []
            for config in configs:
                seen.add(config_key(config))
                if time.perf_counter() - start > budget:
                    latencies.append(None)
                    continue
                rec = measure(space, config, device, tol=1e-3)
                kernel = rec.pop("kernel", None)
                rec.update(trial=trial, wall_s=round(time.perf_counter() - start, 2))
                if "latency_s" in rec:
                    rec["tflops"] = round(flops / rec["latency_s"] / 1e12, 3)
                    if best is None or rec["latency_s"] < best[0]["latency_s"]:
                        best = (rec, kernel)
                rec["best_tflops"] = round(flops / best[0]["latency_s"] / 1e12, 3) if best else 0
                log.write(json.dumps(rec) + "\n")
                log.flush()
                print(json.dumps(rec), flush=True)
                latencies.append(rec.get("latency_s"))
                trial += 1
            search.observe(configs, latencies)
    tuned_s = time.perf_counter() - start

    summary = {"n": n, "budget_s": budget, "tuning_wall_s": round(tuned_s, 1),
               "trials": trial, "failed": None, "space": repr(space)}
    records = [json.loads(line) for line in open(log_path)]
    summary["failed"] = sum("latency_s" not in r for r in records)
    summary["curve"] = [[r["wall_s"], r["best_tflops"]] for r in records]
    summary["default_config_record"] = records[0] if records else None
    hand = None
    if not args.no_hand:
        options = {"threads": 4, "per_thread": 8} if args.quick else {}  # 32 x 32 at 64
        sch = recipes.get("matmul", "register_blocked", "cuda")(func, **options)
        hand = measure_schedule(sch, device, tol=1e-3)
        summary["hand_check"] = {k: v for k, v in hand.items() if k != "kernel"}
        hand = hand.get("kernel")
    if best is not None:
        rec, kernel = best
        summary["best_config"] = rec["config"]
        summary["best_trial"] = rec["trial"]
        summary["best_found_at_s"] = rec["wall_s"]
        ours, theirs, hands = [], [], []
        for _ in range(5):  # interleaved rounds
            ours.append(device.time(lambda: kernel(*device.args), repeats=20))  # noqa: B023
            if device.torch is not None:
                theirs.append(device.time(device.cublas, repeats=20))
            if hand is not None:
                hands.append(device.time(lambda: hand(*device.args), repeats=20))
        for name, k in (("best_resources", kernel), ("hand_resources", hand)):
            try:
                summary[name] = k.resource_usage() if k is not None else None
            except Exception as err:  # noqa: BLE001 - informative only
                summary[name] = f"{type(err).__name__}: {err}"[:200]
        summary["tuned_ms"] = round(statistics.median(ours) * 1e3, 4)
        summary["tuned_tflops"] = round(flops / statistics.median(ours) / 1e12, 3)
        if theirs:
            summary["torch_mm_ms"] = round(statistics.median(theirs) * 1e3, 4)
            summary["torch_mm_tflops"] = round(flops / statistics.median(theirs) / 1e12, 3)
            ratios = [t / o for t, o in zip(theirs, ours, strict=True)]
            summary["ratio_torch_over_tuned"] = round(statistics.median(ratios), 4)
            summary["gpu"] = device.torch.cuda.get_device_name()
        if hands:
            summary["hand_ms"] = round(statistics.median(hands) * 1e3, 4)
            summary["hand_tflops"] = round(flops / statistics.median(hands) / 1e12, 3)
            ratios = [h / o for h, o in zip(hands, ours, strict=True)]
            summary["ratio_hand_over_tuned"] = round(statistics.median(ratios), 4)
            if theirs:
                ratios = [t / h for t, h in zip(theirs, hands, strict=True)]
                summary["ratio_torch_over_hand"] = round(statistics.median(ratios), 4)
    with open(os.path.join(args.out, "sgemm_tune.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(json.dumps(summary, indent=1), flush=True)


if __name__ == "__main__":
    main()
