"""matmul 1024 float32 on the CPU: loop-only hand schedules against numpy (BLAS).

Candidates, timed side by side in interleaved rounds (see ``bench/benchlib``):

* ``numpy (as-is)``: ``np.matmul`` in this process, the environment as it is;
* ``numpy (OPENBLAS_* unset)``: ``np.matmul`` in a subprocess started with
  ``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE`` (the fair BLAS baseline);
* ``wb best``: the best schedule found with loop primitives alone (split, reorder,
  parallel, unroll, vectorize): a 4x64 register tile, K split by 128, ``j_0`` parallel;
* ``wb tiled 8x32``: a simpler tiling (full K inside the tile; 32 columns on AVX-512);
* ``wb parallel+vectorize``: no tiling, ``i`` parallel, ``k`` outside ``j`` (vectorized).

Every kernel is checked against numpy before timing. Run ``python bench/bench_matmul_cpu.py``
(writes its section of bench/RESULTS.md) or ``--quick`` (tiny, prints only).
"""

from __future__ import annotations

import numba
import numpy as np
import threadpoolctl
from benchlib import (
    NumpyWorker,
    Rounds,
    blas_info,
    command_line,
    describe_blas,
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
from workbench import ops, recipes

SEED = 0


def schedule_best(n: int, **tiles) -> wb.Schedule:
    """``recipes.matmul.tiled_cpu``: ``j_0 (parallel), k_0, i_0, k_1, i_1 (unroll), j_1
    (vectorize)``, a 4 x (4 vector registers) tile, K by 128."""
    return recipes.matmul.tiled_cpu(ops.matmul(n, n, n), **tiles)


def schedule_tiled(n: int) -> wb.Schedule:
    """``recipes.matmul.tiled_full_k_cpu``: ``i_0 (parallel), j_0, k, i_1, j_1``."""
    return recipes.matmul.tiled_full_k_cpu(ops.matmul(n, n, n))


def schedule_simple(n: int) -> wb.Schedule:
    """``recipes.matmul.parallel_vectorize_cpu``: ``i (parallel), k, j (vectorize)``."""
    return recipes.matmul.parallel_vectorize_cpu(ops.matmul(n, n, n))


BASE = "numpy (OPENBLAS_* unset)"


def summarize(
    measured: Rounds, flop: int, *, best: str = "wb best", target: float = 0.30
) -> tuple[str, float, float]:
    """Print and return (markdown table, median per-round ratio of candidate ``best``
    against numpy-unset, ratio of their best single calls). Shared with the packed bench."""
    seconds = measured.medians
    rows = []
    for name, secs in seconds.items():
        r_unset = ratios(seconds[BASE], secs)  # speed ratio: their time / our time
        r_asis = ratios(seconds["numpy (as-is)"], secs)
        rows.append([
            name,
            f"{flop / median(secs) / 1e9:.1f}",
            f"{median(r_unset):.2f}x",
            f"{median(r_asis):.2f}x",
            " ".join(f"{x:.2f}" for x in r_unset),
            f"{flop / measured.best(name) / 1e9:.1f}",
            f"{measured.best(BASE) / measured.best(name):.2f}x",
        ])
    header = ["candidate", "median GFLOP/s", "ratio vs numpy-unset (median)",
              "ratio vs numpy as-is (median)", "per-round ratio vs numpy-unset",
              "best-call GFLOP/s", "best-call ratio vs numpy-unset"]
    table = markdown_table(header, rows)
    print(table)
    best_ratio = median(ratios(seconds[BASE], seconds[best]))
    quiet_ratio = measured.best(BASE) / measured.best(best)
    print(f"{best} / numpy-unset: {best_ratio:.2f}x median of rounds, "
          f"{quiet_ratio:.2f}x best calls (target >= {target:.2f}x)")
    return table, best_ratio, quiet_ratio


def main() -> None:
    args = parser(__doc__.splitlines()[0]).parse_args()
    n = 128 if args.quick else 1024
    rounds = args.rounds or (2 if args.quick else 7)
    repeats = 3 if args.quick else 10
    flop = 2 * n**3

    rng = np.random.default_rng(SEED)
    a = rng.random((n, n), dtype=np.float32)
    b = rng.random((n, n), dtype=np.float32)
    c = np.empty((n, n), np.float32)
    expected = a.astype(np.float64) @ b

    tiles = dict(ti=4, tj=32, tk=32) if args.quick else {}
    schedules = {
        "wb best": schedule_best(n, **tiles),
        "wb tiled 8x32": schedule_tiled(n),
        "wb parallel+vectorize": schedule_simple(n),
    }
    print(f"matmul {n}x{n}x{n} float32, {rounds} rounds x {repeats} calls")
    kernels = {}
    for name, sch in schedules.items():
        kernels[name] = kernel = wb.build(sch, target="cpu")
        kernel(a, b, c)
        np.testing.assert_allclose(c, expected, rtol=1e-4, err_msg=name)
        print(f"  {name}: checked against numpy (compile {kernel.compile_seconds:.2f} s)")
    np.matmul(a, b, out=c)
    np.testing.assert_allclose(c, expected, rtol=1e-4)

    with NumpyWorker() as worker:
        worker.request("setup", what="matmul", n=n, seed=SEED)
        error = worker.request("check")["max_rel_error"]
        assert error < 1e-4, f"numpy in the worker: relative error {error}"
        unset_blas = worker.request("info")["blas"]

        candidates = {
            "numpy (as-is)": lambda: time_calls(lambda: np.matmul(a, b, out=c), (), repeats),
            BASE: lambda: worker.request("time", repeats=repeats)["times_s"],
        }
        for name, kernel in kernels.items():
            candidates[name] = lambda k=kernel: time_calls(k, (a, b, c), repeats)
        threads = numba.get_num_threads()
        print(f"all threads ({threads}):")
        results = {f"{threads} threads": summarize(interleaved_rounds(candidates, rounds), flop)}
        if not args.quick:
            # one thread each: a core taken by another process then slows a candidate
            # without also stalling a second thread that the first one waits for
            single = {name: candidates[name] for name in ("numpy (as-is)", BASE, "wb best")}
            worker.request("threads", n=1)
            with threadpoolctl.threadpool_limits(1, user_api="blas"):
                numba.set_num_threads(1)
                try:
                    print("one thread:")
                    results["1 thread"] = summarize(interleaved_rounds(single, rounds), flop)
                finally:
                    numba.set_num_threads(threads)
            worker.request("threads", n=None)

    if args.quick or args.no_write:
        return
    lines = [
        "## matmul 1024 float32, CPU: loop-only schedules vs numpy",
        "",
        f"Command: `{command_line()}`",
        "",
        *machine_lines(),
        f"- numpy as-is: {describe_blas(blas_info())}",
        f"- numpy with `OPENBLAS_CORETYPE`/`OPENBLAS_L2_SIZE` unset (subprocess, "
        f"`env -u ...`): {describe_blas(unset_blas)}",
        f"- protocol: {rounds} interleaved rounds, each candidate's time per round the median "
        f"of {repeats} calls (after 1 warm-up call) on the same arrays; ratio = numpy time / "
        "workbench time, per round, then the median over rounds. Every kernel was checked "
        "against a float64 product (rtol 1e-4) first. Then the same with one thread for "
        "every candidate (`numba.set_num_threads(1)`, threadpoolctl's `threadpool_limits(1)`).",
    ]
    for label, (table, best_ratio, quiet_ratio) in results.items():
        lines += [
            "", f"### {label}", "", table, "",
            f"**{label}: wb best / numpy-unset = {best_ratio:.2f}x** (median of the per-round "
            f"ratios; {quiet_ratio:.2f}x between the best single calls).",
        ]
    figures = [r for _, best_ratio, quiet_ratio in results.values()
               for r in (best_ratio, quiet_ratio)]
    lowest = min(figures)
    verdict = "met" if lowest >= 0.30 else "NOT met"
    lines += [
        "",
        "Reading: with 2 threads on a shared 2-core machine, a busy core stalls one thread of "
        "each candidate; OpenBLAS suffers more from it than the workbench kernel, so the "
        "2-thread median ratio flatters the workbench. The best single calls (a quiet "
        "moment) and the 1-thread rounds are the figures to quote.",
        "",
        f"**Lowest of the four wb-best ratios above: {lowest:.2f}x numpy-unset: the target "
        f"(>= 0.30x with loop primitives alone) is {verdict}.** For comparison, TVM's "
        "loop-only schedule reached about 0.26x on this machine, Halide's tiled one 0.43x.",
        "",
        "The best schedule (`wb best`), as a trace:",
        "",
        "```python",
        str(schedules["wb best"].trace).rstrip(),
        "```",
    ]
    write_section("bench_matmul_cpu", "\n".join(lines))
    print("wrote the bench_matmul_cpu section of bench/RESULTS.md")


if __name__ == "__main__":
    main()
