"""Neural-network row operators over a ``(M, N)`` input, normalising along the last axis:
softmax, layer normalisation, RMS normalisation."""

from __future__ import annotations

from workbench import T
from workbench.ir.function import PrimFunc


def softmax(M: int = 32, N: int = 64, dtype: str = "float32") -> PrimFunc:
    """Row softmax as in TVM's topi, three blocks:

    ``T_softmax_maxelem`` (row max), ``T_softmax_expsum`` (sum of ``exp(x - max)``) and
    ``T_softmax_norm`` (``exp(x - max) / expsum``). Subtracting the row max keeps ``exp``
    from overflowing.

    Example
    -------
    >>> from workbench.ir.analysis import find_blocks
    >>> [b.name for b in find_blocks(softmax(4, 8))]
    ['T_softmax_maxelem', 'T_softmax_expsum', 'T_softmax_norm']
    """
    neg_inf = float("-inf")

    @T.prim_func
    def softmax(A: T.Buffer((M, N), dtype), T_softmax_norm: T.Buffer((M, N), dtype)):
        T_softmax_maxelem = T.alloc_buffer((M,), dtype)
        T_softmax_expsum = T.alloc_buffer((M,), dtype)
        for i, k in T.grid(M, N):
            with T.block("T_softmax_maxelem"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    T_softmax_maxelem[vi] = neg_inf
                T_softmax_maxelem[vi] = T.max(T_softmax_maxelem[vi], A[vi, vk])
        for i1, k1 in T.grid(M, N):
            with T.block("T_softmax_expsum"):
                vi1, vk1 = T.axis.remap("SR", [i1, k1])
                with T.init():
                    T_softmax_expsum[vi1] = 0.0
                T_softmax_expsum[vi1] = T_softmax_expsum[vi1] + T.exp(
                    A[vi1, vk1] - T_softmax_maxelem[vi1])
        for i2, j2 in T.grid(M, N):
            with T.block("T_softmax_norm"):
                vi2, vj2 = T.axis.remap("SS", [i2, j2])
                T_softmax_norm[vi2, vj2] = T.exp(
                    A[vi2, vj2] - T_softmax_maxelem[vi2]) / T_softmax_expsum[vi2]

    return softmax


def layernorm(M: int = 32, N: int = 64, eps: float = 1e-5, dtype: str = "float32") -> PrimFunc:
    """Layer normalisation of each row, then ``* gamma + beta``; three blocks:

    ``mean_sum`` (row sum), ``var_sum`` (row sum of squared deviations from the mean) and
    ``T_layer_norm`` (``(x - mean) * rsqrt(var + eps) * gamma + beta``). The variance is
    the biased one (divided by ``N``), as in PyTorch.

    Example
    -------
    >>> [b.shape for b in layernorm(4, 8).params]
    [(4, 8), (8,), (8,), (4, 8)]
    """
    inv_n = 1.0 / N

    @T.prim_func
    def layernorm(A: T.Buffer((M, N), dtype), gamma: T.Buffer((N,), dtype),
                  beta: T.Buffer((N,), dtype), T_layer_norm: T.Buffer((M, N), dtype)):
        mean_sum = T.alloc_buffer((M,), dtype)
        var_sum = T.alloc_buffer((M,), dtype)
        for i, k in T.grid(M, N):
            with T.block("mean_sum"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    mean_sum[vi] = 0.0
                mean_sum[vi] = mean_sum[vi] + A[vi, vk]
        for i1, k1 in T.grid(M, N):
            with T.block("var_sum"):
                vi1, vk1 = T.axis.remap("SR", [i1, k1])
                with T.init():
                    var_sum[vi1] = 0.0
                var_sum[vi1] = var_sum[vi1] + (A[vi1, vk1] - mean_sum[vi1] * inv_n) * (
                    A[vi1, vk1] - mean_sum[vi1] * inv_n)
        for i2, j2 in T.grid(M, N):
            with T.block("T_layer_norm"):
                vi2, vj2 = T.axis.remap("SS", [i2, j2])
                T_layer_norm[vi2, vj2] = (A[vi2, vj2] - mean_sum[vi2] * inv_n) * T.rsqrt(
                    var_sum[vi2] * inv_n + eps) * gamma[vj2] + beta[vj2]

    return layernorm


def rmsnorm(M: int = 32, N: int = 64, eps: float = 1e-6, dtype: str = "float32") -> PrimFunc:
    """RMS normalisation of each row, then ``* gamma``; two blocks:

    ``sq_sum`` (row sum of squares) and ``T_rms_norm`` (``x * rsqrt(mean(x^2) + eps) * gamma``).

    Example
    -------
    >>> [b.shape for b in rmsnorm(4, 8).params]
    [(4, 8), (8,), (4, 8)]
    """
    inv_n = 1.0 / N

    @T.prim_func
    def rmsnorm(A: T.Buffer((M, N), dtype), gamma: T.Buffer((N,), dtype),
                T_rms_norm: T.Buffer((M, N), dtype)):
        sq_sum = T.alloc_buffer((M,), dtype)
        for i, k in T.grid(M, N):
            with T.block("sq_sum"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    sq_sum[vi] = 0.0
                sq_sum[vi] = sq_sum[vi] + A[vi, vk] * A[vi, vk]
        for i1, j1 in T.grid(M, N):
            with T.block("T_rms_norm"):
                vi1, vj1 = T.axis.remap("SS", [i1, j1])
                T_rms_norm[vi1, vj1] = A[vi1, vj1] * T.rsqrt(
                    sq_sum[vi1] * inv_n + eps) * gamma[vj1]

    return rmsnorm
