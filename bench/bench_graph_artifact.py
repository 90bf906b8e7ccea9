"""Deployment: first-call latency of a loaded artifact against a fresh ``wb.compile``.

Offline, the small CNN of ``bench_graph_models.py`` (batch 1) is compiled and saved. Then,
each in a fresh Python process (``--rounds`` times, alternating):

- **load, cold**: ``wb.load(folder)`` and the first call with an empty user kernel cache (no
  torch import; the files are checked by hash, every kernel generated again from its trace
  and compiled: artifacts ship no machine code, see docs/decisions.md);
- **load, warm**: the same again with that cache (what every later load on the machine
  pays: nothing is compiled);
- **compile**: import torch, ``wb.compile(model, example)`` and the first call, with the
  kernel cache pointed at an empty directory (what a cold deployment without an artifact
  pays).

Run: ``.venv/bin/python bench/bench_graph_artifact.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from benchlib import (
    command_line,
    load_average,
    machine_lines,
    markdown_table,
    median,
    parser,
    write_section,
)

ROOT = Path(__file__).resolve().parents[1]

LOAD = """
import time, json; t0 = time.perf_counter()
import numpy as np, workbench as wb
from workbench.graph.artifact import compile_free
model = wb.load({folder!r}); t1 = time.perf_counter()
model(np.load({x!r})); t2 = time.perf_counter()
print(json.dumps({{"ready_s": t1 - t0, "first_call_s": t2 - t1, "total_s": t2 - t0,
                  "compile_free": compile_free(model)}}))
"""

COMPILE = """
import time, json; t0 = time.perf_counter()
import sys; sys.path.insert(0, {bench!r})
import numpy as np, torch, workbench as wb
from bench_graph_models import CNN, _randomize
model = _randomize(CNN()); x = torch.from_numpy(np.load({x!r}))
compiled = wb.compile(model, (x,)); t1 = time.perf_counter()
compiled(x); t2 = time.perf_counter()
print(json.dumps({{"ready_s": t1 - t0, "first_call_s": t2 - t1, "total_s": t2 - t0}}))
"""


def _run(code: str, env: dict) -> dict:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    args = parser(__doc__.splitlines()[0]).parse_args()
    rounds = args.rounds or (1 if args.quick else 3)
    import numpy as np
    import torch
    from bench_graph_models import CNN, _randomize

    import workbench as wb

    work = Path(tempfile.mkdtemp())
    torch.manual_seed(1)
    x = torch.randn(1, 3, 32, 32)
    np.save(work / "x.npy", x.numpy())
    compiled = wb.compile(_randomize(CNN()), (x,))
    compiled.save(work / "artifact")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    results = {"load, cold": [], "load, warm": [], "compile": []}
    load = LOAD.format(folder=str(work / "artifact"), x=str(work / "x.npy"))
    for r in range(rounds):
        cold = dict(env, WORKBENCH_CACHE_DIR=str(work / f"cold{r}"))
        user = dict(env, WORKBENCH_CACHE_DIR=str(work / f"user{r}"))
        results["load, cold"].append(_run(load, user))
        results["load, warm"].append(_run(load, user))
        results["compile"].append(_run(COMPILE.format(bench=str(ROOT / "bench"),
                                                      x=str(work / "x.npy")), cold))
        print(f"  round {r + 1}: " + ", ".join(f"{k} {v[-1]}" for k, v in results.items()))
    rows = []
    for name, runs in results.items():
        rows.append([name] + [f"{median([run[k] for run in runs]):.2f}"
                              for k in ("ready_s", "first_call_s", "total_s")])
    ratios = {name: median([c["total_s"] for c in results["compile"]]) /
              median([ld["total_s"] for ld in results[name]])
              for name in ("load, cold", "load, warm")}
    body = "\n".join([
        "## graph level: loaded artifact vs fresh wb.compile (first call, fresh process)", "",
        f"Command: `{command_line()}`", "",
        *machine_lines(),
        f"- load average at the end: {load_average()}",
        f"- model: bench_graph_models.CNN, batch 1; {rounds} round(s), medians; every warm "
        f"load was compile-free: {all(r['compile_free'] for r in results['load, warm'])}",
        "",
        markdown_table(["path", "ready s (import + load/compile)", "first call s",
                        "process total s"], rows), "",
        f"Loaded artifact to first output: {ratios['load, cold']:.1f}x faster than compiling "
        f"from scratch with a cold kernel cache, {ratios['load, warm']:.1f}x with a warm one.",
    ])
    print(body)
    if not args.quick and not args.no_write:
        write_section("bench_graph_artifact", body)


if __name__ == "__main__":
    main()
