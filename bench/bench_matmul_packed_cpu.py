"""matmul 1024 float32 on the CPU: packed B panels and a local accumulator against numpy.

The schedule uses the memory primitives on top of the loop ones:

* ``cache_read(C, 2, "global")`` + ``compute_at(B_global, j_0)`` + ``transform_layout``:
  each iteration of the parallel ``j_0`` loop first copies its 64 columns of ``B`` into a
  contiguous panel ``B_global[j_0, k, 0:64]`` (256 KiB, stays in that core's L2), so the
  micro-kernel streams one contiguous panel instead of 64-float pieces of 1024 rows 4 KiB
  apart (which share a few L1 sets);
* ``cache_write(C, 0, "local")`` + ``reverse_compute_at(C_local, i_0)``: the 4x64 output
  tile is accumulated in ``C_local`` (compacted to 4x64, allocated on the stack by the CPU
  backend, so LLVM keeps it in 16 zmm registers across ``k``) and written back once.

Candidates, timed side by side in interleaved rounds (see ``bench/benchlib``):

* ``numpy (as-is)`` and ``numpy (OPENBLAS_* unset)`` (the fair BLAS baseline, in a
  subprocess started with ``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE``);
* ``wb packed``: the schedule above;
* ``wb packed, whole B first``: the same, but all of ``B`` packed (serially) before the
  parallel loop, as ``cache_read`` places it without ``compute_at``;
* ``wb loop-only best``: ``bench_matmul_cpu.py``'s best loop-only schedule, for reference.

Every kernel is checked against a float64 product before timing, and the assembly of
``wb packed`` is inspected: the report counts the FMAs, loads and stores of its inner ``k``
loops. Run ``python bench/bench_matmul_packed_cpu.py`` (writes its section of
bench/RESULTS.md) or ``--quick`` (tiny, prints only).
"""

from __future__ import annotations

import numba
import numpy as np
import threadpoolctl
from bench_matmul_cpu import schedule_best
from bench_matmul_cpu import summarize as summarize_matmul
from benchlib import (
    NumpyWorker,
    Rounds,
    blas_info,
    command_line,
    describe_blas,
    interleaved_rounds,
    machine_lines,
    parser,
    time_calls,
    write_section,
)

import workbench as wb
from workbench import ops, recipes
from workbench.backends.cpu.asm_loops import fma_loops

SEED = 0
TARGET = 0.50
BASE = "numpy (OPENBLAS_* unset)"
BEST = "wb packed"


def schedule_packed(n: int, **options) -> wb.Schedule:
    """``recipes.matmul.packed_cpu``: B packed into panels of 4 vector registers (64 floats on
    AVX-512), a 4x64 local accumulator, ``j_0`` parallel; ``pack_per_panel=False`` packs
    the whole of B first."""
    return recipes.matmul.packed_cpu(ops.matmul(n, n, n), **options)


def asm_summary(kernel) -> tuple[str, bool]:
    """A sentence about ``kernel``'s FMA loops, and whether its k loops keep the tile in
    registers (a loop of at least 16 zmm FMAs with no store)."""
    loops = fma_loops(kernel.asm)
    clean = [x for x in loops if x.stores == 0 and x.fma_zmm >= 16]
    return "; ".join(f"`{x}`" for x in loops), bool(clean)


def summarize(measured: Rounds, flop: int) -> tuple[str, float, float]:
    """``bench_matmul_cpu.summarize`` for the ``wb packed`` candidate and this target."""
    return summarize_matmul(measured, flop, best=BEST, target=TARGET)


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
        BEST: schedule_packed(n, **tiles),
        "wb packed, whole B first": schedule_packed(n, **tiles, pack_per_panel=False),
        "wb loop-only best": schedule_best(n, **tiles),
    }
    print(f"matmul {n}x{n}x{n} float32, {rounds} rounds x {repeats} calls")
    kernels = {}
    for name, sch in schedules.items():
        kernels[name] = kernel = wb.build(sch, target="cpu")
        c[:] = np.nan
        kernel(a, b, c)
        np.testing.assert_allclose(c, expected, rtol=1e-4, err_msg=name)
        print(f"  {name}: checked against numpy (compile {kernel.compile_seconds:.2f} s)")
    np.matmul(a, b, out=c)
    np.testing.assert_allclose(c, expected, rtol=1e-4)
    asm_text, in_registers = asm_summary(kernels[BEST])
    print(f"  {BEST} FMA loops: {asm_text}")

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
            single = {name: candidates[name] for name in ("numpy (as-is)", BASE, BEST)}
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
    write_section(
        "bench_matmul_packed_cpu",
        "\n".join(
            report_lines(results, schedules, unset_blas, rounds, repeats, asm_text, in_registers)
        ),
    )
    print("wrote the bench_matmul_packed_cpu section of bench/RESULTS.md")


def report_lines(results, schedules, unset_blas, rounds, repeats, asm_text, in_registers):
    lines = [
        "## matmul 1024 float32, CPU: packed B panels + local accumulator vs numpy",
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
        "numpy and `wb packed` (`numba.set_num_threads(1)`, `threadpool_limits(1)`).",
    ]
    for label, (table, best_ratio, quiet_ratio) in results.items():
        lines += [
            "",
            f"### {label}",
            "",
            table,
            "",
            f"**{label}: {BEST} / numpy-unset = {best_ratio:.2f}x** (median of the per-round "
            f"ratios; {quiet_ratio:.2f}x between the best single calls).",
        ]
    figures = [
        r for _, best_ratio, quiet_ratio in results.values() for r in (best_ratio, quiet_ratio)
    ]
    lowest = min(figures)
    verdict = "met" if lowest >= TARGET else "NOT met"
    register_text = (
        "the 4x64 accumulator stays in 16 zmm registers (no store in the loop)"
        if in_registers
        else "the accumulator is NOT kept in registers (stores in the loop)"
    )
    lines += [
        "",
        f"**Lowest of the four {BEST} ratios above: {lowest:.2f}x numpy-unset: the target "
        f"(>= {TARGET:.2f}x) is {verdict}.** For comparison, on this machine TVM "
        "MetaSchedule's 64-trial result was 171 GFLOP/s and Halide's 48x8 tile 169.",
        "",
        "Reading: with 2 threads on a shared 2-core machine, a busy core stalls one thread "
        "of every candidate (timings then cluster at multiples of the scheduler tick), so the "
        "2-thread figures measure the neighbours as much as the kernels; the 1-thread rounds "
        "and the best single calls are the figures to compare.",
        "",
        f"Machine code of `{BEST}` (its FMA loops, from `kernel.asm`): {asm_text}. In the "
        f"inner `k` loops {register_text}: each 4x64 `k` step is 16 `vfmadd231ps` on zmm "
        "fed by 4 panel loads (`vmovups`) and 4 broadcasts of `A` (`vbroadcastss`); LLVM "
        "unrolls `k` by 2. The loops listed with stores are the ones around them (their "
        "counts include the inner loops' code, the peeled first `k` step with the tile's "
        "zero init, and the write-back of the tile to `C`).",
        "",
        "What made the difference (measured while developing this, 1 thread, same rounds "
        "as numpy): packing B per panel lifts the 4x64 tile from ~0.55x (loop-only, B read "
        "in place: 64-float pieces of rows 4 KiB apart) to ~0.9-1.05x numpy-unset; the "
        "local accumulator is placed on the stack by the CPU backend (`runtime."
        "stack_allocator`), without which LLVM kept it in registers for some tile and "
        "split sizes only (k split by 256: a scalar loop with a load and a store per FMA, "
        "~40-50 GFLOP/s), since it cannot prove a `np.empty` result does not alias `A`/`B`. "
        "Also tried: packing A per 4-row tile (`cache_read` + `compute_at(i_0)` + "
        "`transform_layout`): the strided copy per tile cost more than it saved (0.57x); "
        "a 6x64 tile (1024 is not a multiple of 6: guarded, 0.6-0.7x); 8x32 and k split by "
        "256: the same speed as 4x64 / 128.",
        "",
        f"The schedule (`{BEST}`), as a trace:",
        "",
        "```python",
        str(schedules[BEST].trace).rstrip(),
        "```",
    ]
    return lines


if __name__ == "__main__":
    main()
