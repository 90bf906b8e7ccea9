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

from workbench.backends.cuda.cuda_prefetch import STORE_ON_LAST
from workbench.backends.cuda.numba_cuda_printer import MIN_BLOCKS_ANNOTATION
from workbench.ir import PrimFunc
from workbench.recipes.registry import register
from workbench.schedule import Schedule, ScheduleError


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


MIN_BLOCKS = 132
"""Blocks the default tiling asks for at least: one per multiprocessor of an H100/H200
(a grid of fewer leaves multiprocessors idle; the 128 x 128 tile at 511 x 257 is 12 blocks)."""

TILINGS = ((16, 8), (16, 4), (8, 4))
"""``(threads, per_thread)`` per block side, largest tile first: 128 (256 threads, an 8 x 8
register tile each), 64 (256 threads, 4 x 4), 32 (64 threads, 4 x 4)."""


def block_tile(m: int, n: int) -> tuple[int, int]:
    """The default ``(threads, per_thread)`` of ``register_blocked`` for an ``m x n`` C: the
    largest tile of ``TILINGS`` whose grid has at least ``MIN_BLOCKS`` blocks (the
    smallest tile when none has).

    >>> block_tile(4000, 4000), block_tile(1000, 3000), block_tile(511, 257)
    ((16, 8), (16, 8), (8, 4))
    """
    for threads, per_thread in TILINGS:
        tile = threads * per_thread
        if -(-m // tile) * -(-n // tile) >= MIN_BLOCKS:
            return threads, per_thread
    return TILINGS[-1]


SPLIT_K_MIN_SLICE = 32
"""A split-K slice keeps at least this much of K (4 steps of the default k tile)."""

SPLIT_K_FACTORS = (2, 3, 4)

SPLIT_K_WHOLE_STEPS = True
"""Whether ``split_k_factor``, for a K that is whole steps of the k tile (8), takes only
splits whose slices are whole steps too, from ``SPLIT_K_FACTORS`` and 5, 6, 8 (the graph's
own splits, ``graph_cuda_ops._splits``, already are). 1000 x 3000 x 2000 split in 4 has
slices of 500 = 62.5 steps: every ``k_1`` step of the unrolled tile gets a guard and the
last slice's blocks run the guarded copy of the kernel (scalar loads, SASS: 16 ``LDG.E``
beside 4 ``LDG.E.128``); whole steps give 5 slices of 400. On since 2026-12-07: on the H100
1000 x 3000 x 2000 took 0.454 ms in 5 slices against 0.511 ms in 4 (0.66x against 0.59x
cuBLAS; bench/gpu/results/h100_run8_sgemm_convgemm.json)."""


def split_k_factor(m: int, n: int, k: int, tile: int) -> int:
    """The default ``split_k`` of ``register_blocked``: 1 (no split) when the grid of
    ``tile x tile`` blocks has at least ``4 * MIN_BLOCKS`` blocks; otherwise the smallest
    of ``SPLIT_K_FACTORS`` that divides K (slices with no remainder), leaves each slice at
    least ``SPLIT_K_MIN_SLICE`` and brings the grid there, else the largest that divides.

    Measured on the H200 (bench/RESULTS.md, "single-pass rows, split-K"): 1000 x 3000 x
    2000 (192 blocks of 128) 0.511 ms unsplit, 0.539 ms in 2 slices, 0.490 ms in 4;
    511 x 257 x 129 (144 blocks of 32) 0.026 ms unsplit, 0.018 ms in 3.

    >>> split_k_factor(4000, 4000, 4000, 128), split_k_factor(1000, 3000, 2000, 128)
    (1, 5)
    >>> split_k_factor(511, 257, 129, 32), split_k_factor(511, 257, 127, 32)
    (3, 1)
    """
    blocks = -(-m // tile) * -(-n // tile)
    target = 4 * MIN_BLOCKS
    if blocks >= target:
        return 1
    fitting = [s for s in SPLIT_K_FACTORS if k % s == 0 and k // s >= SPLIT_K_MIN_SLICE]
    if SPLIT_K_WHOLE_STEPS and k % 8 == 0:
        fitting = [s for s in sorted({*SPLIT_K_FACTORS, 5, 6, 8})
                   if k % s == 0 and (k // s) % 8 == 0 and k // s >= SPLIT_K_MIN_SLICE]
    reaching = [s for s in fitting if blocks * s >= target]
    return reaching[0] if reaching else max(fitting, default=1)


def _split_k(sch: Schedule, c, split_k: int):
    """``rfactor`` K into ``split_k`` slices: returns the partial block (``C_rf``, loops
    ``i, j, s, k``); the sum over the slices (the original block) gets one thread per
    element of C, 256 per block."""
    name = sch.get(c).name
    *_, k = sch.get_loops(c)
    slice_loop, _ = sch.split(k, factors=[split_k, None])
    partial = sch.rfactor(slice_loop, 0)
    total = sch.get_block(name)
    i, j, _ = sch.get_loops(total)
    _, x = sch.split(sch.fuse(i, j), factors=[None, 256])
    sch.bind(sch.get_loops(total)[0], "blockIdx.x")
    sch.bind(x, "threadIdx.x")
    return partial


PREFETCH_STORE_ON_LAST = True
"""Whether ``stage_register_tiles`` marks its ``k_0`` loop with
``cuda_prefetch.STORE_ON_LAST`` (the prefetched registers stored at every iteration, so the
compiler keeps the global loads before the compute). On since 2026-12-07: on the H100 4000^3
took 3.65 ms with it (and ``TILE_64_AS_8X8``) against 3.84 ms (0.72x against 0.68x cuBLAS;
bench/gpu/results/h100_run8_sgemm_convgemm.json)."""

BLOCKS_PER_SM = 2
"""Blocks of ``register_blocked`` with 8 x 8 register tiles a multiprocessor should hold at
once (its launch bounds' second value, ``MIN_BLOCKS_ANNOTATION``; 0: no bound). ptxas
(sm_90) gives the 128 tile 123 registers at 4096^3 (two blocks of 256 threads fit either
way), but 134 to the partitioned kernel of 1000 x 3000 x 2000 and 165 to a 1000 x 3000
linear + GELU (predicated edges: two copies of the body): one block per multiprocessor.
Bounded by 2 they take 120 and 128 registers, no spill. With ``PREFETCH_STORE_ON_LAST``
the 4096^3 kernel would take 149 unbounded, 128 and 8 bytes spilled bounded. A 4 x 4
tile needs far fewer, and a bound only loosens ptxas there (66 -> 80): not asked. Nor
without ``partition_edges``: the one guarded body of 4000^3 takes 240 registers, and bounded
to 128 it spilled 1456 bytes. The default since 2026-12-05 on this evidence; timed on the
H100 2026-12-07: 1000 x 3000 x 2000 0.511 ms bounded against 0.603 ms unbounded, 4000^3 and
511 x 257 x 129 unchanged (bench/gpu/results/h100_run8_sgemm_convgemm.json)."""

TILE_64_AS_8X8 = True
"""Whether ``register_blocked`` computes a 64 x 64 block tile asked as 16 x 16 threads of
4 x 4 values with 8 x 8 threads of 8 x 8 values instead (same grid, same plans). SASS
(sm_90, 1024 x 768 x 768): 16 x 16 x (4 x 4) issues 128 FFMAs in a 376-instruction loop
(34%: two ``ld.shared.v4`` feed 16 FMAs), 8 x 8 x (8 x 8) 512 in 848 (60%), at 123
registers (156 with ``PREFETCH_STORE_ON_LAST``, which it needs: its copy moves two groups
of 4 a thread, prefetched only then). Fewer warps a block (2 against 8): a small grid keeps
fewer warps per multiprocessor. On since 2026-12-07: on the H100 resnet18 b16 took 2.75 ms
against 3.08 ms with the 16 x 16 block (its 64 x 576 x 50176 layer-1 matmuls 131-136 us
against 162-166), 1.05x torch eager (bench/gpu/results/h100_run8_sgemm_convgemm.json).
It applies to every 64 tile asked as 16 x 16 threads of 4 x 4 (the defaults', the graph's
and a caller's alike: the tile, grid and result are the same); set it False for the
16 x 16 block."""

SWIZZLE_B = False
"""Whether ``register_blocked`` (and the batched recipe) store the block's tile of B in
shared memory swizzled (``swizzle_b``) where the tile allows. Off: built and tested on the
simulator, not yet timed on a GPU."""


def swizzle_b(sch: Schedule, b_shared, threads: int, per_thread: int) -> bool:
    """The shared tile of B laid out so that a thread's row of ``per_thread`` values is
    ``per_thread / 4`` groups of 4, each group of the block's threads side by side
    (``B_shared[k, j]`` at ``[k, j // T, j % p // 4, j % T // p, j % 4]``, ``T`` the tile
    width ``threads * per_thread``): a quarter-warp's ``ld.shared.v4`` of 8 threads then
    reads 128 consecutive bytes, where the plain layout spaced them ``4 * per_thread`` bytes
    apart (two threads per bank at ``per_thread`` 8: a 2-way conflict). False (the layout
    unchanged) for ``per_thread`` 4 (already consecutive) or an N that is not a multiple of
    the tile (the layout must be a bijection of the whole buffer)."""
    tile = threads * per_thread
    if per_thread <= 4:
        return False

    def swizzled(j):
        return j // tile, j % per_thread // 4, j % tile // per_thread, j % 4

    def index_map(k, j):
        return (k, *swizzled(j))

    def batched_map(b, k, j):
        return (b, k, *swizzled(j))

    batched = len(sch.get(b_shared).writes[0].buffer.shape) == 3
    try:
        sch.transform_layout(b_shared, ("write", 0), batched_map if batched else index_map)
    except ScheduleError:
        return False
    return True


def stage_register_tiles(sch: Schedule, c, ko, ki, threads: int, transpose_a,
                         double_buffer: bool, unroll_k: bool, per_thread: int = 4) -> None:
    """The register-blocked SGEMM's staging, shared by the batched recipe (``bmm_cuda``):
    per ``k_0`` step the block's tiles of A (``transpose_a``: its shared layout, k first) and
    B (``swizzle_b`` where ``SWIZZLE_B``) in shared memory, fetched cooperatively with
    128-bit global loads (double-buffered if asked); per ``k_1`` step the thread's column of
    A and row of B in registers (``ld.shared.v4``); ``k_1`` unrolled; the reduction's init
    decomposed at ``k_0``."""
    a_shared = sch.cache_read(c, 1, "shared")
    b_shared = sch.cache_read(c, 2, "shared")
    sch.compute_at(a_shared, ko)
    sch.compute_at(b_shared, ko)
    sch.transform_layout(a_shared, ("write", 0), transpose_a)
    if SWIZZLE_B:
        swizzle_b(sch, b_shared, threads, per_thread)
    if PREFETCH_STORE_ON_LAST:
        sch.annotate(ko, STORE_ON_LAST, 1)
    _cooperative_fetch(sch, a_shared, (threads, threads), vector=True)
    _cooperative_fetch(sch, b_shared, (threads, threads), vector=True)
    if double_buffer:
        sch.annotate(a_shared, "double_buffer_scope", 0)
        sch.annotate(b_shared, "double_buffer_scope", 0)
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


def _extent(sch: Schedule, loop) -> int:
    return int(sch.get(loop).extent.value)


def _thread_loops(sch: Schedule, c, threads: int, per_thread: int, k_tile: int):
    """``bi, bj (blockIdx) / ty, tx (threadIdx) / k_0 / k_1 / ii, jj``: ``threads x threads``
    threads per block, each a ``per_thread x per_thread`` tile of C. Returns ``bi``, ``tx``,
    ``k_0``, ``k_1``. A split-K block (``C_rf``: loops ``i, j, s, k``) gets its slice ``s``
    on ``blockIdx.z``, outermost."""
    i, j, *outer, k = sch.get_loops(c)
    bi, ty, ii = sch.split(i, factors=[None, threads, per_thread])
    bj, tx, jj = sch.split(j, factors=[None, threads, per_thread])
    ko, ki = sch.split(k, factors=[None, k_tile])
    sch.reorder(*outer, bi, bj, ty, tx, ko, ki, ii, jj)
    for loop in outer:
        sch.bind(loop, "blockIdx.z")
    sch.bind(bi, "blockIdx.y")
    sch.bind(bj, "blockIdx.x")
    sch.bind(ty, "threadIdx.y")
    sch.bind(tx, "threadIdx.x")
    return bi, tx, ko, ki


def _local_tile(sch: Schedule, c, tx):
    """The thread's tile of C accumulated in a ``local`` buffer, written back under ``tx``."""
    c_local = sch.cache_write(c, 0, "local")
    sch.reverse_compute_at(c_local, tx)
    return c_local


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
    threads: int | None = None,
    per_thread: int | None = None,
    k_tile: int = 8,
    double_buffer: bool = True,
    unroll_k: bool = True,
    partition_edges: bool = True,
    split_k: int | None = None,
    block: str = "C",
) -> Schedule:
    """The 128 x 128 register-blocked SGEMM (module docstring): ``threads x threads``
    threads, each an ``per_thread x per_thread`` tile of C in registers; cooperative
    128-bit fetch of A (transposed in shared memory) and B, double-buffered.

    Loop nest: ``bi, bj (blockIdx) / ty, tx (threadIdx) / k_0 / k_1 / ii, jj``;
    ``per_thread`` a multiple of 4. Any shape: where M, N or K is not a multiple of its tile
    the splits leave guards, and ``partition_edges`` (the default) marks the kernel for
    ``workbench.backends.cuda.cuda_partition``: blocks wholly inside C run a copy of the body
    without the M/N guards (128-bit loads and stores, an unguarded register tile), only the
    last block row and column run the guarded copy. ``threads`` and ``per_thread`` left
    ``None`` are chosen from M and N by ``block_tile``; a 64 tile of 16 x 16 threads of
    4 x 4, chosen or asked, runs as 8 x 8 threads of 8 x 8 while ``TILE_64_AS_8X8``
    (the default). ``unroll_k`` unrolls the ``k_1`` loop in the
    generated source (``pragma_unroll_explicit``; NVVM keeps it rolled otherwise): on the
    H200 at 4096, 3.80 ms against 4.12 ms rolled (bench/results.d/cudamem.md).

    ``split_k`` (``None``: chosen from the shape by ``split_k_factor`` for a matmul alone,
    1 with an epilogue; it must divide K):
    K cut into that many slices (``rfactor``), each slice a grid of its own on
    ``blockIdx.z`` writing a partial C (``C_rf``, global), then a second kernel sums the
    slices: more blocks when C is too small to fill the GPU, and a shorter serial k loop
    per block.
    """
    sch = Schedule(func)
    c = sch.get_block(block)
    i, j, k = sch.get_loops(c)
    m, n, k_extent = _extent(sch, i), _extent(sch, j), _extent(sch, k)
    if threads is None or per_thread is None:
        auto = block_tile(m, n)
        threads = auto[0] if threads is None else threads
        per_thread = auto[1] if per_thread is None else per_thread
    if TILE_64_AS_8X8 and (threads, per_thread) == (16, 4):
        threads, per_thread = 8, 8
    if split_k is None:  # a matmul alone (an epilogue would read the partial sums)
        alone = len(sch.get_child_blocks(sch.get_block("root"))) == 1
        split_k = split_k_factor(m, n, k_extent, threads * per_thread) if alone else 1
    if not isinstance(split_k, int) or split_k < 1 or k_extent % split_k:
        raise ValueError(
            f"register_blocked: split_k must be a positive int dividing K={k_extent}, got "
            f"{split_k!r} (a slice with a remainder would need its partial C filled first)"
        )
    if split_k > 1:
        c = _split_k(sch, c, split_k)
    bi, tx, ko, ki = _thread_loops(sch, c, threads, per_thread, k_tile)
    if partition_edges:
        sch.annotate(bi, "cuda.partition_edges", 1)
    if (BLOCKS_PER_SM and partition_edges and per_thread >= 8
            and threads * threads * BLOCKS_PER_SM <= 2048):
        sch.annotate(bi, MIN_BLOCKS_ANNOTATION, BLOCKS_PER_SM)

    # the thread's tile of C in registers, written back with 128-bit stores
    c_local = _local_tile(sch, c, tx)
    *_, wi, wj = sch.get_loops(c_local)
    _, lanes = sch.split(wj, factors=[None, 4])
    sch.vectorize(lanes)

    # block tiles in shared memory, fetched cooperatively with 128-bit global loads
    stage_register_tiles(sch, c, ko, ki, threads, lambda r, s: (s, r),  # A_shared[k, i]
                         double_buffer, unroll_k, per_thread)
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
    _, tx, ko, _ = _thread_loops(sch, c, threads, per_thread, k_tile)
    _local_tile(sch, c, tx)
    a_shared = sch.cache_read(c, 1, "shared")
    sch.compute_at(a_shared, ko)
    _cooperative_fetch(sch, a_shared, (threads, threads), vector=False)
    b_shared = sch.cache_read(c, 2, "shared")
    sch.compute_at(b_shared, ko)
    _cooperative_fetch(sch, b_shared, (threads, threads), vector=False)
    return sch
