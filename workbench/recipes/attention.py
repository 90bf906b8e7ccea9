"""Attention recipe for the ``cpu`` target (``ops.attention``: blocks ``scores``,
``T_softmax_maxelem``, ``T_softmax_expsum``, ``T_softmax_norm``, ``attention``)."""

from __future__ import annotations

from workbench.ir import PrimFunc
from workbench.ir.analysis import find_blocks
from workbench.ir.stmt import IterKind
from workbench.recipes.registry import register
from workbench.schedule import Schedule

ROW_BLOCKS = ("scores", "T_softmax_maxelem", "T_softmax_expsum", "T_softmax_norm")
"""The blocks computed per query row, in the order they run."""


def _spatial_count(sch: Schedule, name: str) -> int:
    block = next(b for b in find_blocks(sch.mod) if b.name == name)
    return sum(1 for iv in block.iter_vars if iv.kind == IterKind.SPATIAL)


@register("attention", "rows")
def rows_cpu(func: PrimFunc, *, parallel: bool = True, vectorize: bool = True) -> Schedule:
    """One query row at a time: its scores, softmax and output row, rows in parallel.

    The output block's loops ``b, h, i, d, k`` become ``b, h, i, k, d`` (``reorder``), so
    the innermost loop walks a row of ``V`` and of the output (contiguous; vectorized).
    The four row blocks are computed at the row loop ``i`` (``compute_at``, last to first)
    with ``local`` buffers: a row of scores and probabilities (``kv_seq`` floats) and two
    scalars stay in cache, never the ``seq x kv_seq`` matrices. Every init is decomposed
    out of its reduction loop, and ``b, h, i`` are fused into one parallel loop.

    Example
    -------
    >>> from workbench import ops
    >>> sch = rows_cpu(ops.attention(1, 2, 8, 4))
    >>> [b.name for b in sch.mod.root_block.alloc_buffers][:1]
    ['scores']
    """
    sch = Schedule(func)
    out = sch.get_block("attention")
    b, h, i, d, k = sch.get_loops(out)
    sch.reorder(k, d)
    for name in reversed(ROW_BLOCKS):
        sch.compute_at(sch.get_block(name), i)
    for name in ROW_BLOCKS:
        sch.set_scope(sch.get_block(name), 0, "local")
    for name in ("scores", "T_softmax_maxelem", "T_softmax_expsum", "attention"):
        # the init goes right above the first reduction loop (``k`` after the reorder)
        first_reduce = 3 if name == "attention" else _spatial_count(sch, name)
        block = sch.get_block(name)
        sch.decompose_reduction(block, sch.get_loops(block)[first_reduce])
    row = sch.fuse(b, h, i)
    if parallel:
        sch.parallel(row)
    if vectorize:
        sch.vectorize(sch.get_loops(sch.get_block("attention"))[-1])
        sch.vectorize(sch.get_loops(sch.get_block("T_softmax_norm"))[-1])
    return sch
