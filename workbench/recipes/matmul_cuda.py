"""Matmul recipes for the ``cuda`` target: naive, shared-memory tiled, register-blocked.

``C[i, j] = sum_k A[i, k] * B[k, j]`` (``ops.matmul``), three steps of the usual path:

* ``naive``: one thread per element of C, A and B read from global memory;
* ``shared(..., vector=False)``: the shared tiles copied with scalar accesses;
* ``register_local``: each thread a small tile of C in a ``local`` accumulator, the
  shared tiles fetched with scalar accesses (the step before ``register_blocked``);
* ``shared``: the block's tiles of A and B staged in shared memory per step of ``k_0``,
  copied *cooperatively* (the copy loops fused and spread over the block's threads,
  128-bit loads where the tile rows allow);
* ``register_blocked``: the classic SGEMM kernel. A block computes a ``tile x tile`` tile of
  C (128 x 128 with 16 x 16 threads), each thread an ``8 x 8`` sub-tile in registers
  (``cache_write(C, "local")``); per ``k_0`` step the ``tile x k_tile`` tile of A (stored
  transposed, ``A_shared[k, i]``, so a thread reads its 8 values of a column with two
  ``ld.shared.v4``) and the ``k_tile x tile`` tile of B are fetched cooperatively with
  ``ld.global.v4``, double-buffered (``double_buffer_scope``), and every ``k_1`` step
  loads 8 + 8 values into registers for 64 FMAs (the ``k_1`` loop unrolled in the source).
  The init is hoisted out of the ``k`` loops (``decompose_reduction``).

Example
-------
>>> from workbench import ops, recipes
>>> sch = recipes.get("matmul", "register_blocked", "cuda")(ops.matmul(256, 256, 256))
"""

from __future__ import annotations

from workbench.ir import PrimFunc
from workbench.recipes.registry import register
from workbench.schedule import Schedule


def _cooperative_fetch(sch: Schedule, stage, threads: tuple[int, int], vector: bool) -> None:
    """Spread the copy loops of shared ``stage`` over the block's ``threads`` (y, x): the
    innermost loop split by 4 and vectorized (128-bit accesses) when ``vector``, the rest
    fused and split over ``threadIdx.y`` / ``threadIdx.x`` (a serial loop outside when the
    tile has more groups of 4 than the block has threads)."""
    *_, rows, cols = sch.get_loops(stage)
    if vector:
        cols, lanes = sch.split(cols, factors=[None, 4])
        sch.vectorize(lanes)
    fused = sch.fuse(rows, cols)
    ty, tx = threads
    _, y, x = sch.split(fused, factors=[None, ty, tx])
    sch.bind(y, "threadIdx.y")
    sch.bind(x, "threadIdx.x")


def _thread_tiles(sch: Schedule, c, threads: int, per_thread: int, k_tile: int):
    """``bi, bj (blockIdx) / ty, tx (threadIdx) / k_0 / k_1 / ii, jj``: ``threads x threads``
    threads per block, each a ``per_thread x per_thread`` tile of C accumulated in a
    ``local`` buffer written back under ``tx``. Returns that buffer's block, ``k_0``, ``k_1``."""
    i, j, k = sch.get_loops(c)
    bi, ty, ii = sch.split(i, factors=[None, threads, per_thread])
    bj, tx, jj = sch.split(j, factors=[None, threads, per_thread])
    ko, ki = sch.split(k, factors=[None, k_tile])
    sch.reorder(bi, bj, ty, tx, ko, ki, ii, jj)
    sch.bind(bi, "blockIdx.y")
    sch.bind(bj, "blockIdx.x")
    sch.bind(ty, "threadIdx.y")
    sch.bind(tx, "threadIdx.x")
    c_local = sch.cache_write(c, 0, "local")
    sch.reverse_compute_at(c_local, tx)
    return c_local, ko, ki


@register("matmul", "naive", "cuda")
def naive(func: PrimFunc, tile: int = 16, block: str = "C") -> Schedule:
    """One thread per element of C, ``tile x tile`` threads per block; A and B from global."""
    sch = Schedule(func)
    c = sch.get_block(block)
    i, j, _ = sch.get_loops(c)
    bi, ti = sch.split(i, factors=[None, tile])
    bj, tj = sch.split(j, factors=[None, tile])
    sch.reorder(bi, bj, ti, tj)
    sch.bind(bi, "blockIdx.y")
    sch.bind(bj, "blockIdx.x")
    sch.bind(ti, "threadIdx.y")
    sch.bind(tj, "threadIdx.x")
    return sch


@register("matmul", "shared", "cuda")
def shared(
    func: PrimFunc, tile: int = 16, k_tile: int = 16, vector: bool = True, block: str = "C"
) -> Schedule:
    """Shared-memory tiles of A and B per ``k_0`` step, fetched cooperatively.

    One thread per element of C (``tile x tile`` threads); ``A_shared`` (``tile x k_tile``)
    and ``B_shared`` (``k_tile x tile``) are computed at ``k_0`` (the whole block's tiles:
    the thread loops are relaxed for shared storage) and their copy loops spread over the
    block's threads, with 128-bit accesses when ``vector`` (``k_tile`` and ``tile``
    multiples of 4). The build places the two barriers per step.
    """
    sch = naive(func, tile, block)
    c = sch.get_block(block)
    *_, k = sch.get_loops(c)
    ko, _ = sch.split(k, factors=[None, k_tile])
    for index in (1, 2):
        stage = sch.cache_read(c, index, "shared")
        sch.compute_at(stage, ko)
        _cooperative_fetch(sch, stage, (tile, tile), vector)
    return sch


@register("matmul", "register_blocked", "cuda")
def register_blocked(
    func: PrimFunc,
    threads: int = 16,
    per_thread: int = 8,
    k_tile: int = 8,
    double_buffer: bool = True,
    unroll_k: bool = True,
    block: str = "C",
) -> Schedule:
    """The 128 x 128 register-blocked SGEMM (module docstring): ``threads x threads``
    threads, each an ``per_thread x per_thread`` tile of C in registers; cooperative
    128-bit fetch of A (transposed in shared memory) and B, double-buffered.

    Loop nest: ``bi, bj (blockIdx) / ty, tx (threadIdx) / k_0 / k_1 / ii, jj``; the shapes
    must be multiples of the tiles (``threads * per_thread`` for M and N, ``k_tile`` for
    K), and ``per_thread`` a multiple of 4. ``unroll_k`` unrolls the ``k_1`` loop in the
    generated source (``pragma_unroll_explicit``; NVVM keeps it rolled otherwise): on the
    H200 at 4096, 3.80 ms against 4.12 ms rolled (bench/results.d/cudamem.md).
    """
    sch = Schedule(func)
    c = sch.get_block(block)
    # the thread's tile of C in registers, written back with 128-bit stores
    c_local, ko, ki = _thread_tiles(sch, c, threads, per_thread, k_tile)
    *_, wi, wj = sch.get_loops(c_local)
    _, lanes = sch.split(wj, factors=[None, 4])
    sch.vectorize(lanes)

    # block tiles in shared memory, fetched cooperatively with 128-bit global loads
    a_shared = sch.cache_read(c, 1, "shared")
    b_shared = sch.cache_read(c, 2, "shared")
    sch.compute_at(a_shared, ko)
    sch.compute_at(b_shared, ko)
    sch.transform_layout(a_shared, ("write", 0), lambda r, s: (s, r))  # A_shared[k, i]
    _cooperative_fetch(sch, a_shared, (threads, threads), vector=True)
    _cooperative_fetch(sch, b_shared, (threads, threads), vector=True)
    if double_buffer:
        sch.annotate(a_shared, "double_buffer_scope", 0)
        sch.annotate(b_shared, "double_buffer_scope", 0)

    # per k_1 step: the thread's column of A and row of B in registers (ld.shared.v4)
    for index in (1, 2):
        fragment = sch.cache_read(c, index, "local")
        sch.compute_at(fragment, ki)
        *_, inner = sch.get_loops(fragment)
        _, lanes = sch.split(inner, factors=[None, 4])
        sch.vectorize(lanes)
    sch.unroll(ki)
    if unroll_k:
        sch.annotate(ki, "pragma_unroll_explicit", 1)
    sch.decompose_reduction(c, ko)
    return sch


@register("matmul", "register_local", "cuda")
def register_local(
    func: PrimFunc, threads: int = 4, per_thread: int = 2, k_tile: int = 4, block: str = "C"
) -> Schedule:
    """The first register-blocked step: each thread computes a ``per_thread x per_thread``
    tile of C in a ``local`` accumulator (``cache_write(C, "local")`` +
    ``reverse_compute_at``), with A and B tiles staged in shared memory per ``k_0`` step
    (cooperative fetch, scalar accesses).

    Loop order: ``bi, bj (blockIdx) / ti, tj (threadIdx) / k_0 / k_1 / ii, ij``.
    """
    sch = Schedule(func)
    c = sch.get_block(block)
    _, ko, _ = _thread_tiles(sch, c, threads, per_thread, k_tile)
    a_shared = sch.cache_read(c, 1, "shared")
    sch.compute_at(a_shared, ko)
    _cooperative_fetch(sch, a_shared, (threads, threads), vector=False)
    b_shared = sch.cache_read(c, 2, "shared")
    sch.compute_at(b_shared, ko)
    _cooperative_fetch(sch, b_shared, (threads, threads), vector=False)
    return sch
