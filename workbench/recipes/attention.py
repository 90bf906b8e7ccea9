"""Attention recipe for the ``cpu`` target (``ops.attention``: blocks ``scores``,
``T_softmax_maxelem``, ``T_softmax_expsum``, ``T_softmax_norm``, ``attention``)."""

from __future__ import annotations

from workbench.backends.cpu_facts import reduction_lanes
from workbench.ir import PrimFunc
from workbench.recipes.registry import register
from workbench.recipes.softmax import vectorize_row_reduction
from workbench.schedule import Schedule

ROW_BLOCKS = ("scores", "T_softmax_maxelem", "T_softmax_expsum", "T_softmax_norm")
"""The blocks computed per query row, in the order they run."""


@register("attention", "rows")
def rows_cpu(func: PrimFunc, *, parallel: bool = True, vectorize: bool = True,
             lanes: int | None = None) -> Schedule:
    """One query row at a time: its scores, softmax and output row, rows in parallel.

    - the output block's loops ``b, h, i, d, k`` become ``b, h, i, k, d`` (``reorder``), so
      the innermost loop walks a row of ``V`` and of the output (contiguous; vectorized);
    - the four row blocks are computed at the row loop ``i`` (``compute_at``, last to
      first) with ``local`` buffers: a row of scores and of probabilities (``kv_seq``
      floats) and two scalars stay in registers and L1, never the ``seq x kv_seq`` matrices;
    - the scores' loops ``j, d`` become ``d, j``: the inner loop updates the whole row of
      scores (vectorized) instead of a 16-long dependent dot product per key;
    - ``b, h, i`` are fused into one (parallel) row loop; the row max and row sum are
      ``rfactor``-ed into ``lanes`` partial results (``vectorize_row_reduction``, as in the
      fused softmax) when ``kv_seq`` is a multiple of ``lanes``; every other init is
      decomposed out of its reduction loop.

    ``lanes`` defaults to ``cpu_facts.reduction_lanes(dtype)``.

    Example
    -------
    >>> from workbench import ops
    >>> sch = rows_cpu(ops.attention(1, 2, 8, 4))
    >>> [b.name for b in sch.mod.root_block.alloc_buffers][:1]
    ['scores']
    """
    lanes = reduction_lanes(func.params[0].dtype) if lanes is None else lanes
    kv_seq = func.params[1].shape[-2]
    sch = Schedule(func)
    out = sch.get_block("attention")
    b, h, i, d, k = sch.get_loops(out)
    sch.reorder(k, d)
    for name in reversed(ROW_BLOCKS):
        sch.compute_at(sch.get_block(name), i)
    for name in ROW_BLOCKS:
        sch.set_scope(sch.get_block(name), 0, "local")
    scores = sch.get_block("scores")
    *_, j, dd = sch.get_loops(scores)
    sch.reorder(dd, j)
    row = sch.fuse(b, h, i)
    sch.decompose_reduction(scores, sch.get_loops(scores)[1])
    for name in ("T_softmax_maxelem", "T_softmax_expsum"):
        if vectorize and kv_seq % lanes == 0:
            vectorize_row_reduction(sch, name, lanes)
        else:
            block = sch.get_block(name)
            sch.decompose_reduction(block, sch.get_loops(block)[1])
    sch.decompose_reduction(out, sch.get_loops(out)[1])
    if parallel:
        sch.parallel(row)
    if vectorize:
        for name in ("scores", "T_softmax_norm", "attention"):
            sch.vectorize(sch.get_loops(sch.get_block(name))[-1])
    return sch
