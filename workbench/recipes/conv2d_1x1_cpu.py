"""1x1 conv recipe for the ``cpu`` target (``ops.conv_rows.conv2d_1x1_nchw``), and the
graph's rule.

``rows``: a register tile of ``kt`` output channels x ``pt`` spatial positions (``pt`` a few
vectors of the target), the positions innermost and vectorized, every weight broadcast::

    for n, p0 (fused, parallel):                # pt positions of one image
        for k0:                                 # kt output channels
            acc[kt, pt] = 0                     # registers
            for rc:
                for k1 in unroll(kt):
                    for p1 in vectorized(pt):   # contiguous in NCHW
                        acc[k1, p1] += data[n, rc, p0*pt + p1] * weight[k0*kt + k1, rc]
            conv[n, k0*kt + k1, p0*pt + p1] = epilogue(acc[k1, p1])

The input block ``C x pt`` of one ``(n, p0)`` stays in cache across the ``k0`` loop; the
output and its epilogue (bias, folded BatchNorm, SiLU, a residual add) are written as whole
vectors. ``rows_tile`` picks ``pt`` among divisors of ``H * W`` (a non-dividing split
leaves a guarded tile that LLVM does not vectorize: measured 5-20x slower), so the rule
applies only where one divides; elsewhere (7x7, 1x1 maps) the graph keeps ``conv2d_packed``.

Measured on one AVX-512 core, batch 4, GFLOP/s packed -> rows (docs/decisions.md,
"Issue 19: efficientnet"): 16->96 channels at 112x112 29 -> 37; 144->24 at 56x56 21 -> 60;
240->40 at 28x28 39 -> 57..93; 480->80 at 14x14 60 -> 92.

Example
-------
>>> from workbench.ops.conv_rows import conv2d_1x1_nchw
>>> sch = rows_cpu(conv2d_1x1_nchw(2, 32, 196, 16))
>>> "T.vectorized" in sch.mod.script() and "T.parallel" in sch.mod.script()
True
"""

from __future__ import annotations

from workbench.backends.common.target import Target
from workbench.backends.cpu.cpu_facts import target_vector_lanes
from workbench.ir import PrimFunc
from workbench.ir.analysis import find_blocks
from workbench.ops.conv_rows import HEAD
from workbench.recipes.registry import graph_rule, register
from workbench.schedule import Schedule

PARALLEL_WORK = 1 << 16
"""Multiply-adds below which the kernel stays serial (starting the thread pool costs more)."""
def rows_tile(HW: int, K: int, target: Target | str = "cpu") -> tuple[int, int] | None:
    """``(pt, kt)`` for ``H * W = HW`` positions and ``K`` output channels, or None where
    no tile divides: ``pt`` the first of 4 vectors, 2 vectors, 28 (a 14x14 map, two rows of
    a 28x28 one), one vector that divides ``HW``; ``kt`` the output channels that keep the
    accumulators within three quarters of the vector registers (at most 8), lowered until it
    divides ``K``.

    Example
    -------
    >>> rows_tile(3136, 24, "cpu") in ((64, 6), (32, 3))
    True
    >>> rows_tile(49, 192, "cpu") is None
    True
    """
    lanes = target_vector_lanes(target, "float32")
    registers = 32 if lanes * 4 >= 64 else 16
    for pt in (4 * lanes, 2 * lanes, 28, lanes):
        if pt < lanes or HW % pt:
            continue
        vectors = -(-pt // lanes)
        kt = min(8, registers * 3 // 4 // vectors)
        while kt > 1 and K % kt:
            kt -= 1
        return pt, kt
    return None


def _head(func: PrimFunc):
    return next((b for b in find_blocks(func) if b.name == HEAD), None)


@register("conv2d_1x1", "rows")
def rows_cpu(func: PrimFunc, *, pt: int | None = None, kt: int | None = None,
             parallel: bool = True, target: Target | str = "cpu") -> Schedule:
    """``ops.conv_rows.conv2d_1x1_nchw`` (plus an epilogue ``out``): the register tile of
    the module docstring (``pt``, ``kt`` left out: ``rows_tile``; a ``pt`` that does not
    divide the positions is refused)."""
    head = _head(func)
    if head is None:
        raise ValueError(f"conv2d_1x1 rows_cpu: no {HEAD} block in {func.name}")
    N, K, HW, C = (int(iv.dom.extent.value) for iv in head.iter_vars)
    if pt is None or kt is None:
        tile = rows_tile(HW, K, target)
        if tile is None:
            raise ValueError(f"conv2d_1x1 rows_cpu: no tile divides the {HW} positions of "
                             f"{func.name}")
        pt, kt = (tile[0] if pt is None else pt), (tile[1] if kt is None else kt)
    if HW % pt or K % kt:
        raise ValueError(f"conv2d_1x1 rows_cpu: pt={pt} must divide the {HW} positions and "
                         f"kt={kt} the {K} output channels of {func.name}")
    sch = Schedule(func)
    conv = sch.get_block(HEAD)
    tile_block = sch.cache_write(conv, 0, "local")
    n, k, p, rc = sch.get_loops(conv)
    k0, k1 = sch.split(k, factors=[None, kt])
    p0, p1 = sch.split(p, factors=[None, pt])
    sch.reorder(n, p0, k0, rc, k1, p1)
    sch.reverse_compute_at(tile_block, k0)
    sch.decompose_reduction(conv, rc)
    sch.unroll(k1)
    sch.vectorize(p1)
    if "out" in [b.name for b in find_blocks(sch.mod)]:
        sch.reverse_compute_inline(sch.get_block("out"))
    if parallel and N * K * HW * C >= PARALLEL_WORK:
        sch.parallel(sch.fuse(n, p0))
    return sch


rows_rule = graph_rule(
    "rows_rule", lambda func: _head(func) is not None, rows_cpu,
    """The graph's default-schedule rule for a 1x1 conv kernel (plus its epilogue):
    ``rows_cpu``; None for other kernels (or where the recipe does not apply).""")


__all__ = ["PARALLEL_WORK", "rows_cpu", "rows_rule", "rows_tile"]
