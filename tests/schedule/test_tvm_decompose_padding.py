"""``decompose_padding``, ported from TVM's
tests/python/s_tir/schedule/test_tir_schedule_decompose_padding.py (smaller shapes): golden
IR, structure, numbers on the numpy and cpu targets against the unscheduled function (TVM's
check_run), trace JSON round trip and replay."""

import pytest
from schedule_checks import assert_computes_same, make_golden, raises_unchanged

from workbench import T
from workbench.ir import TRUE
from workbench.schedule import (
    NotPaddingBlockError,
    PaddingLoopNotAncestorError,
    Schedule,
    TrivialPaddingError,
)
from workbench.schedule.tree import find_block


@pytest.fixture
def golden(request):
    return make_golden(request, "decompose_padding")


@T.prim_func
def pad_1d(x: T.Buffer((128,), "int32"), y: T.Buffer((140,), "int32")):
    for i in range(140):
        with T.block("block"):
            vi = T.axis.remap("S", [i])
            y[vi] = T.if_then_else(vi >= 6 and vi < 134, x[vi - 6], 0)


@T.prim_func
def batch_pad(x: T.Buffer((1, 12, 8), "int32"), y: T.Buffer((1, 20, 8), "int32")):
    for b, i, j in T.grid(1, 20, 8):
        with T.block("block"):
            vb, vi, vj = T.axis.remap("SSS", [b, i, j])
            y[vb, vi, vj] = T.if_then_else(vi < 12, x[vb, vi, vj], 0)


@T.prim_func
def sum_pool_2d(x: T.Buffer((1, 4, 25, 25), "int8"), tensor: T.Buffer((1, 4, 25, 25), "int8")):
    pad_temp = T.alloc_buffer((1, 4, 31, 31), "int8")
    for i0, i1, i2, i3 in T.grid(1, 4, 31, 31):
        with T.block("pad_temp"):
            ax0, ax1, ax2, ax3 = T.axis.remap("SSSS", [i0, i1, i2, i3])
            pad_temp[ax0, ax1, ax2, ax3] = T.if_then_else(
                3 <= ax2 and ax2 < 28 and 3 <= ax3 and ax3 < 28,
                x[ax0, ax1, ax2 - 3, ax3 - 3],
                T.int8(0),
            )
    for i0, i1, i2, i3, i4, i5 in T.grid(1, 4, 25, 25, 7, 7):
        with T.block("tensor"):
            ax0, ax1, ax2, ax3, rv0, rv1 = T.axis.remap("SSSSRR", [i0, i1, i2, i3, i4, i5])
            with T.init():
                tensor[ax0, ax1, ax2, ax3] = T.int8(0)
            tensor[ax0, ax1, ax2, ax3] = (
                tensor[ax0, ax1, ax2, ax3] + pad_temp[ax0, ax1, ax2 + rv0, ax3 + rv1]
            )


@T.prim_func
def pad_op(x: T.Buffer((1, 4, 25, 25), "int8"), y: T.Buffer((1, 4, 31, 31), "int8")):
    for i0, i1, i2, i3 in T.grid(1, 4, 31, 31):
        with T.block("pad_temp"):
            ax0, ax1, ax2, ax3 = T.axis.remap("SSSS", [i0, i1, i2, i3])
            y[ax0, ax1, ax2, ax3] = T.if_then_else(
                3 <= ax2 and ax2 < 28 and 3 <= ax3 and ax3 < 28,
                x[ax0, ax1, ax2 - 3, ax3 - 3],
                T.int8(0),
            )


@T.prim_func
def trivial_pad(x: T.Buffer((1, 4, 25, 25), "int8"), y: T.Buffer((1, 4, 25, 25), "int8")):
    for i0, i1, i2, i3 in T.grid(1, 4, 25, 25):
        with T.block("pad_temp"):
            ax0, ax1, ax2, ax3 = T.axis.remap("SSSS", [i0, i1, i2, i3])
            y[ax0, ax1, ax2, ax3] = T.if_then_else(
                0 <= ax2 and ax2 < 25 and 0 <= ax3 and ax3 < 25, x[ax0, ax1, ax2, ax3], T.int8(0)
            )


def extents(sch, block):
    return [sch.get(lp).extent.value for lp in sch.get_loops(block)]


def test_1d_decompose_padding(golden, rng):
    """test_tir_schedule_decompose_padding.py::test_1d_decompose_padding: the fill runs over
    140, the copy over the 128 in-bounds points with no branch."""
    sch = Schedule(pad_1d)
    block = sch.get_block("block")
    fill = sch.decompose_padding(block, sch.get_loops(block)[0])
    assert sch.name(fill) == "block_pad_const"
    assert extents(sch, fill) == [140]
    assert extents(sch, block) == [128]
    assert "if_then_else" not in sch.mod.script()
    golden("1d", sch.mod.script())
    assert_computes_same(sch, rng)


def test_batch_decompose_padding(golden, rng):
    """test_tir_schedule_decompose_padding.py::test_int64_indices_batch_decompose_padding
    (int32 indices: our shapes are Python ints). Decomposed at the innermost loop j, the
    fill nest is a copy of j only, inside i."""
    sch = Schedule(batch_pad)
    block = sch.get_block("block")
    fill = sch.decompose_padding(block, sch.get_loops(block)[2])
    assert extents(sch, fill) == [1, 20, 8]
    assert [sch.name(lp) for lp in sch.get_loops(fill)][:2] == ["b", "i"]
    golden("batch", sch.mod.script())
    assert_computes_same(sch, rng)


def test_decompose_hw_padding_direct(golden, rng):
    """test_tir_schedule_decompose_padding.py::test_decompose_hw_padding_direct"""
    sch = Schedule(sum_pool_2d)
    pad = sch.get_block("pad_temp")
    fill = sch.decompose_padding(pad, sch.get_loops(pad)[0])
    assert extents(sch, fill) == [1, 4, 31, 31]
    assert extents(sch, pad) == [1, 4, 25, 25]
    golden("hw_direct", sch.mod.script())
    assert_computes_same(sch, rng)


def tiled(factors):
    sch = Schedule(sum_pool_2d)
    block, pad = sch.get_block("tensor"), sch.get_block("pad_temp")
    n, c, h, w, kh, kw = sch.get_loops(block)
    ho, hi = sch.split(h, factors)
    wo, wi = sch.split(w, factors)
    sch.reorder(n, ho, wo, c, hi, wi, kh, kw)
    sch.compute_at(pad, wo)
    return sch, pad


def test_decompose_hw_padding_tiled(golden, rng):
    """test_tir_schedule_decompose_padding.py::test_decompose_hw_padding_tiled: the bounds
    are on tile-relative indices, so they stay as the copy's predicate."""
    sch, pad = tiled([5, 5])
    fill = sch.decompose_padding(pad, sch.get_loops(pad)[3])
    assert extents(sch, fill) == [1, 5, 5, 4, 11, 11]
    golden("hw_tiled", sch.mod.script())
    assert_computes_same(sch, rng)


def test_decompose_hw_padding_tiled_and_lift_pad(rng):
    """test_tir_schedule_decompose_padding.py::test_decompose_hw_padding_tiled_and_lift_pad:
    decomposed at the outermost loop, the fill nest runs before the whole tiled nest."""
    sch, pad = tiled([5, 5])
    fill = sch.decompose_padding(pad, sch.get_loops(pad)[0])
    top = sch.mod.root_block.body
    assert top.stmts[0].loop_var.name == sch.name(sch.get_loops(fill)[0])
    assert_computes_same(sch, rng)


def test_decompose_hw_padding_non_perfect_tiled(rng):
    """test_tir_schedule_decompose_padding.py::test_decompose_hw_padding_non_perfect_tiled:
    the fill keeps the tile guard, the copy has both guards."""
    sch, pad = tiled([None, 8])
    fill = sch.decompose_padding(pad, sch.get_loops(pad)[3])
    fill_realize = find_block(sch.mod, sch.name(fill), "test")[1][-1]
    assert fill_realize.predicate != TRUE  # the tile guard of the non-dividing split
    assert_computes_same(sch, rng)


def test_decompose_wrt_single_child_subtree(golden, rng):
    """test_tir_schedule_decompose_padding.py::test_decompose_wrt_single_child_subtree"""
    sch = Schedule(pad_op)
    pad = sch.get_block("pad_temp")
    _, _, h, _ = sch.get_loops(pad)
    fill = sch.decompose_padding(pad, h)
    assert [sch.name(lp) for lp in sch.get_loops(fill)][:2] == ["i0", "i1"]
    assert extents(sch, pad) == [1, 4, 25, 25]
    golden("single_child", sch.mod.script())
    assert_computes_same(sch, rng)


def test_not_to_decompose_trivial_predicate():
    """test_tir_schedule_decompose_padding.py::test_not_to_decompose_trivial_predicate"""
    sch = Schedule(trivial_pad)
    pad = sch.get_block("pad_temp")
    _, _, h, _ = sch.get_loops(pad)
    assert not sch.can_decompose_padding(pad, h)
    raises_unchanged(sch, TrivialPaddingError, sch.decompose_padding, pad, h)


def test_decompose_padding_errors():
    """Not a padding block (a reduction with init); a loop that is not around the block."""
    sch = Schedule(sum_pool_2d)
    tensor, pad = sch.get_block("tensor"), sch.get_block("pad_temp")
    raises_unchanged(
        sch, NotPaddingBlockError, sch.decompose_padding, tensor, sch.get_loops(tensor)[0]
    )
    raises_unchanged(
        sch, PaddingLoopNotAncestorError, sch.decompose_padding, pad, sch.get_loops(tensor)[0]
    )
    assert sch.can_decompose_padding(pad, sch.get_loops(pad)[0])
