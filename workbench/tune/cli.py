"""The command line: ``python -m workbench tune ...`` and ``python -m workbench best ...``.

::

    python -m workbench tune matmul --shape 1024,1024,1024 --target cpu --trials 64 --db r.jsonl
    python -m workbench best --db r.jsonl
    python -m workbench tune-model model.onnx --target cuda --budget 600 --top 3 --db r.jsonl

``tune`` takes any operator of the library (``workbench.ops.LIBRARY``); ``--shape`` gives its
factory's leading arguments in order (``matmul(M, N, K)``, ``softmax(M, N)``...). ``best``
prints the best record per workload with its latency and GFLOP/s. ``tune-model`` tunes the
slowest kernels of an ONNX model within a time budget (``workbench.tune.model``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _parse_shape(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--shape takes integers like 1024,1024,1024, not {text!r}") from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m workbench", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    tune = commands.add_parser("tune", help="tune an operator of the library")
    tune.add_argument("op", help="operator name (see workbench.ops.LIBRARY)")
    tune.add_argument("--shape", type=_parse_shape, default=None,
                      help="the operator factory's leading arguments, comma separated")
    tune.add_argument("--target", default="cpu")
    tune.add_argument("--trials", type=int, default=64)
    tune.add_argument("--db", default="records.jsonl")
    tune.add_argument("--space", default="generated", help="'generated' or 'matmul' (template)")
    tune.add_argument("--strategy", default="evolutionary",
                      choices=["grid", "random", "evolutionary", "bayesian"])
    tune.add_argument("--seed", type=int, default=0)
    tune.add_argument("--batch-size", type=int, default=8)
    tune.add_argument("--time-budget", type=float, default=None, help="seconds")
    tune.add_argument("--export", default=None, help="folder for the best kernel's artifact")
    tune.add_argument("--no-progress", action="store_true")
    model = commands.add_parser("tune-model",
                                help="tune the slowest kernels of a model (an .onnx file)")
    model.add_argument("model", help="path to an .onnx model")
    model.add_argument("--target", default="cpu")
    model.add_argument("--budget", type=float, default=600.0, help="seconds of tuning")
    model.add_argument("--top", type=int, default=3, help="how many slowest kernels")
    model.add_argument("--trials", type=int, default=64, help="at most, per kernel")
    model.add_argument("--db", default="records.jsonl")
    model.add_argument("--strategy", default="evolutionary",
                       choices=["grid", "random", "evolutionary", "bayesian"])
    model.add_argument("--seed", type=int, default=0)
    best = commands.add_parser("best", help="the best record per workload")
    best.add_argument("--db", required=True)
    return parser


def make_op(name: str, shape: list[int] | None):
    from workbench import ops

    spec = ops.get(name)
    if not shape:
        return spec.factory(**spec.shapes)
    return spec.factory(*shape)


def cmd_tune(args) -> int:
    from workbench.tune.api import tune

    export = Path(args.export) if args.export else None
    if export is not None and export.exists() and (not export.is_dir() or any(export.iterdir())):
        print(f"workbench tune: error: --export {args.export}: not a new or empty folder "
              "(an artifact folder holds exactly its listed files)", file=sys.stderr)
        return 2
    func = make_op(args.op, args.shape)
    result = tune(func, target=args.target, trials=args.trials, db=args.db, space=args.space,
                  strategy=args.strategy, seed=args.seed, batch_size=args.batch_size,
                  time_budget_s=args.time_budget, progress=not args.no_progress)
    print(result)
    if result.best is not None:
        print("best config:", result.best.config)
        if args.export:
            from workbench.tune.artifact import export_artifact

            print("exported to", export_artifact(result, args.export))
    return 0 if result.best is not None else 1


def cmd_tune_model(args) -> int:
    from workbench.tune.model import tune_model

    result = tune_model(args.model, (), target=args.target, db=args.db,
                        time_budget_s=args.budget, top=args.top, trials=args.trials,
                        strategy=args.strategy, seed=args.seed)
    print(result.table().to_string(index=False))
    print(f"tuned {len(result.tuned)} kernel(s) in {result.wall_s:.0f} s; records in {args.db}; "
          f"compile with schedules={args.db!r}")
    return 0


def best_table(db_path: str) -> list[dict]:
    """One row per (workload, target): trials, failures, best latency, GFLOP/s, config."""
    from workbench.tune.database import Database

    db = Database(db_path)
    records = db.records()
    rows: dict[tuple, dict] = {}
    for r in records:
        row = rows.setdefault((r.workload, r.target), {
            "workload": r.workload, "target": r.target, "trials": 0, "failed": 0,
            "best_ms": None, "gflops": None, "config": None})
        row["trials"] += 1
        if not r.ok:
            row["failed"] += 1
        elif row["best_ms"] is None or r.latency_s * 1e3 < row["best_ms"]:
            row.update(best_ms=r.latency_s * 1e3, gflops=r.gflops, config=r.config)
    return list(rows.values())


def cmd_best(args) -> int:
    rows = best_table(args.db)
    if not rows:
        print(f"{args.db}: no records")
        return 1
    print(f"{'workload':<34} {'target':<6} {'trials':>6} {'failed':>6} {'best ms':>10} "
          f"{'GFLOP/s':>9}  config")
    for row in rows:
        ms = f"{row['best_ms']:.4f}" if row["best_ms"] is not None else "-"
        gf = f"{row['gflops']:.2f}" if row["gflops"] else "-"
        print(f"{row['workload']:<34} {row['target']:<6} {row['trials']:>6} {row['failed']:>6} "
              f"{ms:>10} {gf:>9}  {row['config']}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    commands = {"tune": cmd_tune, "tune-model": cmd_tune_model, "best": cmd_best}
    return commands[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
