"""One CUDA block per row for row operators (softmax, layernorm, rmsnorm): the schedule the
``cuda`` recipes share.

For an operator of row reductions followed by an elementwise output block (``ops.softmax``:
max, sum of exp, normalise; ``ops.layernorm``: sum, sum of squared deviations, normalise):

* the output's row loop ``i`` goes on ``blockIdx.x``; its column loop is split by
  ``threads``, the inner part on ``threadIdx.x`` (neighbouring threads, neighbouring
  columns: coalesced);
* every reduction is computed at ``i`` (``compute_at``), its reduce loop split the same way
  with the inner part bound to ``threadIdx.x``: a cross-thread reduction, lowered by the
  ``cuda`` target to per-thread partials and a warp-shuffle allreduce
  (``workbench.backends.cuda.cuda_reduction``); its result is ``local`` (every thread holds it);
* ``stage="shared"`` also copies the row into shared memory once (``cache_read`` at ``i``,
  the copy loop split and bound to the same threads): the three passes then read the input
  from global memory once instead of three times (``N * 4`` bytes of shared memory per
  block).
"""

from __future__ import annotations

from workbench.ir import PrimFunc
from workbench.schedule import Schedule


def block_per_row(func: PrimFunc, threads: int = 512, stage: str | None = None) -> Schedule:
    """Row reductions + elementwise output, one CUDA block per row (module docstring).

    Example
    -------
    >>> from workbench import ops
    >>> sch = block_per_row(ops.softmax(4, 100), threads=32)
    >>> loops = sch.get_loops(sch.get_block("T_softmax_norm"))
    >>> [sch.get(loop).thread_binding for loop in loops]
    ['blockIdx.x', None, 'threadIdx.x']
    """
    if stage not in (None, "shared"):
        raise ValueError(f"block_per_row: stage must be None or 'shared', got {stage!r}")
    sch = Schedule(func)
    names = [sch.get(b).name for b in sch.get_child_blocks(sch.get_block("root"))]
    *reductions, out = names
    row, column = sch.get_loops(sch.get_block(out))
    _, column_thread = sch.split(column, factors=[None, threads])
    sch.bind(row, "blockIdx.x")
    sch.bind(column_thread, "threadIdx.x")
    for name in reversed(reductions):
        sch.compute_at(sch.get_block(name), row)
    for name in reductions:
        block = sch.get_block(name)
        _, reduce_thread = sch.split(sch.get_loops(block)[-1], factors=[None, threads])
        sch.bind(reduce_thread, "threadIdx.x")
        sch.set_scope(block, 0, "local")
    if stage == "shared":
        first = sch.get_block(reductions[0])
        input_index = _input_index(sch, reductions[0], func.params[0].name)
        staged = sch.cache_read(first, input_index, "shared")
        sch.compute_at(staged, row)
        _, copy_thread = sch.split(sch.get_loops(staged)[-1], factors=[None, threads])
        sch.bind(copy_thread, "threadIdx.x")
    return sch


def _input_index(sch: Schedule, block: str, buffer: str) -> int:
    reads = sch.get(sch.get_block(block)).reads
    return next(n for n, region in enumerate(reads) if region.buffer.name == buffer)


def rfactor_shuffle(func: PrimFunc, threads: int = 512) -> Schedule:
    """The rfactor-into-shared route, combined with warp shuffles.

    ``cuda_recipes.row_reduction_rfactor`` (each reduction split by ``threads`` and
    ``rfactor``-ed: thread ``t`` reduces its strided slice into a ``shared`` partial
    buffer) leaves the final combine as a loop over the ``threads`` partials that every
    thread runs alone. Binding that loop to ``threadIdx.x`` makes it a cross-thread
    reduction: each thread takes one partial and the ``cuda`` target combines them with
    ``shfl_xor_sync`` butterflies (``workbench.backends.cuda.cuda_reduction``).

    Example
    -------
    >>> from workbench import ops
    >>> sch = rfactor_shuffle(ops.softmax(4, 100), threads=32)
    """
    from workbench.backends.cuda.cuda_recipes import row_reduction_rfactor

    sch = row_reduction_rfactor(func, threads=threads)
    names = [sch.get(b).name for b in sch.get_child_blocks(sch.get_block("root"))]
    for name in names:
        block = sch.get(sch.get_block(name))
        if name.endswith("_rf") or block.init is None:
            continue
        sch.bind(sch.get_loops(sch.get_block(name))[-1], "threadIdx.x")
    return sch
