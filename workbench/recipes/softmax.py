"""Softmax recipes for the ``cpu`` target.

* ``fused_cpu(ops.softmax(M, N))``: the three passes fused into the row loop, the two row
  reductions ``rfactor``-ed into one vector register of partial results;
* ``online_cpu(online_softmax(M, N))``: the online (one-reduction) rewrite, fused;
* ``online_lanes_cpu(online_softmax_lanes(M, N))``: the online rewrite run in vector lanes.

The lane count of the ``rfactor`` split is ``cpu_facts.target_reduction_lanes(target,
dtype)`` (one vector register and at least one cache line of partials of the target,
``"cpu"``: the host) unless given.
``workbench.recipes.softmax_lowering`` walks through them.
"""

from __future__ import annotations

from workbench.backends.common.target import Target
from workbench.backends.cpu.cpu_facts import target_reduction_lanes
from workbench.ir import Block, PrimFunc
from workbench.ir.analysis import find_blocks
from workbench.recipes.registry import register
from workbench.schedule import Schedule


def fuse_rows(sch: Schedule, consumer: str, producers: list[str]) -> None:
    """Move each producer block into ``consumer``'s row loop and make its outputs ``local``.

    ``producers`` are listed in the order they must run (the first is computed first);
    ``compute_at`` puts a block at the start of the loop body, so they are moved last to
    first.
    """
    row_loop = sch.get_loops(sch.get_block(consumer))[0]
    for name in reversed(producers):
        sch.compute_at(sch.get_block(name), row_loop)
    for name in producers:
        written = _block_named(sch.mod, name).writes
        for index in range(len(written)):
            sch.set_scope(sch.get_block(name), index, "local")


def _block_named(func: PrimFunc, name: str) -> Block:
    return next(block for block in find_blocks(func) if block.name == name)


def vectorize_row_reduction(sch: Schedule, block: str, lanes: int) -> None:
    """Split ``block``'s reduction loop by ``lanes``, rfactor the inner part, vectorize it.

    The ``_rf`` block then keeps ``lanes`` partial results in a local buffer; each iteration
    of the outer reduction loop updates all of them with one vector instruction. The final
    block reduces the ``lanes`` partials. Both inits are decomposed out of their loops so no
    ``if k == 0`` test stays inside the vectorized loop.
    """
    blk = sch.get_block(block)
    reduce_loop = sch.get_loops(blk)[-1]
    _, inner = sch.split(reduce_loop, factors=[None, lanes])
    rf = sch.rfactor(inner, factor_axis=0)
    sch.set_scope(rf, 0, "local")
    sch.decompose_reduction(rf, sch.get_loops(rf)[1])
    sch.vectorize(sch.get_loops(rf)[-1])
    sch.decompose_reduction(blk, sch.get_loops(blk)[1])


def _finish_rows(sch: Schedule, parallel: bool, vectorize: bool) -> None:
    row, col = sch.get_loops(sch.get_block("T_softmax_norm"))
    if parallel:
        sch.parallel(row)
    if vectorize:
        sch.vectorize(col)


@register("softmax", "fused")
def fused_cpu(
    func: PrimFunc,
    *,
    parallel: bool = True,
    vectorize: bool = True,
    rfactor: bool = True,
    lanes: int | None = None,
    target: Target | str = "cpu",
) -> Schedule:
    """``ops.softmax`` fused into one pass per row (steps 2 and 3 of the walk-through).

    Parameters
    ----------
    func : PrimFunc
        ``ops.softmax(M, N)``. With ``rfactor``, ``N`` must be a multiple of ``lanes``.
    parallel : bool
        Run the row loop in parallel.
    vectorize : bool
        Vectorize the normalise loop, and (with ``rfactor``) the partial reductions.
    rfactor : bool
        Factor each row reduction into ``lanes`` partial results (see
        ``vectorize_row_reduction``). Without it the reductions are plain serial loops with
        their init decomposed out; LLVM leaves those scalar.
    lanes : int, optional
        Partial results per row; default ``cpu_facts.target_reduction_lanes(target, dtype)``
        (one vector register, at least a cache line: 16 float32 on AVX-512 and AVX2).
    target : Target or str
        Whose vector width and cache line size ``lanes`` (default) is, ``"cpu"``: the host.

    Example
    -------
    >>> from workbench import ops
    >>> sch = fused_cpu(ops.softmax(4, 32))
    >>> print(sch.trace)  # doctest: +ELLIPSIS
    b0 = sch.get_block("T_softmax_norm")
    ...
    """
    dtype = func.params[0].dtype
    lanes = target_reduction_lanes(target, dtype) if lanes is None else lanes
    sch = Schedule(func)
    fuse_rows(sch, "T_softmax_norm", ["T_softmax_maxelem", "T_softmax_expsum"])
    if vectorize and rfactor:
        vectorize_row_reduction(sch, "T_softmax_maxelem", lanes)
        vectorize_row_reduction(sch, "T_softmax_expsum", lanes)
    elif vectorize:
        for name in ("T_softmax_maxelem", "T_softmax_expsum"):
            blk = sch.get_block(name)
            sch.decompose_reduction(blk, sch.get_loops(blk)[1])
    _finish_rows(sch, parallel, vectorize)
    return sch


@register("softmax", "online")
def online_cpu(func: PrimFunc, *, parallel: bool = True, vectorize: bool = True) -> Schedule:
    """``online_softmax`` fused into one pass per row, the row loop parallel.

    The online block stores two buffers per update, which ``rfactor`` does not accept
    (``MultipleStoresError``), so its reduction stays a serial loop; the normalise loop is
    vectorized.
    """
    sch = Schedule(func)
    fuse_rows(sch, "T_softmax_norm", ["online_max_sum"])
    blk = sch.get_block("online_max_sum")
    sch.decompose_reduction(blk, sch.get_loops(blk)[1])
    _finish_rows(sch, parallel, vectorize)
    return sch


@register("softmax", "online_lanes")
def online_lanes_cpu(
    func: PrimFunc, *, parallel: bool = True, vectorize: bool = True
) -> Schedule:
    """``online_softmax_lanes`` fused into one pass per row, scheduled like ``fused_cpu``.

    The lane block and the two combine blocks are computed at the row loop of
    ``T_softmax_norm`` with ``local`` buffers, every init is decomposed out of its
    reduction loop, the row loop is parallel and the lane loop and the normalise loop are
    vectorized. The combine loops stay serial.
    """
    producers = ["lane_max_sum", "row_max", "row_sum"]
    sch = Schedule(func)
    fuse_rows(sch, "T_softmax_norm", producers)
    for name in producers:
        blk = sch.get_block(name)
        sch.decompose_reduction(blk, sch.get_loops(blk)[1])
    row, col = sch.get_loops(sch.get_block("T_softmax_norm"))
    if parallel:
        sch.parallel(row)
    if vectorize:
        sch.vectorize(sch.get_loops(sch.get_block("lane_max_sum"))[-1])
        sch.vectorize(col)
    return sch
