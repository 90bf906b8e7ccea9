"""DSL functions the reduction tests work on, including ill-formed reductions that rfactor
refuses (small sizes: numba compiles are slow)."""

from workbench import T


@T.prim_func
def sum_minus(A: T.Buffer((8, 12), "float32"), B: T.Buffer((8,), "float32")):
    for i, k in T.grid(8, 12):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] - A[vi, vk]


@T.prim_func
def scaled_sum(A: T.Buffer((8, 12), "float32"), B: T.Buffer((8,), "float32")):
    for i, k in T.grid(8, 12):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] * T.float32(2) + A[vi, vk]


@T.prim_func
def sum_from_one(A: T.Buffer((8, 12), "float32"), B: T.Buffer((8,), "float32")):
    for i, k in T.grid(8, 12):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(1)
            B[vi] = B[vi] + A[vi, vk]


@T.prim_func
def row_min(A: T.Buffer((8, 12), "float32"), B: T.Buffer((8,), "float32")):
    for i, k in T.grid(8, 12):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32("inf")
            B[vi] = T.min(A[vi, vk], B[vi])


@T.prim_func
def row_prod(A: T.Buffer((8, 12), "float32"), B: T.Buffer((8,), "float32")):
    for i, k in T.grid(8, 12):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(1)
            B[vi] = B[vi] * A[vi, vk]


@T.prim_func
def two_outputs(
    A: T.Buffer((8, 12), "float32"), B: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")
):
    for i, k in T.grid(8, 12):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
                C[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]
            C[vi] = C[vi] + A[vi, vk] * A[vi, vk]


@T.prim_func
def shared_reduce_loop(
    A: T.Buffer((8, 12), "float32"), B: T.Buffer((8,), "float32"), D: T.Buffer((8, 12), "float32")
):
    for i, k in T.grid(8, 12):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]
        with T.block("D"):
            vi, vk = T.axis.remap("SS", [i, k])
            D[vi, vk] = A[vi, vk] * T.float32(2)


@T.prim_func
def repeated_reduction(A: T.Buffer((8, 12), "float32"), B: T.Buffer((8,), "float32")):
    for i, k, r in T.grid(8, 12, 2):  # noqa: B007 (r binds nothing on purpose)
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]


@T.prim_func
def scatter_sum(A: T.Buffer((8, 12), "float32"), B: T.Buffer((12,), "float32")):
    for i, k in T.grid(8, 12):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vk] = T.float32(0)
            B[vk] = B[vk] + A[vi, vk]


@T.prim_func
def shared_spatial_loop(
    A: T.Buffer((8, 12), "float32"), B: T.Buffer((8,), "float32"), C: T.Buffer((8, 12), "float32")
):
    for i in T.serial(8):
        for k in T.serial(12):
            with T.block("B"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    B[vi] = T.float32(0)
                B[vi] = B[vi] + A[vi, vk]
        for j in T.serial(12):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = A[vi, vj] - B[vi]


@T.prim_func
def outer_reduce_loop_shared(
    A: T.Buffer((8, 12), "float32"), B: T.Buffer((8,), "float32"), D: T.Buffer((8, 3), "float32")
):
    for i, k_0 in T.grid(8, 3):
        for k_1 in T.serial(4):
            with T.block("B"):
                vi = T.axis.spatial(8, i)
                vk = T.axis.reduce(12, k_0 * 4 + k_1)
                with T.init():
                    B[vi] = T.float32(0)
                B[vi] = B[vi] + A[vi, vk]
        with T.block("D"):
            vi, vk0 = T.axis.remap("SS", [i, k_0])
            D[vi, vk0] = A[vi, vk0 * 4]
