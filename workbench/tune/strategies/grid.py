"""Grid search: every configuration in order (the last knob fastest)."""

from __future__ import annotations

from workbench.tune.strategies.base import Strategy


class GridSearch(Strategy):
    """Walks ``space.grid()``; resumed runs skip what the records already hold."""

    name = "grid"

    def propose(self, n: int, seen: set[str]) -> list[dict]:
        return self._fresh(self.space.grid(), n, seen)
