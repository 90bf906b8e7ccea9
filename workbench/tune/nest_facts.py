"""Facts of a lowered function's loop nests, shared by the cost model's features
(``workbench.tune.features``) and the analytic prior (``workbench.tune.prior``).

* footprints against the caches (``_footprints``): for the deepest loop nest, the bytes
  each loop level's body touches (per buffer, the product of the extents of the loops below
  whose variables its indices use, times the element size);
* register tile (``register_tile``): in the deepest nest, the innermost reduction loop of
  the accumulating store (a loop of extent > 1 whose variable the store's indices do not
  use) and the output elements the loops below it update (what stays in registers across
  the reduction), and that loop's extent;
* operand loads (``operand_loads``) and cache traffic (``traffic``): per cache level, the
  bytes moved into it, estimated as the line-granular footprint of the outermost loop body
  that fits the cache times the times that body runs (a strided operand whose rows all map
  to the same cache sets counts as not fitting L1 past the cache's associativity);
* ``chain_facts`` / ``nest_facts``: all of the above for one chain of loops / for every
  nest of a function.

The caches are the machine's (``cpu_facts.cache_sizes`` and ``l1_geometry``: ``machine_facts()``).
"""

from __future__ import annotations

import math

from workbench.backends.cpu.cpu_facts import cache_sizes, l1_geometry
from workbench.ir.expr import BufferLoad, Var
from workbench.ir.functor import collect
from workbench.ir.stmt import BufferStore, For, ForKind


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


def _vars(expr) -> set[str]:
    return {v.name for v in collect(expr, lambda n: isinstance(n, Var))}


def register_tile(chain: tuple[For, ...]) -> tuple[int, int, bool]:
    """(output elements updated below the innermost reduction loop, the reduction steps
    the tile stays in place for, whether it can stay in registers) for the accumulating
    store of the innermost body of ``chain``; (0, 0, False) if the body accumulates
    nothing (no store reads its own buffer) or no loop of extent > 1 reduces.

    The innermost reduction loop is the innermost loop of extent > 1 whose variable the
    store's indices do not use; the loops below it whose variables they use span the tile
    that has to stay in registers across the reduction (a matmul ``i3 x j3``), for the
    product of the extents of the reduction loops directly around it (a conv2d's ``rc, ry,
    rx`` in a row: 64 x 3 x 3 steps, not the 3 of ``rx`` alone; the reduction loops are
    those the init's guard names, else the innermost one alone). It can when
    at most one loop besides the vectorized one spans it (unrolled loops do not count):
    LLVM fully unrolls that loop and keeps the accumulators in registers; a deeper tile it
    leaves in memory, a load and a store per FMA.
    """
    if not chain:
        return 0, 0, False
    stores = collect(chain[-1].body, lambda n: isinstance(n, BufferStore))
    used: set[str] = set()
    for store in stores:
        loads = collect(store.value, lambda n: isinstance(n, BufferLoad))
        if any(load.buffer.name == store.buffer.name for load in loads):
            for index in store.indices:
                used |= _vars(index)
    if not used:
        return 0, 0, False
    for level in range(len(chain) - 1, -1, -1):
        loop = chain[level]
        if _extent(loop) > 1 and loop.loop_var.name not in used:
            below = [lp for lp in chain[level + 1:] if lp.loop_var.name in used]
            rolled = [lp for lp in below if _extent(lp) > 1
                      and lp.kind not in (ForKind.VECTORIZED, ForKind.UNROLLED)]
            reducing = _init_guard_vars(chain[-1].body) or {loop.loop_var.name}
            steps = 1
            for outer in reversed(chain[:level + 1]):  # reduction loops right above it
                if _extent(outer) == 1:
                    continue
                if outer.loop_var.name not in reducing:
                    break
                steps *= _extent(outer)
            return math.prod(_extent(lp) for lp in below), max(steps, 1), len(rolled) <= 1
    return 0, 0, False


def _init_guard_vars(body) -> set[str]:
    """The variables of the guard of a reduction's init (``if k_0 * 32 + k_1 == 0: C = 0``):
    the reduction loops of the block; empty when the body has no such guard."""
    from workbench.ir.stmt import IfThenElse

    out: set[str] = set()
    for node in collect(body, lambda n: isinstance(n, IfThenElse)):
        if collect(node.then_case, lambda n: isinstance(n, BufferStore)):
            out |= _vars(node.condition)
    return out


def operand_loads(chain: tuple[For, ...]) -> tuple[float, float]:
    """Elements the innermost body's operands (loads of buffers it does not store to) read
    per step of the innermost reduction loop: (along the vectorized loop's variable in
    their last index: vector loads, ``/ lanes`` of them; the others: one load each, a
    broadcast). A 4 x 64 matmul tile reads 64 of ``B`` (vector) and 4 of ``A`` (scalar)
    per ``k``; (0, 0) if nothing reduces."""
    tile, _, _ = register_tile(chain)
    if not tile:
        return 0.0, 0.0
    stores = collect(chain[-1].body, lambda n: isinstance(n, BufferStore))
    stored = {store.buffer.name for store in stores}
    used = set().union(*(_vars(i) for st in stores for i in st.indices))
    level = max(i for i, lp in enumerate(chain)
                if _extent(lp) > 1 and lp.loop_var.name not in used)
    below = chain[level + 1:]
    vector = {lp.loop_var.name for lp in below if lp.kind == ForKind.VECTORIZED}
    seen: dict[tuple, tuple[float, bool]] = {}
    for load in collect(chain[-1].body, lambda n: isinstance(n, BufferLoad)):
        if load.buffer.name in stored:
            continue
        names = set().union(*(_vars(i) for i in load.indices)) if load.indices else set()
        elements = math.prod(_extent(lp) for lp in below if lp.loop_var.name in names)
        along = bool(load.indices) and bool(_vars(load.indices[-1]) & vector)
        seen[(load.buffer.name, str(load.indices))] = (float(elements), along)
    vector_elements = sum(e for e, along in seen.values() if along)
    scalar_elements = sum(e for e, along in seen.values() if not along)
    return vector_elements, scalar_elements


def _access_dims(chain: tuple[For, ...]) -> dict[str, tuple]:
    """Per buffer of the innermost body: (per dimension the variables its indices use,
    element size, shape)."""
    accesses = collect(chain[-1].body, lambda n: isinstance(n, (BufferLoad, BufferStore)))
    out: dict[str, tuple] = {}
    for access in accesses:
        dims = [_vars(index) for index in access.indices]
        name = access.buffer.name
        if name in out and len(out[name][0]) == len(dims):
            dims = [a | b for a, b in zip(out[name][0], dims, strict=True)]
        out[name] = (dims, access.buffer.itemsize, tuple(int(d) for d in access.buffer.shape))
    return out


def _regions(chain: tuple[For, ...], level: int, shapes: dict) -> list[tuple[int, int, int]]:
    """Per buffer, what the body of ``chain[level]`` touches: (contiguous run in bytes,
    number of runs, bytes between runs). Trailing dimensions covered whole merge into one
    run (a packed panel ``[p, k, 16]`` read for all ``k`` is one run)."""
    below = chain[level:]
    out = []
    for dims, size, shape in shapes.values():
        spans = [min(shape[d] if d < len(shape) else 1,
                     math.prod(_extent(lp) for lp in below if lp.loop_var.name in names))
                 for d, names in enumerate(dims)]
        run, d = size, len(spans) - 1
        while d >= 0:
            run *= spans[d]
            if d < len(shape) and spans[d] < shape[d]:
                break
            d -= 1
        rows = math.prod(spans[:d]) if d > 0 else 1
        stride = size * math.prod(shape[d:]) if 0 < d <= len(shape) else 0
        out.append((run, rows, stride))
    return out


STRIDED_RUN = 1024  # bytes: shorter runs a stride apart stream slower (prefetch, TLB)
STRIDED_COST = 8.0  # their bytes count this many times in the traffic


def line_footprints(chain: tuple[For, ...], line: int = 64, set_span: int = 4096,
                    ways: int = 8) -> tuple[list[float], list[float], list[float]]:
    """Per loop of ``chain`` (outermost first), the bytes its body touches counted in whole
    cache lines; the same for L1 with set conflicts (an operand whose runs are a multiple
    of ``set_span``, L1 size / ways, apart and shorter than it lands in the same sets, so
    only ``ways`` of its runs fit: a matmul's ``B`` read in place, 64-float pieces 4 KiB
    apart); and the cost-weighted bytes (runs shorter than ``STRIDED_RUN`` a stride apart
    count ``STRIDED_COST`` times)."""
    shapes = _access_dims(chain) if chain else {}
    plain, l1, weighted = [], [], []
    for level in range(len(chain)):
        total = total_l1 = total_w = 0.0
        for run, rows, stride in _regions(chain, level, shapes):
            nbytes = rows * math.ceil(run / line) * line
            total += nbytes
            conflict = stride and stride % set_span == 0 and run < set_span
            total_l1 += nbytes * max(1.0, rows / ways) if conflict else nbytes
            total_w += nbytes * (STRIDED_COST if rows > 1 and run < STRIDED_RUN else 1.0)
        plain.append(total)
        l1.append(total_l1)
        weighted.append(total_w)
    return plain, l1, weighted


def traffic(chain: tuple[For, ...], footprints: list[float], capacity: float,
            fitting: list[float] | None = None) -> float:
    """Bytes moved into a cache of ``capacity``: the footprint of the innermost loop whose
    body does not fit it, times the number of times that loop runs (its lines are loaded
    once per run: the reuse inside one iteration and between neighbouring iterations is
    kept, the reuse across its runs is not); the whole nest's footprint if it all fits.
    ``fitting`` (default ``footprints``) decides what fits: the L1 footprints with set
    conflicts."""
    if not chain:
        return 0.0
    fitting = footprints if fitting is None else fitting
    over = [i for i, f in enumerate(fitting) if f > capacity]
    if not over:
        return footprints[0]
    level = over[-1]
    return footprints[level] * math.prod(_extent(lp) for lp in chain[:level])


def leaf_chains(stmt) -> list[tuple[For, ...]]:
    """Every chain of loops from the root to a loop with no loop inside (one per nest)."""
    out: list[tuple[For, ...]] = []

    def walk(node, stack):
        if isinstance(node, For):
            stack = stack + (node,)
            inner = collect(node.body, lambda n: isinstance(n, For))
            if not inner:
                out.append(stack)
                return
            walk(node.body, stack)
            return
        for child in _children(node):
            walk(child, stack)

    walk(stmt, ())
    return out


def chain_facts(chain: tuple[For, ...], flops: float = 0.0) -> dict[str, float]:
    """What the analytic prior reads from one loop nest (``chain``: root to leaf): its
    work, parallel extent, vector width, register tile, operand loads per reduction step,
    memory accesses and the cache traffic at each level (bytes)."""
    l1, l2, llc = cache_sizes()
    line, ways = l1_geometry()
    plain, conflicted, weighted = line_footprints(chain, line, l1 // max(1, ways), ways)
    parallel = [(i, lp) for i, lp in enumerate(chain) if lp.kind == ForKind.PARALLEL]
    vectorized = [lp for lp in chain if lp.kind == ForKind.VECTORIZED]
    tile, reduce_inner, in_registers = register_tile(chain)
    vector_loads, scalar_loads = operand_loads(chain)
    launches = math.prod(_extent(lp) for lp in chain[:parallel[0][0]]) if parallel else 0
    accesses = collect(chain[-1].body, lambda n: isinstance(n, (BufferLoad, BufferStore)))
    return {
        "flops": float(flops),
        "iterations": float(math.prod(_extent(lp) for lp in chain)),
        "accesses": float(len(accesses)),
        "parallel_extent": float(_extent(parallel[0][1])) if parallel else 1.0,
        "parallel_launches": float(launches),
        "vector_width": float(_extent(vectorized[-1])) if vectorized else 0.0,
        "inner_vectorized": float(bool(chain) and chain[-1].kind == ForKind.VECTORIZED),
        "register_tile": float(tile),
        "reduce_inner": float(reduce_inner),
        "tile_in_registers": float(in_registers),
        "load_vector_elements": vector_loads,
        "load_scalar_elements": scalar_loads,
        "traffic_l1": traffic(chain, weighted, l1, conflicted),
        "traffic_l2": traffic(chain, weighted, l2, plain),
        "traffic_llc": traffic(chain, plain, llc),
    }


def nest_facts(lowered) -> dict[str, float]:
    """``chain_facts`` of the deepest loop nest of a lowered function (its FLOPs: the
    whole function's), with ``"nests"``: the facts of every nest (``leaf_chains``), each
    with the FLOPs of the blocks inside it, which the prior adds up."""
    from workbench.ir import analysis
    from workbench.ir.stmt import Block

    per_block = analysis.block_flops(lowered)
    nests = []
    for chain in leaf_chains(lowered.body):
        names = {b.name for b in collect(chain[-1].body, lambda n: isinstance(n, Block))}
        nests.append(chain_facts(chain, sum(per_block.get(n, 0) for n in names)))
    facts = chain_facts(_deepest_chain(lowered.body), analysis.flops(lowered))
    facts["nests"] = nests
    return facts


