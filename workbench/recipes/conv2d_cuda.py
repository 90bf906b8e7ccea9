"""Conv2d recipe for the ``cuda`` target: the direct convolution, one thread per output.

Example
-------
>>> from workbench import ops, recipes
>>> sch = recipes.get("conv2d_nchw", "direct", "cuda")(ops.conv2d_nchw(1, 2, 6, 6, 2, 3, 3))
"""

from __future__ import annotations

from workbench.ir import PrimFunc
from workbench.recipes.registry import register
from workbench.schedule import Schedule


@register("conv2d_nchw", "direct", "cuda")
def direct(func: PrimFunc, threads: int = 32) -> Schedule:
    """Padding inlined; one thread per output element; the reduction in each thread."""
    sch = Schedule(func)
    blocks = sch.get_child_blocks(sch.get_block("root"))
    for producer in blocks[:-1]:
        sch.compute_inline(producer)
    out = sch.get_child_blocks(sch.get_block("root"))[-1]
    n, k, y, x, *_ = sch.get_loops(out)
    fused = sch.fuse(n, k, y, x)
    bx, tx = sch.split(fused, factors=[None, threads])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    return sch
