"""Hand-built IR functions for tests that must not depend on the DSL parser.

Each mirrors what the DSL produces for the commented TVMScript.
"""

from workbench.ir import (
    TRUE,
    Add,
    Block,
    BlockRealize,
    Buffer,
    BufferLoad,
    BufferRegion,
    BufferStore,
    FloatImm,
    For,
    ForKind,
    IntImm,
    IterKind,
    IterVar,
    Max,
    PrimFunc,
    Range,
    Var,
    seq,
)


def _full(buf):
    return BufferRegion(buf, tuple(Range(IntImm(0), IntImm(n)) for n in buf.shape))


def _root(body, alloc=()):
    root = Block("root", (), (), (), body, None, tuple(alloc))
    return BlockRealize((), TRUE, root)


def matmul(M=16, N=16, K=16, dtype="float32"):
    """
    for i, j, k in T.grid(M, N, K):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
    """
    A, B, C = Buffer("A", (M, K), dtype), Buffer("B", (K, N), dtype), Buffer("C", (M, N), dtype)
    i, j, k = Var("i"), Var("j"), Var("k")
    vi, vj, vk = Var("vi"), Var("vj"), Var("vk")
    iter_vars = (
        IterVar(vi, Range(IntImm(0), IntImm(M)), IterKind.SPATIAL),
        IterVar(vj, Range(IntImm(0), IntImm(N)), IterKind.SPATIAL),
        IterVar(vk, Range(IntImm(0), IntImm(K)), IterKind.REDUCE),
    )
    update = BufferStore(C, Add(BufferLoad(C, (vi, vj)), BufferLoad(A, (vi, vk)) * BufferLoad(B, (vk, vj))), (vi, vj))
    init = BufferStore(C, FloatImm(0.0, dtype), (vi, vj))
    reads = (
        BufferRegion(C, (Range(vi, IntImm(1)), Range(vj, IntImm(1)))),
        BufferRegion(A, (Range(vi, IntImm(1)), Range(vk, IntImm(1)))),
        BufferRegion(B, (Range(vk, IntImm(1)), Range(vj, IntImm(1)))),
    )
    writes = (BufferRegion(C, (Range(vi, IntImm(1)), Range(vj, IntImm(1)))),)
    block = Block("C", iter_vars, reads, writes, update, init)
    nest = BlockRealize((i, j, k), TRUE, block)
    for var, extent in ((k, K), (j, N), (i, M)):
        nest = For(var, IntImm(0), IntImm(extent), ForKind.SERIAL, nest)
    return PrimFunc("matmul", (A, B, C), _root(nest))


def add_relu(N=64, dtype="float32"):
    """Two blocks through an intermediate: T = A + B ; C = max(T, 0)."""
    A, B, C = (Buffer(n, (N,), dtype) for n in "ABC")
    tmp = Buffer("T_add", (N,), dtype)
    i0, i1, v0, v1 = Var("i0"), Var("i1"), Var("v0"), Var("v1")

    def spatial(v):
        return (IterVar(v, Range(IntImm(0), IntImm(N)), IterKind.SPATIAL),)

    def point(buf, v):
        return BufferRegion(buf, (Range(v, IntImm(1)),))

    add = Block("T_add", spatial(v0), (point(A, v0), point(B, v0)), (point(tmp, v0),),
                BufferStore(tmp, Add(BufferLoad(A, (v0,)), BufferLoad(B, (v0,))), (v0,)))
    relu = Block("C", spatial(v1), (point(tmp, v1),), (point(C, v1),),
                 BufferStore(C, Max(BufferLoad(tmp, (v1,)), FloatImm(0.0, dtype)), (v1,)))
    body = seq(
        For(i0, IntImm(0), IntImm(N), ForKind.SERIAL, BlockRealize((i0,), TRUE, add)),
        For(i1, IntImm(0), IntImm(N), ForKind.SERIAL, BlockRealize((i1,), TRUE, relu)),
    )
    return PrimFunc("add_relu", (A, B, C), _root(body, alloc=(tmp,)))
