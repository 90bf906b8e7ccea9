"""Matrix-vector products on the ``cuda`` target: a matmul whose C has a few rows.

``C[i, j] = sum_k A[i, k] * B[k, j]`` with M of 1 to ``GEMV_ROWS`` (a classifier head at
batch 1, a decoder step): the register-blocked SGEMM's square tiles would compute 32 to 128
rows for each useful one, and its cooperative fetch does not build for M = 1. Here instead:

* one thread per column ``j`` of C (``threads`` consecutive columns a block: the reads of a
  row of B are coalesced), every row ``i`` of its column in a ``local`` accumulator, so each
  element of B is read once and used M times (A's row is the same for the whole warp: a
  broadcast from cache);
* K cut into ``split_k`` slices (``rfactor``) on ``blockIdx.y`` when the columns alone leave
  the GPU empty (N = 1000: 8 blocks), a second kernel summing the slices (where an epilogue
  goes, as in ``register_blocked``).

The kernel reads B once: its time is B's bytes over the memory bandwidth.

Example
-------
>>> from workbench import ops, recipes
>>> sch = recipes.get("matmul", "gemv", "cuda")(ops.matmul(1, 1000, 512))
>>> gemv_split(1000, 512)
32
"""

from __future__ import annotations

from workbench.ir import PrimFunc
from workbench.recipes.matmul_cuda import MIN_BLOCKS, _extent, _local_tile, _split_k
from workbench.recipes.registry import register
from workbench.schedule import Schedule

GEMV_ROWS = 8
"""The most rows of C the ``gemv`` recipe is the default for (``graph_cuda_ops``)."""

GEMV_THREADS = 128
"""Columns of C per block."""

GEMV_SPLITS = (1, 2, 4, 8, 16, 32)
GEMV_MIN_SLICE = 16
"""A K slice keeps at least this much of K."""


def gemv_split(n: int, k: int, threads: int = GEMV_THREADS) -> int:
    """The default ``split_k`` of ``gemv``: the fewest slices of ``GEMV_SPLITS`` that divide
    K, keep ``GEMV_MIN_SLICE`` of it each and bring the grid to ``2 * MIN_BLOCKS`` blocks;
    else the most that fit.

    >>> gemv_split(1000, 512), gemv_split(50000, 768), gemv_split(1000, 100)
    (32, 1, 4)
    """
    columns = -(-n // threads)
    fitting = [s for s in GEMV_SPLITS if k % s == 0 and k // s >= min(k, GEMV_MIN_SLICE)]
    reaching = [s for s in fitting if columns * s >= 2 * MIN_BLOCKS]
    return reaching[0] if reaching else max(fitting)


@register("matmul", "gemv", "cuda")
def gemv(func: PrimFunc, threads: int = GEMV_THREADS, split_k: int | None = None,
         block: str = "C") -> Schedule:
    """One thread per column of C, its M rows in registers, K in ``split_k`` slices
    (``None``: ``gemv_split``) on ``blockIdx.y`` (module docstring).

    Loop nest: ``s (blockIdx.y) / j_0 (blockIdx.x) / j_1 (threadIdx.x) / k / i``; the
    accumulators initialised before the ``k`` loop (``decompose_reduction``).
    """
    if not isinstance(threads, int) or threads < 1 or threads > 1024:
        raise ValueError(f"gemv: threads must be an int in 1..1024, got {threads!r}")
    sch = Schedule(func)
    c = sch.get_block(block)
    _, j, k = sch.get_loops(c)
    n, k_extent = _extent(sch, j), _extent(sch, k)
    if split_k is None:
        split_k = gemv_split(n, k_extent, threads)
    if not isinstance(split_k, int) or split_k < 1 or k_extent % split_k:
        raise ValueError(f"gemv: split_k must be a positive int dividing K={k_extent}, got "
                         f"{split_k!r}")
    if split_k > 1:
        c = _split_k(sch, c, split_k)
    i, j, *outer, k = sch.get_loops(c)
    bj, tx = sch.split(j, factors=[None, threads])
    sch.reorder(*outer, bj, tx, k, i)
    for loop in outer:
        sch.bind(loop, "blockIdx.y")
    sch.bind(bj, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    _local_tile(sch, c, tx)
    sch.decompose_reduction(c, k)
    return sch


__all__ = ["GEMV_ROWS", "GEMV_SPLITS", "GEMV_THREADS", "gemv", "gemv_split"]
