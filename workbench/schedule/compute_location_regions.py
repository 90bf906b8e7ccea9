"""Helpers of the compute location primitives (``compute_location.py``): the blocks of a
scope in program order, region inference by relaxing loops, building the new loop nest
of a moved block, removing a block, and substituting expressions for inlining.

Region inference works on *symbolic intervals*: ``(lo, hi)`` pairs of expressions
(inclusive) in terms of the loops at and around the target loop. ``relax`` replaces each
loop variable inside the target loop by its range (``i_1 in [0, 3]``), so that
``A[i_0 * 4 + i_1]`` under ``i_0`` needs ``A[i_0 * 4 : i_0 * 4 + 3]``.
"""

from __future__ import annotations

import dataclasses

from workbench.ir import (
    GE,
    LE,
    LT,
    TRUE,
    Add,
    And,
    Block,
    BlockRealize,
    Buffer,
    BufferLoad,
    BufferRegion,
    BufferStore,
    Evaluate,
    FloorDiv,
    FloorMod,
    For,
    ForKind,
    IfThenElse,
    IntImm,
    IRMapper,
    IterKind,
    IterVar,
    Max,
    Min,
    Mul,
    PrimExpr,
    PrimFunc,
    SeqStmt,
    Stmt,
    Sub,
    Var,
    collect,
    const_value,
    seq,
    substitute,
)
from workbench.ir.regions import block_access_regions
from workbench.schedule.errors_compute_location import (
    BlockInInitError,
    PredicateNotMovableError,
    RootBlockError,
)
from workbench.schedule.tree import (
    child_blocks,
    conjoin,
    enclosing_loops,
    find_block,
    fresh_name,
    prove,
    replace_block,
    replace_loop,
    simplify,
    used_names,
    walk,
)
from workbench.schedule.tree import loop_ranges as _int_loop_ranges

Interval = tuple[PrimExpr, PrimExpr]

# ---------------------------------------------------------------------------------------
# The blocks of one scope
# ---------------------------------------------------------------------------------------


def scope_block(ancestors: tuple[Stmt, ...]) -> Block | None:
    """The nearest block around a statement (its scope)."""
    return next((a for a in reversed(ancestors) if isinstance(a, Block)), None)


def buffers(regions: tuple[BufferRegion, ...]) -> set[Buffer]:
    return {region.buffer for region in regions}


def shared_buffer(writes: tuple[BufferRegion, ...], reads: tuple[BufferRegion, ...]) -> str:
    """The name of a buffer in both region lists (the first written one)."""
    read = buffers(reads)
    return next((r.buffer.name for r in writes if r.buffer in read), "")


@dataclasses.dataclass
class ScopeInfo:
    """The child blocks of a scope block, in program order, with their realizes and
    ancestors, and the program-order position of every statement of the function."""

    block: Block
    blocks: list[Block]
    realizes: dict[str, tuple[BlockRealize, tuple[Stmt, ...]]]
    order: dict[int, int]

    @staticmethod
    def of(func: PrimFunc, scope: Block) -> ScopeInfo:
        order: dict[int, int] = {}
        realizes: dict[str, tuple[BlockRealize, tuple[Stmt, ...]]] = {}
        for index, (stmt, ancestors) in enumerate(walk(func.body)):
            order[id(stmt)] = index
            if isinstance(stmt, BlockRealize) and scope_block(ancestors) is scope:
                realizes[stmt.block.name] = (stmt, ancestors)
        return ScopeInfo(scope, child_blocks(scope), realizes, order)

    def realize_and_ancestors(self, name: str) -> tuple[BlockRealize, tuple[Stmt, ...]]:
        return self.realizes[name]

    def ancestors_of(self, name: str) -> tuple[Stmt, ...]:
        return self.realizes[name][1]

    def position(self, name: str) -> int:
        return self.order[id(self.realizes[name][0])]

    def position_of_loop(self, loop: For) -> int:
        return self.order[id(loop)]

    def is_under(self, name: str, loop: For) -> bool:
        return any(a is loop for a in self.ancestors_of(name))

    def blocks_under(self, loop: For) -> list[Block]:
        return [b for b in self.blocks if self.is_under(b.name, loop)]

    def top_index(self, loop: For, name: str) -> int:
        """Index, in ``loop``'s body, of the statement that holds block ``name``."""
        realize, ancestors = self.realizes[name]
        path = list(ancestors) + [realize]
        below = path[next(i for i, a in enumerate(path) if a is loop) + 1 :]
        if isinstance(loop.body, SeqStmt) and below[0] is loop.body:
            return next(i for i, s in enumerate(loop.body.stmts) if s is below[1])
        return 0

    def consumers(self, block: Block) -> list[Block]:
        """Blocks of the scope reading a buffer ``block`` writes, in program order."""
        written = buffers(block.writes)
        return [b for b in self.blocks if b is not block and buffers(b.reads) & written]

    def producers(self, block: Block) -> list[Block]:
        """Blocks of the scope writing a buffer ``block`` reads, in program order."""
        read = buffers(block.reads)
        return [b for b in self.blocks if b is not block and buffers(b.writes) & read]


def check_movable(primitive: str, func: PrimFunc, name: str) -> tuple[ScopeInfo, Block]:
    """The block ``name`` and its scope; refuses the root and blocks inside an init."""
    block, ancestors = find_block(func, name, primitive)
    if block is func.root_block:
        raise RootBlockError(primitive, func)
    for position, ancestor in enumerate(ancestors[:-1]):
        if isinstance(ancestor, Block) and ancestor.init is ancestors[position + 1]:
            raise BlockInInitError(primitive, name, ancestor.name, func, block)
    scope = ScopeInfo.of(func, scope_block(ancestors))
    return scope, block


def realize_of(scope: ScopeInfo, name: str) -> BlockRealize:
    return scope.realizes[name][0]


def enclosing_loops_of(scope: ScopeInfo, name: str) -> list[For]:
    return enclosing_loops(scope.ancestors_of(name))


def for_ancestors(ancestors: tuple[Stmt, ...]) -> list[For]:
    return [a for a in ancestors if isinstance(a, For)]


def loops_below(ancestors: tuple[Stmt, ...], target: For) -> list[For]:
    """The loops in ``ancestors`` strictly inside ``target``."""
    start = next(i for i, a in enumerate(ancestors) if a is target)
    return [a for a in ancestors[start + 1 :] if isinstance(a, For)]


def loop_ranges(loops: list[For]) -> dict[Var, tuple[int, int]]:
    return _int_loop_ranges(loops)


# ---------------------------------------------------------------------------------------
# Symbolic intervals
# ---------------------------------------------------------------------------------------


def _vars(expr) -> set[Var]:
    return set(collect(expr, lambda n: isinstance(n, Var)))


def relax(expr: PrimExpr, ranges: dict[Var, Interval]) -> Interval | None:
    """``(lo, hi)`` of ``expr`` when each variable of ``ranges`` takes any value in its
    interval; None when that cannot be bounded (a data-dependent or non-linear index)."""
    if collect(expr, lambda n: isinstance(n, BufferLoad)):
        return None  # a data-dependent index
    if not _vars(expr) & ranges.keys():
        return expr, expr
    if isinstance(expr, Var):
        return ranges[expr]
    if isinstance(expr, (Add, Sub, Min, Max)):
        a, b = relax(expr.a, ranges), relax(expr.b, ranges)
        if a is None or b is None:
            return None
        if isinstance(expr, Add):
            return a[0] + b[0], a[1] + b[1]
        if isinstance(expr, Sub):
            return a[0] - b[1], a[1] - b[0]
        op = type(expr)
        return op(a[0], b[0]), op(a[1], b[1])
    if isinstance(expr, Mul):
        for side, other in ((expr.a, expr.b), (expr.b, expr.a)):
            factor = const_value(other)
            if isinstance(factor, int):
                inner = relax(side, ranges)
                if inner is None:
                    return None
                lo, hi = inner[0] * other, inner[1] * other
                return (lo, hi) if factor >= 0 else (hi, lo)
        return None
    divisor = const_value(expr.b) if isinstance(expr, (FloorDiv, FloorMod)) else None
    if isinstance(divisor, int) and divisor > 0:
        inner = relax(expr.a, ranges)
        if inner is None:
            return None
        if isinstance(expr, FloorDiv):
            return inner[0] // expr.b, inner[1] // expr.b
        return IntImm(0, expr.dtype), IntImm(divisor - 1, expr.dtype)
    return None


def _loop_intervals(loops: list[For]) -> dict[Var, Interval] | None:
    intervals: dict[Var, Interval] = {}
    for loop in loops:
        if _vars(loop.min) & intervals.keys() or _vars(loop.extent) & intervals.keys():
            return None  # bounds that depend on another relaxed loop
        intervals[loop.loop_var] = (loop.min, loop.min + loop.extent - 1)
    return intervals


def _access_intervals(
    realize: BlockRealize,
    ancestors: tuple[Stmt, ...],
    target: For,
    regions: tuple[BufferRegion, ...],
    wanted: set,
) -> dict[Buffer, list[list[Interval]] | None]:
    """Per wanted buffer, one list of per-dimension intervals for each access region of the
    block, with the loops between ``target`` and the block relaxed (None: some access cannot
    be bounded, or uses a variable that is not a loop around the block)."""
    bindings = {
        iv.var: v for iv, v in zip(realize.block.iter_vars, realize.iter_values, strict=True)
    }
    relaxed_loops = _loop_intervals(loops_below(ancestors, target))
    known = {loop.loop_var for loop in for_ancestors(ancestors)}
    found: dict[Buffer, list[list[Interval]] | None] = {}
    for region in regions:
        if region.buffer not in wanted:
            continue
        dims: list[Interval] | None = []
        for rng in region.region:
            extent = const_value(rng.extent)
            start = substitute(rng.min, bindings)
            interval = None
            if relaxed_loops is not None and not _vars(start) - known:
                interval = relax(start, relaxed_loops)
            if interval is None or not isinstance(extent, int):
                dims = None
                break
            dims.append((interval[0], interval[1] + (extent - 1)))
        accesses = found.setdefault(region.buffer, [])
        if dims is None or accesses is None:
            found[region.buffer] = None
        else:
            accesses.append(dims)
    return found


def read_intervals(realize, ancestors, target, wanted) -> dict[Buffer, list | None]:
    """Per buffer of ``wanted`` the block reads: one list of per-dimension intervals for each
    read region, relaxed over the loops between ``target`` and the block."""
    return _access_intervals(realize, ancestors, target, realize.block.reads, wanted)


def write_intervals(realize, ancestors, target, wanted) -> dict[Buffer, list | None]:
    """Like ``read_intervals``, for the block's writes."""
    return _access_intervals(realize, ancestors, target, realize.block.writes, wanted)


def _fold_bound(op, values: list[PrimExpr], ranges) -> PrimExpr:
    """min (op=Min) or max (op=Max) of ``values``, decided by proofs where possible."""
    result: list[PrimExpr] = []
    for value in values:
        value = simplify(value, ranges)
        keep = True
        for i, other in enumerate(result):
            if other == value:
                keep = False
                break
            better = LE(value, other) if op is Min else GE(value, other)
            worse = GE(value, other) if op is Min else LE(value, other)
            if prove(better, ranges):
                result[i] = value
                keep = False
                break
            if prove(worse, ranges):
                keep = False
                break
        if keep:
            result.append(value)
    bound = result[0]
    for other in result[1:]:
        bound = op(bound, other)
    return bound


def hull_dims(accesses: list[list[Interval]], ranges) -> list[Interval]:
    """The hull, per dimension, of several accesses' intervals."""
    hull = []
    for intervals in zip(*accesses, strict=True):
        lo = _fold_bound(Min, [i[0] for i in intervals], ranges)
        hi = _fold_bound(Max, [i[1] for i in intervals], ranges)
        hull.append((lo, hi))
    return hull


def _var_offset(expr: PrimExpr) -> tuple[Var, int] | None:
    """``expr`` as ``var + constant``, else None."""
    if isinstance(expr, Var):
        return expr, 0
    if isinstance(expr, (Add, Sub)) and isinstance(const_value(expr.b), int):
        inner = _var_offset(expr.a)
        if inner is None:
            return None
        sign = 1 if isinstance(expr, Add) else -1
        return inner[0], inner[1] + sign * const_value(expr.b)
    return None


def _domain(iv: IterVar) -> Interval:
    return iv.dom.min, iv.dom.min + iv.dom.extent - 1


def solve_iter_domains(
    block: Block,
    regions: tuple[BufferRegion, ...],
    intervals: dict[Buffer, list[Interval]],
    ranges,
    *,
    exact: bool = False,
) -> list[Interval] | None:
    """The interval of each iter var such that the block's accesses ``regions`` (in its iter
    vars) cover ``intervals`` (compute_at) or stay on them (``exact``, reverse).

    A spatial iter var that indexes a dimension alone (``v + c``, one element) takes that
    dimension's interval shifted by ``-c``; several such dimensions give the hull
    (compute_at: computing more is harmless) or must agree (``exact``: else None). Iter vars
    indexing nothing, and reduce vars, keep their whole domain.
    """
    spatial = {iv.var for iv in block.iter_vars if iv.kind == IterKind.SPATIAL}
    candidates: dict[Var, list[Interval]] = {}
    for region in regions:
        dims = intervals.get(region.buffer)
        if dims is None:
            continue
        for rng, (lo, hi) in zip(region.region, dims, strict=True):
            if const_value(rng.extent) != 1:
                continue
            found = _var_offset(simplify(rng.min, {}))
            if found is None or found[0] not in spatial:
                continue
            var, offset = found
            shift = IntImm(offset, var.dtype)
            candidates.setdefault(var, []).append(
                (simplify(lo - shift, ranges), simplify(hi - shift, ranges))
            )
    result = []
    for iv in block.iter_vars:
        found = candidates.get(iv.var)
        if not found:
            result.append(_domain(iv))
        elif exact:
            if any(f != found[0] for f in found[1:]):
                return None
            result.append(found[0])
        else:
            result.append(
                (
                    _fold_bound(Min, [f[0] for f in found], ranges),
                    _fold_bound(Max, [f[1] for f in found], ranges),
                )
            )
    return result


def uncovered_read(
    block: Block, intervals: list[Interval], produced: dict[Buffer, list[Interval]], ranges
) -> str | None:
    """A text naming a read of ``block`` (iter vars in ``intervals``) outside ``produced``,
    or None when every read of a produced buffer lies inside it."""
    var_ranges = {iv.var: interval for iv, interval in zip(block.iter_vars, intervals, strict=True)}
    for region in block.reads:
        dims = produced.get(region.buffer)
        if dims is None:
            continue
        for axis, (rng, (lo, hi)) in enumerate(zip(region.region, dims, strict=True)):
            relaxed = relax(rng.min, var_ranges)
            extent = const_value(rng.extent)
            if relaxed is None or not isinstance(extent, int):
                return f"{region.buffer.name} (axis {axis} cannot be bounded)"
            read_lo, read_hi = relaxed[0], relaxed[1] + (extent - 1)
            if not (prove(GE(read_lo, lo), ranges) and prove(LE(read_hi, hi), ranges)):
                return f"{region.buffer.name} (axis {axis})"
    return None


def reduce_loop_among(realize: BlockRealize, loops: list[For]) -> str | None:
    """The first of ``loops`` that binds a reduce iter var of the block, else None."""
    for loop in loops:
        for iv, value in zip(realize.block.iter_vars, realize.iter_values, strict=True):
            if iv.kind == IterKind.REDUCE and loop.loop_var in _vars(value):
                return loop.loop_var.name
    return None


# ---------------------------------------------------------------------------------------
# Predicates
# ---------------------------------------------------------------------------------------


def _conjuncts(expr: PrimExpr) -> list[PrimExpr]:
    if isinstance(expr, And):
        return _conjuncts(expr.a) + _conjuncts(expr.b)
    return [expr]


class _ReplaceExprs(IRMapper):
    """Replace whole sub-expressions equal to a key of ``mapping`` (largest first)."""

    def __init__(self, mapping):
        self.mapping = mapping

    def visit(self, node):
        if isinstance(node, PrimExpr) and node in self.mapping:
            return self.mapping[node]
        return super().visit(node)


def predicate_in_iter_vars(
    primitive: str, func: PrimFunc, realize: BlockRealize, allowed: set[Var]
) -> list[PrimExpr]:
    """The conjuncts of the block's ``T.where`` rewritten in its iter vars (bindings
    replaced by their iter vars), minus those its domains imply. A conjunct that still uses a
    variable outside the iter vars and ``allowed`` raises ``PredicateNotMovableError``."""
    const = const_value(realize.predicate)
    if const is not None and const != 0:
        return []
    block = realize.block
    mapping = {
        value: iv.var
        for iv, value in zip(block.iter_vars, realize.iter_values, strict=True)
        if const_value(value) is None
    }
    own = {iv.var for iv in block.iter_vars}
    domains = {iv.var: _int_domain(iv) for iv in block.iter_vars}
    domains = {v: d for v, d in domains.items() if d is not None}
    kept = []
    for conjunct in _conjuncts(realize.predicate):
        rewritten = _ReplaceExprs(mapping).visit(simplify(conjunct, {}))
        if _vars(rewritten) - own - allowed:
            raise PredicateNotMovableError(primitive, block.name, func, block)
        if not prove(rewritten, domains):
            kept.append(rewritten)
    return kept


def _int_domain(iv: IterVar) -> tuple[int, int] | None:
    lo, ext = const_value(iv.dom.min), const_value(iv.dom.extent)
    if isinstance(lo, int) and isinstance(ext, int):
        return lo, lo + ext - 1
    return None


# ---------------------------------------------------------------------------------------
# Building the moved block's nest
# ---------------------------------------------------------------------------------------


def build_nest(
    primitive: str,
    func: PrimFunc,
    realize: BlockRealize,
    intervals: list[Interval],
    outer_loops: list[For],
    *,
    preserve_unit_loops: bool,
) -> Stmt:
    """New loops ``ax0, ax1, ...`` covering ``intervals`` around the block, with bindings
    ``lo + axN`` and a predicate for whatever the loops may cover outside the domains."""
    block = realize.block
    allowed = {loop.loop_var for loop in outer_loops}
    kept_predicate = predicate_in_iter_vars(primitive, func, realize, allowed)
    ranges = loop_ranges(outer_loops)
    taken = used_names(func)
    new_loops: list[tuple[Var, int]] = []
    values: list[PrimExpr] = []
    guards: list[PrimExpr] = []
    for iv, (lo, hi) in zip(block.iter_vars, intervals, strict=True):
        lo, hi = simplify(lo, ranges), simplify(hi, ranges)
        dmin, dmax = _domain(iv)
        span = simplify(hi - lo + 1, ranges)
        extent = const_value(span)
        exact = isinstance(extent, int)
        if not exact:
            from workbench.ir.arith import int_bounds

            upper = int_bounds(span, ranges)[1]
            dom_extent = const_value(iv.dom.extent)
            extent = min(x for x in (upper, dom_extent) if isinstance(x, int))
        extent = max(int(extent), 1)
        dtype = iv.var.dtype
        if extent == 1 and not preserve_unit_loops:
            value = lo
        else:
            var = Var(fresh_name(f"ax{len(new_loops)}", taken), dtype)
            new_loops.append((var, extent))
            value = lo + var
        values.append(value)
        if not exact:
            guards.append(LE(value, hi))
        guards.append(GE(value, dmin))
        guards.append(LT(value, simplify(dmax + 1, {})))

    inner_ranges = dict(ranges)
    for var, extent in new_loops:
        inner_ranges[var] = (0, extent - 1)
    values = [simplify(v, inner_ranges) for v in values]
    mapping = {iv.var: v for iv, v in zip(block.iter_vars, values, strict=True)}
    predicate: PrimExpr = TRUE
    for condition in [substitute(p, mapping) for p in kept_predicate] + guards:
        condition = simplify(substitute(condition, mapping), inner_ranges)
        if not prove(condition, inner_ranges):
            predicate = conjoin(predicate, condition)
    stmt: Stmt = realize.replace(iter_values=tuple(values), predicate=predicate)
    for var, extent in reversed(new_loops):
        stmt = For(var, IntImm(0, var.dtype), IntImm(extent, var.dtype), ForKind.SERIAL, stmt)
    return stmt


# ---------------------------------------------------------------------------------------
# Removing and inserting
# ---------------------------------------------------------------------------------------

_EMPTY = Evaluate(IntImm(0))


def _without(stmt: Stmt, target: BlockRealize) -> Stmt | None:
    """``stmt`` without ``target`` (by identity) and the loops left empty; None if empty."""
    if stmt is target:
        return None
    if isinstance(stmt, For):
        body = _without(stmt.body, target)
        if body is None:
            return None
        return stmt if body is stmt.body else stmt.replace(body=body)
    if isinstance(stmt, SeqStmt):
        items = [_without(s, target) for s in stmt.stmts]
        kept = [s for s in items if s is not None]
        if not kept:
            return None
        if len(kept) == len(stmt.stmts) and all(
            a is b for a, b in zip(items, stmt.stmts, strict=True)
        ):
            return stmt
        return seq(*kept)
    if isinstance(stmt, IfThenElse):
        then_case = _without(stmt.then_case, target)
        else_case = None if stmt.else_case is None else _without(stmt.else_case, target)
        if then_case is None and else_case is None:
            return None
        if then_case is stmt.then_case and else_case is stmt.else_case:
            return stmt
        return stmt.replace(then_case=then_case or _EMPTY, else_case=else_case)
    if isinstance(stmt, BlockRealize):
        block = stmt.block
        body = _without(block.body, target)
        if body is block.body:
            return stmt
        return stmt.replace(block=block.replace(body=body or _EMPTY))
    return stmt


def remove_realize(func: PrimFunc, target: BlockRealize) -> PrimFunc:
    """``func`` without the block realize ``target`` (found by identity) and the loops that
    held nothing else."""
    return func.replace(body=_without(func.body, target))


def insert_into_loop(func: PrimFunc, loop: str, index: int, stmt: Stmt) -> PrimFunc:
    """``func`` with ``stmt`` inserted at position ``index`` of loop ``loop``'s body."""

    def rewrite(node: For) -> For:
        stmts = list(node.body.stmts) if isinstance(node.body, SeqStmt) else [node.body]
        stmts.insert(index, stmt)
        return node.replace(body=seq(*stmts))

    return replace_loop(func, loop, rewrite)


class _ReplaceRealize(IRMapper):
    def __init__(self, name: str, new: BlockRealize):
        self.name, self.new = name, new

    def visit_BlockRealize(self, node: BlockRealize):
        if node.block.name == self.name:
            return self.new
        return self.generic_visit(node)

    def visit_BufferStore(self, node):
        return node


def replace_realize(func: PrimFunc, name: str, new: BlockRealize) -> PrimFunc:
    return func.replace(body=_ReplaceRealize(name, new).visit(func.body))


def remove_allocation(func: PrimFunc, buffer: Buffer) -> PrimFunc:
    """``func`` with ``buffer`` dropped from the ``alloc_buffers`` of the block holding it."""
    owner = next(
        (s for s, _ in walk(func.body) if isinstance(s, Block) and buffer in s.alloc_buffers),
        None,
    )
    if owner is None:
        return func
    kept = tuple(b for b in owner.alloc_buffers if b != buffer)
    return replace_block(func, owner.name, lambda b: b.replace(alloc_buffers=kept))


# ---------------------------------------------------------------------------------------
# Inlining
# ---------------------------------------------------------------------------------------


def expr_text(expr: PrimExpr) -> str:
    from workbench.script.printer_expr import expr_text as text

    return text(expr)


def _distinct_iter_vars(block: Block, indices) -> list[Var] | None:
    """The spatial iter vars ``indices`` are, each once and all of them, else None."""
    spatial = [iv.var for iv in block.iter_vars if iv.kind == IterKind.SPATIAL]
    if not all(isinstance(i, Var) for i in indices):
        return None
    if len(set(indices)) != len(indices) or set(indices) != set(spatial):
        return None
    return list(indices)


def store_index_vars(block: Block, store: BufferStore) -> list[Var] | None:
    return _distinct_iter_vars(block, store.indices)


def index_iter_vars(block: Block, indices) -> list[Var] | None:
    return _distinct_iter_vars(block, indices)


def load_indices(expr: PrimExpr, buffer: Buffer) -> list[tuple[PrimExpr, ...]]:
    """The distinct index tuples at which ``expr`` loads ``buffer``."""
    loads = collect(expr, lambda n: isinstance(n, BufferLoad) and n.buffer == buffer)
    return list(dict.fromkeys(load.indices for load in loads))


class _SimplifyIndices(IRMapper):
    def visit_BufferLoad(self, node: BufferLoad):
        node = self.generic_visit(node)
        indices = tuple(simplify(i, {}) for i in node.indices)
        return node if indices == node.indices else node.replace(indices=indices)


class _InlineLoads(IRMapper):
    """Replace loads of ``buffer`` by ``value`` with ``index_vars`` := the load's indices, and
    refresh the reads/writes of every block whose body changed."""

    def __init__(self, buffer: Buffer, index_vars: list[Var], value: PrimExpr):
        self.buffer, self.index_vars, self.value = buffer, index_vars, value

    def visit_BufferLoad(self, node: BufferLoad):
        node = self.generic_visit(node)
        if node.buffer != self.buffer:
            return node
        mapping = dict(zip(self.index_vars, node.indices, strict=True))
        return _SimplifyIndices().visit(substitute(self.value, mapping))

    def visit_Block(self, node: Block):
        new = self.generic_visit(node)
        if new is node or self.buffer not in buffers(node.reads):
            return new  # the root block (no regions) keeps its own
        reads, writes = block_access_regions(new.body, new.init)
        return new.replace(reads=reads, writes=writes)


def inline_loads(func: PrimFunc, buffer: Buffer, index_vars: list[Var], value: PrimExpr):
    body = _InlineLoads(buffer, index_vars, value).visit(func.body)
    return func if body is func.body else func.replace(body=body)


def producer_exceeds_consumer(
    producer: Block, p_store: BufferStore, consumer: Block, read_vars: list[Var]
) -> str | None:
    """Why the producer writes points the consumer never reads (then folding the consumer
    in would compute extra outputs), or None."""
    from workbench.ir.arith import int_bounds

    ranges = {iv.var: d for iv in producer.iter_vars if (d := _int_domain(iv)) is not None}
    domains = {iv.var: iv for iv in consumer.iter_vars}
    for axis, (index, var) in enumerate(zip(p_store.indices, read_vars, strict=True)):
        lo, hi = int_bounds(index, ranges)
        dom = _int_domain(domains[var])
        if lo is None or hi is None or dom is None or lo < dom[0] or hi > dom[1]:
            return (
                f"{producer.name!r} writes {p_store.buffer.name} axis {axis} over "
                f"[{lo}, {hi}], but {consumer.name!r} reads it only for {var.name} in "
                f"{list(dom) if dom else 'an unknown range'}"
            )
    return None


class _ReplaceLoads(IRMapper):
    def __init__(self, buffer: Buffer, value: PrimExpr):
        self.buffer, self.value = buffer, value

    def visit_BufferLoad(self, node: BufferLoad):
        if node.buffer == self.buffer:
            return self.value
        return self.generic_visit(node)


def fold_consumer(
    primitive: str,
    func: PrimFunc,
    p_realize: BlockRealize,
    p_ancestors: tuple[Stmt, ...],
    c_realize: BlockRealize,
    read_vars: list[Var],
) -> BlockRealize:
    """The producer's realize with the consumer folded in: it stores the consumer's value
    (the producer's value in place of the load) at the consumer's indices, with the
    consumer's iter vars replaced by the producer's store indices."""
    producer, consumer = p_realize.block, c_realize.block
    p_store, c_store = producer.body, consumer.body
    mapping = dict(zip(read_vars, p_store.indices, strict=True))
    allowed = {loop.loop_var for loop in for_ancestors(p_ancestors)}
    c_predicate = predicate_in_iter_vars(primitive, func, c_realize, allowed)

    value = _ReplaceLoads(p_store.buffer, p_store.value).visit(substitute(c_store.value, mapping))
    indices = tuple(simplify(substitute(i, mapping), {}) for i in c_store.indices)
    store = BufferStore(c_store.buffer, _SimplifyIndices().visit(value), indices)
    reads, writes = block_access_regions(store)
    new_block = producer.replace(body=store, reads=reads, writes=writes)
    predicate = p_realize.predicate
    for condition in c_predicate:
        predicate = conjoin(predicate, simplify(substitute(condition, mapping), {}))
    return p_realize.replace(block=new_block, predicate=predicate)


__all__ = [
    "ScopeInfo",
    "check_movable",
    "relax",
    "solve_iter_domains",
    "build_nest",
    "remove_realize",
    "insert_into_loop",
    "inline_loads",
    "fold_consumer",
]
