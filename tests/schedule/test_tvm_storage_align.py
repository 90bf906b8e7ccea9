"""``storage_align``, ported from TVM's
tests/python/s_tir/schedule/test_tir_schedule_storage_align.py: the annotation it writes,
its errors, and (beyond TVM's test) that both backends allocate the padded strides and
compute the reference result."""

import pytest
from schedule_checks import assert_computes_same, make_golden, raises_unchanged
from schedule_examples import matmul

from workbench import T
from workbench.backends.common.lower import lower
from workbench.backends.common.storage_align import aligned_strides
from workbench.ir import Buffer
from workbench.schedule import (
    BufferIndexError,
    NonAllocatedBufferError,
    Schedule,
    StorageAlignAxisOutOfRangeError,
    StorageAlignInvalidAnnotationError,
    StorageAlignInvalidFactorError,
)
from workbench.schedule.tree import find_block


@pytest.fixture
def golden(request):
    return make_golden(request, "storage_align")


@T.prim_func
def element_wise(A: T.Buffer((16, 12), "float32"), C: T.Buffer((16, 12), "float32")):
    B = T.alloc_buffer((16, 12), "float32")
    for i0 in T.serial(16):
        for ax1 in T.serial(12):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i0, ax1])
                B[vi, vj] = A[vi, vj] * T.float32(2)
        for i1 in T.serial(12):
            with T.block("C"):
                vi_1, vj_1 = T.axis.remap("SS", [i0, i1])
                C[vi_1, vj_1] = B[vi_1, vj_1] + T.float32(1)


@T.prim_func
def element_wise_invalid_annotation(
    A: T.Buffer((16, 12), "float32"), C: T.Buffer((16, 12), "float32")
):
    B = T.alloc_buffer((16, 12), "float32")
    for i0 in T.serial(16):
        for ax1 in T.serial(12):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i0, ax1])
                T.block_attr({"buffer_dim_align": (0,)})
                B[vi, vj] = A[vi, vj] * T.float32(2)
        for i1 in T.serial(12):
            with T.block("C"):
                vi_1, vj_1 = T.axis.remap("SS", [i0, i1])
                C[vi_1, vj_1] = B[vi_1, vj_1] + T.float32(1)


def annotation(sch, name):
    block = find_block(sch.mod, name, "test")[0]
    return dict(block.annotations)["buffer_dim_align"]


def test_storage_align(golden, rng):
    """test_tir_schedule_storage_align.py::test_storage_align"""
    sch = Schedule(element_wise)
    sch.storage_align(sch.get_block("B"), 0, axis=0, factor=16, offset=15)
    assert annotation(sch, "B") == ((0, 0, 16, 15),)
    golden("element_wise", sch.mod.script())
    assert str(sch.trace).splitlines()[-1] == "sch.storage_align(b0, 0, 0, 16, 15)"
    assert_computes_same(sch, rng)


def test_storage_align_update(rng):
    """test_tir_schedule_storage_align.py::test_storage_align_update: a second call for the
    same buffer and axis replaces the first."""
    sch = Schedule(element_wise)
    block = sch.get_block("B")
    sch.storage_align(block, 0, axis=0, factor=16, offset=0)
    sch.storage_align(block, 0, axis=0, factor=16, offset=15)
    assert annotation(sch, "B") == ((0, 0, 16, 15),)
    assert_computes_same(sch, rng)


def test_storage_align_lowered_strides(golden):
    """The backends store B flat with stride 17 (>= 12, = 1 mod 8) for axis 0."""
    sch = Schedule(element_wise)
    sch.storage_align(sch.get_block("B"), 0, axis=-2, factor=8, offset=1)
    assert annotation(sch, "B") == ((0, 0, 8, 1),)  # negative axis normalised, as in TVM
    lowered = lower(sch.mod)
    (buf,) = lowered.root_block.alloc_buffers
    assert buf == Buffer("B", (16 * 17,), "float32")
    golden("lowered", lowered.script())


def test_aligned_strides():
    """TVM's FlattenBuffer rule: pad each stride, innermost first, to k * factor + offset."""
    assert aligned_strides((4, 6), {0: (8, 1)}) == [9, 1]
    assert aligned_strides((4, 6), {0: (8, 0)}) == [8, 1]
    assert aligned_strides((2, 3, 5), {1: (4, 0), 0: (7, 3)}) == [24, 8, 1]
    assert aligned_strides((3, 5), {1: (4, 2)}) == [10, 2]


def test_storage_align_local_cache_cpu(rng):
    """An aligned ``local`` cache under a parallel loop (allocated per iteration, after
    compaction) computes the reference on both backends."""
    sch = Schedule(matmul)
    block = sch.get_block("C")
    cache = sch.cache_write(block, 0, "local")
    i, j, k = sch.get_loops(block)
    sch.reverse_compute_at(cache, i)
    sch.storage_align(block, 0, axis=0, factor=16, offset=3)
    sch.parallel(i)
    assert_computes_same(sch, rng)


def test_storage_align_invalid_factor():
    """test_tir_schedule_storage_align.py::test_storage_align_invalid_factor1 and
    ::test_storage_align_invalid_factor2"""
    for factor in (0, -1):
        sch = Schedule(element_wise)
        raises_unchanged(
            sch, StorageAlignInvalidFactorError, sch.storage_align, sch.get_block("B"), 0, 0,
            factor, 15,
        )


def test_storage_align_invalid_buffer():
    """test_tir_schedule_storage_align.py::test_storage_align_invalid_buffer: C is a
    parameter, not allocated by a block."""
    sch = Schedule(element_wise)
    err = raises_unchanged(
        sch, NonAllocatedBufferError, sch.storage_align, sch.get_block("C"), 0, 0, 16, 15
    )
    assert err.buffer == "C"


def test_storage_align_invalid_buffer_index():
    """test_tir_schedule_storage_align.py::test_storage_align_invalid_buffer_index"""
    sch = Schedule(element_wise)
    raises_unchanged(sch, BufferIndexError, sch.storage_align, sch.get_block("B"), 2, 0, 16, 15)


def test_storage_align_invalid_axis():
    """test_tir_schedule_storage_align.py::test_storage_align_invalid_axis"""
    sch = Schedule(element_wise)
    raises_unchanged(
        sch, StorageAlignAxisOutOfRangeError, sch.storage_align, sch.get_block("B"), 0, 2, 16, 15
    )


def test_storage_align_invalid_annotation():
    """test_tir_schedule_storage_align.py::test_storage_align_invalid_annotation (with a valid
    axis: TVM's test passes axis=2, which its axis check refuses first)."""
    sch = Schedule(element_wise_invalid_annotation)
    raises_unchanged(
        sch, StorageAlignInvalidAnnotationError, sch.storage_align, sch.get_block("B"), 0, 0,
        16, 15,
    )
    raises_unchanged(
        sch, StorageAlignAxisOutOfRangeError, sch.storage_align, sch.get_block("B"), 0, 2, 16, 15
    )
