"""softmax 4096x4096 float32 on the CPU: each lowering step against numpy.

Candidates, timed side by side in interleaved rounds (see ``bench/benchlib``):

* ``numpy``: ``e = np.exp(x - x.max(1, keepdims=True)); e / e.sum(1, keepdims=True)``
  (numpy's own SIMD loops; no BLAS routine is involved, so the OpenBLAS variables do not
  matter: the script also times it once in a subprocess with them unset, for the record);
* the five steps of ``workbench.recipes.softmax_lowering.softmax_lowering_steps`` built for the
  ``cpu`` target: three passes, fused, fused + parallel + vectorized (rfactor), online fused,
  online across 16 vectorized lanes;
* two variants of step 3: without ``rfactor`` (reductions left as serial loops), and with
  ``fast_exp=False`` (libm's ``exp`` instead of the vectorizable polynomial).

Every kernel is checked against numpy (inputs scaled to large magnitudes, so the max
subtraction matters) before timing. Then the same with one thread for every candidate
(``numba.set_num_threads(1)``: numpy's softmax is single-threaded). Run
``python bench/bench_softmax_cpu.py`` (writes its section of bench/RESULTS.md) or
``--quick`` (tiny, prints only).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable

import numba
import numpy as np
from benchlib import (
    OPENBLAS_VARIABLES,
    Rounds,
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
from workbench import ops, recipes
from workbench.ir.traffic import total_pass_bytes
from workbench.recipes.softmax_lowering import softmax_lowering_steps

SEED = 0
BASE = "numpy"
TARGET = "3. fused, parallel, vectorized"
ONLINE = "4. online softmax, fused"
ONLINE_LANES = "5. online softmax across lanes"


def numpy_softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def softmax_kernels(m: int, n: int) -> dict[str, tuple[wb.Kernel, int]]:
    """Every candidate kernel with the DRAM bytes its function moves (pass traffic)."""
    kernels = {}
    for step in softmax_lowering_steps(m, n):
        kernels[step.title] = (wb.build(step.func, target="cpu"), total_pass_bytes(step.func))
    no_rf = recipes.softmax.fused_cpu(ops.softmax(m, n), rfactor=False)
    kernels["3 without rfactor"] = (wb.build(no_rf, target="cpu"), total_pass_bytes(no_rf.mod))
    libm = recipes.softmax.fused_cpu(ops.softmax(m, n))
    kernels["3 with libm exp (fast_exp=False)"] = (
        wb.build(libm, target="cpu", fast_exp=False), total_pass_bytes(libm.mod))
    return kernels


def summarize(measured: Rounds, byte_counts: dict[str, int], target: str,
              ) -> tuple[str, float, float, dict[str, float]]:
    """Print and return (markdown table, median per-round ratio of ``target`` against
    numpy, ratio of their best single calls, every candidate's median per-round speed
    against numpy)."""
    seconds = measured.medians
    rows = []
    speeds = {}
    for name, secs in seconds.items():
        per_round = ratios(seconds[BASE], secs)
        speeds[name] = median(per_round)
        rows.append([
            name,
            f"{median(secs) * 1e3:.2f}",
            f"{byte_counts[name] / median(secs) / 1e9:.1f}",
            f"{median(per_round):.2f}x",
            " ".join(f"{x:.2f}" for x in per_round),
            f"{measured.best(BASE) / measured.best(name):.2f}x",
        ])
    header = ["candidate", "median ms", "GB/s (DRAM bytes / median)",
              "speed vs numpy (median of rounds)", "per-round speed vs numpy",
              "best-call speed vs numpy"]
    table = markdown_table(header, rows)
    print(table)
    ratio = median(ratios(seconds[BASE], seconds[target]))
    quiet = measured.best(BASE) / measured.best(target)
    print(f"{target} / numpy: {ratio:.2f}x median of rounds, {quiet:.2f}x best calls")
    return table, ratio, quiet, speeds


def run_protocol(candidates: dict[str, Callable[[], list[float]]], byte_counts: dict[str, int],
                 rounds: int, target: str, quick: bool,
                 ) -> dict[str, tuple[str, float, float, dict[str, float]]]:
    """All threads, then one thread (numba and the BLAS pools limited to 1)."""
    import threadpoolctl

    threads = numba.get_num_threads()
    print(f"all threads ({threads}):")
    results = {f"{threads} threads": summarize(interleaved_rounds(candidates, rounds),
                                               byte_counts, target)}
    if quick:
        return results
    with threadpoolctl.threadpool_limits(1):
        numba.set_num_threads(1)
        try:
            print("one thread:")
            results["1 thread"] = summarize(interleaved_rounds(candidates, rounds),
                                            byte_counts, target)
        finally:
            numba.set_num_threads(threads)
    return results


_UNSET_SCRIPT = """
import sys, time, numpy as np
m, n, repeats = map(int, sys.argv[1:])
x = (np.random.default_rng(0).standard_normal((m, n)) * 30).astype(np.float32)
def f(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)
f(x)
times = []
for _ in range(repeats):
    t = time.perf_counter_ns(); f(x); times.append((time.perf_counter_ns() - t) * 1e-9)
times.sort()
print(times[len(times) // 2])
"""


def numpy_unset_seconds(m: int, n: int, repeats: int) -> float:
    """numpy's softmax median time in a subprocess with the OpenBLAS variables unset."""
    command = ["env"]
    for name in OPENBLAS_VARIABLES:
        command += ["-u", name]
    command += [sys.executable, "-c", _UNSET_SCRIPT, str(m), str(n), str(repeats)]
    out = subprocess.run(command, capture_output=True, text=True, check=True, env=os.environ)
    return float(out.stdout.strip())


def results_lines(results: dict[str, tuple[str, float, float, dict[str, float]]], target: str,
                  goal: float | None) -> tuple[list[str], float]:
    """Markdown for each thread setting, and the lowest of the target's ratios."""
    lines = []
    for label, (table, ratio, quiet, _) in results.items():
        lines += ["", f"### {label}", "", table, "",
                  f"**{label}: {target} / numpy = {ratio:.2f}x** (median of the per-round "
                  f"ratios; {quiet:.2f}x between the best single calls)."]
    lowest = min(r for _, ratio, quiet, _ in results.values() for r in (ratio, quiet))
    return lines, lowest


def online_lanes_reading(speeds: dict[str, float]) -> str:
    """A sentence on step 5 from one thread setting's median speeds against numpy."""
    lanes, online, fused = speeds[ONLINE_LANES], speeds[ONLINE], speeds[TARGET]
    return (f"Step 5 (the online reduction run in 16 vectorized lanes per row) runs at "
            f"{lanes:.2f}x numpy with one thread, {lanes / online:.1f}x step 4 and "
            f"{lanes / fused:.2f}x step 3: it reads each element twice instead of three "
            "times, but computes three `exp` per element where step 3 computes two.")


def main() -> None:
    args = parser(__doc__.splitlines()[0]).parse_args()
    m = n = 256 if args.quick else 4096
    rounds = args.rounds or (2 if args.quick else 7)
    repeats = 3 if args.quick else 5

    rng = np.random.default_rng(SEED)
    x = (rng.standard_normal((m, n)) * 30).astype(np.float32)  # large: exp(x) overflows
    out = np.empty_like(x)
    expected = numpy_softmax(x.astype(np.float64))

    print(f"softmax {m}x{n} float32, {rounds} rounds x {repeats} calls")
    built = softmax_kernels(m, n)
    byte_counts = {BASE: 2 * x.nbytes}  # numpy: at least one read and one write
    candidates = {BASE: lambda: time_calls(numpy_softmax, (x,), repeats)}
    for name, (kernel, nbytes) in built.items():
        out.fill(np.nan)
        kernel(x, out)
        np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-6, err_msg=name)
        print(f"  {name}: checked against numpy (compile {kernel.compile_seconds:.2f} s)")
        byte_counts[name] = nbytes
        candidates[name] = lambda k=kernel: time_calls(k, (x, out), repeats)
    np.testing.assert_allclose(numpy_softmax(x), expected, rtol=1e-4, atol=1e-6)
    report = built[TARGET][0].vectorization_report()
    print(report)
    lanes_report = built[ONLINE_LANES][0].vectorization_report()
    print(lanes_report)

    results = run_protocol(candidates, byte_counts, rounds, TARGET, args.quick)
    unset_s = None if args.quick else numpy_unset_seconds(m, n, repeats * 2)
    if args.quick or args.no_write:
        return

    goal = 2.5
    lines, lowest = results_lines(results, TARGET, goal)
    verdicts = []
    for label, (_, ratio, quiet, _) in results.items():
        met = "met" if ratio >= goal else "NOT met"
        verdicts.append(f"{label}: {ratio:.2f}x median of rounds ({met}), "
                        f"{quiet:.2f}x best calls")
    body = [
        f"## softmax {m}x{n} float32, CPU: lowering steps vs numpy",
        "",
        f"Command: `{command_line()}`",
        "",
        *machine_lines(),
        f"- protocol: {rounds} interleaved rounds, each candidate's time per round the median "
        f"of {repeats} calls (after 1 warm-up call) on the same arrays (64 MiB in, 64 MiB "
        "out: far larger than the cache); speed = numpy time / candidate time, per round, "
        "then the median over rounds. Every kernel was checked against a float64 numpy "
        "softmax (rtol 1e-4) on inputs ~ N(0, 30^2) first. Then the same with one thread "
        "for every candidate (`numba.set_num_threads(1)`; numpy's softmax is "
        "single-threaded anyway).",
        "- numpy's softmax uses no BLAS routine; timed alone in a subprocess with "
        "`OPENBLAS_CORETYPE`/`OPENBLAS_L2_SIZE` unset (not interleaved, so only a sanity "
        f"check): median {unset_s * 1e3:.1f} ms.",
        "- GB/s counts the DRAM bytes of each step's function (`ir.traffic.pass_traffic`: "
        "three passes over `A` for step 1, one for the fused ones); numpy's row counts one "
        "read and one write (it really makes about five passes with temporaries).",
        *lines,
        "",
        f"**Target: {TARGET} >= {goal}x numpy.** " + "; ".join(verdicts) + ".",
        "",
        "Reading: the parallel row loop uses both cores; on this shared 2-core machine the "
        "second thread often waits for a core that another process holds, and the kernel "
        "then runs at the pace of that thread (its 2-thread median is often slower than "
        "its 1-thread one: compare the tables). numpy's softmax is single-threaded and "
        "does not suffer from it. "
        "The 1-thread rounds compare like with like. Step 2 alone (fusion without "
        "vectorization) is not faster than numpy: numpy's `exp` is SIMD, the fused loop's "
        "reductions are scalar; `3 without rfactor` shows the reductions left serial (LLVM "
        "does not vectorize a `max` reduction or a sum of the polynomial `exp` into one "
        "scalar accumulator); the online softmax's reduction is a scalar loop with two "
        "`exp` per element and cannot be rfactor-ed (two stores). "
        + online_lanes_reading(results["1 thread"][3]),
        "",
        "Vectorization of step 3 (`kernel.vectorization_report()`):",
        "",
        "```",
        str(report),
        "```",
        "",
        "Vectorization of step 5 (the lane loop is `ax1`, the normalise loop `j3`):",
        "",
        "```",
        str(lanes_report),
        "```",
    ]
    write_section("bench_softmax_cpu", "\n".join(body))
    print("wrote the bench_softmax_cpu section of bench/RESULTS.md")


if __name__ == "__main__":
    main()
