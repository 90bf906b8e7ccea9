"""TVM's decompose_reduction tests (tests/python/s_tir/schedule/test_tir_schedule_reduction.py),
re-expressed in the DSL with smaller shapes.

Our update block keeps its name (TVM: ``update_update`` in some versions); the init block
is ``<block>_init`` with loops ``<loop>_init`` and iteration variables renamed apart, as
docs/decisions.md says. Skipped: blockized (nested) reduction blocks, the structural-hash
check (our IR is immutable by construction).
"""

from schedule_checks import (
    assert_structural,
    check_numbers,
    raises_unchanged,
    verify_trace_roundtrip,
)

from workbench import T
from workbench.ir import ForKind
from workbench.schedule import InitLoopInsideReductionError, Schedule


@T.prim_func
def matmul(
    A: T.Buffer((16, 16), "float32"),
    B: T.Buffer((16, 16), "float32"),
    C: T.Buffer((16, 16), "float32"),
):
    for i, j, k in T.grid(16, 16, 16):
        with T.block("update"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vj, vk]


@T.prim_func
def matmul_decompose0(
    A: T.Buffer((16, 16), "float32"),
    B: T.Buffer((16, 16), "float32"),
    C: T.Buffer((16, 16), "float32"),
):
    for i_init, j_init in T.grid(16, 16):
        with T.block("update_init"):
            vi_1, vj_1 = T.axis.remap("SS", [i_init, j_init])
            C[vi_1, vj_1] = T.float32(0)
    for i, j, k in T.grid(16, 16, 16):
        with T.block("update"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vj, vk]


@T.prim_func
def matmul_decompose2(
    A: T.Buffer((16, 16), "float32"),
    B: T.Buffer((16, 16), "float32"),
    C: T.Buffer((16, 16), "float32"),
):
    for i, j in T.grid(16, 16):
        with T.block("update_init"):
            vi_1, vj_1 = T.axis.remap("SS", [i, j])
            C[vi_1, vj_1] = T.float32(0)
        for k in T.serial(16):
            with T.block("update"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vj, vk]


@T.prim_func
def matmul_decompose_fail3(
    A: T.Buffer((16, 16), "float32"),
    B: T.Buffer((16, 16), "float32"),
    C: T.Buffer((16, 16), "float32"),
):
    for i, k, j in T.grid(16, 16, 16):
        with T.block("update"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vj, vk]


@T.prim_func
def matmul_decompose4(
    A: T.Buffer((16, 16), "float32"),
    B: T.Buffer((16, 16), "float32"),
    C: T.Buffer((16, 16), "float32"),
):
    for i_0 in T.serial(2):
        for i_1_init, j_init in T.grid(8, 16):
            with T.block("update_init"):
                vi_1 = T.axis.spatial(16, i_0 * 8 + i_1_init)
                vj_1 = T.axis.spatial(16, j_init)
                C[vi_1, vj_1] = T.float32(0)
        for i_1, j, k_0, k_1 in T.grid(8, 16, 3, 7):
            with T.block("update"):
                vi = T.axis.spatial(16, i_0 * 8 + i_1)
                vj = T.axis.spatial(16, j)
                vk = T.axis.reduce(16, k_0 * 7 + k_1)
                T.where(k_0 * 7 + k_1 < 16)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vj, vk]


def test_reduction_decompose0(rng):
    """test_tir_schedule_reduction.py::test_reduction_decompose0"""
    sch = Schedule(matmul)
    C = sch.get_block("update")
    i, _, _ = sch.get_loops(C)
    init = sch.decompose_reduction(C, i)
    assert sch.name(init) == "update_init" and sch.name(C) == "update"
    assert_structural(sch, matmul_decompose0)
    verify_trace_roundtrip(sch)
    check_numbers(sch, rng)


def test_reduction_decompose2(rng):
    """test_tir_schedule_reduction.py::test_reduction_decompose2"""
    sch = Schedule(matmul)
    C = sch.get_block("update")
    _, _, k = sch.get_loops(C)
    sch.decompose_reduction(C, k)
    assert_structural(sch, matmul_decompose2)
    verify_trace_roundtrip(sch)
    check_numbers(sch, rng)


def test_reduction_decompose3():
    """test_tir_schedule_reduction.py::test_reduction_decompose3: the third loop (j) is
    inside the reduction loop k."""
    sch = Schedule(matmul_decompose_fail3)
    C = sch.get_block("update")
    _, _, j = sch.get_loops(C)
    raises_unchanged(sch, InitLoopInsideReductionError, sch.decompose_reduction, C, j)


def test_reduction_decompose4(rng):
    """test_tir_schedule_reduction.py::test_reduction_decompose4"""
    sch = Schedule(matmul)
    C = sch.get_block("update")
    i, _, k = sch.get_loops(C)
    _, ii = sch.split(i, factors=[2, 8])
    sch.split(k, factors=[3, 7])
    sch.decompose_reduction(C, ii)
    assert_structural(sch, matmul_decompose4)
    verify_trace_roundtrip(sch)
    check_numbers(sch, rng)


def test_reduction_decompose_with_annotation(rng):
    """test_tir_schedule_reduction.py::test_reduction_decompose_with_annotation"""

    @T.prim_func
    def matmul_with_annotation(
        A: T.Buffer((8, 8), "float32"),
        B: T.Buffer((8, 8), "float32"),
        C: T.Buffer((8, 8), "float32"),
    ):
        for i, j, k in T.grid(8, 8, 8):
            with T.block("update"):
                T.block_attr({"test_annotation": 1})
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vj, vk]

    sch = Schedule(matmul_with_annotation)
    C = sch.get_block("update")
    i, _, _ = sch.get_loops(C)
    init = sch.decompose_reduction(C, i)
    assert sch.get(init).annotations == (("test_annotation", 1),)
    assert sch.get(C).annotations == (("test_annotation", 1),)
    verify_trace_roundtrip(sch)
    check_numbers(sch, rng, targets=("numpy",))


def test_reduction_decompose_with_different_for_kind(rng):
    """test_tir_schedule_reduction.py::test_reduction_decompose_with_different_for_kind: the
    init's copy of a vectorized loop stays vectorized."""

    @T.prim_func
    def colsum(A: T.Buffer((16, 8), "float32"), B: T.Buffer((8,), "float32")):
        for k in T.serial(16):
            for i in T.vectorized(8):
                with T.block("B"):
                    vk, vi = T.axis.remap("RS", [k, i])
                    with T.init():
                        B[vi] = T.float32(0)
                    B[vi] = B[vi] + A[vk, vi]

    @T.prim_func
    def colsum_decomposed(A: T.Buffer((16, 8), "float32"), B: T.Buffer((8,), "float32")):
        for i_init in T.vectorized(8):
            with T.block("B_init"):
                vi_1 = T.axis.spatial(8, i_init)
                B[vi_1] = T.float32(0)
        for k in T.serial(16):
            for i in T.vectorized(8):
                with T.block("B"):
                    vk, vi = T.axis.remap("RS", [k, i])
                    B[vi] = B[vi] + A[vk, vi]

    sch = Schedule(colsum)
    B = sch.get_block("B")
    k, _ = sch.get_loops(B)
    B_init = sch.decompose_reduction(B, k)
    assert sch.name(B_init) == "B_init"
    assert_structural(sch, colsum_decomposed)
    verify_trace_roundtrip(sch)
    check_numbers(sch, rng)


def test_decompose_reduction_with_thread_binding(rng):
    """test_tir_schedule_reduction.py::test_decompose_reduction_with_thread_binding"""

    @T.prim_func
    def before(A: T.Buffer((32, 16), "float32"), B: T.Buffer((32,), "float32")):
        for t in T.thread_binding(32, thread="threadIdx.x"):
            for r in T.serial(16):
                with T.block("B"):
                    vi, vr = T.axis.remap("SR", [t, r])
                    with T.init():
                        B[vi] = T.float32(0)
                    B[vi] = B[vi] + A[vi, vr]

    sch = Schedule(before)
    t, _ = sch.get_loops(sch.get_block("B"))
    init = sch.decompose_reduction(sch.get_block("B"), t)
    (t_init,) = sch.get_loops(init)
    loop = sch.get(t_init)
    assert loop.kind is ForKind.THREAD_BINDING and loop.thread_binding == "threadIdx.x"
    verify_trace_roundtrip(sch)
    check_numbers(sch, rng)
