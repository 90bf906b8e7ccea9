"""Auto-tuning: search spaces, strategies, a cost model, isolated runners, records.

>>> import workbench as wb
>>> result = wb.tune(func, target="cpu", trials=64, db="records.jsonl")   # doctest: +SKIP
>>> result.best, result.to_frame(), result.apply(func)                     # doctest: +SKIP
>>> sch = wb.load_best("records.jsonl", func, target="cpu")                # doctest: +SKIP

| module | what |
| --- | --- |
| ``space``, ``space_template``, ``space_generated``, ``templates`` | search spaces |
| ``strategies/`` | grid, random, evolutionary, bayesian (optuna TPE) |
| ``features``, ``cost_model`` | IR features and the online learned ranker |
| ``isolation``, ``runner``, ``runner_dask`` | isolated build and measurement |
| ``database`` | JSONL records |
| ``artifact`` | export the best kernel to a folder, load it without compiling |
| ``api``, ``progress`` | ``tune``, ``load_best``, tqdm (the command line: ``workbench.cli``) |
"""

from workbench.tune.api import TuneResult, load_best, make_space, tune
from workbench.tune.cost_model import CostModel
from workbench.tune.database import Database, Record, RecordWarning, workload_key
from workbench.tune.runner import Candidate, LocalRunner, Outcome, Task
from workbench.tune.space import SearchSpace
from workbench.tune.space_template import ConfigSpace, TemplateSpace
from workbench.tune.strategies import (
    BayesianSearch,
    EvolutionarySearch,
    GridSearch,
    RandomSearch,
    Strategy,
    get_strategy,
)

__all__ = [
    "tune", "load_best", "make_space", "TuneResult", "CostModel", "Database", "Record",
    "RecordWarning", "workload_key", "Candidate", "LocalRunner", "Outcome", "Task",
    "SearchSpace", "ConfigSpace", "TemplateSpace", "BayesianSearch", "EvolutionarySearch",
    "GridSearch", "RandomSearch", "Strategy", "get_strategy",
]

import sys as _sys  # noqa: E402
import types as _types  # noqa: E402


class _CallableModule(_types.ModuleType):
    """This package, callable as the function ``tune``: ``wb.tune(func, ...)`` and
    ``wb.tune.LocalRunner`` both work (``workbench.measure`` does the same)."""

    def __call__(self, *args, **kwargs) -> TuneResult:
        return tune(*args, **kwargs)


_sys.modules[__name__].__class__ = _CallableModule
