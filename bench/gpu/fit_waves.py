"""Refit the ``"waves"`` matmul policy's constants from a sweep of ``gpu_plan.py``.

``graph_cuda_ops.predicted_matmul_s`` models a matmul of tile side ``t`` split ``s`` ways as
``waves * (K / s) * WAVE_US_PER_K[t]`` plus the slices' sum, ``waves`` the whole waves of
blocks at ``WAVE_SLOTS[t]`` blocks at once. Part ``sweep`` of ``gpu_plan.py`` times every tile
and split of the sweep's linears through ``wb.compile``; this reads that JSON and, per tile
side, for each count of blocks a multiprocessor may hold (1 to 16), fits the microseconds
per unit of K (the median over the side's rows of the time left after the sum, per wave and
unit of K: how the committed constants were made) and the model's error on those rows (the
median of ``|log(predicted / measured)|``). The counts whose model picks the fastest plans
win (least mean loss over the linears, then least error, then the committed counts). Then,
per linear: the fastest plan measured, the plan each model picks and what it measured.

    PYTHONPATH=$PWD python bench/gpu/fit_waves.py bench/gpu/results/h100_run6_sweep.json

The search over counts fits 3 sides on the sweep's linears: with few of them (run 6 has 4)
it overfits (it chose 2 blocks a multiprocessor at 0.024 us for the 32 tile there), so read
the committed counts' column beside it and take a refit only over a sweep of many shapes
(the default sweep has 9: resnet18's, GPT-2's, the block's, BERT's, 1000 x 3000 x 2000).

A change of a recipe's micro-tile (the 64 tile as 8 x 8 threads of 8 x 8 since 2026-12-07:
64 threads a block, not 256, so more blocks fit a multiprocessor) calls for a new sweep
(``gpu_plan.py --only sweep``) and this fit before the constants are trusted again.
``--json`` writes the refit for ``gpu_plan.py --waves``, which times parts under it (a
sweep, the fit and the models under the refit in one GPU call).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import re
import statistics
import sys

import numpy as np

if not hasattr(np, "row_stack"):
    np.row_stack = np.vstack  # numba-cuda 0.30 on numpy 2.5 (the GPU machine runs this too)

from workbench.recipes import graph_cuda_ops as g
from workbench.recipes.matmul_cuda import MIN_BLOCKS

_LINEAR = re.compile(r"(\d+)x(\d+)->(\d+)$")
_PLAN = re.compile(r"tile (\d+) split (\d+)$")


def sweep_rows(plan: dict) -> list[dict]:
    """The timed rows of a plan JSON's part ``sweep``: ``m, n, k, tile, split, seconds``."""
    rows = []
    for name, row in plan["parts"]["sweep"].get("rows", {}).items():
        linear = _LINEAR.match(name)
        if not linear:
            continue
        m, k, n = map(int, linear.groups())
        for label, cell in row.items():
            chosen = _PLAN.match(label)
            if chosen and isinstance(cell, dict) and "device_ms" in cell:
                tile, split = map(int, chosen.groups())
                rows.append({"m": m, "n": n, "k": k, "tile": tile, "split": split,
                             "s": cell["device_ms"] * 1e-3})
    return rows


def _per_unit(row: dict, slots: int) -> float:
    """The row's microseconds per wave and unit of K under ``slots`` blocks at once: the
    model's time with 0 and 1 us per unit of K brackets it (one home for the model)."""
    shape = (row["m"], row["n"], row["k"], row["tile"], row["split"])
    fixed = g.predicted_matmul_s(*shape, slots=slots, us_per_k=0.0)
    unit = g.predicted_matmul_s(*shape, slots=slots, us_per_k=1.0) - fixed
    return (row["s"] - fixed) / unit


def fit_side(rows: list[dict], slots: int) -> tuple[float, float]:
    """``(us_per_k, error)`` of one tile side's rows at ``slots`` blocks at once."""
    us_per_k = statistics.median(_per_unit(r, slots) for r in rows)
    errors = [abs(math.log(g.predicted_matmul_s(r["m"], r["n"], r["k"], r["tile"], r["split"],
                                                slots=slots, us_per_k=us_per_k) / r["s"]))
              for r in rows]
    return us_per_k, statistics.median(errors)


def _side(rows: list[dict], tile: int, count: int) -> dict:
    """``{"per_sm", "us_per_k", "error", "rows"}`` of tile side ``tile`` at ``count``
    blocks a multiprocessor."""
    mine = [r for r in rows if r["tile"] == tile]
    us_per_k, error = fit_side(mine, count * MIN_BLOCKS)
    return {"per_sm": count, "us_per_k": us_per_k, "error": error, "rows": len(mine)}


def fit_sides(rows: list[dict], per_sm: dict[int, int]) -> dict:
    """Per tile side, at ``per_sm[tile]`` blocks a multiprocessor: ``_side``'s fit."""
    return {tile: _side(rows, tile, per_sm[tile]) for tile in sorted({r["tile"] for r in rows})}


def picks(rows: list[dict], fitted: dict) -> list[dict]:
    """Per linear: the fastest measured plan, the model's pick under ``fitted`` and what
    that plan measured (``loss``: how much slower than the fastest)."""
    out = []
    for shape in sorted({(r["m"], r["n"], r["k"]) for r in rows}):
        mine = [r for r in rows if (r["m"], r["n"], r["k"]) == shape]
        best = min(mine, key=lambda r: r["s"])
        pick = min(mine, key=lambda r: g.predicted_matmul_s(
            *shape, r["tile"], r["split"], slots=fitted[r["tile"]]["per_sm"] * MIN_BLOCKS,
            us_per_k=fitted[r["tile"]]["us_per_k"]))
        out.append({"shape": shape, "best": (best["tile"], best["split"], best["s"]),
                    "pick": (pick["tile"], pick["split"], pick["s"]),
                    "loss": pick["s"] / best["s"] - 1})
    return out


def current_per_sm(tiles) -> dict[int, int]:
    """Blocks a multiprocessor of each tile side in ``graph_cuda_ops.WAVE_SLOTS``."""
    return {t: g.WAVE_SLOTS[t] // MIN_BLOCKS for t in tiles}


def fit(rows: list[dict], per_sm: tuple[int, ...] = (1, 2, 3, 4, 6, 8, 12, 16)) -> dict:
    """The counts of blocks a multiprocessor (one of ``per_sm`` per tile side) whose refit
    model picks the fastest plans: least mean ``loss`` over the linears, then least mean
    error, then the current counts; the sides fitted at them (``fit_sides``)."""
    tiles = sorted({r["tile"] for r in rows})
    current = current_per_sm(tiles)
    sides = {(tile, count): _side(rows, tile, count) for tile in tiles for count in per_sm}
    scored = []
    for counts in itertools.product(per_sm, repeat=len(tiles)):
        chosen = dict(zip(tiles, counts, strict=True))
        fitted = {tile: sides[tile, count] for tile, count in chosen.items()}
        loss = statistics.fmean(p["loss"] for p in picks(rows, fitted))
        error = statistics.fmean(f["error"] for f in fitted.values())
        scored.append((round(loss, 4), round(error, 4), chosen != current, counts, fitted))
    return min(scored, key=lambda entry: entry[:3])[-1]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("plans", nargs="+", help="plan JSONs of gpu_plan.py with part sweep")
    parser.add_argument("--json", default="",
                        help="also write the refit constants here (gpu_plan.py --waves)")
    args = parser.parse_args(argv)
    rows = []
    for path in args.plans:
        try:
            with open(path) as handle:
                plan = json.load(handle)
        except (OSError, json.JSONDecodeError) as err:
            parser.error(f"{path}: not a readable plan JSON ({err})")
        if "sweep" not in plan.get("parts", {}):
            parser.error(f"{path}: no part 'sweep' (run gpu_plan.py --only sweep)")
        rows += sweep_rows(plan)
    if not rows:
        parser.error("no timed rows of part 'sweep' in " + ", ".join(args.plans))
    tiles = sorted({r["tile"] for r in rows})
    committed = fit_sides(rows, current_per_sm(tiles))
    fitted = fit(rows)
    print("| tile | blocks a multiprocessor (committed -> refit) | us per unit of K "
          "(committed constants' fit -> refit) | median error | rows |")
    print("| --- | --- | --- | --- | --- |")
    for tile, f in fitted.items():
        was = committed[tile]
        print(f"| {tile} | {was['per_sm']} -> {f['per_sm']} | {was['us_per_k']:.3f} -> "
              f"{f['us_per_k']:.3f} (in use: {g.WAVE_US_PER_K[tile]}) | "
              f"{was['error']:.1%} -> {f['error']:.1%} | {f['rows']} |")
    print("\n| M x N x K | fastest (tile, split, us) | committed counts' pick | refit pick |")
    print("| --- | --- | --- | --- |")
    chosen = {"committed": picks(rows, committed), "refit": picks(rows, fitted)}
    for old, new in zip(chosen["committed"], chosen["refit"], strict=True):
        best = old["best"]
        cells = [f"{p['pick'][0]}, {p['pick'][1]}, {p['pick'][2] * 1e6:.0f} us "
                 f"(+{p['loss']:.0%})" for p in (old, new)]
        print(f"| {' x '.join(map(str, old['shape']))} | {best[0]}, {best[1]}, "
              f"{best[2] * 1e6:.0f} us | {cells[0]} | {cells[1]} |")
    slots = ", ".join(f"({t}, {f['per_sm']})" for t, f in fitted.items())
    per_k = ", ".join(f"{t}: {f['us_per_k']:.3f}" for t, f in fitted.items())
    print(f"\nWAVE_SLOTS per multiprocessor: ({slots}); WAVE_US_PER_K = {{{per_k}}}")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(constants_json(fitted, chosen), handle, indent=1)
    return 0


def constants_json(fitted: dict, chosen: dict[str, list[dict]]) -> dict:
    """The refit constants as ``gpu_plan.py --waves`` reads them, with the mean loss of each
    model's picks (``chosen``: ``picks`` of the committed counts and of the refit)."""
    return {"per_sm": {str(t): f["per_sm"] for t, f in fitted.items()},
            "us_per_k": {str(t): round(f["us_per_k"], 4) for t, f in fitted.items()},
            "loss": {name: round(statistics.fmean(p["loss"] for p in mine), 4)
                     for name, mine in chosen.items()}}


if __name__ == "__main__":
    sys.exit(main())
