"""Features of a candidate for the cost model, from its configuration and its lowered IR.

``config_features(space, config)``: each knob's value as numbers (a split's factors as
log2, a categorical knob's index).

``ir_features(func)`` of the lowered scheduled function (``workbench.backends.common.lower``):

* loop structure: number of loops, nest depth, log2 of the innermost loop's extent;
* parallelism: log2 of the extent of the outermost parallel loop, number of parallel loops;
* vector width: extent of the innermost vectorized loop (0 if none); unrolled work:
  log2 of the product of unrolled extents;
* footprints against the caches: for the deepest loop nest, the bytes each loop level's body
  touches (per buffer, the product of the extents of the loops below whose variables its
  indices use, times the element size), and at which depth that first fits L1, L2 and the
  last-level cache (as fractions of the depth);
* analytic work: log2 FLOPs, log2 minimum bytes and their ratio (same for every candidate of
  one workload; they make records of several workloads comparable);
* register tile (``nest_facts``): in the deepest nest, the innermost reduction loop of the
  accumulating store (a loop of extent > 1 whose variable the store's indices do not use)
  and the output elements the loops below it update (``register_tile``: what stays in
  registers across the reduction), and that loop's extent;
* cache traffic (``nest_facts``): per cache level, the bytes moved into it, estimated as
  the line-granular footprint of the outermost loop body that fits the cache times the
  times that body runs (a strided operand whose rows all map to the same cache sets counts
  as not fitting L1 past the cache's associativity);
* ``log2_prior``: the analytic estimate of ``workbench.tune.prior`` (log2 seconds), so the
  learned model starts from it and learns what it misses.
"""

from __future__ import annotations

import math

from workbench.ir.functor import collect
from workbench.ir.stmt import For, ForKind
from workbench.tune.nest_facts import (  # noqa: F401 - the nest facts, importable from here
    _deepest_chain,
    _extent,
    _footprints,
    _log2,
    cache_sizes,
    chain_facts,
    l1_geometry,
    leaf_chains,
    line_footprints,
    nest_facts,
    operand_loads,
    register_tile,
    traffic,
)
from workbench.tune.prior import estimate_seconds

IR_FEATURES = (
    "n_loops", "depth", "log2_inner_extent", "log2_parallel", "n_parallel", "vector_width",
    "log2_unroll", "log2_footprint_inner", "fit_l1", "fit_l2", "fit_llc", "log2_flops",
    "log2_bytes", "intensity", "log2_register_tile", "log2_reduce_inner", "log2_traffic_l1",
    "log2_traffic_l2", "log2_traffic_llc", "log2_prior",
)


def ir_features(lowered) -> dict[str, float]:
    """Features of a lowered PrimFunc (see the module docstring)."""
    from workbench.ir import analysis

    loops = collect(lowered.body, lambda n: isinstance(n, For))
    chain = _deepest_chain(lowered.body)
    parallel = [lp for lp in loops if lp.kind == ForKind.PARALLEL]
    vectorized = [lp for lp in chain if lp.kind == ForKind.VECTORIZED]
    unrolled = [lp for lp in chain if lp.kind == ForKind.UNROLLED]
    footprints = _footprints(chain)
    l1, l2, llc = cache_sizes()
    depth = max(1, len(chain))

    def fit(limit):  # the outermost level whose body fits, as a fraction of the depth
        for level, size in enumerate(footprints):
            if size <= limit:
                return level / depth
        return 1.0

    flops = analysis.flops(lowered)
    nbytes = analysis.min_bytes(lowered)
    facts = nest_facts(lowered)
    return {
        "n_loops": float(len(loops)),
        "depth": float(len(chain)),
        "log2_inner_extent": _log2(_extent(chain[-1])) if chain else 0.0,
        "log2_parallel": _log2(_extent(parallel[0])) if parallel else 0.0,
        "n_parallel": float(len(parallel)),
        "vector_width": float(_extent(vectorized[-1])) if vectorized else 0.0,
        "log2_unroll": _log2(math.prod(_extent(lp) for lp in unrolled)) if unrolled else 0.0,
        "log2_footprint_inner": _log2(footprints[-1]) if footprints else 0.0,
        "fit_l1": fit(l1),
        "fit_l2": fit(l2),
        "fit_llc": fit(llc),
        "log2_flops": _log2(flops),
        "log2_bytes": _log2(nbytes),
        "intensity": flops / nbytes if nbytes else 0.0,
        "log2_register_tile": _log2(facts["register_tile"]),
        "log2_reduce_inner": _log2(facts["reduce_inner"]),
        "log2_traffic_l1": _log2(facts["traffic_l1"]),
        "log2_traffic_l2": _log2(facts["traffic_l2"]),
        "log2_traffic_llc": _log2(facts["traffic_llc"]),
        "log2_prior": _log2(estimate_seconds(facts, lowered) * 1e9),
    }


def config_features(space, config: dict) -> list[float]:
    """Each knob's value as numbers, in the space's knob order."""
    out: list[float] = []
    for knob in space.domains:
        value = config[knob]
        full = space._domains[knob]
        if isinstance(value, list) and all(isinstance(v, int) for v in value) and (
            all(isinstance(v, list) and len(v) == len(value) for v in full[:1])
        ):
            out.extend(_log2(v) for v in value)
        else:
            out.append(float(space.index_of(knob, value)))
    return out


def candidate_features(space, config: dict) -> list[float]:
    """Config features followed by the IR features of the lowered schedule (zeros if the
    config does not schedule)."""
    from workbench.backends import lower

    numbers = config_features(space, config)
    try:
        lowered = lower(space.schedule(config).mod)
        ir = ir_features(lowered)
    except Exception:  # noqa: BLE001 - an illegal config still gets a feature row
        ir = dict.fromkeys(IR_FEATURES, 0.0)
    return numbers + [ir[name] for name in IR_FEATURES]
