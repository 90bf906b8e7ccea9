"""Hand-written CUDA schedules (recipes) for the operator library: the GPU baselines.

Each recipe takes the operator's ``PrimFunc`` and returns a ``Schedule`` ready for
``build(sch, target="cuda")``; the same schedules build for ``cpu`` too, where bound loops
are serial loops ("one schedule, two targets").

These belong in ``workbench/recipes/`` (DESIGN.md); they live here until that package lands.

Example
-------
>>> from workbench import ops
>>> sch = matmul_shared(ops.matmul(32, 32, 32), tile=8, k_tile=8)
>>> kernel = build(sch, target="cuda")                # doctest: +SKIP
"""

from __future__ import annotations

from workbench.ir import PrimFunc
from workbench.schedule import Schedule


def _spread_copy(sch: Schedule, stage, threads: tuple[int, int]) -> None:
    """Cooperative fetch: the copy loops of shared ``stage`` fused and spread over the
    block's ``(threadIdx.y, threadIdx.x)`` threads (a serial loop outside, a guard when
    the tile is not a multiple of the block)."""
    fused = sch.fuse(*sch.get_loops(stage)[-2:])
    _, y, x = sch.split(fused, factors=[None, *threads])
    sch.bind(y, "threadIdx.y")
    sch.bind(x, "threadIdx.x")


def _output_block(sch: Schedule, name: str | None):
    blocks = sch.get_child_blocks(sch.get_block("root"))
    return sch.get_block(name) if name else blocks[-1]


def matmul_naive(func: PrimFunc, tile: int = 8, block: str = "C") -> Schedule:
    """One thread per output element, ``tile x tile`` threads per block.

    ``i, j -> (blockIdx.y, threadIdx.y), (blockIdx.x, threadIdx.x)``; the ``k`` loop runs
    in each thread, reading A and B from global memory.
    """
    sch = Schedule(func)
    c = sch.get_block(block)
    i, j, k = sch.get_loops(c)
    bi, ti = sch.split(i, factors=[None, tile])
    bj, tj = sch.split(j, factors=[None, tile])
    sch.reorder(bi, bj, ti, tj)
    sch.bind(bi, "blockIdx.y")
    sch.bind(bj, "blockIdx.x")
    sch.bind(ti, "threadIdx.y")
    sch.bind(tj, "threadIdx.x")
    return sch


def matmul_shared(func: PrimFunc, tile: int = 8, k_tile: int = 8, block: str = "C") -> Schedule:
    """Shared-memory tiling: each block stages a ``tile x k_tile`` tile of A and a
    ``k_tile x tile`` tile of B in shared memory per step of ``k_0``.

    ``cache_read(C, A, "shared")`` and ``compute_at`` at ``k_0``: under the thread loops a
    shared stage covers the whole block's tile (the threadIdx loops are relaxed, as in
    TVM); its copy loops are fused and spread over the block's threads (cooperative
    fetch; ``workbench.recipes.matmul_cuda`` adds 128-bit accesses).
    The build inserts the two barriers (after the copy, before the next copy).
    """
    sch = matmul_naive(func, tile, block)
    c = sch.get_block(block)
    *_, k = sch.get_loops(c)
    ko, _ = sch.split(k, factors=[None, k_tile])
    a_shared = sch.cache_read(c, 1, "shared")
    sch.compute_at(a_shared, ko)
    _spread_copy(sch, a_shared, (tile, tile))
    b_shared = sch.cache_read(c, 2, "shared")
    sch.compute_at(b_shared, ko)
    _spread_copy(sch, b_shared, (tile, tile))
    return sch


def matmul_register_blocked(
    func: PrimFunc, threads: int = 4, per_thread: int = 2, k_tile: int = 4, block: str = "C"
) -> Schedule:
    """Register blocking: each thread computes a ``per_thread x per_thread`` tile of C in a
    ``local`` accumulator (``cache_write(C, "local")`` + ``reverse_compute_at``), with A
    and B tiles staged in shared memory per ``k_0`` step (cooperative fetch).

    Loop order: ``bi, bj (blockIdx) / ti, tj (threadIdx) / k_0 / k_1 / ii, ij``.
    """
    sch = Schedule(func)
    c = sch.get_block(block)
    i, j, k = sch.get_loops(c)
    bi, ti, ii = sch.split(i, factors=[None, threads, per_thread])
    bj, tj, ij = sch.split(j, factors=[None, threads, per_thread])
    ko, ki = sch.split(k, factors=[None, k_tile])
    sch.reorder(bi, bj, ti, tj, ko, ki, ii, ij)
    sch.bind(bi, "blockIdx.y")
    sch.bind(bj, "blockIdx.x")
    sch.bind(ti, "threadIdx.y")
    sch.bind(tj, "threadIdx.x")
    c_local = sch.cache_write(c, 0, "local")
    sch.reverse_compute_at(c_local, tj)
    a_shared = sch.cache_read(c, 1, "shared")
    sch.compute_at(a_shared, ko)
    _spread_copy(sch, a_shared, (threads, threads))
    b_shared = sch.cache_read(c, 2, "shared")
    sch.compute_at(b_shared, ko)
    _spread_copy(sch, b_shared, (threads, threads))
    return sch


def elementwise_fused(func: PrimFunc, threads: int = 32) -> Schedule:
    """Inline every producer into the last block, fuse its loops, one thread per element."""
    sch = Schedule(func)
    blocks = sch.get_child_blocks(sch.get_block("root"))
    for producer in blocks[:-1]:
        sch.compute_inline(producer)
    out = sch.get_child_blocks(sch.get_block("root"))[-1]
    fused = sch.fuse(*sch.get_loops(out))
    bx, tx = sch.split(fused, factors=[None, threads])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    return sch


def elementwise_rows(func: PrimFunc, threads: int = 256) -> Schedule:
    """Inline the producers; one CUDA block per row, threads striding along the row.

    ``j = j_0 * threads + j_1`` with ``j_1`` on ``threadIdx.x``: neighbouring threads touch
    neighbouring elements (coalesced) and no ``//`` or ``%`` of a fused index is computed.
    """
    sch = Schedule(func)
    blocks = sch.get_child_blocks(sch.get_block("root"))
    for producer in blocks[:-1]:
        sch.compute_inline(producer)
    out = sch.get_child_blocks(sch.get_block("root"))[-1]
    i, j = sch.get_loops(out)
    j_0, j_1 = sch.split(j, factors=[None, threads])
    sch.reorder(j_1, j_0)
    sch.bind(i, "blockIdx.x")
    sch.bind(j_1, "threadIdx.x")
    return sch


def elementwise_unfused(func: PrimFunc, threads: int = 32) -> Schedule:
    """Each block its own kernel (the intermediates are global workspace buffers)."""
    sch = Schedule(func)
    for blk in sch.get_child_blocks(sch.get_block("root")):
        fused = sch.fuse(*sch.get_loops(blk))
        bx, tx = sch.split(fused, factors=[None, threads])
        sch.bind(bx, "blockIdx.x")
        sch.bind(tx, "threadIdx.x")
    return sch


def row_reduction_per_block(func: PrimFunc, threads: int = 32) -> Schedule:
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


def row_reduction_rfactor(func: PrimFunc, threads: int = 32) -> Schedule:
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


def conv2d_direct(func: PrimFunc, threads: int = 32) -> Schedule:
    """Padding inlined; one thread per output element; the reduction in each thread."""
    sch = Schedule(func)
    blocks = sch.get_child_blocks(sch.get_block("root"))
    for producer in blocks[:-1]:
        sch.compute_inline(producer)
    out = sch.get_child_blocks(sch.get_block("root"))[-1]
    n, k, y, x, *_ = sch.get_loops(out)
    fused = sch.fuse(n, k, y, x)
    bx, tx = sch.split(fused, factors=[None, threads])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    return sch
