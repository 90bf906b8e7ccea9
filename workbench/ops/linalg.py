"""Linear algebra operators: matmul, batch_matmul, matmul + bias + relu.

Each factory takes shapes and a dtype and returns a ``PrimFunc`` written in the DSL;
the shapes reach the ``@T.prim_func`` body through the factory's closure.
"""

from __future__ import annotations

from workbench import T
from workbench.ir.function import PrimFunc


def matmul(M: int = 64, N: int = 64, K: int = 64, dtype: str = "float32") -> PrimFunc:
    """``C[i, j] = sum_k A[i, k] * B[k, j]``: one block ``"C"`` with a reduce axis.

    Example
    -------
    >>> from workbench.ir.analysis import flops
    >>> f = matmul(32, 16, 8)
    >>> [b.shape for b in f.params], flops(f) == 2 * 32 * 16 * 8
    ([(32, 8), (8, 16), (32, 16)], True)
    """

    @T.prim_func
    def matmul(A: T.Buffer((M, K), dtype), B: T.Buffer((K, N), dtype),
               C: T.Buffer((M, N), dtype)):
        for i, j, k in T.grid(M, N, K):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = 0.0
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    return matmul


def batch_matmul(batch: int = 2, M: int = 32, N: int = 32, K: int = 32,
                 dtype: str = "float32") -> PrimFunc:
    """``C[b, i, j] = sum_k A[b, i, k] * B[b, k, j]`` (block ``"C"``).

    Example
    -------
    >>> [b.shape for b in batch_matmul(4, 8, 16, 2).params]
    [(4, 8, 2), (4, 2, 16), (4, 8, 16)]
    """

    @T.prim_func
    def batch_matmul(A: T.Buffer((batch, M, K), dtype), B: T.Buffer((batch, K, N), dtype),
                     C: T.Buffer((batch, M, N), dtype)):
        for b, i, j, k in T.grid(batch, M, N, K):
            with T.block("C"):
                vb, vi, vj, vk = T.axis.remap("SSSR", [b, i, j, k])
                with T.init():
                    C[vb, vi, vj] = 0.0
                C[vb, vi, vj] = C[vb, vi, vj] + A[vb, vi, vk] * B[vb, vk, vj]

    return batch_matmul


def matmul_bias_relu(M: int = 64, N: int = 64, K: int = 64, dtype: str = "float32") -> PrimFunc:
    """``out = max(A @ B + bias, 0)`` as three blocks: ``"matmul"``, ``"T_add"``, ``"T_relu"``.

    The two elementwise blocks are the ones ``compute_inline`` /
    ``reverse_compute_inline`` fuse into the matmul.

    Example
    -------
    >>> [b.name for b in matmul_bias_relu(8, 8, 8).root_block.alloc_buffers]
    ['matmul', 'T_add']
    """

    @T.prim_func
    def matmul_bias_relu(A: T.Buffer((M, K), dtype), B: T.Buffer((K, N), dtype),
                         bias: T.Buffer((N,), dtype), out: T.Buffer((M, N), dtype)):
        matmul = T.alloc_buffer((M, N), dtype)
        T_add = T.alloc_buffer((M, N), dtype)
        for i, j, k in T.grid(M, N, K):
            with T.block("matmul"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    matmul[vi, vj] = 0.0
                matmul[vi, vj] = matmul[vi, vj] + A[vi, vk] * B[vk, vj]
        for i1, j1 in T.grid(M, N):
            with T.block("T_add"):
                vi1, vj1 = T.axis.remap("SS", [i1, j1])
                T_add[vi1, vj1] = matmul[vi1, vj1] + bias[vj1]
        for i2, j2 in T.grid(M, N):
            with T.block("T_relu"):
                vi2, vj2 = T.axis.remap("SS", [i2, j2])
                out[vi2, vj2] = T.max(T_add[vi2, vj2], 0.0)

    return matmul_bias_relu
