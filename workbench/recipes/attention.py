"""Attention recipe for the ``cpu`` target (``ops.attention``: blocks ``scores``,
``T_softmax_maxelem``, ``T_softmax_expsum``, ``T_softmax_norm``, ``attention``)."""

from __future__ import annotations

from workbench.backends.cpu.cpu_facts import reduction_lanes
from workbench.ir import PrimFunc
from workbench.ir.analysis import find_blocks
from workbench.ir.expr import BufferLoad, Var
from workbench.ir.functor import collect
from workbench.recipes.registry import register
from workbench.schedule import Schedule

ROW_BLOCKS = ("scores", "T_softmax_maxelem", "T_softmax_expsum", "T_softmax_norm")
"""The blocks computed per query row, in the order they run."""


def _row_blocks_at(sch: Schedule, loop) -> None:
    """The ``ROW_BLOCKS`` computed under ``loop`` (one query row, or a block of rows), each
    in a local buffer."""
    for name in reversed(ROW_BLOCKS):
        sch.compute_at(sch.get_block(name), loop)
    for name in ROW_BLOCKS:
        sch.set_scope(sch.get_block(name), 0, "local")


def _row_reduction_in_lanes(sch: Schedule, name: str, lanes: int, rows: int = 2) -> None:
    """``vectorize_row_reduction`` of the softmax recipes, under ``rows`` row loops (``bh,
    i``; three for the row blocks)."""
    block = sch.get_block(name)
    _, inner = sch.split(sch.get_loops(block)[-1], factors=[None, lanes])
    rf = sch.rfactor(inner, factor_axis=0)
    sch.set_scope(rf, 0, "local")
    sch.decompose_reduction(rf, sch.get_loops(rf)[rows])
    sch.vectorize(sch.get_loops(rf)[-1])
    sch.decompose_reduction(block, sch.get_loops(block)[rows])


def _keys_transposed(sch: Schedule, scores, keys_loop) -> None:
    """Copy the keys of one ``(b, h)`` into a buffer laid out ``[..., d, j]`` at
    ``keys_loop`` (``cache_read`` + ``compute_at`` + ``transform_layout``): the scores loop
    over keys ``j`` then reads contiguous memory instead of a stride-``dim`` gather."""
    keys = sch.cache_read(scores, 2, "global")
    sch.compute_at(keys, keys_loop)
    # a private copy per (b, h): with grouped-query heads (K read at h // group) two
    # iterations of the parallel loop would otherwise write the same key head
    sch.set_scope(keys, 0, "local")
    sch.transform_layout(keys, ("write", 0), keys_transposed(sch, keys))


def keys_transposed(sch: Schedule, staged) -> str:
    """The index map laying a staged copy of the keys out ``[..., d, j]`` (the cpu copy
    above, the cuda recipe's shared one): the axes of ``K`` that hold neither the key ``j``
    nor the head dimension ``d`` first, then ``d``, then ``j``, found in the ``scores``
    block's load of the copy.

    ``K`` is ``(B, H, S, D)`` unless ``passes.fold_views`` made the kernel read it through
    a view: GPT-2's fused projection is read at ``K[b, j, C + h * D + d]``, a grouped-query
    key head at ``K[b, j, h // group, d]``."""
    block = next(b for b in find_blocks(sch.mod) if b.name == "scores")
    vj, vd = block.iter_vars[-2].var, block.iter_vars[-1].var
    name = sch.get(staged).writes[0].buffer.name
    load = next(x for x in collect(block.body, lambda n: isinstance(n, BufferLoad))
                if x.buffer.name == name)

    def axis_of(var) -> int:
        return next(a for a, e in enumerate(load.indices)
                    if any(v == var for v in collect(e, lambda n: isinstance(n, Var))))
    axis_j, axis_d = axis_of(vj), axis_of(vd)
    order = [a for a in range(len(load.indices)) if a not in (axis_j, axis_d)]
    names = [f"a{a}" for a in range(len(load.indices))]
    return (f"lambda {', '.join(names)}: "
            f"({', '.join(names[o] for o in [*order, axis_d, axis_j])},)")


@register("attention", "rows")
def rows_cpu(func: PrimFunc, *, parallel: bool = True, vectorize: bool = True,
             lanes: int | None = None) -> Schedule:
    """One query row at a time: its scores, softmax and output row; ``(b, h)`` in parallel.

    - the output block's loops ``b, h, i, d, k`` become ``b, h, i, k, d`` (``reorder``), so
      the innermost loop walks a row of ``V`` and of the output (contiguous; vectorized);
      the output row is accumulated in a ``local`` buffer (``cache_write``, written back
      per row): registers, where ``out`` itself could alias ``V`` and be stored every step;
    - the four row blocks are computed at the row loop ``i`` (``compute_at``, last to
      first) with ``local`` buffers: a row of scores and of probabilities (``kv_seq``
      floats) and two scalars stay in registers and L1, never the ``seq x kv_seq`` matrices;
    - the scores' loops ``j, d`` become ``d, j``, and the keys of each ``(b, h)`` are copied
      transposed (``[d, j]``) once: the inner loop updates the whole row of scores from
      contiguous keys (vectorized) instead of a ``dim``-long dependent dot product per key;
    - ``b, h`` are fused into one (parallel) loop; the row max and row sum are
      ``rfactor``-ed into ``lanes`` partial results (as in the fused softmax) when
      ``kv_seq`` is a multiple of ``lanes``; every other init is decomposed out of its
      reduction loop.

    ``lanes`` defaults to ``cpu_facts.reduction_lanes(dtype)``. Measured at
    ``(16, 4, 32, 16)``, serial: 660 us with the plain row fusion, 329 us with the local
    output row, 275 us with the transposed keys.

    Example
    -------
    >>> from workbench import ops
    >>> sch = rows_cpu(ops.attention(1, 2, 8, 4))
    >>> [b.name for b in sch.mod.root_block.alloc_buffers][:1]
    ['scores']
    """
    lanes = reduction_lanes(func.params[0].dtype) if lanes is None else lanes
    scores_block = next(b for b in find_blocks(func) if b.name == "scores")
    kv_seq = int(scores_block.iter_vars[3].dom.extent.value)  # K may be a view of a wider x
    sch = Schedule(func)
    out = sch.get_block("attention")
    out_row = sch.cache_write(out, 0, "local")
    b, h, i, d, k = sch.get_loops(out)
    sch.reorder(k, d)
    sch.reverse_compute_at(out_row, i)
    _row_blocks_at(sch, i)
    scores = sch.get_block("scores")
    *_, j, dd = sch.get_loops(scores)
    sch.reorder(dd, j)
    heads = sch.fuse(b, h)
    _keys_transposed(sch, scores, heads)
    sch.decompose_reduction(scores, sch.get_loops(scores)[2])
    for name in ("T_softmax_maxelem", "T_softmax_expsum"):
        if vectorize and kv_seq % lanes == 0:
            _row_reduction_in_lanes(sch, name, lanes)
        else:
            block = sch.get_block(name)
            sch.decompose_reduction(block, sch.get_loops(block)[2])
    sch.decompose_reduction(out, sch.get_loops(out)[2])
    if parallel:
        sch.parallel(heads)
    if vectorize:
        for name in ("scores", "T_softmax_norm", "attention"):
            sch.vectorize(sch.get_loops(sch.get_block(name))[-1])
    return sch


ROW_TILE = 64
"""Keys per register tile of the row-block scores (four 512-bit registers per query row;
32 was fully unrolled to scalar code by LLVM before its vectorizer ran)."""


@register("attention", "row_blocks")
def row_blocks_cpu(func: PrimFunc, *, rows: int = 4, tile: int = ROW_TILE,
                   parallel: bool = True, vectorize: bool = True,
                   lanes: int | None = None) -> Schedule:
    """``rows`` query rows at a time, their scores and outputs in register tiles.

    ``rows_cpu`` with the row loop ``i`` split by ``rows`` and every row block computed at
    the outer part (``i_0``), as a matmul register tile:

    - scores: loops ``j_0, d, i_1 (unroll), j_1 (vectorize, tile)``: a ``rows x tile``
      accumulator (the backend keeps it in registers) is updated from one row of the
      transposed keys per ``d``, so each key load serves ``rows`` queries;
    - output: loops ``k, i_1 (unroll), d (vectorize)``: the ``rows x value_dim`` output
      accumulates ``p[i_1, k] * V[k, :]``, each row of ``V`` loaded once for ``rows`` queries;
    - the softmax blocks run per row of the block (``i_1``), max and sum in lanes as in
      ``rows_cpu``.

    Needs ``seq % rows == 0`` and ``kv_seq % tile == 0`` (else ``ValueError``: the caller
    falls back to ``rows_cpu``). Measured at BERT's ``(16, 4, 128, 64)`` on one core (loaded
    machine, best calls): 4.5 ms against 11-14 ms for ``rows_cpu`` and 9 ms for PyTorch's
    flash attention.

    Example
    -------
    >>> from workbench import ops
    >>> sch = row_blocks_cpu(ops.attention(1, 2, 8, 4, kv_seq=64))
    >>> "T_softmax_norm" in [b.name for b in find_blocks(sch.mod)]
    True
    """
    lanes = reduction_lanes(func.params[0].dtype) if lanes is None else lanes
    scores_block = next(b for b in find_blocks(func) if b.name == "scores")
    seq = int(scores_block.iter_vars[2].dom.extent.value)
    kv_seq = int(scores_block.iter_vars[3].dom.extent.value)
    if seq % rows or kv_seq % tile:
        raise ValueError(f"attention row_blocks: seq {seq} must be a multiple of rows "
                         f"{rows} and kv_seq {kv_seq} of tile {tile}")
    sch = Schedule(func)
    out = sch.get_block("attention")
    out_rows = sch.cache_write(out, 0, "local")
    b, h, i, d, k = sch.get_loops(out)
    i0, i1 = sch.split(i, factors=[None, rows])
    sch.reorder(i0, k, i1, d)
    sch.reverse_compute_at(out_rows, i0)
    _row_blocks_at(sch, i0)
    scores = sch.get_block("scores")
    *_, row, j, dd = sch.get_loops(scores)
    j0, j1 = sch.split(j, factors=[None, tile])
    sch.reorder(j0, dd, row, j1)
    heads = sch.fuse(b, h)
    _keys_transposed(sch, scores, heads)
    sch.decompose_reduction(scores, sch.get_loops(scores)[-3])
    for name in ("T_softmax_maxelem", "T_softmax_expsum"):
        if vectorize and kv_seq % lanes == 0:
            _row_reduction_in_lanes(sch, name, lanes, rows=3)
        else:
            block = sch.get_block(name)
            sch.decompose_reduction(block, sch.get_loops(block)[3])
    sch.decompose_reduction(out, sch.get_loops(out)[2])
    if parallel:
        sch.parallel(heads)
    sch.unroll(sch.get_loops(sch.get_block("scores"))[-2])
    sch.unroll(sch.get_loops(out)[-2])
    if vectorize:
        for name in ("scores", "T_softmax_norm", "attention"):
            sch.vectorize(sch.get_loops(sch.get_block(name))[-1])
    return sch
