"""Evolutionary search, seeded and ranked by the cost model (MetaSchedule's search, small).

The first batch, before anything is measured: ``init_population`` sampled candidates
(the space's default and random draws) ranked by the cost model, which on a space with
an analytic prior (``workbench.tune.prior``) is the prior itself; the best ``n`` are
measured (random ones when nothing can rank them).

Each round after: parents are the best measured configurations (plus random ones while few
are measured); children come from mutating one or two knobs (a tile split moved to a
neighbouring value of its domain, another order, another annotation) and from crossover of
two parents; the cost model (the prior corrected by the measurements) ranks the children
and the best ``n`` are proposed, except a share ``epsilon`` of fresh random draws so the
model sees unexplored regions (where the model can rank, the better half of ``2 x`` as
many draws: a hopeless random candidate costs seconds to measure).
"""

from __future__ import annotations

from workbench.tune.database import _jsonable
from workbench.tune.strategies.base import Strategy


class EvolutionarySearch(Strategy):
    """Parameters: ``population`` children per proposal, ``epsilon`` random share,
    ``elite`` parents kept, ``init_population`` candidates ranked for the first batch."""

    name = "evolutionary"

    def __init__(self, seed: int = 0, population: int = 64, epsilon: float = 0.25,
                 elite: int = 8, init_population: int = 64):
        super().__init__(seed)
        self.population = population
        self.init_population = init_population
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
        if not self.history and self.can_rank():  # the first batch: the best sampled ones
            return self.ranked(self.initial_population(self.init_population, seen))[:n]
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
        if self.can_rank():
            children = self.ranked(children)
        else:
            self.rng.shuffle(children)
        picked = children[: n - n_random]
        if not self.history:  # the first batch: the space's default, then its mutants
            picked = self._fresh([self.space.default_config()] + picked, n - n_random, seen)
        taken = seen | _keys(picked)
        randoms = self._fresh((self.space.random_config(self.rng) for _ in range(50 * n)),
                              2 * (n - len(picked)) if self.can_rank() else n - len(picked),
                              taken)
        if self.can_rank():
            randoms = self.ranked(randoms)[: max(1, len(randoms) // 2)]
            self.rng.shuffle(randoms)
        picked += randoms[: n - len(picked)]
        return picked


def _keys(configs):
    from workbench.tune.database import config_key

    return {config_key(c) for c in configs}
