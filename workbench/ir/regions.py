"""Read and write regions of a block, inferred from its body (as TVM does).

Inside a block, every index is an expression of the block's own iteration variables,
which are points, so each access touches one element: ``A[vi, vk]`` reads the region
``A[vi:vi+1, vk:vk+1]``. Several accesses to one buffer are merged into one region per
dimension: indices that differ by constants (``A[vi-1]``, ``A[vi+1]``) give a window
(``A[vi-1:vi+2]``); anything else covers the whole dimension.
"""

from __future__ import annotations

from workbench.ir.buffer import Buffer
from workbench.ir.expr import Add, BufferLoad, IntImm, PrimExpr, Sub, Var
from workbench.ir.functor import IRVisitor, collect, substitute
from workbench.ir.stmt import BlockRealize, BufferRegion, BufferStore, For, Range, Stmt

WHOLE = None
"""An index standing for "anywhere in this dimension" (a nested block's relaxed access)."""


class _AccessCollector(IRVisitor):
    def __init__(self):
        self.reads: dict[Buffer, list[tuple[PrimExpr | None, ...]]] = {}
        self.writes: dict[Buffer, list[tuple[PrimExpr | None, ...]]] = {}
        self.inner_loop_vars: set[Var] = set()

    def visit_For(self, node: For):
        self.inner_loop_vars.add(node.loop_var)
        self.generic_visit(node)

    def visit_BufferLoad(self, node: BufferLoad):
        self.reads.setdefault(node.buffer, []).append(node.indices)
        self.generic_visit(node)

    def visit_BufferStore(self, node: BufferStore):
        self.writes.setdefault(node.buffer, []).append(node.indices)
        self.generic_visit(node)

    def visit_BlockRealize(self, node: BlockRealize):
        # A nested block reports its own regions, rewritten in the parent's terms through its
        # bindings. A dimension that still depends on a loop inside the parent block (or
        # spans more than one element) is relaxed to the whole dimension: conservative.
        bindings = {
            iv.var: value
            for iv, value in zip(node.block.iter_vars, node.iter_values, strict=True)
        }
        for regions, target in ((node.block.reads, self.reads), (node.block.writes, self.writes)):
            for region in regions:
                target.setdefault(region.buffer, []).append(
                    tuple(self._outer_index(r, bindings) for r in region.region)
                )

    def _outer_index(self, rng: Range, bindings: dict) -> PrimExpr | None:
        if not (isinstance(rng.extent, IntImm) and rng.extent.value == 1):
            return WHOLE
        index = substitute(rng.min, bindings)
        if collect(index, lambda n: isinstance(n, Var) and n in self.inner_loop_vars):
            return WHOLE
        return index


def _split_offset(expr: PrimExpr) -> tuple[PrimExpr | None, int]:
    """Write ``expr`` as ``base + offset`` with a constant offset (base None for a constant)."""
    if isinstance(expr, IntImm):
        return None, expr.value
    if isinstance(expr, Add) and isinstance(expr.b, IntImm):
        base, offset = _split_offset(expr.a)
        return base, offset + expr.b.value
    if isinstance(expr, Sub) and isinstance(expr.b, IntImm):
        base, offset = _split_offset(expr.a)
        return base, offset - expr.b.value
    return expr, 0


def _merge_dimension(indices: list[PrimExpr | None], extent: int) -> Range:
    if any(index is WHOLE for index in indices):
        return Range(IntImm(0), IntImm(extent))
    parts = [_split_offset(index) for index in indices]
    bases = {base for base, _ in parts}
    if len(bases) != 1:
        return Range(IntImm(0), IntImm(extent))
    base = bases.pop()
    low = min(offset for _, offset in parts)
    high = max(offset for _, offset in parts)
    if base is None:
        start: PrimExpr = IntImm(low)
    elif low == 0:
        start = base
    elif low > 0:
        start = Add(base, IntImm(low))
    else:
        start = Sub(base, IntImm(-low))
    return Range(start, IntImm(high - low + 1))


def _regions(accesses: dict[Buffer, list[tuple[PrimExpr, ...]]]) -> tuple[BufferRegion, ...]:
    regions = []
    for buffer, index_tuples in accesses.items():
        unique = list(dict.fromkeys(index_tuples))
        dims = tuple(
            _merge_dimension([indices[d] for indices in unique], buffer.shape[d])
            for d in range(buffer.ndim)
        )
        regions.append(BufferRegion(buffer, dims))
    return tuple(regions)


def block_access_regions(
    body: Stmt, init: Stmt | None = None
) -> tuple[tuple[BufferRegion, ...], tuple[BufferRegion, ...]]:
    """Infer ``(reads, writes)`` of a block from its ``body`` and ``init``.

    Reads come in the order buffers are first loaded in ``body``; writes in the order they
    are first stored (``init`` stores count as writes, its loads as reads).

    Example
    -------
    For ``C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]`` the reads are
    ``C[vi, vj], A[vi, vk], B[vk, vj]`` and the write is ``C[vi, vj]``.
    """
    collector = _AccessCollector()
    collector.visit(body)
    if init is not None:
        collector.visit(init)
    return _regions(collector.reads), _regions(collector.writes)
