"""Evolutionary search, seeded and ranked by the cost model (MetaSchedule's search, small).

Each round: parents are the best measured configurations (plus random ones while few are
measured); children come from mutating one or two knobs (a tile split moved to a neighbouring
value of its domain, another order, another annotation) and from crossover of two parents;
the cost model ranks the children and the best ``n`` are proposed, except a share
``epsilon`` drawn at random so the model sees unexplored regions.
"""

from __future__ import annotations

from workbench.tune.database import _jsonable
from workbench.tune.strategies.base import Strategy


class EvolutionarySearch(Strategy):
    """Parameters: ``population`` children per proposal, ``epsilon`` random share,
    ``elite`` parents kept."""

    name = "evolutionary"

    def __init__(self, seed: int = 0, population: int = 64, epsilon: float = 0.25,
                 elite: int = 8):
        super().__init__(seed)
        self.population = population
        self.epsilon = epsilon
        self.elite = elite

    def mutate(self, config: dict) -> dict:
        """Change one or two free knobs: ordered knobs step to a neighbour, others jump."""
        child = dict(config)
        free = self.space.free_knobs
        if not free:
            return child
        for knob in self.rng.sample(free, min(len(free), self.rng.choice([1, 1, 2]))):
            values = self.space.domains[knob]
            index = self.space.index_of(knob, child[knob])
            if len(values) > 2 and self.rng.random() < 0.7:
                index = max(0, min(len(values) - 1, index + self.rng.choice([-2, -1, 1, 2])))
            else:
                index = self.rng.randrange(len(values))
            child[knob] = _jsonable(values[index])
        return child

    def crossover(self, a: dict, b: dict) -> dict:
        return {k: (a[k] if self.rng.random() < 0.5 else b[k]) for k in a}

    def _parents(self) -> list[dict]:
        measured = sorted((c for c in self.history if c[1] is not None), key=lambda c: c[1])
        parents = [c for c, _ in measured[: self.elite]]
        if not parents:
            parents.append(self.space.default_config())
        while len(parents) < 2:
            parents.append(self.space.random_config(self.rng))
        return parents

    def propose(self, n: int, seen: set[str]) -> list[dict]:
        parents = self._parents()
        children = []
        for _ in range(self.population):
            if len(parents) > 1 and self.rng.random() < 0.3:
                a, b = self.rng.sample(parents, 2)
                child = self.mutate(self.crossover(a, b))
            else:
                child = self.mutate(self.rng.choice(parents))
            children.append(child)
        children = self._fresh(children, len(children), seen)
        n_random = max(1, int(round(n * self.epsilon))) if n > 1 else 0
        if self.cost_model is not None and self.cost_model.trained:
            scores = self.cost_model.predict(self.space, children)
            children = [c for _, c in sorted(zip(scores, children, strict=True),
                                             key=lambda p: p[0])]
        else:
            self.rng.shuffle(children)
        picked = children[: n - n_random]
        if not self.history:  # the first batch: the space's default, then its mutants
            picked = self._fresh([self.space.default_config()] + picked, n - n_random, seen)
        randoms = (self.space.random_config(self.rng) for _ in range(50 * n))
        picked += self._fresh(randoms, n - len(picked), seen | _keys(picked))
        return picked


def _keys(configs):
    from workbench.tune.database import config_key

    return {config_key(c) for c in configs}
