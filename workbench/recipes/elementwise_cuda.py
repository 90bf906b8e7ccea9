"""Elementwise recipes for the ``cuda`` target: bandwidth-bound kernels.

An elementwise chain (``ops.add_mul_gelu``: ``gelu((a + b) * c)``) reads and writes each
element once: its speed is the memory bandwidth. Two things matter on the GPU: every
producer inlined into one kernel (no intermediate round trips), and few, wide memory
instructions. ``v4`` gives each thread 4 consecutive elements with 128-bit loads and
stores (``vectorize`` of 4 on the cuda target: ``ld.global.v4.f32``/``st.global.v4.f32``);
``grid_stride`` keeps a fixed grid and loops over the rest.

Example
-------
>>> from workbench import ops, recipes
>>> sch = recipes.get("add_mul_gelu", "v4", "cuda")(ops.add_mul_gelu(64, 1024))
"""

from __future__ import annotations

from workbench.ir import PrimFunc
from workbench.recipes.registry import register
from workbench.schedule import Schedule


def _inlined(func: PrimFunc) -> tuple[Schedule, object]:
    """The schedule with every producer inlined into the last block, and that block."""
    sch = Schedule(func)
    for producer in sch.get_child_blocks(sch.get_block("root"))[:-1]:
        sch.compute_inline(producer)
    return sch, sch.get_child_blocks(sch.get_block("root"))[-1]


def v4(func: PrimFunc, threads: int = 256) -> Schedule:
    """One thread, 4 consecutive elements (one 128-bit load per input, one store).

    2-D ``(rows, cols)``: rows on ``blockIdx.y``; ``cols = (bx * threads + tx) * 4 + v``
    with ``bx`` on ``blockIdx.x``, ``tx`` on ``threadIdx.x``, ``v`` vectorized. ``cols``
    must be a multiple of ``4 * threads`` for a guard-free, aligned kernel (else the split
    guard keeps it correct, with scalar accesses).
    """
    sch, out = _inlined(func)
    *outer, cols = sch.get_loops(out)
    bx, tx, lanes = sch.split(cols, factors=[None, threads, 4])
    sch.vectorize(lanes)
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    if outer:
        rows = sch.fuse(*outer) if len(outer) > 1 else outer[0]
        sch.bind(rows, "blockIdx.y")
    return sch


def grid_stride(func: PrimFunc, threads: int = 256, blocks_per_row: int = 1) -> Schedule:
    """Rows on ``blockIdx.y``, ``blocks_per_row`` blocks along a row, each thread looping
    over groups of 4 (``cols = ((s * blocks_per_row + bx) * threads + tx) * 4 + v``):
    a fixed grid, the rest of the row in a loop per thread, 128-bit accesses."""
    sch, out = _inlined(func)
    *outer, cols = sch.get_loops(out)
    s, bx, tx, lanes = sch.split(cols, factors=[None, blocks_per_row, threads, 4])
    sch.reorder(bx, tx, s)
    sch.vectorize(lanes)
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    if outer:
        rows = sch.fuse(*outer) if len(outer) > 1 else outer[0]
        sch.bind(rows, "blockIdx.y")
    return sch


for _op in ("add_mul_gelu", "add", "multiply", "relu", "gelu"):
    register(_op, "v4", "cuda")(v4)
    register(_op, "grid_stride", "cuda")(grid_stride)
