"""Bayesian optimisation through optuna's TPE sampler (not hand-written).

Each free knob is a categorical parameter over the indices of its domain; ``propose`` asks
the study for trials, ``observe`` tells it the log latency (a failed candidate is a failed
trial, which TPE leaves out of its model). Pinned knobs are not parameters.
"""

from __future__ import annotations

import math

from workbench.tune.database import _jsonable, config_key
from workbench.tune.strategies.base import Strategy


class BayesianSearch(Strategy):
    """TPE over the knob indices; ``n_startup`` random trials before the model is used."""

    name = "bayesian"

    def __init__(self, seed: int = 0, n_startup: int = 8):
        super().__init__(seed)
        self.n_startup = n_startup
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

    def propose(self, n: int, seen: set[str]) -> list[dict]:
        import optuna

        out: list[dict] = []
        keys = set(seen)
        for _ in range(20 * n):
            if len(out) == n:
                break
            trial, config = self._ask()
            key = config_key(config)
            if key in keys:  # a repeat: tell TPE it is pruned, ask again
                self._study.tell(trial, state=optuna.trial.TrialState.PRUNED)
                continue
            keys.add(key)
            self._pending[key] = trial
            out.append(config)
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
