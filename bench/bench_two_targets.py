"""One schedule, two targets: the schedules measured on the H200 run on this CPU too.

For each operator family, the CUDA recipe measured on the H200 (``bench/gpu``) is built for
the ``cpu`` target here (its bound loops become serial loops: the same loop nest, one thread)
and timed next to the CPU's own recipe for the operator, in interleaved rounds. The H200
column is read from the device runs' JSON in ``bench/gpu/results/`` (no GPU here), so the
table puts side by side what one schedule language gives on both machines; the CPU and GPU
figures come from different runs.

Families: matmul (``matmul/register_blocked/cuda`` vs ``matmul/packed/cpu``; 1024 here,
4096 on the H200), row softmax (``softmax/block_per_row/cuda`` vs ``softmax/fused/cpu``;
8192 x 8192 on both) and the elementwise chain ``gelu((a+b)*c)`` (``add_mul_gelu/v4/cuda``
vs the chain inlined, rows parallel, columns vectorized; 4096 x 4096 on both).

``--quick``: tiny sizes, prints only.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from benchlib import (
    REPO_ROOT,
    command_line,
    interleaved_rounds,
    load_average,
    machine_lines,
    markdown_table,
    median,
    parser,
    time_calls,
    write_section,
)

import workbench as wb
from workbench import ops, recipes
from workbench.schedule import Schedule

GPU_RESULTS = REPO_ROOT / "bench" / "gpu" / "results"


def elementwise_cpu(func) -> Schedule:
    """The chain inlined into its last block, rows parallel, columns vectorized."""
    sch = Schedule(func)
    for producer in sch.get_child_blocks(sch.get_block("root"))[:-1]:
        sch.compute_inline(producer)
    rows, cols = sch.get_loops(sch.get_child_blocks(sch.get_block("root"))[-1])
    sch.parallel(rows)
    sch.vectorize(cols)
    return sch


def h200_figures() -> dict[str, tuple[float, str]]:
    """Milliseconds of each family's CUDA recipe on the H200, from the device runs' JSON."""
    found: dict[str, tuple[float, str]] = {}
    for name in ("cudamem.json", "cudamem_unroll.json"):
        path = GPU_RESULTS / name
        if not path.exists():
            continue
        for row in json.loads(path.read_text()):
            bench = row.get("bench", "")
            if bench.startswith("sgemm 4096") and "register_blocked" in bench:
                best = found.get("matmul")
                if best is None or row["workbench_ms"] < best[0]:
                    found["matmul"] = (row["workbench_ms"], "4096, " + path.name)
            if bench.startswith("elementwise gelu((a+b)*c) 4096x4096 v4 (256 threads"):
                found["add_mul_gelu"] = (row["workbench_ms"], "4096 x 4096, " + path.name)
    path = GPU_RESULTS / "cudared_bench_cuda_reduce.json"
    if path.exists():
        for row in json.loads(path.read_text()):
            # the recipe's defaults: 512 threads per row, the row not staged in shared memory
            if row.get("bench", "").startswith("softmax 8192x8192 block_per_row threads=512 "
                                               "stage=None"):
                found["softmax"] = (row["workbench_ms"], "8192 x 8192, " + path.name)
    return found


def main() -> None:
    args = parser(__doc__.splitlines()[0]).parse_args()
    quick = args.quick
    rounds = args.rounds or (1 if quick else 5)
    repeats = 1 if quick else 5
    rng = np.random.default_rng(0)
    n_mm = 128 if quick else 1024
    rows_sm = 64 if quick else 8192
    n_ew = 1024 if quick else 4096

    families = {
        "matmul": (ops.matmul(n_mm, n_mm, n_mm),
                   recipes.get("matmul", "register_blocked", "cuda"),
                   recipes.get("matmul", "packed", "cpu"), f"{n_mm}^3"),
        "softmax": (ops.softmax(rows_sm, rows_sm),
                    recipes.get("softmax", "block_per_row", "cuda"),
                    recipes.get("softmax", "fused", "cpu"), f"{rows_sm} x {rows_sm}"),
        "add_mul_gelu": (ops.add_mul_gelu(n_ew, n_ew),
                         recipes.get("add_mul_gelu", "v4", "cuda"),
                         elementwise_cpu, f"{n_ew} x {n_ew}"),
    }
    gpu = h200_figures()
    table = []
    for family, (func, cuda_recipe, cpu_recipe, size) in families.items():
        arrays = [rng.uniform(-1, 1, tuple(p.shape)).astype(p.dtype) for p in func.params]
        want = arrays[-1].copy()
        wb.build(func, target="numpy")(*arrays[:-1], want)
        kernels = {
            "cuda schedule on cpu": wb.build(cuda_recipe(func), target="cpu"),
            "cpu recipe": wb.build(cpu_recipe(func), target="cpu"),
        }
        for name, kernel in kernels.items():
            out = np.full_like(want, np.nan)
            kernel(*arrays[:-1], out)
            np.testing.assert_allclose(out, want, rtol=1e-3, atol=1e-3, err_msg=f"{family} {name}")
        calls = tuple(arrays)
        result = interleaved_rounds(
            {name: (lambda k=k, a=calls: time_calls(k, a, repeats)) for name, k in kernels.items()},
            rounds,
        )
        on_cpu = {name: median(result.medians[name]) * 1e3 for name in kernels}
        gpu_ms, gpu_where = gpu.get(family, (float("nan"), "not measured"))
        table.append([
            family, size, f"{on_cpu['cuda schedule on cpu']:.2f}", f"{on_cpu['cpu recipe']:.2f}",
            f"{gpu_ms:.4f}" if gpu_ms == gpu_ms else "n/a", gpu_where,
        ])
    header = ["family", "size (cpu)", "cuda recipe on this cpu, ms", "cpu recipe, ms",
              "cuda recipe on the H200, ms", "H200 size, source"]
    text = markdown_table(header, table)
    print(text)
    if quick or args.no_write:
        return
    body = "\n".join([
        "## One schedule, two targets: the H200 recipes on this CPU",
        "",
        f"Command: `{command_line()}`",
        "",
        *machine_lines(),
        f"- load average at the end: {load_average()} (2 cores)",
        f"- protocol: {rounds} interleaved rounds, median of {repeats} calls each, outputs "
        "checked against the numpy reference first; the H200 column is read from "
        "`bench/gpu/results/*.json` (the device runs of 2026-12-03), not measured here.",
        "",
        text,
        "",
        "The CUDA recipes' bound loops run as serial loops on the CPU (one thread, no "
        "shared memory, no shuffles): the same loop nest, for reading both targets' code side "
        "by side (notebook 04), not a CPU schedule; each target's own recipe is the one to "
        "compare across machines.",
    ])
    write_section("bench_two_targets", body)
    print(f"wrote the bench_two_targets section of {Path('bench/RESULTS.md')}")


if __name__ == "__main__":
    main()
