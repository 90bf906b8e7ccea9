"""layernorm 4096x4096 float32 on the CPU: the fused schedule against numpy.

Candidates, timed side by side in interleaved rounds (see ``bench/benchlib``), with the
same protocol as ``bench_softmax_cpu.py`` (all threads, then one thread):

* ``numpy``: ``mean = x.mean(1)``, ``var = ((x - mean) ** 2).mean(1)``,
  ``(x - mean) / sqrt(var + eps) * gamma + beta``;
* ``wb three passes``: ``ops.layernorm`` as written (mean, variance and normalise passes);
* ``wb fused``: ``workbench.recipes.layernorm.fused_cpu``: mean and
  variance computed at the normalise block's row loop with local row values, each reduction
  rfactor-ed into 64 vectorized partial sums, the row loop parallel, the normalise loop
  vectorized;
* ``wb fused, 16 lanes``: the same with 16 partial sums (LLVM then leaves the variance
  reduction scalar: the 16-iteration loop is unrolled before its loop vectorizer runs).

Run ``python bench/bench_layernorm_cpu.py`` (writes its section of bench/RESULTS.md) or
``--quick`` (tiny, prints only).
"""

from __future__ import annotations

import numpy as np
from bench_softmax_cpu import BASE, results_lines, run_protocol
from benchlib import command_line, machine_lines, parser, time_calls, write_section

import workbench as wb
from workbench import ops, recipes
from workbench.ir.traffic import total_pass_bytes

SEED = 0
EPS = 1e-5
TARGET = "wb fused"


def numpy_layernorm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray) -> np.ndarray:
    mean = x.mean(axis=1, keepdims=True)
    centred = x - mean
    var = (centred * centred).mean(axis=1, keepdims=True)
    return centred / np.sqrt(var + EPS) * gamma + beta


def main() -> None:
    args = parser(__doc__.splitlines()[0]).parse_args()
    m = n = 256 if args.quick else 4096
    rounds = args.rounds or (2 if args.quick else 7)
    repeats = 3 if args.quick else 5

    rng = np.random.default_rng(SEED)
    x = (rng.standard_normal((m, n)) * 3 + 5).astype(np.float32)
    gamma = rng.standard_normal(n).astype(np.float32)
    beta = rng.standard_normal(n).astype(np.float32)
    out = np.empty_like(x)
    expected = ops.reference.layernorm(x, gamma, beta, eps=EPS)

    print(f"layernorm {m}x{n} float32, {rounds} rounds x {repeats} calls")
    funcs = {
        "wb three passes": ops.layernorm(m, n, EPS),
        TARGET: recipes.layernorm.fused_cpu(ops.layernorm(m, n, EPS)),
        "wb fused, 16 lanes": recipes.layernorm.fused_cpu(ops.layernorm(m, n, EPS), lanes=16),
    }
    byte_counts = {BASE: 2 * x.nbytes}
    candidates = {BASE: lambda: time_calls(numpy_layernorm, (x, gamma, beta), repeats)}
    reports = {}
    for name, func_or_sch in funcs.items():
        kernel = wb.build(func_or_sch, target="cpu")
        out.fill(np.nan)
        kernel(x, gamma, beta, out)
        np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4, err_msg=name)
        print(f"  {name}: checked against numpy (compile {kernel.compile_seconds:.2f} s)")
        byte_counts[name] = total_pass_bytes(kernel.func)
        candidates[name] = lambda k=kernel: time_calls(k, (x, gamma, beta, out), repeats)
        reports[name] = kernel.vectorization_report()
    np.testing.assert_allclose(numpy_layernorm(x, gamma, beta), expected, rtol=1e-4, atol=1e-4)
    print(reports[TARGET])

    results = run_protocol(candidates, byte_counts, rounds, TARGET, args.quick)
    if args.quick or args.no_write:
        return

    lines, lowest = results_lines(results, TARGET, None)
    body = [
        f"## layernorm {m}x{n} float32, CPU: fused schedule vs numpy",
        "",
        f"Command: `{command_line()}`",
        "",
        *machine_lines(),
        f"- protocol: {rounds} interleaved rounds, each candidate's time per round the median "
        f"of {repeats} calls (after 1 warm-up call) on the same arrays; speed = numpy time / "
        "candidate time, per round, then the median over rounds. Every kernel was checked "
        "against a float64 reference (rtol 1e-4) on inputs ~ N(5, 3^2) first. Then the same "
        "with one thread for every candidate (`numba.set_num_threads(1)`).",
        "- GB/s counts the DRAM bytes of each function (`ir.traffic.pass_traffic`); numpy's "
        "row counts one read and one write (it makes about six passes with temporaries).",
        *lines,
        "",
        f"No target was set for layernorm; lowest of the `{TARGET}` figures above: "
        f"{lowest:.2f}x numpy.",
        "",
        "Reading: numpy makes about six passes with temporaries (mean, subtract, square, "
        "mean, divide, scale, shift), so even the unscheduled three-pass kernel beats it. "
        "Fusion saves two reads of `A` per element (the pass model: 4 passes of 64 MiB "
        "down to 2), yet gains much less than that over `wb three passes`, whose plain sum "
        "reductions already vectorize; why the fused kernel runs below the bandwidth the "
        "three-pass one reaches was not analysed (the per-row `1 / sqrt(var + eps)` is "
        "hoisted: the LLVM IR has only a scalar `llvm.sqrt.f32`). With 16 lanes the "
        "variance reduction stays scalar (see the report below), hence the 64.",
        "",
        "The fused schedule, as a trace:",
        "",
        "```python",
        str(funcs[TARGET].trace).rstrip(),
        "```",
        "",
        f"Vectorization of `{TARGET}` and of `wb fused, 16 lanes` "
        "(`kernel.vectorization_report()`):",
        "",
        "```",
        str(reports[TARGET]),
        "",
        str(reports["wb fused, 16 lanes"]),
        "```",
    ]
    write_section("bench_layernorm_cpu", "\n".join(body))
    print("wrote the bench_layernorm_cpu section of bench/RESULTS.md")


if __name__ == "__main__":
    main()
