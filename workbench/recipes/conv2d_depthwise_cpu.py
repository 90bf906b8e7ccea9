"""Depthwise conv recipe for the ``cpu`` target (``ops.depthwise_conv2d_nchw``), and the
graph's rule for it.

``plane``: one pass per channel plane. The kernel runs in parallel over ``(image,
channel)``; each iteration copies its zero-bordered input plane into a ``local`` buffer (a
few KiB to 52 KiB: L1/L2, never a whole-activation temporary), then computes the output
plane row by row with the output columns innermost, vectorized, the ``R x S`` window
unrolled into one accumulator per column and the fused epilogue (bias, folded BatchNorm,
relu6 / SiLU, a residual add) applied as it is written::

    for n, c (fused, parallel):
        pad[HP, WP] = zero-bordered data[n, c]               # local, per plane
        for y:
            for x (vectorized by LLVM):                      # contiguous output row
                acc = 0
                for ry, rx in unroll(R, S):                  # weight[c, ry, rx]: broadcast
                    acc += pad[y*sh + ry*dh, x*sw + rx*dw] * weight[c, 0, ry, rx]
                conv[n, c, y, x] = epilogue(acc)

NCHW stays NCHW: the input and output planes are read and written once, contiguously. The
channel-vectorized form over packed weights (``ops.depthwise_conv2d_nchw_packed`` with
``recipes.conv2d_packed_cpu``) needs the input channels-last, i.e. a transposing copy of
the whole activation first; measured one thread against it (docs/decisions.md, "dwconv"),
this recipe is 2.5-9x faster on the depthwise layers of mobilenet_v2 and efficientnet_b0
and 1-3x faster than torch's own depthwise conv (without its BatchNorm).

Example
-------
>>> from workbench import ops
>>> sch = plane_cpu(ops.depthwise_conv2d_nchw(2, 32, 56, 56, 3, 3, stride=2))
>>> "T.parallel" in sch.mod.script() and 'scope="local"' in sch.mod.script()
True
"""

from __future__ import annotations

from workbench.ir import PrimFunc
from workbench.ir.analysis import find_blocks
from workbench.recipes.registry import graph_rule, register
from workbench.schedule import Schedule

HEAD = "depthwise_conv2d_nchw"
PARALLEL_WORK = 1 << 16
"""Multiply-adds below which the kernel stays serial (starting the thread pool costs more)."""
def _head(func: PrimFunc):
    return next((b for b in find_blocks(func) if b.name == HEAD), None)


@register("depthwise_conv2d", "plane")
def plane_cpu(func: PrimFunc, *, parallel: bool = True, target="cpu") -> Schedule:
    """``ops.depthwise_conv2d_nchw`` (plus an epilogue ``out``): one pass per channel plane,
    the padded plane in a ``local`` buffer, the output row vectorized (module docstring).
    ``target`` is accepted for the recipe interface (the row's vectors are LLVM's choice).
    """
    head = _head(func)
    if head is None or len(head.iter_vars) != 6:
        raise ValueError(f"depthwise plane_cpu: no ops.depthwise_conv2d_nchw block in "
                         f"{func.name}")
    sch = Schedule(func)
    conv = sch.get_block(HEAD)
    tile = sch.cache_write(conv, 0, "local")
    n, c, _, x, ry, rx = sch.get_loops(conv)
    sch.reverse_compute_at(tile, x)
    sch.decompose_reduction(conv, ry)
    sch.unroll(ry)
    sch.unroll(rx)
    if "out" in [b.name for b in find_blocks(sch.mod)]:
        sch.reverse_compute_inline(sch.get_block("out"))
    plane = sch.fuse(n, c)
    work = 1
    for iv in head.iter_vars:
        work *= int(iv.dom.extent.value)
    if parallel and work >= PARALLEL_WORK:
        sch.parallel(plane)
    if "pad_temp" in [b.name for b in find_blocks(sch.mod)]:
        pad = sch.get_block("pad_temp")
        sch.set_scope(pad, 0, "local")
        sch.compute_at(pad, plane)
    return sch


plane_rule = graph_rule(
    "plane_rule", lambda func: _head(func) is not None, plane_cpu,
    """The graph's default-schedule rule for a depthwise conv kernel (plus its epilogue):
    ``plane_cpu``; None for other kernels (or where the recipe does not apply).""")


__all__ = ["HEAD", "PARALLEL_WORK", "plane_cpu", "plane_rule"]
