"""Issue 20, the two kernels of the models' gaps on the H200: the ``tiled`` conv2d (implicit
GEMM) at resnet18's shapes and the ``warp_rows`` attention at the models' shapes, with the
defaults and a few variants, against torch (cuDNN, SDPA), fp32, TF32 off, one JSON.

    python3 bench/gpu/bench_conv_attention.py --out $OUT --deadline 120

Per row: device ms (CUDA events, median), GFLOP/s, rel. L2 error against torch, and the
speed against torch (torch ms / ours).
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

START = time.perf_counter()

# resnet18 at batch 16: (name, C, H, K, R, stride, padding)
CONVS = (
    ("stem 7x7/2", 3, 224, 64, 7, 2, 3),
    ("l1 3x3", 64, 56, 64, 3, 1, 1),
    ("l2 3x3/2", 64, 56, 128, 3, 2, 1),
    ("l2 1x1/2", 64, 56, 128, 1, 2, 0),
    ("l2 3x3", 128, 28, 128, 3, 1, 1),
    ("l3 3x3", 256, 14, 256, 3, 1, 1),
    ("l4 3x3", 512, 7, 512, 3, 1, 1),
)
# (name, batch, heads, seq, dim, causal)
ATTENTIONS = (
    ("block d256 b16", 16, 4, 128, 64, False),
    ("block d768 b16", 16, 12, 128, 64, False),
    ("gpt2 b8 causal", 8, 12, 128, 64, True),
    ("77 tokens b16", 16, 8, 77, 64, False),
)


def rel_err(got, want) -> float:
    return float((got.double() - want.double()).norm() / want.double().norm())


def timed(torch, fn, repeats=20):
    from bench_cudamem import cuda_time

    return cuda_time(fn, repeats=repeats) * 1e3


def conv_rows(args, torch, results):
    from numba import cuda

    from workbench import ops
    from workbench.backends import build
    from workbench.recipes.conv2d_cuda import ConvTiling, conv_tiling, tiled

    F = torch.nn.functional
    for name, C, H, K, R, stride, pad in CONVS:
        if args.kernels and name not in args.kernels.split(","):
            continue
        if time.perf_counter() - START > args.deadline:
            results.append({"kernel": name, "skipped": "deadline"})
            continue
        N = args.batch
        func = ops.conv2d_nchw(N, C, H, H, K, R, R, stride=stride, padding=pad)
        x = torch.randn(N, C, H, H, device="cuda")
        w = torch.randn(K, C, R, R, device="cuda")
        want = F.conv2d(x, w, stride=stride, padding=pad)
        t_torch = timed(torch, lambda x=x, w=w, s=stride, p=pad: F.conv2d(x, w, stride=s,
                                                                          padding=p))
        P = want.shape[2]
        flop = 2 * N * K * P * P * C * R * R
        base = conv_tiling(K, C, P, P, N)
        variants = {"default": base}
        if base.per_k != 4:  # the default of run 1 (before MIN_THREADS)
            variants["4 channels a thread (run 1)"] = ConvTiling(
                base.k_threads * base.per_k // 4, 4, base.y_threads, base.x_threads,
                base.per_x, base.c_tile)
        if "all" in args.variants:
            variants["per_k 8"] = ConvTiling(8, 8, base.y_threads, base.x_threads, base.per_x,
                                             base.c_tile)
            if C % 16 == 0:
                variants["c_tile 16"] = ConvTiling(base.k_threads, base.per_k, base.y_threads,
                                                   base.x_threads, base.per_x, 16)
        for label, tiling in variants.items():
            row = {"kernel": name, "variant": label, "tiling": str(tiling),
                   "torch_ms": t_torch}
            try:
                start = time.perf_counter()
                kernel = build(tiled(func, tiling), target="cuda")
                out = torch.empty_like(want)
                args_ = (cuda.as_cuda_array(x), cuda.as_cuda_array(w), cuda.as_cuda_array(out))
                kernel(*args_)
                torch.cuda.synchronize()
                row["build_s"] = time.perf_counter() - start
                row["rel_err"] = rel_err(out, want)
                row["ms"] = timed(torch, lambda k=kernel, a=args_: k(*a))
                row["gflops"] = flop / row["ms"] / 1e6
                row["vs_torch"] = t_torch / row["ms"]
            except Exception as err:  # noqa: BLE001 - recorded, the run goes on
                row["error"] = f"{type(err).__name__}: {err}"[:400]
                row["traceback"] = traceback.format_exc()[-1500:]
            print(json.dumps({k: v for k, v in row.items() if k != "traceback"}), flush=True)
            results.append(row)


def attention_rows(args, torch, results):
    from numba import cuda

    from workbench import ops
    from workbench.backends import build
    from workbench.recipes.attention_cuda import warp_rows
    from workbench.recipes.graph_cuda_ops import attention_rows as one_row

    F = torch.nn.functional
    for name, B, H, L, D, causal in ATTENTIONS:
        if args.kernels and name not in args.kernels.split(","):
            continue
        if time.perf_counter() - START > args.deadline:
            results.append({"kernel": name, "skipped": "deadline"})
            continue
        func = ops.attention(B, H, L, D, causal=causal)
        q, k, v = (torch.randn(B, H, L, D, device="cuda") for _ in range(3))
        want = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        t_torch = timed(torch, lambda q=q, k=k, v=v, c=causal:
                        F.scaled_dot_product_attention(q, k, v, is_causal=c))
        flop = 4 * B * H * L * L * D
        variants = {"default": lambda f: warp_rows(f),
                    "lane register tile": lambda f: warp_rows(f, tile=True),
                    "one block per row (before)": one_row}
        if "all" in args.variants:
            variants.update({"rows 16": lambda f: warp_rows(f, rows=16),
                             "rows 4": lambda f: warp_rows(f, rows=4),
                             "keys unstaged": lambda f: warp_rows(f, stage_keys=False)})
        for label, make in variants.items():
            row = {"kernel": name, "variant": label, "torch_ms": t_torch}
            try:
                kernel = build(make(func), target="cuda")
                out = torch.empty_like(want)
                args_ = tuple(cuda.as_cuda_array(t) for t in (q, k, v, out))
                kernel(*args_)
                torch.cuda.synchronize()
                row["rel_err"] = rel_err(out, want)
                row["ms"] = timed(torch, lambda k=kernel, a=args_: k(*a))
                row["gflops"] = flop / row["ms"] / 1e6
                row["vs_torch"] = t_torch / row["ms"]
            except Exception as err:  # noqa: BLE001
                row["error"] = f"{type(err).__name__}: {err}"[:400]
                row["traceback"] = traceback.format_exc()[-1500:]
            print(json.dumps({k: v for k, v in row.items() if k != "traceback"}), flush=True)
            results.append(row)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=".")
    parser.add_argument("--deadline", type=float, default=120.0)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--variants", default="all", help="all | default")
    parser.add_argument("--only", default="conv,attention")
    parser.add_argument("--kernels", default="", help="comma-separated names (all when empty)")
    args = parser.parse_args()
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    results: list = []
    if "conv" in args.only:
        conv_rows(args, torch, results)
    if "attention" in args.only:
        attention_rows(args, torch, results)
    with open(os.path.join(args.out, "kernels.json"), "w") as f:
        json.dump({"argv": sys.argv, "device": torch.cuda.get_device_name(),
                   "torch": torch.__version__, "rows": results}, f, indent=1)
    for row in results:
        if "ms" in row:
            print(f"{row['kernel']:16s} {row['variant']:28s} {row['ms']:8.3f} ms "
                  f"torch {row['torch_ms']:7.3f}  x{row['vs_torch']:.2f} err {row['rel_err']:.1e}")
        else:
            print(row.get("kernel"), row.get("variant"), row.get("error") or row.get("skipped"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
