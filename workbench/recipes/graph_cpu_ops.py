"""CPU schedules by rule for kernels built from the operator library.

A kernel is recognised by its blocks (``workbench.graph.lower_ops`` builds them from the
library, so a matmul head is block ``C`` of ``ops.matmul``); the matching recipe of
``workbench.recipes`` schedules the head, then the epilogue block ``out`` is folded in:

- ``ops.matmul`` (``C``, three loops), tile-divisible: a register tile accumulated in a
  ``local`` buffer, rows in parallel (``recipes.matmul.register_tile_cpu``), or, when B
  is big (``PACK_BYTES``), the packed recipe (``packed_cpu``: B packed in panels); the
  epilogue is inlined into the tile's write-back (``reverse_compute_inline``) and that
  loop vectorized, so ``gelu(x @ W + b)`` is written once, from registers;
- ``ops.matmul_packed`` (the cpu layout packs a constant B in panels once:
  ``graph.passes.pack_matmul``): the ``("matmul_packed", "panels")`` register tile of 8
  rows x 3 (or 2) vectors, panels x row tiles in parallel, the epilogue inlined in its
  write-back;
- ``ops.softmax``: the fused recipe (one pass per row, reductions ``rfactor``-ed into
  vector lanes) where the row length is a multiple of the lanes, else the rows fused
  without lanes; the epilogue moves into the row loop;
- ``ops.layernorm``: the fused recipe (``recipes.layernorm.fused_cpu``) where the row is a
  multiple of its lanes; the epilogue is inlined into the normalise block;
- ``ops.attention``: the ``("attention", "row_blocks")`` recipe (four query rows per
  register tile) where the sizes divide, else ``("attention", "rows")``;
- ``ops.conv2d_nchw``: the ``("conv2d", "blocked")`` recipe (output channels in unrolled
  blocks, the output row vectorized) where ``recipes.conv2d_cpu.conv2d_rule`` says so (off
  by default: not measured faster, see that module);
- ``ops.conv2d_nchw_packed`` / ``ops.depthwise_conv2d_nchw_packed`` (the cpu target's
  layout pass packs every conv's weights: ``graph.passes.layout.pack_conv_weights``): the
  ``("conv2d", "packed")`` register tile, vectorized over output channels, the epilogue
  inlined into its write-back (``recipes.conv2d_packed_cpu``);
- ``ops.conv_rows.conv2d_1x1_nchw`` (the layout pass's ``conv2d_1x1``: 1x1 stride-1 convs
  whose spatial positions a tile divides): the ``("conv2d_1x1", "rows")`` register tile,
  vectorized over the NCHW rows, the epilogue inlined (``recipes.conv2d_1x1_cpu``);
- ``ops.depthwise_conv2d_nchw`` (depthwise convs keep NCHW and their weights): the
  ``("depthwise_conv2d", "plane")`` recipe, one pass per channel plane, the padded plane
  local, the output row vectorized, the epilogue inlined (``recipes.conv2d_depthwise_cpu``);
- ``ops.avg_pool2d`` without padding (global pools, squeeze-excitation): the
  ``("avg_pool2d", "direct")`` recipe, the input copy inlined (``recipes.pool_cpu``).

Every recipe is tried on a fresh ``Schedule``; one that does not apply (``ScheduleError``,
``ValueError``) leaves the kernel to the generic rules of ``workbench.recipes.graph_cpu``.
Small kernels stay serial (``PARALLEL_WORK``): starting Numba's thread pool costs more.
``parallel=False`` keeps every kernel serial (on a machine shared with other work, a
parallel region waits for all its threads to get a core: see bench/RESULTS.md).
"""

from __future__ import annotations

import math

from workbench.backends.cpu.cpu_facts import cache_line_bytes, reduction_lanes, vector_lanes
from workbench.ir.analysis import find_blocks
from workbench.schedule import Schedule
from workbench.schedule.attempt import LOOKUP_REFUSALS, applies, attempt

PARALLEL_WORK = 1 << 18
"""Iterations below which a nest stays serial."""
PACK_BYTES = 1 << 20
"""Size of B from which a matmul packs B into panels (below it, B stays in L2 as it is)."""
TILE_WORK = 1 << 12
"""Multiply-adds below which a matmul keeps the generic rules (a register tile is moot)."""



def _blocks(func) -> list[str]:
    return [b.name for b in find_blocks(func)]


def _try(step, *args, **kwargs):
    return attempt(step, *args, refusals=LOOKUP_REFUSALS, **kwargs)


def _ok(step, *args, **kwargs) -> bool:
    """Apply ``step``; False when the primitive refuses (the schedule is then unchanged)."""
    return applies(step, *args, refusals=LOOKUP_REFUSALS, **kwargs)


def vectorize_innermost(sch: Schedule, block: str) -> bool:
    """Vectorize ``block``'s innermost loop (``False`` when the primitive refuses)."""
    loops = _try(sch.get_loops, sch.get_block(block))
    if not loops:
        return False
    return _ok(sch.vectorize, loops[-1])


def _fold_epilogue_inline(sch: Schedule, writer: str) -> None:
    """Inline the ``out`` block into ``writer`` (the block that now writes the head's value);
    vectorize the writer's inner loop."""
    if "out" in _blocks(sch.mod):
        if not _ok(sch.reverse_compute_inline, sch.get_block("out")):
            return
    vectorize_innermost(sch, writer)


def _matmul_shape(func) -> tuple[int, int, int] | None:
    head = next((b for b in find_blocks(func) if b.name == "C"), None)
    if head is None or len(head.iter_vars) != 3:
        return None
    M, N, K = (int(iv.dom.extent.value) for iv in head.iter_vars)
    return M, N, K


def row_tile(M: int, most: int) -> int | None:
    """Rows of the register tile for ``M`` rows: the most rows up to ``most`` that divide
    ``M``; where none from 2 does (a prime 7, 509), ``most`` rows with the last tile's
    rows guarded (the guard does not depend on the vector loop: ``backends.cpu.unswitch``
    moves it out); None for one row (no load of B to reuse: ``matmul_tiled`` keeps the generic
    schedule; ``matmul_panels`` runs a 1-row tile, a panel per thread)."""
    if M < 2:
        return None
    rows = next(t for t in range(min(most, M), 0, -1) if M % t == 0)
    return rows if rows >= 2 else min(most, M)


def matmul_columns(M: int, N: int, K: int) -> int | None:
    """The multiple of ``N`` a matmul by a constant B takes at ``M x N x K``: its panel
    width (``panel_width``); None where the rules keep the generic schedule whatever ``N``
    (too little work). The cpu layout pads a constant B to it
    (``passes.pad_matmul``) and packs it in panels (``passes.pack_matmul``)."""
    return panel_width(M, N, K)


def panel_width(M: int, N: int, K: int) -> int | None:
    """The columns of a panel of a constant B, which the cpu layout packs once
    (``passes.pack_matmul``): ``recipes.matmul``'s ``PANEL_VECTORS`` vectors, or two where
    those do not divide ``N`` and two do (1024, 4096, 256: no padding, no slice, the
    epilogue stays fused), else ``PANEL_VECTORS`` with ``N`` padded (``pad_matmul``); None
    for too little work (``TILE_WORK``). One row (a classifier at batch 1, a decoder's
    token) takes panels too: it streams each panel in order, the panels in parallel, where
    the generic schedule read B's rows in one thread (2048 -> 2048: 646 us against 377).

    Example
    -------
    >>> lanes = vector_lanes("float32")
    >>> [panel_width(64, n, 64) // lanes for n in (48 * lanes, 64 * lanes, 1000)]
    [3, 2, 3]
    >>> panel_width(1, 1024, 1024) // lanes, panel_width(2, 16, 16)
    (2, None)
    """
    from workbench.recipes.matmul import PANEL_VECTORS

    if M * N * K < TILE_WORK:
        return None
    lanes = vector_lanes("float32")
    if N % (PANEL_VECTORS * lanes) and N % (2 * lanes) == 0:
        return 2 * lanes
    return PANEL_VECTORS * lanes


def _packs(M: int, N: int, K: int) -> bool:
    """Whether ``matmul_tiled`` copies B in panels per call (a B that is not a constant: the
    cpu layout packs a constant one once): B big (``PACK_BYTES``) and two rows or more."""
    return K * N * 4 >= PACK_BYTES and M >= 2


def _tile_columns(M: int, N: int, K: int) -> int | None:
    """The register tile's width (a cache line of float32: two 256-bit or one 512-bit
    register; one 256-bit register was ~1.5x slower on the block's shapes), None where the
    work is too small or ``M`` is one row."""
    if M * N * K >= TILE_WORK and M >= 2:
        return max(vector_lanes("float32"), cache_line_bytes() // 4)
    return None


def matmul_tiled(func, parallel: bool = True) -> Schedule | None:
    """``ops.matmul`` (plus an epilogue) with a register tile: the packed recipe when B is
    big (``PACK_BYTES``), else ``register_tile``; the epilogue inlined in the write-back.
    ``N`` a multiple of ``matmul_columns`` (the cpu layout pads a constant B to it), the
    tile's rows ``row_tile(M, 4)`` (packed) or ``row_tile(M, 8)``.

    Example
    -------
    >>> from workbench import ops
    >>> sch = matmul_tiled(ops.matmul(128, 128, 64))
    >>> "T.parallel" in sch.mod.script()
    True
    """
    from workbench import recipes

    shape = _matmul_shape(func)
    if shape is None:
        return None
    M, N, K = shape
    tile = _tile_columns(M, N, K)
    parallel = parallel and M * N * K >= PARALLEL_WORK * 4
    if _packs(M, N, K) and N % (4 * vector_lanes("float32")) == 0:  # B copied per call
        tk = K if K <= 256 else math.gcd(K, 128)
        sch = _try(recipes.get("matmul", "packed", "cpu"), func, ti=row_tile(M, 4), tk=tk)
        if sch is not None and not parallel:
            sch = _serial_copy(sch)
    elif tile is not None and N % tile == 0:  # B too small to pack, or N off the packs
        sch = _try(recipes.get("matmul", "register_tile", "cpu"), func, ti=row_tile(M, 8),
                   tj=tile, parallel=parallel)
    else:
        return None
    if sch is None:
        return None
    _fold_epilogue_inline(sch, "C_local")
    return sch


def matmul_panels(func, parallel: bool = True) -> Schedule | None:
    """``ops.matmul_packed`` (a constant B the cpu layout packed: ``passes.pack_matmul``;
    plus an epilogue) with the ``("matmul_packed", "panels")`` recipe, ``row_tile(M, 8)``
    rows a tile, the epilogue inlined in the write-back."""
    from workbench import recipes

    head = next((b for b in find_blocks(func) if b.name == "C"), None)
    if head is None or len(head.iter_vars) != 4 or len(func.params[1].shape) != 3:
        return None
    NB, M, tj, K = (int(iv.dom.extent.value) for iv in head.iter_vars)
    parallel = parallel and M * NB * tj * K >= PARALLEL_WORK * 4 and NB > 1
    sch = _try(recipes.get("matmul_packed", "panels", "cpu"), func,
               ti=row_tile(M, 8) or 1, parallel=parallel)
    if sch is not None:
        _fold_epilogue_inline(sch, "C_local")
    return sch


def _rows(func, block: str) -> tuple[int, int]:
    head = next(b for b in find_blocks(func) if b.name == block)
    return tuple(int(iv.dom.extent.value) for iv in head.iter_vars[:2])


def _epilogue_per_row(sch: Schedule | None, head: str) -> Schedule | None:
    """``sch`` with its epilogue block ``out`` (where there is one) moved under the first
    (row) loop of block ``head`` and vectorized there: the row is still in cache."""
    if sch is not None and "out" in _blocks(sch.mod):
        row = sch.get_loops(sch.get_block(head))[0]
        _ok(sch.reverse_compute_at, sch.get_block("out"), row)
        vectorize_innermost(sch, "out")
    return sch


def softmax_fused(func, parallel: bool = True) -> Schedule | None:
    """``ops.softmax`` (plus an epilogue) with the fused recipe."""
    from workbench import recipes

    if "T_softmax_maxelem" not in _blocks(func) or "scores" in _blocks(func):
        return None
    M, N = _rows(func, "T_softmax_norm")
    lanes = reduction_lanes("float32")
    parallel = parallel and M * N >= PARALLEL_WORK // 4 and M > 1
    sch = _try(recipes.get("softmax", "fused", "cpu"), func, parallel=parallel,
               rfactor=N % lanes == 0 and N >= lanes)
    return _epilogue_per_row(sch, "T_softmax_norm")


def layernorm_fused(func, parallel: bool = True) -> Schedule | None:
    """``ops.layernorm`` (plus an epilogue) with the fused recipe."""
    from workbench import recipes

    if "mean_sum" not in _blocks(func) or "T_layer_norm" not in _blocks(func):
        return None
    M, N = _rows(func, "T_layer_norm")
    # four cache lines of partial sums (64 float32): measured 31 us against 41 us with four
    # 256-bit registers (32) on a 512 x 64 layernorm
    lanes = 4 * max(vector_lanes("float32"), cache_line_bytes() // 4)
    if N % lanes:
        lanes = 4 * vector_lanes("float32")
    if N % lanes:
        return None
    sch = _try(recipes.get("layernorm", "fused", "cpu"), func, lanes=lanes)
    if sch is None:
        return None
    if not parallel or M * N < PARALLEL_WORK // 4:  # the recipe's row loop is parallel
        sch = _serial_copy(sch)
    _fold_epilogue_inline(sch, "T_layer_norm")
    return sch


def _serial_copy(sch: Schedule) -> Schedule:
    """``sch`` replayed without its ``parallel`` steps."""
    from workbench.schedule import Trace

    steps = [step for step in sch.trace if step.primitive != "parallel"]
    return Trace(steps).apply(sch.func_before)


def attention_rows(func, parallel: bool = True) -> Schedule | None:
    """``ops.attention`` with the ``("attention", "row_blocks")`` recipe (four query rows
    per register tile) where it applies, else ``("attention", "rows")``."""
    from workbench import recipes

    if "scores" not in _blocks(func) or "attention" not in _blocks(func):
        return None
    scores = next(b for b in find_blocks(func) if b.name == "scores")
    work = math.prod(int(iv.dom.extent.value) for iv in scores.iter_vars)
    sch = None
    for name in ("row_blocks", "rows"):  # row_blocks refuses seq % 4, kv_seq % 64
        try:
            recipe = recipes.get("attention", name, "cpu")
        except KeyError:
            continue
        sch = _try(recipe, func, parallel=parallel and work >= PARALLEL_WORK // 4)
        if sch is not None:
            break
    return _epilogue_per_row(sch, "attention")


def conv2d_blocked(func, parallel: bool = True) -> Schedule | None:
    """``ops.conv2d_nchw`` with the ``("conv2d", "blocked")`` recipe where it pays
    (``workbench.recipes.conv2d_cpu.conv2d_rule``)."""
    from workbench.recipes.conv2d_cpu import conv2d_rule

    return conv2d_rule(func, parallel)


def conv2d_packed(func, parallel: bool = True) -> Schedule | None:
    """A packed conv kernel with the ``("conv2d", "packed")`` recipe
    (``workbench.recipes.conv2d_packed_cpu.packed_rule``)."""
    from workbench.recipes.conv2d_packed_cpu import packed_rule

    return packed_rule(func, parallel)


def conv2d_1x1_rows(func, parallel: bool = True) -> Schedule | None:
    """A 1x1 conv kernel in NCHW with the ``("conv2d_1x1", "rows")`` recipe
    (``workbench.recipes.conv2d_1x1_cpu.rows_rule``)."""
    from workbench.recipes.conv2d_1x1_cpu import rows_rule

    return rows_rule(func, parallel)


def depthwise_plane(func, parallel: bool = True) -> Schedule | None:
    """``ops.depthwise_conv2d_nchw`` with the ``("depthwise_conv2d", "plane")`` recipe
    (``workbench.recipes.conv2d_depthwise_cpu.plane_rule``)."""
    from workbench.recipes.conv2d_depthwise_cpu import plane_rule

    return plane_rule(func, parallel)


def avg_pool_direct(func, parallel: bool = True) -> Schedule | None:
    """An unpadded ``ops.avg_pool2d`` (global pools, squeeze-excitation) with the
    ``("avg_pool2d", "direct")`` recipe (``workbench.recipes.pool_cpu.direct_rule``)."""
    from workbench.recipes.pool_cpu import direct_rule

    return direct_rule(func, parallel)


RULES = (matmul_tiled, matmul_panels, attention_rows, softmax_fused, layernorm_fused,
         conv2d_packed, conv2d_1x1_rows, depthwise_plane, avg_pool_direct, conv2d_blocked)
"""Tried in order; the first that returns a schedule wins."""


def recipe_schedule(func, parallel: bool = True) -> Schedule | None:
    """The first recipe rule that schedules ``func``, or None."""
    for rule in RULES:
        sch = rule(func, parallel)
        if sch is not None:
            return sch
    return None


__all__ = ["PACK_BYTES", "PARALLEL_WORK", "RULES", "TILE_WORK", "attention_rows",
           "layernorm_fused", "matmul_columns", "matmul_panels", "matmul_tiled",
           "panel_width", "recipe_schedule", "row_tile",
           "softmax_fused",
           "vectorize_innermost"]
