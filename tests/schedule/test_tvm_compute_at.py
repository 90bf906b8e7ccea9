"""TVM's compute_at / reverse_compute_at tests, re-expressed in the DSL.

Source: apache/tvm tests/python/s_tir/schedule/test_tir_schedule_compute_at.py; each test
names the TVM test it comes from. Every case checks the structure (our result ``same_as``
TVM's expected function, re-expressed in the DSL with our names: new loops ``ax0...``, a
renamed loop keeps ``_1`` suffixes) and the numbers (numpy and cpu builds of the schedule
against the unscheduled function on random inputs), and that the trace replays from JSON.
Illegal cases assert the exact ScheduleError subclass. Cases that do not apply and every
deliberate difference: docs/decisions.d/computeloc.md.
"""

import pytest
from schedule_checks import assert_computes_same, assert_structural, raises_unchanged

from workbench import T
from workbench.schedule import (
    DependenceViolationError,
    InsertionIndexError,
    LoopContainsBlockError,
    NotAncestorOfConsumerError,
    OutputBlockError,
    Schedule,
    Trace,
)


def check(sch: Schedule, expected, rng) -> None:
    """Structure: ``sch.mod`` is ``expected``; numbers: numpy and cpu builds of the schedule
    agree with the numpy build of the original; the trace replays from JSON."""
    assert_structural(sch, expected)
    assert_computes_same(sch, rng)


# ---------------------------------------------------------------------------------------
# The functions (TVM's fixtures, then TVM's expected results in our names)
# ---------------------------------------------------------------------------------------

@T.prim_func
def two_elementwise(A: T.Buffer((128, 128), "float32"), C: T.Buffer((128, 128), "float32")):
    B = T.alloc_buffer((128, 128), "float32")
    for i, j in T.grid(128, 128):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i_1, j_1 in T.grid(128, 128):
        with T.block("C"):
            vi_1, vj_1 = T.axis.remap("SS", [i_1, j_1])
            C[vi_1, vj_1] = B[vi_1, vj_1] + T.float32(1)


@T.prim_func
def tiled(A: T.Buffer((128, 128), "float32"), C: T.Buffer((128, 128), "float32")):
    B = T.alloc_buffer((128, 128), "float32")
    for i_0, j_0, i_1, j_1 in T.grid(8, 8, 16, 16):
        with T.block("B"):
            vi = T.axis.spatial(128, i_0 * 16 + i_1)
            vj = T.axis.spatial(128, j_0 * 16 + j_1)
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(128, 128):
        with T.block("C"):
            vi_1, vj_1 = T.axis.remap("SS", [i, j])
            C[vi_1, vj_1] = B[vi_1, vj_1] + T.float32(1)


@T.prim_func
def tiled_trivial_binding(A: T.Buffer((1, 128, 128), "float32"), C: T.Buffer((1, 128, 128), "float32")):
    B = T.alloc_buffer((1, 128, 128), "float32")
    for i_0, j_0, i_1, j_1 in T.grid(8, 8, 16, 16):
        with T.block("B"):
            vi = T.axis.spatial(128, i_0 * 16 + i_1)
            vj = T.axis.spatial(128, j_0 * 16 + j_1)
            B[0, vi, vj] = A[0, vi, vj] * T.float32(2)
    for i, j in T.grid(128, 128):
        with T.block("C"):
            vi_1, vj_1 = T.axis.remap("SS", [i, j])
            C[0, vi_1, vj_1] = B[0, vi_1, vj_1] + T.float32(1)


@T.prim_func
def factorized(A: T.Buffer((16, 16, 16), "float32"), B: T.Buffer((16,), "float32")):
    B_rf_local = T.alloc_buffer((16, 16), "float32")
    for j, i_o, i_i, k in T.grid(16, 4, 4, 16):
        with T.block("B_rf"):
            vi = T.axis.spatial(16, i_o * 4 + i_i)
            vj, vk = T.axis.remap("SR", [j, k])
            with T.init():
                B_rf_local[vi, vj] = T.float32(0)
            B_rf_local[vi, vj] = B_rf_local[vi, vj] + A[vj, vi, vk]
    for i, k_1 in T.grid(16, 16):
        with T.block("B"):
            vi_1, vk_1 = T.axis.remap("SR", [i, k_1])
            with T.init():
                B[vi_1] = T.float32(0)
            B[vi_1] = B[vi_1] + B_rf_local[vk_1, vi_1]


@T.prim_func
def not_all_compact_data_flow(A: T.Buffer((128, 128), "float32"), C: T.Buffer((128, 128), "float32")):
    B = T.alloc_buffer((128, 128), "float32")
    for i, j in T.grid(128, 128):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj]
    for i_1, j_1 in T.grid(128, 64):
        with T.block("C_1"):
            vi_1, vj_1 = T.axis.remap("SS", [i_1, j_1])
            C[vi_1, vj_1 * 2] = B[vi_1, vj_1 * 2] + T.float32(1)
        with T.block("C_2"):
            vi_2, vj_2 = T.axis.remap("SS", [i_1, j_1])
            C[vi_2, vj_2 * 2 + 1] = B[vi_2, vj_2 * 2 + 1] * T.float32(2)


@T.prim_func
def fail_subtree_compact_dataflow(A: T.Buffer((128, 128), "float32"), C: T.Buffer((128, 128), "float32")):
    B = T.alloc_buffer((128, 128), "float32")
    for i in range(128):
        for j in range(64):
            with T.block("B_0"):
                vi = T.axis.spatial(128, i)
                vj = T.axis.spatial(128, j)
                B[vi, vj] = A[vi, vj] * T.float32(2)
        for j_1 in range(64):
            with T.block("B_1"):
                vi_1 = T.axis.spatial(128, i)
                vj_1 = T.axis.spatial(128, j_1 + 64)
                B[vi_1, vj_1] = A[vi_1, vj_1] * T.float32(2)
    for i_2, j_2 in T.grid(128, 128):
        with T.block("C"):
            vi_2, vj_2 = T.axis.remap("SS", [i_2, j_2])
            C[vi_2, vj_2] = B[vi_2, vj_2] + T.float32(1)


@T.prim_func
def fail_all_consumers_under_loop(A: T.Buffer((128, 128), "float32"), C: T.Buffer((128, 128), "float32"), D: T.Buffer((128, 128), "float32")):
    B = T.alloc_buffer((128, 128), "float32")
    for i, j in T.grid(128, 128):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i_1, j_1 in T.grid(128, 128):
        with T.block("C"):
            vi_1, vj_1 = T.axis.remap("SS", [i_1, j_1])
            C[vi_1, vj_1] = B[vi_1, vj_1] + T.float32(1)
    for i_2, j_2 in T.grid(128, 128):
        with T.block("D"):
            vi_2, vj_2 = T.axis.remap("SS", [i_2, j_2])
            D[vi_2, vj_2] = B[vi_2, vj_2] + T.float32(1)


@T.prim_func
def fail_all_producers_under_loop(A: T.Buffer((128, 128), "float32"), D: T.Buffer((128, 128), "float32")):
    B = T.alloc_buffer((128, 128), "float32")
    C = T.alloc_buffer((128, 128), "float32")
    for i, j in T.grid(128, 128):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i_1, j_1 in T.grid(128, 128):
        with T.block("C"):
            vi_1, vj_1 = T.axis.remap("SS", [i_1, j_1])
            C[vi_1, vj_1] = A[vi_1, vj_1] + T.float32(1)
    for i_2, j_2 in T.grid(128, 128):
        with T.block("D"):
            vi_2, vj_2 = T.axis.remap("SS", [i_2, j_2])
            D[vi_2, vj_2] = B[vi_2, vj_2] + C[vi_2, vj_2]


@T.prim_func
def read_out_of_bound(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((16,), "float32")
    for i in range(16):
        with T.block("B"):
            v = T.axis.spatial(16, i)
            B[v] = A[v]
    for j in range(16):
        with T.block("C"):
            v_1 = T.axis.spatial(16, j)
            C[v_1] = T.if_then_else(v_1 < 15, T.max(B[v_1], B[v_1 + 1]), B[v_1])


@T.prim_func
def tiled_pooling_read_cache(A: T.Buffer((32, 32), "float32"), B: T.Buffer((32, 32), "float32")):
    cache = T.alloc_buffer((32, 32), "float32")
    for hh, ww in T.grid(32, 32):
        with T.block("cache"):
            h, w = T.axis.remap("SS", [hh, ww])
            cache[h, w] = A[h, w]
    for hh_0, ww_0, hh_1, ww_1, khh, kww in T.grid(4, 4, 8, 8, 3, 3):
        with T.block("compute"):
            h_1 = T.axis.spatial(32, hh_0 * 8 + hh_1)
            w_1 = T.axis.spatial(32, ww_0 * 8 + ww_1)
            kh, kw = T.axis.remap("RR", [khh, kww])
            with T.init():
                B[h_1, w_1] = T.float32(-3.4028234663852886e38)
            B[h_1, w_1] = T.max(B[h_1, w_1], T.if_then_else(1 <= h_1 + kh and h_1 + kh < 33 and 1 <= w_1 + kw and w_1 + kw < 33, cache[h_1 + kh - 1, w_1 + kw - 1], T.float32(-3.4028234663852886e38)))


@T.prim_func
def non_uniform_tiled_conv(x: T.Buffer((1, 3, 23, 23), "float32"), w: T.Buffer((4, 3, 3, 3), "float32"), y: T.Buffer((1, 4, 21, 21), "float32")):
    x_global = T.alloc_buffer((1, 3, 23, 23), "float32")
    for ax0, ax1, ax2, ax3 in T.grid(1, 3, 23, 23):
        with T.block("cache"):
            v0, v1, v2, v3 = T.axis.remap("SSSS", [ax0, ax1, ax2, ax3])
            x_global[v0, v1, v2, v3] = x[v0, v1, v2, v3]
    for h_o, w_o, n, c_o, h_i, w_i, c_i, kh, kw in T.grid(2, 2, 1, 4, 15, 15, 3, 3, 3):  # noqa: B007
        with T.block("compute"):
            nn = T.axis.spatial(1, 0)
            cc = T.axis.spatial(4, c_o)
            hh = T.axis.spatial(21, h_o * 15 + h_i)
            ww = T.axis.spatial(21, w_o * 15 + w_i)
            rc, rh, rw = T.axis.remap("RRR", [c_i, kh, kw])
            T.where(h_o * 15 + h_i < 21 and w_o * 15 + w_i < 21)
            with T.init():
                y[nn, cc, hh, ww] = T.float32(0)
            y[nn, cc, hh, ww] = y[nn, cc, hh, ww] + x_global[nn, cc // 16 * 3 + rc, hh + rh, ww + rw] * w[cc, rc, rh, rw]


@T.prim_func
def concat_two_elemwise(x: T.Buffer((16,), "float32"), y: T.Buffer((8,), "float32"), T_concat: T.Buffer((24,), "float32")):
    T_add_1 = T.alloc_buffer((16,), "float32")
    T_add_2 = T.alloc_buffer((8,), "float32")
    for i in range(16):
        with T.block("T_add_1"):
            ax = T.axis.spatial(16, i)
            T_add_1[ax] = x[ax] + T.float32(1)
    for i_1 in range(8):
        with T.block("T_add_2"):
            ax_1 = T.axis.spatial(8, i_1)
            T_add_2[ax_1] = y[ax_1] + T.float32(2)
    for i_2 in range(24):
        with T.block("T_concat"):
            ax_2 = T.axis.spatial(24, i_2)
            T_concat[ax_2] = T.if_then_else(16 <= ax_2, T_add_2[ax_2 - 16], T_add_1[ax_2])


@T.prim_func
def floordiv_and_floormod_indices(X: T.Buffer((16, 16), "float32"), Y: T.Buffer((256,), "float32")):
    temp = T.alloc_buffer((16, 16), "float32")
    for i, j in T.grid(16, 16):
        with T.block("A"):
            v_i, v_j = T.axis.remap("SS", [i, j])
            temp[v_i, v_j] = X[v_j, v_i] + T.float32(1)
    for i_1 in range(256):
        with T.block("B"):
            v_i_1 = T.axis.spatial(256, i_1)
            Y[v_i_1] = temp[v_i_1 // 16, v_i_1 % 16]


@T.prim_func
def recursive_floordiv_floormod(A: T.Buffer((1, 8, 1, 8, 8, 32), "float32"), C: T.Buffer((3, 16, 64), "float32")):
    B = T.alloc_buffer((1, 4, 2, 8, 2, 32, 2), "float32")
    for axis1, axis2, axis3, axis4, axis5, axis6, axis7 in T.grid(1, 4, 2, 8, 2, 32, 2):
        with T.block("In"):
            v_axis1, v_axis2, v_axis3, v_axis4, v_axis5, v_axis6, v_axis7 = T.axis.remap("SSSSSSS", [axis1, axis2, axis3, axis4, axis5, axis6, axis7])
            B[v_axis1, v_axis2, v_axis3, v_axis4, v_axis5, v_axis6, v_axis7] = A[(v_axis2 * 4 + v_axis5 * 2 + v_axis7) // 32, (v_axis3 * 32 + v_axis6) // 8, (v_axis1 * 8 + v_axis4) // 8, (v_axis3 * 32 + v_axis6) % 8, v_axis1 * 8 + v_axis4, (v_axis2 * 4 + v_axis5 * 2 + v_axis7) % 32] + T.float32(3)
    for ax1, ax2, ax3 in T.grid(3, 16, 64):
        with T.block("Out"):
            v1, v2, v3 = T.axis.remap("SSS", [ax1, ax2, ax3])
            C[v1, v2, v3] = B[v1 // 8, v2 // 4, v3 // 32, v1, v2 % 4 // 2, v3 % 32, v2 % 2] * T.float32(2)


@T.prim_func
def tiled_repeat_op(x: T.Buffer((4,), "float32"), T_repeat: T.Buffer((64,), "float32")):
    T_add = T.alloc_buffer((4,), "float32")
    for i0 in range(4):
        with T.block("T_add"):
            ax0 = T.axis.spatial(4, i0)
            T_add[ax0] = x[ax0] + T.float32(1)
    for i0_0, i0_1 in T.grid(8, 8):
        with T.block("T_repeat"):
            ax0_1 = T.axis.spatial(64, i0_0 * 8 + i0_1)
            T_repeat[ax0_1] = T_add[ax0_1 // 16]


@T.prim_func
def static_bound(A: T.Buffer((32, 1), "float32"), C: T.Buffer((32, 1), "float32")):
    B = T.alloc_buffer((32, 1), "float32")
    for i, j in T.grid(32, 1):
        with T.block("B"):
            vi = T.axis.spatial(32, i)
            vj = T.axis.spatial(1, j)
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i_1, j_1 in T.grid(32, 32):
        with T.block("C"):
            vi_1 = T.axis.spatial(32, i_1)
            vj_1 = T.axis.spatial(1, j_1)
            T.where(j_1 < 1)
            C[vi_1, vj_1] = B[vi_1, vj_1] + T.float32(1)


@T.prim_func
def rev_iter(X: T.Buffer((10, 10), "float32"), Z: T.Buffer((10, 10), "float32")):
    Y = T.alloc_buffer((10, 10), "float32")
    for i, j in T.grid(10, 10):
        with T.block("b0"):
            vi, vj = T.axis.remap("SS", [i, j])
            Y[9 - vi, 9 - vj] = X[vi, vj] + T.float32(1)
    for i_1, j_1 in T.grid(10, 10):
        with T.block("b1"):
            vi_1, vj_1 = T.axis.remap("SS", [i_1, j_1])
            Z[vi_1, vj_1] = Y[vj_1, vi_1] + T.float32(2)


@T.prim_func
def grouped_channel_bias(X: T.Buffer((720, 8, 8), "float32"), Y: T.Buffer((720, 8, 8), "float32")):
    B = T.alloc_buffer((45,), "float32")
    for i in range(45):
        with T.block("init"):
            vi = T.axis.spatial(45, i)
            B[vi] = T.Cast("float32", vi)
    for c_o, h, w, c_i in T.grid(2, 8, 8, 360):
        with T.block("compute"):
            hh, ww = T.axis.remap("SS", [h, w])
            cc = T.axis.spatial(720, c_o * 360 + c_i)
            Y[cc, hh, ww] = X[cc, hh, ww] + B[cc // 16]


@T.prim_func
def multi_producers_conv(data: T.Buffer((1, 3, 24, 24), "int8"), w: T.Buffer((4, 3, 7, 7), "int8"), conv: T.Buffer((1, 4, 9, 9), "int32")):
    pad = T.alloc_buffer((1, 3, 30, 30), "int8")
    wbuf = T.alloc_buffer((4, 3, 7, 7), "int8")
    for i0, i1, i2, i3 in T.grid(1, 3, 30, 30):
        with T.block("pad"):
            i0_1, i1_1, i2_1, i3_1 = T.axis.remap("SSSS", [i0, i1, i2, i3])
            pad[i0_1, i1_1, i2_1, i3_1] = T.if_then_else(3 <= i2_1 and i2_1 < 27 and 3 <= i3_1 and i3_1 < 27, data[i0_1, i1_1, i2_1 - 3, i3_1 - 3], T.int8(0))
    for i0_2 in range(1):
        for ax0, ax1, ax2, ax3 in T.grid(4, 3, 7, 7):
            with T.block("wbuf"):
                v0, v1, v2, v3 = T.axis.remap("SSSS", [ax0, ax1, ax2, ax3])
                wbuf[v0, v1, v2, v3] = w[v0, v1, v2, v3]
        for i1_2, i2_2, i3_2, i4, i5, i6 in T.grid(4, 9, 9, 3, 7, 7):
            with T.block("conv"):
                nn, ff, yy, xx, rc, ry, rx = T.axis.remap("SSSSRRR", [i0_2, i1_2, i2_2, i3_2, i4, i5, i6])
                with T.init():
                    conv[nn, ff, yy, xx] = 0
                conv[nn, ff, yy, xx] = conv[nn, ff, yy, xx] + T.Cast("int32", pad[nn, rc, yy * 2 + ry, xx * 2 + rx]) * T.Cast("int32", wbuf[ff, rc, ry, rx])


@T.prim_func
def to_index_main(A: T.Buffer((128, 128), "float32"), D: T.Buffer((128, 128), "float32")):
    B = T.alloc_buffer((128, 128), "float32")
    C = T.alloc_buffer((128, 128), "float32")
    for i_0, j_0, i_1 in T.grid(8, 8, 16):
        for j_1 in range(16):
            with T.block("B"):
                vi = T.axis.spatial(128, i_0 * 16 + i_1)
                vj = T.axis.spatial(128, j_0 * 16 + j_1)
                B[vi, vj] = A[vi, vj] * T.float32(2)
        for ax0 in range(16):
            with T.block("C"):
                vi_1 = T.axis.spatial(128, i_0 * 16 + i_1)
                vj_1 = T.axis.spatial(128, j_0 * 16 + ax0)
                C[vi_1, vj_1] = B[vi_1, vj_1] + T.float32(1)
    for i, j in T.grid(128, 128):
        with T.block("D"):
            vi_2, vj_2 = T.axis.remap("SS", [i, j])
            D[vi_2, vj_2] = B[vi_2, vj_2] + T.float32(1)


@T.prim_func
def unit_loop_main(A: T.Buffer((128, 128), "float32"), D: T.Buffer((1, 2, 1), "float32")):
    B = T.alloc_buffer((128, 128), "float32")
    for i_0, j_0, i_1 in T.grid(8, 8, 16):
        for j_1 in range(16):
            with T.block("B"):
                vi = T.axis.spatial(128, i_0 * 16 + i_1)
                vj = T.axis.spatial(128, j_0 * 16 + j_1)
                B[vi, vj] = A[vi, vj] * T.float32(2)
    for ax0, ax1, ax2 in T.grid(1, 2, 1):
        with T.block("D"):
            v0, v1, v2 = T.axis.remap("SSS", [ax0, ax1, ax2])
            D[v0, v1, v2] = B[v0, v1] + T.float32(1)


@T.prim_func
def layout_trans(A: T.Buffer((1, 3, 5, 5, 16), "float32"), C: T.Buffer((1, 6, 5, 5, 8), "float32")):
    B = T.alloc_buffer((1, 3, 5, 5, 16), "float32")
    for i0, i1, i2, i3, i4 in T.grid(1, 3, 5, 5, 16):
        with T.block("compute"):
            v_i0, v_i1, v_i2, v_i3, v_i4 = T.axis.remap("SSSSS", [i0, i1, i2, i3, i4])
            B[v_i0, v_i1, v_i2, v_i3, v_i4] = A[v_i0, v_i1, v_i2, v_i3, v_i4] + T.float32(1)
    for ax0, ax1, ax2, ax3, ax4 in T.grid(1, 6, 5, 5, 8):
        with T.block("T_layout_trans"):
            v_ax0, v_ax1, v_ax2, v_ax3, v_ax4 = T.axis.remap("SSSSS", [ax0, ax1, ax2, ax3, ax4])
            C[v_ax0, v_ax1, v_ax2, v_ax3, v_ax4] = B[v_ax0, (v_ax1 * 8 + v_ax4) // 16, v_ax2, v_ax3, (v_ax1 * 8 + v_ax4) % 16]


@T.prim_func
def sliced_concatenate(Y: T.Buffer((1, 32, 4, 8), "float32"), Z: T.Buffer((1, 53, 4, 8), "float32"), W: T.Buffer((1, 87, 4, 8), "float32")):
    X = T.alloc_buffer((1, 16, 4, 8), "float32")
    Concat = T.alloc_buffer((1, 101, 4, 8), "float32")
    for ax0, ax1, ax2, ax3 in T.grid(1, 16, 4, 8):
        with T.block("compute"):
            v_ax0, v_ax1, v_ax2, v_ax3 = T.axis.remap("SSSS", [ax0, ax1, ax2, ax3])
            X[v_ax0, v_ax1, v_ax2, v_ax3] = T.float32(1)
    for ax0_1, ax1_1, ax2_1, ax3_1 in T.grid(1, 101, 4, 8):
        with T.block("T_concat"):
            v_ax0_1, v_ax1_1, v_ax2_1, v_ax3_1 = T.axis.remap("SSSS", [ax0_1, ax1_1, ax2_1, ax3_1])
            Concat[v_ax0_1, v_ax1_1, v_ax2_1, v_ax3_1] = T.if_then_else(85 <= v_ax1_1, X[v_ax0_1, v_ax1_1 - 85, v_ax2_1, v_ax3_1], T.if_then_else(53 <= v_ax1_1, Y[v_ax0_1, v_ax1_1 - 53, v_ax2_1, v_ax3_1], Z[v_ax0_1, v_ax1_1, v_ax2_1, v_ax3_1]))
    for ax0_2, ax1_2, ax2_2, ax3_2 in T.grid(1, 87, 4, 8):
        with T.block("T_strided_slice"):
            v_ax0_2, v_ax1_2, v_ax2_2, v_ax3_2 = T.axis.remap("SSSS", [ax0_2, ax1_2, ax2_2, ax3_2])
            W[v_ax0_2, v_ax1_2, v_ax2_2, v_ax3_2] = Concat[v_ax0_2, v_ax1_2, v_ax2_2, v_ax3_2]


@T.prim_func
def two_elementwise_expected(A: T.Buffer((128, 128), "float32"), C: T.Buffer((128, 128), "float32")):
    B = T.alloc_buffer((128, 128), "float32")
    for i_1 in T.serial(128):
        for ax0 in T.serial(128):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i_1, ax0])
                B[vi, vj] = A[vi, vj] * T.float32(2)
        for j_1 in T.serial(128):
            with T.block("C"):
                vi_1, vj_1 = T.axis.remap("SS", [i_1, j_1])
                C[vi_1, vj_1] = B[vi_1, vj_1] + T.float32(1)


@T.prim_func
def tiled_expected(A: T.Buffer((128, 128), "float32"), C: T.Buffer((128, 128), "float32")):
    B = T.alloc_buffer((128, 128), "float32")
    for i_0, j_0, i_1 in T.grid(8, 8, 16):
        for j_1 in T.serial(16):
            with T.block("B"):
                vi = T.axis.spatial(128, i_0 * 16 + i_1)
                vj = T.axis.spatial(128, j_0 * 16 + j_1)
                B[vi, vj] = A[vi, vj] * T.float32(2)
        for ax0 in T.serial(16):
            with T.block("C"):
                vi_1 = T.axis.spatial(128, i_0 * 16 + i_1)
                vj_1 = T.axis.spatial(128, j_0 * 16 + ax0)
                C[vi_1, vj_1] = B[vi_1, vj_1] + T.float32(1)


@T.prim_func
def tiled_trivial_binding_expected(A: T.Buffer((1, 128, 128), "float32"), C: T.Buffer((1, 128, 128), "float32")):
    B = T.alloc_buffer((1, 128, 128), "float32")
    for i_0, j_0, i_1 in T.grid(8, 8, 16):
        for j_1 in T.serial(16):
            with T.block("B"):
                vi = T.axis.spatial(128, i_0 * 16 + i_1)
                vj = T.axis.spatial(128, j_0 * 16 + j_1)
                B[0, vi, vj] = A[0, vi, vj] * T.float32(2)
        for ax0 in T.serial(16):
            with T.block("C"):
                vi_1 = T.axis.spatial(128, i_0 * 16 + i_1)
                vj_1 = T.axis.spatial(128, j_0 * 16 + ax0)
                C[0, vi_1, vj_1] = B[0, vi_1, vj_1] + T.float32(1)


@T.prim_func
def factorized_expected(A: T.Buffer((16, 16, 16), "float32"), B: T.Buffer((16,), "float32")):
    B_rf_local = T.alloc_buffer((16, 16), "float32")
    for j, i_o in T.grid(16, 4):
        for i_i, k in T.grid(4, 16):
            with T.block("B_rf"):
                vi = T.axis.spatial(16, i_o * 4 + i_i)
                vj = T.axis.spatial(16, j)
                vk = T.axis.reduce(16, k)
                with T.init():
                    B_rf_local[vi, vj] = T.float32(0)
                B_rf_local[vi, vj] = B_rf_local[vi, vj] + A[vj, vi, vk]
        for ax0 in T.serial(4):
            with T.block("B"):
                vi_1 = T.axis.spatial(16, j)
                vk_1 = T.axis.reduce(16, i_o * 4 + ax0)
                with T.init():
                    B[vi_1] = T.float32(0)
                B[vi_1] = B[vi_1] + B_rf_local[vk_1, vi_1]


@T.prim_func
def not_all_compact_data_flow_expected(A: T.Buffer((128, 128), "float32"), C: T.Buffer((128, 128), "float32")):
    B = T.alloc_buffer((128, 128), "float32")
    for i_1, j_1 in T.grid(128, 64):
        for ax0 in T.serial(2):
            with T.block("B"):
                vi = T.axis.spatial(128, i_1)
                vj = T.axis.spatial(128, j_1 * 2 + ax0)
                B[vi, vj] = A[vi, vj]
        with T.block("C_1"):
            vi_1, vj_1 = T.axis.remap("SS", [i_1, j_1])
            C[vi_1, vj_1 * 2] = B[vi_1, vj_1 * 2] + T.float32(1)
        with T.block("C_2"):
            vi_2, vj_2 = T.axis.remap("SS", [i_1, j_1])
            C[vi_2, vj_2 * 2 + 1] = B[vi_2, vj_2 * 2 + 1] * T.float32(2)


@T.prim_func
def read_out_of_bound_expected(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((16,), "float32")
    for j in T.serial(16):
        for ax0 in T.serial(2):
            with T.block("B"):
                v = T.axis.spatial(16, j + ax0)
                T.where(j + ax0 < 16)
                B[v] = A[v]
        with T.block("C"):
            v_1 = T.axis.remap("S", [j])
            C[v_1] = T.if_then_else(v_1 < 15, T.max(B[v_1], B[v_1 + 1]), B[v_1])


@T.prim_func
def tiled_pooling_read_cache_expected(A: T.Buffer((32, 32), "float32"), B: T.Buffer((32, 32), "float32")):
    cache = T.alloc_buffer((32, 32), "float32")
    for hh_0, ww_0 in T.grid(4, 4):
        for ax0, ax1 in T.grid(10, 10):
            with T.block("cache"):
                h = T.axis.spatial(32, hh_0 * 8 + ax0 - 1)
                w = T.axis.spatial(32, ww_0 * 8 + ax1 - 1)
                T.where(hh_0 * 8 + ax0 - 1 >= 0 and hh_0 * 8 + ax0 - 1 < 32 and ww_0 * 8 + ax1 - 1 >= 0 and ww_0 * 8 + ax1 - 1 < 32)
                cache[h, w] = A[h, w]
        for hh_1, ww_1, khh, kww in T.grid(8, 8, 3, 3):
            with T.block("compute"):
                h_1 = T.axis.spatial(32, hh_0 * 8 + hh_1)
                w_1 = T.axis.spatial(32, ww_0 * 8 + ww_1)
                kh = T.axis.reduce(3, khh)
                kw = T.axis.reduce(3, kww)
                with T.init():
                    B[h_1, w_1] = T.float32(-3.4028234663852886e+38)
                B[h_1, w_1] = T.max(B[h_1, w_1], T.if_then_else(1 <= h_1 + kh and h_1 + kh < 33 and 1 <= w_1 + kw and w_1 + kw < 33, cache[h_1 + kh - 1, w_1 + kw - 1], T.float32(-3.4028234663852886e+38)))


@T.prim_func
def non_uniform_tiled_conv_expected(x: T.Buffer((1, 3, 23, 23), "float32"), w: T.Buffer((4, 3, 3, 3), "float32"), y: T.Buffer((1, 4, 21, 21), "float32")):
    x_global = T.alloc_buffer((1, 3, 23, 23), "float32")
    for h_o, w_o in T.grid(2, 2):
        for ax0_1, ax1_1, ax2_1 in T.grid(3, 17, 17):
            with T.block("cache"):
                v0 = T.axis.spatial(1, 0)
                v1 = T.axis.spatial(3, ax0_1)
                v2 = T.axis.spatial(23, h_o * 15 + ax1_1)
                v3 = T.axis.spatial(23, w_o * 15 + ax2_1)
                T.where(h_o * 15 + ax1_1 < 23 and w_o * 15 + ax2_1 < 23)
                x_global[v0, v1, v2, v3] = x[v0, v1, v2, v3]
        for n, c_o, h_i, w_i, c_i, kh, kw in T.grid(1, 4, 15, 15, 3, 3, 3):  # noqa: B007
            with T.block("compute"):
                nn = T.axis.spatial(1, 0)
                cc = T.axis.spatial(4, c_o)
                hh = T.axis.spatial(21, h_o * 15 + h_i)
                ww = T.axis.spatial(21, w_o * 15 + w_i)
                rc = T.axis.reduce(3, c_i)
                rh = T.axis.reduce(3, kh)
                rw = T.axis.reduce(3, kw)
                T.where(h_o * 15 + h_i < 21 and w_o * 15 + w_i < 21)
                with T.init():
                    y[nn, cc, hh, ww] = T.float32(0)
                y[nn, cc, hh, ww] = y[nn, cc, hh, ww] + x_global[nn, cc // 16 * 3 + rc, hh + rh, ww + rw] * w[cc, rc, rh, rw]


@T.prim_func
def concat_two_elemwise_expected(x: T.Buffer((16,), "float32"), y: T.Buffer((8,), "float32"), T_concat: T.Buffer((24,), "float32")):
    T_add_1 = T.alloc_buffer((16,), "float32")
    T_add_2 = T.alloc_buffer((8,), "float32")
    for i_2 in T.serial(24):
        with T.block("T_add_1"):
            ax = T.axis.spatial(16, i_2)
            T.where(i_2 < 16)
            T_add_1[ax] = x[ax] + T.float32(1)
        with T.block("T_add_2"):
            ax_1 = T.axis.spatial(8, i_2 - 16)
            T.where(i_2 - 16 >= 0)
            T_add_2[ax_1] = y[ax_1] + T.float32(2)
        with T.block("T_concat"):
            ax_2 = T.axis.remap("S", [i_2])
            T_concat[ax_2] = T.if_then_else(16 <= ax_2, T_add_2[ax_2 - 16], T_add_1[ax_2])


@T.prim_func
def floordiv_and_floormod_indices_expected(X: T.Buffer((16, 16), "float32"), Y: T.Buffer((256,), "float32")):
    temp = T.alloc_buffer((16, 16), "float32")
    for i in T.serial(16):
        for j in T.serial(16):
            with T.block("A"):
                v_i, v_j = T.axis.remap("SS", [i, j])
                temp[v_i, v_j] = X[v_j, v_i] + T.float32(1)
        for ax0 in T.serial(16):
            with T.block("B"):
                v_i_1 = T.axis.spatial(256, i * 16 + ax0)
                Y[v_i_1] = temp[v_i_1 // 16, v_i_1 % 16]


@T.prim_func
def recursive_floordiv_floormod_expected(A: T.Buffer((1, 8, 1, 8, 8, 32), "float32"), C: T.Buffer((3, 16, 64), "float32")):
    B = T.alloc_buffer((1, 4, 2, 8, 2, 32, 2), "float32")
    for axis1, axis2, axis3 in T.grid(1, 4, 2):
        for axis4, axis5, axis6, axis7 in T.grid(8, 2, 32, 2):
            with T.block("In"):
                v_axis1, v_axis2, v_axis3, v_axis4, v_axis5, v_axis6, v_axis7 = T.axis.remap("SSSSSSS", [axis1, axis2, axis3, axis4, axis5, axis6, axis7])
                B[v_axis1, v_axis2, v_axis3, v_axis4, v_axis5, v_axis6, v_axis7] = A[(v_axis2 * 4 + v_axis5 * 2 + v_axis7) // 32, (v_axis3 * 32 + v_axis6) // 8, (v_axis1 * 8 + v_axis4) // 8, (v_axis3 * 32 + v_axis6) % 8, v_axis1 * 8 + v_axis4, (v_axis2 * 4 + v_axis5 * 2 + v_axis7) % 32] + T.float32(3)
        for ax0, ax1_1, ax2_1 in T.grid(3, 4, 32):
            with T.block("Out"):
                v1 = T.axis.spatial(3, ax0)
                v2 = T.axis.spatial(16, axis2 * 4 + ax1_1)
                v3 = T.axis.spatial(64, axis3 * 32 + ax2_1)
                C[v1, v2, v3] = B[v1 // 8, v2 // 4, v3 // 32, v1, v2 % 4 // 2, v3 % 32, v2 % 2] * T.float32(2)


@T.prim_func
def tiled_repeat_op_expected(x: T.Buffer((4,), "float32"), T_repeat: T.Buffer((64,), "float32")):
    T_add = T.alloc_buffer((4,), "float32")
    for i0_0 in T.serial(8):
        with T.block("T_add"):
            ax0 = T.axis.spatial(4, i0_0 // 2)
            T_add[ax0] = x[ax0] + T.float32(1)
        for i0_1 in T.serial(8):
            with T.block("T_repeat"):
                ax0_1 = T.axis.spatial(64, i0_0 * 8 + i0_1)
                T_repeat[ax0_1] = T_add[ax0_1 // 16]


@T.prim_func
def static_bound_expected(A: T.Buffer((32, 1), "float32"), C: T.Buffer((32, 1), "float32")):
    B = T.alloc_buffer((32, 1), "float32")
    for i_1 in T.serial(32):
        for ax0, ax1 in T.grid(1, 1):
            with T.block("B"):
                vi = T.axis.spatial(32, i_1 + ax0)
                vj = T.axis.spatial(1, ax1)
                B[vi, vj] = A[vi, vj] * T.float32(2)
        for j_1 in T.serial(32):
            with T.block("C"):
                vi_1 = T.axis.spatial(32, i_1)
                vj_1 = T.axis.spatial(1, j_1)
                T.where(j_1 < 1)
                C[vi_1, vj_1] = B[vi_1, vj_1] + T.float32(1)


@T.prim_func
def rev_iter_expected(X: T.Buffer((10, 10), "float32"), Z: T.Buffer((10, 10), "float32")):
    Y = T.alloc_buffer((10, 10), "float32")
    for i_1 in T.serial(10):
        for ax0 in T.serial(10):
            with T.block("b0"):
                vi = T.axis.spatial(10, ax0)
                vj = T.axis.spatial(10, 9 - i_1)
                Y[9 - vi, 9 - vj] = X[vi, vj] + T.float32(1)
        for j_1 in T.serial(10):
            with T.block("b1"):
                vi_1, vj_1 = T.axis.remap("SS", [i_1, j_1])
                Z[vi_1, vj_1] = Y[vj_1, vi_1] + T.float32(2)


@T.prim_func
def grouped_channel_bias_expected(X: T.Buffer((720, 8, 8), "float32"), Y: T.Buffer((720, 8, 8), "float32")):
    B = T.alloc_buffer((45,), "float32")
    for c_o in T.serial(2):
        for ax0 in T.serial(23):
            with T.block("init"):
                vi = T.axis.spatial(45, c_o * 45 // 2 + ax0)
                T.where(c_o * 45 // 2 + ax0 <= (c_o * 360 + 7) // 16 + 22)
                B[vi] = T.Cast("float32", vi)
        for h, w, c_i in T.grid(8, 8, 360):
            with T.block("compute"):
                hh = T.axis.spatial(8, h)
                ww = T.axis.spatial(8, w)
                cc = T.axis.spatial(720, c_o * 360 + c_i)
                Y[cc, hh, ww] = X[cc, hh, ww] + B[cc // 16]


@T.prim_func
def multi_producers_conv_expected(data: T.Buffer((1, 3, 24, 24), "int8"), w: T.Buffer((4, 3, 7, 7), "int8"), conv: T.Buffer((1, 4, 9, 9), "int32")):
    pad = T.alloc_buffer((1, 3, 30, 30), "int8")
    wbuf = T.alloc_buffer((4, 3, 7, 7), "int8")
    for i0_2 in T.serial(1):
        for ax0_1, ax1_1, ax2_1 in T.grid(3, 23, 23):
            with T.block("pad"):
                i0_1 = T.axis.spatial(1, 0)
                i1_1 = T.axis.spatial(3, ax0_1)
                i2_1 = T.axis.spatial(30, ax1_1)
                i3_1 = T.axis.spatial(30, ax2_1)
                pad[i0_1, i1_1, i2_1, i3_1] = T.if_then_else(3 <= i2_1 and i2_1 < 27 and 3 <= i3_1 and i3_1 < 27, data[i0_1, i1_1, i2_1 - 3, i3_1 - 3], T.int8(0))
        for ax0, ax1, ax2, ax3 in T.grid(4, 3, 7, 7):
            with T.block("wbuf"):
                v0, v1, v2, v3 = T.axis.remap("SSSS", [ax0, ax1, ax2, ax3])
                wbuf[v0, v1, v2, v3] = w[v0, v1, v2, v3]
        for i1_2, i2_2, i3_2, i4, i5, i6 in T.grid(4, 9, 9, 3, 7, 7):
            with T.block("conv"):
                nn, ff, yy, xx, rc, ry, rx = T.axis.remap("SSSSRRR", [i0_2, i1_2, i2_2, i3_2, i4, i5, i6])
                with T.init():
                    conv[nn, ff, yy, xx] = 0
                conv[nn, ff, yy, xx] = conv[nn, ff, yy, xx] + T.Cast("int32", pad[nn, rc, yy * 2 + ry, xx * 2 + rx]) * T.Cast("int32", wbuf[ff, rc, ry, rx])


@T.prim_func
def to_index_main_expected(A: T.Buffer((128, 128), "float32"), D: T.Buffer((128, 128), "float32")):
    B = T.alloc_buffer((128, 128), "float32")
    C = T.alloc_buffer((128, 128), "float32")
    for i_0, j_0, i_1 in T.grid(8, 8, 16):
        for j_1 in T.serial(16):
            with T.block("B"):
                vi = T.axis.spatial(128, i_0 * 16 + i_1)
                vj = T.axis.spatial(128, j_0 * 16 + j_1)
                B[vi, vj] = A[vi, vj] * T.float32(2)
        for ax0_1 in T.serial(16):
            with T.block("D"):
                vi_2 = T.axis.spatial(128, i_0 * 16 + i_1)
                vj_2 = T.axis.spatial(128, j_0 * 16 + ax0_1)
                D[vi_2, vj_2] = B[vi_2, vj_2] + T.float32(1)
        for ax0 in T.serial(16):
            with T.block("C"):
                vi_1 = T.axis.spatial(128, i_0 * 16 + i_1)
                vj_1 = T.axis.spatial(128, j_0 * 16 + ax0)
                C[vi_1, vj_1] = B[vi_1, vj_1] + T.float32(1)


@T.prim_func
def unit_loop_main_expected(A: T.Buffer((128, 128), "float32"), D: T.Buffer((1, 2, 1), "float32")):
    B = T.alloc_buffer((128, 128), "float32")
    for i_0, j_0, i_1 in T.grid(8, 8, 16):
        for j_1 in T.serial(16):
            with T.block("B"):
                vi = T.axis.spatial(128, i_0 * 16 + i_1)
                vj = T.axis.spatial(128, j_0 * 16 + j_1)
                B[vi, vj] = A[vi, vj] * T.float32(2)
        for ax0_1, ax1_1, ax2_1 in T.grid(1, 16, 1):
            with T.block("D"):
                v0 = T.axis.spatial(1, i_0 * 16 + i_1 + ax0_1)
                v1 = T.axis.spatial(2, j_0 * 16 + ax1_1)
                v2 = T.axis.spatial(1, ax2_1)
                T.where(i_0 * 16 + i_1 + ax0_1 < 1 and j_0 * 16 + ax1_1 < 2)
                D[v0, v1, v2] = B[v0, v1] + T.float32(1)


@T.prim_func
def layout_trans_expected(A: T.Buffer((1, 3, 5, 5, 16), "float32"), C: T.Buffer((1, 6, 5, 5, 8), "float32")):
    B = T.alloc_buffer((1, 3, 5, 5, 16), "float32")
    for i0, i1 in T.grid(1, 3):
        for i2, i3, i4 in T.grid(5, 5, 16):
            with T.block("compute"):
                v_i0, v_i1, v_i2, v_i3, v_i4 = T.axis.remap("SSSSS", [i0, i1, i2, i3, i4])
                B[v_i0, v_i1, v_i2, v_i3, v_i4] = A[v_i0, v_i1, v_i2, v_i3, v_i4] + T.float32(1)
        for ax0_1, ax1_1, ax2_1, ax3_1 in T.grid(2, 5, 5, 8):
            with T.block("T_layout_trans"):
                v_ax0 = T.axis.spatial(1, 0)
                v_ax1 = T.axis.spatial(6, i1 * 2 + ax0_1)
                v_ax2 = T.axis.spatial(5, ax1_1)
                v_ax3 = T.axis.spatial(5, ax2_1)
                v_ax4 = T.axis.spatial(8, ax3_1)
                C[v_ax0, v_ax1, v_ax2, v_ax3, v_ax4] = B[v_ax0, (v_ax1 * 8 + v_ax4) // 16, v_ax2, v_ax3, (v_ax1 * 8 + v_ax4) % 16]


@T.prim_func
def fail_all_producers_under_loop_expected(A: T.Buffer((128, 128), "float32"), D: T.Buffer((128, 128), "float32")):
    B = T.alloc_buffer((128, 128), "float32")
    C = T.alloc_buffer((128, 128), "float32")
    for i, j in T.grid(128, 128):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i_1 in T.serial(128):
        for j_1 in T.serial(128):
            with T.block("C"):
                vi_1, vj_1 = T.axis.remap("SS", [i_1, j_1])
                C[vi_1, vj_1] = A[vi_1, vj_1] + T.float32(1)
        for ax0 in T.serial(128):
            with T.block("D"):
                vi_2, vj_2 = T.axis.remap("SS", [i_1, ax0])
                D[vi_2, vj_2] = B[vi_2, vj_2] + C[vi_2, vj_2]


@T.prim_func
def sliced_concatenate_expected(Y: T.Buffer((1, 32, 4, 8), "float32"), Z: T.Buffer((1, 53, 4, 8), "float32"), W: T.Buffer((1, 87, 4, 8), "float32")):
    X = T.alloc_buffer((1, 16, 4, 8), "float32")
    Concat = T.alloc_buffer((1, 101, 4, 8), "float32")
    for ax0_2 in T.serial(1):
        for ax0_1, ax1_1, ax2_1 in T.grid(2, 4, 8):
            with T.block("compute"):
                v_ax0 = T.axis.spatial(1, 0)
                v_ax1 = T.axis.spatial(16, ax0_1)
                v_ax2 = T.axis.spatial(4, ax1_1)
                v_ax3 = T.axis.spatial(8, ax2_1)
                X[v_ax0, v_ax1, v_ax2, v_ax3] = T.float32(1)
        for ax0_3, ax1_3, ax2_3 in T.grid(87, 4, 8):
            with T.block("T_concat"):
                v_ax0_1 = T.axis.spatial(1, 0)
                v_ax1_1 = T.axis.spatial(101, ax0_3)
                v_ax2_1 = T.axis.spatial(4, ax1_3)
                v_ax3_1 = T.axis.spatial(8, ax2_3)
                Concat[v_ax0_1, v_ax1_1, v_ax2_1, v_ax3_1] = T.if_then_else(85 <= v_ax1_1, X[v_ax0_1, v_ax1_1 - 85, v_ax2_1, v_ax3_1], T.if_then_else(53 <= v_ax1_1, Y[v_ax0_1, v_ax1_1 - 53, v_ax2_1, v_ax3_1], Z[v_ax0_1, v_ax1_1, v_ax2_1, v_ax3_1]))
        for ax1_2, ax2_2, ax3_2 in T.grid(87, 4, 8):
            with T.block("T_strided_slice"):
                v_ax0_2, v_ax1_2, v_ax2_2, v_ax3_2 = T.axis.remap("SSSS", [ax0_2, ax1_2, ax2_2, ax3_2])
                W[v_ax0_2, v_ax1_2, v_ax2_2, v_ax3_2] = Concat[v_ax0_2, v_ax1_2, v_ax2_2, v_ax3_2]


# ---------------------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------------------


def test_compute_at_two_elementwise(rng):
    """TVM: test_tir_schedule_compute_at.py::test_compute_at_two_elementwise."""
    sch = Schedule(two_elementwise)
    i, _ = sch.get_loops(sch.get_block("C"))
    sch.compute_at(sch.get_block("B"), i)
    check(sch, two_elementwise_expected, rng)


def test_reverse_compute_at_tiled(rng):
    """TVM: test_tir_schedule_compute_at.py::test_reverse_compute_at_tiled."""
    sch = Schedule(tiled)
    _, _, loop, _ = sch.get_loops(sch.get_block("B"))
    sch.reverse_compute_at(sch.get_block("C"), loop)
    check(sch, tiled_expected, rng)


def test_reverse_compute_at_tiled_trivial_binding(rng):
    """TVM: test_tir_schedule_compute_at.py::test_reverse_compute_at_tiled_trivial_binding."""
    sch = Schedule(tiled_trivial_binding)
    _, _, loop, _ = sch.get_loops(sch.get_block("B"))
    sch.reverse_compute_at(sch.get_block("C"), loop)
    check(sch, tiled_trivial_binding_expected, rng)


def test_reverse_compute_at_factorized(rng):
    """TVM: test_tir_schedule_compute_at.py::test_reverse_compute_at_factorized (thread bindings of the TVM function written as serial loops)."""
    sch = Schedule(factorized)
    _, loop, _, _ = sch.get_loops(sch.get_block("B_rf"))
    sch.reverse_compute_at(sch.get_block("B"), loop)
    check(sch, factorized_expected, rng)


def test_compact_dataflow(rng):
    """TVM: test_tir_schedule_compute_at.py::test_compact_dataflow."""
    sch = Schedule(not_all_compact_data_flow)
    _, loop = sch.get_loops(sch.get_block("C_1"))
    sch.compute_at(sch.get_block("B"), loop)
    check(sch, not_all_compact_data_flow_expected, rng)


def test_read_out_of_bound(rng):
    """TVM: test_tir_schedule_compute_at.py::test_read_out_of_bound."""
    sch = Schedule(read_out_of_bound)
    (loop,) = sch.get_loops(sch.get_block("C"))
    sch.compute_at(sch.get_block("B"), loop)
    check(sch, read_out_of_bound_expected, rng)


def test_compute_at_tiled_pooling_read_cache(rng):
    """TVM: test_tir_schedule_compute_at.py::test_compute_at_tiled_pooling_read_cache (224x224 scaled to 32x32; the init is -FLT_MAX, the if_then_else branch's value)."""
    sch = Schedule(tiled_pooling_read_cache)
    loop = sch.get_loops(sch.get_block("compute"))[1]
    sch.compute_at(sch.get_block("cache"), loop)
    check(sch, tiled_pooling_read_cache_expected, rng)


def test_compute_at_non_uniform_tiled_conv(rng):
    """TVM: test_tir_schedule_compute_at.py::test_compute_at_non_uniform_tiled_conv (100x100, 16 channels scaled to 23x23, 4 channels)."""
    sch = Schedule(non_uniform_tiled_conv)
    loop = sch.get_loops(sch.get_block("compute"))[1]
    sch.compute_at(sch.get_block("cache"), loop)
    check(sch, non_uniform_tiled_conv_expected, rng)


def test_compute_at_concat(rng):
    """TVM: test_tir_schedule_compute_at.py::test_compute_at_concat (the guard prints as i_2 - 16 >= 0 (TVM: 16 <= i))."""
    sch = Schedule(concat_two_elemwise)
    (loop,) = sch.get_loops(sch.get_block("T_concat"))
    sch.compute_at(sch.get_block("T_add_1"), loop)
    sch.compute_at(sch.get_block("T_add_2"), loop)
    check(sch, concat_two_elemwise_expected, rng)


def test_reverse_compute_at_floordiv_and_floormod_indices(rng):
    """TVM: test_tir_schedule_compute_at.py::test_reverse_compute_at_floordiv_and_floormod_indices."""
    sch = Schedule(floordiv_and_floormod_indices)
    loop, _ = sch.get_loops(sch.get_block("A"))
    sch.reverse_compute_at(sch.get_block("B"), loop)
    check(sch, floordiv_and_floormod_indices_expected, rng)


def test_reverse_compute_at_floordiv_and_floormod_recursive(rng):
    """TVM: test_tir_schedule_compute_at.py::test_reverse_compute_at_floordiv_and_floormod_recursive (C (3, 512, 512) scaled to (3, 16, 64))."""
    sch = Schedule(recursive_floordiv_floormod)
    loop = sch.get_loops(sch.get_block("In"))[2]
    sch.reverse_compute_at(sch.get_block("Out"), loop)
    check(sch, recursive_floordiv_floormod_expected, rng)


def test_compute_at_tiled_repeat_op(rng):
    """TVM: test_tir_schedule_compute_at.py::test_compute_at_tiled_repeat_op."""
    sch = Schedule(tiled_repeat_op)
    loop, _ = sch.get_loops(sch.get_block("T_repeat"))
    sch.compute_at(sch.get_block("T_add"), loop)
    check(sch, tiled_repeat_op_expected, rng)


def test_compute_at_simplify_static_bound(rng):
    """TVM: test_tir_schedule_compute_at.py::test_compute_at_simplify_static_bound."""
    sch = Schedule(static_bound)
    loop, _ = sch.get_loops(sch.get_block("C"))
    sch.compute_at(sch.get_block("B"), loop, preserve_unit_loops=True)
    check(sch, static_bound_expected, rng)


def test_compute_at_rev_iter(rng):
    """TVM: test_tir_schedule_compute_at.py::test_compute_at_rev_iter."""
    sch = Schedule(rev_iter)
    loop = sch.get_loops(sch.get_block("b1"))[0]
    sch.compute_at(sch.get_block("b0"), loop)
    check(sch, rev_iter_expected, rng)


def test_compute_at_non_perfect_channel_group(rng):
    """TVM: test_tir_schedule_compute_at.py::test_compute_at_non_perfect_channel_group (TVM's extent 23 and binding c_o * 22 + ax0 (same values); we keep a T.where upper guard TVM proves away)."""
    sch = Schedule(grouped_channel_bias)
    loop = sch.get_loops(sch.get_block("compute"))[0]
    sch.compute_at(sch.get_block("init"), loop)
    check(sch, grouped_channel_bias_expected, rng)


def test_compute_at_to_index(rng):
    """TVM: test_tir_schedule_compute_at.py::test_compute_at_to_index (shapes scaled down (224 -> 24))."""
    sch = Schedule(multi_producers_conv)
    loop = sch.get_loops(sch.get_block("conv"))[0]
    sch.compute_at(sch.get_block("pad"), loop, index=-2)
    check(sch, multi_producers_conv_expected, rng)


def test_reverse_compute_at_to_index(rng):
    """TVM: test_tir_schedule_compute_at.py::test_reverse_compute_at_to_index."""
    sch = Schedule(to_index_main)
    loop = sch.get_loops(sch.get_block("B"))[2]
    sch.reverse_compute_at(sch.get_block("D"), loop, index=1)
    check(sch, to_index_main_expected, rng)


def test_reverse_compute_at_with_unit_loop(rng):
    """TVM: test_tir_schedule_compute_at.py::test_reverse_compute_at_with_unit_loop (int32 instead of int64 loops)."""
    sch = Schedule(unit_loop_main)
    loop = sch.get_loops(sch.get_block("B"))[2]
    sch.reverse_compute_at(sch.get_block("D"), loop, preserve_unit_loops=True, index=1)
    check(sch, unit_loop_main_expected, rng)


def test_reverse_compute_at_layout_trans(rng):
    """TVM: test_tir_schedule_compute_at.py::test_reverse_compute_at_layout_trans."""
    sch = Schedule(layout_trans)
    loop = sch.get_loops(sch.get_block("compute"))[1]
    sch.reverse_compute_at(sch.get_block("T_layout_trans"), loop)
    check(sch, layout_trans_expected, rng)


def test_compute_at_sliced_concatenate(rng):
    """TVM: test_tir_schedule_compute_at.py::test_compute_at_sliced_concatenate (spatial shapes scaled down (28x64 -> 4x8); Y and Z, never written in the TVM fixture, are inputs and the slice writes an output, so the numbers can be checked)."""
    sch = Schedule(sliced_concatenate)
    loop = sch.get_loops(sch.get_block("T_strided_slice"))[0]
    sch.compute_at(sch.get_block("T_concat"), loop)
    sch.compute_at(sch.get_block("compute"), loop)
    check(sch, sliced_concatenate_expected, rng)


def test_fail_subtree_complete_block():
    """TVM: test_tir_schedule_compute_at.py::test_fail_subtree_complete_block (TVM: "not a
    complete block"; here the other writer of B is a dependence the move would break)."""
    sch = Schedule(fail_subtree_compact_dataflow)
    loop, _ = sch.get_loops(sch.get_block("C"))
    raises_unchanged(sch, DependenceViolationError, sch.compute_at, sch.get_block("B_0"), loop)


def test_fail_loop_is_ancestor_of_block():
    """TVM: test_tir_schedule_compute_at.py::test_fail_loop_is_ancestor_of_block."""
    sch = Schedule(two_elementwise)
    loop, _ = sch.get_loops(sch.get_block("B"))
    raises_unchanged(sch, LoopContainsBlockError, sch.compute_at, sch.get_block("B"), loop)


def test_fail_output_block():
    """TVM: test_tir_schedule_compute_at.py::test_fail_output_block."""
    sch = Schedule(tiled)
    loop = sch.get_loops(sch.get_block("B"))[0]
    raises_unchanged(sch, OutputBlockError, sch.compute_at, sch.get_block("C"), loop)


def test_fail_all_consumers_under_loop():
    """TVM: test_tir_schedule_compute_at.py::test_fail_all_consumers_under_loop."""
    sch = Schedule(fail_all_consumers_under_loop)
    loop, _ = sch.get_loops(sch.get_block("C"))
    raises_unchanged(sch, NotAncestorOfConsumerError, sch.compute_at, sch.get_block("B"), loop)


def test_all_producers_under_loop_not_required(rng):
    """TVM: test_tir_schedule_compute_at.py::test_fail_all_producers_under_loop. A deliberate
    difference: TVM requires every producer under the loop; B is complete before the loop,
    so D may run inside it (it reads B whole and C's row). Checked by numbers."""
    sch = Schedule(fail_all_producers_under_loop)
    loop, _ = sch.get_loops(sch.get_block("C"))
    sch.reverse_compute_at(sch.get_block("D"), loop)
    check(sch, fail_all_producers_under_loop_expected, rng)


@pytest.mark.parametrize("index", [2, 5])
def test_compute_at_index_out_of_range(index):
    """TVM: test_tir_schedule_compute_at.py::test_compute_at_to_index (an index outside
    (last producer, first consumer]: TVM's InternalError, our InsertionIndexError)."""
    sch = Schedule(multi_producers_conv)
    loop = sch.get_loops(sch.get_block("conv"))[0]
    err = raises_unchanged(
        sch, InsertionIndexError, sch.compute_at, sch.get_block("pad"), loop, index=index
    )
    assert err.message == f"index {index} is not a valid position for block 'pad' in loop 'i0_2'"


def test_compute_at_index_in_trace():
    """TVM: test_tir_schedule_compute_at.py::test_compute_at_to_index (the trace)."""
    sch = Schedule(multi_producers_conv)
    loop = sch.get_loops(sch.get_block("conv"))[0]
    sch.compute_at(sch.get_block("pad"), loop, index=0)
    last = str(sch.trace).splitlines()[-1]
    assert last.startswith("sch.compute_at(b") and last.endswith(", l1, index=0)")
    assert Trace.from_json(sch.trace.to_json()).apply(multi_producers_conv).mod == sch.mod
