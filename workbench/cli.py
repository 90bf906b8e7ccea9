"""The command line: ``python -m workbench tune ...`` and ``python -m workbench best ...``.

::

    python -m workbench tune matmul --shape 1024,1024,1024 --target cpu --trials 64 --db r.jsonl
    python -m workbench best --db r.jsonl
    python -m workbench tune-model model.onnx --target cuda --budget 600 --top 3 --db r.jsonl

``tune`` takes any operator of the library (``workbench.ops.LIBRARY``); ``--shape`` gives its
factory's leading arguments in order (``matmul(M, N, K)``, ``softmax(M, N)``...). ``best``
prints the best record per workload with its latency and GFLOP/s. ``tune-model`` tunes the
slowest kernels of an ONNX model within a time budget (``workbench.graph.tune_model``).

The command line sits above every layer (it drives the tuner and the graph level), beside
the package's ``__main__``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``python -m workbench tune: error: --trials: ...``,
    exit code 2 (argparse's), before anything is measured."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def _parse_shape(text: str) -> list[int]:
    try:
        sizes = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"takes integers like 1024,1024,1024, not {text!r}") from None
    if not sizes:
        raise argparse.ArgumentTypeError("takes at least one size, like 1024,1024,1024")
    bad = [n for n in sizes if n <= 0]
    if bad:
        raise argparse.ArgumentTypeError(f"sizes must be positive, got {bad[0]} in {text!r}")
    return sizes


def _positive(kind):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"takes {'an integer' if kind is int else 'a number'}, not {text!r}") from None
        if not value > 0:  # also refuses nan
            raise argparse.ArgumentTypeError(f"must be positive, got {text}")
        return value

    parse.__name__ = f"positive {kind.__name__}"
    return parse


_positive_int = _positive(int)
_positive_float = _positive(float)


def build_parser() -> argparse.ArgumentParser:
    from workbench.tune.spaces import SPACES

    parser = _Parser(prog="python -m workbench", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    tune = commands.add_parser("tune", help="tune an operator of the library")
    tune.add_argument("op", help="operator name (see workbench.ops.LIBRARY)")
    tune.add_argument("--shape", type=_parse_shape, default=None,
                      help="the operator factory's leading arguments, comma separated")
    tune.add_argument("--target", default="cpu")
    tune.add_argument("--trials", type=_positive_int, default=64)
    tune.add_argument("--db", default="records.jsonl")
    tune.add_argument("--space", default="generated", choices=list(SPACES),
                      help="'generated' or 'matmul' (a cpu template)")
    tune.add_argument("--strategy", default="evolutionary",
                      choices=["grid", "random", "evolutionary", "bayesian"])
    tune.add_argument("--seed", type=int, default=0)
    tune.add_argument("--batch-size", type=_positive_int, default=8)
    tune.add_argument("--time-budget", type=_positive_float, default=None, help="seconds")
    tune.add_argument("--export", default=None, help="folder for the best kernel's artifact")
    tune.add_argument("--no-progress", action="store_true")
    model = commands.add_parser("tune-model",
                                help="tune the slowest kernels of a model (an .onnx file)")
    model.add_argument("model", help="path to an .onnx model")
    model.add_argument("--target", default="cpu")
    model.add_argument("--budget", type=_positive_float, default=600.0, help="seconds of tuning")
    model.add_argument("--top", type=_positive_int, default=3, help="how many slowest kernels")
    model.add_argument("--trials", type=_positive_int, default=64, help="at most, per kernel")
    model.add_argument("--db", default="records.jsonl")
    model.add_argument("--strategy", default="evolutionary",
                       choices=["grid", "random", "evolutionary", "bayesian"])
    model.add_argument("--seed", type=int, default=0)
    best = commands.add_parser("best", help="the best record per workload")
    best.add_argument("--db", required=True)
    parser.subparsers = {"tune": tune, "tune-model": model, "best": best}
    return parser


def make_op(name: str, shape: list[int] | None):
    from workbench import ops

    spec = ops.get(name)
    if not shape:
        return spec.factory(**spec.shapes)
    return spec.factory(*shape)


def shape_names(name: str) -> list[str]:
    """The sizes ``--shape`` gives operator ``name``: its default shapes less its options
    (``stride``, ``eps``...), in the factory's order."""
    from workbench import ops

    spec = ops.get(name)
    return [key for key in spec.shapes if key not in spec.options]


def _writable_db(parser, path: str) -> None:
    """``--db`` must be a file this process can append to (or create): refused before any
    measurement, not after the first batch."""
    import os

    db = Path(path)
    if db.is_dir():
        parser.error(f"argument --db: {path!r} is a folder, not a records file")
    if db.exists():
        if not os.access(db, os.R_OK | os.W_OK):
            parser.error(f"argument --db: {path!r} is not writable")
        return
    folder = db.parent if str(db.parent) else Path(".")
    if not folder.is_dir():
        parser.error(f"argument --db: folder {str(folder)!r} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        parser.error(f"argument --db: folder {str(folder)!r} is not writable")


def check_args(parser, args) -> None:
    """What argparse's types cannot check alone: the operator and its number of sizes, the
    target, the records file. Every refusal is ``parser.error`` (one line, exit code 2)."""
    from workbench.backends.common.target import target_names

    if getattr(args, "target", None) is not None and args.target not in target_names():
        parser.error(f"argument --target: unknown target {args.target!r} (choose from "
                     f"{', '.join(target_names())})")
    if args.command == "tune":
        from workbench import ops

        names = [spec.name for spec in ops.LIBRARY]
        if args.op not in names:
            parser.error(f"argument op: no operator {args.op!r} in the library (choose from "
                         f"{', '.join(names)})")
        if args.shape is not None:
            sizes = shape_names(args.op)
            if len(args.shape) != len(sizes):
                parser.error(f"argument --shape: {args.op} takes {len(sizes)} sizes "
                             f"({','.join(sizes)}), got {len(args.shape)}")
            try:
                make_op(args.op, args.shape)
            except (ValueError, TypeError) as err:
                parser.error(f"argument --shape: {args.op}{tuple(args.shape)}: {err}")
        from workbench.tune.spaces import SpaceTargetError, check_space

        try:
            check_space(args.space, args.target, "tune")
        except SpaceTargetError as err:
            parser.error(f"argument --space: {err}")
    if args.command == "best":
        if not Path(args.db).is_file():
            parser.error(f"argument --db: no records file {args.db!r}")
        return
    if args.command == "tune-model":
        if not Path(args.model).is_file():
            parser.error(f"argument model: no file {args.model!r}")
        from workbench.graph.compile_checks import read_onnx
        from workbench.graph.errors import ModelFileError

        try:
            read_onnx(args.model)
        except ModelFileError as err:
            parser.error(f"argument model: {err}")
    _writable_db(parser, args.db)


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
    from workbench.graph.tune_model import tune_model

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
    parser = build_parser()
    args = parser.parse_args(argv)
    check_args(parser.subparsers[args.command], args)
    commands = {"tune": cmd_tune, "tune-model": cmd_tune_model, "best": cmd_best}
    try:
        return commands[args.command](args)
    except Exception as err:
        errors = sys.modules.get("workbench.graph.errors")  # loaded when a model was read
        if errors is None or not isinstance(err, errors.GraphError):
            raise
        # the model is at fault (an unsupported operator, an input): one line, exit 2
        text = "; ".join(line.strip().rstrip(":") for line in str(err).splitlines()
                         if line.strip())
        print(f"{parser.subparsers[args.command].prog}: error: {text}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
