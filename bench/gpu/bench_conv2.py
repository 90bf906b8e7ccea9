"""Issue 20 item 3, helper conv: the graph's cuda conv2d default, old (``tiled``: 4 x 4-7
outputs a thread) against new (``register_tiled``: 8 x 8 at resnet's large layers, the
thread's input row and weights in registers), at every distinct resnet18 convolution, against
torch (cuDNN), fp32, TF32 off; one JSON, rewritten after every row.

    python3 bench/gpu/bench_conv2.py --out $OUT --deadline 240
    NUMBA_ENABLE_CUDASIM=1 python bench/gpu/bench_conv2.py --dry-run --out /tmp/x

Per row: device ms (CUDA events, median of 20 after 3 warm-ups, the host's launch hidden
behind a sleep: ``bench_cudamem.cuda_time``), GFLOP/s, the rel. L2 error against torch
(checked before timing), torch ms and x torch (torch ms / ours). Rows run in the order of
``CASES`` (the model's heaviest first), per case new, old, then the flipped double
buffering (``--extra``) and the batch folded (``--fold``); a row that would start after
``--deadline`` seconds is recorded as skipped. ``--dry-run``: the same
rows at tiny sizes under Numba's CUDA simulator (torch on the CPU, one call timed by the
host's clock): the kernels built and checked, no timing meaning.
"""

from __future__ import annotations

import argparse
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

# (name, batch, C, H, K, R, stride, padding, times in resnet18), the heaviest total first
CASES = (
    ("l1 3x3 64", 16, 64, 56, 64, 3, 1, 1, 4),
    ("l2 3x3 128", 16, 128, 28, 128, 3, 1, 1, 3),
    ("l3 3x3 256", 16, 256, 14, 256, 3, 1, 1, 3),
    ("l4 3x3 512", 16, 512, 7, 512, 3, 1, 1, 3),
    ("stem 7x7/2", 16, 3, 224, 64, 7, 2, 3, 1),
    ("l2 3x3/2", 16, 64, 56, 128, 3, 2, 1, 1),
    ("l3 3x3/2", 16, 128, 28, 256, 3, 2, 1, 1),
    ("l4 3x3/2", 16, 256, 14, 512, 3, 2, 1, 1),
    ("l2 1x1/2", 16, 64, 56, 128, 1, 2, 0, 1),
    ("l3 1x1/2", 16, 128, 28, 256, 1, 2, 0, 1),
    ("l4 1x1/2", 16, 256, 14, 512, 1, 2, 0, 1),
    ("stem 7x7/2 b1", 1, 3, 224, 64, 7, 2, 3, 1),
    ("l1 3x3 64 b1", 1, 64, 56, 64, 3, 1, 1, 4),
)
DRY = {"l1 3x3 64": (1, 4, 9, 8), "stem 7x7/2": (1, 3, 11, 8)}
"""``--dry-run``: (batch, C, H, K) of the two cases it runs, under the simulator."""


def variants():
    """``label -> recipe(func)``: old default, new default, the new one with double buffering
    the other way round from its default (``DOUBLE_BUFFER_MAX_TILE``)."""
    from workbench.recipes.conv2d_cuda import register_tiled, tiled

    def flipped(func):
        auto = "double_buffer_scope" in register_tiled(func).mod.script()
        return register_tiled(func, double_buffer=not auto)

    def folded(func):
        return register_tiled(func, tiling=folded_tiling(func))

    return {
        "new (register_tiled)": register_tiled,
        "old (tiled)": tiled,
        "new, double buffering flipped": flipped,
        "new, batch folded": folded,
    }


def folded_tiling(func):
    """``register_tiling``'s tile with images folded into the block up to 28 pixel threads
    whatever the image size (``conv2d_cuda.fold_images`` with no pixel limit)."""
    from workbench.recipes.conv2d_cuda import fold_images, register_tiling

    N, K, P, Q = func.params[-1].shape
    t = register_tiling(K, func.params[0].shape[1], P, Q, N)
    return fold_images(t, N, most_pixels=28)


def rel_err(got, want) -> float:
    return float((got.double() - want.double()).norm() / want.double().norm())


def measure(args, torch, fn) -> float:
    from bench_cudamem import cuda_time

    if args.dry_run:
        return cuda_time(fn, warmup=0, wall_clock=True) * 1e3
    return cuda_time(fn, repeats=20) * 1e3


def run_case(args, torch, case, labels, start, results, save):
    from workbench import ops
    from workbench.backends import build

    F = torch.nn.functional
    name, N, C, H, K, R, stride, pad, times = case
    if args.dry_run:
        N, C, H, K = DRY[name]
    device = "cpu" if args.dry_run else "cuda"
    gen = torch.Generator(device=device).manual_seed(0)
    x = torch.randn(N, C, H, H, device=device, generator=gen)
    w = torch.randn(K, C, R, R, device=device, generator=gen)
    want = F.conv2d(x, w, stride=stride, padding=pad)
    t_torch = measure(args, torch, lambda: F.conv2d(x, w, stride=stride, padding=pad))
    P = want.shape[2]
    flop = 2 * N * K * P * P * C * R * R
    func = ops.conv2d_nchw(N, C, H, H, K, R, R, stride=stride, padding=pad)
    for label in labels:
        row = {"kernel": name, "batch": N, "shape": [C, H, K, R, stride, pad],
               "in_resnet18": times, "variant": label, "torch_ms": t_torch}
        if time.perf_counter() - start > args.deadline:
            row["skipped"] = "deadline"
            results.append(row)
            continue
        try:
            began = time.perf_counter()
            kernel = build(variants()[label](func), target="cuda")
            row["build_s"] = time.perf_counter() - began
            out = torch.full_like(want, float("nan"))
            if args.dry_run:
                call = (x.numpy(), w.numpy(), out.numpy())
            else:
                from numba import cuda

                call = (cuda.as_cuda_array(x), cuda.as_cuda_array(w), cuda.as_cuda_array(out))
            kernel(*call)
            if not args.dry_run:
                torch.cuda.synchronize()
            row["rel_err"] = rel_err(out, want)
            row["ms"] = measure(args, torch, lambda k=kernel, a=call: k(*a))
            row["gflops"] = flop / row["ms"] / 1e6
            row["vs_torch"] = t_torch / row["ms"]
        except Exception as err:  # noqa: BLE001 - recorded, the run goes on
            row["error"] = f"{type(err).__name__}: {err}"[:400]
            row["traceback"] = traceback.format_exc()[-1500:]
        print(json.dumps({k: v for k, v in row.items() if k != "traceback"}), flush=True)
        results.append(row)
        save()


def table(rows: list[dict]) -> str:
    """The markdown table of RESULTS.md from the JSON's rows: per case, torch ms and each
    variant's ms with its x torch (torch ms / ours)."""
    labels = list(dict.fromkeys(r["variant"] for r in rows))
    cases = list(dict.fromkeys(r["kernel"] for r in rows))
    head = ["kernel", "batch", "torch ms"] + labels + ["new / old"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for name in cases:
        mine = {r["variant"]: r for r in rows if r["kernel"] == name}
        first = next(iter(mine.values()))
        cells = [name, str(first["batch"]), f"{first['torch_ms']:.3f}"]
        for label in labels:
            r = mine.get(label, {})
            cells.append(f"{r['ms']:.3f} ({r['vs_torch']:.2f}x)" if "ms" in r else
                         (r.get("skipped") or r.get("error", "")[:40] or "-"))
        new, old = mine.get(labels[0], {}), mine.get("old (tiled)", {})
        cells.append(f"{old['ms'] / new['ms']:.2f}x" if "ms" in new and "ms" in old else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=".")
    parser.add_argument("--deadline", type=float, default=240.0,
                        help="seconds after which no new row starts")
    parser.add_argument("--dry-run", action="store_true",
                        help="tiny sizes under the simulator (NUMBA_ENABLE_CUDASIM=1)")
    parser.add_argument("--kernels", default="", help="comma-separated case names")
    parser.add_argument("--extra", default="l1 3x3 64,l3 3x3 256,l4 3x3 512,l2 3x3 128,"
                        "stem 7x7/2", help="cases that also get the flipped double buffering")
    parser.add_argument("--fold", default="l4 3x3 512,l3 3x3 256,l1 3x3 64",
                        help="cases that also get the batch folded into the block")
    parser.add_argument("--table", default="", help="print the markdown table of a JSON")
    args = parser.parse_args(argv)
    if args.deadline <= 0:
        parser.error("--deadline must be positive")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.table:
        with open(args.table) as f:
            print(table(json.load(f)["rows"]))
        return 0
    start = time.perf_counter()
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    cases = [c for c in CASES if (not args.kernels or c[0] in args.kernels.split(","))
             and (not args.dry_run or c[0] in DRY)]
    results: list = []
    path = os.path.join(args.out, "conv2.json")
    device = "simulator" if args.dry_run else torch.cuda.get_device_name()

    def save():
        with open(path, "w") as f:
            json.dump({"argv": sys.argv if argv is None else argv, "device": device,
                       "torch": torch.__version__, "rows": results}, f, indent=1)

    for case in cases:  # per case: new, old, then the variants asked for that case
        labels = ["new (register_tiled)", "old (tiled)"]
        if case[0] in args.extra.split(","):
            labels.append("new, double buffering flipped")
        if case[0] in args.fold.split(","):
            labels.append("new, batch folded")
        run_case(args, torch, case, labels, start, results, save)
    save()
    for row in results:
        if "ms" in row:
            print(f"{row['kernel']:14s} {row['variant']:22s} {row['ms']:8.3f} ms torch "
                  f"{row['torch_ms']:7.3f} x{row['vs_torch']:.2f} err {row['rel_err']:.1e}")
        else:
            print(row["kernel"], row["variant"], row.get("error") or row.get("skipped"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
