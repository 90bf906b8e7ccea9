"""The softmax lowering walk-through (workbench.recipes.softmax_lowering) and the softmax and
layernorm recipes: every step computes softmax, on numpy and cpu."""

from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
from workbench import ops, recipes
from workbench.backends.cpu.cpu_facts import reduction_lanes
from workbench.ir import ForKind
from workbench.ir.analysis import find_blocks
from workbench.ir.functor import collect
from workbench.ir.stmt import For
from workbench.ops.softmax_online import (
    LANE_BYTES,
    LOWEST_FLOAT32,
    online_softmax,
    online_softmax_lanes,
)
from workbench.recipes.softmax_lowering import LoweringStep, softmax_lowering_steps
from workbench.schedule import MultipleStoresError

M, N = 6, 48
LANES = reduction_lanes("float32")  # the machine's (16 float32 on AVX-512 and AVX2)
ONLINE_LANES = LANE_BYTES // 4  # the op's default (a cache line of float32), not the host's


def fused_softmax_schedule(m: int, n: int, **options) -> wb.Schedule:
    return recipes.softmax.fused_cpu(ops.softmax(m, n), **options)


def online_softmax_lanes_schedule(m: int, n: int, lanes: int | None = None) -> wb.Schedule:
    return recipes.softmax.online_lanes_cpu(online_softmax_lanes(m, n, lanes))


def reference_softmax(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def inputs(scale: float, seed: int = 0) -> np.ndarray:
    """Random rows; a large ``scale`` makes ``exp(x)`` overflow float32 without the max."""
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((M, N)) * scale).astype(np.float32)


def run(func_or_sch, target: str, x: np.ndarray, **options) -> np.ndarray:
    out = np.full(x.shape, np.nan, np.float32)
    wb.build(func_or_sch, target=target, **options)(x, out)
    return out


def loops_of(func) -> list[For]:
    return collect(func, lambda node: isinstance(node, For))


@pytest.fixture(scope="module")
def steps() -> list[LoweringStep]:
    return softmax_lowering_steps(M, N)


def test_steps_titles_and_traces(steps):
    assert [s.title for s in steps] == [
        "1. three passes", "2. fused (compute_at)", "3. fused, parallel, vectorized",
        "4. online softmax, fused", "5. online softmax across lanes"]
    assert steps[0].trace is None
    assert steps[0].func == ops.softmax(M, N)
    assert all(s.trace and s.trace.startswith('b0 = sch.get_block("T_softmax_norm")')
               for s in steps[1:])
    assert "sch.rfactor(" in steps[2].trace and "sch.rfactor(" not in steps[1].trace
    assert all(s.explanation.strip() for s in steps)
    assert "not a schedule" in steps[3].explanation
    assert "not a schedule" in steps[4].explanation
    assert steps[4].trace == str(online_softmax_lanes_schedule(M, N).trace)


@pytest.mark.parametrize("target", ["numpy", "cpu"])
@pytest.mark.parametrize("scale", [1.0, 60.0])
def test_every_step_computes_softmax(steps, target, scale):
    x = inputs(scale)
    expected = reference_softmax(x)
    with np.errstate(over="ignore"):
        assert np.isinf(np.exp(x)).any() or scale == 1.0  # the max subtraction is needed
    for step in steps:
        out = run(step.func, target, x)
        np.testing.assert_allclose(out, expected, rtol=2e-5, atol=1e-7, err_msg=step.title)


@pytest.mark.parametrize("target", ["numpy", "cpu"])
def test_online_softmax_alone(target):
    x = inputs(30.0, seed=1)
    np.testing.assert_allclose(run(online_softmax(M, N), target, x), reference_softmax(x),
                               rtol=2e-5, atol=1e-7)
    assert [b.name for b in find_blocks(online_softmax(M, N))] == [
        "online_max_sum", "T_softmax_norm"]


def test_fused_step_is_one_row_loop_with_local_row_values(steps):
    func = steps[1].func
    body = func.root_block.body
    assert isinstance(body, For) and body.loop_var.name == "i2"
    scopes = {b.name: b.scope for b in func.root_block.alloc_buffers}
    assert scopes == {"T_softmax_maxelem": "local", "T_softmax_expsum": "local"}


def test_vectorized_step_kinds(steps):
    loops = loops_of(steps[2].func)
    kinds = {lp.loop_var.name: lp.kind for lp in loops}
    assert kinds["i2"] is ForKind.PARALLEL
    vectorized = [name for name, kind in kinds.items() if kind is ForKind.VECTORIZED]
    assert len(vectorized) == 3  # two rfactor-ed partial reductions and the normalise loop
    extents = {lp.loop_var.name: lp.extent.value for lp in loops}
    assert sorted(extents[name] for name in vectorized) == [LANES, LANES, N]


def test_vectorized_step_really_vectorizes_on_cpu():
    sch = fused_softmax_schedule(2, 256)
    report = wb.build(sch, target="cpu").vectorization_report()
    marked = [lp.loop_var.name for lp in loops_of(sch.mod) if lp.kind is ForKind.VECTORIZED]
    for name in marked:
        entry = report.loop(name)
        assert entry.vectorized and entry.lanes >= 8, str(report)


@pytest.mark.parametrize("rfactor", [False, True])
@pytest.mark.parametrize("fast_exp", [False, True])
def test_fused_schedule_variants(rfactor, fast_exp):
    x = inputs(40.0, seed=2)
    sch = fused_softmax_schedule(M, N, rfactor=rfactor)
    out = run(sch, "cpu", x, fast_exp=fast_exp)
    np.testing.assert_allclose(out, reference_softmax(x), rtol=2e-5, atol=1e-7)


def test_trace_replays(steps):
    sch = fused_softmax_schedule(M, N)
    replayed = wb.Trace.from_json(sch.trace.to_json()).apply(ops.softmax(M, N))
    assert replayed.mod == steps[2].func


def test_online_reduction_cannot_be_rfactored():
    sch = wb.Schedule(online_softmax(M, N))
    blk = sch.get_block("online_max_sum")
    _, k = sch.get_loops(blk)
    _, k1 = sch.split(k, factors=[None, LANES])
    before = sch.mod
    with pytest.raises(MultipleStoresError):
        sch.rfactor(k1, factor_axis=0)
    assert sch.mod == before


@pytest.mark.parametrize("target", ["numpy", "cpu"])
@pytest.mark.parametrize("lanes", [16, 64])
def test_online_softmax_lanes_alone(target, lanes):
    cols = 128
    x = (np.random.default_rng(4).standard_normal((M, cols)) * 60).astype(np.float32)
    out = np.full(x.shape, np.nan, np.float32)
    wb.build(online_softmax_lanes(M, cols, lanes), target=target)(x, out)
    np.testing.assert_allclose(out, reference_softmax(x), rtol=2e-5, atol=1e-7)


@pytest.mark.parametrize("target", ["numpy", "cpu"])
def test_online_softmax_lanes_row_max_in_one_lane(target):
    """Every row's max sits in one lane, the other lanes far below it: their sums are
    rescaled to (almost) nothing, and a lane whose max comes late rescales its own sum."""
    x = inputs(1.0, seed=5)
    x[:, 3] = 80.0                 # lane 3 holds the max of every row, in its first chunk
    x[:, ONLINE_LANES + 5] = 79.0  # lane 5 sees its max in the second chunk
    expected = reference_softmax(x)
    out = run(online_softmax_lanes_schedule(M, N), target, x)
    np.testing.assert_allclose(out, expected, rtol=2e-5, atol=1e-7)


def test_online_softmax_lanes_blocks_and_init():
    func = online_softmax_lanes(M, N)
    assert [b.name for b in find_blocks(func)] == [
        "lane_max_sum", "row_max", "row_sum", "T_softmax_norm"]
    shapes = {b.name: tuple(b.shape) for b in func.root_block.alloc_buffers}
    assert shapes == {"lane_max": (M, ONLINE_LANES), "lane_sum": (M, ONLINE_LANES),
                      "row_max": (M,), "row_sum": (M,)}
    assert f"T.float32({LOWEST_FLOAT32!r})" in func.script()  # not -inf: see LOWEST_FLOAT32
    assert "inf" not in func.script()


def test_online_lanes_step_kinds(steps):
    func = steps[4].func
    loops = loops_of(func)
    kinds = {lp.loop_var.name: lp.kind for lp in loops}
    extents = {lp.loop_var.name: lp.extent.value for lp in loops}
    assert func.root_block.body.kind is ForKind.PARALLEL
    vectorized = sorted(extents[name] for name, kind in kinds.items()
                        if kind is ForKind.VECTORIZED)
    assert vectorized == [ONLINE_LANES, N]  # the lane loop and the normalise loop
    assert {b.name: b.scope for b in func.root_block.alloc_buffers} == {
        "lane_max": "local", "lane_sum": "local", "row_max": "local", "row_sum": "local"}
    assert [b.name for b in find_blocks(func)] == [
        "lane_max_sum_init", "lane_max_sum", "row_max_init", "row_max", "row_sum_init",
        "row_sum", "T_softmax_norm"]


@pytest.mark.parametrize("lanes", [16, 64])
def test_online_lanes_step_really_vectorizes_on_cpu(lanes):
    sch = online_softmax_lanes_schedule(2, 256, lanes)
    report = wb.build(sch, target="cpu").vectorization_report()
    marked = [lp.loop_var.name for lp in loops_of(sch.mod) if lp.kind is ForKind.VECTORIZED]
    assert len(marked) == 2
    for name in marked:
        entry = report.loop(name)
        assert entry.vectorized and entry.lanes >= 8, str(report)


def test_online_softmax_lanes_row_length_must_fill_the_lanes():
    with pytest.raises(ValueError, match="N=96 must be a multiple of lanes=64"):
        online_softmax_lanes(4, 96, lanes=64)


def test_row_length_must_fill_the_lanes():
    with pytest.raises(ValueError, match=f"N={LANES + 4} must be a multiple of {LANES}"):
        softmax_lowering_steps(4, LANES + 4)


@pytest.mark.parametrize("target", ["numpy", "cpu"])
def test_fused_layernorm(target):
    rows, cols = 4, 128
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((rows, cols)) * 3 + 5).astype(np.float32)
    gamma = rng.standard_normal(cols).astype(np.float32)
    beta = rng.standard_normal(cols).astype(np.float32)
    out = np.full_like(x, np.nan)
    wb.build(recipes.layernorm.fused_cpu(ops.layernorm(rows, cols)), target=target)(x, gamma, beta, out)
    expected = ops.reference.layernorm(x, gamma, beta, eps=1e-5)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)
