"""DSL functions the schedule tests work on (small sizes: numba compiles are slow)."""

from workbench import T


@T.prim_func
def matmul(
    A: T.Buffer((16, 16), "float32"),
    B: T.Buffer((16, 16), "float32"),
    C: T.Buffer((16, 16), "float32"),
):
    for i, j, k in T.grid(16, 16, 16):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


@T.prim_func
def elementwise(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    B = T.alloc_buffer((16, 16), "float32")
    for i, j in T.grid(16, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i_1, j_1 in T.grid(16, 16):
        with T.block("C"):
            vi_1, vj_1 = T.axis.remap("SS", [i_1, j_1])
            C[vi_1, vj_1] = B[vi_1, vj_1] + T.float32(1)


@T.prim_func
def scale(A: T.Buffer((100,), "float32"), B: T.Buffer((100,), "float32")):
    for i in T.serial(100):
        with T.block("B"):
            vi = T.axis.spatial(100, i)
            B[vi] = A[vi] * T.float32(2)


@T.prim_func
def scale2d(A: T.Buffer((16, 8), "float32"), B: T.Buffer((16, 8), "float32")):
    for i, j in T.grid(16, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)


@T.prim_func
def add_relu(
    A: T.Buffer((48,), "float32"), B: T.Buffer((48,), "float32"), C: T.Buffer((48,), "float32")
):
    T_add = T.alloc_buffer((48,), "float32")
    for i0 in T.serial(48):
        with T.block("T_add"):
            v0 = T.axis.spatial(48, i0)
            T_add[v0] = A[v0] + B[v0]
    for i1 in T.serial(48):
        with T.block("C"):
            v1 = T.axis.spatial(48, i1)
            C[v1] = T.max(T_add[v1], T.float32(0))


@T.prim_func
def row_sum(A: T.Buffer((8, 12), "float32"), B: T.Buffer((8,), "float32")):
    for i, k in T.grid(8, 12):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]


@T.prim_func
def two_stages(
    A: T.Buffer((8, 4), "float32"), B: T.Buffer((8, 4), "float32"), C: T.Buffer((8, 4), "float32")
):
    for i in T.serial(8):
        for j in T.serial(4):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] + T.float32(1)
        for j2 in T.serial(4):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j2])
                C[vi, vj] = B[vi, vj] * T.float32(2)


def triangle():
    """``for i in range(8): for j in range(i + 1)``: a loop whose extent is not constant
    (hand-built: the DSL only writes constant extents)."""
    from workbench.ir import (
        TRUE,
        Block,
        BlockRealize,
        Buffer,
        BufferLoad,
        BufferRegion,
        BufferStore,
        For,
        ForKind,
        IntImm,
        IterKind,
        IterVar,
        PrimFunc,
        Range,
        Var,
    )

    A, B = Buffer("A", (8, 8)), Buffer("B", (8, 8))
    i, j, vi, vj = Var("i"), Var("j"), Var("vi"), Var("vj")
    dom = Range(IntImm(0), IntImm(8))
    point = lambda buf: BufferRegion(buf, (Range(vi, IntImm(1)), Range(vj, IntImm(1))))  # noqa: E731
    block = Block(
        "B",
        (IterVar(vi, dom, IterKind.SPATIAL), IterVar(vj, dom, IterKind.SPATIAL)),
        (point(A),),
        (point(B),),
        BufferStore(B, BufferLoad(A, (vi, vj)), (vi, vj)),
    )
    nest = For(
        i,
        IntImm(0),
        IntImm(8),
        ForKind.SERIAL,
        For(j, IntImm(0), i + 1, ForKind.SERIAL, BlockRealize((i, j), TRUE, block)),
    )
    root = Block("root", (), (), (), nest)
    return PrimFunc("triangle", (A, B), BlockRealize((), TRUE, root))
