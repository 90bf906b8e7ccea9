"""Matmul recipes for the ``cpu`` target (``ops.matmul``: block ``C``, loops ``i, j, k``;
``panels``: ``ops.matmul_packed``, B in prepacked panels, loops ``j0, i, j1, k``).

The tile width ``tj`` defaults to four vector registers of the target
(``4 * target_vector_lanes(target, dtype)``: 64 float32 on AVX-512, 32 on AVX2), the
register tile ``ti x tj`` then fills 16 registers. Every recipe takes ``target=`` (a
``Target`` or its name, default ``"cpu"``: the host) and reads the width from its
``device`` facts.
"""

from __future__ import annotations

from workbench.backends.common.target import Target
from workbench.backends.cpu.cpu_facts import target_vector_lanes
from workbench.ir import PrimFunc
from workbench.ir.analysis import find_blocks
from workbench.recipes.registry import register
from workbench.schedule import Schedule


def _registers(func: PrimFunc, target: Target | str, count: int) -> int:
    """``count`` vector registers of the target, in elements of the output's dtype."""
    return count * target_vector_lanes(target, func.params[-1].dtype)


@register("matmul", "tiled")
def tiled_cpu(
    func: PrimFunc,
    *,
    ti: int = 4,
    tj: int | None = None,
    tk: int = 128,
    target: Target | str = "cpu",
) -> Schedule:
    """Loop primitives alone: ``j_0 (parallel), k_0, i_0, k_1, i_1 (unroll), j_1 (vectorize)``.

    A ``ti x tj`` register tile with K split by ``tk`` (the best loop-only schedule of
    ``bench/bench_matmul_cpu.py``).

    Example
    -------
    >>> from workbench import ops
    >>> sch = tiled_cpu(ops.matmul(256, 256, 256))
    """
    tj = _registers(func, target, 4) if tj is None else tj
    sch = Schedule(func)
    i, j, k = sch.get_loops(sch.get_block("C"))
    i0, i1 = sch.split(i, factors=[None, ti])
    j0, j1 = sch.split(j, factors=[None, tj])
    k0, k1 = sch.split(k, factors=[None, tk])
    sch.reorder(j0, k0, i0, k1, i1, j1)
    sch.parallel(j0)
    sch.unroll(i1)
    sch.vectorize(j1)
    return sch


@register("matmul", "tiled_full_k")
def tiled_full_k_cpu(
    func: PrimFunc, *, ti: int = 8, tj: int | None = None, target: Target | str = "cpu"
) -> Schedule:
    """``i_0 (parallel), j_0, k, i_1 (unroll), j_1 (vectorize)``: full K inside each tile
    (``tj`` defaults to two vector registers of the target)."""
    tj = _registers(func, target, 2) if tj is None else tj
    sch = Schedule(func)
    i, j, k = sch.get_loops(sch.get_block("C"))
    i0, i1 = sch.split(i, factors=[None, ti])
    j0, j1 = sch.split(j, factors=[None, tj])
    sch.reorder(i0, j0, k, i1, j1)
    sch.parallel(i0)
    sch.unroll(i1)
    sch.vectorize(j1)
    return sch


@register("matmul", "parallel_vectorize")
def parallel_vectorize_cpu(func: PrimFunc) -> Schedule:
    """``i (parallel), k, j (vectorize)``: loop order and annotations only."""
    sch = Schedule(func)
    i, j, k = sch.get_loops(sch.get_block("C"))
    sch.reorder(i, k, j)
    sch.parallel(i)
    sch.vectorize(j)
    return sch


@register("matmul", "packed")
def packed_cpu(
    func: PrimFunc,
    *,
    ti: int = 4,
    tj: int | None = None,
    tk: int = 128,
    pack_per_panel: bool = True,
    target: Target | str = "cpu",
    pack: bool = True,
    parallel: bool = True,
    unroll: bool = True,
    vectorize: bool = True,
    vectorize_pack: bool | None = None,
) -> Schedule:
    """B packed into ``tj``-wide panels, a ``ti x tj`` local accumulator, ``j_0`` parallel.

    Loop order ``j_0 (parallel), [pack B panel j_0], i_0, k_0, k_1, i_1 (unroll),
    j_1 (vectorize), [write back the tile]``: ``cache_read`` + ``compute_at`` +
    ``transform_layout`` copy each panel of B contiguous (it stays in that core's L2),
    ``cache_write`` + ``reverse_compute_at`` keep the output tile in registers across
    ``k``. With ``pack_per_panel=False`` the whole of ``B`` is packed before the parallel
    loop (serially).

    The toggles take one step out each (the tests and the notebooks compare with and
    without): ``pack=False`` reads B in place; ``parallel``, ``unroll`` and ``vectorize``
    (the tile's inner loop) the annotations; ``vectorize_pack`` the panel copy's inner
    loop (default: as ``vectorize``).

    Example
    -------
    >>> from workbench import ops
    >>> sch = packed_cpu(ops.matmul(256, 256, 256))
    """
    tj = _registers(func, target, 4) if tj is None else tj
    vectorize_pack = vectorize if vectorize_pack is None else vectorize_pack
    sch = Schedule(func)
    c = sch.get_block("C")
    b_panel = sch.cache_read(c, 2, "global") if pack else None
    c_tile = sch.cache_write(c, 0, "local")
    i, j, k = sch.get_loops(c)
    i0, i1 = sch.split(i, factors=[None, ti])
    j0, j1 = sch.split(j, factors=[None, tj])
    k0, k1 = sch.split(k, factors=[None, tk])
    sch.reorder(j0, i0, k0, k1, i1, j1)
    sch.reverse_compute_at(c_tile, i0)
    if pack:
        if pack_per_panel:
            sch.compute_at(b_panel, j0)
        sch.transform_layout(b_panel, ("write", 0), lambda kk, jj: (jj // tj, kk, jj % tj))
    if parallel:
        sch.parallel(j0)
    if unroll:
        sch.unroll(i1)
    if vectorize:
        sch.vectorize(j1)
    if pack and pack_per_panel and vectorize_pack:
        sch.vectorize(sch.get_loops(b_panel)[-1])
    return sch


@register("matmul", "register_tile")
def register_tile_cpu(func: PrimFunc, *, ti: int = 8, tj: int | None = None,
                      parallel: bool = True, target: Target | str = "cpu") -> Schedule:
    """``i_0 (parallel), j_0, k, i_1 (unroll), j_1 (vectorize)`` with the ``ti x tj`` tile
    accumulated in a ``local`` buffer and written back after ``k``; no packing.

    For the small weights of a model's linear layers (B fits in L2): the packed recipe's
    copy of B costs more than it saves there, and parallel panels of B leave cores idle
    when N is one or two panels wide, while rows (``i_0``) are many. The write-back block
    (``C_local``) is where a fused epilogue is inlined (``reverse_compute_inline``).
    ``tj`` defaults to one vector register of the target.

    Example
    -------
    >>> from workbench import ops
    >>> sch = register_tile_cpu(ops.matmul(64, 32, 16))
    """
    tj = _registers(func, target, 1) if tj is None else tj
    sch = Schedule(func)
    c = sch.get_block("C")
    c_tile = sch.cache_write(c, 0, "local")
    i, j, k = sch.get_loops(c)
    i0, i1 = sch.split(i, factors=[None, ti])
    j0, j1 = sch.split(j, factors=[None, tj])
    sch.reorder(i0, j0, k, i1, j1)
    sch.reverse_compute_at(c_tile, j0)
    sch.decompose_reduction(c, k)
    if parallel:
        sch.parallel(i0)
    sch.unroll(i1)
    sch.vectorize(j1)
    sch.vectorize(sch.get_loops(c_tile)[-1])
    return sch


PANEL_VECTORS = 3
"""Vector registers of columns in a ``panels`` tile: 8 rows x 3 vectors (24 accumulators)
measured fastest against 4 x 4 (the ``packed`` recipe's), 8 x 2 and 8 x 4, with 512-bit
code and with 256-bit code alike (one Emerald Rapids core pair, ``8 x 256 -> 50304``,
``128 x 1000 -> 1056``, ``512 x 768 -> 3072``; the 256-bit code's 24 accumulators exceed
its 16 registers and it was still the fastest there)."""


@register("matmul_packed", "panels")
def panels_cpu(func: PrimFunc, *, ti: int = 8, tk: int | None = None, parallel: bool = True,
               target: Target | str = "cpu") -> Schedule:
    """B read in its prepacked panels (``ops.matmul_packed``): the ``packed`` recipe's loop
    nest with no copy of B: ``j_0 (parallel), i_0, k_0, k_1, i_1 (unroll), j_1
    (vectorize)``, the ``ti x tj`` tile (``tj``: the weight's panel) in a ``local`` buffer
    written back after ``k``. ``ti`` need not divide the rows (the last tile's are
    guarded); ``tk`` defaults to ``K`` up to 256, else the largest divisor of ``K`` up to
    128.

    Example
    -------
    >>> from workbench.ops.matmul_packed import matmul_packed
    >>> sch = panels_cpu(matmul_packed(8, 96, 64, tj=48))
    >>> "T.parallel" in sch.mod.script()
    True
    """
    del target  # the panel's width, fixed by the weight's layout, is the vector width
    c = next((b for b in find_blocks(func) if b.name == "C" and len(b.iter_vars) == 4), None)
    if c is None:
        raise ValueError(f"matmul_packed panels_cpu: no four-axis block C in {func.name}")
    K = int(c.iter_vars[3].dom.extent.value)
    tk = (K if K <= 256 else max(d for d in range(1, 129) if K % d == 0)) if tk is None else tk
    sch = Schedule(func)
    block = sch.get_block("C")
    tile = sch.cache_write(block, 0, "local")
    j0, i, j1, k = sch.get_loops(block)
    i0, i1 = sch.split(i, factors=[None, ti])
    k0, k1 = sch.split(k, factors=[None, tk])
    sch.reorder(j0, i0, k0, k1, i1, j1)
    sch.reverse_compute_at(tile, i0)
    if parallel:  # panels x row tiles: threads enough where the panels are few
        sch.parallel(sch.fuse(j0, i0))
    sch.unroll(i1)
    sch.vectorize(j1)
    return sch
