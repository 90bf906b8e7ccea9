"""End to end: ``wb.compile`` against PyTorch eager and ``torch.compile`` (Inductor, CPU).

Two models, batch 1 and 16:

- a small CNN: two conv-bn-relu stages with max pooling, a conv-bn-relu, global average
  pooling, a linear head (input 3x32x32, 16/32/32 channels);
- a transformer block: layernorm, qkv linear, scaled-dot-product attention (4 heads), output
  projection with residual, layernorm, GELU MLP (x4) with residual (sequence 32, width 64).

For each: latency of torch eager, torch.compile, wb.compile (default pipeline: fused; default
schedules: library recipes, parallel where big), the same with ``parallel=False`` (every
kernel serial), and wb.compile without the fusion pass (unfused), interleaved rounds,
medians; outputs checked against torch first. Peak intermediate memory with and without the
memory plan. Compile times (wb and Inductor) are reported too.

Run: ``.venv/bin/python bench/bench_graph_models.py`` (``--quick``: batch 1 only, few rounds,
prints only; ``--results FILE``: the markdown file to write the section into).
"""

from __future__ import annotations

import os

# Before torch and Numba start their OpenMP runtimes: idle OpenMP threads sleep instead of
# spinning. With both runtimes spinning on 2 shared cores, torch's calls right after a
# parallel Numba kernel took 100x longer (measured: 0.4 ms -> 109 ms), which would flatter wb.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
from benchlib import (  # noqa: E402
    command_line,
    interleaved_rounds,
    load_average,
    machine_lines,
    markdown_table,
    median,
    parser,
    ratios,
    time_calls,
    write_section,
)
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402

import workbench as wb  # noqa: E402
from workbench.graph.passes import Pipeline, plan_memory  # noqa: E402

NOTES = """\
What limits the ratios: see the discussion under the tables (bench/results.d); the machine
is shared (2 cores, other engineers' tests and benches running: load average ~8), so
medians of parallel kernels are hit by waits for a free core; the best-call column
approximates a quiet machine.
"""


class CNN(nn.Module):
    def __init__(self):
        super().__init__()

        def stage(cin, cout):
            return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False),
                                 nn.BatchNorm2d(cout), nn.ReLU())

        self.body = nn.Sequential(stage(3, 16), nn.MaxPool2d(2), stage(16, 32), nn.MaxPool2d(2),
                                  stage(32, 32), nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        return self.head(self.body(x))


class Block(nn.Module):
    def __init__(self, dim=64, heads=4):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.fc1, self.fc2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

    def forward(self, x):
        B, L, D = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(B, L, 3, self.heads, D // self.heads) \
            .permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v)
        x = x + self.proj(a.transpose(1, 2).reshape(B, L, D))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


def _randomize(model):
    torch.manual_seed(0)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.normal_(0, 0.1)
            m.running_var.uniform_(0.5, 1.5)
    return model.eval()


def measure_model(name, model, x, rounds, log):
    log(f"== {name}")
    with torch.no_grad():
        expected = model(x).numpy()
        start = time.perf_counter()
        fused = wb.compile(model, (x,))
        wb_compile_s = time.perf_counter() - start
        serial = wb.compile(model, (x,), parallel=False)
        unfused = wb.compile(model, (x,), pipeline=Pipeline().without("fuse"))
        unplanned = plan_memory(fused.graph, reuse=False)
        inductor = torch.compile(model)
        start = time.perf_counter()
        inductor(x)
        inductor_compile_s = time.perf_counter() - start
        for candidate in (fused, serial, unfused):
            np.testing.assert_allclose(candidate(x), expected, rtol=1e-3, atol=1e-4)
        np.testing.assert_allclose(inductor(x).numpy(), expected, rtol=1e-3, atol=1e-4)
        xn = x.numpy()
        calls = 10
        candidates = {
            "torch eager": lambda: time_calls(model, (x,), calls),
            "torch.compile": lambda: time_calls(inductor, (x,), calls),
            "wb fused": lambda: time_calls(fused, (xn,), calls),
            "wb fused, serial": lambda: time_calls(serial, (xn,), calls),
            "wb unfused": lambda: time_calls(unfused, (xn,), calls),
        }
        result = interleaved_rounds(candidates, rounds, log)
    eager = result.medians["torch eager"]
    rows = []
    for cand in candidates:
        rows.append([cand, f"{median(result.medians[cand]) * 1e3:.3f}",
                     f"{median(ratios(eager, result.medians[cand])):.2f}x",
                     f"{result.best(cand) * 1e3:.3f}"])
    facts = {
        "kernels fused / unfused": f"{len(fused.kernels)} / {len(unfused.kernels)}",
        "peak intermediates with plan / without": f"{fused.memory.bytes_with_reuse / 1024:.1f}"
        f" KiB / {unplanned.bytes_with_reuse / 1024:.1f} KiB",
        "compile s (wb, first; torch.compile first call)": f"{wb_compile_s:.1f} / "
        f"{inductor_compile_s:.1f}",
        "slowest wb kernels": ", ".join(
            f"{r.pattern} {r.median_us:.0f} us" for r in
            fused.latency_report(xn, repeat=5).nlargest(3, "median_us").itertuples()),
    }
    return rows, facts


def main():
    cli = parser(__doc__.splitlines()[0])
    cli.add_argument("--results", default=None,
                     help="markdown file to write the section into (default bench/RESULTS.md)")
    args = cli.parse_args()
    rounds = args.rounds or (3 if args.quick else 5)
    batches = (1,) if args.quick else (1, 16)
    lines = []
    for batch in batches:
        for name, model, shape in (("small CNN", CNN(), (batch, 3, 32, 32)),
                                   ("transformer block", Block(), (batch, 32, 64))):
            torch.manual_seed(1)
            rows, facts = measure_model(f"{name}, batch {batch}", _randomize(model),
                                        torch.randn(*shape), rounds, print)
            lines.append(f"### {name}, batch {batch} (input {list(shape)})\n")
            lines.append(markdown_table(["candidate", "median ms", "speed vs eager (median of "
                                         "per-round ratios)", "best call ms"], rows))
            lines.append("")
            lines += [f"- {k}: {v}" for k, v in facts.items()]
            lines.append("")
    body = "\n".join([
        "## graph level: wb.compile vs torch eager vs torch.compile (CPU)", "",
        f"Command: `{command_line()}`", "",
        *machine_lines(),
        f"- torch {torch.__version__} ({torch.get_num_threads()} threads)",
        f"- load average at the end: {load_average()} (shared machine)",
        f"- protocol: {rounds} interleaved rounds, each the median of 10 calls after a warm-up;"
        " outputs checked against torch eager first. wb inputs are numpy arrays (no copy), "
        "outputs are returned as fresh copies.", "",
        *lines, NOTES])
    print(body)
    if not args.quick and not args.no_write:
        if args.results:
            from pathlib import Path

            write_section("bench_graph_models", body, path=Path(args.results))
        else:
            write_section("bench_graph_models", body)


if __name__ == "__main__":
    main()
