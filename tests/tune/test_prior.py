"""The analytic prior and the IR facts it reads: register tile, operand loads, line-granular
footprints with set conflicts, every loop nest; the cost model that starts from it; the
strategies' first batch taken from it."""

from __future__ import annotations

import math
import random

import pytest

import workbench as wb
from workbench import ops
from workbench.backends import lower
from workbench.tune.cost_model import CostModel
from workbench.tune.features import (
    IR_FEATURES,
    candidate_features,
    leaf_chains,
    line_footprints,
    nest_facts,
    operand_loads,
    register_tile,
)
from workbench.tune.prior import (
    MEMORY_ACCUMULATORS,
    CpuModel,
    compute_efficiency,
    estimate_seconds,
    prior_of,
    rank,
)
from workbench.tune.space_generated import GeneratedSpace
from workbench.tune.strategies import get_strategy


def _matmul_schedule(n=256, ti=4, tj=64, tk=64, *, pack=True, parallel=True, vector=True):
    """The hand structure of ``recipes.matmul.packed_cpu``: ``j`` panels outermost, a
    ``ti x tj`` register tile accumulated over ``tk``-long ``k`` steps."""
    sch = wb.Schedule(ops.matmul(n, n, n))
    c = sch.get_block("C")
    packed = sch.cache_read(c, 2, "global") if pack else None
    local = sch.cache_write(c, 0, "local")
    i, j, k = sch.get_loops(c)
    i0, i1 = sch.split(i, factors=[None, ti])
    j0, j1 = sch.split(j, factors=[None, tj])
    k0, k1 = sch.split(k, factors=[None, tk])
    sch.reorder(j0, i0, k0, k1, i1, j1)
    sch.reverse_compute_at(local, i0)
    if packed is not None:
        sch.compute_at(packed, j0)
        sch.transform_layout(packed, ("write", 0), f"lambda kk, jj: (jj // {tj}, kk, jj % {tj})")
    if parallel:
        sch.parallel(j0)
    if vector:
        sch.vectorize(j1)
    return sch


def _deepest(sch):
    from workbench.tune.features import _deepest_chain

    return _deepest_chain(lower(sch.mod).body)


def test_register_tile_and_operand_loads_of_a_matmul_tile():
    chain = _deepest(_matmul_schedule(ti=4, tj=64, tk=32))
    tile, steps, in_registers = register_tile(chain)
    # k_0 and k_1 are adjacent reduction loops: the tile stays for all 256 steps of k
    assert (tile, steps, in_registers) == (4 * 64, 256, True)
    # per k step: 64 elements of the B panel along the vectorized j, 4 broadcasts of A
    assert operand_loads(chain) == (64.0, 4.0)


def test_a_tile_spanned_by_two_rolled_loops_stays_in_memory():
    sch = wb.Schedule(ops.matmul(64, 64, 64))
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    i0, i1, i2 = sch.split(i, factors=[None, 4, 4])
    sch.reorder(i0, k, i1, i2, j)
    sch.vectorize(j)
    tile, steps, in_registers = register_tile(_deepest(sch))
    assert (tile, steps, in_registers) == (4 * 4 * 64, 64, False)


def test_reduction_steps_stop_at_a_spatial_loop():
    sch = wb.Schedule(ops.matmul(64, 64, 64))
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    i0, i1 = sch.split(i, factors=[None, 4])
    k0, k1 = sch.split(k, factors=[None, 8])
    sch.reorder(k0, i0, k1, i1, j)  # i_0 between the two k loops
    sch.vectorize(j)
    assert register_tile(_deepest(sch)) == (4 * 64, 8, True)


def test_no_register_tile_without_an_accumulation():
    sch = wb.Schedule(ops.add_mul_gelu(16, 32))
    assert register_tile(_deepest(sch)) == (0, 0, False)


def test_strided_operand_conflicts_in_l1_and_packing_removes_it():
    # B read in place: 64-float pieces of rows 4 KiB apart (a 1024-wide B) all land in the
    # same L1 sets; packed, the panel is one contiguous run
    n, line, span, ways = 1024, 64, 4096, 8
    in_place = _deepest(_matmul_schedule(n, 4, 64, 128, pack=False))
    packed = _deepest(_matmul_schedule(n, 4, 64, 128, pack=True))
    level = 3  # the body of k0: 128 rows of the panel, 4 rows of A
    plain_a, l1_a, weighted_a = line_footprints(in_place, line, span, ways)
    plain_b, l1_b, weighted_b = line_footprints(packed, line, span, ways)
    panel = 128 * 64 * 4
    assert plain_a[level] == pytest.approx(plain_b[level], rel=0.02)
    assert plain_a[level] >= panel
    assert l1_a[level] >= plain_a[level] + panel * (128 / ways - 1) * 0.99  # conflicts
    assert l1_b[level] == plain_b[level]  # none once packed
    assert weighted_a[level] > weighted_b[level]  # and it streams slower in place


def test_every_nest_counted_the_packing_copy_too():
    lowered = lower(_matmul_schedule(256, 4, 64, 64).mod)
    chains = leaf_chains(lowered.body)
    facts = nest_facts(lowered)
    assert len(facts["nests"]) == len(chains) >= 3  # pack, compute, write-back
    assert sum(n["flops"] for n in facts["nests"]) == facts["flops"] == 2 * 256**3
    compute = max(facts["nests"], key=lambda n: n["flops"])
    assert compute["register_tile"] == 4 * 64 and compute["parallel_extent"] == 256 // 64


# Machine facts are inputs, never read from the host: an AVX2 and an AVX-512 core, 1 to 4
# cores each (CI runs on Intel and AMD machines of any size).
MACHINES = [CpuModel(lanes=lanes, cores=cores, vector_registers=regs)
            for lanes, regs in ((8, 16), (16, 32)) for cores in (1, 2, 4)]


@pytest.mark.parametrize("model", MACHINES, ids=lambda m: f"{32 * m.lanes}bit-{m.cores}cores")
def test_prior_ranks_vectorized_parallel_above_scalar_serial(model):
    good = _matmul_schedule(512, 4, 64, 64)
    serial = _matmul_schedule(512, 4, 64, 64, parallel=False)
    scalar = _matmul_schedule(512, 4, 64, 64, parallel=False, vector=False)
    seconds = {}
    for name, sch in [("good", good), ("serial", serial), ("scalar", scalar)]:
        lowered = lower(sch.mod)
        seconds[name] = estimate_seconds(nest_facts(lowered), lowered, model)
    assert seconds["scalar"] > seconds["serial"]
    # 8 panels over the cores: each thread takes ceil(8 / cores) of them
    panels = 512 // 64
    speedup = panels / math.ceil(panels / model.cores)
    assert seconds["serial"] / seconds["good"] == pytest.approx(speedup, rel=0.1)
    if model.cores > 1:
        assert seconds["good"] < seconds["serial"]
    assert seconds["scalar"] / seconds["serial"] > 2  # a scalar loop: a lane per FMA


def test_compute_efficiency_of_register_tiles():
    model = CpuModel(lanes=8, vector_registers=16)
    base = {"vector_width": 64.0, "inner_vectorized": 1.0, "reduce_inner": 256.0,
            "tile_in_registers": 1.0}

    def eff(tile, vector_loads, scalar_loads, **extra):
        return compute_efficiency(dict(base, register_tile=tile, load_vector_elements=
                                       vector_loads, load_scalar_elements=scalar_loads,
                                       **extra), model)

    # one accumulator: FMAs wait on each other, and 2 loads per FMA
    one = eff(8, 8, 1, vector_width=8.0)
    four_by_two = eff(64, 16, 4, vector_width=16.0)  # 8 accumulators, 6 loads
    spilled = eff(8 * 64, 64, 8)  # 64 accumulators in 16 registers
    in_memory = eff(64, 16, 4, vector_width=16.0, tile_in_registers=0.0)
    assert one == pytest.approx(1 / 8 * 1 / 2 * 256 / 258)
    assert four_by_two == pytest.approx(256 / 258)
    # both leave the tile in L1: a store per FMA, half the peak at most
    assert spilled <= MEMORY_ACCUMULATORS * four_by_two + 1e-12
    assert in_memory == pytest.approx(MEMORY_ACCUMULATORS * four_by_two)
    slight = eff(18 * 8, 16, 18, vector_width=8.0)  # 18 accumulators in 16 registers
    assert MEMORY_ACCUMULATORS * four_by_two < slight < four_by_two
    scalar = compute_efficiency(dict(base, vector_width=0.0, register_tile=1.0,
                                     load_vector_elements=0.0, load_scalar_elements=2.0),
                                model)
    assert scalar < one


def test_the_prior_is_a_feature_and_the_model_starts_from_it():
    space = GeneratedSpace(ops.matmul(128, 128, 128))
    rng = random.Random(3)
    configs = [space.random_config(rng) for _ in range(6)]
    model = CostModel(min_samples=3)
    assert model.ranks(space) and not model.trained
    priors = [prior_of(space, c) for c in configs]
    predicted = model.predict(space, configs)
    assert predicted == pytest.approx(priors, rel=1e-6)  # untrained: the prior itself
    features = candidate_features(space, configs[0])
    index = len(features) - len(IR_FEATURES) + IR_FEATURES.index("log2_prior")
    assert features[index] == pytest.approx(math.log2(priors[0] * 1e9))
    # measured twice as slow as the prior everywhere: the model learns the offset
    model.update(space, configs, [2 * p for p in priors])
    assert model.trained
    again = model.predict(space, configs)
    assert again == pytest.approx([2 * p for p in priors], rel=0.05)


def test_cost_model_without_a_prior_waits_for_measurements():
    space = GeneratedSpace(ops.matmul(32, 32, 32), target="cuda")
    model = CostModel()
    assert not model.ranks(space)
    assert all(math.isnan(p) for p in model.predict(space, [space.default_config()]))


@pytest.mark.parametrize("name", ["evolutionary", "bayesian"])
def test_first_batch_is_the_priors_best_of_the_sampled(name):
    """Whatever the sampler draws (the draws depend on the RNG streams of random and optuna,
    and which ones the prior prefers on the host's facts), the first batch is the prior's
    best of what the strategy sampled and scored: captured here, not replayed."""
    space = GeneratedSpace(ops.matmul(128, 128, 128))
    strategy = get_strategy(name, seed=4)
    strategy.init_population = 24
    strategy.setup(space, CostModel())
    scored: list[list[dict]] = []
    ranked = strategy.ranked

    def record(configs):
        scored.append(list(configs))
        return ranked(configs)

    strategy.ranked = record
    first = strategy.propose(4, set())
    assert len(first) == 4
    pool = scored[0]  # the sampled initial population, ranked before anything else
    assert len(pool) == 24 and len({str(c) for c in pool}) == 24
    assert space.default_config() in pool
    last = scored[-1]  # what the first batch was picked from
    scores = {str(c): prior_of(space, c) for c in pool + last}
    assert all(str(c) in {str(x) for x in last} for c in first)
    assert sorted(scores[str(c)] for c in first) == pytest.approx(
        sorted(scores[str(c)] for c in rank(space, last))[:4])
    # the pool's best pass through: no config of the batch is worse than the pool's 4th best
    pool_sorted = sorted(scores[str(c)] for c in pool)
    assert max(scores[str(c)] for c in first) <= pool_sorted[3] * (1 + 1e-9)
    assert max(scores[str(c)] for c in first) <= pool_sorted[len(pool) // 2]
    if name == "bayesian":  # the prior's best of the pool were enqueued as TPE's first trials
        # (strictly better than the n_startup-th: a tie may be broken either way)
        cut = pool_sorted[strategy.n_startup - 1] * (1 - 1e-6)
        asked = {str(c) for c in last}
        assert {str(c) for c in pool if scores[str(c)] < cut} <= asked


def test_rank_puts_illegal_configs_last():
    space = GeneratedSpace(ops.matmul(64, 64, 64))
    good = space.default_config()
    broken = {k: v for k, v in good.items() if k != "unroll:C"}  # does not schedule
    assert rank(space, [broken, good]) == [good, broken]
    assert prior_of(space, broken) == math.inf


def test_bayesian_measures_only_the_models_best_of_what_tpe_asks():
    import optuna

    space = GeneratedSpace(ops.matmul(64, 64, 64))
    strategy = get_strategy("bayesian", seed=5)
    strategy.init_population = 12
    strategy.setup(space, CostModel())
    seen: set[str] = set()
    for _ in range(2):
        configs = strategy.propose(3, seen)
        assert len(configs) == 3
        seen.update(str(c) for c in configs)
        strategy.observe(configs, [prior_of(space, c) for c in configs])
    states = [t.state for t in strategy._study.trials]
    complete = states.count(optuna.trial.TrialState.COMPLETE)
    pruned = states.count(optuna.trial.TrialState.PRUNED)
    assert complete == 6 and pruned >= 2 * (strategy.filter - 1) * 3
