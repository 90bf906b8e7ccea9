"""Bayesian optimisation through optuna's TPE sampler (not hand-written).

Each free knob is a categorical parameter over the indices of its domain; ``propose`` asks
the study for trials, ``observe`` tells it the log latency (a failed candidate is a failed
trial, which TPE leaves out of its model). Pinned knobs are not parameters.

Warm start: where the cost model can rank before any measurement (a space with an analytic
prior, ``workbench.tune.prior``), the ``n_startup`` trials TPE would draw at random are
instead the best of ``init_population`` sampled candidates by the prior, enqueued into the
study (``study.enqueue_trial``); TPE then models from measurements that are already good.
After that, each proposal asks TPE for ``filter`` times as many trials as it needs, and the
cost model (the prior corrected by the measurements) keeps the best ones; the others are
told to the study as pruned, never measured (TPE proposes, the model disposes: a hopeless
candidate costs seconds to measure on a CPU).
"""

from __future__ import annotations

import math

from workbench.tune.database import _jsonable, config_key
from workbench.tune.strategies.base import Strategy


class BayesianSearch(Strategy):
    """TPE over the knob indices; ``n_startup`` random (or prior-ranked) trials before the
    model is used; ``filter`` TPE trials asked per one measured where the cost model ranks."""

    name = "bayesian"

    def __init__(self, seed: int = 0, n_startup: int = 8, init_population: int = 64,
                 filter: int = 4):
        super().__init__(seed)
        self.filter = filter
        self.n_startup = n_startup
        self.init_population = init_population
        self._warm = False
        self._study = None
        self._pending: dict[str, object] = {}

    def setup(self, space, cost_model=None) -> None:
        import optuna

        super().setup(space, cost_model)
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        sampler = optuna.samplers.TPESampler(seed=self.seed, n_startup_trials=self.n_startup)
        self._study = optuna.create_study(direction="minimize", sampler=sampler)

    def _ask(self) -> tuple[object, dict]:
        trial = self._study.ask()
        config = {}
        for knob, values in self.space.domains.items():
            if len(values) == 1:
                config[knob] = _jsonable(values[0])
            else:
                index = trial.suggest_categorical(knob, list(range(len(values))))
                config[knob] = _jsonable(values[index])
        return trial, config

    def _warm_start(self, seen: set[str]) -> None:
        """Enqueue the prior's best sampled candidates as the startup trials."""
        self._warm = True
        if self.history or not self.can_rank():
            return
        best = self.ranked(self.initial_population(self.init_population, seen))
        for config in best[: self.n_startup]:
            params = {k: self.space.index_of(k, config[k])
                      for k, values in self.space.domains.items() if len(values) > 1}
            self._study.enqueue_trial(params)

    def propose(self, n: int, seen: set[str]) -> list[dict]:
        import optuna

        if not self._warm:
            self._warm_start(seen)
        want = n * self.filter if self.can_rank() else n
        asked: list[tuple[object, dict]] = []
        keys = set(seen)
        for _ in range(20 * want):
            if len(asked) == want:
                break
            trial, config = self._ask()
            key = config_key(config)
            if key in keys or not self.space.valid(config):  # a repeat or no candidate:
                # tell TPE it is pruned, ask again
                self._study.tell(trial, state=optuna.trial.TrialState.PRUNED)
                continue
            keys.add(key)
            asked.append((trial, config))
        keep = {config_key(c) for c in self.ranked([c for _, c in asked])[:n]}
        out: list[dict] = []
        for trial, config in asked:
            key = config_key(config)
            if key in keep:
                self._pending[key] = trial
                out.append(config)
            else:  # filtered out by the cost model: never measured
                self._study.tell(trial, state=optuna.trial.TrialState.PRUNED)
        return out

    def observe(self, configs: list[dict], latencies: list[float | None]) -> None:
        import optuna

        super().observe(configs, latencies)
        for config, latency in zip(configs, latencies, strict=True):
            trial = self._pending.pop(config_key(config), None)
            if trial is None:  # measured elsewhere (resumed records): teach TPE too
                if latency is None:
                    continue
                params, dists = {}, {}
                for knob, values in self.space.domains.items():
                    if len(values) > 1:
                        params[knob] = self.space.index_of(knob, config[knob])
                        dists[knob] = optuna.distributions.CategoricalDistribution(
                            list(range(len(values))))
                self._study.add_trial(optuna.trial.create_trial(
                    params=params, distributions=dists, value=math.log(latency)))
                continue
            if latency is None:
                self._study.tell(trial, state=optuna.trial.TrialState.FAIL)
            else:
                self._study.tell(trial, math.log(latency))
