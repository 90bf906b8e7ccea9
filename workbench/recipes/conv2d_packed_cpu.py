"""Conv recipe for the ``cpu`` target on packed weights (``ops.conv2d_nchw_packed``,
``ops.depthwise_conv2d_nchw_packed``: ``workbench.ops.conv_packed``), and the graph's rule.

``packed``: a register tile of ``tx`` output columns x ``kb`` output channels (``kb``: the
weight's block, one vector of the target), accumulated in a ``local`` buffer laid out
``(x, channel)`` so the vector runs over channels::

    for n, k0, y (fused, parallel), x0:
        acc[tx, kb] = 0                             # registers
        for rc, ry, rx:                             # (depthwise: ry, rx)
            for x1 in unroll(tx):                   # one input element, broadcast
                for k1 in vectorized(kb):           # kb contiguous weights
                    acc[x1, k1] += pad[.., x0*tx + x1 + rx, rc] * weight[k0, rc, ry, rx, k1]
        conv[n, k0*kb + k1, y, x0*tx + x1] = epilogue(acc[x1, k1])

The fused epilogue (bias, folded BatchNorm, activations, a residual add) is inlined into
the tile's write-back. ``tx``: the largest divisor of the output width that leaves room in
the register file (``max_columns``); where only a small one divides, a non-dividing split
of 8 (guarded). The zero-bordered, channels-last copy of the input (``pad_temp``) runs in
parallel over its rows.

1x1 convolutions are matmuls in this form (``R = S = 1``: the reduction is the input
channels); strided ones read the stride phase of ``pad_temp`` (no gather).

Example
-------
>>> from workbench.ops.conv_packed import conv2d_nchw_packed
>>> sch = packed_cpu(conv2d_nchw_packed(1, 8, 7, 7, 16, 3, 3, kb=8))
>>> "T.unroll" in sch.mod.script() and "T.vectorized" in sch.mod.script()
True
"""

from __future__ import annotations

from workbench.backends.common.target import Target
from workbench.backends.cpu.cpu_facts import target_vector_lanes
from workbench.ir import PrimFunc
from workbench.ir.analysis import find_blocks
from workbench.recipes.registry import register
from workbench.schedule import Schedule, ScheduleError

HEADS = ("conv2d_nchw_packed", "depthwise_conv2d_nchw_packed")
PARALLEL_WORK = 1 << 16
"""Multiply-adds below which the kernel stays serial (starting the thread pool costs more)."""
PAD_PARALLEL = 1 << 20
"""Elements of ``pad_temp`` below which its copy stays serial: a second parallel loop is a
second Numba gufunc, ~2 of a kernel's ~4.5 s cold compile (profiled: the parfor passes and
their lowering dominate), while copying 4 MiB or less costs well under a millisecond."""
_FAILS = (ScheduleError, ValueError, IndexError, KeyError, LookupError)


def max_columns(target: Target | str = "cpu") -> int:
    """Output columns of a register tile: the vector registers of the target (32 with 64-byte
    vectors, else 16) less four (a weight vector, a broadcast, spare).

    Example
    -------
    >>> max_columns("cpu") in (12, 28)
    True
    """
    wide = target_vector_lanes(target, "float32") * 4 >= 64
    return (32 if wide else 16) - 4


def tile_columns(Q: int, target: Target | str = "cpu") -> int:
    """The tile's output columns for an output row of ``Q``: its largest divisor up to
    ``min(max_columns, 14)``; 8 (a guarded, non-dividing split) when that divisor is below 4
    and the row is longer than 8.

    Example
    -------
    >>> tile_columns(56), tile_columns(7), tile_columns(13), tile_columns(17)
    (14, 7, 13, 8)
    """
    top = min(max_columns(target), 14)
    best = max(d for d in range(1, min(Q, top) + 1) if Q % d == 0)
    return 8 if best < 4 and Q > 8 else best


def _head(func: PrimFunc):
    return next((b for b in find_blocks(func) if b.name in HEADS), None)


@register("conv2d", "packed")
def packed_cpu(func: PrimFunc, *, tx: int | None = None, parallel: bool = True,
               target: Target | str = "cpu") -> Schedule:
    """``ops.conv2d_nchw_packed`` / ``depthwise_conv2d_nchw_packed`` (plus an epilogue
    ``out``): the register tile of the module docstring (``tx`` output columns, default
    ``tile_columns``)."""
    head = _head(func)
    if head is None:
        raise ValueError(f"conv2d packed_cpu: no packed conv block in {func.name}")
    extents = [int(iv.dom.extent.value) for iv in head.iter_vars]
    tx = tile_columns(extents[3], target) if tx is None else tx
    sch = Schedule(func)
    conv = sch.get_block(head.name)
    tile = sch.cache_write(conv, 0, "local")
    n, k0, y, x, k1, *reductions = sch.get_loops(conv)
    x0, x1 = sch.split(x, factors=[None, tx])
    sch.reorder(n, k0, y, x0, *reductions, x1, k1)
    sch.reverse_compute_at(tile, x0)
    sch.transform_layout(conv, ("write", 0), lambda vn, vk, vy, vx: (vn, vy, vx, vk))
    sch.decompose_reduction(conv, reductions[0])
    sch.unroll(x1)
    sch.vectorize(k1)
    if "out" in [b.name for b in find_blocks(sch.mod)]:
        sch.reverse_compute_inline(sch.get_block("out"))
    work = 1
    for e in extents:
        work *= e
    if parallel and work >= PARALLEL_WORK:
        sch.parallel(sch.fuse(n, k0, y))
    pad = find_blocks(sch.mod)[0]
    if pad.name == "pad_temp":
        loops = sch.get_loops(sch.get_block("pad_temp"))
        # read the NCHW input along its rows (the copy writes channels-last rows in L1)
        sch.reorder(loops[5], loops[4])
        loops = sch.get_loops(sch.get_block("pad_temp"))
        size = 1
        for iv in pad.iter_vars:
            size *= int(iv.dom.extent.value)
        if parallel and size >= PAD_PARALLEL:
            sch.parallel(sch.fuse(*loops[:4]))
    return sch


def packed_rule(func: PrimFunc, parallel: bool = True) -> Schedule | None:
    """The graph's default-schedule rule for a packed conv kernel (plus its epilogue):
    ``packed_cpu``; None for other kernels (or where the recipe does not apply)."""
    if _head(func) is None:
        return None
    try:
        return packed_cpu(func, parallel=parallel)
    except _FAILS:
        return None


__all__ = ["HEADS", "max_columns", "packed_cpu", "packed_rule", "tile_columns"]
