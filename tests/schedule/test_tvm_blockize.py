"""``blockize`` (and ``add_unit_loop``), ported from TVM's
tests/python/s_tir/schedule/test_tir_schedule_blockize.py and
test_tir_schedule_split_fuse.py (add_unit_loop): golden IR, structure, numbers on the numpy
and cpu targets against the unscheduled function, trace JSON round trip and replay."""

import pytest
from schedule_checks import assert_computes_same, make_golden, raises_unchanged
from schedule_examples import matmul

from workbench import T
from workbench.ir import IterKind
from workbench.schedule import (
    BlockizeNotSingleBlockError,
    Schedule,
    SubspaceNotDivisibleError,
    UnitLoopAboveRootError,
    WrongHandleKindError,
)


@pytest.fixture
def golden(request):
    return make_golden(request, "blockize")


@T.prim_func
def single_elementwise(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32")):
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)


@T.prim_func
def two_elementwise(A: T.Buffer((32, 32), "float32"), C: T.Buffer((32, 32), "float32")):
    B = T.alloc_buffer((32, 32), "float32")
    for i, j in T.grid(32, 32):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(32, 32):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)


@T.prim_func
def rowsum(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16,), "float32")):
    for k, i in T.grid(16, 16):
        with T.block("B"):
            vk, vi = T.axis.remap("RS", [k, i])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]


def iter_extents(sch, block):
    return [(iv.var.name, iv.dom.extent.value, iv.kind) for iv in sch.get(block).iter_vars]


def test_blockize_outer(golden, rng):
    """test_tir_schedule_blockize.py::test_blockize_outer"""
    sch = Schedule(single_elementwise)
    x, _ = sch.get_loops(sch.get_block("B"))
    outer = sch.blockize(x)
    assert sch.name(outer) == "blockized_B"
    assert iter_extents(sch, outer) == [
        ("vi_o", 1, IterKind.SPATIAL),
        ("vj_o", 1, IterKind.SPATIAL),
    ]
    assert [iv.var.name for iv in sch.get(sch.get_block("B")).iter_vars] == ["vi_i", "vj_i"]
    assert sch.get_loops(outer) == []
    golden("outer", sch.mod.script())
    assert_computes_same(sch, rng)


def test_blockize_inner(golden, rng):
    """test_tir_schedule_blockize.py::test_blockize_inner"""
    sch = Schedule(single_elementwise)
    _, y = sch.get_loops(sch.get_block("B"))
    outer = sch.blockize(y)
    assert iter_extents(sch, outer) == [
        ("vi_o", 16, IterKind.SPATIAL),
        ("vj_o", 1, IterKind.SPATIAL),
    ]
    inner = sch.get(sch.get_block("B"))
    assert [iv.var.name for iv in inner.iter_vars] == ["vj_i"]
    golden("inner", sch.mod.script())
    assert_computes_same(sch, rng)


def test_blockize_split_tile(golden, rng):
    """test_tir_schedule_blockize.py::test_two_elementwise_blockize_reverse_compute_at
    (the tiled producer: a 16x16 tile per outer block, bindings ``vi_o * 16 + vi_i``)"""
    sch = Schedule(two_elementwise)
    i, j = sch.get_loops(sch.get_block("B"))
    i0, i1 = sch.split(i, factors=[None, 16])
    j0, j1 = sch.split(j, factors=[None, 16])
    sch.reorder(i0, j0, i1, j1)
    outer = sch.blockize(i1)
    assert iter_extents(sch, outer) == [
        ("vi_o", 2, IterKind.SPATIAL),
        ("vj_o", 2, IterKind.SPATIAL),
    ]
    reads = sch.get(outer).reads[0].region
    assert [r.extent.value for r in reads] == [16, 16]
    golden("tile", sch.mod.script())
    assert_computes_same(sch, rng)


def test_blockize_reverse_compute_at(rng):
    """test_tir_schedule_blockize.py::test_two_elementwise_blockize_reverse_compute_at"""
    sch = Schedule(two_elementwise)
    i, j = sch.get_loops(sch.get_block("B"))
    i0, i1 = sch.split(i, factors=[None, 16])
    j0, j1 = sch.split(j, factors=[None, 16])
    sch.reorder(i0, j0, i1, j1)
    sch.blockize(i1)
    sch.reverse_compute_at(sch.get_block("C"), j0)
    c_loops = sch.get_loops(sch.get_block("C"))
    outer_c = sch.blockize(c_loops[2])
    assert iter_extents(sch, outer_c)[0][1] == 2
    assert_computes_same(sch, rng)


def test_blockize_compute_at(rng):
    """test_tir_schedule_blockize.py::test_two_elementwise_blockize_compute_at"""
    sch = Schedule(two_elementwise)
    i, j = sch.get_loops(sch.get_block("C"))
    i0, i1 = sch.split(i, factors=[None, 16])
    j0, j1 = sch.split(j, factors=[None, 16])
    sch.reorder(i0, j0, i1, j1)
    sch.blockize(i1)
    sch.compute_at(sch.get_block("B"), j0)
    b_loops = sch.get_loops(sch.get_block("B"))
    sch.blockize(b_loops[2])
    assert_computes_same(sch, rng)


def test_blockize_init_loops(golden, rng):
    """test_tir_schedule_blockize.py::test_blockize_init_loops: the init moves to the outer
    block, around a copy of the spatial inner loop (block B_init)."""
    sch = Schedule(rowsum)
    k, _ = sch.get_loops(sch.get_block("B"))
    outer = sch.blockize(k)
    block = sch.get(outer)
    assert block.init is not None
    assert iter_extents(sch, outer) == [("vk_o", 1, IterKind.REDUCE), ("vi_o", 1, IterKind.SPATIAL)]
    assert sch.get(sch.get_block("B")).init is None
    assert "B_init" in sch.mod.script()
    golden("init_loops", sch.mod.script())
    assert_computes_same(sch, rng)


def test_blockize_matmul_reduction_tile(rng):
    """A 4x4 matmul micro-kernel block under a split reduction: the outer block reduces over
    k_0, the init runs once per output tile (TVM's GenerateOuterInit)."""
    sch = Schedule(matmul)
    i, j, k = sch.get_loops(sch.get_block("C"))
    i0, i1 = sch.split(i, factors=[None, 4])
    k0, k1 = sch.split(k, factors=[None, 4])
    sch.reorder(i0, j, k0, i1, k1)
    outer = sch.blockize(i1)
    kinds = [kind for _, _, kind in iter_extents(sch, outer)]
    assert kinds == [IterKind.SPATIAL, IterKind.SPATIAL, IterKind.REDUCE]
    assert_computes_same(sch, rng)


def test_blockize_preserve_unit_iters_false(rng):
    """test_tir_schedule_blockize.py::test_blockize_outer_int64_shape (its
    preserve_unit_iters=False case, without int64): unit iterators become 0 in the body."""
    sch = Schedule(single_elementwise)
    x, _ = sch.get_loops(sch.get_block("B"))
    sch.blockize(x, preserve_unit_iters=False)
    assert "preserve_unit_iters=False" in str(sch.trace)
    assert_computes_same(sch, rng, targets=("numpy",))


def test_blockize_not_divisible():
    """SubspaceNotDivisibleError (TVM's error of the same name): a fused-then-split binding
    whose inner part does not divide the block's iteration variable."""
    sch = Schedule(single_elementwise)
    i, j = sch.get_loops(sch.get_block("B"))
    f = sch.fuse(i, j)
    _, f1 = sch.split(f, factors=[None, 24])
    raises_unchanged(sch, SubspaceNotDivisibleError, sch.blockize, f1)


def test_blockize_two_blocks_refused():
    """test_tir_schedule_blockize.py::test_blockize_blocks: blockizing a loop over two blocks
    (TVM blockizes a list of blocks; we refuse a loop nesting several, see decisions)."""
    sch = Schedule(matmul)
    sch.cache_write(sch.get_block("C"), 0, "local")
    sch.reverse_compute_at(sch.get_block("C_local"), sch.get_loops(sch.get_block("C"))[0])
    i = sch.get_loops(sch.get_block("C"))[0]
    raises_unchanged(sch, BlockizeNotSingleBlockError, sch.blockize, i)


def test_add_unit_loop_above_block(golden, rng):
    """test_tir_schedule_split_fuse.py::test_add_unit_loop_above_block"""
    sch = Schedule(single_elementwise)
    block = sch.get_block("B")
    u = sch.add_unit_loop(block)
    assert sch.name(u) == "u"
    assert [sch.name(lp) for lp in sch.get_loops(block)] == ["i", "j", "u"]
    assert sch.get(u).extent.value == 1
    golden("add_unit_loop_block", sch.mod.script())
    assert_computes_same(sch, rng)


def test_add_unit_loop_above_loop(rng):
    """test_tir_schedule_split_fuse.py::test_add_unit_loop_above_loop"""
    sch = Schedule(single_elementwise)
    block = sch.get_block("B")
    sch.add_unit_loop(block)
    i, j, u = sch.get_loops(block)
    u2 = sch.add_unit_loop(u)
    assert [sch.name(lp) for lp in sch.get_loops(block)] == ["i", "j", sch.name(u2), "u"]
    assert sch.name(u2) == "u_1"
    assert_computes_same(sch, rng)


def test_add_unit_loop_then_blockize(rng):
    """add_unit_loop gives a loopless block a loop to blockize (TVM's use of it)."""
    sch = Schedule(single_elementwise)
    block = sch.get_block("B")
    u = sch.add_unit_loop(block)
    outer = sch.blockize(u)
    assert iter_extents(sch, outer) == [
        ("vi_o", 16, IterKind.SPATIAL),
        ("vj_o", 16, IterKind.SPATIAL),
    ]
    assert_computes_same(sch, rng)


def test_add_unit_loop_errors():
    """The root block has nothing above it (TVM: ValueError 'Cannot add loops on top of the
    root block'); a non-handle argument is refused."""
    sch = Schedule(single_elementwise)
    raises_unchanged(sch, UnitLoopAboveRootError, sch.add_unit_loop, sch.get_block("root"))
    sch2 = Schedule(single_elementwise)
    loop = sch2.get_loops(sch2.get_block("B"))[0]
    raises_unchanged(sch2, WrongHandleKindError, sch2.blockize, sch2.get_block("B"))
    assert sch2.get(loop).extent.value == 16
