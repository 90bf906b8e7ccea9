"""Every strategy finds the known optimum of a small synthetic space (no measuring)."""

from __future__ import annotations

import itertools
import math

import pytest

from workbench.tune.cost_model import CostModel
from workbench.tune.database import config_key
from workbench.tune.space import SearchSpace
from workbench.tune.strategies import STRATEGIES, get_strategy


class Synthetic(SearchSpace):
    """4 x 4 x 3 x 2 = 96 configs; latency minimal at x=2, y=[2, 4], z='b', w=True."""

    kind = "synthetic"

    def __init__(self):
        super().__init__(None, "synthetic")
        self._domains = {
            "x": [0, 1, 2, 3],
            "y": [[8, 1], [4, 2], [2, 4], [1, 8]],
            "z": ["a", "b", "c"],
            "w": [False, True],
        }

    def latency(self, c):
        return (1.0 + (c["x"] - 2) ** 2 + abs(math.log2(c["y"][1]) - 2) * 0.7
                + {"a": 0.5, "b": 0.0, "c": 0.9}[c["z"]] + (0.0 if c["w"] else 0.3))


OPTIMUM = {"x": 2, "y": [2, 4], "z": "b", "w": True}


def _search(strategy, space, trials, batch=6, model=None):
    strategy.setup(space, model)
    seen, found = set(), []
    while len(found) < trials:
        configs = strategy.propose(min(batch, trials - len(found)), seen)
        if not configs:
            break
        keys = [config_key(c) for c in configs]
        assert not set(keys) & seen and len(set(keys)) == len(keys)  # never repeats
        seen.update(keys)
        lats = [space.latency(c) for c in configs]
        strategy.observe(configs, lats)
        if model is not None:
            model.update(space, configs, lats)
        found.extend(zip(configs, lats, strict=True))
    return min(found, key=lambda p: p[1])[0], len(found)


class NoIR(CostModel):
    def features(self, space, config):
        from workbench.tune.features import config_features

        return config_features(space, config)


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_strategy_finds_the_optimum(name):
    space = Synthetic()
    # grid and random cover the whole space (they never repeat); the model-guided ones must
    # find the optimum within half of it
    # The model-guided strategies draw from optuna's / scikit-learn's random streams, which a
    # library release may change: over four seeds they must find it at least three times (30 of
    # 30 seeds did when this was written), never a claim about one stream.
    trials = 96 if name in ("grid", "random") else 48
    seeds = (1,) if name in ("grid", "random") else (1, 2, 3, 4)
    found = 0
    for seed in seeds:
        best, n = _search(get_strategy(name, seed=seed), Synthetic(), trials,
                          model=NoIR(min_samples=6))
        assert n <= trials
        assert space.latency(best) <= sorted(space.latency(dict(zip(space._domains, values, strict=True)))
                                            for values in itertools.product(*space._domains.values()))[3], (
            name, seed, best)
        found += best == OPTIMUM
    assert found >= len(seeds) - (len(seeds) > 1), (name, found)


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_pinned_knobs_are_never_changed(name):
    space = Synthetic().pin(z="c", w=False)
    assert space.size() == 16 and space.free_knobs == ["x", "y"]
    strategy = get_strategy(name, seed=2)
    strategy.setup(space, None)
    configs = strategy.propose(10, set())
    assert configs and all(c["z"] == "c" and c["w"] is False for c in configs)


def test_grid_exhausts_and_stops():
    space = Synthetic().pin(x=0, y=[8, 1])
    best, n = _search(get_strategy("grid"), space, 100)
    assert n == 6 and best == {"x": 0, "y": [8, 1], "z": "b", "w": True}


def test_pin_rejects_unknown_knobs_and_values():
    with pytest.raises(KeyError, match="no knob 'q'"):
        Synthetic().pin(q=1)
    with pytest.raises(ValueError, match="not a value"):
        Synthetic().pin(x=9)


def test_cost_model_ranks_the_synthetic_space():
    space = Synthetic()
    model = NoIR(min_samples=6)
    configs = list(space.grid())
    train = configs[::3]
    model.update(space, train, [space.latency(c) for c in train])
    test = [c for c in configs if c not in train]
    predicted = model.predict(space, test)
    model.update(space, test, [space.latency(c) for c in test])
    assert model.rank_correlation() > 0.8
    assert len(model.pairs()) == len(test)
    assert all(p > 0 for p in predicted)
