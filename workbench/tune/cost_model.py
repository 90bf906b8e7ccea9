"""The learned cost model: a ranker trained online from the measurements.

``CostModel.update(space, configs, latencies)`` adds measured candidates (failed ones are
left out) and refits a scikit-learn gradient-boosted tree ensemble on their features
(``workbench.tune.features``) against log latency; ``predict`` returns predicted latencies
in seconds. A tree ensemble ranks well with few samples and needs no feature scaling
(TVM's XGBoost model is the same idea). ``pairs()`` lists predicted against measured for
every candidate predicted before it was measured, and ``rank_correlation()`` sums it up
(Spearman's rho).
"""

from __future__ import annotations

import math

import numpy as np

from workbench.tune.database import config_key
from workbench.tune.features import candidate_features


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
            self._y.append(math.log(latency))
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
        """Predicted latencies (seconds); NaN while the model is untrained."""
        if not configs:
            return []
        if self._model is None:
            return [math.nan] * len(configs)
        x = np.array([self.features(space, c) for c in configs])
        values = [float(math.exp(v)) for v in self._model.predict(x)]
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
