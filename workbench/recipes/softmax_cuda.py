"""Softmax recipe for the ``cuda`` target: one block per row, warp-shuffle reductions.

``block_per_row_cuda(ops.softmax(M, N), threads=..., stage=...)``: the row max and the sum of
``exp(x - max)`` are cross-thread reductions (each thread reduces a strided slice of the row
into a register, then ``shfl_xor_sync`` butterflies within each warp and one shared-memory
step across warps; every thread gets the result), and the normalisation runs on the same
threads: one kernel, one block per row (``workbench.recipes.rows_cuda``). The two-pass
(three-sweep) algorithm, as TVM's topi softmax; ``stage="shared"`` reads the row from
global memory once.

Example
-------
>>> from workbench import ops, recipes
>>> sch = recipes.get("softmax", "block_per_row", "cuda")(ops.softmax(4, 100), threads=32)
"""

from __future__ import annotations

from workbench.ir import PrimFunc
from workbench.recipes.registry import register
from workbench.recipes.rows_cuda import block_per_row, rfactor_shuffle
from workbench.schedule import Schedule


@register("softmax", "block_per_row", "cuda")
def block_per_row_cuda(
    func: PrimFunc,
    threads: int | None = None,
    stage: str | None = "auto",
    rows_per_block: int | None = None,
) -> Schedule:
    """One CUDA block per row, max and sum as warp-shuffle allreduces (``threads`` per row;
    by default from the row length: ``rows_cuda.row_threads``)."""
    return block_per_row(func, threads, stage, rows_per_block)


@register("softmax", "rfactor_shuffle", "cuda")
def rfactor_shuffle_cuda(func: PrimFunc, threads: int = 512) -> Schedule:
    """One CUDA block per row, rfactor partials in shared memory combined by warp shuffles."""
    return rfactor_shuffle(func, threads)
