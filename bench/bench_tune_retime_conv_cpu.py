"""Re-time the best conv2d kernel a bench_tune_ops_cpu.py run recorded (argument: its
records folder, bench-tune-ops-*) side by side with the hand schedule, numpy and torch."""

import sys

sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
import numpy as np
import torch
from bench_tune_ops_cpu import conv_hand, numpy_conv
from benchlib import interleaved_rounds, markdown_table, median, ratios, time_calls

import workbench as wb
from workbench import ops
from workbench.schedule import Trace
from workbench.tune.database import Database, workload_key

func = ops.conv2d_nchw(1, 64, 56, 56, 64, 3, 3)
rng = np.random.default_rng(0)
data = rng.standard_normal((1, 64, 56, 56)).astype(np.float32)
weight = rng.standard_normal((64, 64, 3, 3)).astype(np.float32)
out = np.empty((1, 64, 56, 56), np.float32)
expected = numpy_conv(data.astype(np.float64), weight.astype(np.float64))
best = Database(f"{sys.argv[1]}/conv2d_nchw-evolutionary.jsonl").best(
    workload_key(func, "cpu"), "cpu"
)
cands = {}
for label, k in [
    ("tuned", wb.build(Trace.from_json(best.trace).apply(func), target="cpu")),
    ("hand", wb.build(conv_hand(func), target="cpu")),
]:
    out[...] = np.nan
    k(data, weight, out)
    np.testing.assert_allclose(out, expected, rtol=1e-3, atol=1e-3)
    cands[label] = lambda k=k: time_calls(k, (data, weight, out), 5)
td, tw = torch.from_numpy(data), torch.from_numpy(weight)
cands["numpy"] = lambda: time_calls(lambda: numpy_conv(data, weight), (), 5)
cands["torch"] = lambda: time_calls(lambda: torch.nn.functional.conv2d(td, tw, padding=1), (), 5)
t = interleaved_rounds(cands, 7)
rows = [
    [
        n,
        f"{median(m) * 1e3:.2f}",
        f"{t.best(n) * 1e3:.2f}",
        f"{median(ratios(t.medians['numpy'], m)):.2f}x",
        f"{median(ratios(t.medians['hand'], m)):.2f}x",
    ]
    for n, m in t.medians.items()
]
print(
    markdown_table(
        ["candidate", "median ms", "best call ms", "speed vs numpy", "speed vs hand"], rows
    )
)
