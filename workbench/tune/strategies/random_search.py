"""Random search: uniform configurations, without repeats."""

from __future__ import annotations

from workbench.tune.strategies.base import Strategy


class RandomSearch(Strategy):
    """Draws uniformly from the (pinned) space, seeded; gives up after many repeats."""

    name = "random"

    def propose(self, n: int, seen: set[str]) -> list[dict]:
        size = self.space.size()
        if size <= 4 * (n + len(seen)):  # small space: shuffle what is left of the grid
            remaining = self._fresh(self.space.grid(), size, seen)
            self.rng.shuffle(remaining)
            return remaining[:n]
        draws = (self.space.random_config(self.rng) for _ in range(50 * n))
        return self._fresh(draws, n, seen)
