"""``tune_model``: tune the slowest kernels of a compiled model within a time budget.

The model is compiled with the default schedules, each kernel timed
(``CompiledModel.latency_report``: CUDA events per kernel on ``cuda``), and the ``top``
slowest kernels are tuned one after the other with ``wb.tune`` (each kernel's share of
what is left of the budget), every record going to ``db``. Each tuned kernel's default
schedule is measured first, by the same runner, as one more record (space
``"default"``): the best record of a kernel is then a tuned schedule only where one beat
the default (on an H100, 8 candidates of the generated cuda space were all slower than
the register-blocked default of the block's matmuls, and were used). The model is then
compiled again with ``schedules=db`` (the best record of each tuned kernel, the default
schedule of the others) and timed again.

Command line: ``python -m workbench tune-model model.onnx --target cuda --budget 600``.

Example
-------
>>> result = tune_model(model, (x,), target="cuda", time_budget_s=600)  # doctest: +SKIP
>>> result.table()                                                      # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import os
import time

import numpy as np


@dataclasses.dataclass
class ModelTuneResult:
    """What ``tune_model`` did: the per-kernel latencies before and after (DataFrames),
    the ``TuneResult`` of each tuned kernel (by node), and the recompiled model."""

    before: object
    after: object
    tuned: dict
    compiled: object
    wall_s: float

    def table(self):
        """One row per kernel: median microseconds before and after, and whether tuned."""
        frame = self.before[["kernel", "pattern", "median_us"]].rename(
            columns={"median_us": "before_us"})
        frame["after_us"] = list(self.after["median_us"])
        frame["tuned"] = [k in self.tuned and not _default_won(self.tuned[k])
                          for k in frame["kernel"]]
        return frame


DEFAULT_SPACE = "default"
"""The space name of the record holding a kernel's default schedule, measured by
``tune_model`` beside the tuned candidates."""


def default_space(target):
    """A one-point template space whose schedule is the default rule's for ``target``
    (``recipes.graph_cpu.default_schedule``): measured like a tuned candidate, recorded
    like one, so ``load_best`` prefers a tuned schedule only where it is faster."""
    from workbench.recipes.graph_cpu import default_schedule

    def default(cfg, func):
        cfg.define_knob("schedule", [DEFAULT_SPACE])
        return default_schedule(func, target)

    default.__name__ = DEFAULT_SPACE
    return default


def _default_won(result) -> bool:
    """Whether a kernel's best record is its default schedule's."""
    best = result.best
    return best is None or best.space == DEFAULT_SPACE


def example_arrays(compiled, seed: int = 0) -> list[np.ndarray]:
    """Random inputs (uniform in [-1, 1), never zeros) of a compiled model's input types."""
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, ty.shape).astype(ty.dtype)
            for ty in compiled.graph.inputs.values()]


def tune_model(model, example_inputs=(), target: str = "cpu", db: str = "records.jsonl",
               time_budget_s: float = 600.0, top: int = 3, trials: int = 64,
               repeat: int = 10, **tune_options) -> ModelTuneResult:
    """Tune the ``top`` slowest kernels of ``model`` (see the module docstring).

    Parameters
    ----------
    model, example_inputs, target
        As for ``wb.compile``.
    db : path
        The records file every kernel's tuning appends to.
    time_budget_s : float
        For the tuning runs together (the compiles and timings around them excluded).
    top : int
        How many of the slowest kernels to tune.
    trials : int
        At most this many candidates per kernel.
    tune_options
        Passed to ``wb.tune`` (``strategy``, ``seed``, ``runner``, ``progress``...).
    """
    from workbench.graph.compiler import compile as compile_model
    from workbench.tune.api import check_count, check_db, check_seconds, tune
    from workbench.tune.runner import LocalRunner

    # checked before the model is compiled and timed (wb.tune checks its own again)
    for name, value in (("top", top), ("trials", trials), ("repeat", repeat)):
        check_count(name, value, least=1, who="tune_model")
    check_seconds("time_budget_s", time_budget_s, positive=False, who="tune_model")
    check_db(db, who="tune_model")
    start = time.perf_counter()
    compiled = compile_model(model, example_inputs, target=target)
    inputs = example_inputs or example_arrays(compiled)
    before = compiled.latency_report(*inputs, repeat=repeat)
    slowest = list(before.sort_values("median_us", ascending=False)["kernel"][:top])
    tuned = {}
    tune_start = time.perf_counter()
    tune_options.setdefault("progress", False)
    given = runner = tune_options.pop("runner", None)
    try:
        for done, node in enumerate(slowest):
            left = time_budget_s - (time.perf_counter() - tune_start)
            if left <= 0:
                break
            share = left / (len(slowest) - done)
            runner = runner or LocalRunner()  # one set of workers for every tuning run
            func = compiled.func(node)
            own = {k: v for k, v in tune_options.items()
                   if k not in ("pin", "space", "strategy")}
            baseline = tune(func, target=target, trials=1, db=db, runner=runner,
                            space=default_space(target), strategy="grid", **own)
            result = tune(func, target=target, trials=trials, db=db, time_budget_s=share,
                          runner=runner, **tune_options)
            result.records = baseline.records + result.records  # best: the faster of all
            tuned[node] = result
    finally:
        if given is None and runner is not None:
            runner.close()
    # no record at all (a budget spent before the first measurement): the defaults again
    schedules = db if os.path.exists(db) else "default"
    again = compile_model(model, example_inputs, target=target, schedules=schedules)
    after = again.latency_report(*inputs, repeat=repeat)
    return ModelTuneResult(before, after, tuned, again, time.perf_counter() - start)
