"""Row reductions on the ``cuda`` target: a warp (or more) per row of a reduction over the
innermost axis, with the elementwise epilogue that follows it.

The graph lowers ``x.sum(-1)``, ``x.mean(-1)``, ``x.amax(-1)``, ``x.mean((2, 3))`` (the
trailing axes flattened into one) and the statistics of an RMSNorm (``mean`` of the squares,
``+ eps``, ``rsqrt``: Llama's, T5's) to one reduction block over the row's last axis
followed by spatial blocks over the row's result. The baseline schedule
(``graph_cuda.cuda_schedule``) gives each output one thread that reduces its row alone: a
warp then reads 32 rows at a stride of the row length (uncoalesced: 32 memory transactions
per load), and 1024 rows of 4096 keep 4 blocks of 256 threads busy on a GPU of 132
multiprocessors.

``warp_rows`` (``recipes.get("reduce_sum", "warp_rows", "cuda")``, the same for
``reduce_mean`` and ``reduce_max``; the graph's default for such kernels through
``graph_cuda_ops.row_reduce``):

* the epilogue blocks are inlined into the last one (``compute_inline``), which runs over
  the rows (its spatial loops fused into one, split into blocks of ``rows_per_block`` rows:
  ``blockIdx.x`` and ``threadIdx.y``);
* the reduction is computed at that row (``compute_at``), its result ``local``; its reduce
  loop (the trailing reduce loops fused) is split by ``threads``, the inner part on
  ``threadIdx.x``: neighbouring threads read neighbouring elements of the row (coalesced),
  and the ``cuda`` target combines the threads' partials with warp shuffles
  (``workbench.backends.cuda.cuda_reduction``); every thread of the row then holds the
  result, and the row's epilogue is written with it;
* ``threads`` per row from the row length as ``rows_cuda.row_threads`` chooses it (a warp up
  to 1024 elements, 32 elements a thread at most beyond, 512 at most), ``rows_per_block``
  so that a block has 128 threads or more.

A reduction over an outer axis (``x.amax(1)`` of a ``(2, 3, 4)``) is not a row: the baseline
already reads it coalesced (neighbouring outputs, neighbouring columns) and this recipe
refuses it (``match`` returns None), as it refuses an epilogue over the row's elements (a
normalisation, ``x * rsqrt(mean(x * x))``: the row kernels of ``rows_cuda`` are for those).

Example
-------
>>> from workbench import ops
>>> sch = warp_rows(ops.reduce_mean(6, 100))
>>> [sch.get(loop).thread_binding for loop in sch.get_loops(sch.get_block("A_red"))]
['blockIdx.x', 'threadIdx.y', None, 'threadIdx.x']
"""

from __future__ import annotations

import math

from workbench.ir import PrimFunc, Var
from workbench.ir.analysis import find_blocks
from workbench.ir.stmt import IterKind
from workbench.recipes.registry import register
from workbench.recipes.rows_cuda import MAX_THREADS, bind_rows, register_threads
from workbench.schedule import Schedule

MIN_ROW = 32
"""Rows shorter than a warp keep the baseline (a thread per row): a warp per row would leave
most of its lanes idle."""

BLOCK_THREADS = 128
"""Threads a block has at least (rows per block times threads per row)."""


def match(func: PrimFunc) -> tuple[str, list[str]] | None:
    """``(reduction block, epilogue blocks)`` when ``func`` is one reduction over its row's
    innermost axis (reduce iteration variables last, the input read with the last of them as
    its last index) of ``MIN_ROW`` elements or more, followed by spatial blocks of one value
    a row only; None otherwise.

    >>> from workbench import ops
    >>> match(ops.reduce_mean(3, 40)), match(ops.reduce_mean(3, 40, axis=0))
    (('A_red', ['T_divide']), None)
    """
    blocks = find_blocks(func)
    if not blocks:
        return None
    first, rest = blocks[0], blocks[1:]
    kinds = [iv.kind for iv in first.iter_vars]
    if first.init is None or IterKind.REDUCE not in kinds:
        return None
    reduce_at = kinds.index(IterKind.REDUCE)
    if any(k != IterKind.REDUCE for k in kinds[reduce_at:]) or reduce_at == 0:
        return None
    if any(iv.kind != IterKind.SPATIAL for block in rest for iv in block.iter_vars):
        return None
    row = math.prod(_extents(first.iter_vars[reduce_at:]))
    if row < MIN_ROW or not _reads_along(first, first.iter_vars[-1].var):
        return None
    rows = math.prod(_extents(first.iter_vars[:reduce_at]))
    if any(math.prod(_extents(block.iter_vars)) != rows for block in rest):
        return None  # an epilogue over the row's elements (a normalisation): not one value a row
    return first.name, [block.name for block in rest]


def _extents(iter_vars) -> list[int]:
    return [int(iv.dom.extent.value) for iv in iter_vars]


def _reads_along(block, var: Var) -> bool:
    """Whether ``block`` reads every buffer other than its own output with ``var`` as the
    last index (the row's elements contiguous in memory; a matmul's ``B[k, j]`` is not)."""
    written = {region.buffer.name for region in block.writes}
    inputs = [region for region in block.reads if region.buffer.name not in written]
    return bool(inputs) and all(region.region and region.region[-1].min is var
                                for region in inputs)


def row_threads(n: int) -> tuple[int, int]:
    """``(threads per row, rows per block)`` for a row of ``n`` elements: the fewest threads
    holding 32 elements each at most (``rows_cuda.register_threads``), ``MAX_THREADS // 2``
    beyond, and rows enough for ``BLOCK_THREADS`` threads a block.

    >>> row_threads(49), row_threads(768), row_threads(4096), row_threads(100000)
    ((32, 4), (32, 4), (128, 1), (512, 1))
    """
    threads = register_threads(n, 1) or MAX_THREADS // 2
    return threads, block_rows(threads)


def block_rows(threads: int) -> int:
    """Rows a block takes with ``threads`` per row: ``BLOCK_THREADS`` threads or more a block."""
    return max(1, BLOCK_THREADS // threads)


def warp_rows(func: PrimFunc, threads: int | None = None,
              rows_per_block: int | None = None) -> Schedule:
    """The module docstring's schedule; ``threads`` / ``rows_per_block`` left None come from
    the row length (``row_threads``). Raises ``ValueError`` where ``match`` refuses
    ``func``."""
    found = match(func)
    if found is None:
        raise ValueError("warp_rows: not one reduction over the row's innermost axis of "
                         f"{MIN_ROW} elements or more followed by elementwise blocks of one "
                         "value a row")
    reduction, epilogue = found
    sch = Schedule(func)
    for name in epilogue[:-1]:
        sch.compute_inline(sch.get_block(name))
    first = sch.get_block(reduction)
    kinds = [iv.kind for iv in sch.get(first).iter_vars]
    reduce_count = len(kinds) - kinds.index(IterKind.REDUCE)
    # the rows: the epilogue's loops (the reduction computed at each), else the reduction's own
    loops = (sch.get_loops(sch.get_block(epilogue[-1])) if epilogue
             else sch.get_loops(first)[:-reduce_count])
    row = sch.fuse(*loops) if len(loops) > 1 else loops[0]
    extent = int(sch.get(row).extent.value)
    if epilogue:
        sch.compute_at(first, row)
        sch.set_scope(first, 0, "local")
    reduce_loops = sch.get_loops(first)[-reduce_count:]
    reduce_loop = sch.fuse(*reduce_loops) if len(reduce_loops) > 1 else reduce_loops[0]
    if threads is None:
        threads = row_threads(int(sch.get(reduce_loop).extent.value))[0]
    bind_rows(sch, row, min(rows_per_block or block_rows(threads), extent))
    _, lane = sch.split(reduce_loop, factors=[None, threads])
    sch.bind(lane, "threadIdx.x")
    return sch


for _op in ("reduce_sum", "reduce_mean", "reduce_max"):
    register(_op, "warp_rows", "cuda")(warp_rows)

__all__ = ["BLOCK_THREADS", "MIN_ROW", "match", "row_threads", "warp_rows"]
