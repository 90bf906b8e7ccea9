"""The interface every strategy implements.

The tuner loop asks ``propose(n, seen)`` for up to ``n`` configurations not in ``seen`` (config
keys already measured, this run or an earlier one in the records), measures them, and tells
the strategy with ``observe(configs, latencies)`` (None for a failed candidate). A strategy
may use ``self.cost_model`` (``workbench.tune.cost_model``) to choose what to measure.
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

    def _fresh(self, configs, n: int, seen: set[str]) -> list[dict]:
        """The first ``n`` of ``configs`` whose key is neither in ``seen`` nor repeated."""
        out, keys = [], set(seen)
        for config in configs:
            key = config_key(config)
            if key not in keys:
                keys.add(key)
                out.append(config)
                if len(out) == n:
                    break
        return out

    def __repr__(self) -> str:
        return f"{type(self).__name__}(seed={self.seed})"
