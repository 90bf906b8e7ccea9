"""Interior and edge blocks on the ``cuda`` target: one kernel body without the shape guards.

A split that does not divide its loop leaves a guard (``T.where``) on every access of the
tile: ``if i_0 * 128 + i_1 * 8 + i_2 < 4000``. The guard depends on the lane of a
vectorized loop, so the 128-bit accesses fall back to scalar ones, and it sits in the
innermost FMA loop of a register tile: at 4000^3 the whole SGEMM ran at 0.26x cuBLAS
where the aligned 4096^3 ran at 0.70x. Yet only the last block of each row and column of the
grid reaches past the edge. This pass (TVM's ``loop_partition`` on the block axes) gives
each kernel marked for it two copies of its body::

    if i_0 * 128 + 127 < 4000 and j_0 * 128 + 127 < 4000:    # the block is interior
        body, every guard implied by the test removed      # -> ld.global.v4, no branches
    else:
        body, guards kept                                  # edge blocks, scalar where needed

The test depends on ``blockIdx`` alone, so every thread of a block takes the same branch and
the barriers inside stay uniform. A conjunct of a guard is *block-dependent* when it reads
``expr < bound`` with ``expr = (terms of blockIdx variables only) + rest`` and ``rest``
free of them and bounded over the ranges of the kernel's other loops; the interior test is
``block terms + max(rest) < bound``, which implies the conjunct for every thread and
iteration. Other conjuncts (the ``k`` remainder of a reduction, a tile copy larger than
the block's threads) stay in both copies.

Ask for it with a loop annotation anywhere in the kernel (the recipes put it on the
``blockIdx`` loop)::

    sch.annotate(bi, "cuda.partition_edges", 1)

It runs after double buffering (the copies are duplicated whole) and before
``widen_vector_loops``, which then finds guard-free vector loops in the interior copy.
"""

from __future__ import annotations

from workbench.backends.common.allocation import Allocate
from workbench.backends.common.target import Target
from workbench.ir import (
    LE,
    LT,
    Add,
    And,
    BlockRealize,
    BufferLoad,
    BufferStore,
    FloatImm,
    For,
    ForKind,
    IfThenElse,
    IntImm,
    PrimExpr,
    PrimFunc,
    Stmt,
    Var,
)
from workbench.ir.arith import int_bounds, is_const_int, simplify
from workbench.ir.functor import IRMapper, collect

ANNOTATION = "cuda.partition_edges"
MAX_TESTS = 8
"""At most this many conjuncts in the interior test (each distinct edge of the tile)."""


def _marked(node) -> bool:
    return isinstance(node, For) and any(k == ANNOTATION and v for k, v in node.annotations)


def _conjuncts(cond: PrimExpr) -> list[PrimExpr]:
    if isinstance(cond, And):
        return _conjuncts(cond.a) + _conjuncts(cond.b)
    return [cond]


def _terms(expr: PrimExpr) -> list[PrimExpr]:
    if isinstance(expr, Add):
        return _terms(expr.a) + _terms(expr.b)
    return [expr]


def _vars(expr: PrimExpr) -> set:
    return set(collect(expr, lambda n: isinstance(n, Var)))


def _interior_test(cond: PrimExpr, block_vars: set, ranges: dict) -> PrimExpr | None:
    """The blockIdx-only test that implies conjunct ``cond`` everywhere in the block, or
    None when ``cond`` is not block-dependent (module docstring)."""
    if not isinstance(cond, (LT, LE)) or collect(cond, lambda n: isinstance(n, BufferLoad)):
        return None
    if _vars(cond.b) or not (_vars(cond.a) & block_vars):
        return None
    block_terms, rest = [], []
    for term in _terms(cond.a):
        used = _vars(term)
        if used and used <= block_vars:
            block_terms.append(term)
        elif used & block_vars:
            return None
        else:
            rest.append(term)
    high = 0
    if rest:
        expr = rest[0]
        for term in rest[1:]:
            expr = Add(expr, term)
        if not _vars(expr) <= set(ranges):
            return None
        high = int_bounds(expr, ranges)[1]
        if high is None:
            return None
    lhs = block_terms[0]
    for term in block_terms[1:]:
        lhs = Add(lhs, term)
    if high:
        lhs = Add(lhs, IntImm(high, lhs.dtype))
    return simplify(type(cond)(lhs, cond.b))


def _conditions(kernel: Stmt) -> list[PrimExpr]:
    found = []
    for node in collect(kernel, lambda n: isinstance(n, (BlockRealize, IfThenElse))):
        found.append(node.predicate if isinstance(node, BlockRealize) else node.condition)
    return found


class _Drop(IRMapper):
    """The interior copy: conjuncts implied by the interior test become true."""

    def __init__(self, implied: set):
        self.implied = implied

    def _rest(self, cond: PrimExpr) -> PrimExpr | None:
        kept = [c for c in _conjuncts(cond) if c not in self.implied]
        if not kept:
            return None
        out = kept[0]
        for c in kept[1:]:
            out = And(out, c)
        return out

    def visit_BlockRealize(self, node: BlockRealize):
        node = self.generic_visit(node)
        rest = self._rest(node.predicate)
        if rest is None:
            return node.replace(predicate=IntImm(1, "bool"))
        return node.replace(predicate=rest)

    def visit_IfThenElse(self, node: IfThenElse):
        node = self.generic_visit(node)
        rest = self._rest(node.condition)
        if rest is None:
            return node.then_case
        return node.replace(condition=rest)


class _DropOnChip(_Drop):
    """The edge copy: the same conjuncts dropped from guards whose body touches only
    ``local`` and ``shared`` buffers (register-tile fragments, the FMA loop, its init),
    when every index there stays inside its buffer for all values of the kernel's loops.

    Such a guard only skips positions outside C; running them computes values that no
    guarded global store reads (a position's fragments feed only that position), so the
    edge copy needs no branch in its inner loops and the kernel no extra registers for
    them (at 4000^3 the guarded copy took the kernel from 123 to 240 registers). The
    loads those positions read, where their guards stay, write 0 past the edge
    (``_zero_fill``): the dropped guards compute on zeros, not on uninitialised memory.
    """

    def __init__(self, implied: set, ranges: dict):
        super().__init__(implied)
        self.ranges = ranges

    def visit_BlockRealize(self, node: BlockRealize):
        return node.replace(block=node.block.replace(body=self.visit(node.block.body)))

    def visit_IfThenElse(self, node: IfThenElse):
        node = self.generic_visit(node)
        if node.else_case is not None:
            return node
        if not self._on_chip(node.then_case):
            return self._zero_fill(node)
        rest = self._rest(node.condition)
        if rest is None:
            return node.then_case
        return node.replace(condition=rest)

    def _zero_fill(self, node: IfThenElse) -> Stmt:
        """A kept edge guard over one store into a ``local`` or ``shared`` tile (a
        fragment loaded from past the edge of its shared tile, a shared tile loaded from
        past the edge of A): the positions it skips get 0 (a predicated load).

        The unguarded FMA loop above reads those positions; without the zero it computed
        on whatever the registers or shared memory held (uninitialised: NaN or inf
        products under the simulator, results the guarded write-back then discarded)::

            if others:
                if edge: tile[...] = source[...]
                else: tile[...] = 0
        """
        store = node.then_case
        if not isinstance(store, BufferStore) or store.buffer.scope not in ("local", "shared"):
            return node
        if not store.buffer.dtype.startswith("float"):
            return node
        parts = _conjuncts(node.condition)
        edge = [c for c in parts if c in self.implied]
        others = [c for c in parts if c not in self.implied]
        if not edge or not self._in_bounds(store):
            return node
        zero = store.replace(value=FloatImm(0.0, store.buffer.dtype))
        inner = IfThenElse(_all(edge), store, zero)
        return IfThenElse(_all(others), inner) if others else inner

    def _in_bounds(self, access: BufferLoad | BufferStore) -> bool:
        """Every index of ``access`` inside its buffer for all values of the kernel's
        loops (the zero store runs where the edge guard fails)."""
        for index, size in zip(access.indices, access.buffer.shape, strict=True):
            if not _vars(index) <= set(self.ranges):
                return False
            low, high = int_bounds(index, self.ranges)
            if low is None or high is None or low < 0 or high >= int(size):
                return False
        return True

    def _on_chip(self, stmt: Stmt) -> bool:
        accesses = collect(stmt, lambda n: isinstance(n, (BufferLoad, BufferStore)))
        if not accesses:
            return False
        for access in accesses:
            if access.buffer.scope not in ("local", "shared") or not self._in_bounds(access):
                return False
        return True


def _all(conds: list[PrimExpr]) -> PrimExpr:
    out = conds[0]
    for c in conds[1:]:
        out = And(out, c)
    return out


def _split_head(kernel: Stmt) -> tuple[list[Stmt], Stmt]:
    """The leading chain of thread-bound loops and allocations, and the body under it."""
    head, node = [], kernel
    while (isinstance(node, For) and node.kind is ForKind.THREAD_BINDING) or isinstance(
        node, Allocate
    ):
        head.append(node)
        node = node.body
    return head, node


def partition_kernel(kernel: Stmt) -> Stmt:
    """``kernel`` as ``if interior: body without edge guards else: body`` (module doc);
    unchanged where no guard depends on ``blockIdx``."""
    loops = collect(kernel, lambda n: isinstance(n, For))
    block_vars = {
        f.loop_var for f in loops if (f.thread_binding or "").startswith("blockIdx")
    }
    all_ranges = {
        f.loop_var: (f.min.value, f.min.value + f.extent.value - 1)
        for f in loops
        if is_const_int(f.min) and is_const_int(f.extent)
    }
    ranges = {v: r for v, r in all_ranges.items() if v not in block_vars}
    tests: list[PrimExpr] = []
    implied: set = set()
    for cond in _conditions(kernel):
        for conjunct in _conjuncts(cond):
            test = _interior_test(conjunct, block_vars, ranges)
            if test is None:
                continue
            implied.add(conjunct)
            if not is_const_int(test) and test not in tests:
                tests.append(test)
    if not implied or len(tests) > MAX_TESTS:
        return kernel
    head, body = _split_head(kernel)
    interior = _Drop(implied).visit(body)
    body = _DropOnChip(implied, all_ranges).visit(body)
    if tests:
        test = tests[0]
        for t in tests[1:]:
            test = And(test, t)
        new = IfThenElse(test, interior, body)
    else:
        new = interior
    for node in reversed(head):
        new = node.replace(body=new)
    return new


class _Partition(IRMapper):
    def visit_For(self, node: For):
        if node.kind is ForKind.THREAD_BINDING and collect(node, _marked):
            return partition_kernel(node)
        return self.generic_visit(node)


def partition_pass(func: PrimFunc, target: Target | None = None) -> PrimFunc:
    """Partition every kernel that carries the annotation (module docstring)."""
    if not collect(func.body, _marked):
        return func
    return func.replace(body=_Partition().visit(func.body))


__all__ = ["ANNOTATION", "partition_kernel", "partition_pass"]
