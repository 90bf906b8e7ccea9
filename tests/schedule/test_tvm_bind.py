"""bind: tests ported from TVM (tests/python/s_tir/schedule/test_tir_schedule_for_kind.py).

Each test names the TVM test it comes from. TVM cases we do not follow are listed in
docs/decisions.d/cuda.md (one axis with two extents in a kernel).
"""

import pytest
from schedule_checks import raises_unchanged

from workbench import T
from workbench.schedule import ReductionLoopError, Schedule, ThreadExtentMismatchError, Trace


@T.prim_func
def element_wise(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32")):
    for i, j in T.grid(128, 128):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)


@T.prim_func
def element_wise_i_bound(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32")):
    for i in T.thread_binding(128, thread="threadIdx.x"):
        for j in T.serial(128):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] * T.float32(2)


@T.prim_func
def element_wise_i_unrolled(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32")):
    for i in T.unroll(128):
        for j in T.serial(128):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] * T.float32(2)


@T.prim_func
def rowsum(A: T.Buffer((128, 16), "float32"), B: T.Buffer((128,), "float32")):
    for i, k in T.grid(128, 16):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]


@T.prim_func
def element_wise_compute_at_split(A: T.Buffer((128, 128), "float32"),
                                  C: T.Buffer((128, 128), "float32")):
    B = T.alloc_buffer((128, 128))
    for i in T.serial(128):
        for j0 in T.serial(128):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j0])
                B[vi, vj] = A[vi, vj] * T.float32(2)
        for j1o, j1i in T.grid(32, 4):
            with T.block("C"):
                vi = T.axis.spatial(128, i)
                vj = T.axis.spatial(128, j1o * 4 + j1i)
                C[vi, vj] = B[vi, vj] + T.float32(1)


def roundtrip(sch: Schedule, func) -> None:
    """TVM's verify_trace_roundtrip: the JSON trace replays to the same function."""
    assert Trace.from_json(sch.trace.to_json()).apply(func).mod == sch.mod


def test_bind1():
    """test_tir_schedule_for_kind.py::test_bind1"""
    sch = Schedule(element_wise)
    i, _ = sch.get_loops(sch.get_block("B"))
    sch.bind(i, "threadIdx.x")
    assert sch.mod.body == element_wise_i_bound.body
    roundtrip(sch, element_wise)


def test_bind_after_bind():
    """test_tir_schedule_for_kind.py::test_bind_after_bind"""
    sch = Schedule(element_wise)
    i, _ = sch.get_loops(sch.get_block("B"))
    sch.bind(i, "blockIdx.x")
    sch.bind(i, "threadIdx.x")
    assert sch.mod.body == element_wise_i_bound.body
    roundtrip(sch, element_wise)


def test_unroll_after_bind():
    """test_tir_schedule_for_kind.py::test_unroll_after_bind (on element_wise: rowsum's
    row loop is the same case)"""
    sch = Schedule(element_wise)
    i, _ = sch.get_loops(sch.get_block("B"))
    sch.bind(i, "blockIdx.x")
    sch.unroll(i)
    assert sch.get(i).thread_binding in (None, "blockIdx.x")
    assert sch.get(i).kind.value == "unroll"
    roundtrip(sch, element_wise)


def test_bind_not_cross_thread_reduction():
    """test_tir_schedule_for_kind.py::test_bind_not_cross_thread_reduction"""
    sch = Schedule(rowsum)
    _, k = sch.get_loops(sch.get_block("B"))
    raises_unchanged(sch, ReductionLoopError, sch.bind, k, "blockIdx.x")


def test_bind_cross_thread_reduction():
    """test_tir_schedule_for_kind.py::test_bind_cross_thread_reduction: as TVM, a reduction
    loop of a reduction block may be bound to threadIdx (the cuda target lowers it to a
    warp-shuffle allreduce, workbench/backends/cuda/cuda_reduction.py)."""
    sch = Schedule(rowsum)
    _, k = sch.get_loops(sch.get_block("B"))
    sch.bind(k, "threadIdx.x")
    assert sch.get(k).thread_binding == "threadIdx.x"
    roundtrip(sch, rowsum)


def test_bind2_extents_must_agree():
    """test_tir_schedule_for_kind.py::test_bind2: TVM binds j0 (128) and j1o (32) of one
    kernel to threadIdx.x; we refuse the second (one extent per axis and kernel)."""
    sch = Schedule(element_wise_compute_at_split)
    _, j0 = sch.get_loops(sch.get_block("B"))
    _, j1o, _ = sch.get_loops(sch.get_block("C"))
    sch.bind(j0, "threadIdx.x")
    raises_unchanged(sch, ThreadExtentMismatchError, sch.bind, j1o, "threadIdx.x")


@pytest.mark.parametrize("axis", ["blockIdx.x", "threadIdx.y"])
def test_bind_then_replay_each_axis(axis):
    """test_tir_schedule_for_kind.py::test_bind1 with other axes"""
    sch = Schedule(element_wise)
    i, _ = sch.get_loops(sch.get_block("B"))
    sch.bind(i, axis)
    roundtrip(sch, element_wise)
