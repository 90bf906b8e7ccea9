"""TVM's split/fuse tests (tests/python/s_tir/schedule/test_tir_schedule_split_fuse.py),
re-expressed in the DSL with smaller shapes; plus the loop-kind rules we add.

Skipped TVM cases (symbolic shapes, opaque intrinsics, int64, vscale, add_unit_loop) are
listed with the reason in docs/decisions.d/loopsarg.md.
"""

import pytest
from schedule_checks import (
    assert_structural,
    check_numbers,
    raises_unchanged,
    verify_trace_roundtrip,
)

from workbench import T
from workbench.ir import ForKind
from workbench.schedule import (
    AnnotatedLoopError,
    HasAnnotationOrThreadBindingError,
    NonPositiveFactorError,
    NonSerialLoopError,
    NotPerfectlyNestedError,
    Schedule,
    ThreadBoundLoopError,
)


@T.prim_func
def elementwise(A: T.Buffer((8, 16, 16), "float32"), B: T.Buffer((8, 16, 16), "float32")):
    for i, j, k in T.grid(8, 16, 16):
        with T.block("B"):
            vi, vj, vk = T.axis.remap("SSS", [i, j, k])
            B[vi, vj, vk] = A[vi, vj, vk] * T.float32(2)


@T.prim_func
def elementwise_fused(A: T.Buffer((8, 16, 16), "float32"), B: T.Buffer((8, 16, 16), "float32")):
    for i_j_k_fused in T.serial(2048):
        with T.block("B"):
            vi = T.axis.spatial(8, i_j_k_fused // 256)
            vj = T.axis.spatial(16, i_j_k_fused // 16 % 16)
            vk = T.axis.spatial(16, i_j_k_fused % 16)
            B[vi, vj, vk] = A[vi, vj, vk] * T.float32(2)


@T.prim_func
def elementwise_split_case0(
    A: T.Buffer((8, 16, 16), "float32"), B: T.Buffer((8, 16, 16), "float32")
):
    for i_0, i_1, i_2, j_0, j_1, k_0, k_1 in T.grid(2, 1, 4, 4, 4, 8, 2):
        with T.block("B"):
            vi = T.axis.spatial(8, i_0 * 4 + i_1 * 4 + i_2)
            vj = T.axis.spatial(16, j_0 * 4 + j_1)
            vk = T.axis.spatial(16, k_0 * 2 + k_1)
            B[vi, vj, vk] = A[vi, vj, vk] * T.float32(2)


@T.prim_func
def elementwise_split_case1(
    A: T.Buffer((8, 16, 16), "float32"), B: T.Buffer((8, 16, 16), "float32")
):
    for i_0, i_1, i_2, j_0, j_1, j_2, k_0, k_1, k_2 in T.grid(2, 1, 4, 2, 1, 8, 2, 1, 8):
        with T.block("B"):
            vi = T.axis.spatial(8, i_0 * 4 + i_1 * 4 + i_2)
            vj = T.axis.spatial(16, j_0 * 8 + j_1 * 8 + j_2)
            vk = T.axis.spatial(16, k_0 * 8 + k_1 * 8 + k_2)
            B[vi, vj, vk] = A[vi, vj, vk] * T.float32(2)


@T.prim_func
def elementwise_split_with_predicate(
    A: T.Buffer((8, 16, 16), "float32"), B: T.Buffer((8, 16, 16), "float32")
):
    for i_0, i_1, i_2, j_0, j_1, k_0, k_1 in T.grid(10, 2, 3, 1, 17, 3, 6):
        with T.block("B"):
            vi = T.axis.spatial(8, i_0 * 6 + i_1 * 3 + i_2)
            vj = T.axis.spatial(16, j_0 * 17 + j_1)
            vk = T.axis.spatial(16, k_0 * 6 + k_1)
            T.where(i_0 * 6 + i_1 * 3 + i_2 < 8 and j_0 * 17 + j_1 < 16 and k_0 * 6 + k_1 < 16)
            B[vi, vj, vk] = A[vi, vj, vk] * T.float32(2)


@T.prim_func
def elementwise_with_seq(A: T.Buffer((8, 8, 8), "float32"), B: T.Buffer((8, 8, 8), "float32")):
    C = T.alloc_buffer((8, 8, 8), "float32")
    for i, j in T.grid(8, 8):
        for k in T.serial(8):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSS", [i, j, k])
                C[vi, vj, vk] = A[vi, vj, vk] * T.float32(2)
        for k_1 in T.serial(8):
            with T.block("B"):
                vi, vj, vk = T.axis.remap("SSS", [i, j, k_1])
                B[vi, vj, vk] = C[vi, vj, vk] * T.float32(2)


@T.prim_func
def elementwise_with_anno(A: T.Buffer((8, 8, 8), "float32"), B: T.Buffer((8, 8, 8), "float32")):
    for i, j in T.grid(8, 8):
        for k in T.serial(8, annotations={"useless_annotation": True}):
            with T.block("B"):
                vi, vj, vk = T.axis.remap("SSS", [i, j, k])
                B[vi, vj, vk] = A[vi, vj, vk] * T.float32(2)


@T.prim_func
def elementwise_with_thread_binding(
    A: T.Buffer((8, 8, 8), "float32"), B: T.Buffer((8, 8, 8), "float32")
):
    for i, j in T.grid(8, 8):
        for k in T.thread_binding(8, thread="threadIdx.x"):
            with T.block("B"):
                vi, vj, vk = T.axis.remap("SSS", [i, j, k])
                B[vi, vj, vk] = A[vi, vj, vk] * T.float32(2)


@T.prim_func
def elementwise_with_starting_point(
    A: T.Buffer((8, 8, 16), "float32"), B: T.Buffer((8, 8, 16), "float32")
):
    for i, j in T.grid(8, 8):
        for k in T.serial(3, 16):
            with T.block("B"):
                vi, vj, vk = T.axis.remap("SSS", [i, j, k])
                B[vi, vj, vk] = A[vi, vj, vk] * T.float32(2)


@T.prim_func
def elementwise_2d(A: T.Buffer((20, 12), "float32"), B: T.Buffer((20, 12), "float32")):
    for i, j in T.grid(20, 12):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)


@T.prim_func
def elementwise_2d_tiled(A: T.Buffer((20, 12), "float32"), B: T.Buffer((20, 12), "float32")):
    for i_0_j_0_fused, i_1, j_1 in T.grid(6, 8, 8):
        with T.block("B"):
            vi = T.axis.spatial(20, i_0_j_0_fused // 2 * 8 + i_1)
            vj = T.axis.spatial(12, i_0_j_0_fused % 2 * 8 + j_1)
            T.where(i_0_j_0_fused // 2 * 8 + i_1 < 20 and i_0_j_0_fused % 2 * 8 + j_1 < 12)
            B[vi, vj] = A[vi, vj] * T.float32(2)


def test_fuse(rng):
    """test_tir_schedule_split_fuse.py::test_fuse"""
    sch = Schedule(elementwise)
    i, j, k = sch.get_loops(sch.get_block("B"))
    sch.fuse(i, j, k)
    assert_structural(sch, elementwise_fused)
    verify_trace_roundtrip(sch)
    check_numbers(sch, rng)


@pytest.mark.parametrize("disable_predication", [True, False])
def test_split(rng, disable_predication):
    """test_tir_schedule_split_fuse.py::test_split"""
    sch = Schedule(elementwise)
    i, j, k = sch.get_loops(sch.get_block("B"))
    sch.split(i, factors=[2, 1, 4], disable_predication=disable_predication)
    sch.split(j, factors=[4, 4], disable_predication=disable_predication)
    sch.split(k, factors=[8, 2], disable_predication=disable_predication)
    assert_structural(sch, elementwise_split_case0)
    verify_trace_roundtrip(sch)
    check_numbers(sch, rng, targets=("numpy",) if disable_predication else ("numpy", "cpu"))


def test_split_with_inferred_factor(rng):
    """test_tir_schedule_split_fuse.py::test_split_with_inferred_factor"""
    sch = Schedule(elementwise)
    i, j, k = sch.get_loops(sch.get_block("B"))
    sch.split(i, factors=[None, 1, 4])
    sch.split(j, factors=[2, None, 8])
    sch.split(k, factors=[2, 1, None])
    assert_structural(sch, elementwise_split_case1)
    verify_trace_roundtrip(sch)
    check_numbers(sch, rng, targets=("numpy",))


def test_split_with_predicate(rng):
    """test_tir_schedule_split_fuse.py::test_split_with_predicate"""
    sch = Schedule(elementwise)
    i, j, k = sch.get_loops(sch.get_block("B"))
    sch.split(i, factors=[10, 2, 3])
    sch.split(j, factors=[None, 17])
    sch.split(k, factors=[3, None])
    assert_structural(sch, elementwise_split_with_predicate)
    verify_trace_roundtrip(sch)
    check_numbers(sch, rng)


def test_fuse_fail_not_only_child():
    """test_tir_schedule_split_fuse.py::test_fuse_fail_not_only_child"""
    sch = Schedule(elementwise_with_seq)
    _, j, k = sch.get_loops(sch.get_block("B"))
    raises_unchanged(sch, NotPerfectlyNestedError, sch.fuse, j, k)


def test_fuse_split_fail_with_annotation():
    """test_tir_schedule_split_fuse.py::test_fuse_split_fail_with_annotation"""
    sch = Schedule(elementwise_with_anno)
    _, j, k = sch.get_loops(sch.get_block("B"))
    err = raises_unchanged(sch, AnnotatedLoopError, sch.fuse, j, k)
    assert isinstance(err, HasAnnotationOrThreadBindingError) and err.keys == ["useless_annotation"]
    raises_unchanged(sch, AnnotatedLoopError, sch.split, k, factors=[None, 4])


def test_fuse_split_fail_with_thread_binding():
    """test_tir_schedule_split_fuse.py::test_fuse_split_fail_with_thread_binding"""
    sch = Schedule(elementwise_with_thread_binding)
    _, j, k = sch.get_loops(sch.get_block("B"))
    err = raises_unchanged(sch, ThreadBoundLoopError, sch.fuse, j, k)
    assert err.thread == "threadIdx.x"
    raises_unchanged(sch, ThreadBoundLoopError, sch.split, k, factors=[None, 4])


def test_fuse_split_with_starting_point(rng):
    """test_tir_schedule_split_fuse.py::test_fuse_split_fail_not_start_with_zero: TVM refuses
    loops that do not start at 0; we split and fuse them (documented difference)."""
    sch = Schedule(elementwise_with_starting_point)
    _, j, k = sch.get_loops(sch.get_block("B"))
    ko, ki = sch.split(k, factors=[None, 4])
    sch.fuse(j, ko)
    verify_trace_roundtrip(sch)
    check_numbers(sch, rng, targets=("numpy",))


def test_split_with_non_positive_factors():
    """test_tir_schedule_split_fuse.py::test_split_with_non_positive_factors"""
    sch = Schedule(elementwise)
    i, j, k = sch.get_loops(sch.get_block("B"))
    raises_unchanged(sch, NonPositiveFactorError, sch.split, i, factors=[-2, -64])
    raises_unchanged(sch, NonPositiveFactorError, sch.split, j, factors=[0, None])
    raises_unchanged(sch, NonPositiveFactorError, sch.split, k, factors=[None, -16])


def test_fused_symbolic_2d_tiling(rng):
    """test_tir_schedule_split_fuse.py::test_fused_symbolic_2D_tiling (constant shapes that
    the factors do not divide, as the symbolic ones need not)"""
    sch = Schedule(elementwise_2d)
    i, j = sch.get_loops(sch.get_block("B"))
    i0, i1 = sch.split(i, factors=[None, 8])
    j0, j1 = sch.split(j, factors=[None, 8])
    sch.reorder(i0, j0, i1, j1)
    sch.fuse(i0, j0)
    assert_structural(sch, elementwise_2d_tiled)
    verify_trace_roundtrip(sch)
    check_numbers(sch, rng)


# --- loop kinds: beyond TVM, which silently makes the new loops serial -----------------


@T.prim_func
def matmul(
    A: T.Buffer((8, 8), "float32"), B: T.Buffer((8, 8), "float32"), C: T.Buffer((8, 8), "float32")
):
    for i, j, k in T.grid(8, 8, 8):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


def kinds(sch, block="B"):
    return [sch.get(lp).kind for lp in sch.get_loops(sch.get_block(block))]


def test_split_keeps_loop_kinds(rng):
    """Not in TVM (TVM makes every piece serial): parallel stays on the outer piece,
    vectorized on the inner one, unroll on all."""
    sch = Schedule(elementwise)
    i, j, k = sch.get_loops(sch.get_block("B"))
    sch.parallel(i)
    sch.unroll(j)
    sch.vectorize(k)
    sch.split(i, factors=[None, 2])
    sch.split(j, factors=[None, 4])
    sch.split(k, factors=[None, 8])
    S, P, V, U = ForKind.SERIAL, ForKind.PARALLEL, ForKind.VECTORIZED, ForKind.UNROLLED
    assert kinds(sch) == [P, S, U, U, S, V]
    verify_trace_roundtrip(sch)
    check_numbers(sch, rng)


def test_fuse_keeps_a_shared_kind(rng):
    """Not in TVM: fusing loops that are all parallel gives a parallel loop; a parallel loop
    fused with serial ones too, when parallel accepts the fused loop."""
    sch = Schedule(elementwise)
    i, j, k = sch.get_loops(sch.get_block("B"))
    sch.parallel(i)
    sch.parallel(j)
    fused = sch.fuse(i, j)
    assert sch.get(fused).kind is ForKind.PARALLEL
    fused = sch.fuse(fused, k)
    assert sch.get(fused).kind is ForKind.PARALLEL
    verify_trace_roundtrip(sch)
    check_numbers(sch, rng)


def test_fuse_refuses_a_kind_the_fused_loop_cannot_have():
    """Not in TVM: a parallel loop fused with a reduction loop would run the reduction in
    parallel; two different kinds have no one kind."""
    sch = Schedule(matmul)
    i, j, k = sch.get_loops(sch.get_block("C"))
    sch.parallel(j)
    err = raises_unchanged(sch, NonSerialLoopError, sch.fuse, j, k)
    assert err.kind == "parallel" and "reduction" in err.detail
    sch.unroll(i)
    raises_unchanged(sch, NonSerialLoopError, sch.fuse, i, j)


def test_split_then_parallel_is_the_way(rng):
    sch = Schedule(elementwise)
    i, _, k = sch.get_loops(sch.get_block("B"))
    io, _ = sch.split(i, factors=[None, 2])
    _, ki = sch.split(k, factors=[None, 8])
    sch.parallel(io)
    sch.vectorize(ki)
    check_numbers(sch, rng)
