"""Features of a candidate for the cost model, from its configuration and its lowered IR.

``config_features(space, config)``: each knob's value as numbers (a split's factors as
log2, a categorical knob's index).

``ir_features(func)`` of the lowered scheduled function (``workbench.backends.lower``):

* loop structure: number of loops, nest depth, log2 of the innermost loop's extent;
* parallelism: log2 of the extent of the outermost parallel loop, number of parallel loops;
* vector width: extent of the innermost vectorized loop (0 if none); unrolled work:
  log2 of the product of unrolled extents;
* footprints against the caches: for the deepest loop nest, the bytes each loop level's body
  touches (per buffer, the product of the extents of the loops below whose variables its
  indices use, times the element size), and at which depth that first fits L1, L2 and the
  last-level cache (as fractions of the depth);
* analytic work: log2 FLOPs, log2 minimum bytes and their ratio (same for every candidate of
  one workload; they make records of several workloads comparable).
"""

from __future__ import annotations

import math
from functools import lru_cache

from workbench.ir.expr import BufferLoad, Var
from workbench.ir.functor import collect
from workbench.ir.stmt import BufferStore, For, ForKind

IR_FEATURES = (
    "n_loops", "depth", "log2_inner_extent", "log2_parallel", "n_parallel", "vector_width",
    "log2_unroll", "log2_footprint_inner", "fit_l1", "fit_l2", "fit_llc", "log2_flops",
    "log2_bytes", "intensity",
)


@lru_cache(maxsize=1)
def cache_sizes() -> tuple[int, int, int]:
    """(L1d, L2, last level) in bytes, from /sys; common sizes where it is missing."""
    sizes = {1: 32 << 10, 2: 1 << 20, 3: 32 << 20}
    try:
        from pathlib import Path

        for index in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
            kind = (index / "type").read_text().strip()
            if kind == "Instruction":
                continue
            level = int((index / "level").read_text())
            text = (index / "size").read_text().strip().upper()
            scale = {"K": 1 << 10, "M": 1 << 20}.get(text[-1], 1)
            sizes[level] = int(text.rstrip("KM")) * scale
    except (OSError, ValueError):
        pass
    return sizes[1], sizes.get(2, sizes[1]), sizes.get(3, sizes.get(2, sizes[1]))


def _log2(x: float) -> float:
    return math.log2(x) if x > 0 else 0.0


def _extent(loop: For) -> int:
    value = getattr(loop.extent, "value", None)
    return int(value) if value is not None else 1


def _deepest_chain(stmt, chain=()):
    """The loops from the root to the deepest loop (the chain the most work runs in)."""
    best = chain

    def walk(node, stack):
        nonlocal best
        if isinstance(node, For):
            stack = stack + (node,)
            if len(stack) > len(best):
                best = stack
            walk(node.body, stack)
            return
        for child in _children(node):
            walk(child, stack)

    walk(stmt, chain)
    return best


def _children(node):
    from workbench.ir.stmt import Block, BlockRealize, IfThenElse, SeqStmt

    if isinstance(node, SeqStmt):
        return node.stmts
    if isinstance(node, BlockRealize):
        return (node.block,)
    if isinstance(node, Block):
        return tuple(s for s in (node.init, node.body) if s is not None)
    if isinstance(node, IfThenElse):
        return tuple(s for s in (node.then_case, node.else_case) if s is not None)
    body = getattr(node, "body", None)
    return (body,) if body is not None else ()


def _footprints(chain: tuple[For, ...]) -> list[float]:
    """Bytes touched by the body of each loop of ``chain`` (outermost first)."""
    if not chain:
        return []
    inner = chain[-1].body
    accesses = collect(inner, lambda n: isinstance(n, (BufferLoad, BufferStore)))
    per_buffer: dict[str, tuple[set, int]] = {}
    for access in accesses:
        names = set()
        for index in access.indices:
            names |= {v.name for v in collect(index, lambda n: isinstance(n, Var))}
        size = access.buffer.itemsize
        old = per_buffer.get(access.buffer.name, (set(), size))
        per_buffer[access.buffer.name] = (old[0] | names, size)
    out = []
    for level in range(len(chain)):
        below = chain[level:]
        total = 0.0
        for names, size in per_buffer.values():
            elements = 1
            for loop in below:
                if loop.loop_var.name in names:
                    elements *= _extent(loop)
            total += elements * size
        out.append(total)
    return out


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
