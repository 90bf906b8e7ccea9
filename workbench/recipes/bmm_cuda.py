"""Batched matmul recipe for the ``cuda`` target (``ops.batch_matmul``:
``C[b, i, j] = sum_k A[b, i, k] * B[b, k, j]``, block ``C``, loops ``b, i, j, k``).

``register_blocked``: the SGEMM kernel of ``recipes.matmul_cuda.register_blocked`` per
matrix of the batch, the batch on ``blockIdx.z`` (outermost): a block computes a
``tile x tile`` tile of one ``C[b]`` (``threads x threads`` threads, each a
``per_thread x per_thread`` register tile, 128-bit write-back), the tiles of ``A[b]``
(stored transposed, ``A_shared[k, i]``) and ``B[b]`` staged per ``k_0`` step in shared
memory with cooperative 128-bit loads, double-buffered, the ``k_1`` loop unrolled in the
source. Any shape: the splits leave guards where M, N or K is not a multiple of its tile,
and ``partition_edges`` gives the interior blocks an unguarded copy of the body
(``workbench.backends.cuda.cuda_partition``). The tile defaults to
``matmul_cuda.block_tile`` of the batch's whole grid (``M * batch`` rows): the attention's
``(B * H) x 128 x 128`` score matrices take 32 x 32 tiles of 64 threads, the grid of
every matrix filling the GPU together. No split-K (``blockIdx.z`` holds the batch).

Before it, every batched matmul of a graph (the frontend's masked ``sdpa``: ``Q @ K^T``,
``P @ V``) took the one-thread-per-element baseline: ``graph_cuda_ops.matmul_tiled`` takes
three loops only.

Example
-------
>>> from workbench import ops, recipes
>>> sch = recipes.get("batch_matmul", "register_blocked", "cuda")(ops.batch_matmul(3, 64, 64, 16))
>>> "blockIdx.z" in sch.mod.script()
True
"""

from __future__ import annotations

from workbench.ir import PrimFunc
from workbench.recipes.matmul_cuda import block_tile, stage_register_tiles
from workbench.recipes.registry import register
from workbench.schedule import Schedule

GRID_Z = 65535
"""The most blocks along ``blockIdx.z`` (the batch)."""


def _extent(sch: Schedule, loop) -> int:
    return int(sch.get(loop).extent.value)


@register("batch_matmul", "register_blocked", "cuda")
def register_blocked(
    func: PrimFunc,
    threads: int | None = None,
    per_thread: int | None = None,
    k_tile: int = 8,
    double_buffer: bool | None = None,
    unroll_k: bool = True,
    partition_edges: bool = True,
    block: str = "C",
) -> Schedule:
    """The register-blocked SGEMM per matrix of the batch, the batch on ``blockIdx.z``
    (module docstring). ``threads`` / ``per_thread`` default to ``block_tile(batch * M,
    N)``; ``double_buffer`` (default: when K takes two ``k_tile`` steps or more) stages the
    next step's tiles while the current one is multiplied. ``ValueError`` for a block
    that is not a 4-loop batched matmul or a batch over ``GRID_Z``."""
    sch = Schedule(func)
    c = sch.get_block(block)
    loops = sch.get_loops(c)
    if len(loops) != 4:
        raise ValueError(f"batch_matmul register_blocked: block {block!r} needs the four "
                         f"loops b, i, j, k; got {len(loops)}")
    b, i, j, k = loops
    batch, m, n, k_extent = (_extent(sch, loop) for loop in loops)
    if batch > GRID_Z:
        raise ValueError(f"batch_matmul register_blocked: batch {batch} is over the "
                         f"{GRID_Z} blocks of blockIdx.z")
    if threads is None or per_thread is None:
        auto = block_tile(batch * m, n)
        threads = auto[0] if threads is None else threads
        per_thread = auto[1] if per_thread is None else per_thread
    if double_buffer is None:
        double_buffer = k_extent >= 2 * k_tile
    bi, ty, ii = sch.split(i, factors=[None, threads, per_thread])
    bj, tx, jj = sch.split(j, factors=[None, threads, per_thread])
    ko, ki = sch.split(k, factors=[None, k_tile])
    sch.reorder(b, bi, bj, ty, tx, ko, ki, ii, jj)
    sch.bind(b, "blockIdx.z")
    sch.bind(bi, "blockIdx.y")
    sch.bind(bj, "blockIdx.x")
    sch.bind(ty, "threadIdx.y")
    sch.bind(tx, "threadIdx.x")
    if partition_edges:
        sch.annotate(bi, "cuda.partition_edges", 1)

    # the thread's tile of C[b] in registers, written back with 128-bit stores
    c_local = sch.cache_write(c, 0, "local")
    sch.reverse_compute_at(c_local, tx)
    *_, wj = sch.get_loops(c_local)
    _, lanes = sch.split(wj, factors=[None, 4])
    sch.vectorize(lanes)

    # the block's tiles of A[b] (transposed: [b, k, i]) and B[b] in shared memory per
    # k_0 step, the thread's column and row in registers per k_1 step
    stage_register_tiles(sch, c, ko, ki, threads, lambda q, r, s: (q, s, r),
                         double_buffer, unroll_k, per_thread)
    return sch


__all__ = ["GRID_Z", "register_blocked"]
