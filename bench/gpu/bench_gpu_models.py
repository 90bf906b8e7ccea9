"""Issue 20, whole models on the H200: the workbench's default cuda schedules, graph-captured,
against torch eager, ``torch.compile`` (default) and ``torch.compile(mode="reduce-overhead")``,
fp32, TF32 off, in one run under a deadline, one JSON (rewritten after every model).

    python3 bench/gpu/bench_gpu_models.py --out $OUT --deadline 380

Models (each skipped with a note once the deadline is near; batch 16 first): the
transformer block of ``tests/graph/graph_models.py`` at d 256 (4 heads) and d 768 (12
heads), 128 tokens, batch 16 and 1; a GPT-2-small config (transformers, random weights,
batch 8, 128 tokens; a frontend error is recorded); resnet18 (torchvision, random weights)
at batch 16 and 1, 224^2; ``tune_model`` on the d 256 block at batch 16 (the three slowest
kernels, a small budget): default vs tuned per kernel. Per row: device ms per call (CUDA
events around up to 30 calls), host us per call (wall time of issuing them), rel. L2
error against torch eager; per workbench model the per-kernel device times
(``latency_report``).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import time
import traceback

import numpy as np

if not hasattr(np, "row_stack"):
    np.row_stack = np.vstack  # numba-cuda 0.30 on numpy 2.5
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_gpu_e2e import measure, rel_err  # noqa: E402

START = time.perf_counter()


def left(args) -> float:
    return args.deadline - (time.perf_counter() - START)


def models(args):
    import torch

    from tests.graph.graph_models import Block

    def block(dim, heads, batch):
        return (f"block d{dim} b{batch}", lambda: Block(dim, heads),
                lambda: torch.randn(batch, 128, dim))

    def resnet():
        import torchvision

        return torchvision.models.resnet18(weights=None)

    def gpt2():
        import transformers

        config = transformers.GPT2Config(n_layer=12, n_head=12, n_embd=768, n_positions=128,
                                         use_cache=False)
        model = transformers.GPT2Model(config)
        model.config.return_dict = False
        return model
    # the batch-16 models and the tune table first: the deadline may cut the rest
    yield block(256, 4, 16)
    yield "resnet18 b16", resnet, (lambda: torch.randn(16, 3, 224, 224))
    yield "gpt2-small b8", gpt2, (lambda: torch.randint(0, 50257, (8, 128)))
    yield block(768, 12, 16)
    yield "tune_model", None, None
    yield block(256, 4, 1)
    yield "resnet18 b1", resnet, (lambda: torch.randn(1, 3, 224, 224))
    yield block(768, 12, 1)


def run_model(args, name, make, make_x) -> dict:
    import torch

    import workbench as wb

    torch.manual_seed(0)
    model = make().eval()
    x = make_x()
    out: dict = {"shape": list(x.shape)}
    gpu_model = copy.deepcopy(model).cuda()
    xd = x.cuda()
    rows = {}
    with torch.no_grad():
        want = gpu_model(xd)
        want = want[0] if isinstance(want, tuple) else want
        rows["torch eager"] = measure(torch, lambda: gpu_model(xd), None, n=args.n)
        print(name, "eager", rows["torch eager"]["device_ms"], flush=True)
        try:
            start = time.perf_counter()
            compiled = wb.compile(model, (x,), target="cuda")
            out["compile_s"] = time.perf_counter() - start
            out["kernels"] = len(compiled.kernels)
            start = time.perf_counter()
            got = compiled(xd)
            got = got[0] if isinstance(got, tuple | list) else got
            torch.cuda.synchronize()
            out["first_call_s"] = time.perf_counter() - start
            compiled(xd)
            torch.cuda.synchronize()
            start = time.perf_counter()
            compiled(xd)
            torch.cuda.synchronize()
            once = time.perf_counter() - start
            n = max(3, min(args.n, int(0.2 / max(once, 1e-6))))  # slow models: fewer calls
            row = measure(torch, lambda: compiled(xd), len(compiled.kernels), n=n,
                          rounds=5 if n >= 10 else 3)
            row["calls_per_round"] = n
            row["rel_err"] = rel_err(torch, got, want)
            rows["workbench graph"] = row
            frame = compiled.latency_report(xd, repeat=5 if n >= 10 else 2)
            out["kernel_device_us"] = [
                {"kernel": k, "pattern": p, "median_us": float(u)}
                for k, p, u in zip(frame["kernel"], frame["pattern"], frame["median_us"],
                                   strict=True)]
            out["schedules"] = {k.node: [s.primitive for s in k.schedule.trace][:8]
                                for k in compiled.kernels}
        except Exception as err:  # noqa: BLE001 - recorded, the run goes on
            rows["workbench graph"] = {"error": f"{type(err).__name__}: {err}"[:800],
                                       "traceback": traceback.format_exc()[-2000:]}
        print(name, "workbench", {k: v for k, v in rows["workbench graph"].items()
                                  if not k.endswith("_all") and k != "traceback"}, flush=True)
        for label, kwargs in (("torch.compile", {}),
                              ("torch.compile reduce-overhead", {"mode": "reduce-overhead"})):
            if args.no_compile:
                rows[label] = {"skipped": "--no-compile"}
                continue
            if left(args) < 40 or "error" in rows["workbench graph"]:
                rows[label] = {"skipped": "deadline" if left(args) < 40 else
                               "the workbench could not compile this model"}
                continue
            try:
                fn = torch.compile(copy.deepcopy(gpu_model), **kwargs)
                start = time.perf_counter()
                got = fn(xd)
                got = (got[0] if isinstance(got, tuple) else got).clone()
                torch.cuda.synchronize()
                compile_s = time.perf_counter() - start
                step = torch.compiler.cudagraph_mark_step_begin

                def call(fn=fn, step=step, graphs="mode" in kwargs):
                    if graphs:
                        step()
                    return fn(xd)

                row = measure(torch, call, None, n=args.n)
                row.update(compile_s=compile_s, rel_err=rel_err(torch, got, want))
                rows[label] = row
            except Exception as err:  # noqa: BLE001
                rows[label] = {"error": f"{type(err).__name__}: {err}"[:500]}
            print(name, label, rows[label].get("device_ms"), rows[label].get("host_us"),
                  flush=True)
    eager = rows["torch eager"]["device_ms"]
    for row in rows.values():
        if "device_ms" in row:
            row["speed_vs_eager"] = eager / row["device_ms"]
    out["rows"] = rows
    return out


def run_tune(args) -> dict:
    import torch

    from tests.graph.graph_models import Block
    from workbench.tune.model import tune_model
    from workbench.tune.runner import LocalRunner

    torch.manual_seed(0)
    model = Block(256, 4).eval()
    x = torch.randn(16, 128, 256)
    db = os.path.join(args.out, "tune_block.jsonl")
    budget = max(20.0, min(args.tune_budget, left(args) - 70))
    with LocalRunner(n_build=4, measure_timeout_s=60) as runner:
        result = tune_model(model, (x,), target="cuda", db=db, time_budget_s=budget, top=3,
                            trials=args.trials, runner=runner, resume=False)
    table = result.table()
    return {"budget_s": budget, "wall_s": result.wall_s,
            "table": json.loads(table.to_json(orient="records")),
            "tuned": {node: {"records": len(r.records), "ok": sum(x.ok for x in r.records)}
                      for node, r in result.tuned.items()}}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=".")
    parser.add_argument("--deadline", type=float, default=380.0)
    parser.add_argument("--n", type=int, default=30)
    parser.add_argument("--only", default="")
    parser.add_argument("--tune-budget", type=float, default=40.0)
    parser.add_argument("--trials", type=int, default=6)
    parser.add_argument("--no-compile", action="store_true",
                        help="skip the torch.compile rows (their compile time is most of a run)")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    result: dict = {"argv": sys.argv, "started": time.strftime("%F %T"),
                    "device": torch.cuda.get_device_name(), "torch": torch.__version__,
                    "models": {}}
    path = os.path.join(args.out, "models.json")

    def save():
        with open(path, "w") as f:
            json.dump(result, f, indent=1, default=str)

    for name, make, make_x in models(args):
        if args.only and not any(p in name for p in args.only.split(",")):
            continue
        if make is None:
            if left(args) > 80:
                try:
                    result["tune_model"] = run_tune(args)
                except Exception:  # noqa: BLE001
                    result["tune_model"] = {"traceback": traceback.format_exc()[-3000:]}
            else:
                result["tune_model"] = {"skipped": f"deadline ({left(args):.0f} s left)"}
            print("tune_model", result["tune_model"], flush=True)
            save()
            continue
        if left(args) < 60:
            result["models"][name] = {"skipped": "deadline"}
            continue
        try:
            result["models"][name] = run_model(args, name, make, make_x)
        except Exception:  # noqa: BLE001
            result["models"][name] = {"traceback": traceback.format_exc()[-3000:]}
            print(result["models"][name]["traceback"], flush=True)
        save()
    save()
    print(json.dumps({k: {r: v.get("device_ms") for r, v in m.get("rows", {}).items()}
                      for k, m in result["models"].items()}, indent=0), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
