"""Where ``cache_read``/``cache_write`` put their copy block, and what it copies.

Everything happens in the *scope* of the cached block (its nearest enclosing block, the
root for a top-level block; TVM's ``GetScopeRoot``): the cache is allocated there, the copy
goes into it, and only blocks under it are redirected or constrain the copy. A block
outside the scope reads or writes the original buffer as before (TVM's
``test_cache_read_under_scope``: a copy filled per tile inside a scope block is never read
by a block outside it).

Inside the scope, the copy goes into the scope's body, right before (cache_read) or after
(cache_write) the loop nest holding the cached block. When another block that must stay
ordered with the copy shares loops with that block (the producer of a cached read, a
consumer or another writer of a cached write), the copy goes into the innermost statement
sequence holding both, right next to the cached block's part of it (TVM's
``CacheLocDetector``). Which blocks read or write the buffer is the shared ``BlockScope``'s
answer (``buffer_users``; ``workbench.schedule.scope``), never a walk of this module's own.

The copy covers what the cached block touches while that statement runs once: its
declared region with the loops inside the statement relaxed over their ranges and the
loops outside kept symbolic (TVM's ``RelaxBufferRegion``). That is the whole buffer for a
matmul operand cached at the top level, and one row per iteration when the copy sits
inside a loop. For affine indices the region is exact; otherwise it is a sound
over-approximation (guarded by ``T.where`` where it could leave the buffer), so a
cache_write copy-out may then also copy elements the block did not write.
"""

from __future__ import annotations

import dataclasses

from workbench.ir import (
    GE,
    LE,
    LT,
    TRUE,
    And,
    Block,
    BlockRealize,
    Buffer,
    BufferLoad,
    BufferRegion,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IntImm,
    IRMapper,
    IterKind,
    IterVar,
    PrimExpr,
    PrimFunc,
    Range,
    SeqStmt,
    Stmt,
    Var,
    collect,
    const_value,
    seq,
    substitute,
)
from workbench.ir.arith import int_bounds, simplify
from workbench.ir.walk import walk
from workbench.schedule.scope import block_scope, scope_of
from workbench.schedule.tree import (
    block_names,
    conjoin,
    find_block,
    fresh_name,
    prove,
    replace_block,
    used_names,
)


@dataclasses.dataclass(frozen=True)
class BufferUser:
    """A block that must stay ordered with a copy of ``buffer``, as the ``BlockScope`` of
    its scope sees it (a block nested in a sibling is represented by the sibling, whose
    declared regions cover it)."""

    name: str
    reads: bool
    writes: bool


def buffer_users(func: PrimFunc, buffer: Buffer, block: str) -> list[BufferUser]:
    """The blocks reading or writing ``buffer`` other than ``block``: the other children of
    ``block``'s scope (``workbench.schedule.scope``, the one dependence analysis: its
    ``readers`` / ``writers``), in program order. Blocks outside the scope are not users:
    the cache lives in the scope (see the module docstring)."""
    scope = scope_of(func, block, "cache")
    readers, writers = scope.readers(buffer.name), scope.writers(buffer.name)
    return [
        BufferUser(name, name in readers, name in writers)
        for name in scope.blocks
        if name != block and (name in readers or name in writers)
    ]


def scope_block(ancestors: tuple[Stmt, ...]) -> Block:
    """The scope of a block with these ``ancestors``: the nearest enclosing block."""
    return next(a for a in reversed(ancestors) if isinstance(a, Block))


def blocks_touching(
    func: PrimFunc, buffer: Buffer, block: Block, reads: bool
) -> list[tuple[Block, tuple[Stmt, ...]]]:
    """Blocks that write ``buffer`` (or read it too, with ``reads``) and must stay ordered with
    the copy (``buffer_users``), with their ancestors."""
    return [
        find_block(func, user.name, "cache")
        for user in buffer_users(func, buffer, block.name)
        if user.writes or (reads and user.reads)
    ]


def _chain(ancestors: tuple[Stmt, ...], node: Stmt) -> list[Stmt]:
    return [a for a in ancestors if not isinstance(a, SeqStmt)] + [node]


def _scope_depth(chain: list[Stmt]) -> int:
    """Index in ``chain`` (ending with the cached block) of the statement of the scope's
    body that holds the block: right after the scope block (``[root realize, root block,
    <top-level statement>, ...]`` gives 2)."""
    return max(n for n, stmt in enumerate(chain[:-1]) if isinstance(stmt, Block)) + 1


def _anchor_depth(chain: list[Stmt], others: list[tuple[Block, tuple[Stmt, ...]]]) -> int:
    """Index in ``chain`` of the statement the copy goes right before or after: the
    statement of the scope's body holding the block, or, when ``others`` share loops with
    it, its part of the innermost sequence holding them all (see the module docstring)."""
    depth = _scope_depth(chain)
    for other, other_anc in others:
        other_chain = _chain(other_anc, other)
        n = 0
        while n < min(len(chain), len(other_chain)) and chain[n] is other_chain[n]:
            n += 1
        depth = max(depth, n)
    return depth


class _Splice(IRMapper):
    """Replace ``old`` (a block, by identity) with ``new``, put ``copy`` next to ``anchor``
    and add ``alloc`` (if any) to the allocations of block ``scope``."""

    def __init__(self, old: Block, new: Block, anchor: Stmt, copy: Stmt, after: bool,
                 scope: Block | None = None, alloc: Buffer | None = None):
        self.old, self.new, self.anchor, self.copy, self.after = old, new, anchor, copy, after
        self.scope, self.alloc = scope, alloc

    def visit(self, node):
        if node is self.old:
            return self.new
        if not isinstance(node, Stmt):
            return node  # expressions, regions, buffers: nothing to do
        result = super().visit(node)
        if node is self.anchor:
            return seq(result, self.copy) if self.after else seq(self.copy, result)
        if node is self.scope and self.alloc is not None:
            return result.replace(alloc_buffers=result.alloc_buffers + (self.alloc,))
        return result

    def visit_SeqStmt(self, node: SeqStmt):
        stmts = [self.visit(s) for s in node.stmts]
        if all(a is b for a, b in zip(stmts, node.stmts, strict=True)):
            return node
        return seq(*stmts)


def _ranges_of(stmt: Stmt, ranges: dict[Var, tuple[int, int]]) -> None:
    """Add the constant ranges of a loop's variable or a block's iteration variables."""
    if isinstance(stmt, For):
        items = [(stmt.loop_var, stmt.min, stmt.extent)]
    elif isinstance(stmt, Block):
        items = [(iv.var, iv.dom.min, iv.dom.extent) for iv in stmt.iter_vars]
    else:
        return
    for var, low, extent in items:
        lo, ext = const_value(low), const_value(extent)
        if isinstance(lo, int) and isinstance(ext, int) and ext > 0:
            ranges[var] = (lo, lo + ext - 1)


def copy_region(chain: list[Stmt], depth: int, region: BufferRegion) -> list[tuple[PrimExpr, int]]:
    """``(start, extent)`` per dimension of what ``region`` (of the block ``chain[-1]``)
    touches while the statement ``chain[depth]`` runs once.

    The region is rewritten in terms of loop variables (substituting the bindings of the
    blocks below ``depth``); loops below ``depth`` are relaxed over their ranges, loops
    above stay symbolic (TVM's ``RelaxBufferRegion``). For each dimension with index ``e``,
    ``start`` is ``e`` with the relaxed loops at their minimum plus the lowest constant
    offset ``e`` reaches from there, which is exact for affine indices and a sound
    over-approximation otherwise.
    """
    ranges: dict[Var, tuple[int, int]] = {}
    for stmt in chain:
        _ranges_of(stmt, ranges)
    inner_loops = [s for s in chain[depth:] if isinstance(s, For)]
    at_min = {loop.loop_var: loop.min for loop in inner_loops}
    realizes = [s for s in chain[depth:] if isinstance(s, BlockRealize)]

    result = []
    for rng, size in zip(region.region, region.buffer.shape, strict=True):
        first = rng.min
        last = rng.min + rng.extent - IntImm(1)
        for realize in reversed(realizes):
            binding = {
                iv.var: value
                for iv, value in zip(realize.block.iter_vars, realize.iter_values, strict=True)
            }
            first, last = substitute(first, binding), substitute(last, binding)
        base = simplify(substitute(first, at_min), ranges)
        lo = int_bounds(simplify(first - base, ranges), ranges)[0]
        hi = int_bounds(simplify(last - base, ranges), ranges)[1]
        if lo is None or hi is None or hi - lo + 1 > size or hi < lo:
            result.append((IntImm(0), size))  # unknown: the whole dimension
            continue
        result.append((simplify(base + IntImm(lo), ranges), hi - lo + 1))
    return result


def _copy_nest(
    src: Buffer,
    dst: Buffer,
    extents: list[tuple[PrimExpr, int]],
    name: str,
    taken: set[str],
    outer: dict[Var, tuple[int, int]],
) -> Stmt:
    """Loops ``ax0, ax1...`` over ``extents`` around a block ``name`` doing
    ``dst[v] = src[v]``, with ``v = start + ax`` (guarded where it may leave the buffer)."""
    loop_vars = [Var(fresh_name(f"ax{d}", taken)) for d in range(src.ndim)]
    iter_vars = [Var(fresh_name(f"v{d}", taken)) for d in range(src.ndim)]
    point = tuple(Range(v, IntImm(1)) for v in iter_vars)
    indices = tuple(iter_vars)
    block = Block(
        name,
        tuple(
            IterVar(v, Range(IntImm(0), IntImm(size)), IterKind.SPATIAL)
            for v, size in zip(iter_vars, src.shape, strict=True)
        ),
        (BufferRegion(src, point),),
        (BufferRegion(dst, point),),
        BufferStore(dst, BufferLoad(src, indices), indices),
    )
    ranges = dict(outer)
    for var, (_, extent) in zip(loop_vars, extents, strict=True):
        ranges[var] = (0, extent - 1)
    bindings = []
    predicate: PrimExpr = TRUE
    for var, (start, _), size in zip(loop_vars, extents, src.shape, strict=True):
        value = simplify(start + var, ranges)
        bindings.append(value)
        for cond in (GE(value, IntImm(0)), LT(value, IntImm(size))):
            if not prove(cond, ranges):
                predicate = conjoin(predicate, cond)
    stmt: Stmt = BlockRealize(tuple(bindings), predicate, block)
    for var, (_, extent) in reversed(list(zip(loop_vars, extents, strict=True))):
        stmt = For(var, IntImm(0), IntImm(extent), ForKind.SERIAL, stmt)
    return stmt


def place_copy(
    func: PrimFunc,
    target: Block,
    ancestors: tuple[Stmt, ...],
    others: list[tuple[Block, tuple[Stmt, ...]]],
    region: BufferRegion,
    src: Buffer,
    dst: Buffer,
    name: str,
    taken: set[str],
    also: list[tuple[Block, tuple[Stmt, ...], BufferRegion]] = (),
) -> tuple[Stmt, Stmt]:
    """``(anchor, copy nest)``: where the copy goes and the copy itself.

    ``also`` lists other blocks (after ``target``) that read the copy too, with their
    regions: the copy then covers what they read as well (see ``_merge_reader``).
    """
    chain = _chain(ancestors, target)
    depth = _anchor_depth(chain, others)
    outer: dict[Var, tuple[int, int]] = {}
    for stmt in chain[:depth]:
        _ranges_of(stmt, outer)
    extents = copy_region(chain, depth, region)
    for block, anc, other_region in also:
        extents = _merge_reader(chain, depth, extents, _chain(anc, block), other_region, outer)
    return chain[depth], _copy_nest(src, dst, extents, name, taken, outer)


def _merge_reader(
    chain: list[Stmt],
    depth: int,
    extents: list[tuple[PrimExpr, int]],
    other: list[Stmt],
    region: BufferRegion,
    outer: dict[Var, tuple[int, int]],
) -> list[tuple[PrimExpr, int]]:
    """``extents`` widened so that the copy also serves another reader (TVM copies for every
    consumer of a cache_read). Per dimension: a reader inside the copy's statement needs its
    own region there; a reader after it needs what all iterations of the enclosing loops
    (inside the scope) copied together. Whatever cannot be proven covered gets the whole
    dimension, which is always right (the copy runs after every writer in each iteration)."""
    inside = len(other) > depth and all(
        a is b for a, b in zip(chain[: depth + 1], other, strict=False)
    )
    theirs = copy_region(other, depth if inside else _scope_depth(other), region)
    merged = []
    for (start, extent), (o_start, o_extent), size in zip(
        extents, theirs, region.buffer.shape, strict=True
    ):
        if inside and o_start == start and o_extent == extent:
            merged.append((start, extent))
        elif not inside and _union_covers(start, extent, o_start, o_extent, outer):
            merged.append((start, extent))
        else:
            merged.append((IntImm(0), size))
    return merged


def _union_covers(
    start: PrimExpr, extent: int, lo: PrimExpr, length: int, outer: dict[Var, tuple[int, int]]
) -> bool:
    """Whether ``[start, start + extent)``, over all values of the loop variables in
    ``outer``, covers ``[lo, lo + length)`` (a constant range). Proven only for a start
    constant or stepping by at most ``extent`` along one loop; otherwise False."""
    low = const_value(lo)
    if not isinstance(low, int):
        return False
    used = [v for v in outer if v in collect(start, lambda n: isinstance(n, Var))]
    if not used:
        first = const_value(start)
        return isinstance(first, int) and first <= low and first + extent >= low + length
    if len(used) > 1:
        return False
    var = used[0]
    step = const_value(simplify(substitute(start, {var: var + IntImm(1)}) - start, outer))
    if not isinstance(step, int) or not 0 < step <= extent:
        return False
    first = const_value(simplify(substitute(start, {var: IntImm(outer[var][0])})))
    last = const_value(simplify(substitute(start, {var: IntImm(outer[var][1])})))
    if not isinstance(first, int) or not isinstance(last, int):
        return False
    return first <= low and last + extent >= low + length


def add_cache(
    func: PrimFunc,
    old: Block,
    new: Block,
    anchor: Stmt,
    copy: Stmt,
    cache: Buffer,
    scope: Block,
    *,
    after: bool,
    allocate: bool = True,
) -> PrimFunc:
    """``func`` with block ``old`` replaced by ``new``, ``copy`` spliced before (or
    ``after``) ``anchor`` and, with ``allocate``, ``cache`` allocated in ``scope`` (the
    block around ``old``: the root for a top-level block)."""
    alloc = cache if allocate else None
    body = _Splice(old, new, anchor, copy, after, scope, alloc).visit(func.body)
    return func.replace(body=body)


def redirect_consumers(
    func: PrimFunc, consumers: list[str], old: Buffer, cache: Buffer
) -> PrimFunc:
    """The blocks named ``consumers`` read ``cache`` instead of ``old``."""
    mapping = {old: cache}

    def rewrite(block: Block) -> Block:
        return block.replace(
            body=replace_buffers(block.body, mapping),
            init=None if block.init is None else replace_buffers(block.init, mapping),
            reads=replace_buffers(block.reads, mapping),
        )

    for name in consumers:
        func = replace_block(func, name, rewrite)
    return func


class _ReplaceBuffers(IRMapper):
    def __init__(self, mapping: dict[Buffer, Buffer]):
        self.mapping = mapping

    def visit_Buffer(self, node: Buffer):
        return self.mapping.get(node, node)


def replace_buffers(node, mapping: dict[Buffer, Buffer]):
    """``node`` with every occurrence of each buffer in ``mapping`` replaced (loads, stores,
    regions, allocations)."""
    mapper = _ReplaceBuffers(mapping)
    if isinstance(node, tuple):
        return mapper._map_value(node)
    return mapper.visit(node)


def reads_unwritten(func: PrimFunc, target: Block, buffer: Buffer) -> bool:
    """Whether ``target`` reads elements of ``buffer`` that it did not write first (an update
    without init: a cache_write cache must then be filled from the buffer).

    A block with blocks inside reads only what they read; a read that an earlier block
    inside wrote, over at least the same elements in one run of ``target`` (the regions of
    ``copy_region``), reads the block's own values (TVM's ``access_under_scope``: the
    ``scope`` block reads ``A`` only where its block ``A`` wrote it).
    """
    if target.init is not None or not any(r.buffer == buffer for r in target.reads):
        return False
    names = block_scope(func, target.name).blocks
    if not names:
        return True
    children = [find_block(func, name, "cache") for name in names]
    direct = collect(
        _without_blocks(target.body), lambda n: isinstance(n, BufferLoad) and n.buffer == buffer
    )
    if direct:
        return True
    written: list[list[tuple[PrimExpr, int]]] = []
    for child, anc in children:
        chain = _chain(anc, child)
        depth = next(n for n, stmt in enumerate(chain) if stmt is target) + 1
        for region in child.reads:
            if region.buffer == buffer:
                needed = copy_region(chain, depth, region)
                if not any(_covers(w, needed) for w in written):
                    return True
        for region in child.writes:
            if region.buffer == buffer:
                written.append(copy_region(chain, depth, region))
    return False


def writes_partially(target: Block, realize: BlockRealize, buffer: Buffer) -> bool:
    """Whether ``target`` (realized by ``realize``) may leave elements of its declared write
    region of ``buffer`` unwritten: a ``T.where`` of it, or of a block inside it that writes
    ``buffer``, that skips iterations of the block's own domain (``T.where(vi < 8)`` over
    ``vi`` in ``[0, 12)``). The guard a non-dividing split adds (``i_0 * 32 + i_1 < 100``
    for ``vi = i_0 * 32 + i_1`` in ``[0, 100)``) only skips iterations outside the domain:
    it leaves nothing unwritten. A cache_write copy-back of such a block must not copy
    values it never wrote, so its cache is filled from the buffer first."""
    for node, _ in walk(realize):
        if not isinstance(node, BlockRealize) or node.block is not target and not any(
            w.buffer == buffer for w in node.block.writes
        ):
            continue
        for cond in _conjuncts(node.predicate):
            if not _domain_guard(cond, node) and not _bounds_guard(cond, node.block, buffer):
                return True
    return False


def _conjuncts(cond: PrimExpr) -> list[PrimExpr]:
    if isinstance(cond, And):
        return _conjuncts(cond.a) + _conjuncts(cond.b)
    return [] if const_value(cond) is not None else [cond]


def _bounds_guard(cond: PrimExpr, block: Block, buffer: Buffer) -> bool:
    """Whether ``cond`` only keeps a written index of ``buffer`` inside the buffer
    (``vi < 10`` for a write ``C[vi, vj]`` of a ``(10, 20)`` buffer): what it skips was
    never part of the buffer."""
    cond = simplify(cond)
    for region in block.writes:
        if region.buffer != buffer:
            continue
        for rng, size in zip(region.region, buffer.shape, strict=True):
            if const_value(rng.extent) != 1:
                continue
            bounds = (LT(rng.min, IntImm(size)), GE(rng.min, IntImm(0)))
            if any(simplify(b) == cond for b in bounds):
                return True
    return False


def _domain_guard(cond: PrimExpr, realize: BlockRealize) -> bool:
    """Whether ``cond`` only says that a binding of ``realize`` lies in its iteration
    variable's domain (``value < min + extent`` or ``value >= min``)."""
    cond = simplify(cond)
    for iv, value in zip(realize.block.iter_vars, realize.iter_values, strict=True):
        low, high = iv.dom.min, iv.dom.min + iv.dom.extent
        for bound in (LT(value, high), GE(value, low), LE(value, high - IntImm(1))):
            if simplify(bound) == cond:
                return True
    return False


def _covers(have: list[tuple[PrimExpr, int]], need: list[tuple[PrimExpr, int]]) -> bool:
    """Whether the box ``have`` contains ``need`` (per dimension, a constant offset)."""
    for (start, extent), (n_start, n_extent) in zip(have, need, strict=True):
        offset = const_value(simplify(n_start - start))
        if not isinstance(offset, int) or offset < 0 or offset + n_extent > extent:
            return False
    return True


class _DropBlocks(IRMapper):
    def visit_BlockRealize(self, node: BlockRealize):
        return Evaluate(IntImm(0))


def _without_blocks(stmt: Stmt) -> Stmt:
    """``stmt`` with every block inside replaced by a no-op."""
    return _DropBlocks().visit(stmt)


def cache_name(func: PrimFunc, buffer: Buffer, scope: str) -> tuple[str, set[str]]:
    taken = used_names(func) | set(block_names(func)) | {"root"}
    return fresh_name(f"{buffer.name}_{scope}", taken), taken
