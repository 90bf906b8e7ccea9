"""Search strategies behind one interface (``Strategy.propose`` / ``observe``).

``get_strategy("grid" | "random" | "evolutionary" | "bayesian", seed=...)`` or pass an
instance to ``wb.tune(..., strategy=...)``.
"""

from __future__ import annotations

from workbench.tune.strategies.base import Strategy
from workbench.tune.strategies.bayesian import BayesianSearch
from workbench.tune.strategies.evolutionary import EvolutionarySearch
from workbench.tune.strategies.grid import GridSearch
from workbench.tune.strategies.random_search import RandomSearch

STRATEGIES = {
    "grid": GridSearch,
    "random": RandomSearch,
    "evolutionary": EvolutionarySearch,
    "bayesian": BayesianSearch,
}


def get_strategy(strategy, seed: int = 0) -> Strategy:
    """A strategy instance from a name (or the instance itself)."""
    if isinstance(strategy, Strategy):
        return strategy
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
    return STRATEGIES[strategy](seed=seed)


__all__ = ["Strategy", "GridSearch", "RandomSearch", "EvolutionarySearch", "BayesianSearch",
           "STRATEGIES", "get_strategy"]
