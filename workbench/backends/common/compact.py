"""Shrink ``local``/``shared`` buffers to the region one iteration of their loop touches.

After ``cache_write(C, "local")`` and ``reverse_compute_at`` under a tile loop, the
scheduled IR still declares ``C_local`` with the full shape of ``C``, while each iteration
of the tile loop only touches one tile of it. The buffer is allocated inside that loop (see
``allocation``), so without compaction every tile iteration would allocate the whole array.
TVM's ``CompactBufferAllocation`` pass does the same job.

The rule, per dimension: split each index into a part that depends only on loops *outside*
the allocation loop and a part that depends only on loops *inside* it. When every access
has the same outer part, the dimension shrinks to the range of the inner part and the
index becomes ``inner - min(inner)``. Anything else (an index mixing both, a ``//`` of a
sum, a range no smaller than the dimension, which a guarded or ``Select``-ed access can
reach) keeps that dimension whole, which is always correct.

Example
-------
``C_local[i_0 * 4 + ax0, j_0 * 64 + ax1]`` with ``ax0 < 4`` and ``ax1 < 64`` inside loop
``j_0`` becomes ``C_local[ax0, ax1]`` with shape ``(4, 64)``.

A ``local`` buffer is one per thread: a loop bound to ``threadIdx`` inside the allocation
loop is *outer* for it (fixed in each thread), and two loops bound to the same
``threadIdx`` axis are the same index. So a per-thread register stage of a row,
``A_local[j_0, tx, v]`` written under one ``tx`` loop and read under another, shrinks to
``(J_0, 1, 4)`` indexed ``[j_0, 0, v]`` (constant indices once ``j_0`` and ``v`` unroll:
registers, not local memory). A ``shared`` buffer is the opposite: every thread's accesses
count (below).
"""

from __future__ import annotations

from workbench.backends.common.allocation import TOP, allocation_sites
from workbench.ir import (
    Add,
    Buffer,
    BufferLoad,
    BufferRegion,
    BufferStore,
    For,
    IntImm,
    PrimExpr,
    PrimFunc,
    Range,
    Sub,
    Var,
)
from workbench.ir.arith import int_bounds, simplify
from workbench.ir.functor import IRMapper, IRVisitor, collect, expr_vars, substitute


def compact_local_buffers(func: PrimFunc) -> PrimFunc:
    """Return lowered ``func`` with each non-global intermediate shrunk (see module doc)."""
    sites = allocation_sites(func)
    loops = _loops_in_preorder(func)
    original = func
    for buf, site in sites.items():
        if buf.scope == "global" or site is TOP:
            continue
        relaxed = _thread_loops_around(original, loops[site]) if buf.scope == "shared" else []
        pinned = buf.scope == "local"
        compacted = _compact_one(func, buf, loops[site], relaxed, pinned)
        if compacted is not None:
            func = compacted
    return func


def _thread_loops_around(func: PrimFunc, site: For) -> list[For]:
    """The ``threadIdx``-bound loops enclosing ``site`` (itself included), outermost first.

    A ``shared`` buffer is one buffer for all the threads of a block, so its compacted
    shape must cover every thread's accesses: those loops count as inner (TVM relaxes
    thread variables for shared storage the same way).
    """
    from workbench.schedule.tree import walk

    for node, ancestors in walk(func.root_block.body):
        if node is site:
            chain = [a for a in ancestors if isinstance(a, For)] + [site]
            return [
                loop for loop in chain if (loop.thread_binding or "").startswith("threadIdx")
            ]
    return []


def _loops_in_preorder(func: PrimFunc) -> list[For]:
    return [node for node in collect(func.root_block.body, lambda n: isinstance(n, For))]


def _signed_terms(expr: PrimExpr, sign: int = 1) -> list[tuple[int, PrimExpr]]:
    if isinstance(expr, Add):
        return _signed_terms(expr.a, sign) + _signed_terms(expr.b, sign)
    if isinstance(expr, Sub):
        return _signed_terms(expr.a, sign) + _signed_terms(expr.b, -sign)
    return [(sign, expr)]


def _rebuild(terms: list[tuple[int, PrimExpr]]) -> PrimExpr:
    result: PrimExpr = IntImm(0)
    for sign, term in terms:
        result = Add(result, term) if sign > 0 else Sub(result, term)
    return simplify(result)



class _Accesses(IRVisitor):
    def __init__(self, name: str):
        self.name = name
        self.indices: list[tuple[PrimExpr, ...]] = []

    def visit_BufferLoad(self, node: BufferLoad):
        if node.buffer.name == self.name:
            self.indices.append(node.indices)
        self.generic_visit(node)

    def visit_BufferStore(self, node: BufferStore):
        if node.buffer.name == self.name:
            self.indices.append(node.indices)
        self.generic_visit(node)


def _split_index(index: PrimExpr, inner: set[Var]) -> tuple[PrimExpr, PrimExpr] | None:
    """``index`` as ``(outer part, inner part)``, or None when a term mixes both."""
    outer_terms, inner_terms = [], []
    for sign, term in _signed_terms(index):
        variables = expr_vars(term)
        if variables and variables <= inner:
            inner_terms.append((sign, term))
        elif not variables & inner:
            outer_terms.append((sign, term))
        else:
            return None
    return _rebuild(outer_terms), _rebuild(inner_terms)


def _thread_tags(site: For) -> dict[Var, Var]:
    """Each ``threadIdx``-bound loop variable inside ``site`` -> one variable per axis."""
    tags: dict[str, Var] = {}
    result = {}
    for loop in collect(site.body, lambda n: isinstance(n, For)):
        tag = loop.thread_binding or ""
        if tag.startswith("threadIdx"):
            result[loop.loop_var] = tags.setdefault(tag, Var(tag.replace(".", "_")))
    return result


def _compact_one(
    func: PrimFunc, buf: Buffer, site: For, relaxed: list[For] = (), pinned: bool = False
) -> PrimFunc | None:
    """``pinned`` (a ``local`` buffer): the ``threadIdx`` loops inside ``site`` are outer
    (one value per thread), compared through one variable per axis."""
    inner_loops = list(relaxed) + [n for n in collect(site.body, lambda n: isinstance(n, For))]
    tags = _thread_tags(site) if pinned else {}
    inner_loops = [loop for loop in inner_loops if loop.loop_var not in tags]
    ranges = {}
    for loop in inner_loops:
        lo, _ = int_bounds(loop.min, ranges)
        _, extent_hi = int_bounds(loop.extent, ranges)
        if lo is None or extent_hi is None:
            return None
        ranges[loop.loop_var] = (lo, lo + extent_hi - 1)
    inner = set(ranges)
    accesses = _Accesses(buf.name)
    accesses.visit(site.body)
    if not accesses.indices:
        return None

    new_shape: list[int] = []
    offsets: list[int | None] = []  # None: dimension kept whole
    for dim, full in enumerate(buf.shape):
        parts = [_split_index(indices[dim], inner) for indices in accesses.indices]
        if tags and all(p is not None for p in parts):
            parts = [(simplify(substitute(p[0], tags)), p[1]) for p in parts]
        if any(p is None for p in parts) or len({p[0] for p in parts}) != 1:
            new_shape.append(full)
            offsets.append(None)
            continue
        bounds = [int_bounds(p[1], ranges) for p in parts]
        if any(lo is None or hi is None for lo, hi in bounds):
            new_shape.append(full)
            offsets.append(None)
            continue
        low = min(lo for lo, _ in bounds)
        high = max(hi for _, hi in bounds)
        if high - low + 1 >= full:
            # no smaller than the buffer (indices a guard or a Select keeps out of range
            # can widen it): keep the dimension and its indices as they are
            new_shape.append(full)
            offsets.append(None)
            continue
        new_shape.append(high - low + 1)
        offsets.append(low)
    if tuple(new_shape) == tuple(buf.shape):
        return None
    new_buf = buf.replace(shape=tuple(new_shape))
    return _Rewriter(buf, new_buf, inner, offsets).visit(func)


class _Rewriter(IRMapper):
    def __init__(self, old: Buffer, new: Buffer, inner: set[Var], offsets: list[int | None]):
        self.old, self.new, self.inner, self.offsets = old, new, inner, offsets

    def _indices(self, indices: tuple[PrimExpr, ...]) -> tuple[PrimExpr, ...]:
        result = []
        for index, offset in zip(indices, self.offsets, strict=True):
            if offset is None:
                result.append(index)
                continue
            _, inner_part = _split_index(index, self.inner)
            result.append(simplify(Sub(inner_part, IntImm(offset))))
        return tuple(result)

    def visit_Buffer(self, node: Buffer):
        return self.new if node == self.old else node

    def visit_BufferLoad(self, node: BufferLoad):
        node = self.generic_visit(node)
        if node.buffer is self.new:
            return node.replace(indices=self._indices(node.indices))
        return node

    def visit_BufferStore(self, node: BufferStore):
        node = self.generic_visit(node)
        if node.buffer is self.new:
            return node.replace(indices=self._indices(node.indices))
        return node

    def visit_BufferRegion(self, node: BufferRegion):
        if node.buffer != self.old:
            return node
        return BufferRegion(self.new, tuple(Range(IntImm(0), IntImm(n)) for n in self.new.shape))
