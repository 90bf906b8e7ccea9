"""Conv recipe for the ``cpu`` target on packed weights (``ops.conv2d_nchw_packed``,
``ops.depthwise_conv2d_nchw_packed``: ``workbench.ops.conv_packed``), and the graph's rule.

``packed``: a register tile of ``tx`` output columns x ``kv`` blocks of ``kb`` output
channels (``kb``: the weight's block, one vector of the target), accumulated in a ``local``
buffer laid out ``(x, channel)`` so the vector runs over channels::

    for n, k0, y (fused, parallel), x0:             # k0: kv blocks at a time
        acc[tx, kv * kb] = 0                        # registers
        for rc, ry, rx:                             # (depthwise: ry, rx)
            for x1 in unroll(tx):                   # one input element, broadcast
                for kk in unroll(kv):
                    for k1 in vectorized(kb):       # kb contiguous weights
                        acc[x1, kk, k1] += pad[.., x0*tx + x1 + rx, rc] \
                            * weight[k0*kv + kk, rc, ry, rx, k1]
        conv[n, (k0*kv + kk)*kb + k1, y, x0*tx + x1] = epilogue(acc[x1, kk, k1])

The fused epilogue (bias, folded BatchNorm, activations, a residual add) is inlined into
the tile's write-back. Regular convs: ``tile_shape`` (two vectors where the blocks pair
up). Depthwise (and a regular conv whose blocks do not pair): ``kv = 1``, ``tx`` the largest
divisor of the output width that leaves room in the register file (``max_columns``); where
only a small one divides, a non-dividing split of 8 (guarded). The zero-bordered,
channels-last copy of the input (``pad_temp``) runs in parallel over its rows.

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
from workbench.recipes.registry import graph_rule, register
from workbench.schedule import Schedule

HEADS = ("conv2d_nchw_packed", "depthwise_conv2d_nchw_packed")
PARALLEL_WORK = 1 << 16
"""Multiply-adds below which the kernel stays serial (starting the thread pool costs more)."""
PAD_PARALLEL = 1 << 20
"""Elements of ``pad_temp`` below which its copy stays serial: a second parallel loop is a
second Numba gufunc, ~2 of a kernel's ~4.5 s cold compile (profiled: the parfor passes and
their lowering dominate), while copying 4 MiB or less costs well under a millisecond."""
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


def tile_shape(Q: int, blocks: int, target: Target | str = "cpu") -> tuple[int, int]:
    """``(tx, kv)``: the register tile of a regular conv with output rows of ``Q`` and
    ``blocks`` weight blocks: ``kv`` = 2 vectors of channels (each broadcast input element
    feeds two multiply-adds: the one-vector tile is load-bound, worst at 7-column rows)
    by ``tx`` = the largest divisor of ``Q`` that keeps the accumulators within half the
    vector registers (8 columns with 32 registers, 4 with 16), where the blocks pair up and
    that divisor is at least 4 (or all of ``Q``); else ``(tile_columns(Q), 1)``. Measured on
    one AVX-512 core (resnet18's convs, GFLOP/s, one vector -> two): 512 channels at 7x7
    51 -> 90, the 7x7 stride-2 stem 57 -> 88, 64 channels at 56x56 86 -> 91; 14 columns x 2
    vectors (28 accumulators) spilled: 62.

    Example
    -------
    >>> tile_shape(7, 3, "cpu")  # an odd count of blocks: one vector
    (7, 1)
    >>> tile_shape(56, 4, "cpu")[1]
    2
    """
    registers = 32 if max_columns(target) > 16 else 16
    top = registers // 4
    if blocks % 2 == 0:
        tx = max(d for d in range(1, min(Q, top) + 1) if Q % d == 0)
        if tx >= 4 or tx == Q:
            return tx, 2
    return tile_columns(Q, target), 1


def _head(func: PrimFunc):
    return next((b for b in find_blocks(func) if b.name in HEADS), None)


@register("conv2d", "packed")
def packed_cpu(func: PrimFunc, *, tx: int | None = None, kv: int | None = None,
               parallel: bool = True, target: Target | str = "cpu") -> Schedule:
    """``ops.conv2d_nchw_packed`` / ``depthwise_conv2d_nchw_packed`` (plus an epilogue
    ``out``): the register tile of the module docstring (``tx`` output columns by ``kv``
    weight blocks of ``kb`` channels; both left out: ``tile_shape`` for a regular conv;
    else ``tx`` defaults to ``tile_columns``, ``kv`` to 1)."""
    head = _head(func)
    if head is None:
        raise ValueError(f"conv2d packed_cpu: no packed conv block in {func.name}")
    extents = [int(iv.dom.extent.value) for iv in head.iter_vars]
    if tx is None and kv is None and head.name == HEADS[0]:
        tx, kv = tile_shape(extents[3], extents[1], target)
    tx = tile_columns(extents[3], target) if tx is None else tx
    kv = 1 if kv is None else kv
    if extents[1] % kv:
        raise ValueError(f"conv2d packed_cpu: kv={kv} does not divide the {extents[1]} "
                         f"channel blocks of {func.name}")
    sch = Schedule(func)
    conv = sch.get_block(head.name)
    tile = sch.cache_write(conv, 0, "local")
    n, k0, y, x, k1, *reductions = sch.get_loops(conv)
    x0, x1 = sch.split(x, factors=[None, tx])
    if kv > 1:
        k0, kk = sch.split(k0, factors=[None, kv])
        sch.reorder(n, k0, y, x0, *reductions, x1, kk, k1)
    else:
        sch.reorder(n, k0, y, x0, *reductions, x1, k1)
    sch.reverse_compute_at(tile, x0)
    sch.transform_layout(conv, ("write", 0), lambda vn, vk, vy, vx: (vn, vy, vx, vk))
    sch.decompose_reduction(conv, reductions[0])
    sch.unroll(x1)
    if kv > 1:
        sch.unroll(kk)
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


packed_rule = graph_rule(
    "packed_rule", lambda func: _head(func) is not None, packed_cpu,
    """The graph's default-schedule rule for a packed conv kernel (plus its epilogue):
    ``packed_cpu``; None for other kernels (or where the recipe does not apply).""")


__all__ = ["HEADS", "max_columns", "packed_cpu", "packed_rule", "tile_columns",
           "tile_shape"]
