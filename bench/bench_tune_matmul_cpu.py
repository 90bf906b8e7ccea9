"""Auto-tuning matmul float32 on the CPU from the generated space: best-so-far vs wall time.

For each strategy, ``wb.tune(matmul(N, N, N), space="generated", strategy=...)`` runs for
``--budget`` seconds (no hand schedule as a seed) with a fresh records file; every record's
GFLOP/s is logged with the wall time since the start, giving the best-so-far curve. Then the
best kernel of each strategy and numpy (in this process, and with the OpenBLAS variables
unset in ``benchlib.NumpyWorker``) are timed side by side in interleaved rounds.

Targets (issue 10): time to beat TVM MetaSchedule's 64-trial result on a 2-core machine
(171 GFLOP/s) <= 30 s; the best within 5 minutes >= 0.9x the packed hand schedule
(~1.08x numpy-unset, ``bench_matmul_packed_cpu.py``), i.e. >= ~0.97x numpy-unset.

    .venv/bin/python bench/bench_tune_matmul_cpu.py                # 1024, 300 s, evolutionary
    .venv/bin/python bench/bench_tune_matmul_cpu.py --strategies evolutionary,random,bayesian
    .venv/bin/python bench/bench_tune_matmul_cpu.py --quick        # 64, 20 s, prints only

The section goes to ``--results`` (default ``bench/RESULTS.md``). The side-by-side timing
includes the packed hand schedule (``recipes.matmul.packed_cpu``) and numpy twice: in this
process (the BLAS as configured by the environment) and in a worker with
``OPENBLAS_CORETYPE`` and ``OPENBLAS_L2_SIZE`` unset.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np
from benchlib import (
    RESULTS,
    NumpyWorker,
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

METASCHEDULE_GFLOPS = 171.0


def tune_curve(n: int, strategy: str, budget: float, seed: int, folder: Path,
               measure_timeout_s: float = 60.0):
    func = ops.matmul(n, n, n)
    start = time.perf_counter()
    curve: list[tuple[float, float]] = []
    best = [0.0]

    def log(record):
        if record.ok and record.gflops > best[0]:
            best[0] = record.gflops
        curve.append((time.perf_counter() - start, best[0]))

    # small batches (the budget is checked between batches) and a short measuring limit:
    # on a loaded 2-core machine a bad candidate (serial, scalar) takes seconds per call
    # a fresh kernel cache per run: no strategy gets another's (or an earlier run's) builds
    runner = wb.tune.LocalRunner(measure_timeout_s=measure_timeout_s,
                                 cache_dir=folder / f"kernels-{strategy}")
    try:
        result = wb.tune(func, target="cpu", trials=100000, db=folder / f"{strategy}.jsonl",
                         space="generated", strategy=strategy, seed=seed,
                         time_budget_s=budget, callbacks=[log], progress=False, repeats=3,
                         batch_size=4, runner=runner)
    finally:
        runner.close()
    return result, curve


def time_to(curve, gflops: float) -> float | None:
    return next((t for t, g in curve if g >= gflops), None)


def main() -> None:
    p = parser(__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=None)
    p.add_argument("--budget", type=float, default=None, help="seconds of tuning per strategy")
    p.add_argument("--strategies", default="evolutionary")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--results", type=Path, default=RESULTS, help="markdown file to write")
    args = p.parse_args()
    n = args.n or (64 if args.quick else 1024)
    budget = args.budget or (20.0 if args.quick else 300.0)
    rounds = args.rounds or (2 if args.quick else 7)
    flops = 2.0 * n ** 3
    strategies = args.strategies.split(",")
    folder = Path(tempfile.mkdtemp(prefix="bench-tune-"))
    results, curves = {}, {}
    for strategy in strategies:
        print(f"tuning matmul {n} with {strategy} for {budget:.0f} s ...")
        results[strategy], curves[strategy] = tune_curve(n, strategy, budget, args.seed, folder)
        print(f"  {results[strategy]}")

    a = np.random.default_rng(0).random((n, n), dtype=np.float32)
    b = np.random.default_rng(1).random((n, n), dtype=np.float32)
    c = np.empty((n, n), np.float32)
    candidates = {}
    for strategy, result in results.items():
        if result.best is None:
            continue
        kernel = result.build()
        kernel(a, b, c)
        np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-3, atol=1e-2)
        candidates[f"tuned-{strategy}"] = (lambda k=kernel: time_calls(k, (a, b, c), 5))
    from workbench.recipes.matmul import packed_cpu

    packed = wb.build(packed_cpu(ops.matmul(n, n, n)), target="cpu")
    packed(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-3, atol=1e-2)
    candidates["packed (hand)"] = lambda: time_calls(packed, (a, b, c), 5)
    candidates["numpy"] = lambda: time_calls(np.matmul, (a, b, c), 5)
    with NumpyWorker() as worker:
        worker.request("setup", what="matmul", n=n, seed=0)
        candidates["numpy-unset"] = lambda: [worker.request("time", repeats=5)["median_s"]]
        timed = interleaved_rounds(candidates, rounds)

    rows = []
    for name, meds in timed.medians.items():
        gf = flops / median(meds) / 1e9
        ratio = median(ratios(timed.medians["numpy-unset"], meds))
        vs_packed = median(ratios(timed.medians["packed (hand)"], meds))
        vs_numpy = median(ratios(timed.medians["numpy"], meds))
        best_unset = timed.best("numpy-unset") / timed.best(name)
        rows.append([name, f"{median(meds) * 1e3:.2f}", f"{gf:.1f}",
                     f"{flops / timed.best(name) / 1e9:.1f}", f"{vs_numpy:.2f}x",
                     f"{ratio:.2f}x", f"{best_unset:.2f}x", f"{vs_packed:.2f}x"])
    table = markdown_table(["candidate", "median ms", "GFLOP/s", "best-call GFLOP/s",
                            "vs numpy (as-is)", "vs numpy-unset", "best call vs numpy-unset",
                            "vs packed (hand)"], rows)
    curve_rows = []
    for strategy in strategies:
        result, curve = results[strategy], curves[strategy]
        t171 = time_to(curve, METASCHEDULE_GFLOPS)
        failed = sum(not r.ok for r in result.records)
        rho = result.cost_model.rank_correlation() if result.cost_model else float("nan")
        curve_rows.append([
            strategy, str(len(result.records)), str(failed),
            f"{curve[0][0]:.1f} s" if curve else "",
            f"{max((g for _, g in curve), default=0):.1f}",
            "not reached" if t171 is None else f"{t171:.1f} s",
            f"{rho:.2f}",
            "; ".join(f"{t:.0f}s:{g:.0f}" for t, g in curve[:: max(1, len(curve) // 8)]),
        ])
    curve_table = markdown_table(
        ["strategy", "trials", "failed", "first record", "best GFLOP/s while tuning",
         f"time to {METASCHEDULE_GFLOPS:.0f} GFLOP/s", "predicted vs measured (Spearman)",
         "best-so-far (wall s: GFLOP/s)"],
        curve_rows)
    body = "\n".join([
        f"## auto-tuning matmul {n} float32, CPU, generated space",
        "",
        f"Command: `{command_line()}`",
        "",
        *machine_lines(),
        f"- tuning budget {budget:.0f} s per strategy; the best kernels then timed in "
        f"{rounds} interleaved rounds against numpy",
        "",
        curve_table,
        "",
        table,
        "",
        *(f"- best config ({strategy}): `{results[strategy].best_config}`"
          for strategy in strategies if results[strategy].best is not None),
    ])
    print(body)
    if not args.quick and not args.no_write:
        write_section("bench_tune_matmul_cpu", body, args.results)


if __name__ == "__main__":
    main()
