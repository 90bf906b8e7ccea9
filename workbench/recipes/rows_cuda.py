"""Row operators on the ``cuda`` target (``ops.softmax``, ``ops.layernorm``): one block per
row, registered once for both (``recipes.get("softmax" | "layernorm", name, "cuda")``);
``block_per_row`` also for ``ops.rmsnorm`` (one reduction, the sum of squares).

* ``block_per_row`` (``threads``, ``stage``): the row statistics (softmax: max and sum of
  ``exp(x - max)``; layernorm: sum and sum of squared deviations, the numerically safe
  variance) as cross-thread reductions (per-thread partials, ``shfl_xor_sync`` butterflies
  in each warp, one shared-memory step across warps; every thread gets the result), the
  normalisation on the same threads: one kernel, the two-pass algorithm of TVM's topi;
* ``rfactor_shuffle``: the reductions ``rfactor``-ed into shared partials combined by warp
  shuffles;
* ``block_local``: every thread computes the row statistics itself (no cross-thread
  reduction: redundant, free of barriers); ``rfactor``: shared partials every thread
  combines alone (the steps before the shuffles).

``block_per_row`` in detail:

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
* short rows share a block: the row loop is split, its inner part on ``threadIdx.y``, each
  row reduced by its own 32 or 64 threads (shuffles within the warp); the threads per row,
  rows per block and the stage come from the row length by default (``row_threads``,
  measured on the H200);
* ``stage="registers"`` (the default for rows up to 32768 float32): each thread copies its
  part of the row into registers once (128-bit loads where the row length is a multiple
  of 4) and the reductions and the output read them: one read and one write of the row
  (H200, bench/RESULTS.md "single-pass rows": softmax 8192^2 0.134 ms against torch's
  0.278, layernorm 30000 x 768 0.049 against 0.087).
"""

from __future__ import annotations

from workbench.ir import PrimFunc
from workbench.recipes.registry import register
from workbench.schedule import Schedule

SHORT_ROW = 1024
"""Rows up to this long get 32 or 64 threads each, several rows per block, where the row is
not held in registers; longer rows a block of 512 threads."""

STAGED_ROW = (4096, 12288)
"""Rows in this range are staged in shared memory where they are not held in registers
(16 to 48 KiB per block)."""

REGISTER_ROW = 32
"""Row elements each thread holds in registers at most (``stage="registers"``): the row is
read from global memory once; 32 float32 (eight 128-bit loads in flight per thread) keep
the kernel near 64 registers per thread."""

MAX_THREADS = 1024


def register_threads(n: int, lanes: int) -> int | None:
    """The fewest threads (a power of two from 32 to 1024) that hold a row of ``n`` in
    registers, ``REGISTER_ROW`` elements each at most, in groups of ``lanes``; None when
    no block can (rows over 32768 float32).

    >>> register_threads(768, 4), register_threads(3000, 4), register_threads(8192, 4)
    (32, 128, 256)
    >>> register_threads(129, 1), register_threads(40000, 4) is None
    (32, True)
    """
    threads = 32
    while threads <= MAX_THREADS:
        if -(-n // (threads * lanes)) * lanes <= REGISTER_ROW:
            return threads
        threads *= 2
    return None


def row_lanes(n: int) -> int:
    """4 (128-bit row accesses) where a row of ``n`` float32 starts 16-byte aligned, else 1."""
    return 4 if n % 4 == 0 else 1


def row_threads(n: int) -> tuple[int, int, str | None]:
    """``(threads per row, rows per block, stage)`` for rows of ``n`` float32 elements, the
    defaults of ``block_per_row``:

    * a row that fits (``register_threads``: up to 32768 float32) is held in registers
      (``stage="registers"``): the fewest threads that hold it, 32 elements each at most
      (768: a warp; 3000: 128 threads; 8192: 256), read once with 128-bit loads where
      ``n % 4 == 0``; short rows share a block of 128 threads (a warp per row, 4 rows);
    * longer rows: one block of 512 threads per row, the row read from global memory in
      each pass (rows over 48 KiB fit no shared stage).

    >>> row_threads(768), row_threads(3000), row_threads(8192), row_threads(40000)
    ((32, 4, 'registers'), (128, 1, 'registers'), (256, 1, 'registers'), (512, 1, None))
    """
    threads = register_threads(n, row_lanes(n))
    if threads is not None:
        return threads, max(1, 128 // threads), "registers"
    return 512, 1, _fallback_stage(n)


def _fallback_stage(n: int) -> str | None:
    return "shared" if STAGED_ROW[0] <= n <= STAGED_ROW[1] else None


_AUTO = "auto"
STAGES = (None, "shared", "registers")


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
    ``rows_per_block`` says otherwise, and ``"auto"`` holds the row in registers when it
    fits those threads. A row count that is not a multiple of ``rows_per_block`` leaves a
    guard on the last block.

    ``stage="registers"``: each thread copies its part of the row into a ``local`` buffer
    once (``cache_read`` at the row, laid out ``[chunk, thread, lane]`` by
    ``transform_layout`` so that each thread's part compacts to registers), 128-bit loads
    and stores where the row length is a multiple of 4; the reductions and the output read
    the registers. The three passes then cost one read and one write of the row.

    Example
    -------
    >>> from workbench import ops
    >>> sch = block_per_row(ops.softmax(4, 100), threads=32, stage=None)
    >>> loops = sch.get_loops(sch.get_block("T_softmax_norm"))
    >>> [sch.get(loop).thread_binding for loop in loops]
    ['blockIdx.x', None, 'threadIdx.x']
    >>> sch = block_per_row(ops.softmax(8, 100))  # a warp per row, 4 rows, row in registers
    >>> loops = sch.get_loops(sch.get_block("T_softmax_norm"))
    >>> [sch.get(loop).thread_binding for loop in loops]
    ['blockIdx.x', 'threadIdx.y', None, 'threadIdx.x', None]
    """
    if stage not in (*STAGES, _AUTO):
        raise ValueError(
            f"block_per_row: stage must be None, 'shared' or 'registers', got {stage!r} "
            "('auto', the default, picks one from the row length)"
        )
    sch = Schedule(func)
    names = [sch.get(b).name for b in sch.get_child_blocks(sch.get_block("root"))]
    *reductions, out = names
    row, column = sch.get_loops(sch.get_block(out))
    n = int(sch.get(column).extent.value)
    lanes = row_lanes(n)
    auto_threads, auto_rows, auto_stage = row_threads(n)
    if rows_per_block is None:  # threads given by hand: one row per block, as before
        rows_per_block = auto_rows if threads is None else 1
    rows_per_block = min(rows_per_block, int(sch.get(row).extent.value))
    if threads is not None and stage == _AUTO:
        fits = -(-n // (threads * lanes)) * lanes <= REGISTER_ROW
        stage = "registers" if fits else _fallback_stage(n)
    threads = auto_threads if threads is None else threads
    stage = auto_stage if stage == _AUTO else stage
    row = bind_rows(sch, row, rows_per_block)
    if stage == "registers":
        _registers(sch, func, reductions, out, row, threads, lanes)
        return sch
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


def bind_rows(sch: Schedule, row, rows_per_block: int):
    """The row loop ``row`` on ``blockIdx.x``, or, for several rows per block, split: the
    blocks on ``blockIdx.x``, the block's rows on ``threadIdx.y``; returns the loop of one
    row (where the row's reductions are computed)."""
    if rows_per_block <= 1:
        sch.bind(row, "blockIdx.x")
        return row
    block_row, row = sch.split(row, factors=[None, rows_per_block])
    sch.bind(block_row, "blockIdx.x")
    sch.bind(row, "threadIdx.y")
    return row


def _split_row(sch: Schedule, loop, threads: int, lanes: int, wide: bool) -> None:
    """``loop`` over a row -> ``chunk / threadIdx.x / lane``: element ``chunk * threads *
    lanes + tx * lanes + lane`` (neighbouring threads, neighbouring groups: coalesced). The
    chunk loop is unrolled in the source (constant register indices); the lane loop is
    vectorized (``wide``: a 128-bit access, the row's remainder guarded per group of 4) or
    unrolled."""
    from workbench.backends.cuda.cuda_vector import LANE_FREE_GUARD

    if lanes > 1:
        chunk, thread, lane = sch.split(loop, factors=[None, threads, lanes])
    else:
        (chunk, thread), lane = sch.split(loop, factors=[None, threads]), None
    sch.bind(thread, "threadIdx.x")
    for unrolled in (chunk,) if wide or lane is None else (chunk, lane):
        sch.unroll(unrolled)
        sch.annotate(unrolled, "pragma_unroll_explicit", 1)
    if wide and lane is not None:
        sch.vectorize(lane)
        sch.annotate(lane, LANE_FREE_GUARD, 1)


def _registers(sch: Schedule, func: PrimFunc, reductions, out, row, threads, lanes) -> None:
    """``stage="registers"`` (``block_per_row``): the row in a per-thread ``local`` stage."""
    *_, column = sch.get_loops(sch.get_block(out))
    _split_row(sch, column, threads, lanes, wide=True)
    for name in reversed(reductions):
        sch.compute_at(sch.get_block(name), row)
    for name in reductions:
        block = sch.get_block(name)
        _split_row(sch, sch.get_loops(block)[-1], threads, lanes, wide=False)
        sch.set_scope(block, 0, "local")
    first = sch.get_block(reductions[0])
    staged = sch.cache_read(first, _input_index(sch, reductions[0], func.params[0].name), "local")
    sch.compute_at(staged, row)
    _split_row(sch, sch.get_loops(staged)[-1], threads, lanes, wide=True)
    width = threads * lanes
    n = int(func.params[0].shape[-1].value if hasattr(func.params[0].shape[-1], "value")
            else func.params[0].shape[-1])
    if lanes > 1:
        layout = lambda r, c: (r, c // width, c % width // lanes, c % lanes)  # noqa: E731
    else:
        layout = lambda r, c: (r, c // width, c % width)  # noqa: E731
    sch.transform_layout(staged, ("write", 0), layout, unset_padding=n % width != 0)


def _input_index(sch: Schedule, block: str, buffer: str) -> int:
    reads = sch.get(sch.get_block(block)).reads
    return next(n for n, region in enumerate(reads) if region.buffer.name == buffer)


def rfactor_shuffle(func: PrimFunc, threads: int = 512) -> Schedule:
    """The rfactor-into-shared route, combined with warp shuffles.

    ``rfactor`` (each reduction split by ``threads`` and ``rfactor``-ed: thread ``t``
    reduces its strided slice into a ``shared`` partial buffer) leaves the final combine as
    a loop over the ``threads`` partials that every thread runs alone. Binding that loop to
    ``threadIdx.x`` makes it a cross-thread reduction: each thread takes one partial and the
    ``cuda`` target combines them with ``shfl_xor_sync`` butterflies
    (``workbench.backends.cuda.cuda_reduction``).

    Example
    -------
    >>> from workbench import ops
    >>> sch = rfactor_shuffle(ops.softmax(4, 100), threads=32)
    >>> from workbench import recipes
    >>> recipes.get("layernorm", "rfactor_shuffle", "cuda").schedule is rfactor_shuffle
    True
    """
    sch = rfactor(func, threads=threads)
    names = [sch.get(b).name for b in sch.get_child_blocks(sch.get_block("root"))]
    for name in names:
        block = sch.get(sch.get_block(name))
        if name.endswith("_rf") or block.init is None:
            continue
        sch.bind(sch.get_loops(sch.get_block(name))[-1], "threadIdx.x")
    return sch


def block_local(func: PrimFunc, threads: int = 32) -> Schedule:
    """Softmax / layernorm, one CUDA block per row.

    The row reductions (the first blocks) are computed at the output's row loop, bound to
    ``blockIdx.x``, with their results in ``local`` scope: each thread of the block
    computes the row statistics itself (no cross-thread reduction: redundant but free of
    barriers); the output's column loop is split over ``threadIdx.x``.
    """
    sch = Schedule(func)
    blocks = sch.get_child_blocks(sch.get_block("root"))
    out = blocks[-1]
    i, j = sch.get_loops(out)
    tx, _ = sch.split(j, factors=[threads, None])
    sch.bind(i, "blockIdx.x")
    for reduction in reversed(blocks[:-1]):
        sch.set_scope(reduction, 0, "local")
        sch.compute_at(reduction, tx)
    sch.bind(tx, "threadIdx.x")
    return sch


def rfactor(func: PrimFunc, threads: int = 32) -> Schedule:
    """Softmax / layernorm, one CUDA block per row, reductions shared across the threads.

    Each row reduction is split ``k = k_0 * threads + k_1`` and ``rfactor``-ed over ``k_1``:
    thread ``k_1`` reduces a strided slice of the row (coalesced: neighbouring threads read
    neighbouring elements) into a ``shared`` partial buffer; then every thread combines the
    ``threads`` partials into its own ``local`` copy of the row statistic. The build puts
    the barrier between the two. The output's columns are split the same way.
    """
    sch = Schedule(func)
    blocks = sch.get_child_blocks(sch.get_block("root"))
    names = [sch.get(b).name for b in blocks]
    reductions, out = names[:-1], names[-1]
    partials = {}
    for name in reductions:
        k = sch.get_loops(sch.get_block(name))[-1]
        _, k_1 = sch.split(k, factors=[None, threads])
        partials[name] = sch.rfactor(k_1, 0)
    i, j = sch.get_loops(sch.get_block(out))
    j_0, j_1 = sch.split(j, factors=[None, threads])
    sch.reorder(j_1, j_0)
    sch.bind(i, "blockIdx.x")
    sch.bind(j_1, "threadIdx.x")
    for name in reversed(reductions):
        sch.compute_at(sch.get_block(name), i)
        sch.compute_at(partials[name], i)
    for name in reductions:
        rf = partials[name]
        sch.bind(sch.get_loops(rf)[1], "threadIdx.x")
        sch.set_scope(rf, 0, "shared")
        sch.set_scope(sch.get_block(name), 0, "local")
    return sch


register("rmsnorm", "block_per_row", "cuda")(block_per_row)
for _op in ("softmax", "layernorm"):
    register(_op, "block_per_row", "cuda")(block_per_row)
    register(_op, "rfactor_shuffle", "cuda")(rfactor_shuffle)
    register(_op, "block_local", "cuda")(block_local)
    register(_op, "rfactor", "cuda")(rfactor)
