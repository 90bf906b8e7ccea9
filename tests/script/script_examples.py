"""DSL functions shared by the script tests: one per feature the printer must round-trip."""

from workbench import T

M = N = K = 16


@T.prim_func
def matmul(A: T.Buffer((M, K), "float32"), B: T.Buffer((K, N), "float32"),
           C: T.Buffer((M, N), "float32")):
    for i, j, k in T.grid(M, N, K):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


@T.prim_func
def add_relu(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32"),
             C: T.Buffer((64,), "float32")):
    T_add = T.alloc_buffer((64,), "float32")
    for i0 in T.serial(64):
        with T.block("T_add"):
            v0 = T.axis.spatial(64, i0)
            T_add[v0] = A[v0] + B[v0]
    for i1 in T.serial(64):
        with T.block("C"):
            v1 = T.axis.spatial(64, i1)
            C[v1] = T.max(T_add[v1], 0.0)


@T.prim_func
def conv2d(X: T.Buffer((1, 4, 10, 10), "float32"), W: T.Buffer((8, 4, 3, 3), "float32"),
           Y: T.Buffer((1, 8, 8, 8), "float32")):
    for n, co, h, w, ci, rh, rw in T.grid(1, 8, 8, 8, 4, 3, 3):
        with T.block("conv"):
            vn, vco, vh, vw, vci, vrh, vrw = T.axis.remap("SSSSRRR", [n, co, h, w, ci, rh, rw])
            with T.init():
                Y[vn, vco, vh, vw] = T.float32(0)
            Y[vn, vco, vh, vw] += X[vn, vci, vh + vrh, vw + vrw] * W[vco, vci, vrh, vrw]


@T.prim_func
def softmax(A: T.Buffer((8, 32), "float32"), B: T.Buffer((8, 32), "float32")):
    row_max = T.alloc_buffer((8,), "float32")
    row_sum = T.alloc_buffer((8,), "float32")
    for i, k in T.grid(8, 32):
        with T.block("row_max"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                row_max[vi] = T.float32("-inf")
            row_max[vi] = T.max(row_max[vi], A[vi, vk])
    for i, k in T.grid(8, 32):
        with T.block("row_sum"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                row_sum[vi] = T.float32(0)
            row_sum[vi] = row_sum[vi] + T.exp(A[vi, vk] - row_max[vi])
    for i, j in T.grid(8, 32):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = T.exp(A[vi, vj] - row_max[vi]) / row_sum[vi]


@T.prim_func
def loop_kinds(A: T.Buffer((64, 8), "float32"), B: T.Buffer((64, 8), "float32")):
    for i_0 in T.parallel(4):
        for i_1 in T.unroll(16, annotations={"pragma_unroll_explicit": 1}):
            for j in T.vectorized(8):
                with T.block("B"):
                    vi = T.axis.spatial(64, i_0 * 16 + i_1)
                    vj = T.axis.spatial(8, j)
                    B[vi, vj] = A[vi, vj] * 2.0
    for bx in T.thread_binding(4, thread="blockIdx.x"):
        for tx in T.thread_binding(16, thread="threadIdx.x"):
            for jj in T.serial(2, 6):
                with T.block("B2"):
                    vi2 = T.axis.spatial(64, bx * 16 + tx)
                    vj2 = T.axis.spatial((2, 6), jj)
                    B[vi2, vj2] = B[vi2, vj2] + 1.0


@T.prim_func
def guarded(A: T.Buffer((30,), "float16"), B: T.Buffer((30,), "float32"),
            C: T.Buffer((30,), "int32")):
    for i_0, i_1 in T.grid(4, 8):
        with T.block("B"):
            vi = T.axis.spatial(30, i_0 * 8 + i_1)
            T.where(i_0 * 8 + i_1 < 30)
            T.reads(A[vi])
            T.writes(B[vi])
            T.block_attr({"meta_schedule.tiling": "SSR", "level": 2})
            if vi % 2 == 0 and not vi < 4:
                B[vi] = T.Cast("float32", A[vi] * 2.0) + T.sqrt(T.float32(2))
            elif vi > 20 or vi == 5:
                B[vi] = T.if_then_else(vi < 25, T.exp(-T.Cast("float32", A[vi])), T.float32(-1.5))
            else:
                B[vi] = T.sigmoid(T.tanh(T.Cast("float32", vi // 3))) - T.pow(T.float32(2), 0.5)
    for i in T.serial(30):
        with T.block("C"):
            vi = T.axis.spatial(30, i)
            C[vi] = T.min(T.abs(vi - 15), T.floordiv(vi, 4) * T.floormod(vi, 3)) + T.int32(1)


@T.prim_func
def nested_blocks(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32")):
    for i_0 in T.serial(4):
        with T.block("outer"):
            vi_o = T.axis.spatial(4, i_0)
            T.reads(A[vi_o * 4:vi_o * 4 + 4, 0:16])
            T.writes(B[vi_o * 4:vi_o * 4 + 4, 0:16])
            local = T.alloc_buffer((4, 16), "float32", scope="local")
            for i_1, j in T.grid(4, 16):
                with T.block("load"):
                    vi, vj = T.axis.remap("SS", [i_1, j])
                    local[vi, vj] = A[vi_o * 4 + vi, vj]
            for i_1, j in T.grid(4, 16):
                with T.block("store"):
                    vi, vj = T.axis.remap("SS", [i_1, j])
                    B[vi_o * 4 + vi, vj] = local[vi, vj] + T.log(T.float32(3))


@T.prim_func
def stencil(A: T.Buffer((32,), "float64"), B: T.Buffer((32,), "float64")):
    for i in T.serial(1, 31):
        with T.block("B"):
            vi = T.axis.spatial((1, 31), i)
            T.reads(A[vi - 1:vi + 2])
            T.writes(B[vi])
            B[vi] = (A[vi - 1] + A[vi] + A[vi + 1]) / 3.0


ALL = {
    "matmul": matmul, "add_relu": add_relu, "conv2d": conv2d, "softmax": softmax,
    "loop_kinds": loop_kinds, "guarded": guarded, "nested_blocks": nested_blocks,
    "stencil": stencil,
}
