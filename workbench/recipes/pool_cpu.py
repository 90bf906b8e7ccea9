"""Average-pool recipe for the ``cpu`` target (``ops.avg_pool2d``, also the graph's
``adaptive_avg_pool2d`` with even windows: the global pool of a classifier head and of
every squeeze-excitation), and the graph's rule for it.

``direct``: without padding, ``pad_temp`` is a copy of the whole input; the generic
schedule wrote it first and then summed it (two passes, a whole-activation temporary).
This recipe inlines that copy, so the sum reads the input itself, in parallel over
``(image, channel)``, the window's columns innermost (contiguous: LLVM vectorizes the sum
under the kernel's fast-math flags)::

    for n, c (fused, parallel):
        for y, x:
            s = 0
            for ry, rx:  s += data[n, c, y*sh + ry, x*sw + rx]
            pool_sum[n, c, y, x] = s
    pool[...] = pool_sum[...] / area             # (N, C, P, Q): small

Example
-------
>>> from workbench import ops
>>> sch = direct_cpu(ops.avg_pool2d(2, 64, 56, 56, kernel=56, stride=1))
>>> "pad_temp" in sch.mod.script()
False
"""

from __future__ import annotations

from workbench.ir import PrimFunc
from workbench.ir.analysis import find_blocks
from workbench.recipes.registry import graph_rule, register
from workbench.schedule import Schedule

PARALLEL_WORK = 1 << 16
"""Elements summed below which the kernel stays serial."""
def _applies(func: PrimFunc) -> bool:
    """``ops.avg_pool2d``'s blocks (an epilogue may follow), its ``pad_temp`` a plain copy."""
    names = [b.name for b in find_blocks(func)]
    if names[:3] != ["pad_temp", "pool_sum", "pool_avg"]:
        return False
    pad = next(b for b in func.root_block.alloc_buffers if b.name == "pad_temp")
    return tuple(pad.shape) == tuple(func.params[0].shape)


@register("avg_pool2d", "direct")
def direct_cpu(func: PrimFunc, *, parallel: bool = True, target="cpu") -> Schedule:
    """``ops.avg_pool2d`` without padding: the copy ``pad_temp`` inlined, the window sum in
    parallel over ``(image, channel)`` (module docstring)."""
    if not _applies(func):
        raise ValueError(f"avg_pool2d direct_cpu: {func.name} is not an unpadded "
                         "ops.avg_pool2d")
    sch = Schedule(func)
    sch.compute_inline(sch.get_block("pad_temp"))
    block = sch.get_block("pool_sum")
    n, c, _, _, ry, _ = sch.get_loops(block)
    sch.decompose_reduction(block, ry)
    plane = sch.fuse(n, c)
    work = 1
    for dim in func.params[0].shape:
        work *= int(dim)
    if parallel and work >= PARALLEL_WORK:
        sch.parallel(plane)
    return sch


direct_rule = graph_rule(
    "direct_rule", _applies, direct_cpu,
    """The graph's default-schedule rule for an unpadded average pool: ``direct_cpu``;
    None for other kernels (or where the recipe does not apply).""")


__all__ = ["PARALLEL_WORK", "direct_cpu", "direct_rule"]
