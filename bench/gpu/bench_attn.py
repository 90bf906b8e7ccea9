"""The cuda attention recipes at the models' shapes on the H200, against torch's
``scaled_dot_product_attention`` (its default backend and the math one), fp32, TF32 off,
one process, one JSON.

    python3 bench/gpu/bench_attn.py --out $OUT/attn.json --deadline 200
    NUMBA_ENABLE_CUDASIM=1 python bench/gpu/bench_attn.py --dry-run --out /tmp/attn.json
    CUDA_HOME=/usr/local/cuda-13.0 python bench/gpu/bench_attn.py --registers --out regs.json

Shapes (batch, heads, seq, head dim, causal): the d 256 block's attention (16 x 4 x 128 x
64), GPT-2 small's (8 x 12 x 128 x 64, causal), the d 768 block's (16 x 12 x 128 x 64) and a
long odd one (2 x 4 x 511 x 64). Variants (``VARIANTS``): ``warp_rows`` (the default before:
a warp per query row), its lane register tile (``tile=True``), ``warp_tiles`` (a register
tile of query rows x keys per lane: the default now) and a few of its tilings, and the
decomposed form (``Q @ K^T`` and ``P @ V`` by the batched SGEMM rule ``bmm_tiled``, the row
softmax by the ``rows`` rule; K transposed by torch inside the timed region, the scale
folded into Q beforehand, untimed; non-causal shapes only).

Per row: the output's relative L2 error against torch's default (checked before timing:
a variant over ``MAX_ERR`` is recorded, not timed), device ms (CUDA events, median of 20
after 3 warm-ups, the host's launch hidden behind a sleep: ``bench_cudamem.cuda_time``),
GFLOP/s (``4 * B * H * L * S * D``, causal counted whole) and ``x torch`` (torch's default
ms / ours). ``--deadline`` (seconds from the start) skips what is left, recorded. The JSON is
rewritten after every row. ``--dry-run``: tiny shapes on host arrays (the simulator), every
variant built and checked against torch on the CPU, nothing timed.
"""

from __future__ import annotations

import argparse
import json
import math
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

SHAPES = (  # (name, batch, heads, seq, dim, causal)
    ("block d256 b16", 16, 4, 128, 64, False),
    ("gpt2 b8 causal", 8, 12, 128, 64, True),
    ("block d768 b16", 16, 12, 128, 64, False),
    ("511 tokens b2", 2, 4, 511, 64, False),
)
DRY_SHAPES = (
    ("tiny", 1, 2, 8, 8, False),
    ("tiny causal odd", 1, 1, 9, 4, True),
)
MAX_ERR = 1e-4


def _fused(make):
    """A variant of one kernel: ``make(func) -> Schedule``."""
    return ("fused", make)


def _variants():
    from workbench.recipes.attention_cuda import warp_rows, warp_tiles

    return {
        "warp_rows (before)": _fused(warp_rows),
        "warp_rows tile": _fused(lambda f: warp_rows(f, tile=True)),
        "warp_tiles (default)": _fused(warp_tiles),
        "warp_tiles whole-warp P.V": _fused(lambda f: warp_tiles(f, half_warps=False)),
        "warp_tiles rows 2": _fused(lambda f: warp_tiles(f, rows=2)),
        "warp_tiles warps 4": _fused(lambda f: warp_tiles(f, warps=4)),
        "warp_tiles d_tile 16": _fused(lambda f: warp_tiles(f, d_tile=16, warps=4)),
        "warp_tiles queries unstaged": _fused(lambda f: warp_tiles(f, stage_queries=False)),
        "decomposed bmm+softmax+bmm": ("decomposed", None),
    }


VARIANTS = tuple(
    ["warp_rows (before)", "warp_rows tile", "warp_tiles (default)",
     "warp_tiles whole-warp P.V", "warp_tiles rows 2",
     "warp_tiles warps 4", "warp_tiles d_tile 16", "warp_tiles queries unstaged",
     "decomposed bmm+softmax+bmm"])
"""The variants, in the order they run."""


FIRST = ("warp_tiles (default)", "warp_rows (before)", "warp_tiles whole-warp P.V",
         "decomposed bmm+softmax+bmm")
"""Variants run on every shape before the others (a deadline cuts the tilings first)."""


def plan(shapes, chosen) -> list[tuple[str, str]]:
    """``(shape, variant)`` in the order they run: the ``FIRST`` variants on every shape,
    then the others shape by shape (numba compiles a kernel in seconds on the GPU's
    host: the deadline cuts the least needed rows).

    >>> [f"{s}: {v}" for s, v in plan(DRY_SHAPES, ["warp_rows tile", "warp_tiles (default)"])]
    ... # doctest: +NORMALIZE_WHITESPACE
    ['tiny: warp_tiles (default)', 'tiny causal odd: warp_tiles (default)',
     'tiny: warp_rows tile', 'tiny causal odd: warp_rows tile']
    """
    order = [(s[0], v) for v in FIRST if v in chosen for s in shapes]
    return order + [(s[0], v) for s in shapes for v in chosen if v not in FIRST]


class Device:
    """Arrays and timing: torch CUDA tensors and CUDA events on the GPU, numpy arrays on the
    host (``dry``: the simulator, nothing timed)."""

    def __init__(self, dry: bool):
        import torch

        self.torch, self.dry = torch, dry
        self.device = "cpu" if dry else "cuda"

    def randn(self, *shape):
        return self.torch.randn(*shape, device=self.device)

    def empty(self, *shape):
        return self.torch.full(shape, float("nan"), device=self.device)

    def arg(self, t):
        """What a workbench kernel takes: a device array view of ``t`` or its numpy array."""
        if self.dry:
            return t.numpy()
        from numba import cuda

        return cuda.as_cuda_array(t)

    def result(self, t):
        """``t`` once the kernels that write it are done (on the host, ``arg``'s array
        shares ``t``'s memory)."""
        if not self.dry:
            self.torch.cuda.synchronize()
        return t

    def ms(self, fn, sleep_cycles: int = 600_000) -> float | None:
        """Median ms of ``fn()`` (``bench_cudamem.cuda_time``: the host's launches hidden
        behind a sleep of ``sleep_cycles`` on the stream); None on the host."""
        if self.dry:
            return None
        from bench_cudamem import cuda_time

        return cuda_time(fn, warmup=3, repeats=20, sleep_cycles=sleep_cycles) * 1e3


def rel_err(got, want) -> float:
    return float((got.double() - want.double()).norm() / want.double().norm())


def _fused_row(dev, make, func, q, k, v, want):
    from workbench.backends import build

    kernel = build(make(func), target="cuda")
    out = dev.empty(*want.shape)
    args = tuple(dev.arg(t) for t in (q, k, v, out))
    kernel(*args)
    return rel_err(dev.result(out), want), (lambda: kernel(*args))


def _decomposed_row(dev, B, H, L, D, q, k, v, want):
    """``Q @ K^T`` (bmm_tiled), the row softmax (rows), ``P @ V`` (bmm_tiled): the graph's
    rules on the decomposition; K transposed by torch (timed), Q pre-scaled (untimed)."""
    from workbench import ops
    from workbench.backends import build
    from workbench.recipes.graph_cuda_ops import bmm_tiled, rows

    n = B * H
    scores_k = build(bmm_tiled(ops.batch_matmul(n, L, L, D)), target="cuda")
    softmax_k = build(rows(ops.softmax(n * L, L)), target="cuda")
    pv_k = build(bmm_tiled(ops.batch_matmul(n, L, D, L)), target="cuda")
    qs = (q * (1.0 / math.sqrt(D))).reshape(n, L, D).contiguous()
    kt = k.reshape(n, L, D).transpose(1, 2).contiguous()
    vv = v.reshape(n, L, D).contiguous()
    scores, probs, out = dev.empty(n, L, L), dev.empty(n, L, L), dev.empty(n, L, D)
    a_q, a_kt, a_v = dev.arg(qs), dev.arg(kt), dev.arg(vv)
    a_s, a_p, a_o = dev.arg(scores), dev.arg(probs), dev.arg(out)
    a_s2, a_p2 = (dev.arg(t.view(n * L, L)) for t in (scores, probs))

    def run():  # (on the host the arrays share the tensors' memory)
        kt.copy_(k.reshape(n, L, D).transpose(1, 2))
        scores_k(a_q, a_kt, a_s)
        softmax_k(a_s2, a_p2)
        pv_k(a_p, a_v, a_o)

    run()
    got = dev.result(out).reshape(B, H, L, D)
    return rel_err(got, want), run


def bench(args) -> dict:
    import torch

    F = torch.nn.functional
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = Device(args.dry_run)
    start = time.perf_counter()
    variants = _variants()
    chosen = [v for v in VARIANTS if not args.variants or v in args.variants.split(",")]
    report = {"argv": sys.argv, "torch": torch.__version__, "rows": [],
              "device": "simulator" if dev.dry else torch.cuda.get_device_name()}

    def save():
        if args.out:
            with open(args.out, "w") as f:
                json.dump(report, f, indent=1)

    from workbench import ops

    shapes = {}  # name -> the shape's inputs, reference and torch times (first use)

    def shape(name):
        if name in shapes:
            return shapes[name]
        _, B, H, L, D, causal = next(s for s in all_shapes if s[0] == name)
        torch.manual_seed(0)
        q, k, v = (dev.randn(B, H, L, D) for _ in range(3))

        def sdpa(q=q, k=k, v=v, causal=causal):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

        base = {"shape": name, "B": B, "H": H, "L": L, "D": D, "causal": causal}
        t_torch, t_math = dev.ms(sdpa), None
        if not dev.dry:
            from torch.nn.attention import SDPBackend, sdpa_kernel

            with sdpa_kernel(SDPBackend.MATH):
                t_math = dev.ms(sdpa)
        report["rows"].append({**base, "variant": "torch sdpa (default)", "ms": t_torch})
        report["rows"].append({**base, "variant": "torch sdpa (math)", "ms": t_math})
        shapes[name] = (base, (q, k, v), sdpa(), t_torch, t_math)
        return shapes[name]

    all_shapes = DRY_SHAPES if dev.dry else SHAPES
    for name, label in plan(all_shapes, chosen):
        base, (q, k, v), want, t_torch, t_math = shape(name)
        B, H, L, D, causal = (base[x] for x in ("B", "H", "L", "D", "causal"))
        flop = 4 * B * H * L * L * D
        kind, make = variants[label]
        row = {**base, "variant": label, "torch_ms": t_torch, "torch_math_ms": t_math}
        if time.perf_counter() - start > args.deadline:
            row["skipped"] = "deadline"
        elif kind == "decomposed" and causal:
            row["skipped"] = "causal: the decomposed form is timed on non-causal shapes"
        else:
            try:
                t0 = time.perf_counter()
                if kind == "fused":
                    func = ops.attention(B, H, L, D, causal=causal)
                    err, fn = _fused_row(dev, make, func, q, k, v, want)
                else:
                    err, fn = _decomposed_row(dev, B, H, L, D, q, k, v, want)
                row["build_s"] = round(time.perf_counter() - t0, 2)
                row["rel_err"] = err
                if err > MAX_ERR:
                    row["error"] = f"wrong: rel_err {err:.2e} over {MAX_ERR}"
                elif not dev.dry:  # four launches (decomposed): a longer sleep hides them
                    row["ms"] = dev.ms(fn, 600_000 if kind == "fused" else 3_000_000)
                    row["gflops"] = flop / row["ms"] / 1e6
                    row["x_torch"] = t_torch / row["ms"]
                    row["x_torch_math"] = t_math / row["ms"]
            except Exception as err:  # noqa: BLE001 - recorded, the run goes on
                row["error"] = f"{type(err).__name__}: {err}"[:400]
                row["traceback"] = traceback.format_exc()[-1500:]
        report["rows"].append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "traceback"}), flush=True)
        save()
    save()
    return report


def table(report) -> str:
    """The report as a markdown table (ms, GFLOP/s, x torch default, x torch math)."""
    lines = ["| shape | variant | ms | GFLOP/s | x torch | x torch math | rel err |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    first = {}
    for r in report["rows"]:
        first.setdefault(r["shape"], len(first))
    for r in sorted(report["rows"], key=lambda r: first[r["shape"]]):  # shape by shape
        if r["variant"].startswith("torch"):
            ms = r.get("ms")
            lines.append(f"| {r['shape']} | {r['variant']} | "
                         f"{'-' if ms is None else f'{ms:.3f}'} | | | | |")
            continue
        if "ms" not in r:
            lines.append(f"| {r['shape']} | {r['variant']} | "
                         f"{r.get('error') or r.get('skipped') or 'checked'} | | | | "
                         f"{r.get('rel_err', float('nan')):.1e} |")
            continue
        lines.append(f"| {r['shape']} | {r['variant']} | {r['ms']:.3f} | {r['gflops']:.0f} | "
                     f"{r['x_torch']:.2f}x | {r['x_torch_math']:.2f}x | {r['rel_err']:.1e} |")
    return "\n".join(lines)


def registers(chosen) -> list[dict]:
    """Registers, spills and shared memory of each fused variant at each shape, without a
    GPU (``ptxas_registers.ptxas_report``: libNVVM and ``ptxas -v`` for sm_90)."""
    from ptxas_registers import ptxas_report

    from workbench import ops

    variants = _variants()
    rows = []
    for name, B, H, L, D, causal in SHAPES:
        for label in chosen:
            kind, make = variants[label]
            if kind != "fused":
                continue
            row = {"shape": name, "variant": label}
            try:
                sch = make(ops.attention(B, H, L, D, causal=causal))
                row["ptxas"] = "; ".join(r for _, r in ptxas_report(sch))
            except Exception as err:  # noqa: BLE001
                row["error"] = f"{type(err).__name__}: {err}"[:300]
            print(json.dumps(row), flush=True)
            rows.append(row)
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="attn.json", help="the JSON file")
    parser.add_argument("--deadline", type=float, default=240.0,
                        help="seconds from the start; what is left is skipped")
    parser.add_argument("--variants", default="", help="comma-separated (all when empty)")
    parser.add_argument("--dry-run", action="store_true",
                        help="tiny shapes on the simulator, checked, not timed")
    parser.add_argument("--registers", action="store_true",
                        help="ptxas registers/spills of the fused variants (no GPU), then exit")
    args = parser.parse_args(argv)
    if args.registers:
        chosen = [v for v in VARIANTS if not args.variants or v in args.variants.split(",")]
        rows = registers(chosen)
        if args.out:
            with open(args.out, "w") as f:
                json.dump({"argv": sys.argv, "registers": rows}, f, indent=1)
        return 0
    report = bench(args)
    print(table(report), flush=True)
    bad = [r for r in report["rows"] if "error" in r]
    return 1 if args.dry_run and bad else 0


if __name__ == "__main__":
    sys.exit(main())
