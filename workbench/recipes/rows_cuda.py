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
  (``workbench.backends.cuda_reduction``); its result is ``local`` (every thread holds it);
* ``stage="shared"`` also copies the row into shared memory once (``cache_read`` at ``i``,
  the copy loop split and bound to the same threads): the three passes then read the input
  from global memory once instead of three times (``N * 4`` bytes of shared memory per
  block).
* short rows share a block: the row loop is split, its inner part on ``threadIdx.y``, each
  row reduced by its own 32 or 64 threads (shuffles within the warp); the threads per row,
  rows per block and the stage come from the row length by default (``row_threads``,
  measured on the H200).
"""

from __future__ import annotations

from workbench.ir import PrimFunc
from workbench.schedule import Schedule

SHORT_ROW = 1024
"""Rows up to this long get 32 or 64 threads each, several rows per block; longer rows a
block of 512 threads."""

STAGED_ROW = (4096, 12288)
"""Rows in this range are staged in shared memory by default (16 to 48 KiB per block)."""


def row_threads(n: int) -> tuple[int, int, str | None]:
    """``(threads per row, rows per block, stage)`` for rows of ``n`` float32 elements, the
    defaults of ``block_per_row``, measured on the H200 (bench/RESULTS.md "Every shape"):

    * ``n <= 256``: one warp per row, 4 rows per block;
    * ``n <= SHORT_ROW``: 64 threads per row, 2 rows per block (30000 x 768: softmax 0.070
      ms against 0.156 with one 512-thread block per row, layernorm 0.072 against 0.163);
    * longer: one block of 512 threads per row, the row staged in shared memory when ``n``
      is in ``STAGED_ROW`` (8192^2: softmax 0.221 ms against 0.253 unstaged, layernorm
      0.197 against 0.297); 4096 x 3000 was fastest unstaged.

    >>> row_threads(768), row_threads(3000), row_threads(8192)
    ((64, 2, None), (512, 1, None), (512, 1, 'shared'))
    """
    if n <= 256:
        return 32, 4, None
    if n <= SHORT_ROW:
        return 64, 2, None
    stage = "shared" if STAGED_ROW[0] <= n <= STAGED_ROW[1] else None
    return 512, 1, stage


_AUTO = "auto"


def block_per_row(
    func: PrimFunc,
    threads: int | None = None,
    stage: str | None = _AUTO,
    rows_per_block: int | None = None,
) -> Schedule:
    """Row reductions + elementwise output, one CUDA block per row (module docstring), or
    ``rows_per_block`` rows per block (the row loop split, its inner part on
    ``threadIdx.y``: each row's reductions are shuffles within its own threads). ``threads``
    left ``None`` (then also ``rows_per_block``) and ``stage`` left ``"auto"`` come from the
    row length (``row_threads``); with ``threads`` given, one row per block unless
    ``rows_per_block`` says otherwise. A row count that is not a multiple of
    ``rows_per_block`` leaves a guard on the last block.

    Example
    -------
    >>> from workbench import ops
    >>> sch = block_per_row(ops.softmax(4, 100), threads=32)
    >>> loops = sch.get_loops(sch.get_block("T_softmax_norm"))
    >>> [sch.get(loop).thread_binding for loop in loops]
    ['blockIdx.x', None, 'threadIdx.x']
    >>> sch = block_per_row(ops.softmax(8, 100))       # a warp per row, 4 rows per block
    >>> loops = sch.get_loops(sch.get_block("T_softmax_norm"))
    >>> [sch.get(loop).thread_binding for loop in loops]
    ['blockIdx.x', 'threadIdx.y', None, 'threadIdx.x']
    """
    if stage not in (None, "shared", _AUTO):
        raise ValueError(
            f"block_per_row: stage must be None or 'shared', got {stage!r} "
            "('auto', the default, picks one from the row length)"
        )
    sch = Schedule(func)
    names = [sch.get(b).name for b in sch.get_child_blocks(sch.get_block("root"))]
    *reductions, out = names
    row, column = sch.get_loops(sch.get_block(out))
    auto_threads, auto_rows, auto_stage = row_threads(int(sch.get(column).extent.value))
    if rows_per_block is None:  # threads given by hand: one row per block, as before
        rows_per_block = auto_rows if threads is None else 1
    rows_per_block = min(rows_per_block, int(sch.get(row).extent.value))
    threads = auto_threads if threads is None else threads
    stage = auto_stage if stage == _AUTO else stage
    if rows_per_block > 1:
        block_row, row = sch.split(row, factors=[None, rows_per_block])
        sch.bind(block_row, "blockIdx.x")
        sch.bind(row, "threadIdx.y")
    else:
        sch.bind(row, "blockIdx.x")
    _, column_thread = sch.split(column, factors=[None, threads])
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
        *_, copy_row, copy_column = sch.get_loops(staged)
        if rows_per_block > 1:  # the block's rows, one per threadIdx.y (not each one all)
            sch.bind(copy_row, "threadIdx.y")
        _, copy_thread = sch.split(copy_column, factors=[None, threads])
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
    ``shfl_xor_sync`` butterflies (``workbench.backends.cuda_reduction``).

    Example
    -------
    >>> from workbench import ops
    >>> sch = rfactor_shuffle(ops.softmax(4, 100), threads=32)
    """
    from workbench.backends.cuda_recipes import row_reduction_rfactor

    sch = row_reduction_rfactor(func, threads=threads)
    names = [sch.get(b).name for b in sch.get_child_blocks(sch.get_block("root"))]
    for name in names:
        block = sch.get(sch.get_block(name))
        if name.endswith("_rf") or block.init is None:
            continue
        sch.bind(sch.get_loops(sch.get_block(name))[-1], "threadIdx.x")
    return sch
