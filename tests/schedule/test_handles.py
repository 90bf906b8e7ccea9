"""Handles survive the primitives that keep their loop or block; undo and copy."""

import pytest
from schedule_examples import add_relu, matmul, scale2d

from workbench.schedule import (
    BlockRV,
    ForeignHandleError,
    LoopRV,
    RemovedHandleError,
    Schedule,
)


def test_handles_print_with_trace_name_and_ir_name():
    sch = Schedule(matmul)
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    assert repr(block) == "BlockRV(b0: C)"
    assert [repr(h) for h in (i, j, k)] == ["LoopRV(l1: i)", "LoopRV(l2: j)", "LoopRV(l3: k)"]
    assert isinstance(block, BlockRV) and isinstance(i, LoopRV)
    assert sch.name(i) == "i" and sch.name(block) == "C"


def test_handles_survive_primitives_that_keep_their_loop():
    sch = Schedule(matmul)
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    io, ii = sch.split(i, factors=[None, 4])
    sch.reorder(k, j)  # j and k survive a reorder
    assert (sch.name(j), sch.name(k)) == ("j", "k")
    jk = sch.fuse(k, j)  # io, ii survive a fuse of other loops
    sch.parallel(io)
    sch.unroll(ii)
    assert [sch.name(h) for h in (io, ii, jk, block)] == ["i_0", "i_1", "k_j_fused", "C"]
    assert [sch.name(h) for h in sch.get_loops(block)] == ["i_0", "i_1", "k_j_fused"]


def test_two_queries_give_two_handles_to_the_same_loop():
    sch = Schedule(scale2d)
    first = sch.get_loops(sch.get_block("B"))
    second = sch.get_loops(sch.get_block("B"))
    assert first != second
    assert [sch.name(h) for h in first] == [sch.name(h) for h in second]
    sch.split(first[0], factors=[None, 2])
    with pytest.raises(RemovedHandleError):
        sch.parallel(second[0])


def test_undo_restores_ir_trace_and_handles():
    sch = Schedule(matmul)
    i, j, k = sch.get_loops(sch.get_block("C"))
    before_mod, before_trace = sch.mod, sch.trace
    io, ii = sch.split(i, factors=[None, 4])
    sch.undo()
    assert sch.mod == before_mod and sch.trace == before_trace
    assert sch.name(i) == "i"  # alive again
    with pytest.raises(RemovedHandleError) as info:
        sch.parallel(io)
    assert info.value.removed_by == "undo() of step 2 (split)"
    # a new step after undo: printed names stay consecutive
    a, b = sch.split(j, factors=[2, None])
    assert str(sch.trace).splitlines()[-1] == "l4, l5 = sch.split(l2, factors=[2, None])"
    assert repr(a) == "LoopRV(l6: j_0)"  # ids are never reused


def test_undo_twice_and_undo_of_a_query():
    sch = Schedule(scale2d)
    block = sch.get_block("B")
    i, j = sch.get_loops(block)
    sch.fuse(i, j)
    sch.undo()
    sch.undo()  # drops get_loops
    assert len(sch.trace) == 1
    with pytest.raises(RemovedHandleError):
        sch.parallel(i)
    assert sch.name(block) == "B"


def test_copy_is_independent():
    sch = Schedule(matmul)
    i, j, k = sch.get_loops(sch.get_block("C"))
    trial = sch.copy()
    io, ii = trial.split(i, factors=[None, 4])  # old handles work in the copy
    assert sch.name(i) == "i" and len(sch.trace) == 2 and len(trial.trace) == 3
    assert sch.mod != trial.mod
    with pytest.raises(ForeignHandleError):
        sch.parallel(io)  # copy's new handle in the original
    a, b = sch.split(j, factors=[None, 4])
    with pytest.raises(ForeignHandleError):
        trial.parallel(a)  # original's new handle in the copy
    assert trial.name(j) == "j"


def test_handles_of_a_replayed_schedule_are_its_own():
    sch = Schedule(add_relu)
    block = sch.get_block("C")
    replayed = sch.trace.apply(add_relu)
    with pytest.raises(ForeignHandleError):
        replayed.get_loops(block)


def test_handle_equality():
    sch = Schedule(scale2d)
    block = sch.get_block("B")
    assert block == BlockRV(block.id, block.owner)
    assert block != LoopRV(block.id, block.owner)


def test_get_returns_the_ir_node():
    from workbench.ir import Block, For

    sch = Schedule(matmul)
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    node = sch.get(k)
    assert isinstance(node, For) and node.loop_var.name == "k" and node.extent.value == 16
    assert isinstance(sch.get(block), Block) and sch.get(block).name == "C"
    sch.parallel(i)
    assert sch.get(i).kind.value == "parallel"
