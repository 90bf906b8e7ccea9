"""Elementwise recipes for the ``cuda`` target: bandwidth-bound kernels.

An elementwise chain (``ops.add_mul_gelu``: ``gelu((a + b) * c)``) reads and writes each
element once: its speed is the memory bandwidth. Two things matter on the GPU: every
producer inlined into one kernel (no intermediate round trips), and few, wide memory
instructions. ``v4`` gives each thread 4 consecutive elements with 128-bit loads and
stores (``vectorize`` of 4 on the cuda target: ``ld.global.v4.f32``/``st.global.v4.f32``);
``grid_stride`` keeps a fixed grid and loops over the rest. The first steps: ``fused`` (one
thread per element, producers inlined), ``rows`` (one block per row, threads striding
along it) and ``unfused`` (one kernel per block, intermediates in global memory).

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


def _rows_on_blocks_y(sch: Schedule, outer: list) -> None:
    """The loops outside the columns (rows), fused, on ``blockIdx.y``."""
    if outer:
        rows = sch.fuse(*outer) if len(outer) > 1 else outer[0]
        sch.bind(rows, "blockIdx.y")


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
    _rows_on_blocks_y(sch, outer)
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
    _rows_on_blocks_y(sch, outer)
    return sch


def fused(func: PrimFunc, threads: int = 32) -> Schedule:
    """Inline every producer into the last block, fuse its loops, one thread per element."""
    sch, out = _inlined(func)
    fused = sch.fuse(*sch.get_loops(out))
    bx, tx = sch.split(fused, factors=[None, threads])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    return sch


def rows(func: PrimFunc, threads: int = 256) -> Schedule:
    """Inline the producers; one CUDA block per row, threads striding along the row.

    ``j = j_0 * threads + j_1`` with ``j_1`` on ``threadIdx.x``: neighbouring threads touch
    neighbouring elements (coalesced) and no ``//`` or ``%`` of a fused index is computed.
    """
    sch, out = _inlined(func)
    i, j = sch.get_loops(out)
    j_0, j_1 = sch.split(j, factors=[None, threads])
    sch.reorder(j_1, j_0)
    sch.bind(i, "blockIdx.x")
    sch.bind(j_1, "threadIdx.x")
    return sch


def unfused(func: PrimFunc, threads: int = 32) -> Schedule:
    """Each block its own kernel (the intermediates are global workspace buffers)."""
    sch = Schedule(func)
    for blk in sch.get_child_blocks(sch.get_block("root")):
        fused = sch.fuse(*sch.get_loops(blk))
        bx, tx = sch.split(fused, factors=[None, threads])
        sch.bind(bx, "blockIdx.x")
        sch.bind(tx, "threadIdx.x")
    return sch


for _op in ("add_mul_gelu", "add", "multiply", "relu", "gelu"):
    for _name, _recipe in (("v4", v4), ("grid_stride", grid_stride), ("fused", fused),
                           ("rows", rows), ("unfused", unfused)):
        register(_op, _name, "cuda")(_recipe)
