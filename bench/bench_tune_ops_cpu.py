"""Auto-tuning softmax and a conv2d layer on the CPU (generated space) vs hand and numpy.

For each operator, ``wb.tune(func, space="generated", strategy=...)`` runs for ``--budget``
seconds (no hand schedule as a seed); then the best kernel, the hand schedule and numpy are
timed side by side in interleaved rounds (per round the median of a few calls; ratios per
round, then their median).

* softmax 4096 x 4096 float32: hand = ``recipes.softmax.fused_cpu`` (rows fused, row
  reductions rfactor-ed into vector lanes, row loop parallel); numpy =
  ``exp(x - max) / sum`` along rows;
* conv2d 1x64x56x56, 64 filters 3x3, padding 1 (a ResNet layer) float32: hand = the
  schedule below (padding inlined, filters split by 4 and parallel, ``x`` vectorized, the
  4 filters unrolled: no conv recipe exists in ``workbench/recipes``); numpy = a
  ``sliding_window_view`` + ``einsum`` (BLAS); torch's ``conv2d`` too when torch is there.

    .venv/bin/python bench/bench_tune_ops_cpu.py --budget 120 --results bench/results.d/X.md
    .venv/bin/python bench/bench_tune_ops_cpu.py --quick          # tiny shapes, prints only
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np
from benchlib import (
    RESULTS,
    command_line,
    interleaved_rounds,
    machine_lines,
    markdown_table,
    median,
    parser,
    ratios,
    time_calls,
    write_section,
)

import workbench as wb
from workbench import ops
from workbench.recipes.softmax import fused_cpu


def numpy_softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def numpy_conv(data: np.ndarray, weight: np.ndarray) -> np.ndarray:
    padded = np.pad(data, ((0, 0), (0, 0), (1, 1), (1, 1)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, weight.shape[2:], axis=(2, 3))
    return np.einsum("nchwrs,kcrs->nkhw", windows, weight, optimize=True)


def conv_hand(func) -> wb.Schedule:
    """Padding inlined, ``k`` split by 4 (outer parallel, inner unrolled), ``x`` vectorized."""
    sch = wb.Schedule(func)
    sch.compute_inline(sch.get_block("pad_temp"))
    conv = sch.get_block("conv2d_nchw")
    n, k, y, x, rc, ry, rx = sch.get_loops(conv)
    k_0, k_1 = sch.split(k, factors=[None, 4])
    sch.reorder(n, k_0, y, rc, ry, rx, k_1, x)
    sch.parallel(k_0)
    sch.unroll(k_1)
    sch.vectorize(x)
    return sch


def tune_curve(func, strategy: str, budget: float, seed: int, folder: Path):
    start = time.perf_counter()
    curve, best = [], [0.0]

    def log(record):
        if record.ok and record.gflops and record.gflops > best[0]:
            best[0] = record.gflops
        curve.append((time.perf_counter() - start, best[0], record.latency_s if record.ok
                      else None))

    runner = wb.tune.LocalRunner(measure_timeout_s=60.0,
                                 cache_dir=folder / f"kernels-{func.name}-{strategy}")
    try:
        result = wb.tune(func, target="cpu", trials=100000,
                         db=folder / f"{func.name}-{strategy}.jsonl", space="generated",
                         strategy=strategy, seed=seed, time_budget_s=budget, callbacks=[log],
                         progress=False, repeats=3, batch_size=4, runner=runner)
    finally:
        runner.close()
    return result, curve


def bench_op(name, func, args, out_index, reference, hand, baselines, strategy, budget, seed,
             rounds, folder):
    print(f"tuning {name} with {strategy} for {budget:.0f} s ...", flush=True)
    result, curve = tune_curve(func, strategy, budget, seed, folder)
    print(f"  {result}", flush=True)
    expected = reference()
    candidates = {}
    for label, kernel in [("tuned", result.build() if result.best else None),
                          ("hand", wb.build(hand(func), target="cpu"))]:
        if kernel is None:
            continue
        args[out_index][...] = np.nan
        kernel(*args)
        np.testing.assert_allclose(args[out_index], expected, rtol=1e-3, atol=1e-4,
                                   err_msg=label)
        candidates[label] = lambda k=kernel: time_calls(k, tuple(args), 5)
    for label, fn in baselines.items():
        np.testing.assert_allclose(fn(), expected, rtol=1e-3, atol=1e-4, err_msg=label)
        candidates[label] = lambda f=fn: time_calls(lambda: f(), (), 5)
    timed = interleaved_rounds(candidates, rounds)
    base = "numpy"
    rows = []
    for label, meds in timed.medians.items():
        row = [label, f"{median(meds) * 1e3:.2f}", f"{timed.best(label) * 1e3:.2f}",
               f"{median(ratios(timed.medians[base], meds)):.2f}x"]
        row.append(f"{median(ratios(timed.medians['hand'], meds)):.2f}x"
                   if "hand" in timed.medians else "")
        rows.append(row)
    failed = sum(not r.ok for r in result.records)
    curve_text = "; ".join(f"{t:.0f}s:{g:.1f}" for t, g, _ in curve[:: max(1, len(curve) // 8)])
    lines = [
        f"### {name}",
        "",
        f"- tuning ({strategy}, {budget:.0f} s): {len(result.records)} candidates, {failed} "
        f"failed; best {result.best.latency_s * 1e3:.2f} ms while tuning"
        if result.best else f"- tuning: no successful candidate of {len(result.records)}",
        f"- best-so-far (wall s: GFLOP/s): {curve_text}",
        f"- best config: `{result.best_config}`",
        "",
        markdown_table(["candidate", "median ms", "best call ms", "speed vs numpy",
                        "speed vs hand"], rows),
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    p = parser(__doc__.split("\n")[0])
    p.add_argument("--budget", type=float, default=None, help="seconds of tuning per op")
    p.add_argument("--strategy", default="evolutionary")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--results", type=Path, default=RESULTS)
    p.add_argument("--ops", default="softmax,conv2d")
    args = p.parse_args()
    budget = args.budget or (15.0 if args.quick else 120.0)
    rounds = args.rounds or (2 if args.quick else 7)
    folder = Path(tempfile.mkdtemp(prefix="bench-tune-ops-"))
    rng = np.random.default_rng(0)
    sections = []
    if "softmax" in args.ops:
        m = n = 256 if args.quick else 4096
        x = (rng.standard_normal((m, n)) * 30).astype(np.float32)
        out = np.empty_like(x)
        sections.append(bench_op(
            f"softmax {m}x{n} float32", ops.softmax(m, n), [x, out], 1,
            lambda: numpy_softmax(x.astype(np.float64)), fused_cpu,
            {"numpy": lambda: numpy_softmax(x)}, args.strategy, budget, args.seed, rounds,
            folder))
    if "conv2d" in args.ops:
        c, hw, k = (8, 14, 8) if args.quick else (64, 56, 64)
        data = rng.standard_normal((1, c, hw, hw)).astype(np.float32)
        weight = rng.standard_normal((k, c, 3, 3)).astype(np.float32)
        out = np.empty((1, k, hw, hw), np.float32)
        baselines = {"numpy": lambda: numpy_conv(data, weight)}
        try:
            import torch

            td, tw = torch.from_numpy(data), torch.from_numpy(weight)
            baselines["torch"] = lambda: torch.nn.functional.conv2d(td, tw, padding=1).numpy()
        except ImportError:
            pass
        sections.append(bench_op(
            f"conv2d 1x{c}x{hw}x{hw}, {k} filters 3x3, padding 1, float32",
            ops.conv2d_nchw(1, c, hw, hw, k, 3, 3), [data, weight, out], 2,
            lambda: numpy_conv(data.astype(np.float64), weight.astype(np.float64)),
            conv_hand, baselines, args.strategy, budget, args.seed, rounds, folder))
    body = "\n".join([
        "## auto-tuning softmax and conv2d, CPU, generated space",
        "",
        f"Command: `{command_line()}`",
        "",
        *machine_lines(),
        f"- tuning budget {budget:.0f} s per operator; then {rounds} interleaved rounds, each "
        "candidate's time per round the median of 5 calls; speeds are per-round ratios "
        "(numpy or hand time / candidate time), then the median over rounds",
        "",
        *sections,
    ])
    print(body)
    if not args.quick and not args.no_write:
        write_section("bench_tune_ops_cpu", body, args.results)


if __name__ == "__main__":
    main()
