"""Building and placing a moved block's loop nest (compute location primitives): the
predicate rewritten in the block's iter vars, new loops ``ax0, ax1, ...`` over the inferred
intervals with a ``T.where`` where they stick out, removing a block and the loops left
empty, inserting a statement into a loop body, dropping an allocation.
"""

from __future__ import annotations

from workbench.ir import (
    GE,
    LE,
    LT,
    TRUE,
    And,
    Block,
    BlockRealize,
    Buffer,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    IntImm,
    IRMapper,
    PrimExpr,
    PrimFunc,
    SeqStmt,
    Stmt,
    Var,
    const_value,
    expr_vars,
    seq,
    substitute,
)
from workbench.ir.region_cover import span_upper
from workbench.ir.region_infer import Interval, domain, int_domain, loop_ranges
from workbench.schedule.errors_compute_location import PredicateNotMovableError
from workbench.schedule.tree import (
    conjoin,
    fresh_name,
    prove,
    replace_block,
    replace_loop,
    replace_realize,
    simplify,
    used_names,
    walk,
)

__all__ = [
    "predicate_in_iter_vars",
    "build_nest",
    "remove_realize",
    "insert_into_loop",
    "replace_realize",
    "remove_allocation",
]



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
    domains = {iv.var: int_domain(iv) for iv in block.iter_vars}
    domains = {v: d for v, d in domains.items() if d is not None}
    kept = []
    for conjunct in _conjuncts(realize.predicate):
        rewritten = _ReplaceExprs(mapping).visit(simplify(conjunct, {}))
        if expr_vars(rewritten) - own - allowed:
            raise PredicateNotMovableError(primitive, block.name, func, block)
        if not prove(rewritten, domains):
            kept.append(rewritten)
    return kept


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
        dmin, dmax = domain(iv)
        span = simplify(hi - lo + 1, ranges)
        extent = const_value(span)
        exact = isinstance(extent, int)
        if not exact:
            upper = span_upper(lo, hi, ranges)
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
