"""Elementwise kernels on the CPU: DSL + schedule against a hand-written Numba prange loop.

Two operators on 2^24 float32 elements (64 MiB per array), memory-bound:

* ``chain``: ``D = max((A + B) * C, 0)``, written as three blocks (``T_add``, ``T_mul``,
  ``D``) like an unfused graph would produce; the schedule inlines the first two
  (``compute_inline``), splits the loop, makes the outer part parallel and the inner part
  vectorized;
* ``triad`` (STREAM): ``A = B + 3 * C``, one block, split/parallel/vectorize.

Each is compared with the loop a Numba user would write by hand
(``@numba.njit(parallel=True, fastmath=True)`` over ``numba.prange``), and with numpy for
context, timed side by side in interleaved rounds (see ``bench/benchlib``). Run
``python bench/bench_elementwise_cpu.py`` (writes its section of bench/RESULTS.md) or
``--quick`` (tiny, prints only).
"""

from __future__ import annotations

import numba
import numpy as np
from benchlib import (
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
from workbench import T

SPLIT = 4096  # inner (vectorized) loop length


def chain_func(n: int):
    @T.prim_func
    def add_mul_relu(A: T.Buffer((n,), "float32"), B: T.Buffer((n,), "float32"),
                     C: T.Buffer((n,), "float32"), D: T.Buffer((n,), "float32")):
        T_add = T.alloc_buffer((n,), "float32")
        T_mul = T.alloc_buffer((n,), "float32")
        for i in T.serial(n):
            with T.block("T_add"):
                vi = T.axis.remap("S", [i])
                T_add[vi] = A[vi] + B[vi]
        for i in T.serial(n):
            with T.block("T_mul"):
                vi = T.axis.remap("S", [i])
                T_mul[vi] = T_add[vi] * C[vi]
        for i in T.serial(n):
            with T.block("D"):
                vi = T.axis.remap("S", [i])
                D[vi] = T.max(T_mul[vi], T.float32(0))

    return add_mul_relu


def triad_func(n: int):
    @T.prim_func
    def triad(B: T.Buffer((n,), "float32"), C: T.Buffer((n,), "float32"),
              A: T.Buffer((n,), "float32")):
        for i in T.serial(n):
            with T.block("A"):
                vi = T.axis.remap("S", [i])
                A[vi] = B[vi] + T.float32(3) * C[vi]

    return triad


def schedule_chain(n: int) -> wb.Schedule:
    sch = wb.Schedule(chain_func(n))
    sch.compute_inline(sch.get_block("T_add"))
    sch.compute_inline(sch.get_block("T_mul"))
    (i,) = sch.get_loops(sch.get_block("D"))
    outer, inner = sch.split(i, factors=[None, min(SPLIT, n)])
    sch.parallel(outer)
    sch.vectorize(inner)
    return sch


def schedule_triad(n: int) -> wb.Schedule:
    sch = wb.Schedule(triad_func(n))
    (i,) = sch.get_loops(sch.get_block("A"))
    outer, inner = sch.split(i, factors=[None, min(SPLIT, n)])
    sch.parallel(outer)
    sch.vectorize(inner)
    return sch


@numba.njit(parallel=True, fastmath=True)
def chain_hand(a, b, c, d):
    for i in numba.prange(a.shape[0]):
        d[i] = max((a[i] + b[i]) * c[i], np.float32(0))


@numba.njit(parallel=True, fastmath=True)
def triad_hand(b, c, a):
    for i in numba.prange(a.shape[0]):
        a[i] = b[i] + np.float32(3) * c[i]


def chain_numpy(a, b, c, d):
    np.multiply(np.add(a, b, out=d), c, out=d)
    np.maximum(d, np.float32(0), out=d)


def triad_numpy(b, c, a):
    np.multiply(c, np.float32(3), out=a)
    np.add(a, b, out=a)


def main() -> None:
    args = parser(__doc__.splitlines()[0]).parse_args()
    n = 1 << (16 if args.quick else 24)
    rounds = args.rounds or (2 if args.quick else 7)
    repeats = 3 if args.quick else 10
    rng = np.random.default_rng(0)

    cases = {
        "chain": (schedule_chain(n), chain_hand, chain_numpy, 4,
                  lambda a, b, c: np.maximum((a + b) * c, 0)),
        "triad": (schedule_triad(n), triad_hand, triad_numpy, 3,
                  lambda b, c: b + np.float32(3) * c),
    }
    print(f"elementwise, n = {n} float32, {rounds} rounds x {repeats} calls")
    candidates = {}
    gbytes = {}
    for case, (sch, hand, numpy_fn, n_arrays, reference) in cases.items():
        arrays = [rng.standard_normal(n, dtype=np.float32) for _ in range(n_arrays)]
        expected = reference(*arrays[:-1])
        kernel = wb.build(sch, target="cpu")
        for name, fn in (("wb", kernel), ("hand prange", hand), ("numpy", numpy_fn)):
            arrays[-1][:] = 0
            fn(*arrays)
            np.testing.assert_allclose(arrays[-1], expected, rtol=1e-5, atol=1e-6,
                                       err_msg=f"{case} {name}")
            candidates[f"{case}: {name}"] = (
                lambda fn=fn, arrays=arrays: time_calls(fn, tuple(arrays), repeats))
        gbytes[case] = n_arrays * n * 4 / 1e9
        print(f"  {case}: checked against numpy (compile {kernel.compile_seconds:.2f} s)")

    measured = interleaved_rounds(candidates, rounds)
    seconds = measured.medians

    rows = []
    summary = {}
    for case in cases:
        hand = seconds[f"{case}: hand prange"]
        best_hand = measured.best(f"{case}: hand prange")
        for name in ("wb", "hand prange", "numpy"):
            secs = seconds[f"{case}: {name}"]
            r = ratios(hand, secs)  # speed relative to the hand-written loop
            rows.append([case, name, f"{median(secs) * 1e3:.2f}",
                         f"{gbytes[case] / median(secs):.1f}", f"{median(r):.2f}x",
                         " ".join(f"{x:.2f}" for x in r),
                         f"{best_hand / measured.best(f'{case}: {name}'):.2f}x"])
        summary[case] = median(ratios(hand, seconds[f"{case}: wb"]))
    header = ["op", "candidate", "median ms", "GB/s (arrays once)",
              "ratio vs hand prange (median)", "per-round ratio", "best-call ratio"]
    table = markdown_table(header, rows)
    print(table)
    for case, r in summary.items():
        print(f"{case}: wb / hand prange = {r:.2f}x (target >= 0.9x)")

    if args.quick or args.no_write:
        return
    body = "\n".join([
        "## Elementwise chain and STREAM triad, CPU: DSL + schedule vs hand-written prange",
        "",
        f"Command: `{command_line()}`",
        "",
        *machine_lines(),
        f"- size: {n} float32 per array ({n * 4 / 2**20:.0f} MiB); chain "
        "`D = max((A + B) * C, 0)` (three blocks, two inlined), triad `A = B + 3 * C`",
        f"- schedule: `compute_inline` (chain), `split(i, [None, {SPLIT}])`, `parallel(outer)`, "
        "`vectorize(inner)`; hand loop: `@numba.njit(parallel=True, fastmath=True)` over "
        "`numba.prange(n)`",
        f"- protocol: {rounds} interleaved rounds, each candidate's time per round the median "
        f"of {repeats} calls (after 1 warm-up call); ratio = hand time / candidate time per "
        "round, then the median. GB/s counts each array once (no write-allocate traffic). "
        "Results were checked against numpy first.",
        "",
        table,
        "",
        "**" + ", ".join(f"{case}: wb / hand prange = {r:.2f}x" for case, r in summary.items())
        + "** (target >= 0.9x).",
    ])
    write_section("bench_elementwise_cpu", body)
    print("wrote the bench_elementwise_cpu section of bench/RESULTS.md")


if __name__ == "__main__":
    main()
