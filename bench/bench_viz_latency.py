"""IR-only view latency per schedule change: matmul 512 float32, eight schedule steps.

The explorer redraws, after every schedule change, what needs no compile: the highlighted
IR (``ir_html``), the loop-nest drawing (``loop_nest_graph``, the DOT text; SVG rendering by
Graphviz's ``dot`` is timed apart when it is installed), the analytic roofline point
(``analytic_point``) and the IR diff against the previous step (``ir_diff``). The issue's
budget is <= 0.1 s for all of them together. The tile footprint of the selected loop
(``tile_footprint``, which enumerates a tile's iterations) and its access map are timed
too, outside the budget.

The steps (one Schedule, one primitive or two at a time):

1. naive ``i, j, k``; 2. ``split(i, 32)``; 3. ``split(j, 64)``; 4. ``reorder(i_0, j_0, k,
i_1, j_1)``; 5. ``parallel(i_0)``; 6. ``vectorize(j_1)``; 7. ``unroll(i_1)``;
8. ``cache_write(C, local)`` + ``reverse_compute_at(j_0)``.

Each view is called ``repeats`` times per step after one warm-up call; the median is
reported. The machine peaks are fixed numbers (no measuring).
"""

from __future__ import annotations

import time

from benchlib import (
    command_line,
    load_average,
    machine_lines,
    markdown_table,
    median,
    parser,
    write_section,
)

import workbench as wb
from workbench import ops
from workbench.measure import MachinePeaks
from workbench.viz import (
    access_map,
    analytic_point,
    ir_diff,
    ir_html,
    loop_nest_graph,
    tile_footprint,
)
from workbench.viz.loopnest import dot_available

TARGET_S = 0.1
PEAKS = MachinePeaks(gflops=470.0, gbps=40.0)


def schedule_steps(n: int):
    """(label, Schedule copy, selected loop) after each step."""
    sch = wb.Schedule(ops.matmul(n, n, n))
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    out = [("1 naive", sch.copy(), "j")]
    io, ii = sch.split(i, factors=[None, 32])
    out.append(("2 split(i, 32)", sch.copy(), "j"))
    jo, ji = sch.split(j, factors=[None, 64])
    out.append(("3 split(j, 64)", sch.copy(), "j_0"))
    sch.reorder(io, jo, k, ii, ji)
    out.append(("4 reorder", sch.copy(), "j_0"))
    sch.parallel(io)
    out.append(("5 parallel(i_0)", sch.copy(), "j_0"))
    sch.vectorize(ji)
    out.append(("6 vectorize(j_1)", sch.copy(), "j_0"))
    sch.unroll(ii)
    out.append(("7 unroll(i_1)", sch.copy(), "j_0"))
    local = sch.cache_write(block, 0, "local")
    sch.reverse_compute_at(local, jo)
    out.append(("8 cache_write + reverse_compute_at", sch.copy(), "j_0"))
    return out


CPU_TIMES: list[float] = []  # CPU seconds of each IR-only redraw (all four views)


def timed(fn, repeats: int) -> float:
    """Median wall seconds of ``repeats`` calls (after a warm-up call)."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return median(times)


def redraw_cpu(views, repeats: int) -> float:
    """Median CPU seconds (this process) of one redraw of every view: on a shared machine
    the wall time includes waiting for a core, the CPU time does not."""
    times = []
    for _ in range(repeats):
        start = time.process_time()
        for view in views:
            view()
        times.append(time.process_time() - start)
    return median(times)


def main() -> None:
    args = parser(__doc__.splitlines()[0]).parse_args()
    n = 64 if args.quick else 512
    repeats = args.rounds or (2 if args.quick else 7)
    steps = schedule_steps(n)
    rows, totals = [], []
    svg = dot_available()
    previous = steps[0][1].mod
    cpu_totals = []
    for label, sch, loop in steps:
        views = [lambda sch=sch, loop=loop: ir_html(sch, highlight=[loop]).html,
                 lambda sch=sch: loop_nest_graph(sch).source,
                 lambda sch=sch: analytic_point(sch, PEAKS),
                 lambda sch=sch, prev=previous: ir_diff(prev, sch).html]
        t_html, t_dot, t_point, t_diff = (timed(view, repeats) for view in views)
        cpu_totals.append(redraw_cpu(views, repeats))
        t_svg = (timed(lambda sch=sch: loop_nest_graph(sch).pipe(format="svg"), repeats)
                 if svg else None)
        t_foot = timed(lambda sch=sch, loop=loop: tile_footprint(sch, loop), max(repeats // 2, 1))
        t_map = timed(lambda sch=sch, loop=loop: access_map(sch, "B", tile=loop),
                      max(repeats // 2, 1))
        total = t_html + t_dot + t_point + t_diff
        totals.append(total)
        previous = sch.mod
        row = [label, f"{t_html * 1e3:.1f}", f"{t_dot * 1e3:.1f}", f"{t_point * 1e3:.1f}",
               f"{t_diff * 1e3:.1f}", f"{total * 1e3:.1f}", f"{cpu_totals[-1] * 1e3:.1f}",
               "n/a" if t_svg is None else f"{t_svg * 1e3:.1f}",
               f"{t_foot * 1e3:.1f}", f"{t_map * 1e3:.1f}"]
        rows.append(row)
        print("  " + " | ".join(row))
    table = markdown_table(["step", "ir_html ms", "loop_nest_graph ms", "analytic_point ms",
                            "ir_diff ms", "IR-only total ms", "total CPU ms", "dot SVG ms",
                            "tile_footprint ms", "access_map(B) ms"], rows)
    print(table)
    worst, worst_cpu = max(totals), max(cpu_totals)
    print(f"slowest IR-only redraw (matmul {n}): {worst * 1e3:.1f} ms wall, "
          f"{worst_cpu * 1e3:.1f} ms CPU = {worst / TARGET_S:.2f}x the 0.1 s budget (wall); "
          f"load average {load_average()}")
    if args.quick or args.no_write:
        return
    body = "\n".join([
        f"## IR-only view latency per schedule change, matmul {n} float32",
        "",
        f"Command: `{command_line()}`",
        "",
        *machine_lines(),
        f"- protocol: median of {repeats} calls per view and step after one warm-up call; "
        "IR-only total = ir_html + loop_nest_graph (DOT) + analytic_point + ir_diff.",
        "",
        table,
        "",
        f"**Slowest IR-only redraw: {worst * 1e3:.1f} ms wall, {worst_cpu * 1e3:.1f} ms CPU** "
        f"(target <= 100 ms); load average during the run: {load_average()}.",
    ])
    write_section("bench_viz_latency", body)
    print("wrote the bench_viz_latency section of bench/RESULTS.md")


if __name__ == "__main__":
    main()
