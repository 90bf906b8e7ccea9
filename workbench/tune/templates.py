"""Built-in templates (AutoTVM style) for the operator library's common patterns."""

from __future__ import annotations

from workbench.tune.space_template import loop_extent


def matmul_template(cfg, func):
    """Tiled matmul over block ``C`` (loops ``i, j, k``): ``i, j, k`` split in two, one of
    three loop orders, the outer spatial loop parallel, ``ii`` optionally unrolled, ``ji``
    vectorized.

    Knobs: ``tile_i`` (inner <= 16), ``tile_j`` (inner <= 64), ``tile_k``, ``order``,
    ``unroll``.
    """
    from workbench.schedule import Schedule

    sch = Schedule(func)
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    cfg.define_split("tile_i", loop_extent(sch, i), 2, max_innermost_factor=16)
    cfg.define_split("tile_j", loop_extent(sch, j), 2, max_innermost_factor=64)
    cfg.define_split("tile_k", loop_extent(sch, k), 2)
    cfg.define_knob("order", ["jo io ko ki ii ji", "io jo ko ki ii ji", "io jo ko ii ki ji"])
    cfg.define_knob("unroll", [True, False])
    io, ii = sch.split(i, factors=cfg["tile_i"])
    jo, ji = sch.split(j, factors=cfg["tile_j"])
    ko, ki = sch.split(k, factors=cfg["tile_k"])
    loops = {"io": io, "ii": ii, "jo": jo, "ji": ji, "ko": ko, "ki": ki}
    order = [loops[name] for name in cfg["order"].split()]
    sch.reorder(*order)
    sch.parallel(order[0])
    if cfg["unroll"]:
        sch.unroll(ii)
    if cfg["tile_j"][-1] > 1:
        sch.vectorize(ji)
    return sch
