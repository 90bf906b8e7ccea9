"""Compile time per schedule change: matmul 512 float32, one schedule step at a time.

A user in a notebook changes the schedule and rebuilds; this measures what that costs.
The steps (each a complete schedule, built from scratch):

1. naive ``i, j, k`` loops;
2. ``reorder(i, k, j)``;
3. ``+ parallel(i)``;
4. ``+ vectorize(j)``;
5. tiled: ``split`` i by 8 and j by 32, ``reorder(i_0, j_0, k, i_1, j_1)``;
6. ``+ parallel(i_0)``;
7. ``+ unroll(i_1), vectorize(j_1)``;
8. the best loop-only schedule of ``bench_matmul_cpu.py`` (4x64 tile, K split by 128).

Every repeat builds every step with both kernel caches missed: the in-memory cache is
cleared (``workbench.backends.cpu.numba_cpu.clear_memory_cache``) and ``WORKBENCH_CACHE_DIR``
points at a new empty directory, so Numba compiles and never loads from disk. A first,
untimed parallel build pays Numba's one-time start-up (its threading layer, its
parfors machinery), reported on its own. Time = the wall time of ``wb.build`` (lowering,
code generation, import, Numba compile); the Numba part is shown too.

``--models cnn,resnet18`` measures a model's ``wb.compile`` instead (batch 1; ``cnn`` is
``bench_graph_models.CNN`` on 32x32, ``resnet18`` torchvision's on 224x224): per round and
model, a **cold** compile (fresh process, empty ``WORKBENCH_CACHE_DIR``) then a **warm** one
(fresh process, the cache the cold one filled: Numba loads, nothing compiles); time = wall and
CPU time (this process plus its worker processes) of the ``wb.compile`` call alone, imports
and model construction excluded; medians over interleaved rounds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_matmul_cpu import schedule_best
from benchlib import command_line, machine_lines, markdown_table, median, parser, write_section

import workbench as wb
from workbench import ops
from workbench.backends.cpu.numba_cpu import clear_memory_cache
from workbench.ir import PrimFunc

TARGET_S = 1.5  # the budget for a parallel matmul 512 build


def steps(n: int) -> dict[str, PrimFunc]:
    """The scheduled function after each step, by label."""
    result = {}
    sch = wb.Schedule(ops.matmul(n, n, n))
    result["1 naive"] = sch.mod
    i, j, k = sch.get_loops(sch.get_block("C"))
    sch.reorder(i, k, j)
    result["2 reorder(i, k, j)"] = sch.mod
    sch.parallel(i)
    result["3 + parallel(i)"] = sch.mod
    sch.vectorize(j)
    result["4 + vectorize(j)"] = sch.mod

    sch = wb.Schedule(ops.matmul(n, n, n))
    i, j, k = sch.get_loops(sch.get_block("C"))
    i0, i1 = sch.split(i, factors=[None, 8])
    j0, j1 = sch.split(j, factors=[None, 32])
    sch.reorder(i0, j0, k, i1, j1)
    result["5 tiled 8x32"] = sch.mod
    sch.parallel(i0)
    result["6 + parallel(i_0)"] = sch.mod
    sch.unroll(i1)
    sch.vectorize(j1)
    result["7 + unroll(i_1), vectorize(j_1)"] = sch.mod
    small = {} if n >= 512 else dict(tj=32, tk=32)
    result["8 best (4x64, K by 128)"] = schedule_best(n, **small).mod
    return result


def timed_build(func: PrimFunc) -> tuple[float, float, float]:
    """(wall s, CPU s of this process, Numba's share of the wall s) of one fresh build."""
    start, start_cpu = time.perf_counter(), time.process_time()
    kernel = wb.build(func, target="cpu")
    wall, cpu = time.perf_counter() - start, time.process_time() - start_cpu
    assert kernel.cache_hit is None, f"expected a fresh compile, got a {kernel.cache_hit} hit"
    return wall, cpu, kernel.compile_seconds


MODEL_CODE = """
import json, resource, sys, time
sys.path.insert(0, {bench!r})
import torch
import workbench as wb
torch.manual_seed(0)
if {name!r} == "cnn":
    from bench_graph_models import CNN
    model, x = CNN().eval(), torch.randn(1, 3, 32, 32)
else:
    from bench_models_cpu import model_and_input
    model, x = model_and_input({name!r}, 1)
def cpu():
    usage = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    return sum(u.ru_utime + u.ru_stime for u in usage)
wall, start = time.perf_counter(), cpu()
compiled = wb.compile(model, (x,), progress=False)
print(json.dumps(dict(wall=time.perf_counter() - wall, cpu=cpu() - start,
                      stats=str(compiled.build_stats))))
"""


def model_compile(name: str, cache: str) -> dict:
    """One ``wb.compile`` of ``name`` in a fresh process with ``cache`` as its kernel cache."""
    bench = str(Path(__file__).resolve().parent)
    env = {**os.environ, "WORKBENCH_CACHE_DIR": cache}
    out = subprocess.run([sys.executable, "-c", MODEL_CODE.format(bench=bench, name=name)],
                         env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main_models(names: list[str], rounds: int) -> None:
    """Cold then warm ``wb.compile`` of each model, interleaved rounds; medians printed."""
    times = {(name, kind): [] for name in names for kind in ("cold", "warm")}
    with tempfile.TemporaryDirectory(prefix="wb-bench-compile-") as root:
        for r in range(rounds):
            for name in names:
                cache = os.path.join(root, f"{name}-{r}")
                for kind in ("cold", "warm"):
                    result = model_compile(name, cache)
                    times[name, kind].append(result)
                    print(f"  round {r + 1}/{rounds} {name} {kind}: {result['wall']:.2f} s wall, "
                          f"{result['cpu']:.2f} s CPU, load {os.getloadavg()[0]:.1f}, "
                          f"{result['stats']}", flush=True)
    rows = [[name, kind, f"{median([t['cpu'] for t in ts]):.2f}",
             f"{median([t['wall'] for t in ts]):.2f}",
             " ".join(f"{t['cpu']:.2f}" for t in ts)]
            for (name, kind), ts in times.items()]
    print(markdown_table(["model (batch 1)", "kernel cache", "median CPU s", "median wall s",
                          "per round CPU s"], rows))


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--models", default="", help="cnn,resnet18: a model's wb.compile, cold "
                   "and warm, instead of the matmul steps (prints only)")
    args = p.parse_args()
    if args.models:
        main_models(args.models.split(","), args.rounds or 3)
        return
    n = 64 if args.quick else 512
    repeats = args.rounds or (1 if args.quick else 5)
    schedules = steps(n)
    if args.quick:
        schedules = {label: schedules[label] for label in ("1 naive", "3 + parallel(i)")}

    with tempfile.TemporaryDirectory(prefix="wb-bench-compile-") as root:
        os.environ["WORKBENCH_CACHE_DIR"] = os.path.join(root, "warm-up")
        first_wall, _, _ = timed_build(schedules["3 + parallel(i)"])
        print(f"first parallel build in this process (Numba start-up): {first_wall:.2f} s")
        walls = {label: [] for label in schedules}
        numba_s = {label: [] for label in schedules}
        cpu_s = {label: [] for label in schedules}
        for r in range(repeats):
            os.environ["WORKBENCH_CACHE_DIR"] = os.path.join(root, f"repeat-{r}")
            for label, sch in schedules.items():
                clear_memory_cache()
                wall, cpu, numba_part = timed_build(sch)
                walls[label].append(wall)
                cpu_s[label].append(cpu)
                numba_s[label].append(numba_part)
            print(f"  repeat {r + 1}/{repeats}: " + ", ".join(
                f"{label.split()[0]}: {walls[label][-1]:.2f} s" for label in schedules))
        os.environ.pop("WORKBENCH_CACHE_DIR")
    clear_memory_cache()

    rows = [[label, f"{median(walls[label]):.2f}", f"{median(numba_s[label]):.2f}",
             f"{median(cpu_s[label]):.2f}", " ".join(f"{x:.2f}" for x in walls[label])]
            for label in schedules]
    table = markdown_table(["step", "median build s (wall)", "of which Numba s",
                            "median CPU s", "per repeat s (wall)"], rows)
    print(table)
    parallel_labels = [label for label in schedules if "parallel" in label or "best" in label]
    worst = max(median(walls[label]) for label in parallel_labels)
    worst_cpu = max(median(cpu_s[label]) for label in parallel_labels)
    print(f"slowest parallel matmul {n} build (median): {worst:.2f} s wall, "
          f"{worst_cpu:.2f} s CPU (target <= 1.5 s)")
    print(f"slowest parallel build / 1.5 s budget: {worst / TARGET_S:.2f}x wall, "
          f"{worst_cpu / TARGET_S:.2f}x CPU")

    if args.quick or args.no_write:
        return
    body = "\n".join([
        f"## Compile time per schedule change, matmul {n} float32, CPU",
        "",
        f"Command: `{command_line()}`",
        "",
        *machine_lines(),
        f"- protocol: {repeats} repeats of the whole sequence; every build misses both kernel "
        "caches (in-memory cache cleared, `WORKBENCH_CACHE_DIR` a new empty directory); "
        "time = wall time of `wb.build`; median over repeats.",
        f"- the first parallel build of the process took {first_wall:.2f} s: Numba's one-time "
        "start-up (threading layer, parfors), paid once per kernel session, not per change.",
        "",
        table,
        "",
        f"**Slowest parallel matmul {n} build: {worst:.2f} s wall, {worst_cpu:.2f} s CPU "
        "(medians)** (target <= 1.5 s). Compiling is single-threaded, so on a quiet machine "
        "the wall time is about the CPU time; on this shared one, wall time includes waiting "
        "for a core.",
    ])
    write_section("bench_compile", body)
    print("wrote the bench_compile section of bench/RESULTS.md")


if __name__ == "__main__":
    main()
