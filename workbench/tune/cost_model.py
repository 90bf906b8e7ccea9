"""The learned cost model: a ranker trained online from the measurements.

``CostModel.update(space, configs, latencies)`` adds measured candidates (failed ones are
left out) and refits a scikit-learn gradient-boosted tree ensemble on their features
(``workbench.tune.features``) against log latency; ``predict`` returns predicted latencies
in seconds. A tree ensemble ranks well with few samples and needs no feature scaling
(TVM's XGBoost model is the same idea).

Where the space has an analytic prior (``workbench.tune.prior``: spaces of the ``cpu`` and
``numpy`` targets), the model starts from it: before any measurement ``predict`` returns
the prior's estimate, and the trees learn the *residual* ``log(measured) - log(prior)``
(what the roofline misses: LLVM's choices, the machine's real bandwidths), so a handful
of measurements corrects the prior instead of replacing it with a model of six points.

``pairs()`` lists predicted against measured for every candidate predicted before it was
measured, and ``rank_correlation()`` sums it up (Spearman's rho).
"""

from __future__ import annotations

import math

import numpy as np

from workbench.backends.target import resolve_target
from workbench.tune.database import config_key
from workbench.tune.features import IR_FEATURES, candidate_features


def has_prior(space) -> bool:
    """Whether ``space``'s candidates get the analytic prior: a real function, on a target
    whose kind says the prior models it (``TargetKind.cost_prior``: the CPU-like ones)."""
    if getattr(space, "func", None) is None:
        return False
    target = getattr(space, "target_info", None) or getattr(space, "target", "cpu")
    return resolve_target(target, "cost model").kind.cost_prior


class CostModel:
    """Gradient-boosted trees on candidate features; ``min_samples`` before it predicts."""

    def __init__(self, min_samples: int = 6, seed: int = 0):
        self.min_samples = min_samples
        self.seed = seed
        self._x: list[list[float]] = []
        self._y: list[float] = []
        self._model = None
        self._features: dict[str, list[float]] = {}
        self.predicted: dict[str, float] = {}
        self.measured: dict[str, float] = {}

    @property
    def trained(self) -> bool:
        return self._model is not None

    def ranks(self, space) -> bool:
        """Whether ``predict`` gives numbers for ``space`` now (trained, or a prior)."""
        return self.trained or has_prior(space)

    def prior_log(self, space, config: dict) -> float | None:
        """log of the analytic prior's estimate (seconds), None without a prior."""
        if not has_prior(space):
            return None
        numbers = self.features(space, config)
        index = len(numbers) - len(IR_FEATURES) + IR_FEATURES.index("log2_prior")
        if index < 0 or not numbers[index]:
            return None
        return numbers[index] * math.log(2) - math.log(1e9)

    def features(self, space, config: dict) -> list[float]:
        key = config_key(config)
        if key not in self._features:
            if len(self._features) > 20000:  # bounded over long runs
                self._features.clear()
            self._features[key] = candidate_features(space, config)
        return self._features[key]

    def update(self, space, configs: list[dict], latencies: list[float | None]) -> None:
        """Add measurements and refit."""
        from sklearn.ensemble import GradientBoostingRegressor

        for config, latency in zip(configs, latencies, strict=True):
            if latency is None or latency <= 0:
                continue
            self._x.append(self.features(space, config))
            self._y.append(math.log(latency) - (self.prior_log(space, config) or 0.0))
            self.measured[config_key(config)] = latency
        if len(self._y) < self.min_samples:
            return
        model = GradientBoostingRegressor(
            n_estimators=60, max_depth=3, learning_rate=0.1, subsample=0.9,
            random_state=self.seed,
        )
        model.fit(np.array(self._x), np.array(self._y))
        self._model = model

    def predict(self, space, configs: list[dict]) -> list[float]:
        """Predicted latencies (seconds): the prior corrected by the trees; NaN while the
        model is untrained and the space has no prior; inf for a config that does not
        schedule."""
        if not configs:
            return []
        use_prior = has_prior(space)
        if self._model is None and not use_prior:
            return [math.nan] * len(configs)
        priors = [self.prior_log(space, c) for c in configs]
        if self._model is None:  # the prior, calibrated by the mean residual measured so far
            offset = float(np.mean(self._y)) if self._y else 0.0
            learned = [offset] * len(configs)
        else:
            learned = list(self._model.predict(np.array([self.features(space, c)
                                                         for c in configs])))
        values = []
        for guess, prior in zip(learned, priors, strict=True):
            if use_prior and prior is None:  # does not schedule: last
                values.append(math.inf)
            else:
                values.append(float(math.exp(guess + (prior or 0.0))))
        for config, value in zip(configs, values, strict=True):
            self.predicted.setdefault(config_key(config), value)
        return values

    def pairs(self) -> list[tuple[float, float]]:
        """(predicted, measured) for candidates predicted before they were measured."""
        return [(self.predicted[k], self.measured[k]) for k in self.measured if k in self.predicted]

    def rank_correlation(self) -> float:
        """Spearman's rho between predicted and measured (NaN with fewer than 3 pairs)."""
        pairs = self.pairs()
        if len(pairs) < 3:
            return math.nan
        p, m = np.array(pairs).T
        rp, rm = np.argsort(np.argsort(p)), np.argsort(np.argsort(m))
        if rp.std() == 0 or rm.std() == 0:
            return math.nan
        return float(np.corrcoef(rp, rm)[0, 1])
