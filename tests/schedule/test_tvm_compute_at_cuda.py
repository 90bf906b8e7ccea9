"""TVM's CUDA matmul compute_at cases, re-expressed in the DSL.

Source: apache/tvm tests/python/s_tir/schedule/test_tir_schedule_compute_at.py
(``cuda_matmul_0`` ... ``cuda_matmul_5``, ``test_compute_at_cuda_matmul_0..4``). Changes: 64x64
matrices instead of 2048x2048 (so the numbers can be checked), and no ``vthread`` loops
(the DSL has no virtual threads: TVM's ``vy * 32 + ty * 4`` with ``vy < 2, ty < 8`` is
``ty * 4`` with ``ty < 8`` over a 32-wide block tile). What the cases check is kept: a
``local`` stage computed under the thread loops covers one thread's elements, a ``shared``
stage covers the whole block's tile (the ``threadIdx`` loops are relaxed for shared
storage, as TVM's ``CanRelaxStorageUnderThread``).

Each case checks the structure (``same_as`` the expected function), that the trace replays
from JSON, and the numbers (``cpu`` build vs ``A.T @ B``); the final schedule, with the
shared copies made cooperative (fused, split over the block's threads, vectorized by 4),
runs under the CUDA simulator.
"""

# ruff: noqa: B007  (the DSL functions keep TVM's unit loop, unused in its body)

import numpy as np
import pytest

from workbench import T
from workbench.backends import build
from workbench.schedule import Schedule, Trace

# ---------------------------------------------------------------------------------------
# The functions (TVM's fixtures, then TVM's expected results in our names)
# ---------------------------------------------------------------------------------------

@T.prim_func
def cuda_matmul_0(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64, 64), "float32"), C: T.Buffer((64, 64), "float32")):
    A_shared = T.alloc_buffer((64, 64), "float32", scope="shared")
    B_shared = T.alloc_buffer((64, 64), "float32", scope="shared")
    A_shared_local = T.alloc_buffer((64, 64), "float32", scope="local")
    B_shared_local = T.alloc_buffer((64, 64), "float32", scope="local")
    C_local = T.alloc_buffer((64, 64), "float32", scope="local")
    for i, j in T.grid(64, 64):
        with T.block("A_shared"):
            v0, v1 = T.axis.remap("SS", [i, j])
            A_shared[v0, v1] = A[v0, v1]
    for i_1, j_1 in T.grid(64, 64):
        with T.block("B_shared"):
            v0_1, v1_1 = T.axis.remap("SS", [i_1, j_1])
            B_shared[v0_1, v1_1] = B[v0_1, v1_1]
    for i_2, j_2 in T.grid(64, 64):
        with T.block("A_shared_local"):
            v0_2, v1_2 = T.axis.remap("SS", [i_2, j_2])
            A_shared_local[v0_2, v1_2] = A_shared[v0_2, v1_2]
    for i_3, j_3 in T.grid(64, 64):
        with T.block("B_shared_local"):
            v0_3, v1_3 = T.axis.remap("SS", [i_3, j_3])
            B_shared_local[v0_3, v1_3] = B_shared[v0_3, v1_3]
    for i_4, j_4, k in T.grid(64, 64, 64):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i_4, j_4, k])
            with T.init():
                C_local[vi, vj] = T.float32(0)
            C_local[vi, vj] = C_local[vi, vj] + A_shared_local[vk, vi] * B_shared_local[vk, vj]
    for by in T.thread_binding(2, thread="blockIdx.y"):
        for bx in T.thread_binding(2, thread="blockIdx.x"):
            for ty in T.thread_binding(8, thread="threadIdx.y"):
                for tx in T.thread_binding(8, thread="threadIdx.x"):
                    for i_5, j_5 in T.grid(4, 4):
                        with T.block("C_local"):
                            v0_4 = T.axis.spatial(64, by * 32 + ty * 4 + i_5)
                            v1_4 = T.axis.spatial(64, bx * 32 + tx * 4 + j_5)
                            C[v0_4, v1_4] = C_local[v0_4, v1_4]


@T.prim_func
def cuda_matmul_1(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64, 64), "float32"), C: T.Buffer((64, 64), "float32")):
    A_shared = T.alloc_buffer((64, 64), "float32", scope="shared")
    B_shared = T.alloc_buffer((64, 64), "float32", scope="shared")
    A_shared_local = T.alloc_buffer((64, 64), "float32", scope="local")
    B_shared_local = T.alloc_buffer((64, 64), "float32", scope="local")
    C_local = T.alloc_buffer((64, 64), "float32", scope="local")
    for i, j in T.grid(64, 64):
        with T.block("A_shared"):
            v0, v1 = T.axis.remap("SS", [i, j])
            A_shared[v0, v1] = A[v0, v1]
    for i_1, j_1 in T.grid(64, 64):
        with T.block("B_shared"):
            v0_1, v1_1 = T.axis.remap("SS", [i_1, j_1])
            B_shared[v0_1, v1_1] = B[v0_1, v1_1]
    for i_2, j_2 in T.grid(64, 64):
        with T.block("A_shared_local"):
            v0_2, v1_2 = T.axis.remap("SS", [i_2, j_2])
            A_shared_local[v0_2, v1_2] = A_shared[v0_2, v1_2]
    for i_3, j_3 in T.grid(64, 64):
        with T.block("B_shared_local"):
            v0_3, v1_3 = T.axis.remap("SS", [i_3, j_3])
            B_shared_local[v0_3, v1_3] = B_shared[v0_3, v1_3]
    for by in T.thread_binding(2, thread="blockIdx.y"):
        for bx in T.thread_binding(2, thread="blockIdx.x"):
            for ty in T.thread_binding(8, thread="threadIdx.y"):
                for tx in T.thread_binding(8, thread="threadIdx.x"):
                    for k_0 in T.serial(8):
                        for k_1 in T.unroll(8):
                            for u, i_4, j_4 in T.grid(1, 4, 4):
                                with T.block("C"):
                                    vi = T.axis.spatial(64, by * 32 + ty * 4 + i_4)
                                    vj = T.axis.spatial(64, bx * 32 + tx * 4 + j_4)
                                    vk = T.axis.reduce(64, k_0 * 8 + k_1)
                                    with T.init():
                                        C_local[vi, vj] = T.float32(0)
                                    C_local[vi, vj] = C_local[vi, vj] + A_shared_local[vk, vi] * B_shared_local[vk, vj]
                    for i_5, j_5 in T.grid(4, 4):
                        with T.block("C_local"):
                            v0_4 = T.axis.spatial(64, by * 32 + ty * 4 + i_5)
                            v1_4 = T.axis.spatial(64, bx * 32 + tx * 4 + j_5)
                            C[v0_4, v1_4] = C_local[v0_4, v1_4]


@T.prim_func
def cuda_matmul_0_after_compute_at(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64, 64), "float32"), C: T.Buffer((64, 64), "float32")):
    A_shared = T.alloc_buffer((64, 64), "float32", scope="shared")
    B_shared = T.alloc_buffer((64, 64), "float32", scope="shared")
    A_shared_local = T.alloc_buffer((64, 64), "float32", scope="local")
    B_shared_local = T.alloc_buffer((64, 64), "float32", scope="local")
    C_local = T.alloc_buffer((64, 64), "float32", scope="local")
    for i, j in T.grid(64, 64):
        with T.block("A_shared"):
            v0, v1 = T.axis.remap("SS", [i, j])
            T.reads(A[v0, v1])
            T.writes(A_shared[v0, v1])
            A_shared[v0, v1] = A[v0, v1]
    for i_1, j_1 in T.grid(64, 64):
        with T.block("B_shared"):
            v0_1, v1_1 = T.axis.remap("SS", [i_1, j_1])
            T.reads(B[v0_1, v1_1])
            T.writes(B_shared[v0_1, v1_1])
            B_shared[v0_1, v1_1] = B[v0_1, v1_1]
    for i_2, j_2 in T.grid(64, 64):
        with T.block("A_shared_local"):
            v0_2, v1_2 = T.axis.remap("SS", [i_2, j_2])
            T.reads(A_shared[v0_2, v1_2])
            T.writes(A_shared_local[v0_2, v1_2])
            A_shared_local[v0_2, v1_2] = A_shared[v0_2, v1_2]
    for i_3, j_3 in T.grid(64, 64):
        with T.block("B_shared_local"):
            v0_3, v1_3 = T.axis.remap("SS", [i_3, j_3])
            T.reads(B_shared[v0_3, v1_3])
            T.writes(B_shared_local[v0_3, v1_3])
            B_shared_local[v0_3, v1_3] = B_shared[v0_3, v1_3]
    for by in T.thread_binding(2, thread="blockIdx.y"):
        for bx in T.thread_binding(2, thread="blockIdx.x"):
            for ty in T.thread_binding(8, thread="threadIdx.y"):
                for tx in T.thread_binding(8, thread="threadIdx.x"):
                    for ax0, ax1, ax2 in T.grid(4, 4, 64):
                        with T.block("C"):
                            vi = T.axis.spatial(64, by * 32 + ty * 4 + ax0)
                            vj = T.axis.spatial(64, bx * 32 + tx * 4 + ax1)
                            vk = T.axis.reduce(64, ax2)
                            T.reads(C_local[vi, vj], A_shared_local[vk, vi], B_shared_local[vk, vj])
                            T.writes(C_local[vi, vj])
                            with T.init():
                                C_local[vi, vj] = T.float32(0)
                            C_local[vi, vj] = C_local[vi, vj] + A_shared_local[vk, vi] * B_shared_local[vk, vj]
                    for i_5, j_5 in T.grid(4, 4):
                        with T.block("C_local"):
                            v0_4 = T.axis.spatial(64, by * 32 + ty * 4 + i_5)
                            v1_4 = T.axis.spatial(64, bx * 32 + tx * 4 + j_5)
                            T.reads(C_local[v0_4, v1_4])
                            T.writes(C[v0_4, v1_4])
                            C[v0_4, v1_4] = C_local[v0_4, v1_4]


@T.prim_func
def cuda_matmul_2(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64, 64), "float32"), C: T.Buffer((64, 64), "float32")):
    A_shared = T.alloc_buffer((64, 64), "float32", scope="shared")
    B_shared = T.alloc_buffer((64, 64), "float32", scope="shared")
    A_shared_local = T.alloc_buffer((64, 64), "float32", scope="local")
    B_shared_local = T.alloc_buffer((64, 64), "float32", scope="local")
    C_local = T.alloc_buffer((64, 64), "float32", scope="local")
    for i, j in T.grid(64, 64):
        with T.block("A_shared"):
            v0, v1 = T.axis.remap("SS", [i, j])
            T.reads(A[v0, v1])
            T.writes(A_shared[v0, v1])
            A_shared[v0, v1] = A[v0, v1]
    for i_1, j_1 in T.grid(64, 64):
        with T.block("B_shared"):
            v0_1, v1_1 = T.axis.remap("SS", [i_1, j_1])
            T.reads(B[v0_1, v1_1])
            T.writes(B_shared[v0_1, v1_1])
            B_shared[v0_1, v1_1] = B[v0_1, v1_1]
    for i_3, j_3 in T.grid(64, 64):
        with T.block("B_shared_local"):
            v0_3, v1_3 = T.axis.remap("SS", [i_3, j_3])
            T.reads(B_shared[v0_3, v1_3])
            T.writes(B_shared_local[v0_3, v1_3])
            B_shared_local[v0_3, v1_3] = B_shared[v0_3, v1_3]
    for by in T.thread_binding(2, thread="blockIdx.y"):
        for bx in T.thread_binding(2, thread="blockIdx.x"):
            for ty in T.thread_binding(8, thread="threadIdx.y"):
                for tx in T.thread_binding(8, thread="threadIdx.x"):
                    for k_0 in T.serial(8):
                        for k_1 in T.unroll(8):
                            for ax0, ax1 in T.grid(1, 4):
                                with T.block("A_shared_local"):
                                    v0_2 = T.axis.spatial(64, k_0 * 8 + k_1 + ax0)
                                    v1_2 = T.axis.spatial(64, by * 32 + ty * 4 + ax1)
                                    T.reads(A_shared[v0_2, v1_2])
                                    T.writes(A_shared_local[v0_2, v1_2])
                                    A_shared_local[v0_2, v1_2] = A_shared[v0_2, v1_2]
                            for u, i_4, j_4 in T.grid(1, 4, 4):
                                with T.block("C"):
                                    vi = T.axis.spatial(64, by * 32 + ty * 4 + i_4)
                                    vj = T.axis.spatial(64, bx * 32 + tx * 4 + j_4)
                                    vk = T.axis.reduce(64, k_0 * 8 + k_1)
                                    T.reads(C_local[vi, vj], A_shared_local[vk, vi], B_shared_local[vk, vj])
                                    T.writes(C_local[vi, vj])
                                    with T.init():
                                        C_local[vi, vj] = T.float32(0)
                                    C_local[vi, vj] = C_local[vi, vj] + A_shared_local[vk, vi] * B_shared_local[vk, vj]
                    for i_5, j_5 in T.grid(4, 4):
                        with T.block("C_local"):
                            v0_4 = T.axis.spatial(64, by * 32 + ty * 4 + i_5)
                            v1_4 = T.axis.spatial(64, bx * 32 + tx * 4 + j_5)
                            T.reads(C_local[v0_4, v1_4])
                            T.writes(C[v0_4, v1_4])
                            C[v0_4, v1_4] = C_local[v0_4, v1_4]


@T.prim_func
def cuda_matmul_3(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64, 64), "float32"), C: T.Buffer((64, 64), "float32")):
    A_shared = T.alloc_buffer((64, 64), "float32", scope="shared")
    B_shared = T.alloc_buffer((64, 64), "float32", scope="shared")
    A_shared_local = T.alloc_buffer((64, 64), "float32", scope="local")
    B_shared_local = T.alloc_buffer((64, 64), "float32", scope="local")
    C_local = T.alloc_buffer((64, 64), "float32", scope="local")
    for i, j in T.grid(64, 64):
        with T.block("A_shared"):
            v0, v1 = T.axis.remap("SS", [i, j])
            T.reads(A[v0, v1])
            T.writes(A_shared[v0, v1])
            A_shared[v0, v1] = A[v0, v1]
    for i_1, j_1 in T.grid(64, 64):
        with T.block("B_shared"):
            v0_1, v1_1 = T.axis.remap("SS", [i_1, j_1])
            T.reads(B[v0_1, v1_1])
            T.writes(B_shared[v0_1, v1_1])
            B_shared[v0_1, v1_1] = B[v0_1, v1_1]
    for by in T.thread_binding(2, thread="blockIdx.y"):
        for bx in T.thread_binding(2, thread="blockIdx.x"):
            for ty in T.thread_binding(8, thread="threadIdx.y"):
                for tx in T.thread_binding(8, thread="threadIdx.x"):
                    for k_0 in T.serial(8):
                        for k_1 in T.unroll(8):
                            for ax0, ax1 in T.grid(1, 4):
                                with T.block("A_shared_local"):
                                    v0_2 = T.axis.spatial(64, k_0 * 8 + k_1 + ax0)
                                    v1_2 = T.axis.spatial(64, by * 32 + ty * 4 + ax1)
                                    T.reads(A_shared[v0_2, v1_2])
                                    T.writes(A_shared_local[v0_2, v1_2])
                                    A_shared_local[v0_2, v1_2] = A_shared[v0_2, v1_2]
                            for ax0_1, ax1_1 in T.grid(1, 4):
                                with T.block("B_shared_local"):
                                    v0_3 = T.axis.spatial(64, k_0 * 8 + k_1 + ax0_1)
                                    v1_3 = T.axis.spatial(64, bx * 32 + tx * 4 + ax1_1)
                                    T.reads(B_shared[v0_3, v1_3])
                                    T.writes(B_shared_local[v0_3, v1_3])
                                    B_shared_local[v0_3, v1_3] = B_shared[v0_3, v1_3]
                            for u, i_4, j_4 in T.grid(1, 4, 4):
                                with T.block("C"):
                                    vi = T.axis.spatial(64, by * 32 + ty * 4 + i_4)
                                    vj = T.axis.spatial(64, bx * 32 + tx * 4 + j_4)
                                    vk = T.axis.reduce(64, k_0 * 8 + k_1)
                                    T.reads(C_local[vi, vj], A_shared_local[vk, vi], B_shared_local[vk, vj])
                                    T.writes(C_local[vi, vj])
                                    with T.init():
                                        C_local[vi, vj] = T.float32(0)
                                    C_local[vi, vj] = C_local[vi, vj] + A_shared_local[vk, vi] * B_shared_local[vk, vj]
                    for i_5, j_5 in T.grid(4, 4):
                        with T.block("C_local"):
                            v0_4 = T.axis.spatial(64, by * 32 + ty * 4 + i_5)
                            v1_4 = T.axis.spatial(64, bx * 32 + tx * 4 + j_5)
                            T.reads(C_local[v0_4, v1_4])
                            T.writes(C[v0_4, v1_4])
                            C[v0_4, v1_4] = C_local[v0_4, v1_4]


@T.prim_func
def cuda_matmul_4(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64, 64), "float32"), C: T.Buffer((64, 64), "float32")):
    A_shared = T.alloc_buffer((64, 64), "float32", scope="shared")
    B_shared = T.alloc_buffer((64, 64), "float32", scope="shared")
    A_shared_local = T.alloc_buffer((64, 64), "float32", scope="local")
    B_shared_local = T.alloc_buffer((64, 64), "float32", scope="local")
    C_local = T.alloc_buffer((64, 64), "float32", scope="local")
    for i_1, j_1 in T.grid(64, 64):
        with T.block("B_shared"):
            v0_1, v1_1 = T.axis.remap("SS", [i_1, j_1])
            T.reads(B[v0_1, v1_1])
            T.writes(B_shared[v0_1, v1_1])
            B_shared[v0_1, v1_1] = B[v0_1, v1_1]
    for by in T.thread_binding(2, thread="blockIdx.y"):
        for bx in T.thread_binding(2, thread="blockIdx.x"):
            for ty in T.thread_binding(8, thread="threadIdx.y"):
                for tx in T.thread_binding(8, thread="threadIdx.x"):
                    for k_0 in T.serial(8):
                        for ax0_2, ax1_2 in T.grid(8, 32):
                            with T.block("A_shared"):
                                v0 = T.axis.spatial(64, k_0 * 8 + ax0_2)
                                v1 = T.axis.spatial(64, by * 32 + ax1_2)
                                T.reads(A[v0, v1])
                                T.writes(A_shared[v0, v1])
                                A_shared[v0, v1] = A[v0, v1]
                        for k_1 in T.unroll(8):
                            for ax0, ax1 in T.grid(1, 4):
                                with T.block("A_shared_local"):
                                    v0_2 = T.axis.spatial(64, k_0 * 8 + k_1 + ax0)
                                    v1_2 = T.axis.spatial(64, by * 32 + ty * 4 + ax1)
                                    T.reads(A_shared[v0_2, v1_2])
                                    T.writes(A_shared_local[v0_2, v1_2])
                                    A_shared_local[v0_2, v1_2] = A_shared[v0_2, v1_2]
                            for ax0_1, ax1_1 in T.grid(1, 4):
                                with T.block("B_shared_local"):
                                    v0_3 = T.axis.spatial(64, k_0 * 8 + k_1 + ax0_1)
                                    v1_3 = T.axis.spatial(64, bx * 32 + tx * 4 + ax1_1)
                                    T.reads(B_shared[v0_3, v1_3])
                                    T.writes(B_shared_local[v0_3, v1_3])
                                    B_shared_local[v0_3, v1_3] = B_shared[v0_3, v1_3]
                            for u, i_4, j_4 in T.grid(1, 4, 4):
                                with T.block("C"):
                                    vi = T.axis.spatial(64, by * 32 + ty * 4 + i_4)
                                    vj = T.axis.spatial(64, bx * 32 + tx * 4 + j_4)
                                    vk = T.axis.reduce(64, k_0 * 8 + k_1)
                                    T.reads(C_local[vi, vj], A_shared_local[vk, vi], B_shared_local[vk, vj])
                                    T.writes(C_local[vi, vj])
                                    with T.init():
                                        C_local[vi, vj] = T.float32(0)
                                    C_local[vi, vj] = C_local[vi, vj] + A_shared_local[vk, vi] * B_shared_local[vk, vj]
                    for i_5, j_5 in T.grid(4, 4):
                        with T.block("C_local"):
                            v0_4 = T.axis.spatial(64, by * 32 + ty * 4 + i_5)
                            v1_4 = T.axis.spatial(64, bx * 32 + tx * 4 + j_5)
                            T.reads(C_local[v0_4, v1_4])
                            T.writes(C[v0_4, v1_4])
                            C[v0_4, v1_4] = C_local[v0_4, v1_4]


@T.prim_func
def cuda_matmul_5(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64, 64), "float32"), C: T.Buffer((64, 64), "float32")):
    A_shared = T.alloc_buffer((64, 64), "float32", scope="shared")
    B_shared = T.alloc_buffer((64, 64), "float32", scope="shared")
    A_shared_local = T.alloc_buffer((64, 64), "float32", scope="local")
    B_shared_local = T.alloc_buffer((64, 64), "float32", scope="local")
    C_local = T.alloc_buffer((64, 64), "float32", scope="local")
    for by in T.thread_binding(2, thread="blockIdx.y"):
        for bx in T.thread_binding(2, thread="blockIdx.x"):
            for ty in T.thread_binding(8, thread="threadIdx.y"):
                for tx in T.thread_binding(8, thread="threadIdx.x"):
                    for k_0 in T.serial(8):
                        for ax0_2, ax1_2 in T.grid(8, 32):
                            with T.block("A_shared"):
                                v0 = T.axis.spatial(64, k_0 * 8 + ax0_2)
                                v1 = T.axis.spatial(64, by * 32 + ax1_2)
                                T.reads(A[v0, v1])
                                T.writes(A_shared[v0, v1])
                                A_shared[v0, v1] = A[v0, v1]
                        for ax0_3, ax1_3 in T.grid(8, 32):
                            with T.block("B_shared"):
                                v0_1 = T.axis.spatial(64, k_0 * 8 + ax0_3)
                                v1_1 = T.axis.spatial(64, bx * 32 + ax1_3)
                                T.reads(B[v0_1, v1_1])
                                T.writes(B_shared[v0_1, v1_1])
                                B_shared[v0_1, v1_1] = B[v0_1, v1_1]
                        for k_1 in T.unroll(8):
                            for ax0, ax1 in T.grid(1, 4):
                                with T.block("A_shared_local"):
                                    v0_2 = T.axis.spatial(64, k_0 * 8 + k_1 + ax0)
                                    v1_2 = T.axis.spatial(64, by * 32 + ty * 4 + ax1)
                                    T.reads(A_shared[v0_2, v1_2])
                                    T.writes(A_shared_local[v0_2, v1_2])
                                    A_shared_local[v0_2, v1_2] = A_shared[v0_2, v1_2]
                            for ax0_1, ax1_1 in T.grid(1, 4):
                                with T.block("B_shared_local"):
                                    v0_3 = T.axis.spatial(64, k_0 * 8 + k_1 + ax0_1)
                                    v1_3 = T.axis.spatial(64, bx * 32 + tx * 4 + ax1_1)
                                    T.reads(B_shared[v0_3, v1_3])
                                    T.writes(B_shared_local[v0_3, v1_3])
                                    B_shared_local[v0_3, v1_3] = B_shared[v0_3, v1_3]
                            for u, i_4, j_4 in T.grid(1, 4, 4):
                                with T.block("C"):
                                    vi = T.axis.spatial(64, by * 32 + ty * 4 + i_4)
                                    vj = T.axis.spatial(64, bx * 32 + tx * 4 + j_4)
                                    vk = T.axis.reduce(64, k_0 * 8 + k_1)
                                    T.reads(C_local[vi, vj], A_shared_local[vk, vi], B_shared_local[vk, vj])
                                    T.writes(C_local[vi, vj])
                                    with T.init():
                                        C_local[vi, vj] = T.float32(0)
                                    C_local[vi, vj] = C_local[vi, vj] + A_shared_local[vk, vi] * B_shared_local[vk, vj]
                    for i_5, j_5 in T.grid(4, 4):
                        with T.block("C_local"):
                            v0_4 = T.axis.spatial(64, by * 32 + ty * 4 + i_5)
                            v1_4 = T.axis.spatial(64, bx * 32 + tx * 4 + j_5)
                            T.reads(C_local[v0_4, v1_4])
                            T.writes(C[v0_4, v1_4])
                            C[v0_4, v1_4] = C_local[v0_4, v1_4]


# ---------------------------------------------------------------------------------------
# The cases
# ---------------------------------------------------------------------------------------


def _inputs(rng):
    a = rng.standard_normal((64, 64), dtype=np.float32)
    b = rng.standard_normal((64, 64), dtype=np.float32)
    return a, b


def check(sch: Schedule, expected, rng) -> None:
    """Structure, trace round trip, and the numbers of the cpu build (C = A.T @ B)."""
    assert sch.mod.same_as(expected.replace(name=sch.mod.name)), sch.mod.script()
    replayed = Trace.from_json(sch.trace.to_json()).apply(sch.func_before)
    assert replayed.mod == sch.mod
    a, b = _inputs(rng)
    c = np.full((64, 64), np.nan, np.float32)
    build(sch, target="cpu")(a, b, c)
    np.testing.assert_allclose(c, a.T @ b, rtol=1e-4, atol=1e-4)


def test_compute_at_cuda_matmul_0(rng):
    sch = Schedule(cuda_matmul_0)
    _, _, _, tx, _, _ = sch.get_loops(sch.get_block("C_local"))
    sch.compute_at(sch.get_block("C"), tx, preserve_unit_loops=True)
    check(sch, cuda_matmul_0_after_compute_at, rng)


def _k_loops(sch):
    _, _, _, _, k_0, k_1, _, _, _ = sch.get_loops(sch.get_block("C"))
    return k_0, k_1


def _after(steps: int) -> Schedule:
    """cuda_matmul_1 after the first ``steps`` compute_at of TVM's chain."""
    sch = Schedule(cuda_matmul_1)
    chain = [("A_shared_local", 1), ("B_shared_local", 1), ("A_shared", 0), ("B_shared", 0)]
    for name, which in chain[:steps]:
        sch.compute_at(sch.get_block(name), _k_loops(sch)[which], preserve_unit_loops=True)
    return sch


@pytest.mark.parametrize(
    "steps, expected",
    [(1, cuda_matmul_2), (2, cuda_matmul_3), (3, cuda_matmul_4), (4, cuda_matmul_5)],
    ids=["cuda_matmul_1", "cuda_matmul_2", "cuda_matmul_3", "cuda_matmul_4"],
)
def test_compute_at_cuda_matmul_1_to_4(steps, expected, rng):
    """Local stages at ``k_1`` cover one thread's 4 elements (``ty * 4 + ax1``); shared
    stages at ``k_0`` cover the block's 32 (``by * 32 + ax1``): ``ty`` is relaxed."""
    check(_after(steps), expected, rng)


def cooperative_fetch(sch: Schedule, name: str, threads: tuple = (8, 8)) -> None:
    """The copy loops of shared stage ``name``: innermost split by 4 and vectorized, the
    rest fused and spread over the block's threads (``threadIdx.y``, ``threadIdx.x``)."""
    *_, rows, cols = sch.get_loops(sch.get_block(name))
    cols_0, lanes = sch.split(cols, factors=[None, 4])
    sch.vectorize(lanes)
    fused = sch.fuse(rows, cols_0)
    ty, tx = sch.split(fused, factors=list(threads))
    sch.bind(ty, "threadIdx.y")
    sch.bind(tx, "threadIdx.x")


@pytest.mark.cuda
def test_cooperative_fetch_on_the_simulator(rng):
    """The final schedule with cooperative, 128-bit shared copies: each thread copies 4
    floats of each tile (one ``load4`` / ``store4``), and C matches numpy."""
    sch = _after(4)
    cooperative_fetch(sch, "A_shared")
    cooperative_fetch(sch, "B_shared")
    kernel = build(sch, target="cuda")
    src = kernel.source
    assert "A_shared = cuda.shared.array((8, 32), numba.float32, alignment=SHARED_ALIGN)" in src
    assert src.count("= load4(") == 2 and src.count("store4(") == 2
    assert src.count("cuda.syncthreads()") == 2
    a, b = _inputs(rng)
    c = np.full((64, 64), np.nan, np.float32)
    kernel(a, b, c)
    np.testing.assert_allclose(c, a.T @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.cuda
def test_reverse_compute_at_of_a_shared_stage_under_thread_loops_covers_the_tile(rng):
    """The same rule for ``reverse_compute_at``: a shared ``cache_write`` moved under the
    thread loops copies the block's whole 4x4 tile (not one thread's element), so its
    loops can then be spread over the threads to write C cooperatively."""
    from workbench import ops

    sch = Schedule(ops.matmul(16, 16, 8))
    c = sch.get_block("C")
    i, j, _ = sch.get_loops(c)
    bi, ti = sch.split(i, factors=[None, 4])
    bj, tj = sch.split(j, factors=[None, 4])
    sch.reorder(bi, bj, ti, tj)
    for loop, axis in ((bi, "blockIdx.y"), (bj, "blockIdx.x"), (ti, "threadIdx.y"),
                       (tj, "threadIdx.x")):
        sch.bind(loop, axis)
    c_shared = sch.cache_write(c, 0, "shared")
    sch.reverse_compute_at(c_shared, tj)
    rows, cols = sch.get_loops(c_shared)[-2:]
    assert [sch.get(loop).extent.value for loop in (rows, cols)] == [4, 4]
    y, x = sch.split(sch.fuse(rows, cols), factors=[4, 4])
    sch.bind(y, "threadIdx.y")
    sch.bind(x, "threadIdx.x")
    kernel = build(sch, target="cuda")
    assert kernel.source.count("cuda.syncthreads()") == 1
    a = rng.standard_normal((16, 8), dtype=np.float32)
    b = rng.standard_normal((8, 16), dtype=np.float32)
    out = np.full((16, 16), np.nan, np.float32)
    kernel(a, b, out)
    np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-5)
