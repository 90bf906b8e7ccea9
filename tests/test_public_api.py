"""The public API snippet of DESIGN.md, end to end (at a small size)."""

import numpy as np

import workbench as wb
from workbench import T

M = N = K = 64


@T.prim_func
def matmul(A: T.Buffer((M, K), "float32"), B: T.Buffer((K, N), "float32"),
           C: T.Buffer((M, N), "float32")):
    for i, j, k in T.grid(M, N, K):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


def test_design_snippet_end_to_end(capsys):
    assert isinstance(matmul, wb.PrimFunc)
    assert wb.from_source(matmul.script()).same_as(matmul)

    sch = wb.Schedule(matmul)
    blk = sch.get_block("C")
    i, j, k = sch.get_loops(blk)
    io, ii = sch.split(i, factors=[None, 32])
    jo, ji = sch.split(j, factors=[None, 64])
    sch.reorder(io, jo, k, ii, ji)
    sch.parallel(io)
    sch.vectorize(ji)
    sch.unroll(ii)
    sch.mod.show()
    shown = capsys.readouterr().out
    assert "T.parallel(2)" in shown and "T.vectorized(64)" in shown and "T.unroll(32)" in shown

    replayed = wb.Trace.from_json(sch.trace.to_json()).apply(matmul)
    assert replayed.mod == sch.mod
    assert str(sch.trace).splitlines()[0] == 'b0 = sch.get_block("C")'

    rng = np.random.default_rng(1)
    a, b = (rng.random((M, K), dtype=np.float32) for _ in range(2))
    expected = a @ b
    for target in ("numpy", "cpu"):
        kernel = wb.build(sch, target=target)
        c = np.empty((M, N), "float32")
        kernel(a, b, c)
        np.testing.assert_allclose(c, expected, rtol=1e-4, atol=1e-4)
    assert "prange" in kernel.source

    res = wb.measure(kernel, a, b, c, budget_s=0.05, min_repeats=3)
    assert res.flops == 2 * M * N * K
    assert res.median_s > 0 and res.gflops > 0
    assert len(res.to_frame()) == 1
