"""Elementwise (injective) operators over ``(M, N)`` tensors: add, multiply, relu, gelu,
a three-block chain, and transpose."""

from __future__ import annotations

from workbench import T
from workbench.ir.function import PrimFunc

_SQRT1_2 = 0.7071067811865476  # 1 / sqrt(2), for gelu


def add(M: int = 32, N: int = 32, dtype: str = "float32") -> PrimFunc:
    """``T_add = A + B`` (block ``T_add``).

    Example
    -------
    >>> [b.name for b in add(4, 4).params]
    ['A', 'B', 'T_add']
    """

    @T.prim_func
    def add(A: T.Buffer((M, N), dtype), B: T.Buffer((M, N), dtype),
            T_add: T.Buffer((M, N), dtype)):
        for i, j in T.grid(M, N):
            with T.block("T_add"):
                vi, vj = T.axis.remap("SS", [i, j])
                T_add[vi, vj] = A[vi, vj] + B[vi, vj]

    return add


def multiply(M: int = 32, N: int = 32, dtype: str = "float32") -> PrimFunc:
    """``T_multiply = A * B`` (block ``T_multiply``).

    Example
    -------
    >>> multiply(4, 4).params[-1].name
    'T_multiply'
    """

    @T.prim_func
    def multiply(A: T.Buffer((M, N), dtype), B: T.Buffer((M, N), dtype),
                 T_multiply: T.Buffer((M, N), dtype)):
        for i, j in T.grid(M, N):
            with T.block("T_multiply"):
                vi, vj = T.axis.remap("SS", [i, j])
                T_multiply[vi, vj] = A[vi, vj] * B[vi, vj]

    return multiply


def relu(M: int = 32, N: int = 32, dtype: str = "float32") -> PrimFunc:
    """``T_relu = max(A, 0)`` (block ``T_relu``).

    Example
    -------
    >>> relu(4, 4).params[-1].name
    'T_relu'
    """

    @T.prim_func
    def relu(A: T.Buffer((M, N), dtype), T_relu: T.Buffer((M, N), dtype)):
        for i, j in T.grid(M, N):
            with T.block("T_relu"):
                vi, vj = T.axis.remap("SS", [i, j])
                T_relu[vi, vj] = T.max(A[vi, vj], 0.0)

    return relu


def gelu(M: int = 32, N: int = 32, dtype: str = "float32") -> PrimFunc:
    """Exact GELU, ``0.5 * x * (1 + erf(x / sqrt(2)))`` (block ``T_gelu``).

    Example
    -------
    >>> gelu(4, 4).params[-1].name
    'T_gelu'
    """

    @T.prim_func
    def gelu(A: T.Buffer((M, N), dtype), T_gelu: T.Buffer((M, N), dtype)):
        for i, j in T.grid(M, N):
            with T.block("T_gelu"):
                vi, vj = T.axis.remap("SS", [i, j])
                T_gelu[vi, vj] = 0.5 * A[vi, vj] * (1.0 + T.erf(A[vi, vj] * _SQRT1_2))

    return gelu


def add_mul_gelu(M: int = 32, N: int = 32, dtype: str = "float32") -> PrimFunc:
    """An elementwise chain ``gelu((A + B) * C)`` as three blocks, ``T_add``,
    ``T_multiply`` and ``T_gelu``: the first two are what ``compute_inline`` removes.

    Example
    -------
    >>> [b.name for b in add_mul_gelu(4, 4).root_block.alloc_buffers]
    ['T_add', 'T_multiply']
    """

    @T.prim_func
    def add_mul_gelu(A: T.Buffer((M, N), dtype), B: T.Buffer((M, N), dtype),
                     C: T.Buffer((M, N), dtype), T_gelu: T.Buffer((M, N), dtype)):
        T_add = T.alloc_buffer((M, N), dtype)
        T_multiply = T.alloc_buffer((M, N), dtype)
        for i, j in T.grid(M, N):
            with T.block("T_add"):
                vi, vj = T.axis.remap("SS", [i, j])
                T_add[vi, vj] = A[vi, vj] + B[vi, vj]
        for i1, j1 in T.grid(M, N):
            with T.block("T_multiply"):
                vi1, vj1 = T.axis.remap("SS", [i1, j1])
                T_multiply[vi1, vj1] = T_add[vi1, vj1] * C[vi1, vj1]
        for i2, j2 in T.grid(M, N):
            with T.block("T_gelu"):
                vi2, vj2 = T.axis.remap("SS", [i2, j2])
                T_gelu[vi2, vj2] = 0.5 * T_multiply[vi2, vj2] * (
                    1.0 + T.erf(T_multiply[vi2, vj2] * _SQRT1_2))

    return add_mul_gelu


def transpose(M: int = 32, N: int = 64, dtype: str = "float32") -> PrimFunc:
    """``T_transpose[j, i] = A[i, j]`` (block ``T_transpose``): a pure layout change.

    Example
    -------
    >>> [b.shape for b in transpose(4, 8).params]
    [(4, 8), (8, 4)]
    """

    @T.prim_func
    def transpose(A: T.Buffer((M, N), dtype), T_transpose: T.Buffer((N, M), dtype)):
        for j, i in T.grid(N, M):
            with T.block("T_transpose"):
                vj, vi = T.axis.remap("SS", [j, i])
                T_transpose[vj, vi] = A[vi, vj]

    return transpose
