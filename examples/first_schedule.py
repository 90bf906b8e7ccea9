"""The README's first schedule, as a script: ``python examples/first_schedule.py``.

The DSL reads the decorated function's source, so the operator must live in a file (a script,
a module or a notebook cell), not be typed line by line into a plain ``python`` REPL.
"""

import numpy as np

import workbench as wb
from workbench import T

M = N = K = 512


@T.prim_func
def matmul(A: T.Buffer((M, K), "float32"), B: T.Buffer((K, N), "float32"),
           C: T.Buffer((M, N), "float32")):
    for i, j, k in T.grid(M, N, K):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


def main() -> None:
    print(matmul.script())                                  # TVMScript-like text
    assert wb.from_source(matmul.script()).same_as(matmul)  # structural round trip

    sch = wb.Schedule(matmul)
    blk = sch.get_block("C")
    i, j, k = sch.get_loops(blk)
    io, ii = sch.split(i, factors=[None, 32])
    jo, ji = sch.split(j, factors=[None, 64])
    sch.reorder(io, jo, k, ii, ji)
    sch.parallel(io)
    sch.vectorize(ji)
    sch.unroll(ii)
    sch.mod.show()                          # the scheduled function
    print(sch.trace)                        # replayable: wb.Trace.from_json(...).apply(matmul)

    kernel = wb.build(sch, target="cpu")    # "numpy" (the reference) or "cpu" (Numba)
    rng = np.random.default_rng(0)
    a, b = (rng.random((M, K), dtype=np.float32) for _ in range(2))
    c = np.empty((M, N), "float32")
    kernel(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4)         # correct before fast
    print(kernel.source)                    # the generated Numba source
    res = wb.measure(kernel, a, b, c)       # median latency, GFLOP/s, GB/s, roofline point
    print(res)


if __name__ == "__main__":
    main()
