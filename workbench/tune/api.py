"""``wb.tune`` and ``wb.load_best``: the tuning loop and the reuse of what it found.

The loop (one batch at a time; the runner's workers start and warm up in a thread while
the strategy ranks its first candidates): the strategy proposes configurations not yet in
the records; the space turns each into a schedule and its trace; the cost model predicts their
latency; the runner builds them in parallel and measures them one by one, isolated; each
outcome becomes a record appended to the database at once; the strategy and the cost model
learn from the batch.

Resuming: with ``resume=True`` (the default) the records already in ``db`` for this
function and target count toward ``trials`` and are never measured again, so re-running a
killed ``wb.tune(...)`` call with the same arguments finishes the same run.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from workbench.backends.common.target import resolve_target
from workbench.tune.database import (
    Database,
    Record,
    config_key,
    machine_fingerprint,
    software_fingerprint,
    workload_key,
)
from workbench.tune.progress import Progress
from workbench.tune.runner import Candidate, LocalRunner, Task
from workbench.tune.space import SearchSpace
from workbench.tune.spaces import check_space
from workbench.tune.strategies import get_strategy


def make_space(space, func, target="cpu") -> SearchSpace:
    """A ``SearchSpace`` from what ``wb.tune`` accepts: a space, a template function, or a
    named space of ``workbench.tune.spaces.SPACES`` for ``target``: ``"generated"`` (the
    default: the rules of ``target``, ``"cpu"`` or ``"cuda"``) or ``"matmul"`` (the built-in
    matmul template, cpu only: ``SpaceTargetError`` for another target).

    Example
    -------
    >>> make_space("generated", ops.matmul(64, 64, 64), target="cuda").knobs  # doctest: +SKIP
    ['tile:C:i', 'tile:C:j', 'tile:C:k', 'shared:C', 'unroll:C']
    """
    from workbench.tune.spaces import SPACES, check_space

    if isinstance(space, SearchSpace):
        return space
    if space is None:
        space = "generated"
    if isinstance(space, str) and space in SPACES:
        check_space(space, target, "make_space")
        return SPACES[space].make(func, target)
    if callable(space):
        from workbench.tune.space_template import TemplateSpace

        return TemplateSpace(space, func)
    names = " or ".join(repr(name) for name in SPACES)
    raise ValueError(f"space must be a SearchSpace, a template function, {names}, not "
                     f"{space!r}")


@dataclasses.dataclass
class TuneResult:
    """What a tuning run found: every record of the workload (earlier runs included).

    Attributes
    ----------
    records : list of Record
    best : Record or None
        The fastest successful record.
    func, target, space, cost_model
    """

    func: object
    target: str
    records: list[Record]
    space: SearchSpace | None = None
    cost_model: object = None
    wall_s: float = 0.0

    @property
    def best(self) -> Record | None:
        ok = [r for r in self.records if r.ok]
        return min(ok, key=lambda r: r.latency_s) if ok else None

    @property
    def best_config(self) -> dict | None:
        return self.best.config if self.best else None

    def apply(self, func=None):
        """The best schedule, replayed from its trace on ``func`` (default: the tuned one)."""
        from workbench.schedule import Trace

        if self.best is None:
            raise LookupError("no successful record to apply")
        return Trace.from_json(self.best.trace).apply(func if func is not None else self.func)

    def build(self, **options):
        """The best schedule built for the tuned target."""
        from workbench.backends import build

        return build(self.apply(), target=self.target, **options)

    def to_frame(self):
        """One row per record: trial, config knobs, latency, GFLOP/s, predicted, error."""
        import pandas as pd

        rows = []
        for r in self.records:
            row = {"trial": r.trial, "strategy": r.strategy}
            row.update({f"knob:{k}": str(v) if isinstance(v, list) else v
                        for k, v in r.config.items()})
            row.update({"latency_ms": r.latency_s * 1e3 if r.ok else None,
                        "gflops": r.gflops, "predicted_ms":
                        r.predicted_s * 1e3 if r.predicted_s else None,
                        "build_s": r.build_s, "error_kind": r.error_kind})
            rows.append(row)
        return pd.DataFrame(rows)

    def best_so_far(self) -> list[float | None]:
        """Best latency after each record, in record order."""
        best, out = None, []
        for r in self.records:
            if r.ok and (best is None or r.latency_s < best):
                best = r.latency_s
            out.append(best)
        return out

    def __repr__(self) -> str:
        best = self.best
        text = f"{best.latency_s * 1e3:.3f} ms" if best else "none"
        if best and best.gflops:
            text += f", {best.gflops:.1f} GFLOP/s"
        failed = sum(not r.ok for r in self.records)
        return (f"TuneResult({getattr(self.func, 'name', '?')}, target={self.target!r}, "
                f"{len(self.records)} records, {failed} failed, best {text})")


def tune(
    func,
    target="cpu",
    trials: int = 64,
    db: str | Database = "records.jsonl",
    space=None,
    strategy="evolutionary",
    *,
    seed: int = 0,
    batch_size: int = 8,
    pin: dict | None = None,
    runner=None,
    cost_model: bool | object = True,
    progress: bool = True,
    callbacks: list[Callable] | None = None,
    stages: list[Callable] | None = None,
    resume: bool = True,
    repeats: int = 5,
    min_repeat_s: float = 0.0,
    options: dict | None = None,
    time_budget_s: float | None = None,
    kernel_hook: str | None = None,
) -> TuneResult:
    """Search schedules of ``func`` by measuring them; every candidate is recorded in ``db``.

    Parameters
    ----------
    func : PrimFunc
    target : str or Target
        ``"cpu"``, ``"cuda"`` (or ``"numpy"``, for tests: it runs the cpu space); any
        registered target (its kind's ``tuning_rules`` make the generated space).
    trials : int
        Candidates to measure for this workload, counting records already in ``db`` when
        ``resume`` (so a killed run, re-run, finishes).
    db : path or Database
        The JSONL records file (appended, flushed per record).
    space : SearchSpace, template function, ``"generated"`` or ``"matmul"``
        A named space must exist for ``target`` (``workbench.tune.spaces``: ``"matmul"`` is
        a cpu template): ``SpaceTargetError`` before any work otherwise.
    strategy : ``"grid"``, ``"random"``, ``"evolutionary"``, ``"bayesian"`` or a Strategy
    seed : int
        Seeds the strategy, the cost model and the random inputs.
    pin : dict
        Knobs fixed to a value; the strategy searches the rest.
    runner : LocalRunner or DaskRunner, optional
        Default: a ``LocalRunner`` made (and closed) by this call.
    cost_model : bool or CostModel
    progress : bool
        A tqdm bar (a widget in notebooks).
    callbacks : list of callables
        Called with each ``Record`` as it is written.
    stages : list of callables
        Called with each ``progress.Stage`` of a candidate (building, measuring, measured,
        failed; "starting" while the workers start), before its record exists.
    repeats, min_repeat_s : timed calls per candidate, and the least time one timing lasts.
    time_budget_s : float, optional
        Stop proposing new batches after this many seconds.
    kernel_hook : str, optional
        ``"module:function"`` wrapping each kernel in the measuring worker (fault tests).

    Returns
    -------
    TuneResult

    Example
    -------
    >>> result = wb.tune(ops.matmul(64, 64, 64), trials=16, db="records.jsonl",
    ...                  space="matmul", strategy="random")       # doctest: +SKIP
    >>> sch = result.apply(); result.to_frame().head()             # doctest: +SKIP
    """
    from workbench.ir import analysis
    from workbench.tune.cost_model import CostModel

    start = time.perf_counter()
    resolved = resolve_target(target, "tune")
    check_tune_args(func, trials=trials, db=db, batch_size=batch_size, repeats=repeats,
                    min_repeat_s=min_repeat_s, time_budget_s=time_budget_s)
    check_space(space, resolved, "tune")  # a named space of another target: before any work
    target = resolved.name  # records and workload keys hold the name
    database = db if isinstance(db, Database) else Database(db)
    space = make_space(space, func, resolved)
    if pin:
        space.pin(**pin)
    search = get_strategy(strategy, seed=seed)
    model = CostModel(seed=seed) if cost_model is True else (cost_model or None)
    search.setup(space, model)
    workload = workload_key(func, target)
    task = Task(func, resolved, dict(options or {}), seed=seed, repeats=repeats,
                min_repeat_s=min_repeat_s, kernel_hook=kernel_hook, key=workload,
                warm_trace=_warm_trace(space))
    flops = analysis.flops(func)
    machine, software = machine_fingerprint(), software_fingerprint()

    # records of this workload from this space (same knobs) resume the run; records of
    # other spaces neither count toward ``trials`` nor teach the strategy
    knobs = set(space.knobs)
    earlier = [r for r in database.records(workload, target) if set(r.config) == knobs] \
        if resume else []
    seen = {r.key for r in earlier}
    if earlier:
        latencies = [r.latency_s if r.ok else None for r in earlier]
        configs = [r.config for r in earlier]
        search.observe(configs, latencies)
        if model is not None:
            model.update(space, configs, latencies)
    records = list(earlier)
    todo = max(0, trials - len(earlier))
    own_runner = runner is None
    runner = runner or LocalRunner()
    bar = Progress(todo, func.name, progress, callbacks, stages)
    trial = len(earlier)
    warming = None
    if todo > 0 and hasattr(runner, "warm_up"):  # workers start while the strategy ranks
        bar.stage(None, "starting")
        warming = threading.Thread(target=_quietly, args=(runner.warm_up, task), daemon=True)
        warming.start()
    try:
        while todo > 0:
            if time_budget_s is not None and time.perf_counter() - start > time_budget_s:
                break
            configs = search.propose(min(batch_size, todo), seen)
            if not configs:
                break  # the space is exhausted
            # another process tuning into the same file may have measured or taken some
            claimed = database.claim(workload, target, configs)
            if len(claimed) < len(configs):
                seen.update(config_key(c) for c in configs)
                configs = claimed
                if not configs:
                    continue
            predicted = (model.predict(space, configs) if model is not None
                         else [None] * len(configs))
            batch, candidates = [], []
            for config, guess in zip(configs, predicted, strict=True):
                seen.add(config_key(config))
                record = Record(workload, target, config, space=space.name, func_name=func.name,
                                seed=seed, strategy=search.name, machine=machine,
                                software=software,
                                predicted_s=guess if guess is not None and math.isfinite(guess)
                                else None)
                try:
                    record.trace = space.schedule(config).trace.to_json()
                    candidates.append(Candidate(config, record.trace))
                except Exception as err:  # noqa: BLE001 - an illegal config is a failed trial
                    record.error = f"{type(err).__name__}: {err}"[:2000]
                    record.error_kind = "schedule"
                batch.append(record)
            trials_of = [trial + i for i, r in enumerate(batch) if r.error_kind != "schedule"]
            outcomes = iter(runner.run(task, candidates, events=lambda index, state,
                                       trials_of=trials_of: bar.stage(trials_of[index], state))
                            if candidates else ())
            for record in batch:
                if record.error_kind != "schedule":
                    outcome = next(outcomes)
                    record.times_s, record.build_s = outcome.times_s, outcome.build_s
                    record.error, record.error_kind = outcome.error, outcome.error_kind
                    record.latency_s = outcome.latency_s
                    if record.ok and flops:
                        record.gflops = flops / record.latency_s / 1e9
                record.trial = trial
                trial += 1
                database.append(record)
                records.append(record)
                bar.update(record)
            latencies = [r.latency_s if r.ok else None for r in batch]
            search.observe([r.config for r in batch], latencies)
            if model is not None:
                model.update(space, [r.config for r in batch], latencies)
            todo -= len(batch)
    finally:
        bar.close()
        database.release()
        if warming is not None:
            warming.join()
        if own_runner:
            runner.close()
    return TuneResult(func, target, records, space, model, time.perf_counter() - start)


def check_count(name: str, value, *, least: int, who: str = "tune") -> None:
    """``value`` an integer (not a bool) >= ``least``; the error names ``who`` and ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{who}: {name} must be an integer, got {type(value).__name__} "
                        f"{value!r}"[:200])
    if value < least:
        raise ValueError(f"{who}: {name} must be at least {least}, got {value}")


def check_seconds(name: str, value, *, positive: bool, who: str = "tune") -> None:
    """``value`` a finite number of seconds (> 0 where ``positive``, else >= 0)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{who}: {name} is in seconds, a number (like 60 or 0.5), got "
                        f"{type(value).__name__} {value!r}"[:200])
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        raise ValueError(f"{who}: {name} must be a "
                         f"{'positive' if positive else 'non-negative'} finite number of "
                         f"seconds, got {value}")


def check_tune_args(func, *, trials, db, batch_size=8, repeats=5, min_repeat_s=0.0,
                    time_budget_s=None) -> None:
    """``wb.tune``'s arguments checked before anything is measured or written: ``func`` a
    ``PrimFunc``, counts positive integers, times seconds as numbers, and ``db`` a records file
    that can be created or appended to (not a folder, in a folder that exists).

    Example
    -------
    >>> check_tune_args(ops.matmul(8, 8, 8), trials=0, db="r.jsonl")   # doctest: +SKIP
    Traceback (most recent call last):
    ...
    ValueError: tune: trials must be at least 1, got 0
    """
    from workbench.ir import PrimFunc

    if not isinstance(func, PrimFunc):
        raise TypeError(f"tune: func must be a PrimFunc (like ops.matmul(64, 64, 64) or a "
                        f"@T.prim_func), got {type(func).__name__}")
    check_count("trials", trials, least=1)
    check_count("batch_size", batch_size, least=1)
    check_count("repeats", repeats, least=1)
    check_seconds("min_repeat_s", min_repeat_s, positive=False)
    if time_budget_s is not None:
        check_seconds("time_budget_s", time_budget_s, positive=True)
    check_db(db)


def check_db(db, who: str = "tune") -> None:
    """``db`` a ``Database`` or the path of a records file that can be created or appended
    to: not a folder, in a folder that exists."""
    if isinstance(db, Database):
        return
    if not isinstance(db, str | os.PathLike):
        raise TypeError(f"{who}: db must be a records file path or a Database, got "
                        f"{type(db).__name__}")
    path = Path(db)
    if path.is_dir():
        raise IsADirectoryError(f"{who}: db {str(path)!r} is a folder, not a records file")
    folder = path.parent
    if not path.exists() and not folder.is_dir():
        raise FileNotFoundError(f"{who}: db {str(path)!r}: its folder {str(folder)!r} does "
                                "not exist")


def _warm_trace(space) -> str:
    """The trace of the space's default candidate: what the workers build to warm up
    (the unscheduled function may not build at all, e.g. on ``cuda``)."""
    try:
        return space.schedule(space.default_config()).trace.to_json()
    except Exception:  # noqa: BLE001 - no warm-up schedule: the workers warm on the function
        return ""


def _quietly(fn, *args) -> None:
    """``fn(*args)``, ignoring failures (a warm-up that fails leaves the work to ``run``)."""
    try:
        fn(*args)
    except Exception:  # noqa: BLE001
        pass


def load_best(db, func, target="cpu"):
    """The best recorded schedule of ``func`` on ``target``, replayed from its trace.

    Example
    -------
    >>> sch = wb.load_best("records.jsonl", matmul, target="cpu")   # doctest: +SKIP
    >>> kernel = wb.build(sch, target="cpu")                          # doctest: +SKIP
    """
    from workbench.schedule import Trace

    target = resolve_target(target, "load_best").name
    if not isinstance(db, Database):
        if not isinstance(db, str | os.PathLike):
            raise TypeError(f"load_best: db must be a records file path or a Database, got "
                            f"{type(db).__name__}")
        if not Path(db).is_file():  # a LookupError as "no record": callers catch that one
            raise LookupError(f"load_best: {os.fspath(db)!r} is "
                              f"{'a folder' if Path(db).is_dir() else 'no such file'}, "
                              "not a tuning records file")
    database = db if isinstance(db, Database) else Database(db)
    best = database.best(workload_key(func, target), target)
    if best is None:
        raise LookupError(f"{database.path} holds no successful record of {func.name} on {target}")
    return Trace.from_json(best.trace).apply(func)
