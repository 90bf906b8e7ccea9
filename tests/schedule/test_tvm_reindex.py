"""``reindex``, ported from TVM's tests/python/s_tir/schedule/test_tir_schedule_reindex.py:
golden IR, the new buffer's shape, numbers on the numpy and cpu targets against the
unscheduled function, trace JSON round trip and replay, and one error class per reason."""

import pytest
from schedule_checks import assert_computes_same, make_golden, raises_unchanged

from workbench import T
from workbench.schedule import (
    BufferIndexError,
    BufferNotFoundError,
    ReindexNoAccessError,
    ReindexNonUniqueAccessError,
    ReindexNotLeafBlockError,
    ReindexNotLoopChainError,
    ReindexReadOfWrittenBufferError,
    Schedule,
)
from workbench.schedule.tree import find_block


@pytest.fixture
def golden(request):
    return make_golden(request, "reindex")


@T.prim_func
def transpose_elementwise(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32")):
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vj, vi] * T.float32(2)


@T.prim_func
def conv2d_nhwc(
    Input: T.Buffer((1, 10, 10, 3), "float32"),
    Weight: T.Buffer((3, 3, 3, 4), "float32"),
    Conv2d_nhwc: T.Buffer((1, 5, 5, 4), "float32"),
):
    PadInput = T.alloc_buffer((1, 12, 12, 3), "float32")
    for i0, i1, i2, i3 in T.grid(1, 12, 12, 3):
        with T.block("PadInput"):
            i0_1, i1_1, i2_1, i3_1 = T.axis.remap("SSSS", [i0, i1, i2, i3])
            PadInput[i0_1, i1_1, i2_1, i3_1] = T.if_then_else(
                i1_1 >= 1 and i1_1 < 11 and i2_1 >= 1 and i2_1 < 11,
                Input[i0_1, i1_1 - 1, i2_1 - 1, i3_1],
                T.float32(0),
            )
    for i0, i1, i2, i3, i4, i5, i6 in T.grid(1, 5, 5, 4, 3, 3, 3):
        with T.block("conv2d_nhwc"):
            n, h, w, co, rh, rw, rc = T.axis.remap("SSSSRRR", [i0, i1, i2, i3, i4, i5, i6])
            with T.init():
                Conv2d_nhwc[n, h, w, co] = T.float32(0)
            Conv2d_nhwc[n, h, w, co] = Conv2d_nhwc[n, h, w, co] + (
                PadInput[n, h * 2 + rh, w * 2 + rw, T.floordiv(co, 4) * 3 + rc]
                * Weight[rh, rw, rc, co]
            )


@T.prim_func
def matmul(
    A: T.Buffer((16, 16), "float32"),
    B: T.Buffer((16, 16), "float32"),
    C: T.Buffer((16, 16), "float32"),
):
    for i0, i1, i2 in T.grid(16, 16, 16):
        with T.block("matmul"):
            i, j, k = T.axis.remap("SSR", [i0, i1, i2])
            with T.init():
                C[i, j] = T.float32(0)
            C[i, j] = C[i, j] + A[i, k] * B[k, j]


@T.prim_func
def matmul_unit_dim(
    A: T.Buffer((1, 16), "float32"),
    B: T.Buffer((16, 1), "float32"),
    C: T.Buffer((1, 1), "float32"),
):
    for i0, i1, i2 in T.grid(1, 1, 16):
        with T.block("matmul"):
            i, j, k = T.axis.remap("SSR", [i0, i1, i2])
            with T.init():
                C[i, j] = T.float32(0)
            C[i, j] = C[i, j] + A[i, k] * B[k, j]


@T.prim_func
def multiple_read(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32")):
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vj, vi] + A[vi, vj]


def alloc_shapes(sch):
    return {b.name: b.shape for b in sch.mod.root_block.alloc_buffers}


@pytest.mark.parametrize("buffer", [("read", 0), "A"])
def test_reindex_read_basic(buffer, golden, rng):
    """test_tir_schedule_reindex.py::test_reindex_read_basic (buffer by index and by name)"""
    sch = Schedule(transpose_elementwise)
    copy = sch.reindex(sch.get_block("B"), buffer)
    assert sch.name(copy) == "A_reindex"
    assert alloc_shapes(sch) == {"A_reindex": (16, 16)}
    golden("read_basic", sch.mod.script())
    assert_computes_same(sch, rng)


@pytest.mark.parametrize("buffer", [("read", 2), "Weight"])
def test_conv2d_reindex_weight(buffer, golden, rng):
    """test_tir_schedule_reindex.py::test_conv2d_reindex_weight: the copy is indexed by the
    block variables the access uses, in block order: Weight_reindex[co, rh, rw, rc]."""
    sch = Schedule(conv2d_nhwc)
    sch.reindex(sch.get_block("conv2d_nhwc"), buffer)
    assert alloc_shapes(sch)["Weight_reindex"] == (4, 3, 3, 3)
    golden("conv2d_weight", sch.mod.script())
    assert_computes_same(sch, rng)


@pytest.mark.parametrize("buffer", [("read", 1), "PadInput"])
def test_conv2d_reindex_data(buffer, golden, rng):
    """test_tir_schedule_reindex.py::test_conv2d_reindex_data: ``co // 4 * 3 + rc`` is
    simplified to ``rc`` under co < 4 (TVM simplifies with the block domain too), so the
    copy is [n, h, w, rh, rw, rc]."""
    sch = Schedule(conv2d_nhwc)
    sch.reindex(sch.get_block("conv2d_nhwc"), buffer)
    assert alloc_shapes(sch)["PadInput_reindex"] == (1, 5, 5, 3, 3, 3)
    golden("conv2d_data", sch.mod.script())
    assert_computes_same(sch, rng)


@pytest.mark.parametrize("buffer", [("write", 0), "C"])
def test_matmul_reindex_write(buffer, golden, rng):
    """test_tir_schedule_reindex.py::test_matmul_reindex_write (a name both read and written
    resolves to the write, as TVM's _normalize_buffer_arg does)"""
    sch = Schedule(matmul)
    copy = sch.reindex(sch.get_block("matmul"), buffer)
    assert sch.name(copy) == "C_reindex"
    block = find_block(sch.mod, "matmul", "test")[0]
    assert [w.buffer.name for w in block.writes] == ["C_reindex"]
    golden("matmul_write", sch.mod.script())
    assert_computes_same(sch, rng)


def test_matmul_unit_dim_reindex_write(rng):
    """test_tir_schedule_reindex.py::test_matmul_unit_dim_reindex_write"""
    sch = Schedule(matmul_unit_dim)
    sch.reindex(sch.get_block("matmul"), ("write", 0))
    assert alloc_shapes(sch) == {"C_reindex": (1, 1)}
    assert_computes_same(sch, rng)


def test_reindex_then_transform_layout(rng):
    """The use TVM makes of it: reindex, then give the copy a new layout."""
    sch = Schedule(matmul)
    block = sch.get_block("matmul")
    sch.reindex(block, ("read", 2))
    sch.transform_layout(block, "B_reindex", lambda k, j: (j, k))
    assert alloc_shapes(sch)["B_reindex"] == (16, 16)
    assert_computes_same(sch, rng)


def test_reindex_fail_multiple_read():
    """test_tir_schedule_reindex.py::test_reindex_fail_multiple_read"""
    sch = Schedule(multiple_read)
    for buffer in (("read", 0), "A"):
        raises_unchanged(sch, ReindexNonUniqueAccessError, sch.reindex, sch.get_block("B"), buffer)


def test_reindex_errors():
    """One error class per reason: bad index, unknown name, a buffer the block does not
    touch, a read of a written buffer, a non-leaf block, a block not in a loop chain."""
    sch = Schedule(conv2d_nhwc)
    conv = sch.get_block("conv2d_nhwc")
    raises_unchanged(sch, BufferIndexError, sch.reindex, conv, ("read", 7))
    raises_unchanged(sch, BufferNotFoundError, sch.reindex, conv, "Nope")
    raises_unchanged(sch, ReindexNoAccessError, sch.reindex, conv, "Input")
    raises_unchanged(sch, ReindexReadOfWrittenBufferError, sch.reindex, conv, ("read", 0))

    sch = Schedule(matmul)
    i, j, k = sch.get_loops(sch.get_block("matmul"))
    outer = sch.blockize(j)
    raises_unchanged(sch, ReindexNotLeafBlockError, sch.reindex, outer, ("read", 1))
    raises_unchanged(
        sch, ReindexNotLoopChainError, sch.reindex, sch.get_block("matmul"), ("read", 1)
    )
