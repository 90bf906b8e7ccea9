"""A matmul whose ``B`` is packed in column panels (the CPU's layout for a constant weight).

``matmul_packed``: ``C[i, j] = sum_k A[i, k] * B[j // tj, k, j % tj]``, ``B`` the ``(K, N)``
weight as ``(N // tj, K, tj)`` (``pack_columns``, once, at compile time): the ``tj`` columns
a register tile computes are contiguous along ``k``, so the tile streams its panel from memory
in order. The ``packed`` matmul recipe (``recipes.matmul.packed_cpu``) copies B into the same
panels on every call; with the weight a graph constant the copy is done once
(``graph.passes.pack_matmul``).
"""

from __future__ import annotations

import numpy as np

from workbench import T
from workbench.ir.function import PrimFunc


def pack_columns(weight: np.ndarray, tj: int) -> np.ndarray:
    """``(K, N)`` as ``(N // tj, K, tj)`` panels (``N`` a multiple of ``tj``).

    Example
    -------
    >>> w = np.arange(8).reshape(2, 4)         # K = 2 rows, N = 4 columns
    >>> pack_columns(w, 2)[1].tolist()          # the second panel: columns 2 and 3
    [[2, 3], [6, 7]]
    """
    K, N = weight.shape
    if N % tj:
        raise ValueError(f"pack_columns: {N} columns are not a multiple of tj={tj}")
    return np.ascontiguousarray(weight.reshape(K, N // tj, tj).transpose(1, 0, 2))


def unpack_columns(packed: np.ndarray) -> np.ndarray:
    """The ``(K, N)`` weight ``pack_columns`` packed.

    Example
    -------
    >>> w = np.arange(12.0).reshape(3, 4)
    >>> bool((unpack_columns(pack_columns(w, 2)) == w).all())
    True
    """
    NB, K, tj = packed.shape
    return packed.transpose(1, 0, 2).reshape(K, NB * tj)


def matmul_packed(M: int = 64, N: int = 64, K: int = 64, tj: int = 16,
                  dtype: str = "float32") -> PrimFunc:
    """``C[i, j] = sum_k A[i, k] * B[j // tj, k, j % tj]`` over ``(j0, i, j1, k)``, column
    ``j0 * tj + j1``: one block ``"C"`` (four iterators: ``ops.matmul``'s has three).

    Example
    -------
    >>> [b.shape for b in matmul_packed(8, 32, 4, tj=16).params]
    [(8, 4), (2, 4, 16), (8, 32)]
    """
    if N % tj:
        raise ValueError(f"matmul_packed: {N} columns are not a multiple of tj={tj}")
    NB = N // tj

    @T.prim_func
    def matmul_packed(A: T.Buffer((M, K), dtype), B: T.Buffer((NB, K, tj), dtype),
                      C: T.Buffer((M, N), dtype)):
        for j0, i, j1, k in T.grid(NB, M, tj, K):
            with T.block("C"):
                vj0, vi, vj1, vk = T.axis.remap("SSSR", [j0, i, j1, k])
                with T.init():
                    C[vi, vj0 * tj + vj1] = 0.0
                C[vi, vj0 * tj + vj1] = C[vi, vj0 * tj + vj1] + A[vi, vk] * B[vj0, vk, vj1]

    return matmul_packed


__all__ = ["matmul_packed", "pack_columns", "unpack_columns"]
