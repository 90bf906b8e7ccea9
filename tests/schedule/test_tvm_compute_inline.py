"""TVM's compute_inline / reverse_compute_inline tests, re-expressed in the DSL.

Source: apache/tvm tests/python/s_tir/schedule/test_tir_schedule_compute_inline.py; each
test names the TVM test it comes from. Every legal case checks the structure (our result
``same_as`` TVM's expected function, re-expressed in the DSL with our names) and the numbers
(numpy and cpu builds against the unscheduled function on random inputs), and that the
trace replays from JSON. Illegal cases assert the exact ScheduleError subclass. Cases that
do not apply (opaque access, match_buffer, tensor cores) and every deliberate difference:
docs/decisions.d/computeloc.md.
"""

from schedule_checks import raises_unchanged
from schedule_examples import elementwise
from test_tvm_compute_at import check

from workbench import T
from workbench.schedule import (
    InlineReductionError,
    NoProducersError,
    NotSingleStoreError,
    OutputBlockError,
    ReadNotBijectiveError,
    ReductionProducerError,
    RegionNotCoveredError,
    Schedule,
    SeveralProducersError,
    SeveralReadIndicesError,
)

# ---------------------------------------------------------------------------------------
# The functions (TVM's fixtures, then TVM's expected results in our names)
# ---------------------------------------------------------------------------------------

@T.prim_func
def elementwise_under_loop(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((16, 16), "float32")
    for i in range(16):
        for j in range(16):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] * T.float32(2)
        for j_1 in range(16):
            with T.block("C"):
                vi_1, vj_1 = T.axis.remap("SS", [i, j_1])
                C[vi_1, vj_1] = B[vi_1, vj_1] + T.float32(1)


@T.prim_func
def elementwise_multi_producer_consumer(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32"), D: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((16, 16), "float32")
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i_1, j_1 in T.grid(16, 16):
        with T.block("C"):
            vi_1, vj_1 = T.axis.remap("SS", [i_1, j_1])
            C[vi_1, vj_1] = B[vi_1, vj_1] + T.float32(1)
    for i_2, j_2 in T.grid(16, 16):
        with T.block("D"):
            vi_2, vj_2 = T.axis.remap("SS", [i_2, j_2])
            D[vi_2, vj_2] = B[vi_2, vj_2] + T.float32(2) + C[vi_2, vj_2]


@T.prim_func
def elementwise_standalone(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((16, 16), "float32")
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i_1, j_1 in T.grid(16, 16):
        with T.block("C"):
            vi_1, vj_1 = T.axis.remap("SS", [i_1, j_1])
            C[vi_1, vj_1] = A[vi_1, vj_1] + T.float32(1)


@T.prim_func
def fail_multi_reader_writer(A: T.Buffer((16, 16), "float32"), D: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((16, 16), "float32")
    C = T.alloc_buffer((16, 16), "float32")
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
            C[vi, vj] = A[vi, vj] + T.float32(2)
    for i_1, j_1 in T.grid(16, 16):
        with T.block("C"):
            vi_1, vj_1 = T.axis.remap("SS", [i_1, j_1])
            D[vi_1, vj_1] = B[vi_1, vj_1] + C[vi_1, vj_1]


@T.prim_func
def elementwise_multi_reverse_loads(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((16, 16), "float32")
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i_1, j_1 in T.grid(16, 16):
        with T.block("C"):
            vi_1, vj_1 = T.axis.remap("SS", [i_1, j_1])
            C[vi_1, vj_1] = (B[vi_1, vj_1] + T.float32(1)) * (B[vi_1, vj_1] * T.float32(2)) + T.float32(3)


@T.prim_func
def elementwise_reverse_affine_load(A: T.Buffer((128, 128), "float32"), C: T.Buffer((8, 32, 8, 8), "float32")):
    B = T.alloc_buffer((128, 128), "float32")
    for i, j in T.grid(128, 128):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i_1, j_1, k, l in T.grid(8, 32, 8, 8):
        with T.block("C"):
            vi_1, vj_1, vk, vl = T.axis.remap("SSSS", [i_1, j_1, k, l])
            C[vi_1, vj_1, vk, vl] = B[(((vi_1 * 32 + vj_1) * 8 + vk) * 8 + vl) // 128, (((vi_1 * 32 + vj_1) * 8 + vk) * 8 + vl) % 128]


@T.prim_func
def elementwise_multi_reverse_affine_load(A: T.Buffer((128, 128), "float32"), C: T.Buffer((8, 16, 128), "float32")):
    B = T.alloc_buffer((128, 128), "float32")
    for i, j in T.grid(128, 128):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i_1, j_1, k in T.grid(8, 16, 128):
        with T.block("C"):
            vi_1, vj_1, vk = T.axis.remap("SSS", [i_1, j_1, k])
            C[vi_1, vj_1, vk] = B[vi_1 * 16 + vj_1, vk] + B[vi_1 * 16 + vj_1, vk]


@T.prim_func
def elementwise_reverse_affine_load_unit_iter(A: T.Buffer((128, 128), "float32"), B: T.Buffer((8, 16, 1), "float32"), D: T.Buffer((1, 8, 16, 128), "float32")):
    C = T.alloc_buffer((128, 128), "float32")
    for i, j in T.grid(128, 128):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vi, vj] * T.float32(2)
    for i_1, j_1, k, l in T.grid(1, 8, 16, 128):
        with T.block("C"):
            vi_1, vj_1, vk, vl = T.axis.remap("SSSS", [i_1, j_1, k, l])
            D[vi_1, vj_1, vk, vl] = C[vj_1 * 16 + vk, vl] + B[vj_1, vk, vi_1]


@T.prim_func
def elementwise_reverse_affine_load_unit_iter_simplified(A: T.Buffer((128, 128), "float32"), B: T.Buffer((8, 16, 1), "float32"), D: T.Buffer((1, 8, 16, 128), "float32")):
    C = T.alloc_buffer((128, 128), "float32")
    for i, j in T.grid(128, 128):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vi, vj] * T.float32(2)
    for i_1, j_1, k in T.grid(8, 16, 128):
        with T.block("C"):
            vi_1, vj_1, vk = T.axis.remap("SSS", [i_1, j_1, k])
            D[0, vi_1, vj_1, vk] = C[vi_1 * 16 + vj_1, vk] + B[vi_1, vj_1, 0]


@T.prim_func
def elementwise_reverse_affine_chain(A: T.Buffer((128, 128), "float32"), D: T.Buffer((1, 8, 16, 128), "float32")):
    B = T.alloc_buffer((128, 128), "float32")
    C = T.alloc_buffer((8, 16, 128), "float32")
    for i, j in T.grid(128, 128):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i_1, j_1, k in T.grid(8, 16, 128):
        with T.block("C"):
            vi_1, vj_1, vk = T.axis.remap("SSS", [i_1, j_1, k])
            C[vi_1, vj_1, vk] = B[vi_1 * 16 + vj_1, vk] + T.float32(1)
    for i_2, j_2, k_1, l in T.grid(1, 8, 16, 128):
        with T.block("D"):
            vi_2, vj_2, vk_1, vl = T.axis.remap("SSSS", [i_2, j_2, k_1, l])
            D[vi_2, vj_2, vk_1, vl] = C[vj_2, vk_1, vl]


@T.prim_func
def elementwise_reverse_non_affine_load(A: T.Buffer((128, 128), "float32"), C: T.Buffer((8, 16, 128), "float32")):
    B = T.alloc_buffer((128, 128), "float32")
    for i, j in T.grid(128, 128):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i_1, j_1, k in T.grid(8, 16, 128):
        with T.block("C"):
            vi_1, vj_1, vk = T.axis.remap("SSS", [i_1, j_1, k])
            C[vi_1, vj_1, vk] = B[vi_1 * 16 + vj_1, vi_1 * 16 + vj_1]


@T.prim_func
def elementwise_multi_loads(A: T.Buffer((16, 18), "float32"), C: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((16, 18), "float32")
    for i, j in T.grid(16, 18):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i_1, j_1 in T.grid(16, 16):
        with T.block("C"):
            vi_1, vj_1 = T.axis.remap("SS", [i_1, j_1])
            C[vi_1, vj_1] = B[vi_1, vj_1] + B[vi_1, vj_1 + 1] + B[vi_1, vj_1 + 2]


@T.prim_func
def elementwise_overcomputed_producer(A: T.Buffer((128, 128), "float32"), C: T.Buffer((127, 127), "float32")):
    B = T.alloc_buffer((128, 128), "float32")
    for i, j in T.grid(128, 128):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i_1, j_1 in T.grid(127, 127):
        with T.block("C"):
            cvi, cvj = T.axis.remap("SS", [i_1, j_1])
            C[cvi, cvj] = B[cvi, cvj] + T.float32(1)


@T.prim_func
def elementwise_overcomputed_producer_simplify_predicate(A: T.Buffer((128, 128), "float32"), C: T.Buffer((127, 127), "float32")):
    B = T.alloc_buffer((128, 128), "float32")
    for i in range(16384):
        with T.block("B"):
            vi = T.axis.spatial(128, i // 128)
            vj = T.axis.spatial(128, i % 128)
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i_1, j_1 in T.grid(127, 127):
        with T.block("C"):
            cvi, cvj = T.axis.remap("SS", [i_1, j_1])
            C[cvi, cvj] = B[cvi, cvj] + T.float32(1)


@T.prim_func
def elementwise_overcomputed_producer_injective_load(A: T.Buffer((128, 128), "float32"), C: T.Buffer((127, 127), "float32")):
    B = T.alloc_buffer((8, 8, 16, 16), "float32")
    for i0, j0, i1, j1 in T.grid(8, 8, 16, 16):
        with T.block("B"):
            vi, vj, vm, vn = T.axis.remap("SSSS", [i0, j0, i1, j1])
            B[vi, vj, vm, vn] = A[vi * 16 + vm, vj * 16 + vn] * T.float32(2)
    for i, j in T.grid(127, 127):
        with T.block("C"):
            cvi, cvj = T.axis.remap("SS", [i, j])
            C[cvi, cvj] = B[cvi // 16, cvj // 16, cvi % 16, cvj % 16] + T.float32(1)


@T.prim_func
def elementwise_producer_not_cover_consumer(A: T.Buffer((128, 128), "float32"), D: T.Buffer((256, 128), "float32")):
    B = T.alloc_buffer((128, 128), "float32")
    for i, j in T.grid(128, 128):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i_1, j_1 in T.grid(256, 128):
        with T.block("C"):
            vi_1, vj_1 = T.axis.remap("SS", [i_1, j_1])
            D[vi_1, vj_1] = T.if_then_else(vi_1 >= 128, B[vi_1 - 128, vj_1], T.float32(0))


@T.prim_func
def elementwise_producer_is_reduction(A: T.Buffer((16, 16), "float32"), D: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((16,), "float32")
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SR", [i, j])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vj]
    for i_1 in range(16):
        with T.block("C"):
            vi_1 = T.axis.spatial(16, i_1)
            D[vi_1] = B[vi_1] + T.float32(1)


@T.prim_func
def elementwise_predicate_producer(A: T.Buffer((128, 128), "float32"), C: T.Buffer((127, 128), "float32")):
    B = T.alloc_buffer((127, 128), "float32")
    for i, j in T.grid(128, 128):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.where(i < 127)
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i_1, j_1 in T.grid(127, 128):
        with T.block("C"):
            vi_1, vj_1 = T.axis.remap("SS", [i_1, j_1])
            C[vi_1, vj_1] = B[vi_1, vj_1] + T.float32(1)


@T.prim_func
def inline_block_with_init(A: T.Buffer((1, 16, 7, 7), "float32"), B: T.Buffer((1, 16, 1, 1), "float32")):
    B_rf = T.alloc_buffer((1, 16, 1, 1, 49), "float32")
    for i0, i1, i2, i3, i4, i5 in T.grid(1, 16, 1, 1, 49, 1):  # noqa: B007
        with T.block("tensor_rf"):
            vi4 = T.axis.spatial(49, i4)
            ax0 = T.axis.spatial(1, 0)
            ax1 = T.axis.spatial(16, i1)
            ax2 = T.axis.spatial(1, 0)
            ax3 = T.axis.spatial(1, 0)
            with T.init():
                B_rf[ax0, ax1, ax2, ax3, vi4] = T.float32(0)
            B_rf[ax0, ax1, ax2, ax3, vi4] = B_rf[ax0, ax1, ax2, ax3, vi4] + A[ax0, ax1, ax2 * 7 + vi4 // 7, ax3 * 7 + vi4 % 7]
    for i0_1, i1_1 in T.grid(1, 16):  # noqa: B007
        for ax0_1, ax1_1, ax2_1, ax3_1, ax4 in T.grid(49, 1, 1, 1, 1):  # noqa: B007
            with T.block("tensor"):
                vi4_1 = T.axis.reduce(49, ax0_1)
                ax0_2 = T.axis.spatial(1, 0)
                ax1_2 = T.axis.spatial(16, i1_1)
                ax2_2 = T.axis.spatial(1, 0)
                ax3_2 = T.axis.spatial(1, 0)
                with T.init():
                    B[ax0_2, ax1_2, ax2_2, ax3_2] = T.float32(0)
                B[ax0_2, ax1_2, ax2_2, ax3_2] = B[ax0_2, ax1_2, ax2_2, ax3_2] + B_rf[ax0_2, ax1_2, ax2_2, ax3_2, vi4_1]


@T.prim_func
def softmax(lv44: T.Buffer((1, 4, 8, 8), "float32"), var_compute_intermediate: T.Buffer((1, 4, 8, 8), "float32")):
    T_softmax_maxelem = T.alloc_buffer((1, 4, 8), "float32")
    T_softmax_exp = T.alloc_buffer((1, 4, 8, 8), "float32")
    T_softmax_expsum = T.alloc_buffer((1, 4, 8), "float32")
    for i0, i1, i2, k in T.grid(1, 4, 8, 8):
        with T.block("T_softmax_maxelem"):
            v_i0, v_i1, v_i2, v_k = T.axis.remap("SSSR", [i0, i1, i2, k])
            with T.init():
                T_softmax_maxelem[v_i0, v_i1, v_i2] = T.float32(-3.4028234663852886e38)
            T_softmax_maxelem[v_i0, v_i1, v_i2] = T.max(T_softmax_maxelem[v_i0, v_i1, v_i2], lv44[v_i0, v_i1, v_i2, v_k])
    for i0_1, i1_1, i2_1, i3 in T.grid(1, 4, 8, 8):
        with T.block("T_softmax_exp"):
            v_i0_1, v_i1_1, v_i2_1, v_i3 = T.axis.remap("SSSS", [i0_1, i1_1, i2_1, i3])
            T_softmax_exp[v_i0_1, v_i1_1, v_i2_1, v_i3] = T.exp(lv44[v_i0_1, v_i1_1, v_i2_1, v_i3] - T_softmax_maxelem[v_i0_1, v_i1_1, v_i2_1])
    for i0_2, i1_2, i2_2, k_1 in T.grid(1, 4, 8, 8):
        with T.block("T_softmax_expsum"):
            v_i0_2, v_i1_2, v_i2_2, v_k_1 = T.axis.remap("SSSR", [i0_2, i1_2, i2_2, k_1])
            with T.init():
                T_softmax_expsum[v_i0_2, v_i1_2, v_i2_2] = T.float32(0)
            T_softmax_expsum[v_i0_2, v_i1_2, v_i2_2] = T_softmax_expsum[v_i0_2, v_i1_2, v_i2_2] + T_softmax_exp[v_i0_2, v_i1_2, v_i2_2, v_k_1]
    for i0_3, i1_3, i2_3, i3_1 in T.grid(1, 4, 8, 8):
        with T.block("T_softmax_norm"):
            v_i0_3, v_i1_3, v_i2_3, v_i3_1 = T.axis.remap("SSSS", [i0_3, i1_3, i2_3, i3_1])
            var_compute_intermediate[v_i0_3, v_i1_3, v_i2_3, v_i3_1] = T_softmax_exp[v_i0_3, v_i1_3, v_i2_3, v_i3_1] / T_softmax_expsum[v_i0_3, v_i1_3, v_i2_3]


@T.prim_func
def inline_with_reduction(T_softmax_norm: T.Buffer((6, 1, 1), "float32"), T_reshape_2: T.Buffer((6, 1, 64), "float32"), T_transpose: T.Buffer((1, 1, 6, 64), "float32")):
    T_batch_matmul_NN = T.alloc_buffer((6, 1, 64), "float32")
    for ax0, ax1 in T.grid(6, 64):
        with T.block("bmm"):
            v0, v1 = T.axis.remap("SS", [ax0, ax1])
            with T.init():
                T_batch_matmul_NN[v0, 0, v1] = T.float32(0)
            T_batch_matmul_NN[v0, 0, v1] = T_batch_matmul_NN[v0, 0, v1] + T_softmax_norm[v0, 0, 0] * T_reshape_2[v0, 0, v1]
    for ax0_1, ax1_1 in T.grid(6, 64):
        with T.block("transpose"):
            v0_1, v1_1 = T.axis.remap("SS", [ax0_1, ax1_1])
            T_transpose[0, 0, v0_1, v1_1] = T_batch_matmul_NN[v0_1, 0, v1_1]


@T.prim_func
def compute_inline_elementwise_expected(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    for i_1, j_1 in T.grid(16, 16):
        with T.block("C"):
            vi_1, vj_1 = T.axis.remap("SS", [i_1, j_1])
            C[vi_1, vj_1] = A[vi_1, vj_1] * T.float32(2) + T.float32(1)


@T.prim_func
def compute_inline_under_loop_expected(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    for i, j_1 in T.grid(16, 16):
        with T.block("C"):
            vi_1, vj_1 = T.axis.remap("SS", [i, j_1])
            C[vi_1, vj_1] = A[vi_1, vj_1] * T.float32(2) + T.float32(1)


@T.prim_func
def compute_inline_as_dce_expected(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    for i_1, j_1 in T.grid(16, 16):
        with T.block("C"):
            vi_1, vj_1 = T.axis.remap("SS", [i_1, j_1])
            C[vi_1, vj_1] = A[vi_1, vj_1] + T.float32(1)


@T.prim_func
def compute_inline_multi_consumer_expected(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32"), D: T.Buffer((16, 16), "float32")):
    for i_1, j_1 in T.grid(16, 16):
        with T.block("C"):
            vi_1, vj_1 = T.axis.remap("SS", [i_1, j_1])
            C[vi_1, vj_1] = A[vi_1, vj_1] * T.float32(2) + T.float32(1)
    for i_2, j_2 in T.grid(16, 16):
        with T.block("D"):
            vi_2, vj_2 = T.axis.remap("SS", [i_2, j_2])
            D[vi_2, vj_2] = A[vi_2, vj_2] * T.float32(2) + T.float32(2) + C[vi_2, vj_2]


@T.prim_func
def compute_inline_multi_loads_expected(A: T.Buffer((16, 18), "float32"), C: T.Buffer((16, 16), "float32")):
    for i_1, j_1 in T.grid(16, 16):
        with T.block("C"):
            vi_1, vj_1 = T.axis.remap("SS", [i_1, j_1])
            C[vi_1, vj_1] = A[vi_1, vj_1] * T.float32(2) + A[vi_1, vj_1 + 1] * T.float32(2) + A[vi_1, vj_1 + 2] * T.float32(2)


@T.prim_func
def compute_inline_softmax_expected(lv44: T.Buffer((1, 4, 8, 8), "float32"), var_compute_intermediate: T.Buffer((1, 4, 8, 8), "float32")):
    T_softmax_maxelem = T.alloc_buffer((1, 4, 8), "float32")
    T_softmax_expsum = T.alloc_buffer((1, 4, 8), "float32")
    for i0, i1, i2, k in T.grid(1, 4, 8, 8):
        with T.block("T_softmax_maxelem"):
            v_i0, v_i1, v_i2, v_k = T.axis.remap("SSSR", [i0, i1, i2, k])
            with T.init():
                T_softmax_maxelem[v_i0, v_i1, v_i2] = T.float32(-3.4028234663852886e+38)
            T_softmax_maxelem[v_i0, v_i1, v_i2] = T.max(T_softmax_maxelem[v_i0, v_i1, v_i2], lv44[v_i0, v_i1, v_i2, v_k])
    for i0_2, i1_2, i2_2, k_1 in T.grid(1, 4, 8, 8):
        with T.block("T_softmax_expsum"):
            v_i0_2, v_i1_2, v_i2_2, v_k_1 = T.axis.remap("SSSR", [i0_2, i1_2, i2_2, k_1])
            with T.init():
                T_softmax_expsum[v_i0_2, v_i1_2, v_i2_2] = T.float32(0)
            T_softmax_expsum[v_i0_2, v_i1_2, v_i2_2] = T_softmax_expsum[v_i0_2, v_i1_2, v_i2_2] + T.exp(lv44[v_i0_2, v_i1_2, v_i2_2, v_k_1] - T_softmax_maxelem[v_i0_2, v_i1_2, v_i2_2])
    for i0_3, i1_3, i2_3, i3_1 in T.grid(1, 4, 8, 8):
        with T.block("T_softmax_norm"):
            v_i0_3, v_i1_3, v_i2_3, v_i3_1 = T.axis.remap("SSSS", [i0_3, i1_3, i2_3, i3_1])
            var_compute_intermediate[v_i0_3, v_i1_3, v_i2_3, v_i3_1] = T.exp(lv44[v_i0_3, v_i1_3, v_i2_3, v_i3_1] - T_softmax_maxelem[v_i0_3, v_i1_3, v_i2_3]) / T_softmax_expsum[v_i0_3, v_i1_3, v_i2_3]


@T.prim_func
def reverse_compute_inline_elementwise_expected(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vi, vj] * T.float32(2) + T.float32(1)


@T.prim_func
def reverse_compute_inline_under_loop_expected(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vi, vj] * T.float32(2) + T.float32(1)


@T.prim_func
def reverse_compute_multi_reverse_loads_expected(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = (A[vi, vj] * T.float32(2) + T.float32(1)) * (A[vi, vj] * T.float32(2) * T.float32(2)) + T.float32(3)


@T.prim_func
def reverse_compute_inline_affine_load_expected(A: T.Buffer((128, 128), "float32"), C: T.Buffer((8, 32, 8, 8), "float32")):
    for i, j in T.grid(128, 128):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[(vj + vi * 128) // 2048, (vi * 2 + vj // 64) % 32, vj // 8 % 8, vj % 8] = A[vi, vj] * T.float32(2)


@T.prim_func
def reverse_compute_inline_multi_affine_load_expected(A: T.Buffer((128, 128), "float32"), C: T.Buffer((8, 16, 128), "float32")):
    for i, j in T.grid(128, 128):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi // 16, vi % 16, vj] = A[vi, vj] * T.float32(2) + A[vi, vj] * T.float32(2)


@T.prim_func
def reverse_compute_inline_affine_load_unit_iter_expected(A: T.Buffer((128, 128), "float32"), B: T.Buffer((8, 16, 1), "float32"), D: T.Buffer((1, 8, 16, 128), "float32")):
    for i, j in T.grid(128, 128):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            D[0, vi // 16, vi % 16, vj] = A[vi, vj] * T.float32(2) + B[vi // 16, vi % 16, 0]


@T.prim_func
def reverse_compute_inline_affine_load_unit_iter_simplified_expected(A: T.Buffer((128, 128), "float32"), B: T.Buffer((8, 16, 1), "float32"), D: T.Buffer((1, 8, 16, 128), "float32")):
    for i, j in T.grid(128, 128):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            D[0, vi // 16, vi % 16, vj] = A[vi, vj] * T.float32(2) + B[vi // 16, vi % 16, 0]


@T.prim_func
def reverse_compute_inline_affine_chain_d_first_expected(A: T.Buffer((128, 128), "float32"), D: T.Buffer((1, 8, 16, 128), "float32")):
    for i, j in T.grid(128, 128):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            D[0, vi // 16, vi % 16, vj] = A[vi, vj] * T.float32(2) + T.float32(1)


@T.prim_func
def reverse_compute_inline_affine_chain_c_first_expected(A: T.Buffer((128, 128), "float32"), D: T.Buffer((1, 8, 16, 128), "float32")):
    for i, j in T.grid(128, 128):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            D[0, vi // 16, vi % 16, vj] = A[vi, vj] * T.float32(2) + T.float32(1)


@T.prim_func
def reverse_compute_inline_overcomputed_producer_expected(A: T.Buffer((128, 128), "float32"), C: T.Buffer((127, 127), "float32")):
    for i, j in T.grid(128, 128):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.where(i < 127 and j < 127)
            C[vi, vj] = A[vi, vj] * T.float32(2) + T.float32(1)


@T.prim_func
def reverse_compute_inline_overcomputed_producer_simplify_predicate_expected(A: T.Buffer((128, 128), "float32"), C: T.Buffer((127, 127), "float32")):
    for i in T.serial(16384):
        with T.block("B"):
            vi = T.axis.spatial(128, i // 128)
            vj = T.axis.spatial(128, i % 128)
            T.where(i // 128 < 127 and i % 128 < 127)
            C[vi, vj] = A[vi, vj] * T.float32(2) + T.float32(1)


@T.prim_func
def reverse_compute_inline_overcomputed_producer_injective_load_expected(A: T.Buffer((128, 128), "float32"), C: T.Buffer((127, 127), "float32")):
    for i0, j0, i1, j1 in T.grid(8, 8, 16, 16):
        with T.block("B"):
            vi, vj, vm, vn = T.axis.remap("SSSS", [i0, j0, i1, j1])
            T.where(i1 + i0 * 16 < 127 and j1 + j0 * 16 < 127)
            C[vm + vi * 16, vn + vj * 16] = A[vi * 16 + vm, vj * 16 + vn] * T.float32(2) + T.float32(1)


@T.prim_func
def reverse_compute_inline_producer_predicate_allowed_expected(A: T.Buffer((128, 128), "float32"), C: T.Buffer((127, 128), "float32")):
    for i, j in T.grid(128, 128):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.where(i < 127)
            C[vi, vj] = A[vi, vj] * T.float32(2) + T.float32(1)


@T.prim_func
def inline_with_reduction_expected(T_softmax_norm: T.Buffer((6, 1, 1), "float32"), T_reshape_2: T.Buffer((6, 1, 64), "float32"), T_transpose: T.Buffer((1, 1, 6, 64), "float32")):
    for ax0, ax1 in T.grid(6, 64):
        with T.block("bmm"):
            v0, v1 = T.axis.remap("SS", [ax0, ax1])
            T_transpose[0, 0, v0, v1] = T.float32(0) + T_softmax_norm[v0, 0, 0] * T_reshape_2[v0, 0, v1]


# ---------------------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------------------


def test_compute_inline_elementwise(rng):
    """TVM: test_tir_schedule_compute_inline.py::test_compute_inline_elementwise."""
    sch = Schedule(elementwise)
    sch.compute_inline(sch.get_block("B"))
    check(sch, compute_inline_elementwise_expected, rng)


def test_compute_inline_under_loop(rng):
    """TVM: test_tir_schedule_compute_inline.py::test_compute_inline_under_loop."""
    sch = Schedule(elementwise_under_loop)
    sch.compute_inline(sch.get_block("B"))
    check(sch, compute_inline_under_loop_expected, rng)


def test_compute_inline_as_dce(rng):
    """TVM: test_tir_schedule_compute_inline.py::test_compute_inline_as_dce."""
    sch = Schedule(elementwise_standalone)
    sch.compute_inline(sch.get_block("B"))
    check(sch, compute_inline_as_dce_expected, rng)


def test_compute_inline_multi_consumer(rng):
    """TVM: test_tir_schedule_compute_inline.py::test_compute_inline_multi_consumer."""
    sch = Schedule(elementwise_multi_producer_consumer)
    sch.compute_inline(sch.get_block("B"))
    check(sch, compute_inline_multi_consumer_expected, rng)


def test_compute_inline_multi_loads(rng):
    """TVM: test_tir_schedule_compute_inline.py::test_compute_inline_multi_loads (B is 16x18 so that the reads stay in bounds)."""
    sch = Schedule(elementwise_multi_loads)
    sch.compute_inline(sch.get_block("B"))
    check(sch, compute_inline_multi_loads_expected, rng)


def test_compute_inline_softmax(rng):
    """TVM: test_tir_schedule_compute_inline.py::test_compute_inline_softmax (static shapes instead of n, m; the last cast to float16 left out)."""
    sch = Schedule(softmax)
    sch.compute_inline(sch.get_block("T_softmax_exp"))
    check(sch, compute_inline_softmax_expected, rng)


def test_reverse_compute_inline_elementwise(rng):
    """TVM: test_tir_schedule_compute_inline.py::test_reverse_compute_inline_elementwise."""
    sch = Schedule(elementwise)
    sch.reverse_compute_inline(sch.get_block("C"))
    check(sch, reverse_compute_inline_elementwise_expected, rng)


def test_reverse_compute_inline_under_loop(rng):
    """TVM: test_tir_schedule_compute_inline.py::test_reverse_compute_inline_under_loop."""
    sch = Schedule(elementwise_under_loop)
    sch.reverse_compute_inline(sch.get_block("C"))
    check(sch, reverse_compute_inline_under_loop_expected, rng)


def test_reverse_compute_multi_reverse_loads(rng):
    """TVM: test_tir_schedule_compute_inline.py::test_reverse_compute_multi_reverse_loads."""
    sch = Schedule(elementwise_multi_reverse_loads)
    sch.reverse_compute_inline(sch.get_block("C"))
    check(sch, reverse_compute_multi_reverse_loads_expected, rng)


def test_reverse_compute_inline_affine_load(rng):
    """TVM: test_tir_schedule_compute_inline.py::test_reverse_compute_inline_affine_load (our simplifier prints the second index as (vi * 2 + vj // 64) % 32, TVM (vj + vi * 128) // 64 % 32: equal)."""
    sch = Schedule(elementwise_reverse_affine_load)
    sch.reverse_compute_inline(sch.get_block("C"))
    check(sch, reverse_compute_inline_affine_load_expected, rng)


def test_reverse_compute_inline_multi_affine_load(rng):
    """TVM: test_tir_schedule_compute_inline.py::test_reverse_compute_inline_multi_affine_load."""
    sch = Schedule(elementwise_multi_reverse_affine_load)
    sch.reverse_compute_inline(sch.get_block("C"))
    check(sch, reverse_compute_inline_multi_affine_load_expected, rng)


def test_reverse_compute_inline_affine_load_unit_iter(rng):
    """TVM: test_tir_schedule_compute_inline.py::test_reverse_compute_inline_affine_load_unit_iter."""
    sch = Schedule(elementwise_reverse_affine_load_unit_iter)
    sch.reverse_compute_inline(sch.get_block("C"))
    check(sch, reverse_compute_inline_affine_load_unit_iter_expected, rng)


def test_reverse_compute_inline_affine_load_unit_iter_simplified(rng):
    """TVM: test_tir_schedule_compute_inline.py::test_reverse_compute_inline_affine_load_unit_iter_simplified."""
    sch = Schedule(elementwise_reverse_affine_load_unit_iter_simplified)
    sch.reverse_compute_inline(sch.get_block("C"))
    check(sch, reverse_compute_inline_affine_load_unit_iter_simplified_expected, rng)


def test_reverse_compute_inline_affine_chain_d_first(rng):
    """TVM: test_tir_schedule_compute_inline.py::test_reverse_compute_inline_affine_chain (reverse_order=True)."""
    sch = Schedule(elementwise_reverse_affine_chain)
    sch.reverse_compute_inline(sch.get_block("D"))
    sch.reverse_compute_inline(sch.get_block("C"))
    check(sch, reverse_compute_inline_affine_chain_d_first_expected, rng)


def test_reverse_compute_inline_affine_chain_c_first(rng):
    """TVM: test_tir_schedule_compute_inline.py::test_reverse_compute_inline_affine_chain (reverse_order=False)."""
    sch = Schedule(elementwise_reverse_affine_chain)
    sch.reverse_compute_inline(sch.get_block("C"))
    sch.reverse_compute_inline(sch.get_block("D"))
    check(sch, reverse_compute_inline_affine_chain_c_first_expected, rng)


def test_reverse_compute_inline_overcomputed_producer(rng):
    """TVM: test_tir_schedule_compute_inline.py::test_reverse_compute_inline_overcomputed_producer."""
    sch = Schedule(elementwise_overcomputed_producer)
    sch.reverse_compute_inline(sch.get_block("C"))
    check(sch, reverse_compute_inline_overcomputed_producer_expected, rng)


def test_reverse_compute_inline_overcomputed_producer_simplify_predicate(rng):
    """TVM: test_tir_schedule_compute_inline.py::test_reverse_compute_inline_overcomputed_producer_simplify_predicate (the guard prints as i // 128 < 127, TVM i < 16255: equal)."""
    sch = Schedule(elementwise_overcomputed_producer_simplify_predicate)
    sch.reverse_compute_inline(sch.get_block("C"))
    check(sch, reverse_compute_inline_overcomputed_producer_simplify_predicate_expected, rng)


def test_reverse_compute_inline_overcomputed_producer_injective_load(rng):
    """TVM: test_tir_schedule_compute_inline.py::test_reverse_compute_inline_overcomputed_producer_injective_load."""
    sch = Schedule(elementwise_overcomputed_producer_injective_load)
    sch.reverse_compute_inline(sch.get_block("C"))
    check(sch, reverse_compute_inline_overcomputed_producer_injective_load_expected, rng)


def test_reverse_compute_inline_producer_predicate_allowed(rng):
    """TVM: test_tir_schedule_compute_inline.py::test_reverse_compute_inline_producer_predicate_allowed."""
    sch = Schedule(elementwise_predicate_producer)
    sch.reverse_compute_inline(sch.get_block("C"))
    check(sch, reverse_compute_inline_producer_predicate_allowed_expected, rng)


def test_inline_with_reduction(rng):
    """TVM: test_tir_schedule_compute_inline.py::test_inline_with_reduction (the init is folded into the store (T.float32(0) + ...); TVM keeps the init, redirected)."""
    sch = Schedule(inline_with_reduction)
    sch.reverse_compute_inline(sch.get_block("transpose"))
    check(sch, inline_with_reduction_expected, rng)


def test_compute_inline_fail_multi_writer():
    """TVM: test_tir_schedule_compute_inline.py::test_compute_inline_fail_multi_writer."""
    sch = Schedule(fail_multi_reader_writer)
    raises_unchanged(sch, NotSingleStoreError, sch.compute_inline, sch.get_block("B"))


def test_reverse_compute_inline_fail_as_dce():
    """TVM: test_tir_schedule_compute_inline.py::test_reverse_compute_inline_fail_as_dce."""
    sch = Schedule(elementwise_standalone)
    raises_unchanged(sch, NoProducersError, sch.reverse_compute_inline, sch.get_block("C"))


def test_reverse_compute_inline_fail_multi_producer():
    """TVM: test_tir_schedule_compute_inline.py::test_reverse_compute_inline_fail_multi_producer."""
    sch = Schedule(elementwise_multi_producer_consumer)
    raises_unchanged(sch, SeveralProducersError, sch.reverse_compute_inline, sch.get_block("D"))


def test_reverse_compute_inline_fail_multi_reader():
    """TVM: test_tir_schedule_compute_inline.py::test_reverse_compute_inline_fail_multi_reader."""
    sch = Schedule(fail_multi_reader_writer)
    raises_unchanged(sch, NotSingleStoreError, sch.reverse_compute_inline, sch.get_block("C"))


def test_reverse_compute_fail_non_affine_load():
    """TVM: test_tir_schedule_compute_inline.py::test_reverse_compute_fail_non_affine_load."""
    sch = Schedule(elementwise_reverse_non_affine_load)
    raises_unchanged(sch, ReadNotBijectiveError, sch.reverse_compute_inline, sch.get_block("C"))


def test_reverse_compute_fail_multi_reverse_loads():
    """TVM: test_tir_schedule_compute_inline.py::test_reverse_compute_fail_multi_reverse_loads."""
    sch = Schedule(elementwise_multi_loads)
    raises_unchanged(sch, SeveralReadIndicesError, sch.reverse_compute_inline, sch.get_block("C"))


def test_reverse_compute_inline_error_producer_not_cover_consumer():
    """TVM: test_tir_schedule_compute_inline.py::test_reverse_compute_inline_error_producer_not_cover_consumer."""
    sch = Schedule(elementwise_producer_not_cover_consumer)
    raises_unchanged(sch, RegionNotCoveredError, sch.reverse_compute_inline, sch.get_block("C"))


def test_reverse_compute_inline_producer_is_reduction():
    """TVM: test_tir_schedule_compute_inline.py::test_reverse_compute_inline_producer_is_reduction."""
    sch = Schedule(elementwise_producer_is_reduction)
    raises_unchanged(sch, ReductionProducerError, sch.reverse_compute_inline, sch.get_block("C"))


def test_inline_block_with_init():
    """TVM: test_tir_schedule_compute_inline.py::test_inline_block_with_init."""
    sch = Schedule(inline_block_with_init)
    raises_unchanged(sch, InlineReductionError, sch.compute_inline, sch.get_block("tensor_rf"))


def test_output_block():
    """TVM: test_tir_schedule_compute_inline.py::test_output_block."""
    sch = Schedule(elementwise)
    raises_unchanged(sch, OutputBlockError, sch.compute_inline, sch.get_block("C"))

