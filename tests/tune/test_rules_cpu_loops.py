"""The cpu rules' loop annotations: a parallel outer loop with work for every core (S1 tile
loops fused in where S0 has too few iterations), a vectorized innermost loop of at least
one vector, and random draws weighted toward both; candidates still compute the reference
and a short tuning run of a conv2d layer finds a correct kernel."""

from __future__ import annotations

import random

import numpy as np
import pytest

import workbench as wb
from workbench import ops
from workbench.backends import lower
from workbench.backends.cpu.cpu_facts import vector_lanes
from workbench.tune.features import nest_facts
from workbench.tune.rules_common import tiles
from workbench.tune.rules_cpu import JOBS_PER_CORE, VECTOR_BIAS, _vector_min, host_cores
from workbench.tune.runner import LocalRunner, random_arguments
from workbench.tune.space_generated import GeneratedSpace

LANES = vector_lanes("float32")


def _reference(func, seed=7):
    args = random_arguments(func, seed)
    expected = [a.copy() for a in args]
    wb.build(func, target="numpy")(*expected)
    return args, expected


def _compute_facts(space, config):
    facts = nest_facts(lower(space.schedule(config).mod))
    return max(facts["nests"], key=lambda n: n["flops"])


def test_tiles_lower_bound_on_the_innermost_factor():
    assert tiles(8, 2, min_innermost=4) == [[2, 4], [1, 8]]
    assert tiles(56, 2, 64, min_innermost=8) == [[7, 8], [4, 14], [2, 28], [1, 56]]
    assert _vector_min(56, 8) == 8 and _vector_min(7, 8) == 7 and _vector_min(4, 16) == 4
    assert _vector_min(1024, 16) == 16


def test_conv2d_candidates_vectorize_and_parallelize_and_compute_the_reference():
    func = ops.conv2d_nchw(1, 4, 8, 8, 8, 3, 3)
    space = GeneratedSpace(func)
    x_tiles = space.domains["tile:conv2d_nchw:x"]
    least = min(LANES, 8)
    assert x_tiles and all(t[-1] >= least for t in x_tiles)
    args, expected = _reference(func)
    rng = random.Random(11)
    cores = host_cores()
    parallel_seen = 0
    for config in [space.default_config()] + [space.random_config(rng) for _ in range(8)]:
        facts = _compute_facts(space, config)
        assert facts["inner_vectorized"] == 1.0 and facts["vector_width"] >= least, config
        if config["parallel:conv2d_nchw"] == 0:  # index 0: the parallel outer loop
            parallel_seen += 1
            s0_s1 = np.prod([config[f"tile:conv2d_nchw:{v}"][0] * config[
                f"tile:conv2d_nchw:{v}"][1] for v in "nkyx"])
            assert facts["parallel_extent"] >= min(JOBS_PER_CORE * cores, s0_s1), config
        got = [a.copy() for a in args]
        wb.build(space.schedule(config), target="numpy")(*got)
        np.testing.assert_allclose(got[2], expected[2], rtol=1e-4, atol=1e-4)
    assert parallel_seen >= 1


# the machine is an input (tests/machines.py): the fusion depends on the core count, and
# CI machines have 2 to many cores
@pytest.mark.parametrize("machine, extent", [
    ("intel-avx512-1core", 8), ("zen5-2core", 8), ("avx2-4core", 8), ("zen3-8core", 16),
], indirect=["machine"])
def test_parallel_outer_loop_fuses_middle_tiles_until_every_core_has_work(machine, extent):
    assert host_cores() == machine.cores
    space = GeneratedSpace(ops.matmul(64, 64, 64))
    config = {"tile:C:i": [1, 8, 2, 4], "tile:C:j": [1, 2, 2, 16], "tile:C:k": [4, 16],
              "write_cache:C": 1, "pack:C": 1, "parallel:C": 0, "unroll:C": 0}
    text = str(space.schedule(config).trace)
    assert "sch.fuse(l7, l11)" in text and "sch.fuse(l17, l8)" in text  # S0, then i_1
    facts = _compute_facts(space, config)
    # S0 (1 tile), then i_1 (8), then j_1 (16): fused until 2 jobs per core
    assert facts["parallel_extent"] == extent >= JOBS_PER_CORE * machine.cores
    assert extent // 2 < JOBS_PER_CORE * machine.cores or extent == 8
    serial = _compute_facts(space, dict(config, **{"parallel:C": 1}))
    assert serial["parallel_extent"] == 1.0  # no parallel loop
    # with panels packed per outer tile, S1 stays out (the tiles would share a panel)
    per_tile = str(space.schedule(dict(config, **{"pack:C": 2})).trace)
    assert "sch.fuse(l17, l8)" not in per_tile


# the machine is an input: at 8 lanes some tilings of 56 are whole vectors and some are not
# (at 16 lanes none is); one machine with several cores, one with one
@pytest.mark.parametrize("machine", ["avx2-4core", "intel-avx512-1core"], indirect=True)
def test_random_draws_favour_whole_vectors_and_the_parallel_loop(machine):
    lanes = vector_lanes("float32")
    assert lanes == 8
    space = GeneratedSpace(ops.conv2d_nchw(1, 4, 56, 56, 8, 3, 3))
    knob = "tile:conv2d_nchw:x"
    domain = space.domains[knob]
    whole = [t for t in domain if t[-1] % lanes == 0]
    assert 0 < len(whole) < len(domain)
    rng = random.Random(2)
    draws = [space.random_config(rng) for _ in range(600)]
    share = np.mean([d[knob][-1] % lanes == 0 for d in draws])
    expected = VECTOR_BIAS * len(whole) / (VECTOR_BIAS * len(whole) + len(domain) - len(whole))
    assert share == pytest.approx(expected, abs=0.07)
    assert host_cores() == machine.cores
    if machine.cores > 1:
        parallel = np.mean([d["parallel:conv2d_nchw"] == 0 for d in draws])
        assert parallel == pytest.approx(0.75, abs=0.07)
        trace = str(space.schedule(draws[0]).trace)
        assert "probs=[0.75, 0.25]" in trace  # the sampling instruction records them


def test_a_short_tuning_run_of_conv2d_finds_a_correct_vectorized_kernel(tmp_path):
    func = ops.conv2d_nchw(1, 4, 8, 8, 8, 3, 3)
    with LocalRunner(n_build=1) as runner:
        result = wb.tune(func, target="cpu", trials=3, db=tmp_path / "r.jsonl",
                         strategy="evolutionary", progress=False, runner=runner, repeats=2)
    assert len(result.records) == 3 and all(r.ok for r in result.records)
    assert all(r.predicted_s and r.predicted_s > 0 for r in result.records)  # the prior
    best = result.best.config
    facts = _compute_facts(result.space, best)
    assert facts["inner_vectorized"] == 1.0
    args, expected = _reference(func, seed=3)
    got = [a.copy() for a in args]
    got[2][...] = np.nan
    result.build()(*got)
    np.testing.assert_allclose(got[2], expected[2], rtol=1e-4, atol=1e-4)


def test_row_reductions_rfactor_into_a_cache_line_of_partials():
    from workbench.backends.cpu.cpu_facts import reduction_lanes

    space = GeneratedSpace(ops.softmax(4, 64))
    config = dict(space.default_config(), **{"rfactor:T_softmax_maxelem": 1,
                                             "rfactor:T_softmax_expsum": 1})
    text = str(space.schedule(config).trace)
    width = reduction_lanes("float32")
    assert text.count(f"factors=[None, {width}]") == 2 and text.count("sch.rfactor(") == 2
    args, expected = _reference(space.func)
    got = [a.copy() for a in args]
    wb.build(space.schedule(config), target="numpy")(*got)
    np.testing.assert_allclose(got[1], expected[1], rtol=1e-5, atol=1e-6)
