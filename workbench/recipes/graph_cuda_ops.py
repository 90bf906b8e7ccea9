"""CUDA schedules by rule for graph kernels built from the operator library.

The ``cuda`` counterpart of ``workbench.recipes.graph_cpu_ops``: a kernel is recognised by its
blocks (``workbench.graph.lower_ops`` builds them from the library) and gets the matching
``cuda`` recipe of ``workbench.recipes``; a kernel no rule takes keeps the thread-binding
baseline of ``workbench.recipes.graph_cuda`` (one thread per output element):

- ``ops.matmul`` plus an elementwise epilogue (``linear``: ``x @ W + b``, ``gelu(...)``,
  a residual ``+ x``): the register-blocked SGEMM (``recipes.matmul_cuda``), its tile and
  K split from the shape (``matmul_plan`` under ``MATMUL_POLICY``: the least predicted time
  of whole waves of blocks), the epilogue inlined into the register tile's write-back (K
  whole) or computed by the kernel that sums the K slices, so the result is written once;
  with at most ``GEMV_ROWS`` rows of C (a classifier head at batch 1): the ``gemv`` recipe
  (``recipes.gemv_cuda``), a thread per column with its rows in registers, K split;
- ``ops.softmax`` / ``ops.layernorm`` (no epilogue): one block per row with warp-shuffle
  reductions (``recipes.rows_cuda.block_per_row``), threads per row from the row length;
- ``ops.batch_matmul`` plus an epilogue (``torch.bmm``, a batched ``@``): the same SGEMM
  per matrix, the batch on ``blockIdx.z`` (``bmm_tiled``, ``recipes.bmm_cuda``);
- attention (``scores``, softmax, ``attention``: the ``sdpa`` pattern): a tile of query
  rows per block, a register tile of rows x keys per lane, the keys in shared memory
  (``attention_tiled``: the ``warp_tiles`` recipe of ``recipes.attention_cuda``, else
  ``warp_rows``, a warp per row); its fallback, one block per query
  row (``attention_rows``): the row of scores, its softmax and the weighted sum of values
  all in one kernel, the scores row in shared memory, the max and sum as warp-shuffle
  allreduces;
- ``ops.conv2d_nchw`` plus an epilogue: the implicit-GEMM ``register_tiled`` recipe
  (``recipes.conv2d_cuda``; ``tiled`` where it fails), the epilogue inlined into the
  register tile's write-back;
  ``ops.depthwise_conv2d_nchw``: its ``tiled`` recipe (the channel's window in shared);
- ``ops.max_pool2d`` / ``ops.avg_pool2d`` plus an epilogue: a thread per output, the padding
  inlined, the window reduced in a register (``pool_threads``);
- a purely elementwise kernel whose last extent is a multiple of 4: the ``v4`` recipe
  (``recipes.elementwise_cuda``: 4 consecutive elements per thread, 128-bit accesses).

Every rule works on a fresh ``Schedule``; one that does not apply (``ScheduleError``,
``ValueError``) leaves the kernel to the next rule and finally to the baseline.
"""

from __future__ import annotations

import math

from workbench.ir.analysis import find_blocks
from workbench.ir.stmt import IterKind
from workbench.ops.conv import IM2COL_DIMS
from workbench.recipes import matmul_cuda
from workbench.recipes.graph_cuda import bind_block
from workbench.schedule import Schedule, ScheduleError

MIN_BLOCKS = 128
"""Blocks a graph matmul's dividing tiling asks for at least (``matmul_tiling``,
``bmm_tiling``). Not the SGEMM recipe's ``matmul_cuda.MIN_BLOCKS`` (132, the H100/H200's
multiprocessors): a power-of-two grid of exactly 128 blocks keeps the wider tile here (the
block d 256 at batch 16: its 2048 x 256 projections, 128 blocks of 64, timed at 1.69x eager
on the H100 with them; 132 would give them the 32 tile, untimed)."""

TILINGS = (*matmul_cuda.TILINGS, (4, 4))
"""``(threads, per_thread)`` per side of a matmul block, largest tile first: the SGEMM
recipe's own (``matmul_cuda.TILINGS``: 128, 64, 32) and 16 (16 threads), which a graph
kernel takes only where nothing wider divides M and N (the simulator's sizes)."""

ROW_THREADS = 256
"""Threads per block of the attention rows and of the elementwise kernels."""

_FAILS = (ScheduleError, ValueError, IndexError, KeyError, LookupError, TypeError)


def _blocks(func) -> list:
    return find_blocks(func)


def _names(func) -> list[str]:
    return [b.name for b in find_blocks(func)]


def _extents(block) -> list[int]:
    return [int(iv.dom.extent.value) for iv in block.iter_vars]


def matmul_tiling(m: int, n: int, k: int) -> tuple[int, int, int] | None:
    """``(threads, per_thread, k_tile)`` of ``register_blocked`` for an ``m x n x k``
    matmul: of the ``TILINGS`` that divide M and N, the largest whose grid has at least
    ``MIN_BLOCKS`` blocks, else the smallest of 64 threads or more that divides (16-thread
    blocks only when nothing else divides); None when none divides, and None too when the
    recipe's own tile for any shape (``matmul_cuda.block_tile``, 64 or 128) is wider than
    the dividing one: its predicated edges cost less than a narrow tile everywhere (H100,
    4000^3: 3.81 ms with the 128 tile and predicated edges, 5.08 ms with the dividing 32).

    >>> matmul_tiling(2048, 768, 256), matmul_tiling(2048, 256, 512), matmul_tiling(128, 256, 64)
    ((16, 4, 8), (16, 4, 8), (8, 4, 8))
    >>> matmul_tiling(16, 96, 32), matmul_tiling(10, 96, 32), matmul_tiling(4000, 4000, 4000)
    ((4, 4, 8), None, None)
    """
    k_tile = 8 if k % 8 == 0 else 4 if k % 4 == 0 else None
    if k_tile is None:
        return None
    fits = [(t, p) for t, p in TILINGS if m % (t * p) == 0 and n % (t * p) == 0]
    if not fits:
        return None
    chosen = next((f for f in fits
                   if f[0] >= 8 and (m // (f[0] * f[1])) * (n // (f[0] * f[1])) >= MIN_BLOCKS),
                  None)
    if chosen is None:
        chosen = ([f for f in fits if f[0] >= 8] or fits)[-1]
    own = math.prod(matmul_cuda.block_tile(m, n))
    if own >= 64 and own > math.prod(chosen):
        return None
    return (*chosen, k_tile)


def _inline_epilogue(sch: Schedule, writer: str) -> bool:
    """Inline the elementwise ``out`` block into ``writer``; False when it cannot be."""
    if "out" not in _names(sch.mod):
        return True
    try:
        sch.reverse_compute_inline(sch.get_block("out"))
    except _FAILS:
        return False
    return True


MATMUL_POLICIES = ("fill", "split", "wide", "waves")
"""How ``matmul_tiled`` chooses the tile and the K split of a matmul with an epilogue
(``linear``'s bias, a GELU, a residual; a matmul alone keeps the recipe's own split):

- ``"fill"``: ``matmul_tiling``'s tile (the largest whose grid fills the GPU), K whole,
  the epilogue in the register tile's write-back;
- ``"split"``: that tile, K split by ``matmul_cuda.split_k_factor`` where the grid is under
  4 blocks per multiprocessor, the slices' partial sums added by a second kernel that then
  computes the epilogue (``_epilogue_after_split``);
- ``"wide"``: the 128 x 128 tile (8 x 8 registers a thread, predicated edges) for M and N of
  256 or more, K split into up to ``WIDE_SPLITS`` slices until the grid has 4 blocks per
  multiprocessor, the epilogue after the sum as in ``"split"``;
- ``"waves"``: the tile (``"fill"``'s or 128) and split whose predicted time is least
  (``predicted_matmul_s``: whole waves of blocks over the multiprocessors, K per slice,
  the partial sums' traffic).

On an H100 (bench/RESULTS.md, 2026-12-05) GPT-2's projections at batch 8 x 128 tokens
(M 1024, grids of 48-192 blocks of 64) ran at 0.53-0.74x cuBLAS with ``"fill"``; ``"split"``
gained on 4 of 6 shapes and lost on 2."""

MATMUL_POLICY = "waves"
"""The default of ``MATMUL_POLICIES``. On an H100 (bench/RESULTS.md, 2026-12-05, part
``policy`` of ``bench/gpu/gpu_plan.py``, one run): GPT-2 small at batch 8 x 128 tokens
9.54 ms with ``"fill"``, 8.31 ``"split"``, 7.16 ``"wide"``, 7.30 ``"waves"``; the d 256
block at batch 16 0.156, 0.148, 0.199, 0.135 ms: ``"waves"`` is within 2% of the best on
both (``"wide"`` loses 47% on the block's short-K projection)."""

WIDE_SPLITS = (1, 2, 3, 4, 6, 8)
"""The K splits the ``"wide"`` policy may take (the first reaching the grid it asks for)."""


WAVE_SLOTS = {side: per_sm * matmul_cuda.MIN_BLOCKS
              for side, per_sm in ((128, 2), (64, 4), (32, 8), (16, 16))}
"""Blocks of each tile side running at once on an H100/H200 (``matmul_cuda.MIN_BLOCKS``:
its 132 multiprocessors; a block of the 128 tile holds 256 threads of up to 128 registers: 2 a
multiprocessor)."""

WAVE_US_PER_K = {128: 0.285, 64: 0.166, 32: 0.091, 16: 0.087}
"""Microseconds one wave of blocks of each tile side takes per unit of K: on an H100, the
medians over part ``sweep`` of ``bench/gpu/gpu_plan.py`` (bench/RESULTS.md, 2026-12-05,
"calibration": resnet18's convolutions as matmuls at batch 16, every tile of 32, 64 and
128 x K splits 1, 2, 4, 8, 48 kernels); the plans they choose are within 8% of the
fastest measured on each of the four shapes. They also predict GPT-2's 1024 x 768 x 3072
(195 us measured, 205 predicted) and 1024 x 3072 x 768 (185, 192). The 16 tile: 512 x 784
x 4608 in 300 us in 4 K slices, 3 waves."""

SUM_BYTES_PER_S = 2.5e12
"""Memory bandwidth the kernel summing the K slices reaches (bytes a second)."""


def predicted_matmul_s(m: int, n: int, k: int, tile: int, split: int,
                       slots: int | None = None, us_per_k: float | None = None) -> float:
    """The ``"waves"`` policy's estimate of a matmul's time: whole waves of ``tile``-sized
    blocks (``WAVE_SLOTS`` at once) each taking ``WAVE_US_PER_K`` per unit of its K slice,
    plus, when split, the partial sums read and the result written (``SUM_BYTES_PER_S``)
    and a second launch. ``slots`` and ``us_per_k`` replace the tile's constants (the fit
    of ``bench/gpu/fit_waves.py``).

    >>> [round(predicted_matmul_s(1024, 2304, 768, 128, s) * 1e6) for s in (1, 4)]
    [219, 186]
    """
    slots = WAVE_SLOTS[tile] if slots is None else slots
    us_per_k = WAVE_US_PER_K[tile] if us_per_k is None else us_per_k
    blocks = -(-m // tile) * -(-n // tile) * split
    waves = -(-blocks // slots)
    compute = waves * (k / split) * us_per_k * 1e-6
    if split == 1:
        return compute
    return compute + m * n * 4 * (split + 1) / SUM_BYTES_PER_S + 3e-6


def _k_tile(k: int) -> int:
    """The k tile of a planned matmul: 8, or 4 where K is a multiple of 4 but not 8."""
    return 4 if k % 8 and k % 4 == 0 else 8


def _splits(k: int, k_tile: int) -> list[int]:
    """The K splits of ``WIDE_SPLITS`` a plan may take: 1, and those whose slices are
    whole ``k_tile`` steps, at least 4 of them."""
    return [s for s in WIDE_SPLITS
            if s == 1 or (k % s == 0 and (k // s) % k_tile == 0 and k // s >= 4 * k_tile)]


def matmul_plan(m: int, n: int, k: int, epilogue: bool,
                policy: str | None = None) -> tuple[int | None, int | None, int, int]:
    """``(threads, per_thread, k_tile, split_k)`` of ``register_blocked`` for an
    ``m x n x k`` matmul under ``policy`` (``None``: ``MATMUL_POLICY``); ``threads``
    ``None``: the recipe's own tile, predicated edges. Without an epilogue the split is
    the recipe's own (``split_k_factor``) under every policy.

    >>> matmul_plan(1024, 768, 3072, True, "fill"), matmul_plan(1024, 768, 3072, True, "wide")
    ((16, 4, 8, 1), (16, 8, 8, 8))
    >>> matmul_plan(2048, 256, 1024, True, "split"), matmul_plan(2048, 256, 1024, True, "wide")
    ((16, 4, 8, 8), (16, 8, 8, 8))
    """
    policy = MATMUL_POLICY if policy is None else policy
    if policy not in MATMUL_POLICIES:
        raise ValueError(f"matmul policy must be one of {MATMUL_POLICIES}, got {policy!r}")
    tiling = matmul_tiling(m, n, k)
    if policy == "waves" and epilogue:
        return _least_waves(m, n, k, tiling)
    if policy == "wide" and epilogue and m >= 256 and n >= 256:
        k_tile = _k_tile(k)
        blocks = -(-m // 128) * -(-n // 128)
        fitting = _splits(k, k_tile)
        split = next((s for s in fitting if blocks * s >= 4 * matmul_cuda.MIN_BLOCKS), max(fitting))
        return 16, 8, k_tile, split
    threads, per_thread, k_tile = tiling if tiling is not None else (None, None, 8)
    t, p = (threads, per_thread) if threads is not None else matmul_cuda.block_tile(m, n)
    split = matmul_cuda.split_k_factor(m, n, k, t * p)  # the recipe's own choice for a matmul alone
    if epilogue and policy == "fill":
        split = 1
    return threads, per_thread, k_tile, split


def _epilogue_after_split(sch: Schedule) -> bool:
    """After ``register_blocked(split_k=...)``: the epilogue ``out`` computed where the sum
    of the slices (block ``C``, one thread per element) is, that sum kept in a register
    (``local``): the second kernel reads the partial sums once and writes the result once."""
    if "out" not in _names(sch.mod):
        return True
    try:
        total = sch.get_block("C")
        sch.reverse_compute_at(sch.get_block("out"), sch.get_loops(total)[1])
        sch.set_scope(total, 0, "local")
    except _FAILS:
        return False
    return True


def _least_waves(m: int, n: int, k: int, tiling) -> tuple[int | None, int | None, int, int]:
    """``"waves"``: of ``tiling``'s tile (the recipe's own where None), the 128 tile (M and
    N of 256 or more), where the own tile is 128 and M or N is shorter, the 64 tile
    (H100: resnet18's 64-channel convs as matmuls, 64 x 50176 x 576, took 436 us under the
    128 tile, 8.5 TFLOP/s; 177 us under the 64 tile) and, where the own tile has 16
    threads (only it divides M and N), the 32 and 64 tiles with predicated edges (512 x 784
    x 4608: 300 us, 12 TFLOP/s, under the 16 tile), each with the splits of
    ``WIDE_SPLITS`` that fit K, the least ``predicted_matmul_s``.

    >>> _least_waves(64, 50176, 576, None), _least_waves(1024, 2304, 768, None)
    ((16, 4, 8, 2), (None, None, 8, 3))
    """
    threads, per_thread, _ = tiling if tiling is not None else (None, None, 8)
    own = (threads, per_thread) if threads is not None else matmul_cuda.block_tile(m, n)
    tiles = [(threads, per_thread, math.prod(own))]
    if m >= 256 and n >= 256 and math.prod(own) != 128:
        tiles.append((16, 8, 128))
    if min(m, n) < 128 and math.prod(own) == 128:  # half the 128 tile's rows would idle
        tiles.append((16, 4, 64))
    if own[0] < 8:  # 16 threads a block: wider blocks with predicated edges
        tiles += [(8, 4, 32), (16, 4, 64)] if min(m, n) >= 64 else [(8, 4, 32)]
    k_tile = _k_tile(k)
    plans = [(predicted_matmul_s(m, n, k, side, s), t, p, s) for t, p, side in tiles
             for s in _splits(k, k_tile)]
    _, t, p, split = min(plans, key=lambda plan: plan[0])
    return t, p, k_tile if t is not None else 8, split


def _matmul_head(func):
    """The matmul block ``C`` (i, j spatial, k reduced) of a kernel that is a matmul plus at
    most one elementwise epilogue, else None."""
    head = next((b for b in _blocks(func) if b.name == "C"), None)
    if head is None or len(head.iter_vars) != 3 or len(_blocks(func)) > 2:
        return None
    if [iv.kind for iv in head.iter_vars] != [IterKind.SPATIAL, IterKind.SPATIAL,
                                                IterKind.REDUCE]:
        return None
    return head


def _place_epilogue(sch: Schedule, split: int) -> Schedule | None:
    """The epilogue of a matmul schedule: in the kernel summing the K slices when split,
    else inlined into the write-back of the ``local`` accumulator (``C_local``)."""
    placed = _epilogue_after_split(sch) if split > 1 else _inline_epilogue(sch, "C_local")
    return sch if placed else None


def matmul_gemv(func) -> Schedule | None:
    """``ops.matmul`` plus an epilogue whose C has at most ``GEMV_ROWS`` rows (a classifier
    head at batch 1): the ``gemv`` recipe (``recipes.gemv_cuda``: a thread per column, its
    rows in registers, K split until the grid fills the GPU), the epilogue placed as in
    ``matmul_tiled``. On an H100 resnet18's head at batch 1 (1 x 512 x 1000) took 223 us
    under the thread-per-element baseline, which ``register_blocked`` falls back to at M = 1."""
    from workbench.recipes.gemv_cuda import GEMV_ROWS, gemv, gemv_split

    head = _matmul_head(func)
    if head is None or _extents(head)[0] > GEMV_ROWS:
        return None
    _, n, k = _extents(head)
    split = gemv_split(n, k)
    try:
        return _place_epilogue(gemv(func, split_k=split), split)
    except _FAILS:
        return None


def matmul_tiled(func, split_k: bool | None = None,
                 policy: str | None = None) -> Schedule | None:
    """``ops.matmul`` (block ``C``, three loops) plus an epilogue: ``register_blocked``
    with ``matmul_plan``'s tile and K split under ``policy`` (``None``: ``MATMUL_POLICY``),
    the epilogue inlined into the register tile's write-back (``C_local``), whose 128-bit
    stores then write the epilogue's result, or, where K is split, computed in the kernel
    that sums the slices. ``split_k`` ``True`` / ``False`` is the ``"split"`` / ``"fill"``
    policy."""
    from workbench import recipes

    head = _matmul_head(func)
    if head is None:
        return None
    recipe = recipes.get("matmul", "register_blocked", "cuda")
    m, n, k = _extents(head)
    if split_k is not None:
        policy = "split" if split_k else "fill"
    threads, per_thread, k_tile, split = matmul_plan(m, n, k, len(_blocks(func)) == 2,
                                                     policy)
    # double buffering needs two k steps (with one, the recipe's prefetch indexes past the
    # shared tile: IndexError under the simulator, at K == k_tile)
    steps = k // split // k_tile
    try:
        sch = recipe(func, threads=threads, per_thread=per_thread, k_tile=k_tile,
                     double_buffer=steps >= 2, split_k=split)
    except _FAILS:
        return None
    return _place_epilogue(sch, split)


def bmm_tiling(batch: int, m: int, n: int, k: int) -> tuple[int | None, int | None, int]:
    """``(threads, per_thread, k_tile)`` of the batched ``register_blocked`` for ``batch``
    matmuls of ``m x n x k``: of the ``TILINGS`` of 64 threads or more that divide M and N,
    the largest whose grid (all the batch's tiles) has at least ``MIN_BLOCKS`` blocks, else
    the smallest that divides; ``(None, None, k_tile)`` (the recipe's own tile, predicated
    edges) when none divides. ``k_tile`` 8, or 4 where K is a multiple of 4 but not 8.

    >>> bmm_tiling(64, 128, 128, 64), bmm_tiling(4, 128, 64, 128), bmm_tiling(3, 17, 33, 9)
    ((16, 4, 8), (8, 4, 8), (None, None, 8))
    """
    k_tile = 4 if k % 8 and k % 4 == 0 else 8
    fits = [(t, p) for t, p in TILINGS if t >= 8 and m % (t * p) == 0 and n % (t * p) == 0]
    for t, p in fits:
        if batch * (m // (t * p)) * (n // (t * p)) >= MIN_BLOCKS:
            return t, p, k_tile
    return (*fits[-1], k_tile) if fits else (None, None, k_tile)


def bmm_tiled(func) -> Schedule | None:
    """``ops.batch_matmul`` (block ``C``, loops ``b, i, j, k``) plus an epilogue: the batched
    ``register_blocked`` (``recipes.bmm_cuda``: the SGEMM per matrix, the batch on
    ``blockIdx.z``), its tile from ``bmm_tiling``, the epilogue inlined into the register
    tile's write-back (``C_local``). The frontend's masked attention (``Q @ K^T``, then
    ``P @ V``) and every ``torch.bmm`` / batched ``@`` of a graph take it."""
    from workbench import recipes

    head = next((b for b in _blocks(func) if b.name == "C"), None)
    if head is None or len(head.iter_vars) != 4 or len(_blocks(func)) > 2:
        return None
    if [iv.kind for iv in head.iter_vars] != [IterKind.SPATIAL] * 3 + [IterKind.REDUCE]:
        return None
    batch, m, n, k = _extents(head)
    threads, per_thread, k_tile = bmm_tiling(batch, m, n, k)
    try:
        sch = recipes.get("batch_matmul", "register_blocked", "cuda")(
            func, threads=threads, per_thread=per_thread, k_tile=k_tile)
    except _FAILS:
        return None
    if not _inline_epilogue(sch, "C_local"):
        return None
    return sch


def rows(func) -> Schedule | None:
    """``ops.softmax``, ``ops.layernorm`` or ``ops.rmsnorm`` alone (the last block the
    normalisation): the ``block_per_row`` recipe, threads per row and rows per block its
    own choice from the row length (``rows_cuda.row_threads``)."""
    names = _names(func)
    if names[-1] == "T_softmax_norm" and "scores" not in names:
        op = "softmax"
    elif names[-1] == "T_layer_norm" and "mean_sum" in names:
        op = "layernorm"
    elif names == ["sq_sum", "T_rms_norm"]:
        op = "rmsnorm"
    else:
        return None
    from workbench import recipes

    if len(_blocks(func)[-1].iter_vars) != 2:
        return None
    try:
        return recipes.get(op, "block_per_row", "cuda")(func)
    except _FAILS:
        return None


ATTENTION_RECIPES = ("warp_tiles", "warp_rows")
"""The ``cuda`` attention recipes ``attention_tiled`` tries, in order (``recipes.attention_cuda``):
the register tile of rows x keys per lane first, the warp per row where it does not fit."""


def attention_tiled(func) -> Schedule | None:
    """Attention (blocks ``scores``, softmax, ``attention``): the first of
    ``ATTENTION_RECIPES`` that builds (``recipes.attention_cuda``): ``warp_tiles`` (a tile of
    query rows per block, a register tile of rows x keys per lane, the keys and queries
    staged in shared memory slice by slice of the head dimension, scores and probabilities
    on chip, the row statistics as warp shuffles), else ``warp_rows`` (a warp per query
    row, the head's keys staged whole). ``attention_rows`` (one block per row) is the
    fallback."""
    names = _names(func)
    if names != ["scores", "T_softmax_maxelem", "T_softmax_expsum", "T_softmax_norm",
                 "attention"]:
        return None
    from workbench import recipes

    for name in ATTENTION_RECIPES:
        try:
            return recipes.get("attention", name, "cuda")(func)
        except _FAILS:
            continue
    return None


def attention_rows(func) -> Schedule | None:
    """Attention (blocks ``scores``, softmax, ``attention``; maybe an epilogue ``out``): one
    CUDA block per query row ``(b, h, i)``.

    In the row: each thread computes scores ``j`` (a serial dot product over the head
    dimension; the row in shared memory), the row max and sum of exponentials are
    cross-thread reductions (warp shuffles), the normalised row goes to shared memory, and
    each thread computes outputs ``d`` (a serial sum over ``k`` in a register). One launch
    instead of five, no scores in global memory.
    """
    names = _names(func)
    if names[:5] != ["scores", "T_softmax_maxelem", "T_softmax_expsum", "T_softmax_norm",
                     "attention"] or len(names) > 5:
        return None
    blocks = _blocks(func)
    length = _extents(blocks[0])[-2]
    head_dim = _extents(blocks[4])[-2]
    from workbench.recipes.attention_cuda import shared_budget

    if 2 * length * 4 > shared_budget():  # the row's scores and probabilities, shared
        return None
    threads = min(ROW_THREADS, max(32, 1 << max(0, (max(length, head_dim) - 1).bit_length())))
    try:
        sch = Schedule(func)
        att = sch.get_block("attention")
        *batch, d, _k = sch.get_loops(att)
        row = sch.fuse(*batch) if len(batch) > 1 else batch[0]
        sch.bind(row, "blockIdx.x")
        _, d_thread = sch.split(d, factors=[None, threads])
        sch.bind(d_thread, "threadIdx.x")
        # each thread's output accumulates in a register, written once
        sch.reverse_compute_at(sch.cache_write(att, 0, "local"), d_thread)
        for name in ("T_softmax_norm", "T_softmax_expsum", "T_softmax_maxelem", "scores"):
            sch.compute_at(sch.get_block(name), row)
        for name, scope in (("scores", "shared"), ("T_softmax_norm", "shared")):
            block = sch.get_block(name)
            loops = sch.get_loops(block)
            j = loops[1] if name == "scores" else loops[-1]
            _, j_thread = sch.split(j, factors=[None, threads])
            sch.bind(j_thread, "threadIdx.x")
            sch.set_scope(block, 0, scope)
            if name == "scores":  # the dot product accumulates in a register
                sch.reverse_compute_at(sch.cache_write(block, 0, "local"), j_thread)
        for name in ("T_softmax_maxelem", "T_softmax_expsum"):
            block = sch.get_block(name)
            _, k_thread = sch.split(sch.get_loops(block)[-1], factors=[None, threads])
            sch.bind(k_thread, "threadIdx.x")
            sch.set_scope(block, 0, "local")
    except _FAILS:
        return None
    return sch


CONV_RECIPES = {"conv2d_nchw": ("register_tiled", "tiled"), "depthwise_conv2d_nchw": ("tiled",)}
"""The cuda recipes a convolution kernel tries, in order (the first that schedules it)."""


def conv2d_tiled(func) -> Schedule | None:
    """``ops.conv2d_nchw`` (blocks ``pad_temp``, ``conv2d_nchw``) plus an epilogue (bias,
    folded batch norm, a residual ``+ x``, relu): the implicit-GEMM ``register_tiled``
    recipe (``recipes.conv2d_cuda``: a block per 64 channels x a pixel tile, the padded
    input window and the transposed weights of each step of input channels in shared
    memory, an 8 x 8 register tile per thread at resnet's large layers fed from registers:
    the thread's input row and its weights of the tap), ``tiled`` (4 x 4-7 per thread)
    where it fails; the epilogue inlined into the register tile's write-back
    (``conv_local``). ``ops.depthwise_conv2d_nchw`` gets its ``tiled`` recipe (a block
    per image, channel and pixel tile, the channel's padded window in shared memory)."""
    names = _names(func)
    op = next((o for o in CONV_RECIPES if o in names), None)
    if op is None or names[:2] != ["pad_temp", op] or names[2:] not in ([], ["out"]):
        return None
    from workbench import recipes

    for name in CONV_RECIPES[op]:
        try:
            sch = recipes.get(op, name, "cuda")(func)
        except _FAILS:
            continue
        if _inline_epilogue(sch, "conv_local"):
            return sch
    return None


POOL_TAILS = {"pool_max": ([], ["out"]), "pool_sum": (["pool_avg"], ["pool_avg", "out"])}
"""The pooling reductions ``pool_threads`` takes and the blocks that may follow each."""


def pool_threads(func) -> Schedule | None:
    """``ops.max_pool2d`` / ``ops.avg_pool2d`` (blocks ``pad_temp``, ``pool_max`` or
    ``pool_sum`` + ``pool_avg``) plus an epilogue: one thread per output element, the
    padding inlined into the window's reads (the baseline wrote the padded input to a
    scratch buffer in a launch of its own), the window's max or sum in a register
    (``cache_write`` to ``local``; the baseline read and wrote the output in global memory
    at every tap) and ``pool_avg``'s division and the epilogue in its write-back."""
    names = _names(func)
    if len(names) < 2 or names[0] != "pad_temp" or names[2:] not in POOL_TAILS.get(names[1], ()):
        return None
    reducer = names[1]
    try:
        sch = Schedule(func)
        sch.compute_inline(sch.get_block("pad_temp"))
        block = sch.get_block(reducer)
        written = sch.cache_write(block, 0, "local")  # before the guard of the split
        bind_block(sch, reducer, ROW_THREADS)  # the output's loops fused, a thread each
        sch.reverse_compute_at(written, sch.get_loops(block)[1])
        sch.decompose_reduction(block, sch.get_loops(block)[2])
        for name in names[2:]:
            sch.reverse_compute_inline(sch.get_block(name))
    except _FAILS:
        return None
    return sch


def row_reduce(func) -> Schedule | None:
    """One reduction over the row's innermost axis (``sum``, ``mean``, ``amax`` of the last
    axes; a row statistic such as ``rsqrt(mean(x * x) + eps)``) and its elementwise epilogue
    of one value a row: ``reduce_cuda.warp_rows`` (a warp or more per row, coalesced reads,
    the threads' partials combined by shuffles), None where it refuses the kernel
    (``reduce_cuda.match``: ``ValueError``)."""
    from workbench.recipes.reduce_cuda import warp_rows

    try:
        return warp_rows(func)
    except _FAILS:
        return None


GRID_Y = 65535
"""The most blocks along ``blockIdx.y``."""


IM2COL_SCHEDULE = "planes"
"""The schedule of the graph's ``im2col`` kernels: ``"planes"`` (``im2col_planes``, the
default since 2026-12-05 on its SASS; timed on the H100 2026-12-07: resnet18 b16's window
matrices 0.60 ms against ``v4``'s 2.26 ms in the same run, the model 3.08 ms against 4.74,
bench/gpu/results/h100_run8_sgemm_convgemm.json) or ``"v4"``
(``elementwise_v4``, timed: on an H100 resnet18's window matrices at batch 16 took
2.35 ms, ~0.47 TB/s of writes). ptxas + nvdisasm (sm_90) at resnet18's 64-channel 3 x 3
layer: ``v4`` 792 instructions for a thread's 4 values (~200 a value, integer division
and modulo of the flat index: the kernel is bound by its index math, not by memory),
``planes`` 392 for a thread's 9 (~44 a value)."""

IM2COL_THREADS = 256
"""The most threads per block of ``im2col_planes``."""


def im2col_planes(func) -> Schedule | None:
    """The graph's ``im2col`` (block ``T_im2col`` annotated with its ``(C, R, S, N, P, Q)``)
    where ``IM2COL_SCHEDULE`` is ``"planes"``: its rows split into ``c, r, s`` and its
    columns into ``n, p, q`` so that the index math simplifies to the loop variables (no
    division or modulo per value; ``v4`` computes about a dozen), one block per channel,
    image and slice of output rows (``blockIdx.y``, ``z``, ``x``), the threads over
    ``p_1, q`` (the most output rows whose pixels fit ``IM2COL_THREADS``): each thread
    writes its pixel of the ``R * S`` rows of its channel, each a contiguous run of the
    block's pixels."""
    if IM2COL_SCHEDULE != "planes":
        return None
    blocks = _blocks(func)
    dims = dict(blocks[-1].annotations).get(IM2COL_DIMS) if len(blocks) == 1 else None
    if dims is None:
        return None
    C, R, S, N, P, Q = (int(d) for d in dims)
    if Q > IM2COL_THREADS or C > GRID_Y or N > GRID_Y:
        return None
    tall = max(d for d in range(1, P + 1) if P % d == 0 and d * Q <= IM2COL_THREADS)
    try:
        sch = Schedule(func)
        block = sch.get_block("T_im2col")
        row, col = sch.get_loops(block)
        c, r, s = sch.split(row, factors=[C, R, S])
        n, p, q = sch.split(col, factors=[N, P, Q])
        p_0, p_1 = sch.split(p, factors=[P // tall, tall])
        sch.reorder(c, n, p_0, p_1, q, r, s)
        for loop, axis in ((c, "blockIdx.y"), (n, "blockIdx.z"), (p_0, "blockIdx.x"),
                           (p_1, "threadIdx.y"), (q, "threadIdx.x")):
            sch.bind(loop, axis)
        return sch
    except _FAILS:
        return None


def elementwise_v4(func) -> Schedule | None:
    """A kernel of purely spatial blocks (a transpose, a select, a standalone epilogue) whose
    last extent ``n`` is a multiple of 128: the ``v4`` recipe (every producer inlined, 4
    consecutive outputs per thread with 128-bit accesses, the other loops fused on
    ``blockIdx.y``), ``min(ROW_THREADS, n // 4)`` threads per block; None (the baseline)
    when the fused rows exceed ``GRID_Y`` or ``n`` is not a multiple of 128."""
    from workbench.recipes.elementwise_cuda import v4

    blocks = _blocks(func)
    if any(iv.kind != IterKind.SPATIAL for b in blocks for iv in b.iter_vars):
        return None
    last = _extents(blocks[-1])
    if not last or last[-1] % 128 or math.prod(last[:-1]) > GRID_Y:
        return None
    threads = ROW_THREADS
    while last[-1] % (4 * threads):
        threads //= 2
    try:
        return v4(func, threads=threads)
    except _FAILS:
        return None


RULES = (matmul_gemv, matmul_tiled, bmm_tiled, conv2d_tiled, attention_tiled, attention_rows, rows,
         pool_threads, row_reduce, im2col_planes, elementwise_v4)
"""Tried in order; the first that returns a schedule wins."""


def recipe_schedule(func) -> Schedule | None:
    """The first rule of ``RULES`` that schedules ``func``, or None (the baseline then)."""
    for rule in RULES:
        sch = rule(func)
        if sch is not None:
            return sch
    return None


__all__ = ["ATTENTION_RECIPES", "CONV_RECIPES", "MIN_BLOCKS", "RULES", "TILINGS",
           "attention_rows", "attention_tiled", "bmm_tiled", "bmm_tiling",
           "IM2COL_SCHEDULE", "POOL_TAILS", "conv2d_tiled", "elementwise_v4", "im2col_planes",
           "matmul_gemv", "matmul_plan", "matmul_tiled", "matmul_tiling", "recipe_schedule",
           "pool_threads", "row_reduce", "rows"]
