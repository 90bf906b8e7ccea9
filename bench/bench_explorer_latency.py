"""Interaction latencies of ``wb.explore`` on matmul 512 float32 (issue 8, item 9).

What a person waits for after one edit in the explorer (each edit a new schedule step):

1. **IR-only update**: the call a control makes (``ex.split(...)``, ``ex.parallel(...)``...)
   until it returns: the primitive, the controls, the highlighted IR, the IR diff and the
   analytic roofline point are all redrawn when it returns (target <= 0.1 s).
2. **legality table**: from the edit until the primitive panel shows which primitives are
   legal at the selection (probed on a worker thread since this branch; before, part of 1).
3. **views**: the panes drawn on the worker thread after that (generated source, loop-nest
   drawing, footprint and warnings, lowering viewer, history table), from the edit.
4. **measured update**: from the edit until the measured numbers are shown (debounce
   included; the kernel is compiled for the first time and measured with a 0.3 s budget)
   (target <= 1.5 s).
5. **cached revisit**: ``ex.jump(node)`` back to a measured node, until its numbers are
   shown (answered from the cache, no compile).

Every edit is applied on a fresh explorer opened on the same function, so the kernel caches
of earlier edits are cold for the measured update (``WORKBENCH_CACHE_DIR`` is a new empty
directory per round). The peaks are given (not measured) so that only the explorer is timed.
"""

from __future__ import annotations

import os
import tempfile
import time

from benchlib import command_line, machine_lines, markdown_table, median, parser, write_section

import workbench as wb
from workbench import ops
from workbench.backends.cpu.numba_cpu import clear_memory_cache
from workbench.measure import MachinePeaks

PEAKS = MachinePeaks(gflops=400.0, gbps=30.0)
EDITS = [
    ("split i 32", lambda ex: ex.split("i", [None, 32])),
    ("split j 64", lambda ex: ex.split("j", [None, 64])),
    ("reorder tiles", lambda ex: ex.reorder("i_0", "j_0", "k", "i_1", "j_1")),
    ("parallel i_0", lambda ex: ex.parallel("i_0")),
    ("vectorize j_1", lambda ex: ex.vectorize("j_1")),
]


def one_round(n: int) -> dict[str, list[float]]:
    times = {"IR-only update": [], "legality table": [], "views": [], "measured update": [],
             "cached revisit": []}  # more rows (drawing, parts of a measurement) where known
    ex = wb.explore(ops.matmul(n, n, n), peaks=PEAKS, budget_s=0.3)
    ex.wait()  # the naive kernel and the numpy baseline, not timed
    for label, edit in EDITS:
        start = time.perf_counter()
        assert edit(ex), f"{label}: {ex.last_error}"
        times["IR-only update"].append(time.perf_counter() - start)
        while getattr(ex, "legal", None) is None:  # the table arrives from a worker thread
            time.sleep(0.0005)
        times["legality table"].append(time.perf_counter() - start)
        for future in list(ex._views_pending):
            future.result()
        times["views"].append(time.perf_counter() - start)
        if "drawing_s" in getattr(ex, "timings", {}):
            times.setdefault("loop-nest drawing", []).append(ex.timings["drawing_s"])
        ex.runner.wait()
        assert ex.node.measurement is not None
        times["measured update"].append(time.perf_counter() - start)
        for part, seconds in getattr(ex.runner, "last_timings", {}).items():
            times.setdefault(f"  of which {part}", []).append(seconds)
        parent = ex.node.parent
        ex.jump(parent)
        start = time.perf_counter()
        ex.jump(ex.history.children(parent)[-1])
        assert "cached" in ex.views["status"].value
        for future in list(ex._views_pending):  # the revisit's panes too
            future.result()
        times["cached revisit"].append(time.perf_counter() - start)
        ex.wait()
    ex.runner.close()
    return times


def main() -> None:
    args = parser(__doc__.splitlines()[0]).parse_args()
    n = 64 if args.quick else 512
    rounds = args.rounds or (1 if args.quick else 3)
    all_times: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="wb-bench-explorer-") as root:
        for r in range(rounds):
            os.environ["WORKBENCH_CACHE_DIR"] = os.path.join(root, f"round-{r}")
            clear_memory_cache()
            for key, values in one_round(n).items():
                all_times.setdefault(key, []).extend(values)
            print(f"  round {r + 1}/{rounds}: " + ", ".join(
                f"{k} {median(v):.3f} s" for k, v in all_times.items()))
        os.environ.pop("WORKBENCH_CACHE_DIR")
    targets = {"IR-only update": "<= 0.1 s", "measured update": "<= 1.5 s",
               "cached revisit": "at once"}
    rows = [[key, f"{median(v):.3f}", f"{min(v):.3f}", f"{max(v):.3f}", str(len(v)),
             targets.get(key, "")] for key, v in all_times.items()]
    table = markdown_table(["interaction", "median s", "min s", "max s", "edits", "target"],
                           rows)
    print(table)
    if args.quick or args.no_write:
        return
    body = "\n".join([
        f"## Explorer interaction latency, matmul {n} float32, CPU",
        "",
        f"Command: `{command_line()}`",
        "",
        *machine_lines(),
        f"- protocol: {rounds} rounds of {len(EDITS)} edits ({', '.join(e[0] for e in EDITS)}) "
        "on a fresh `wb.explore`; kernel caches cold per round; measurement budget 0.3 s, "
        "debounce 0.2 s (since the explorer branch skipped for an edit made while the runner "
        "is idle, which every edit here is; before it, included in the measured update); "
        "peaks given, not measured.",
        "",
        table,
    ])
    write_section("bench_explorer_latency.py", body)


if __name__ == "__main__":
    main()
