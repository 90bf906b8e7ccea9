"""Scheduled functions compute what the unscheduled ones compute (numpy reference target),
including random sequences of legal primitives chosen with legal_primitives."""

import random

import numpy as np
import pytest
from schedule_examples import add_relu, matmul, row_sum, scale, scale2d

from workbench.backends import build
from workbench.schedule import Schedule


def run(func_or_sch, func, rng, target="numpy"):
    arrays = [rng.standard_normal(b.shape).astype(b.dtype) + 0.5 for b in func.params]
    outs = [a.copy() for a in arrays]
    build(func, target="numpy")(*outs)
    got = [a.copy() for a in arrays]
    build(func_or_sch, target=target)(*got)
    return outs, got


def assert_same(sch, rng, target="numpy"):
    want, got = run(sch, sch.func_before, rng, target)
    for w, g in zip(want, got, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_tiled_matmul(rng):
    sch = Schedule(matmul)
    i, j, k = sch.get_loops(sch.get_block("C"))
    io, ii = sch.split(i, factors=[None, 3])  # non-dividing: guarded
    jo, ji = sch.split(j, factors=[None, 8])
    sch.reorder(io, jo, k, ii, ji)
    sch.parallel(io)
    sch.unroll(ii)
    sch.vectorize(ji)
    assert_same(sch, rng)


def test_fuse_then_split(rng):
    sch = Schedule(scale2d)
    i, j = sch.get_loops(sch.get_block("B"))
    a, b, c = sch.split(sch.fuse(i, j), factors=[3, None, 7])
    sch.reorder(c, a)
    assert_same(sch, rng)


def test_reduction_reordered_outside(rng):
    sch = Schedule(row_sum)
    i, k = sch.get_loops(sch.get_block("B"))
    ko, ki = sch.split(k, factors=[None, 5])
    sch.reorder(ki, i, ko)
    assert_same(sch, rng)


def test_two_blocks(rng):
    sch = Schedule(add_relu)
    (i1,) = sch.get_loops(sch.get_block("C"))
    outer, inner = sch.split(i1, factors=[None, 7])
    sch.vectorize(inner)
    assert_same(sch, rng)


def test_cpu_target_matches(rng):
    sch = Schedule(scale)
    (i,) = sch.get_loops(sch.get_block("B"))
    outer, inner = sch.split(i, factors=[None, 16])
    sch.parallel(outer)
    sch.vectorize(inner)
    assert_same(sch, rng, target="cpu")


LOOP_PRIMITIVES = ("split", "fuse", "reorder", "parallel", "vectorize", "unroll")
"""The loop primitives this test draws from (tests/property mixes in all the others)."""


def random_schedule(func, block, seed, steps=4):
    """Apply ``steps`` random legal primitives (with random factors for split)."""
    chooser = random.Random(seed)
    sch = Schedule(func)
    for _ in range(steps):
        loops = sch.get_loops(sch.get_block(block))
        loop = chooser.choice(loops)
        legal = [p for p in sch.legal_primitives(loop).legal() if p in LOOP_PRIMITIVES]
        primitive = chooser.choice(legal)
        if primitive == "split":
            sch.split(loop, factors=[None, chooser.choice([2, 3, 4, 5])])
        elif primitive in ("fuse", "reorder"):
            inner = loops[loops.index(loop) + 1]
            getattr(sch, primitive)(*((loop, inner) if primitive == "fuse" else (inner, loop)))
        else:
            getattr(sch, primitive)(loop)
    return sch


@pytest.mark.parametrize("seed", range(12))
def test_random_legal_schedules_compute_the_reference(seed, rng):
    func, block = [(matmul, "C"), (row_sum, "B"), (scale2d, "B")][seed % 3]
    sch = random_schedule(func, block, seed)
    assert len(sch.trace) > 4
    assert_same(sch, rng)
    # and the trace replays to the same function
    assert sch.trace.apply(func).mod == sch.mod
