"""The interface every strategy implements.

The tuner loop asks ``propose(n, seen)`` for up to ``n`` configurations not in ``seen`` (config
keys already measured, this run or an earlier one in the records), measures them, and tells
the strategy with ``observe(configs, latencies)`` (None for a failed candidate). A strategy
may use ``self.cost_model`` (``workbench.tune.cost_model``) to choose what to measure:
``ranked(configs)`` orders candidates by its prediction (the analytic prior before any
measurement, on spaces that have one), ``initial_population(n, seen)`` draws the sampled
candidates a search starts from (the space's defaults first, then random draws).
"""

from __future__ import annotations

import random

from workbench.tune.database import config_key


class Strategy:
    """Base class. Subclasses implement ``propose``; ``observe`` is optional."""

    name = "strategy"

    def __init__(self, seed: int = 0):
        self.seed = seed
        self.rng = random.Random(seed)
        self.space = None
        self.cost_model = None
        self.history: list[tuple[dict, float | None]] = []

    def setup(self, space, cost_model=None) -> None:
        self.space = space
        self.cost_model = cost_model

    def propose(self, n: int, seen: set[str]) -> list[dict]:
        raise NotImplementedError

    def observe(self, configs: list[dict], latencies: list[float | None]) -> None:
        self.history.extend(zip(configs, latencies, strict=True))

    def can_rank(self) -> bool:
        """Whether the cost model can order candidates now (trained, or a prior)."""
        return self.cost_model is not None and self.cost_model.ranks(self.space)

    def ranked(self, configs: list[dict]) -> list[dict]:
        """``configs`` ordered by predicted latency, fastest first (as given when the cost
        model cannot rank yet)."""
        if not configs or not self.can_rank():
            return list(configs)
        scores = self.cost_model.predict(self.space, configs)
        order = sorted(range(len(configs)), key=lambda i: scores[i])
        return [configs[i] for i in order]

    def initial_population(self, n: int, seen: set[str]) -> list[dict]:
        """Up to ``n`` distinct configurations not in ``seen``: the space's default, then
        random draws (the space's sampling distribution)."""
        draws = [self.space.default_config()]
        draws += [self.space.random_config(self.rng) for _ in range(4 * n)]
        return self._fresh(draws, n, seen)

    def _fresh(self, configs, n: int, seen: set[str]) -> list[dict]:
        """The first ``n`` of ``configs`` whose key is neither in ``seen`` nor repeated,
        and that the space accepts (``space.valid``)."""
        out, keys = [], set(seen)
        for config in configs:
            key = config_key(config)
            if key not in keys and not self.space.valid(config):
                keys.add(key)
                continue
            if key not in keys:
                keys.add(key)
                out.append(config)
                if len(out) == n:
                    break
        return out

    def __repr__(self) -> str:
        return f"{type(self).__name__}(seed={self.seed})"
