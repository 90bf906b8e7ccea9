"""The generation rules (rules_cpu, rules_cuda): every candidate computes the numpy
reference; every decision is a sampling step of the trace; mutating a decision and
replaying the trace gives a new candidate."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

import workbench as wb
from workbench import ops
from workbench.tune.api import make_space
from workbench.tune.rules_common import divisors, panel_map, tiles
from workbench.tune.runner import random_arguments
from workbench.tune.space_generated import SAMPLING, GeneratedSpace
from workbench.tune.space_template import perfect_tiles


def _reference(func, seed=7):
    args = random_arguments(func, seed)
    expected = [a.copy() for a in args]
    wb.build(func, target="numpy")(*expected)
    return args, expected


def _check(func, sch, target, args, expected):
    got = [a.copy() for a in args]
    wb.build(sch, target=target)(*got)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-4)


def _categorical_grid(space, base):
    """``base`` with every combination of the categorical (non-tile) knobs."""
    names = [k for k in space.knobs if not k.startswith("tile:")]
    for values in itertools.product(*(space.domains[k] for k in names)):
        yield dict(base, **dict(zip(names, values, strict=True)))


def _categorical_toggles(space, base):
    """``base``, then ``base`` with one categorical knob changed at a time (the cuda
    space's full grid is too slow for the simulator)."""
    yield base
    for name in space.knobs:
        if name.startswith("tile:"):
            continue
        for value in space.domains[name]:
            if value != base[name]:
                yield dict(base, **{name: value})


# --- helpers ------------------------------------------------------------------------


def test_tiles_match_perfect_tiles_and_scale():
    for extent, n, inner in [(12, 3, None), (64, 4, 16), (30, 2, 8)]:
        assert tiles(extent, n, inner) == perfect_tiles(extent, n, inner)
    assert divisors(2**24)[-1] == 2**24 and len(divisors(2**24)) == 25
    assert len(tiles(4096 * 4096, 2, 1024)) == 11  # fast: no loop over 16M extents


def test_panel_map_text():
    assert panel_map(2, 1, 16) == "lambda d0, d1: (d1 // 16, d0, d1 % 16)"


# --- cpu ----------------------------------------------------------------------------


def test_cpu_matmul_knobs_and_trace():
    space = make_space("generated", ops.matmul(16, 32, 8), target="cpu")
    assert space.knobs == ["tile:C:i", "tile:C:j", "tile:C:k", "write_cache:C", "pack:C",
                           "parallel:C", "unroll:C"]
    assert space.domains["pack:C"] == [0, 1, 2]
    # one outer tile per panel of B: packing per tile is then legal under a parallel loop
    config = {"tile:C:i": [1, 2, 2, 4], "tile:C:j": [2, 1, 1, 16], "tile:C:k": [1, 8],
              "write_cache:C": 1, "pack:C": 2, "parallel:C": 0, "unroll:C": 1}
    trace = space.schedule(config).trace
    text = str(trace)
    # every decision is a sampling step, in knob order
    decisions = [s.attrs["decision"] for s in trace if s.primitive in SAMPLING]
    assert decisions == [[1, 2, 2, 4], [2, 1, 1, 16], [1, 8], 1, 2, 0, 1]
    assert 'cache_read(b1, 2, "global")' in text and 'cache_write(b1, 0, "local")' in text
    assert "lambda d0, d1: (d1 // 16, d0, d1 % 16)" in text  # B in 16-wide panels
    assert "sch.reverse_compute_at(" in text and "sch.compute_at(" in text
    assert "sch.parallel(" in text and "sch.vectorize(" in text and "sch.unroll(" in text
    plain = str(space.schedule(dict(config, **{"pack:C": 0, "write_cache:C": 0})).trace)
    assert "cache_read" not in plain and "cache_write" not in plain


@pytest.mark.parametrize("make", [
    lambda: ops.matmul(8, 16, 4),
    lambda: ops.conv2d_nchw(1, 2, 5, 5, 4, 3, 3),
])
def test_cpu_every_categorical_choice_and_random_tiles_compute_the_reference(make):
    func = make()
    space = GeneratedSpace(func, target="cpu")
    args, expected = _reference(func)
    rng = random.Random(3)
    bases = [space.default_config()] + [space.random_config(rng) for _ in range(3)]
    for base in bases:
        for config in _categorical_grid(space, base):
            _check(func, space.schedule(config), "numpy", args, expected)


@pytest.mark.parametrize("make", [
    lambda: ops.softmax(3, 32),
    lambda: ops.add_mul_gelu(4, 8),
])
def test_cpu_whole_space_computes_the_reference(make):
    func = make()
    space = GeneratedSpace(func, target="cpu")
    if space.size() > 200:  # softmax: every categorical choice, the vector split pinned
        space.pin(**{k: v for k, v in space.default_config().items() if k.startswith("tile:")})
    assert space.size() <= 200
    args, expected = _reference(func)
    seen = set()  # configs giving the same function (a moot knob) are built once
    for config in space.grid():
        sch = space.schedule(config)
        if sch.mod not in seen:
            seen.add(sch.mod)
            _check(func, sch, "numpy", args, expected)
    assert len(seen) > 1


def test_cpu_softmax_rules_fuse_rows_and_rfactor():
    func = ops.softmax(3, 32)
    space = GeneratedSpace(func, target="cpu")
    assert space.knobs == [
        "compute_at:T_softmax_maxelem", "rfactor:T_softmax_maxelem", "parallel:T_softmax_maxelem",
        "compute_at:T_softmax_expsum", "rfactor:T_softmax_expsum", "parallel:T_softmax_expsum",
        "parallel:T_softmax_norm", "tile:T_softmax_norm:j2"]
    config = dict(space.default_config(), **{
        "compute_at:T_softmax_maxelem": 1, "compute_at:T_softmax_expsum": 1,
        "rfactor:T_softmax_maxelem": 1, "rfactor:T_softmax_expsum": 1})
    sch = space.schedule(config)
    text = str(sch.trace)
    assert text.count("sch.rfactor(") == 2 and text.count("sch.compute_at(") == 2
    args, expected = _reference(func)
    _check(func, sch, "cpu", args, expected)  # and through Numba


def test_cpu_packed_candidate_through_numba():
    func = ops.matmul(16, 32, 16)
    space = GeneratedSpace(func, target="cpu")
    args, expected = _reference(func)
    for pack in (1, 2):
        config = dict(space.default_config(), **{"pack:C": pack, "write_cache:C": 1})
        sch = space.schedule(config)
        assert "B_global" in sch.mod.script()
        _check(func, sch, "cpu", args, expected)


def test_elementwise_producers_are_inlined():
    space = GeneratedSpace(ops.add_mul_gelu(8, 16))
    names = [b.name for b in wb.analysis.find_blocks(space.schedule(space.default_config()).mod)]
    assert [n for n in names if n != "root"] == ["T_gelu"]


# --- mutation and replay ---------------------------------------------------------------


def test_mutating_a_decision_in_the_trace_and_replaying():
    func = ops.matmul(16, 16, 16)
    space = GeneratedSpace(func, target="cpu")
    base = space.schedule(space.random_config(random.Random(1)))
    assert space.config_of(base.trace) == space.config_of(
        wb.Trace.from_json(base.trace.to_json()))
    old = space.config_of(base.trace)["tile:C:k"]
    new = [16, 1] if old != [16, 1] else [1, 16]
    mutated = space.mutate(base.trace, "tile:C:k", new)
    decisions = [s.attrs["decision"] for s in mutated.trace if s.primitive in SAMPLING]
    assert decisions[2] == new and space.config_of(mutated.trace)["tile:C:k"] == new
    assert mutated.mod != base.mod
    assert f"factors={new}" in str(mutated.trace)
    args, expected = _reference(func)
    _check(func, mutated, "numpy", args, expected)
    # a categorical decision too: packing on
    packed = space.mutate(base.trace, "pack:C", 2)
    assert space.config_of(packed.trace)["pack:C"] == 2 and "B_global" in packed.mod.script()
    _check(func, packed, "numpy", args, expected)


def test_config_of_refuses_a_foreign_trace_and_mutate_an_unknown_knob():
    space = GeneratedSpace(ops.matmul(8, 8, 8))
    other = GeneratedSpace(ops.softmax(4, 32))
    foreign = other.schedule(other.default_config()).trace
    with pytest.raises(ValueError, match="not a trace of this space"):
        space.config_of(foreign)
    trace = space.schedule(space.default_config()).trace
    with pytest.raises(KeyError, match="no knob 'tile:C:x'"):
        space.mutate(trace, "tile:C:x", [1, 8])


# --- cuda (simulator) ------------------------------------------------------------------


def test_cuda_matmul_knobs_and_trace():
    space = make_space("generated", ops.matmul(8, 16, 8), target="cuda")
    assert space.target == "cuda"
    assert space.knobs == ["tile:C:i", "tile:C:j", "tile:C:k", "shared:C", "vector:C",
                           "double_buffer:C", "fragment:C", "unroll:C", "unroll_k:C"]
    text = str(space.schedule(space.default_config()).trace)
    assert 'bind(l13, "blockIdx.x")' in text and "threadIdx.x" in text
    assert text.count('"shared")') == 2 and 'cache_write(b1, 0, "local")' in text


def test_cuda_too_many_threads_is_a_schedule_error():
    space = GeneratedSpace(ops.matmul(64, 64, 8), target="cuda")
    config = dict(space.default_config(), **{"tile:C:i": [1, 64, 1], "tile:C:j": [1, 64, 1]})
    with pytest.raises(wb.ScheduleError):
        space.schedule(config)


@pytest.mark.parametrize("make", [
    lambda: ops.matmul(8, 16, 8),
    lambda: ops.softmax(2, 16),
    lambda: ops.add_mul_gelu(4, 8),
    lambda: ops.conv2d_nchw(1, 2, 4, 4, 2, 3, 3),
])
def test_cuda_candidates_compute_the_reference_in_the_simulator(make):
    pytest.importorskip("numba.cuda")
    from workbench.backends.cuda.numba_cuda import simulator_enabled

    if not simulator_enabled():
        pytest.skip("CUDA tests run in the simulator (NUMBA_ENABLE_CUDASIM=1)")
    func = make()
    space = GeneratedSpace(func, target="cuda")
    args, expected = _reference(func)
    rng = random.Random(4)
    configs = list(_categorical_toggles(space, space.default_config()))
    configs += [space.random_config(rng) for _ in range(2)]
    for config in configs:
        _check(func, space.schedule(config), "cuda", args, expected)


def test_cuda_mutation_replays_in_the_simulator():
    from workbench.backends.cuda.numba_cuda import simulator_enabled

    if not simulator_enabled():
        pytest.skip("CUDA tests run in the simulator (NUMBA_ENABLE_CUDASIM=1)")
    func = ops.matmul(8, 8, 8)
    space = GeneratedSpace(func, target="cuda")
    base = space.schedule(space.default_config())
    mutated = space.mutate(base.trace, "tile:C:k", [4, 2])
    assert "factors=[4, 2]" in str(mutated.trace) and mutated.mod != base.mod
    args, expected = _reference(func)
    _check(func, mutated, "cuda", args, expected)
