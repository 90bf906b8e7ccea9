"""Conv2d recipe for the ``cpu`` target (``ops.conv2d_nchw``), and the graph's rule for it.

``blocked``: output channels split into blocks of ``tk`` (outer loop parallel), the
reductions (input channel, kernel row, kernel column) outside the block, then the ``tk``
output channels unrolled and the output row ``x`` innermost, vectorized::

    for k0 (parallel), y:            # one row of tk output channels
        for rc, ry, rx:              # reductions
            for k1 in unroll(tk):    # tk rows of accumulators, kept in registers
                for x (vectorized):  # contiguous output and input row
                    conv[k0*tk+k1, y, x] += pad[rc, y+ry, x+rx] * weight[k0*tk+k1, rc, ry, rx]

Each input row loaded per reduction step feeds ``tk`` accumulator rows instead of one.
Not the graph's default (``DEFAULT``): measured one thread on the loaded 2-core machine
(docs/decisions.md, issue 19 rows), a first run had it 4.0x the generic rule at
512x7x7 and 2.6x at 64x56x56, a second run of the same shapes 0.8x and 0.75x, and
256x14x14 0.11x (the 14-wide row is shorter than one AVX-512 vector: the unrolled block
runs scalar remainder loops). ``conv2d_rule`` chooses it where ``DEFAULT`` is set (a
test sets it); ``compiled.reschedule(node, recipes.get("conv2d", "blocked"))`` applies it
to one kernel.

Example
-------
>>> from workbench import ops
>>> sch = blocked_cpu(ops.conv2d_nchw(1, 16, 7, 7, 16, 3, 3))
>>> "T.unroll" in sch.mod.script() and "T.vectorized" in sch.mod.script()
True
"""

from __future__ import annotations

import math

from workbench.ir import PrimFunc
from workbench.ir.analysis import find_blocks
from workbench.recipes.registry import register
from workbench.schedule import Schedule, ScheduleError

BLOCKS = (8, 4, 2)
"""Output-channel blocks tried, largest first (the first dividing the channel count)."""
DEFAULT = False
"""Whether the graph's default schedules choose this recipe (see the module docstring)."""
SMALL_WORK = 1 << 21
"""Multiply-adds below which a convolution keeps the generic rule."""
PARALLEL_WORK = 1 << 18
_FAILS = (ScheduleError, ValueError, IndexError, KeyError, LookupError)


def _conv_extents(func: PrimFunc) -> tuple[int, ...] | None:
    head = next((b for b in find_blocks(func) if b.name == "conv2d_nchw"), None)
    if head is None or len(head.iter_vars) != 7:
        return None
    return tuple(int(iv.dom.extent.value) for iv in head.iter_vars)


@register("conv2d", "blocked")
def blocked_cpu(func: PrimFunc, *, tk: int | None = None, parallel: bool = True,
                target="cpu") -> Schedule:
    """``ops.conv2d_nchw``: ``tk`` output channels per block, unrolled, the output row
    vectorized (the module docstring); ``tk`` defaults to the first of ``BLOCKS`` dividing
    the channel count (``ValueError`` when none does)."""
    extents = _conv_extents(func)
    if extents is None:
        raise ValueError("conv2d blocked_cpu: no conv2d_nchw block of 7 loops in "
                         f"{func.name}")
    K = extents[1]
    if tk is None:
        tk = next((b for b in BLOCKS if K % b == 0), None)
    if tk is None or K % tk:
        raise ValueError(f"conv2d blocked_cpu: {K} output channels have no block of "
                         f"{tk or BLOCKS}")
    sch = Schedule(func)
    conv = sch.get_block("conv2d_nchw")
    n, k, y, x, rc, ry, rx = sch.get_loops(conv)
    k0, k1 = sch.split(k, factors=[None, tk])
    sch.reorder(n, k0, y, rc, ry, rx, k1, x)
    if "out" in [b.name for b in find_blocks(sch.mod)]:
        sch.reverse_compute_at(sch.get_block("out"), y)
        out_loops = sch.get_loops(sch.get_block("out"))
        sch.vectorize(out_loops[-1])
    sch.decompose_reduction(conv, rc)
    sch.unroll(k1)
    sch.vectorize(x)
    if parallel:
        outer = k0 if extents[0] == 1 else sch.fuse(n, k0)
        sch.parallel(outer)
    return sch


def conv2d_rule(func: PrimFunc, parallel: bool = True) -> Schedule | None:
    """The graph's default-schedule rule for a ``conv2d_nchw`` kernel (plus its epilogue):
    ``blocked_cpu`` where ``DEFAULT`` is set and the kernel is big (``SMALL_WORK``) with a
    channel block, else None (the generic rules)."""
    extents = _conv_extents(func)
    if not DEFAULT or extents is None or math.prod(extents) < SMALL_WORK:
        return None
    if not any(extents[1] % b == 0 for b in BLOCKS):
        return None
    try:
        return blocked_cpu(func, parallel=parallel and math.prod(extents) >= PARALLEL_WORK)
    except _FAILS:
        return None


__all__ = ["BLOCKS", "DEFAULT", "SMALL_WORK", "blocked_cpu", "conv2d_rule"]
