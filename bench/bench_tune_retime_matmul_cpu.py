"""Re-time the best matmul kernels a bench_tune_matmul_cpu.py run recorded (argument: its
records folder, printed as bench-tune-*) side by side with the packed schedule and numpy,
on a quieter machine than the tuning had: 7 interleaved rounds, medians of 5 calls."""

import sys

sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
import numpy as np
from benchlib import NumpyWorker, interleaved_rounds, markdown_table, median, ratios, time_calls

import workbench as wb
from workbench import ops
from workbench.recipes.matmul import packed_cpu
from workbench.schedule import Trace
from workbench.tune.database import Database, workload_key

folder = sys.argv[1]
n = 1024
flops = 2.0 * n**3
func = ops.matmul(n, n, n)
a = np.random.default_rng(0).random((n, n), dtype=np.float32)
b = np.random.default_rng(1).random((n, n), dtype=np.float32)
c = np.empty((n, n), np.float32)
cands = {}
for s in ["evolutionary", "bayesian"]:
    best = Database(f"{folder}/{s}.jsonl").best(workload_key(func, "cpu"), "cpu")
    k = wb.build(Trace.from_json(best.trace).apply(func), target="cpu")
    k(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-3, atol=1e-2)
    cands[f"tuned-{s}"] = lambda k=k: time_calls(k, (a, b, c), 5)
p = wb.build(packed_cpu(func), target="cpu")
p(a, b, c)
cands["packed (hand)"] = lambda: time_calls(p, (a, b, c), 5)
cands["numpy"] = lambda: time_calls(np.matmul, (a, b, c), 5)
with NumpyWorker() as w:
    w.request("setup", what="matmul", n=n, seed=0)
    cands["numpy-unset"] = lambda: [w.request("time", repeats=5)["median_s"]]
    t = interleaved_rounds(cands, 7)
rows = []
for name, meds in t.medians.items():
    rows.append(
        [
            name,
            f"{median(meds) * 1e3:.2f}",
            f"{flops / median(meds) / 1e9:.1f}",
            f"{flops / t.best(name) / 1e9:.1f}",
            f"{median(ratios(t.medians['numpy'], meds)):.2f}x",
            f"{median(ratios(t.medians['numpy-unset'], meds)):.2f}x",
            f"{t.best('numpy-unset') / t.best(name):.2f}x",
            f"{median(ratios(t.medians['packed (hand)'], meds)):.2f}x",
        ]
    )
print(
    markdown_table(
        [
            "candidate",
            "median ms",
            "GFLOP/s",
            "best-call GFLOP/s",
            "vs numpy (as-is)",
            "vs numpy-unset",
            "best call vs numpy-unset",
            "vs packed (hand)",
        ],
        rows,
    )
)
