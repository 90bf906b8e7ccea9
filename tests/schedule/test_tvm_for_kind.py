"""TVM's loop-kind tests (parallel, vectorize, unroll), re-expressed in the DSL.

Source: apache/tvm ``tests/python/s_tir/schedule/test_tir_schedule_for_kind.py``. Each test
names the TVM test it comes from. Legal schedules are compared with TVM's expected function
(structural equality; our equality includes variable names, so the expected functions keep
the input's loop names where TVM's renamed them), replayed from their trace, and run on the numpy target (in program
order and with parallel loops shuffled / reversed) and the cpu target against the
unscheduled function on random inputs. The ``bind`` tests are not ported (no thread binding
yet: the CUDA issue); see ``docs/decisions.d/scope.md``.
"""

from reduction_examples import with_axis_kinds
from schedule_checks import assert_computes_reference, raises_unchanged, verify_trace_roundtrip

from workbench import T
from workbench.schedule import (
    LoopCarriedDependenceError,
    LoopWriteConflictError,
    ReductionLoopError,
    Schedule,
)

# --- the functions (TVM's, 128 shapes kept where the python loop path stays fast) --------


@T.prim_func
def element_wise(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32")):
    for i, j in T.grid(128, 128):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)


def element_wise_parallelized():
    @T.prim_func
    def element_wise(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32")):
        for i in T.parallel(128):
            for j in T.serial(128):
                with T.block("B"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    B[vi, vj] = A[vi, vj] * T.float32(2)

    return element_wise


@T.prim_func
def element_wise_compute_at_split(
    A: T.Buffer((128, 128), "float32"), C: T.Buffer((128, 128), "float32")
):
    B = T.alloc_buffer((128, 128), "float32")
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


def element_wise_compute_at_split_vectorized():
    @T.prim_func
    def element_wise_compute_at_split(
        A: T.Buffer((128, 128), "float32"), C: T.Buffer((128, 128), "float32")
    ):
        B = T.alloc_buffer((128, 128), "float32")
        for i in T.serial(128):
            for j0 in T.serial(128):
                with T.block("B"):
                    vi, vj = T.axis.remap("SS", [i, j0])
                    B[vi, vj] = A[vi, vj] * T.float32(2)
            for j1o in T.serial(32):
                for j1i in T.vectorized(4):
                    with T.block("C"):
                        vi = T.axis.spatial(128, i)
                        vj = T.axis.spatial(128, j1o * 4 + j1i)
                        C[vi, vj] = B[vi, vj] + T.float32(1)

    return element_wise_compute_at_split


@T.prim_func
def element_wise_split_predicate(
    A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32")
):
    for i, j_0, j_1 in T.grid(128, 13, 10):
        with T.block("B"):
            vi = T.axis.spatial(128, i)
            vj = T.axis.spatial(128, j_0 * 10 + j_1)
            T.where(j_0 * 10 + j_1 < 128)
            B[vi, vj] = A[vi, vj] * T.float32(2)


def element_wise_split_predicate_kind(kind: str):
    @T.prim_func
    def parallelized(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32")):
        for i in T.serial(128):
            for j_0 in T.parallel(13):
                for j_1 in T.serial(10):
                    with T.block("B"):
                        vi = T.axis.spatial(128, i)
                        vj = T.axis.spatial(128, j_0 * 10 + j_1)
                        T.where(j_0 * 10 + j_1 < 128)
                        B[vi, vj] = A[vi, vj] * T.float32(2)

    @T.prim_func
    def vectorized(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32")):
        for i in T.vectorized(128):
            for j_0, j_1 in T.grid(13, 10):
                with T.block("B"):
                    vi = T.axis.spatial(128, i)
                    vj = T.axis.spatial(128, j_0 * 10 + j_1)
                    T.where(j_0 * 10 + j_1 < 128)
                    B[vi, vj] = A[vi, vj] * T.float32(2)

    chosen = parallelized if kind == "parallel" else vectorized
    return chosen.replace(name="element_wise_split_predicate")


@T.prim_func
def matmul(
    A: T.Buffer((32, 32), "float32"), B: T.Buffer((32, 32), "float32"),
    C: T.Buffer((32, 32), "float32"),
):
    for i, j, k in T.grid(32, 32, 32):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vj, vk]


@T.prim_func
def rowsum(A: T.Buffer((32, 32), "float32"), B: T.Buffer((32,), "float32")):
    for i, k in T.grid(32, 32):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]


def rowsum_unrolled():
    @T.prim_func
    def rowsum(A: T.Buffer((32, 32), "float32"), B: T.Buffer((32,), "float32")):
        for i in T.unroll(32):
            for k in T.serial(32):
                with T.block("B"):
                    vi, vk = T.axis.remap("SR", [i, k])
                    with T.init():
                        B[vi] = T.float32(0)
                    B[vi] = B[vi] + A[vi, vk]

    return rowsum


@T.prim_func
def rowsum_not_quasi_affine(A: T.Buffer((32, 128), "float32"), B: T.Buffer((32,), "float32")):
    for i, k in T.grid(32, 16):
        with T.block("B"):
            vi = T.axis.spatial(32, i)
            vk = T.axis.reduce(128, (k * k) // 2)
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]


@T.prim_func
def rowsum_not_compact_data_flow(A: T.Buffer((32, 16), "float32"), B: T.Buffer((16,), "float32")):
    for i, k in T.grid(32, 16):
        with T.block("B"):
            vi, vk = T.axis.remap("RS", [i, k])  # swapped to "SR" below (the DSL refuses it)
            with T.init():
                B[vk] = T.float32(0)
            B[vk] = B[vk] + A[vi, vk]


rowsum_not_compact_data_flow = with_axis_kinds(rowsum_not_compact_data_flow, "B", "SR")


@T.prim_func
def opaque_block(A: T.Buffer((16,), "float32")):
    for i in T.serial(15):
        with T.block("opaque"):
            A[i + 1] = A[i + 1] + A[i]


@T.prim_func
def decomposed_gemm(
    A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32"),
    C: T.Buffer((16, 16), "float32"),
):
    local = T.alloc_buffer((16, 16), "float32")
    for i, j in T.grid(4, 4):
        for ii, jj in T.grid(4, 4):
            with T.block("init"):
                vi = T.axis.spatial(16, i * 4 + ii)
                vj = T.axis.spatial(16, j * 4 + jj)
                local[vi, vj] = T.float32(0)
        for k, ii, jj in T.grid(16, 4, 4):
            with T.block("update"):
                vi = T.axis.spatial(16, i * 4 + ii)
                vj = T.axis.spatial(16, j * 4 + jj)
                vk = T.axis.reduce(16, k)
                local[vi, vj] = local[vi, vj] + A[vi, vk] * B[vj, vk]
        for ii, jj in T.grid(4, 4):
            with T.block("C"):
                vi = T.axis.spatial(16, i * 4 + ii)
                vj = T.axis.spatial(16, j * 4 + jj)
                C[vi, vj] = local[vi, vj]


def decomposed_gemm_vectorized(block: str):
    @T.prim_func
    def after_vectorize(
        A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32"),
        C: T.Buffer((16, 16), "float32"),
    ):
        local = T.alloc_buffer((16, 16), "float32")
        for i, j in T.grid(4, 4):
            for ii, jj in T.grid(4, 4):
                with T.block("init"):
                    vi = T.axis.spatial(16, i * 4 + ii)
                    vj = T.axis.spatial(16, j * 4 + jj)
                    local[vi, vj] = T.float32(0)
            for k, ii, jj in T.grid(16, 4, 4):
                with T.block("update"):
                    vi = T.axis.spatial(16, i * 4 + ii)
                    vj = T.axis.spatial(16, j * 4 + jj)
                    vk = T.axis.reduce(16, k)
                    local[vi, vj] = local[vi, vj] + A[vi, vk] * B[vj, vk]
            for ii in T.serial(4):
                for jj in T.vectorized(4):
                    with T.block("C"):
                        vi = T.axis.spatial(16, i * 4 + ii)
                        vj = T.axis.spatial(16, j * 4 + jj)
                        C[vi, vj] = local[vi, vj]

    @T.prim_func
    def parallelize_init(
        A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32"),
        C: T.Buffer((16, 16), "float32"),
    ):
        local = T.alloc_buffer((16, 16), "float32")
        for i, j in T.grid(4, 4):
            for ii in T.serial(4):
                for jj in T.vectorized(4):
                    with T.block("init"):
                        vi = T.axis.spatial(16, i * 4 + ii)
                        vj = T.axis.spatial(16, j * 4 + jj)
                        local[vi, vj] = T.float32(0)
            for k, ii, jj in T.grid(16, 4, 4):
                with T.block("update"):
                    vi = T.axis.spatial(16, i * 4 + ii)
                    vj = T.axis.spatial(16, j * 4 + jj)
                    vk = T.axis.reduce(16, k)
                    local[vi, vj] = local[vi, vj] + A[vi, vk] * B[vj, vk]
            for ii, jj in T.grid(4, 4):
                with T.block("C"):
                    vi = T.axis.spatial(16, i * 4 + ii)
                    vj = T.axis.spatial(16, j * 4 + jj)
                    C[vi, vj] = local[vi, vj]

    chosen = after_vectorize if block == "C" else parallelize_init
    return chosen.replace(name="decomposed_gemm")


@T.prim_func
def scatter_compute(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for i in T.grid(8):
        with T.block("first_half"):
            vi = T.axis.spatial(16, 8 + i)
            B[vi] = A[vi - 8]
    for i in T.grid(8):
        with T.block("last_half"):
            vi = T.axis.spatial(16, i)
            B[vi] = A[vi + 8]


def scatter_compute_parallelize():
    @T.prim_func
    def scatter_compute(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
        for i in T.parallel(8):
            with T.block("first_half"):
                vi = T.axis.spatial(16, 8 + i)
                B[vi] = A[vi - 8]
        for i in T.parallel(8):
            with T.block("last_half"):
                vi = T.axis.spatial(16, i)
                B[vi] = A[vi + 8]

    return scatter_compute


# --- the tests -------------------------------------------------------------------------


def check_legal(sch: Schedule, original, expected) -> None:
    assert sch.mod == expected, sch.mod.script()
    verify_trace_roundtrip(sch, original)
    assert_computes_reference(sch, original)


def test_parallel():
    """test_tir_schedule_for_kind.py::test_parallel"""
    sch = Schedule(element_wise)
    i, _ = sch.get_loops(sch.get_block("B"))
    sch.parallel(i)
    check_legal(sch, element_wise, element_wise_parallelized())


def test_parallel_predicate():
    """test_tir_schedule_for_kind.py::test_parallel_predicate"""
    sch = Schedule(element_wise_split_predicate)
    _, j, _ = sch.get_loops(sch.get_block("B"))
    sch.parallel(j)
    check_legal(sch, element_wise_split_predicate, element_wise_split_predicate_kind("parallel"))


def test_parallel_reduction_block_iter():
    """test_tir_schedule_for_kind.py::test_parallel_reduction_block_iter"""
    sch = Schedule(matmul)
    _, _, k = sch.get_loops(sch.get_block("C"))
    err = raises_unchanged(sch, ReductionLoopError, sch.parallel, k)
    assert err.message == "loop 'k' is a reduction loop"


def test_parallel_not_quasi_affine_is_allowed_here():
    """test_tir_schedule_for_kind.py::test_parallel_not_quasi_affine (deliberate difference:
    TVM refuses the non-affine reduction binding; the iterations of ``i`` write distinct
    ``B[vi]``, so they are independent and the parallel result is the reference's)."""
    sch = Schedule(rowsum_not_quasi_affine)
    i, _ = sch.get_loops(sch.get_block("B"))
    sch.parallel(i)
    assert_computes_reference(sch, rowsum_not_quasi_affine)


def test_parallel_not_compact_data_flow():
    """test_tir_schedule_for_kind.py::test_parallel_not_compact_data_flow"""
    sch = Schedule(rowsum_not_compact_data_flow)
    i, _ = sch.get_loops(sch.get_block("B"))
    err = raises_unchanged(sch, LoopWriteConflictError, sch.parallel, i)
    assert err.message == "iterations of loop 'i' write the same element of 'B'"
    assert (err.block, err.buffer, err.accesses) == ("B", "B", ("B[vk]", "B[vk]"))


def test_vectorize():
    """test_tir_schedule_for_kind.py::test_vectorize"""
    sch = Schedule(element_wise_compute_at_split)
    _, _, j1i = sch.get_loops(sch.get_block("C"))
    sch.vectorize(j1i)
    check_legal(sch, element_wise_compute_at_split, element_wise_compute_at_split_vectorized())


def test_vectorize_predicate():
    """test_tir_schedule_for_kind.py::test_vectorize_predicate"""
    sch = Schedule(element_wise_split_predicate)
    i, _, _ = sch.get_loops(sch.get_block("B"))
    sch.vectorize(i)
    check_legal(sch, element_wise_split_predicate, element_wise_split_predicate_kind("vector"))


def test_vectorize_opaque_block():
    """test_tir_schedule_for_kind.py::test_vectorize_opaque_block"""
    sch = Schedule(opaque_block)
    (i,) = sch.get_loops(sch.get_block("opaque"))
    err = raises_unchanged(sch, LoopCarriedDependenceError, sch.vectorize, i)
    assert err.message == "loop 'i' carries a dependence through 'A'"
    assert err.accesses == ("A[i + 1]", "A[i:i + 2]")


def test_unroll():
    """test_tir_schedule_for_kind.py::test_unroll"""
    sch = Schedule(rowsum)
    i, _ = sch.get_loops(sch.get_block("B"))
    sch.unroll(i)
    check_legal(sch, rowsum, rowsum_unrolled())


def test_vectorize_after_decompose():
    """test_tir_schedule_for_kind.py::test_vectorize_after_decompose"""
    sch = Schedule(decomposed_gemm)
    jj = sch.get_loops(sch.get_block("C"))[-1]
    sch.vectorize(jj)
    check_legal(sch, decomposed_gemm, decomposed_gemm_vectorized("C"))


def test_vectorize_init():
    """test_tir_schedule_for_kind.py::test_vectorize_init"""
    sch = Schedule(decomposed_gemm)
    _, _, _, jj_0 = sch.get_loops(sch.get_block("init"))
    sch.vectorize(jj_0)
    check_legal(sch, decomposed_gemm, decomposed_gemm_vectorized("init"))


def test_scatter_parallelize():
    """test_tir_schedule_for_kind.py::test_scatter_parallelize"""
    sch = Schedule(scatter_compute)
    (i_0,) = sch.get_loops(sch.get_block("first_half"))
    (i_1,) = sch.get_loops(sch.get_block("last_half"))
    sch.parallel(i_0)
    sch.parallel(i_1)
    check_legal(sch, scatter_compute, scatter_compute_parallelize())
