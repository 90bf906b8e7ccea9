"""Hand-built *scheduled* IR for the backend tests (independent of workbench.schedule).

Each function returns a PrimFunc shaped like what a schedule would produce, together with
a plain-numpy ``expected(*inputs)`` where useful.
"""

from __future__ import annotations

import numpy as np

from workbench.ir import (
    EQ,
    GT,
    LT,
    TRUE,
    Add,
    And,
    Block,
    BlockRealize,
    Buffer,
    BufferLoad,
    BufferStore,
    Call,
    Cast,
    FloatImm,
    FloorMod,
    For,
    ForKind,
    IfThenElse,
    IntImm,
    IterKind,
    IterVar,
    Max,
    Mul,
    PrimFunc,
    Range,
    Select,
    Var,
    seq,
)
from workbench.ir.regions import block_access_regions


def _root(body, alloc=()):
    return BlockRealize((), TRUE, Block("root", (), (), (), body, None, tuple(alloc)))


def _block(name, iter_vars, body, init=None, alloc=()):
    reads, writes = block_access_regions(body, init)
    return Block(name, tuple(iter_vars), reads, writes, body, init, tuple(alloc))


def _iv(name, extent, kind=IterKind.SPATIAL):
    return IterVar(Var(name), Range(IntImm(0), IntImm(extent)), kind)


def _loops(loops, body):
    """``loops`` outermost first: (var, extent, kind)."""
    for var, extent, kind in reversed(loops):
        body = For(var, IntImm(0), IntImm(extent), kind, body)
    return body


def tiled_matmul(
    M=16,
    N=32,
    K=8,
    ti=4,
    tj=8,
    *,
    outer=ForKind.SERIAL,
    inner_i=ForKind.SERIAL,
    inner_j=ForKind.SERIAL,
    name="matmul",
):
    """matmul with i and j split (i_0, j_0, k, i_1, j_1), guarded when a split is imperfect.

    vi = i_0 * ti + i_1, vj = j_0 * tj + j_1; the predicate is added when ti does not
    divide M or tj does not divide N.
    """
    A, B, C = Buffer("A", (M, K)), Buffer("B", (K, N)), Buffer("C", (M, N))
    vi, vj, vk = _iv("vi", M), _iv("vj", N), _iv("vk", K, IterKind.REDUCE)
    i_0, i_1, j_0, j_1, k = (Var(n) for n in ("i_0", "i_1", "j_0", "j_1", "k"))
    ci, cj, ck = vi.var, vj.var, vk.var
    update = BufferStore(
        C,
        Add(BufferLoad(C, (ci, cj)), Mul(BufferLoad(A, (ci, ck)), BufferLoad(B, (ck, cj)))),
        (ci, cj),
    )
    init = BufferStore(C, FloatImm(0.0), (ci, cj))
    block = _block("C", (vi, vj, vk), update, init)
    bind_i, bind_j = i_0 * ti + i_1, j_0 * tj + j_1
    clauses = ([LT(bind_i, IntImm(M))] if M % ti else []) + (
        [LT(bind_j, IntImm(N))] if N % tj else []
    )
    predicate = TRUE if not clauses else clauses[0] if len(clauses) == 1 else And(*clauses)
    realize = BlockRealize((bind_i, bind_j, k), predicate, block)
    loops = [
        (i_0, -(-M // ti), outer),
        (j_0, -(-N // tj), ForKind.SERIAL),
        (k, K, ForKind.SERIAL),
        (i_1, ti, inner_i),
        (j_1, tj, inner_j),
    ]
    return PrimFunc(name, (A, B, C), _root(_loops(loops, realize)))


def local_intermediate(M=8, N=16):
    """Per-row scratch in a ``local`` buffer under a parallel loop.

    for i in parallel(M):
        for j in range(N): block T: T_local[vj] = A[vi, vj] * 2
        for j2 in range(N): block C: C[vi, vj] = T_local[vj] + T_local[N - 1 - vj]
    """
    A, C = Buffer("A", (M, N)), Buffer("C", (M, N))
    scratch = Buffer("T_local", (N,), scope="local")
    i, j, j2 = Var("i"), Var("j"), Var("j2")
    vi, vj = _iv("vi", M), _iv("vj", N)
    vi2, vj2 = _iv("vi2", M), _iv("vj2", N)
    produce = _block(
        "T",
        (vi, vj),
        BufferStore(scratch, Mul(BufferLoad(A, (vi.var, vj.var)), FloatImm(2.0)), (vj.var,)),
    )
    mirrored = IntImm(N - 1) - vj2.var
    consume = _block(
        "C",
        (vi2, vj2),
        BufferStore(
            C,
            Add(BufferLoad(scratch, (vj2.var,)), BufferLoad(scratch, (mirrored,))),
            (vi2.var, vj2.var),
        ),
    )
    body = seq(
        For(j, IntImm(0), IntImm(N), ForKind.SERIAL, BlockRealize((i, j), TRUE, produce)),
        For(j2, IntImm(0), IntImm(N), ForKind.SERIAL, BlockRealize((i, j2), TRUE, consume)),
    )
    func = PrimFunc(
        "local_scratch",
        (A, C),
        _root(For(i, IntImm(0), IntImm(M), ForKind.PARALLEL, body), alloc=(scratch,)),
    )

    def expected(a):
        t = a * 2
        return t + t[:, ::-1]

    return func, expected


def branches(N=32):
    """An IfThenElse statement and a Select expression in one block.

    B[v] = A[v] if v % 2 == 0 else -A[v]  (as an IfThenElse)
    D[v] = Select(A[v] > 0, A[v], 0.5 * A[v])
    """
    A, B, D = Buffer("A", (N,)), Buffer("B", (N,)), Buffer("D", (N,))
    v = _iv("v", N)
    x = BufferLoad(A, (v.var,))
    branch = IfThenElse(
        EQ(FloorMod(v.var, IntImm(2)), IntImm(0)),
        BufferStore(B, x, (v.var,)),
        BufferStore(B, Mul(x, FloatImm(-1.0)), (v.var,)),
    )
    i, i2 = Var("i"), Var("i2")
    v2 = _iv("v2", N)
    leaky = BufferStore(
        D,
        Select(
            GT(BufferLoad(A, (v2.var,)), FloatImm(0.0)),
            BufferLoad(A, (v2.var,)),
            Mul(FloatImm(0.5), BufferLoad(A, (v2.var,))),
        ),
        (v2.var,),
    )
    body = seq(
        For(
            i,
            IntImm(0),
            IntImm(N),
            ForKind.SERIAL,
            BlockRealize((i,), TRUE, _block("B", (v,), branch)),
        ),
        For(
            i2,
            IntImm(0),
            IntImm(N),
            ForKind.VECTORIZED,
            BlockRealize((i2,), TRUE, _block("D", (v2,), leaky)),
        ),
    )
    func = PrimFunc("branches", (A, B, D), _root(body))

    def expected(a):
        sign = np.where(np.arange(N) % 2 == 0, 1, -1).astype("float32")
        return a * sign, np.where(a > 0, a, np.float32(0.5) * a)

    return func, expected


INTRINSIC_OUTPUTS = ("exp", "sqrt", "tanh", "erf", "sigmoid", "pow", "abs", "log", "rsqrt")


def intrinsics(N=64):
    """One block per intrinsic (A > 0 for log, sqrt, rsqrt, pow), plus casts.

    O_<op>[v] = op(A[v]) (pow: A[v] ** 1.5), I_cast[v] = int32(A[v] * 10),
    F_cast[v] = float32(I_cast[v]) * 0.5
    """
    A = Buffer("A", (N,))
    outputs = {op: Buffer(f"O_{op}", (N,)) for op in INTRINSIC_OUTPUTS}
    as_int, back = Buffer("I_cast", (N,), "int32"), Buffer("F_cast", (N,))
    stmts = []
    for n, op in enumerate(INTRINSIC_OUTPUTS):
        loop, iv = Var(f"i{n}"), _iv(f"v{n}", N)
        x = BufferLoad(A, (iv.var,))
        args = (x, FloatImm(1.5)) if op == "pow" else (x,)
        store = BufferStore(outputs[op], Call(op, args), (iv.var,))
        stmts.append(
            For(
                loop,
                IntImm(0),
                IntImm(N),
                ForKind.SERIAL,
                BlockRealize((loop,), TRUE, _block(f"O_{op}", (iv,), store)),
            )
        )
    loop, iv = Var("ic"), _iv("vc", N)
    to_int = BufferStore(
        as_int, Cast("int32", Mul(BufferLoad(A, (iv.var,)), FloatImm(10.0))), (iv.var,)
    )
    loop2, iv2 = Var("fc"), _iv("vf", N)
    to_float = BufferStore(
        back, Mul(Cast("float32", BufferLoad(as_int, (iv2.var,))), FloatImm(0.5)), (iv2.var,)
    )
    stmts.append(
        For(
            loop,
            IntImm(0),
            IntImm(N),
            ForKind.SERIAL,
            BlockRealize((loop,), TRUE, _block("I_cast", (iv,), to_int)),
        )
    )
    stmts.append(
        For(
            loop2,
            IntImm(0),
            IntImm(N),
            ForKind.SERIAL,
            BlockRealize((loop2,), TRUE, _block("F_cast", (iv2,), to_float)),
        )
    )
    params = (A,) + tuple(outputs.values()) + (as_int, back)
    return PrimFunc("intrinsics", params, _root(seq(*stmts)))


def row_max(M=8, N=32):
    """A max reduction: R[vi] = max(R[vi], A[vi, vk]) with init -inf."""
    A, R = Buffer("A", (M, N)), Buffer("R", (M,))
    vi, vk = _iv("vi", M), _iv("vk", N, IterKind.REDUCE)
    update = BufferStore(
        R, Max(BufferLoad(R, (vi.var,)), BufferLoad(A, (vi.var, vk.var))), (vi.var,)
    )
    init = BufferStore(R, FloatImm(float("-inf")), (vi.var,))
    i, k = Var("i"), Var("k")
    realize = BlockRealize((i, k), TRUE, _block("R", (vi, vk), update, init))
    return PrimFunc(
        "row_max", (A, R), _root(_loops([(i, M, ForKind.SERIAL), (k, N, ForKind.SERIAL)], realize))
    )


def split_elementwise(N=30, factor=8, kind=ForKind.UNROLLED):
    """B[v] = A[v] * 3 + 1 with v split by ``factor`` (imperfect when it does not divide N)."""
    A, B = Buffer("A", (N,)), Buffer("B", (N,))
    v = _iv("v", N)
    store = BufferStore(
        B, Add(Mul(BufferLoad(A, (v.var,)), FloatImm(3.0)), FloatImm(1.0)), (v.var,)
    )
    i_0, i_1 = Var("i_0"), Var("i_1")
    binding = i_0 * factor + i_1
    predicate = LT(binding, IntImm(N)) if N % factor else TRUE
    realize = BlockRealize((binding,), predicate, _block("B", (v,), store))
    body = _loops([(i_0, -(-N // factor), ForKind.SERIAL), (i_1, factor, kind)], realize)
    return PrimFunc("scale", (A, B), _root(body))
