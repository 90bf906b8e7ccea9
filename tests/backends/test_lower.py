"""Lowering: blocks become opaque, guarded, substituted statements; allocations collected."""

import pytest
import scheduled_examples as se

import ir_examples
from workbench.backends import lower
from workbench.backends.common.allocation import TOP, allocation_sites
from workbench.backends.common.lower import init_condition, is_opaque_block
from workbench.backends.cpu.unroll import unroll_small_loops
from workbench.ir import (
    EQ,
    LT,
    TRUE,
    BlockRealize,
    BufferStore,
    For,
    ForKind,
    IfThenElse,
    IntImm,
    Var,
)
from workbench.ir.functor import collect


def _realizes(func):
    return collect(func.root_block.body, lambda n: isinstance(n, BlockRealize))


def test_matmul_block_becomes_opaque_with_init_guard():
    lowered = lower(ir_examples.matmul(4, 4, 4))
    (realize,) = _realizes(lowered)
    assert is_opaque_block(realize) and realize.block.name == "C"
    init, update = realize.block.body.stmts
    i, j, k = Var("i"), Var("j"), Var("k")
    assert init == IfThenElse(
        EQ(k, IntImm(0)), BufferStore(init.then_case.buffer, init.then_case.value, (i, j))
    )
    assert update.indices == (i, j)
    # the regions are substituted too
    assert realize.block.writes[0].region[0].min == i


def test_predicate_of_imperfect_split_becomes_guard():
    func = se.split_elementwise(30, 8, kind=ForKind.SERIAL)
    lowered = lower(func)
    (realize,) = _realizes(lowered)
    guard = realize.block.body
    assert isinstance(guard, IfThenElse)
    i_0, i_1 = Var("i_0"), Var("i_1")
    assert guard.condition == LT(i_0 * 8 + i_1, IntImm(30))
    assert guard.then_case.indices == (i_0 * 8 + i_1,)


def test_perfect_split_has_no_guard():
    lowered = lower(se.split_elementwise(32, 8, kind=ForKind.SERIAL))
    (realize,) = _realizes(lowered)
    assert isinstance(realize.block.body, BufferStore)


def test_init_condition_without_reduce_vars_is_true():
    func = ir_examples.add_relu(8)
    realize = _realizes(func)[1]
    assert init_condition(realize) == TRUE


def test_allocations_collected_with_scope_and_placed_at_lca():
    func, _ = se.local_intermediate()
    lowered = lower(func)
    (scratch,) = lowered.root_block.alloc_buffers
    assert (scratch.name, scratch.scope) == ("T_local", "local")
    assert allocation_sites(lowered) == {scratch: 0}  # inside the parallel loop i (loop #0)
    global_tmp = lower(ir_examples.add_relu(8)).root_block.alloc_buffers[0]
    assert allocation_sites(lower(ir_examples.add_relu(8))) == {global_tmp: TOP}


def test_lower_accepts_schedule_like_and_rejects_others():
    class FakeSchedule:
        mod = ir_examples.matmul(4, 4, 4)

    assert lower(FakeSchedule()) == lower(ir_examples.matmul(4, 4, 4))
    with pytest.raises(TypeError, match="lower expects a PrimFunc or a Schedule, got int"):
        lower(3)


def test_unroll_small_loops_copies_small_bodies_only():
    func = lower(se.split_elementwise(32, 4, kind=ForKind.UNROLLED))
    unrolled = unroll_small_loops(func.root_block.body)
    loops = collect(unrolled, lambda n: isinstance(n, For))
    assert [loop.loop_var.name for loop in loops] == ["i_0"]
    stores = collect(unrolled, lambda n: isinstance(n, BufferStore))
    assert len(stores) == 4
    assert stores[3].indices == (Var("i_0") * 4 + 3,)
    big = lower(se.split_elementwise(64, 32, kind=ForKind.UNROLLED))
    kept = collect(unroll_small_loops(big.root_block.body), lambda n: isinstance(n, For))
    assert [loop.kind for loop in kept] == [ForKind.SERIAL, ForKind.UNROLLED]
