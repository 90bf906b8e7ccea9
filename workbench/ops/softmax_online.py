"""Softmax rewritten for one reduction pass: the online softmax, in one lane or many.

These are *operators* (what is computed), algebraic rewrites of ``ops.softmax`` that no
schedule primitive can produce: ``online_softmax`` keeps a running max and a rescaled
running sum per row; ``online_softmax_lanes`` runs that online reduction in independent
lanes and combines them. How to schedule them is in ``workbench.recipes.softmax``; the
step-by-step walk-through from three passes to one is
``workbench.recipes.softmax_lowering.softmax_lowering_steps``.
"""

from __future__ import annotations

import numpy as np

from workbench import T
from workbench.ir.function import PrimFunc

LANE_BYTES = 64
"""Bytes of partial results per row of ``online_softmax_lanes`` by default: one cache line."""

LOWEST_FLOAT32 = float(np.finfo(np.float32).min)
"""The most negative finite float32: the init of the lane maxima, in place of ``-inf``.

CPU kernels compile with ``fastmath``, under which LLVM may assume no value is infinite; an
online update computing ``exp(-inf - x)`` then has undefined behaviour (a 16-lane kernel with
a ``-inf`` init crashed). From the lowest finite value the first rescaling factor is
``exp(LOWEST - x) = 0`` exactly as from ``-inf``, for every finite input."""


def online_softmax(M: int = 32, N: int = 64, dtype: str = "float32") -> PrimFunc:
    """Row softmax with one reduction pass: a running max and a rescaled running sum.

    Block ``online_max_sum`` visits each ``x = A[i, k]`` once and keeps ``m`` (the max so
    far) and ``s`` (the sum of ``exp(x' - m)`` so far). When ``x`` raises the max to
    ``m' = max(m, x)``, the old sum is rescaled: ``s' = s * exp(m - m') + exp(x - m')``.
    ``T_softmax_norm`` then writes ``exp(A - m) / s``. This is an algebraic rewrite of
    ``ops.softmax``, not a schedule of it: no primitive turns two reductions into one.

    Example
    -------
    >>> from workbench.ir.analysis import find_blocks
    >>> [b.name for b in find_blocks(online_softmax(4, 8))]
    ['online_max_sum', 'T_softmax_norm']
    """
    neg_inf = float("-inf")

    @T.prim_func
    def online_softmax(A: T.Buffer((M, N), dtype), T_softmax_norm: T.Buffer((M, N), dtype)):
        running_max = T.alloc_buffer((M,), dtype)
        running_sum = T.alloc_buffer((M,), dtype)
        for i, k in T.grid(M, N):
            with T.block("online_max_sum"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    running_max[vi] = neg_inf
                    running_sum[vi] = 0.0
                running_sum[vi] = running_sum[vi] * T.exp(
                    running_max[vi] - T.max(running_max[vi], A[vi, vk])) + T.exp(
                    A[vi, vk] - T.max(running_max[vi], A[vi, vk]))
                running_max[vi] = T.max(running_max[vi], A[vi, vk])
        for i1, j1 in T.grid(M, N):
            with T.block("T_softmax_norm"):
                vi1, vj1 = T.axis.remap("SS", [i1, j1])
                T_softmax_norm[vi1, vj1] = T.exp(A[vi1, vj1] - running_max[vi1]) / running_sum[vi1]

    return online_softmax


def online_softmax_lanes(M: int = 32, N: int = 64, lanes: int | None = None,
                         dtype: str = "float32") -> PrimFunc:
    """Row softmax with the online reduction run in ``lanes`` independent lanes per row.

    Each row is read as ``N // lanes`` chunks of ``lanes`` elements; lane ``l`` keeps its
    own running max ``m[i, l]`` and rescaled sum ``d[i, l]`` over the elements
    ``A[i, k0 * lanes + l]`` (block ``lane_max_sum``, the same update as
    ``online_softmax``). Then the lanes are combined: ``row_max`` is ``max_l m[i, l]`` and
    ``row_sum`` is ``sum_l d[i, l] * exp(m[i, l] - row_max)`` (each lane's sum rescaled to
    the row max), and ``T_softmax_norm`` writes ``exp(A - row_max) / row_sum``. The lane
    loop is innermost and its iterations touch different ``(m, d)`` pairs, so it can be
    vectorized (``workbench.recipes.softmax.online_lanes_cpu``). Like ``online_softmax`` this is an
    algebraic rewrite, not a schedule: ``rfactor`` cannot make it, because the online
    block stores two buffers.

    The maxima start at ``LOWEST_FLOAT32`` instead of ``-inf`` (see there: CPU kernels
    compile with ``fastmath``).

    Parameters
    ----------
    M, N : int
        Rows and row length; ``N`` must be a multiple of ``lanes``.
    lanes : int, optional
        Independent online reductions per row; default ``LANE_BYTES // itemsize`` (16
        float32: one 64-byte cache line, what ``reduction_lanes`` gives on AVX2 and AVX-512).
        An operator says what is computed, not for which machine: recipes pass their
        target's (``workbench.recipes.softmax_lowering``: ``target_reduction_lanes``).
    dtype : str
        Element type.

    Example
    -------
    >>> from workbench.ir.analysis import find_blocks
    >>> [b.name for b in find_blocks(online_softmax_lanes(4, 32, lanes=16))]
    ['lane_max_sum', 'row_max', 'row_sum', 'T_softmax_norm']
    """
    lanes = LANE_BYTES // np.dtype(dtype).itemsize if lanes is None else lanes
    if N % lanes:
        raise ValueError(f"online_softmax_lanes: N={N} must be a multiple of lanes={lanes}")
    lowest = LOWEST_FLOAT32
    chunks = N // lanes

    @T.prim_func
    def online_softmax_lanes(A: T.Buffer((M, N), dtype),
                             T_softmax_norm: T.Buffer((M, N), dtype)):
        lane_max = T.alloc_buffer((M, lanes), dtype)
        lane_sum = T.alloc_buffer((M, lanes), dtype)
        row_max = T.alloc_buffer((M,), dtype)
        row_sum = T.alloc_buffer((M,), dtype)
        for i, k0, l in T.grid(M, chunks, lanes):
            with T.block("lane_max_sum"):
                vi, vk0, vl = T.axis.remap("SRS", [i, k0, l])
                with T.init():
                    lane_max[vi, vl] = lowest
                    lane_sum[vi, vl] = 0.0
                lane_sum[vi, vl] = lane_sum[vi, vl] * T.exp(
                    lane_max[vi, vl] - T.max(lane_max[vi, vl], A[vi, vk0 * lanes + vl])) + T.exp(
                    A[vi, vk0 * lanes + vl] - T.max(lane_max[vi, vl], A[vi, vk0 * lanes + vl]))
                lane_max[vi, vl] = T.max(lane_max[vi, vl], A[vi, vk0 * lanes + vl])
        for i1, l1 in T.grid(M, lanes):
            with T.block("row_max"):
                vi1, vl1 = T.axis.remap("SR", [i1, l1])
                with T.init():
                    row_max[vi1] = lowest
                row_max[vi1] = T.max(row_max[vi1], lane_max[vi1, vl1])
        for i2, l2 in T.grid(M, lanes):
            with T.block("row_sum"):
                vi2, vl2 = T.axis.remap("SR", [i2, l2])
                with T.init():
                    row_sum[vi2] = 0.0
                row_sum[vi2] = row_sum[vi2] + lane_sum[vi2, vl2] * T.exp(
                    lane_max[vi2, vl2] - row_max[vi2])
        for i3, j3 in T.grid(M, N):
            with T.block("T_softmax_norm"):
                vi3, vj3 = T.axis.remap("SS", [i3, j3])
                T_softmax_norm[vi3, vj3] = T.exp(A[vi3, vj3] - row_max[vi3]) / row_sum[vi3]

    return online_softmax_lanes

