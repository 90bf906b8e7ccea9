"""TVM's rfactor tests (tests/python/s_tir/schedule/test_tir_schedule_rfactor.py),
re-expressed in the DSL with smaller shapes.

Skipped TVM cases (argmax/argmin tuple reducers, ``T.let`` bodies, int64, "not a stage
pipeline") and differences are listed in docs/decisions.d/loopsarg.md.
"""

import pytest
from reduction_examples import with_axis_kinds
from schedule_checks import (
    assert_structural,
    check_numbers,
    raises_unchanged,
    verify_trace_roundtrip,
)

from workbench import T
from workbench.ir import ForKind
from workbench.schedule import (
    FactorAxisOutOfRangeError,
    InitNotIdentityError,
    MixedIterLoopError,
    NonAffineBindingError,
    NonAssociativeUpdateError,
    NotReductionBlockError,
    NotReductionLoopError,
    RfactorLoopNotSerialError,
    Schedule,
    SharedReductionLoopError,
)
from workbench.schedule.tree import replace_loop


@T.prim_func
def transformed_matmul(
    A: T.Buffer((16, 16), "float32"),
    B: T.Buffer((16, 16), "float32"),
    C: T.Buffer((16, 16), "float32"),
):
    for i0, i1, i2_outer, i2_inner_outer, i2_inner_inner in T.grid(16, 16, 2, 2, 4):
        with T.block("update"):
            vi, vj = T.axis.remap("SS", [i0, i1])
            vk = T.axis.reduce(16, i2_outer * 8 + i2_inner_outer * 4 + i2_inner_inner)
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vj, vk]


@T.prim_func
def matmul_rfactor(
    A: T.Buffer((16, 16), "float32"),
    B: T.Buffer((16, 16), "float32"),
    C: T.Buffer((16, 16), "float32"),
):
    C_rf = T.alloc_buffer((4, 16, 16), "float32")
    for i0, i1, i2_outer, i2_inner_outer, i2_inner_inner in T.grid(16, 16, 2, 2, 4):
        with T.block("update_rf"):
            vi2_inner_inner, vi, vj, vi2_outer, vi2_inner_outer = T.axis.remap(
                "SSSRR", [i2_inner_inner, i0, i1, i2_outer, i2_inner_outer]
            )
            with T.init():
                C_rf[vi2_inner_inner, vi, vj] = T.float32(0)
            C_rf[vi2_inner_inner, vi, vj] = (
                C_rf[vi2_inner_inner, vi, vj]
                + A[vi, vi2_outer * 8 + vi2_inner_outer * 4 + vi2_inner_inner]
                * B[vj, vi2_outer * 8 + vi2_inner_outer * 4 + vi2_inner_inner]
            )
    for i0_1, i1_1, i2_inner_inner_1 in T.grid(16, 16, 4):
        with T.block("update"):
            vi2_inner_inner_1, vi_1, vj_1 = T.axis.remap("RSS", [i2_inner_inner_1, i0_1, i1_1])
            with T.init():
                C[vi_1, vj_1] = T.float32(0)
            C[vi_1, vj_1] = C[vi_1, vj_1] + C_rf[vi2_inner_inner_1, vi_1, vj_1]


@T.prim_func
def square_sum(A: T.Buffer((4, 8, 8), "float32"), C: T.Buffer((4,), "float32")):
    for b0, i0, j0 in T.grid(4, 8, 8):
        with T.block("C"):
            b, i, j = T.axis.remap("SRR", [b0, i0, j0])
            with T.init():
                C[b] = T.float32(0)
            C[b] = C[b] + A[b, i, j] * A[b, i, j]


@T.prim_func
def square_sum_rfactor(A: T.Buffer((4, 8, 8), "float32"), C: T.Buffer((4,), "float32")):
    C_rf = T.alloc_buffer((4, 8), "float32")
    for b0, i0, j0 in T.grid(4, 8, 8):
        with T.block("C_rf"):
            vj0, b, i = T.axis.remap("SSR", [j0, b0, i0])
            with T.init():
                C_rf[b, vj0] = T.float32(0)
            C_rf[b, vj0] = C_rf[b, vj0] + A[b, i, vj0] * A[b, i, vj0]
    for b0_1, j0_1 in T.grid(4, 8):
        with T.block("C"):
            vj0_1, b_1 = T.axis.remap("RS", [j0_1, b0_1])
            with T.init():
                C[b_1] = T.float32(0)
            C[b_1] = C[b_1] + C_rf[b_1, vj0_1]


@T.prim_func
def square_sum_square_root_factor_one_1(
    A: T.Buffer((4, 8, 8), "float32"), D: T.Buffer((4,), "float32")
):
    C = T.alloc_buffer((4,), "float32")
    for i0, i1_i2_fused_outer, i1_i2_fused_inner in T.grid(4, 64, 1):  # noqa: B007
        with T.block("C"):
            b = T.axis.spatial(4, i0)
            i = T.axis.reduce(8, i1_i2_fused_outer // 8)
            j = T.axis.reduce(8, i1_i2_fused_outer % 8)
            with T.init():
                C[b] = T.float32(0)
            C[b] = C[b] + A[b, i, j] * A[b, i, j]
    for i0_1 in T.serial(4):
        with T.block("D"):
            b_1 = T.axis.spatial(4, i0_1)
            D[b_1] = T.sqrt(C[b_1])


@T.prim_func
def square_sum_square_root_factor_one_1_rfactor(
    A: T.Buffer((4, 8, 8), "float32"), D: T.Buffer((4,), "float32")
):
    C = T.alloc_buffer((4,), "float32")
    C_rf = T.alloc_buffer((1, 4), "float32")
    for i0, i1_i2_fused_outer, i1_i2_fused_inner in T.grid(4, 64, 1):
        with T.block("C_rf"):
            vi1_i2_fused_inner = T.axis.spatial(1, i1_i2_fused_inner)
            b = T.axis.spatial(4, i0)
            i = T.axis.reduce(8, i1_i2_fused_outer // 8)
            j = T.axis.reduce(8, i1_i2_fused_outer % 8)
            with T.init():
                C_rf[vi1_i2_fused_inner, b] = T.float32(0)
            C_rf[vi1_i2_fused_inner, b] = C_rf[vi1_i2_fused_inner, b] + A[b, i, j] * A[b, i, j]
    for i0_2, i1_i2_fused_inner_1 in T.grid(4, 1):
        with T.block("C"):
            vi1_i2_fused_inner_1, b_2 = T.axis.remap("RS", [i1_i2_fused_inner_1, i0_2])
            with T.init():
                C[b_2] = T.float32(0)
            C[b_2] = C[b_2] + C_rf[vi1_i2_fused_inner_1, b_2]
    for i0_1 in T.serial(4):
        with T.block("D"):
            b_1 = T.axis.spatial(4, i0_1)
            D[b_1] = T.sqrt(C[b_1])


@T.prim_func
def square_sum_square_root_factor_one_2(
    A: T.Buffer((4, 8, 8), "float32"), D: T.Buffer((4,), "float32")
):
    C = T.alloc_buffer((4,), "float32")
    for i0, i1_i2_fused_outer, i1_i2_fused_inner in T.grid(4, 1, 64):  # noqa: B007
        with T.block("C"):
            b = T.axis.spatial(4, i0)
            i = T.axis.reduce(8, i1_i2_fused_inner // 8)
            j = T.axis.reduce(8, i1_i2_fused_inner % 8)
            with T.init():
                C[b] = T.float32(0)
            C[b] = C[b] + A[b, i, j] * A[b, i, j]
    for i0_1 in T.serial(4):
        with T.block("D"):
            b_1 = T.axis.spatial(4, i0_1)
            D[b_1] = T.sqrt(C[b_1])


@T.prim_func
def rowsum(A: T.Buffer((8, 8), "float32"), B: T.Buffer((8,), "float32")):
    for i, k in T.grid(8, 8):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]


@T.prim_func
def rowsum_not_quasi_affine(A: T.Buffer((8, 32), "float32"), B: T.Buffer((8,), "float32")):
    for i, k in T.grid(8, 8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            vk = T.axis.reduce(32, k * k // 2)
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]


@T.prim_func
def rowsum_not_dominant(A: T.Buffer((8, 8), "float32"), B: T.Buffer((8, 8), "float32")):
    for i, k in T.grid(8, 8):
        with T.block("B"):
            vi, vk = T.axis.remap("SS", [i, k])  # swapped to "SR" below (the DSL refuses it)
            with T.init():
                B[vi, vk] = T.float32(0)
            B[vi, vk] = B[vi, vk] + A[vi, vk]


rowsum_not_dominant = with_axis_kinds(rowsum_not_dominant, "B", "SR")


@T.prim_func
def rowsum_wrong_reduce_pattern1(A: T.Buffer((8, 8), "float32"), B: T.Buffer((8,), "float32")):
    for i, k in T.grid(8, 8):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(1)
            B[vi] = B[vi] + A[vi, vk]


@T.prim_func
def rowsum_wrong_reduce_pattern2(A: T.Buffer((8, 8), "float32"), B: T.Buffer((8,), "float32")):
    for i, k in T.grid(8, 8):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] - A[vi, vk]


@T.prim_func
def rowsum_transformed(A: T.Buffer((8, 8), "float32"), B: T.Buffer((8,), "float32")):
    for io, ii_ko_fused, ki in T.grid(2, 16, 2):
        with T.block("B"):
            vi = T.axis.spatial(8, io * 4 + ii_ko_fused // 4)
            vk = T.axis.reduce(8, ii_ko_fused % 4 * 2 + ki)
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]


@T.prim_func
def rowsum_predicate(A: T.Buffer((8, 16), "float32"), B: T.Buffer((8,), "float32")):
    for i, k_0, k_1 in T.grid(8, 4, 5):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            vk = T.axis.reduce(16, k_0 * 5 + k_1)
            T.where(k_0 * 5 + k_1 < 16)
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]


@T.prim_func
def matmul_loop_multiple_children(
    A: T.Buffer((8, 8), "float32"),
    B: T.Buffer((8, 8), "float32"),
    C: T.Buffer((8, 8), "float32"),
    D: T.Buffer((8, 8), "float32"),
):
    for k, i, j in T.grid(8, 8, 8):
        with T.block("C"):
            ck, ci, cj = T.axis.remap("RSS", [k, i, j])
            with T.init():
                C[ci, cj] = T.float32(0)
            C[ci, cj] = C[ci, cj] + A[ci, ck] * B[ck, cj]
        with T.block("D"):
            dk, di, dj = T.axis.remap("RSS", [k, i, j])
            with T.init():
                D[di, dj] = T.float32(0)
            D[di, dj] = D[di, dj] + B[di, dk] * A[dk, dj]


@T.prim_func
def multiple_reduction_blocks(A: T.Buffer((4, 4, 8), "float32"), F: T.Buffer((4, 4), "float32")):
    C = T.alloc_buffer((4, 4), "float32")
    D = T.alloc_buffer((4, 4), "float32")
    E = T.alloc_buffer((4, 4), "float32")
    for i in T.serial(4):
        for j1 in T.serial(4):
            for k1o, k1i in T.grid(2, 4):
                with T.block("C"):
                    ci, cj = T.axis.remap("SS", [i, j1])
                    ck = T.axis.reduce(8, k1o * 4 + k1i)
                    with T.init():
                        C[ci, cj] = T.float32(0)
                    C[ci, cj] = C[ci, cj] + A[ci, cj, ck]
            for k2o, k2i in T.grid(2, 4):
                with T.block("D"):
                    di, dj = T.axis.remap("SS", [i, j1])
                    dk = T.axis.reduce(8, k2o * 4 + k2i)
                    with T.init():
                        D[di, dj] = T.float32(0)
                    D[di, dj] = D[di, dj] + A[di, dj, dk] + C[di, dj]
        for j2 in T.serial(4):
            for k3o, k3i in T.grid(2, 4):
                with T.block("E"):
                    ei, ej = T.axis.remap("SS", [i, j2])
                    ek = T.axis.reduce(8, k3o * 4 + k3i)
                    with T.init():
                        E[ei, ej] = T.float32(0)
                    E[ei, ej] = E[ei, ej] + A[ei, ej, ek] + D[ei, ej]
            for k4o, k4i in T.grid(2, 4):
                with T.block("F"):
                    fi, fj = T.axis.remap("SS", [i, j2])
                    fk = T.axis.reduce(8, k4o * 4 + k4i)
                    with T.init():
                        F[fi, fj] = T.float32(0)
                    F[fi, fj] = F[fi, fj] + A[fi, fj, fk] + E[fi, fj]


def test_reduction_rfactor_matmul(rng):
    """test_tir_schedule_rfactor.py::test_reduction_rfactor_matmul"""
    sch = Schedule(transformed_matmul)
    update = sch.get_block("update")
    *_, kii = sch.get_loops(update)
    rf_block = sch.rfactor(kii, 0)
    assert_structural(sch, matmul_rfactor)
    assert sch.name(rf_block) == "update_rf" and sch.name(update) == "update"
    verify_trace_roundtrip(sch)
    check_numbers(sch, rng)


def test_reduction_rfactor_factor_axis_range(rng):
    """test_tir_schedule_rfactor.py::test_reduction_rfactor_factor_axis_range"""
    sch = Schedule(transformed_matmul)
    *_, kii = sch.get_loops(sch.get_block("update"))
    sch.rfactor(kii, -3)
    assert_structural(sch, matmul_rfactor)
    verify_trace_roundtrip(sch)


def test_reduction_rfactor_factor_axis_range_fail():
    """test_tir_schedule_rfactor.py::test_reduction_rfactor_factor_axis_range_fail"""
    sch = Schedule(transformed_matmul)
    *_, kii = sch.get_loops(sch.get_block("update"))
    raises_unchanged(sch, FactorAxisOutOfRangeError, sch.rfactor, kii, 3)
    raises_unchanged(sch, FactorAxisOutOfRangeError, sch.rfactor, kii, -4)


def test_reduction_rfactor_square_sum(rng):
    """test_tir_schedule_rfactor.py::test_reduction_rfactor_square_sum"""
    sch = Schedule(square_sum)
    _, _, j = sch.get_loops(sch.get_block("C"))
    rf_block = sch.rfactor(j, 1)
    assert_structural(sch, square_sum_rfactor)
    assert sch.name(rf_block) == "C_rf"
    verify_trace_roundtrip(sch)
    check_numbers(sch, rng)


def test_reduction_rfactor_square_sum_square_root_factor_one_1(rng):
    """test_tir_schedule_rfactor.py::test_reduction_rfactor_square_sum_square_root (and the
    factor_one_1 case): rfactor of the extent-1 inner loop of a fused reduction loop."""
    sch = Schedule(square_sum_square_root_factor_one_1)
    _, _, f_i = sch.get_loops(sch.get_block("C"))
    rf_block = sch.rfactor(f_i, 0)
    assert_structural(sch, square_sum_square_root_factor_one_1_rfactor)
    assert sch.name(rf_block) == "C_rf"
    verify_trace_roundtrip(sch)
    check_numbers(sch, rng)


def test_reduction_rfactor_square_sum_square_root_factor_one_2(rng):
    """test_tir_schedule_rfactor.py (square_sum_square_root_factor_one_2): rfactor of the
    extent-1 outer loop of a fused reduction loop, factor_axis=-1."""
    sch = Schedule(square_sum_square_root_factor_one_2)
    _, f_o, _ = sch.get_loops(sch.get_block("C"))
    sch.rfactor(f_o, -1)
    rf_buffer = next(b for b in sch.mod.root_block.alloc_buffers if b.name == "C_rf")
    assert rf_buffer.shape == (4, 1)
    verify_trace_roundtrip(sch)
    check_numbers(sch, rng)


def test_reduction_rfactor_loop_multiple_children():
    """test_tir_schedule_rfactor.py::test_reduction_rfactor_loop_multiple_children"""
    sch = Schedule(matmul_loop_multiple_children)
    k, _, _ = sch.get_loops(sch.get_block("C"))
    raises_unchanged(sch, SharedReductionLoopError, sch.rfactor, k, 0)


def test_reduction_rfactor_not_reduction_block1():
    """test_tir_schedule_rfactor.py::test_reduction_rfactor_not_reduction_block1"""

    @T.prim_func
    def element_wise(A: T.Buffer((8, 8), "float32"), B: T.Buffer((8, 8), "float32")):
        for i, j in T.grid(8, 8):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] * T.float32(2)

    sch = Schedule(element_wise)
    i, _ = sch.get_loops(sch.get_block("B"))
    raises_unchanged(sch, NotReductionLoopError, sch.rfactor, i, 0)


def test_reduction_rfactor_not_reduction_block2():
    """test_tir_schedule_rfactor.py::test_reduction_rfactor_not_reduction_block2: the
    reduction binding ``(k * k) // 2`` is not quasi-affine."""
    sch = Schedule(rowsum_not_quasi_affine)
    _, k = sch.get_loops(sch.get_block("B"))
    err = raises_unchanged(sch, NonAffineBindingError, sch.rfactor, k, 0)
    assert err.iter_var == "vk" and "k * k // 2" in err.message


def test_reduction_rfactor_not_reduction_block3():
    """test_tir_schedule_rfactor.py::test_reduction_rfactor_not_reduction_block3"""
    sch = Schedule(rowsum_not_dominant)
    _, k = sch.get_loops(sch.get_block("B"))
    raises_unchanged(sch, NotReductionBlockError, sch.rfactor, k, 0)


@pytest.mark.parametrize("kind", [ForKind.PARALLEL, ForKind.VECTORIZED, ForKind.UNROLLED])
def test_reduction_rfactor_not_serial_loop(kind):
    """test_tir_schedule_rfactor.py::test_reduction_rfactor_not_serial_loop (the kind set on
    the IR directly: the DSL and ``parallel`` refuse a parallel reduction loop themselves)."""
    func = replace_loop(rowsum, "k", lambda loop: loop.replace(kind=kind))
    sch = Schedule(func)
    _, k = sch.get_loops(sch.get_block("B"))
    err = raises_unchanged(sch, RfactorLoopNotSerialError, sch.rfactor, k, 0)
    assert err.kind == kind.value


def test_reduction_rfactor_thread_bound_loop():
    """Design for thread bindings: a thread-bound reduction loop is not serial either."""
    func = replace_loop(
        rowsum,
        "k",
        lambda loop: loop.replace(kind=ForKind.THREAD_BINDING, thread_binding="threadIdx.x"),
    )
    sch = Schedule(func)
    _, k = sch.get_loops(sch.get_block("B"))
    raises_unchanged(sch, RfactorLoopNotSerialError, sch.rfactor, k, 0)


def test_reduction_rfactor_unrolled_after_rfactor(rng):
    """The way round the refusal: rfactor the serial loop, then mark the new loops."""
    sch = Schedule(rowsum)
    i, k = sch.get_loops(sch.get_block("B"))
    ko, ki = sch.split(k, factors=[None, 4])
    rf = sch.rfactor(ki, 0)
    sch.unroll(sch.get_loops(rf)[-1])
    sch.parallel(sch.get_loops(rf)[0])
    check_numbers(sch, rng)


def test_reduction_rfactor_wrong_reduce_pattern1():
    """test_tir_schedule_rfactor.py::test_reduction_rfactor_wrong_reduce_pattern1"""
    sch = Schedule(rowsum_wrong_reduce_pattern1)
    _, k = sch.get_loops(sch.get_block("B"))
    raises_unchanged(sch, InitNotIdentityError, sch.rfactor, k, 0)


def test_reduction_rfactor_wrong_reduce_pattern2():
    """test_tir_schedule_rfactor.py::test_reduction_rfactor_wrong_reduce_pattern2"""
    sch = Schedule(rowsum_wrong_reduce_pattern2)
    _, k = sch.get_loops(sch.get_block("B"))
    raises_unchanged(sch, NonAssociativeUpdateError, sch.rfactor, k, 0)


def test_reduction_rfactor_wrong_loops1():
    """test_tir_schedule_rfactor.py::test_reduction_rfactor_wrong_loops1"""
    sch = Schedule(rowsum)
    i, _ = sch.get_loops(sch.get_block("B"))
    raises_unchanged(sch, NotReductionLoopError, sch.rfactor, i, 0)


def test_reduction_rfactor_wrong_loops2():
    """test_tir_schedule_rfactor.py::test_reduction_rfactor_wrong_loops2"""
    sch = Schedule(rowsum_transformed)
    _, _, k_i = sch.get_loops(sch.get_block("B"))
    raises_unchanged(sch, MixedIterLoopError, sch.rfactor, k_i, 0)


TVM_MULTIPLE_CHILDREN_ERRORS = (SharedReductionLoopError, NonAssociativeUpdateError)
"""D, E and F share their outer loops with other blocks (SharedReductionLoopError) and
update as ``D = D + A + C``, which is ``(D + A) + C`` (NonAssociativeUpdateError)."""


def test_reduction_rfactor_outermost_loop_multiple_children_fail():
    """test_tir_schedule_rfactor.py::test_reduction_rfactor_outermost_loop_multiple_children_fail"""
    sch = Schedule(multiple_reduction_blocks)
    for block in ("D", "E", "F"):
        _, _, ko, ki = sch.get_loops(sch.get_block(block))
        with pytest.raises(TVM_MULTIPLE_CHILDREN_ERRORS):
            sch.rfactor(ko, 0)
        with pytest.raises(TVM_MULTIPLE_CHILDREN_ERRORS):
            sch.rfactor(ki, 0)


def test_reduction_rfactor_outermost_loop_multiple_children(rng):
    """test_tir_schedule_rfactor.py::test_reduction_rfactor_outermost_loop_multiple_children"""
    sch = Schedule(multiple_reduction_blocks)
    C = sch.get_block("C")
    _, _, k1o, _ = sch.get_loops(C)
    rf_block = sch.rfactor(k1o, 2)
    assert sch.name(rf_block) == "C_rf"
    rf_buffer = next(b for b in sch.mod.root_block.alloc_buffers if b.name == "C_rf")
    assert rf_buffer.shape == (4, 4, 2)
    verify_trace_roundtrip(sch)
    check_numbers(sch, rng)


def test_reduction_rfactor_predicate(rng):
    """test_tir_schedule_rfactor.py::test_reduction_rfactor_predicate: TVM raises (a
    RuntimeError, marked TODO); we rfactor a guarded reduction (documented difference)."""
    sch = Schedule(rowsum_predicate)
    _, ko, _ = sch.get_loops(sch.get_block("B"))
    sch.rfactor(ko, 1)
    verify_trace_roundtrip(sch)
    check_numbers(sch, rng)


def test_reduction_rfactor_with_annotation(rng):
    """test_tir_schedule_rfactor.py::test_reduction_rfactor_with_annotation"""

    @T.prim_func
    def square_sum_with_annotation(A: T.Buffer((4, 8, 8), "float32"), C: T.Buffer((4,), "float32")):
        for b0, i0, j0 in T.grid(4, 8, 8):
            with T.block("C"):
                T.block_attr({"test_annotation": 1})
                b, i, j = T.axis.remap("SRR", [b0, i0, j0])
                with T.init():
                    C[b] = T.float32(0)
                C[b] = C[b] + A[b, i, j] * A[b, i, j]

    sch = Schedule(square_sum_with_annotation)
    _, _, j = sch.get_loops(sch.get_block("C"))
    rf_block = sch.rfactor(j, 1)
    assert sch.get(rf_block).annotations == (("test_annotation", 1),)
    assert sch.get(sch.get_block("C")).annotations == (("test_annotation", 1),)
    verify_trace_roundtrip(sch)
    check_numbers(sch, rng)


def test_reduction_rfactor_spatial_only(rng):
    """test_tir_schedule_rfactor.py::test_reduction_rfactor_spatial_only"""

    @T.prim_func
    def rfactor_spatial_only(
        A: T.Buffer((1, 8, 7, 7), "float32"), B: T.Buffer((1, 8, 1, 1), "float32")
    ):
        for _i0, i1, _i2, _i3, i4, _i5 in T.grid(1, 8, 1, 1, 49, 1):
            with T.block("acc"):
                ax0 = T.axis.spatial(1, 0)
                ax1 = T.axis.spatial(8, i1)
                ax2 = T.axis.spatial(1, 0)
                ax3 = T.axis.spatial(1, 0)
                rv0 = T.axis.reduce(7, i4 // 7)
                rv1 = T.axis.reduce(7, i4 % 7)
                with T.init():
                    B[ax0, ax1, ax2, ax3] = T.float32(0)
                B[ax0, ax1, ax2, ax3] = (
                    B[ax0, ax1, ax2, ax3] + A[ax0, ax1, ax2 * 7 + rv0, ax3 * 7 + rv1]
                )

    sch = Schedule(rfactor_spatial_only)
    block = sch.get_block("acc")
    _, _, _, _, loop, _ = sch.get_loops(block)
    rf_block = sch.rfactor(loop, 4)
    assert sch.name(rf_block) == "acc_rf"
    rf_buffer = next(b for b in sch.mod.root_block.alloc_buffers if b.name == "B_rf")
    assert rf_buffer.shape == (1, 8, 1, 1, 49)
    verify_trace_roundtrip(sch)
    check_numbers(sch, rng)
