"""Layer-norm recipe for the ``cuda`` target: one block per row, warp-shuffle reductions.

``block_per_row_cuda(ops.layernorm(M, N), threads=..., stage=...)``: the row sum and the sum
of squared deviations from the mean are cross-thread reductions (per-thread partials, then
``shfl_xor_sync`` butterflies and one shared-memory step across warps; every thread gets
the result), then each thread normalises its columns and applies ``gamma``, ``beta``. One
kernel, one block per row (``workbench.recipes.rows_cuda``); two passes over the row for
the statistics (the numerically safe variance), ``stage="shared"`` reads it from global
memory once.

Example
-------
>>> from workbench import ops, recipes
>>> sch = recipes.get("layernorm", "block_per_row", "cuda")(ops.layernorm(4, 100), threads=32)
"""

from __future__ import annotations

from workbench.ir import PrimFunc
from workbench.recipes.registry import register
from workbench.recipes.rows_cuda import block_per_row, rfactor_shuffle
from workbench.schedule import Schedule


@register("layernorm", "block_per_row", "cuda")
def block_per_row_cuda(
    func: PrimFunc,
    threads: int | None = None,
    stage: str | None = "auto",
    rows_per_block: int | None = None,
) -> Schedule:
    """One CUDA block per row, mean and variance as warp-shuffle allreduces (threads per row
    by default from the row length: ``rows_cuda.row_threads``)."""
    return block_per_row(func, threads, stage, rows_per_block)


@register("layernorm", "rfactor_shuffle", "cuda")
def rfactor_shuffle_cuda(func: PrimFunc, threads: int = 512) -> Schedule:
    """One CUDA block per row, rfactor partials in shared memory combined by warp shuffles."""
    return rfactor_shuffle(func, threads)
