"""IR rewrites of the inlining primitives (``compute_location_inline.py``): replacing the
loads of an inlined buffer by the producer's expression (``compute_inline``) and folding a
consumer into its producer's store (``reverse_compute_inline``).
"""

from __future__ import annotations

from workbench.ir import (
    And,
    Block,
    BlockRealize,
    Buffer,
    BufferLoad,
    BufferStore,
    IRMapper,
    IterKind,
    PrimExpr,
    PrimFunc,
    Stmt,
    Var,
    collect,
    substitute,
)
from workbench.ir.region_infer import for_ancestors, int_domain, loop_ranges
from workbench.ir.regions import block_access_regions
from workbench.schedule.compute_location_nest import predicate_in_iter_vars
from workbench.schedule.compute_location_scope import buffers
from workbench.schedule.tree import conjoin, prove, simplify

__all__ = [
    "expr_text",
    "store_index_vars",
    "index_iter_vars",
    "load_indices",
    "inline_loads",
    "fold_consumer",
    "replace_loads_at",
]


def expr_text(expr: PrimExpr) -> str:
    from workbench.ir.expr_text import expr_text as text

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
    def __init__(self, ranges=None):
        self.ranges = ranges or {}

    def visit_BufferLoad(self, node: BufferLoad):
        node = self.generic_visit(node)
        indices = tuple(simplify(i, self.ranges) for i in node.indices)
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
        reads, writes = block_access_regions(new.body, new.init, new.alloc_buffers)
        return new.replace(reads=reads, writes=writes)


def inline_loads(func: PrimFunc, buffer: Buffer, index_vars: list[Var], value: PrimExpr):
    body = _InlineLoads(buffer, index_vars, value).visit(func.body)
    return func if body is func.body else func.replace(body=body)


class _ReplaceLoadsAt(IRMapper):
    def __init__(self, buffer: Buffer, indices: tuple, value: PrimExpr):
        self.buffer, self.indices, self.value = buffer, indices, value

    def visit_BufferLoad(self, node: BufferLoad):
        if node.buffer == self.buffer and node.indices == self.indices:
            return self.value
        return self.generic_visit(node)


def replace_loads_at(expr: PrimExpr, buffer: Buffer, indices: tuple, value: PrimExpr):
    """``expr`` with every load ``buffer[indices]`` replaced by ``value``."""
    return _ReplaceLoadsAt(buffer, indices, value).visit(expr)


class _ReplaceLoads(IRMapper):
    def __init__(self, buffer: Buffer, value: PrimExpr):
        self.buffer, self.value = buffer, value

    def visit_BufferLoad(self, node: BufferLoad):
        if node.buffer == self.buffer:
            return self.value
        return self.generic_visit(node)


def _conjuncts(expr: PrimExpr) -> list[PrimExpr]:
    if isinstance(expr, And):
        return _conjuncts(expr.a) + _conjuncts(expr.b)
    return [expr]


def fold_consumer(
    primitive: str,
    func: PrimFunc,
    p_realize: BlockRealize,
    p_ancestors: tuple[Stmt, ...],
    c_realize: BlockRealize,
    mapping: dict[Var, PrimExpr],
    guards: list[PrimExpr],
) -> BlockRealize:
    """The producer's realize with the consumer folded in: it stores the consumer's value
    (the producer's value in place of the load) at the consumer's indices, with the
    consumer's iter vars replaced by ``mapping`` (expressions of the producer's iter vars).

    ``guards`` (in the consumer's iter vars) and the consumer's own ``T.where`` become the
    producer's predicate, rewritten through ``mapping`` and the producer's bindings, less
    what the producer's domain proves (TVM's guard for an overcomputing producer).
    """
    producer, consumer = p_realize.block, c_realize.block
    p_store, c_store = producer.body, consumer.body
    domains = {iv.var: d for iv in producer.iter_vars if (d := int_domain(iv)) is not None}
    allowed = {loop.loop_var for loop in for_ancestors(p_ancestors)}
    c_predicate = predicate_in_iter_vars(primitive, func, c_realize, allowed)

    def in_producer(expr: PrimExpr) -> PrimExpr:
        return simplify(substitute(expr, mapping), domains)

    value = _ReplaceLoads(p_store.buffer, p_store.value).visit(substitute(c_store.value, mapping))
    value = _SimplifyIndices(domains).visit(value)
    indices = tuple(in_producer(i) for i in c_store.indices)
    store = BufferStore(c_store.buffer, value, indices)
    reads, writes = block_access_regions(store)
    new_block = producer.replace(body=store, reads=reads, writes=writes)

    bindings = dict(zip((iv.var for iv in producer.iter_vars), p_realize.iter_values, strict=True))
    outer = loop_ranges(for_ancestors(p_ancestors))
    predicate = p_realize.predicate
    present = set(_conjuncts(predicate))
    for condition in c_predicate + guards:
        condition = in_producer(condition)
        if prove(condition, domains):
            continue
        condition = simplify(substitute(condition, bindings), outer)
        if condition not in present:
            present.add(condition)
            predicate = conjoin(predicate, condition)
    return p_realize.replace(block=new_block, predicate=predicate)
