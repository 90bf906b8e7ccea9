"""Loop and block names where a primitive takes a handle (issue 17: ``sch.vectorize("j")``
said "must be a loop handle ... received str"): unique names resolve to handles of the
schedule's own trace, ambiguous and missing ones raise naming the candidates, and a
refused call leaves the schedule unchanged."""

import pytest
from schedule_checks import raises_unchanged
from schedule_examples import add_relu, matmul, scale2d

from workbench import T
from workbench.schedule import (
    AmbiguousNameError,
    BlockNotFoundError,
    InvalidArgumentError,
    LoopNotFoundError,
    NameNotFoundError,
    ReductionLoopError,
    Schedule,
    Trace,
)


def by_handles():
    sch = Schedule(matmul)
    i, j, k = sch.get_loops(sch.get_block("C"))
    i0, i1 = sch.split(i, factors=[None, 4])
    sch.reorder(j, i1)
    sch.vectorize(i1)
    return sch


def test_unique_names_act_as_the_handles():
    sch = Schedule(matmul)
    i0, i1 = sch.split("i", factors=[None, 4])  # fetches the block and its loops first
    sch.reorder("j", "i_1")
    sch.vectorize("i_1")
    assert sch.mod == by_handles().mod
    assert sch.trace.lines() == [
        'b0 = sch.get_block("C")',
        "l1, l2, l3 = sch.get_loops(b0)",
        "l4, l5 = sch.split(l1, factors=[None, 4])",
        "sch.reorder(l2, l5)",  # handles the trace already has are reused
        "sch.vectorize(l5)",
    ]
    assert Trace.from_json(sch.trace.to_json()).apply(matmul).mod == sch.mod  # replays


def test_block_names_and_mixed_arguments():
    sch = Schedule(add_relu)
    assert [sch.name(h) for h in sch.get_loops("C")] == ["i1"]
    sch.compute_at("T_add", sch.get_loops(sch.get_block("C"))[0])
    assert [sch.name(b) for b in sch.get_child_blocks("i1")] == ["T_add", "C"]
    assert sch.mod == _compute_at_by_handles().mod
    sch.annotate("C", "note", 1)  # a block where a block or a loop is accepted
    assert "note" in sch.mod.script()


def _compute_at_by_handles():
    sch = Schedule(add_relu)
    sch.compute_at(sch.get_block("T_add"), sch.get_loops(sch.get_block("C"))[0])
    return sch


def test_missing_names_are_refused_naming_the_candidates():
    sch = Schedule(matmul)
    sch.get_block("C")
    err = raises_unchanged(sch, LoopNotFoundError, sch.vectorize, "jj")
    assert err.message == "no loop named 'jj' in matmul"
    assert err.detail == "loops in the function: i, j, k"
    assert err.suggestion == "did you mean 'j'?"
    err = raises_unchanged(sch, BlockNotFoundError, sch.compute_inline, "c")
    assert err.message == "no block named 'c' in matmul"
    err = raises_unchanged(sch, NameNotFoundError, sch.annotate, "kk", "note", 1)
    assert err.message == "no loop or block named 'kk' in matmul"
    assert err.detail == "loops: i, j, k; blocks: 'C'" and err.suggestion == "did you mean 'k'?"
    # a block name where a loop belongs is no loop
    raises_unchanged(sch, LoopNotFoundError, sch.split, "C", factors=[None, 4])


def test_a_refused_primitive_leaves_no_fetch_behind():
    sch = Schedule(matmul)
    raises_unchanged(sch, ReductionLoopError, sch.vectorize, "k")  # trace stays empty
    assert len(sch.trace) == 0


@T.prim_func
def loop_and_block_named_alike(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("i"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi] * T.float32(2)


def test_an_ambiguous_name_is_refused_naming_both():
    sch = Schedule(loop_and_block_named_alike)
    err = raises_unchanged(sch, AmbiguousNameError, sch.annotate, "i", "note", 1)
    assert err.message == "argument 'block_or_loop': 'i' names both a loop and a block"
    assert err.detail == "annotate takes a loop or a block here; candidates: loop 'i' and " \
        "block 'i'"
    assert "sch.get_block('i')" in err.suggestion
    sch.vectorize("i")  # where only a loop is accepted, the name is not ambiguous
    assert sch.get_loops("i") and "T.vectorized" in sch.mod.script()


def test_neither_a_handle_nor_a_name():
    sch = Schedule(scale2d)
    err = raises_unchanged(sch, InvalidArgumentError, sch.vectorize, 3)
    assert err.message == "argument 'loop' must be a loop handle or name, got 3"


@pytest.mark.parametrize("call", [
    lambda sch: sch.parallel("i"),
    lambda sch: sch.unroll("j"),
    lambda sch: sch.fuse("i", "j"),
    lambda sch: sch.bind("i", "blockIdx.x"),
    lambda sch: sch.add_unit_loop("B"),
    lambda sch: sch.get_producers("B"),
])
def test_every_primitive_taking_a_handle_takes_a_name(call):
    sch = Schedule(scale2d)
    call(sch)
    assert Trace.from_json(sch.trace.to_json()).apply(scale2d).mod == sch.mod
