"""``sample_perfect_tile`` and ``sample_categorical``, ported from TVM's
tests/python/s_tir/schedule/test_tir_schedule_sampling.py: distributions from a seeded
Schedule, decisions recorded in the trace and replayed (also from JSON), a changed decision
replaying to the new choice (the tuner's mutation), and the perfect-tile property."""

import os
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from schedule_checks import assert_computes_same, raises_unchanged, verify_trace_roundtrip

from workbench import T
from workbench.ir import IntImm
from workbench.schedule import (
    CategoricalDecisionError,
    CategoricalProbabilityError,
    InvalidArgumentError,
    Schedule,
    TileCountError,
    Trace,
)
from workbench.schedule.sampling import prime_factors, repair_perfect_tile, with_decision

EXAMPLES = int(os.environ.get("WORKBENCH_PROPERTY_EXAMPLES", "50"))


@T.prim_func
def elementwise(A: T.Buffer((128, 257, 1470), "float32"), B: T.Buffer((128, 257, 1470), "float32")):
    for i, j, k in T.grid(128, 257, 1470):
        with T.block("B"):
            vi, vj, vk = T.axis.remap("SSS", [i, j, k])
            B[vi, vj, vk] = A[vi, vj, vk] * T.float32(2)


@T.prim_func
def matmul(
    A: T.Buffer((24, 16), "float32"),
    B: T.Buffer((16, 32), "float32"),
    C: T.Buffer((24, 32), "float32"),
):
    for i, j, k in T.grid(24, 32, 16):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


@T.prim_func
def loop_only(A: T.Buffer((1,), "float32")):
    for i in T.serial(1):  # noqa: B007 (the test sets its extent; the block ignores it)
        with T.block("A"):
            vi = T.axis.spatial(1, 0)
            A[vi] = A[vi] * T.float32(2)


def product(values):
    result = 1
    for v in values:
        result *= v
    return result


def test_sample_categorical():
    """test_tir_schedule_sampling.py::test_sample_categorical"""
    n = 1000
    sch = Schedule(elementwise, seed=42)
    candidates = [5, 2, 7, 1]
    probs = [0.15, 0.55, 0.05, 0.25]
    counter = Counter(sch.sample_categorical(candidates, probs) for _ in range(n))
    for candidate, prob in zip(candidates, probs, strict=True):
        assert (prob - 0.07) * n <= counter[candidate] <= (prob + 0.07) * n
    verify_trace_roundtrip(sch)


def test_sample_categorical_copy():
    """test_tir_schedule_sampling.py::test_sample_categorical_copy: a copy keeps the recorded
    decisions (our samples are plain ints, so TVM's sch_copy.get(rv) is the trace)."""
    sch = Schedule(elementwise, seed=42)
    values = [sch.sample_categorical([1, 2, 3, 4], [0.1, 0.2, 0.3, 0.4]) for _ in range(100)]
    copy = sch.copy()
    decisions = [step.attrs["decision"] for step in copy.trace]
    assert [[1, 2, 3, 4][d] for d in decisions] == values


def test_sample_categorical_serialize():
    """test_tir_schedule_sampling.py::test_sample_categorical_serialize"""
    sch = Schedule(elementwise, seed=42)
    candidates = [5, 6, 7, 8]
    values = [sch.sample_categorical(candidates, [0.23, 0.19, 0.37, 0.21]) for _ in range(100)]
    again = verify_trace_roundtrip(sch)
    assert [candidates[step.attrs["decision"]] for step in again.trace] == values


def test_same_seed_same_draws():
    """Schedule(func, seed=s) is reproducible; a different seed draws differently."""

    def draws(seed):
        sch = Schedule(elementwise, seed=seed)
        k = sch.get_loops(sch.get_block("B"))[2]
        return [sch.sample_perfect_tile(k, n=4) for _ in range(20)]

    assert draws(7) == draws(7)
    assert draws(7) != draws(8)


@pytest.mark.parametrize("axis, extent", [(0, 128), (1, 257), (2, 1470)])
def test_sample_perfect_tile(axis, extent):
    """test_tir_schedule_sampling.py::test_sample_perfect_tile_power_of_two,
    ::test_sample_perfect_tile_prime, ::test_sample_perfect_tile_composite"""
    sch = Schedule(elementwise, seed=1)
    loop = sch.get_loops(sch.get_block("B"))[axis]
    factors = sch.sample_perfect_tile(loop, n=4)
    assert len(factors) == 4 and product(factors) == extent
    assert factors[-1] <= 16
    assert sch.trace[-1].attrs["decision"] == factors
    verify_trace_roundtrip(sch)


def test_sample_perfect_tile_after_copy():
    """test_tir_schedule_sampling.py::test_sample_perfect_tile_after_copy (TVM hangs without
    forking the seed; here the copy draws from its own forked state)."""
    sch = Schedule(elementwise, seed=3)
    copy = sch.copy()
    _, _, k = sch.get_loops(sch.get_block("B"))
    assert product(sch.sample_perfect_tile(k, n=4)) == 1470
    _, _, k2 = copy.get_loops(copy.get_block("B"))
    assert product(copy.sample_perfect_tile(k2, n=4)) == 1470


def test_sampled_tiles_drive_a_schedule(rng):
    """The tuner's use: sample tiles, split with them; numbers match and the trace replays."""
    sch = Schedule(matmul, seed=11)
    i, j, k = sch.get_loops(sch.get_block("C"))
    i_tiles = sch.sample_perfect_tile(i, n=2, max_innermost_factor=8)
    j_tiles = sch.sample_perfect_tile(j, n=3)
    i0, i1 = sch.split(i, factors=i_tiles)
    j0, j1, j2 = sch.split(j, factors=j_tiles)
    sch.reorder(i0, j0, k, i1, j1, j2)
    assert i_tiles[-1] <= 8
    assert_computes_same(sch, rng)


def test_changed_decision_replays_to_new_choice():
    """A mutated trace (with_decision) replays the sampling steps to the new values; JSON
    keeps the mutation; an invalid tile decision is repaired as TVM does."""
    sch = Schedule(matmul, seed=5)
    i, _, _ = sch.get_loops(sch.get_block("C"))
    sch.sample_perfect_tile(i, n=3)
    sch.sample_categorical([16, 32, 64], [0.3, 0.3, 0.4])
    mutated = with_decision(sch.trace, 2, [2, 3, 4])
    mutated = with_decision(mutated, 3, 2)
    again = Trace.from_json(mutated.to_json()).apply(matmul)
    assert again.trace[2].attrs["decision"] == [2, 3, 4]
    assert again.trace[3].attrs["decision"] == 2
    assert 'decision=[2, 3, 4]' in str(again.trace)
    # what the replayed schedule itself returns for the mutated decisions
    replay = Schedule(matmul)
    loop = replay.get_loops(replay.get_block("C"))[0]
    assert replay.sample_perfect_tile(loop, n=3, decision=[2, 3, 4]) == [2, 3, 4]
    assert replay.sample_perfect_tile(loop, n=3, decision=[1, 5, 2]) == [1, 12, 2]
    assert replay.sample_categorical([16, 32, 64], [0.3, 0.3, 0.4], decision=2) == 64
    with pytest.raises(ValueError):
        with_decision(sch.trace, 0, 1)  # get_block is not a sampling step


def test_repair_perfect_tile():
    """TVM's rule: innermost out, a factor that does not divide what is left becomes it."""
    assert repair_perfect_tile(12, [1, 5, 2]) == [1, 6, 2]
    assert repair_perfect_tile(12, [7, 2, 3]) == [2, 2, 3]
    assert repair_perfect_tile(7, [1, 1, 7]) == [1, 1, 7]
    assert repair_perfect_tile(8, [1, 0, 16]) == [1, 1, 8]


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    extent=st.integers(1, 5000),
    n=st.integers(2, 5),
    max_inner=st.sampled_from([-1, 1, 4, 16, 64]),
    seed=st.integers(0, 2**31),
)
def test_every_perfect_tile_multiplies_to_the_extent(extent, n, max_inner, seed):
    """Property: every sampled perfect tile multiplies to the extent and respects
    max_innermost_factor; its replay returns the same tile."""

    func = loop_only.replace(
        body=loop_only.body.replace(
            block=loop_only.root_block.replace(
                body=loop_only.root_block.body.replace(extent=IntImm(extent))
            )
        )
    )
    sch = Schedule(func, seed=seed)
    loop = sch.get_loops(sch.get_block("A"))[0]
    tile = sch.sample_perfect_tile(loop, n=n, max_innermost_factor=max_inner)
    assert len(tile) == n and product(tile) == extent
    assert max_inner == -1 or tile[-1] <= max_inner
    replay = sch.trace.apply(func)
    assert replay.trace[-1].attrs["decision"] == tile


def test_prime_factors():
    assert prime_factors(1470) == [2, 3, 5, 7, 7]
    assert prime_factors(257) == [257]
    assert prime_factors(1) == []


def test_sampling_errors():
    """One error class per reason; the schedule is unchanged after each."""
    sch = Schedule(matmul, seed=0)
    i = sch.get_loops(sch.get_block("C"))[0]
    raises_unchanged(sch, TileCountError, sch.sample_perfect_tile, i, n=1)
    raises_unchanged(sch, InvalidArgumentError, sch.sample_perfect_tile, i, n=3, decision=[2, 12])
    raises_unchanged(sch, CategoricalProbabilityError, sch.sample_categorical, [1, 2], [1.0])
    raises_unchanged(sch, CategoricalProbabilityError, sch.sample_categorical, [1, 2], [0, 0])
    raises_unchanged(sch, CategoricalDecisionError, sch.sample_categorical, [1, 2], [1, 1], 2)
