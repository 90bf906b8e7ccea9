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
from workbench.ir.expr_text import expr_text
from workbench.ir.functor import IRVisitor, collect, substitute
from workbench.ir.stmt import Block, BlockRealize, BufferRegion, BufferStore, For, Range, Stmt

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


def split_offset(expr: PrimExpr) -> tuple[PrimExpr | None, int]:
    """Write ``expr`` as ``base + offset`` with a constant offset (base None for a constant)."""
    if isinstance(expr, IntImm):
        return None, expr.value
    if isinstance(expr, Add) and isinstance(expr.b, IntImm):
        base, offset = split_offset(expr.a)
        return base, offset + expr.b.value
    if isinstance(expr, Sub) and isinstance(expr.b, IntImm):
        base, offset = split_offset(expr.a)
        return base, offset - expr.b.value
    return expr, 0


def stop_expr(start: PrimExpr, extent: PrimExpr) -> PrimExpr:
    """The end of ``[start, start + extent)``, written so the parser recovers ``extent``."""
    if isinstance(extent, IntImm):
        base, offset = split_offset(start)
        end = offset + extent.value
        if base is None:
            return IntImm(end, extent.dtype)
        if end == 0:
            return base
        if end > 0:
            return base + IntImm(end, extent.dtype)
        return base - IntImm(-end, extent.dtype)
    return start + extent


def region_text(region: BufferRegion) -> str:
    """``B[vk]``, ``A[vi - 1:vi + 2, 0:16]``: a region as the DSL writes it (``X[()]`` for none)."""
    parts = []
    for rng in region.region:
        if rng.extent == IntImm(1):
            parts.append(expr_text(rng.min))
        else:
            parts.append(f"{expr_text(rng.min)}:{expr_text(stop_expr(rng.min, rng.extent))}")
    return f"{region.buffer.name}[{', '.join(parts) if parts else '()'}]"


def _merge_dimension(indices: list[PrimExpr | None], extent: int) -> Range:
    if any(index is WHOLE for index in indices):
        return Range(IntImm(0), IntImm(extent))
    parts = [split_offset(index) for index in indices]
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
    body: Stmt, init: Stmt | None = None, alloc_buffers: tuple[Buffer, ...] = ()
) -> tuple[tuple[BufferRegion, ...], tuple[BufferRegion, ...]]:
    """Infer ``(reads, writes)`` of a block from its ``body`` and ``init``.

    Reads come in the order buffers are first loaded in ``body``; writes in the order they
    are first stored (``init`` stores count as writes, its loads as reads). As in TVM, a
    block's regions never name a buffer it allocates (``alloc_buffers``, the block's own) or
    a block inside ``body`` allocates: those live and die within the block.

    Example
    -------
    For ``C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]`` the reads are
    ``C[vi, vj], A[vi, vk], B[vk, vj]`` and the write is ``C[vi, vj]``.
    """
    collector = _AccessCollector()
    collector.visit(body)
    if init is not None:
        collector.visit(init)
    local = set(alloc_buffers) | _allocated_within(body)
    reads = {b: i for b, i in collector.reads.items() if b not in local}
    writes = {b: i for b, i in collector.writes.items() if b not in local}
    return _regions(reads), _regions(writes)


def _allocated_within(body: Stmt) -> set[Buffer]:
    """Buffers allocated by a block inside ``body``."""
    blocks = collect(body, lambda n: isinstance(n, Block))
    return {buffer for block in blocks for buffer in block.alloc_buffers}
