"""Block instances' accesses: each declared region of a block rewritten in the loop
variables around it (``Access``), the unit every dependence question is asked about.

A block's declared regions (``T.reads`` / ``T.writes``, in its iteration variables) are
rewritten through the bindings of the block and of every block around it into expressions
of loop variables; for one dimension that is an interval ``[e, e + extent - 1]``. The
``T.where`` predicates of the block and of the blocks around it come along, in loop
variables too (they bound the iterations that run).
"""

from __future__ import annotations

import dataclasses

from workbench.ir import (
    And,
    Block,
    BlockRealize,
    Buffer,
    For,
    IntImm,
    PrimExpr,
    Range,
    Stmt,
    Var,
    const_value,
    substitute,
)
from workbench.ir.arith import simplify
from workbench.ir.regions import region_text

Bounds = tuple[int | None, int | None]


@dataclasses.dataclass(frozen=True)
class Access:
    """One declared region of one block, rewritten in loop variables.

    ``loops`` are the loops around the block from the function's root, outermost first;
    ``region`` is ``(start, extent)`` per dimension in those loops' variables; ``text`` is the
    region as the block declares it (``"B[vk]"``), for messages.
    """

    block: str
    buffer: Buffer
    kind: str  # "read" or "write"
    region: tuple[tuple[PrimExpr, PrimExpr], ...]
    loops: tuple[For, ...] = dataclasses.field(repr=False, compare=False)
    text: str = ""
    predicate: tuple[PrimExpr, ...] = dataclasses.field(default=(), repr=False, compare=False)
    """The ``T.where`` conjuncts of the block and the blocks around it, in loop variables."""


def _binding(realize: BlockRealize) -> dict[Var, PrimExpr]:
    return {
        iv.var: value
        for iv, value in zip(realize.block.iter_vars, realize.iter_values, strict=True)
    }


def block_accesses(realize: BlockRealize, ancestors: tuple[Stmt, ...]) -> list[Access]:
    """The declared reads and writes of ``realize``'s block in the loop variables around it."""
    realizes = [a for a in ancestors if isinstance(a, BlockRealize)] + [realize]
    loops = tuple(a for a in ancestors if isinstance(a, For))
    block: Block = realize.block
    conjuncts = []
    for position, outer in enumerate(realizes):
        condition = outer.predicate
        for around in reversed(realizes[:position]):
            condition = substitute(condition, _binding(around))
        conjuncts.extend(_conjuncts(condition))
    found = []
    for kind, regions in (("read", block.reads), ("write", block.writes)):
        for region in regions:
            dims = []
            for rng in region.region:
                start, extent = rng.min, rng.extent
                for outer in reversed(realizes):
                    start = substitute(start, _binding(outer))
                    extent = substitute(extent, _binding(outer))
                dims.append((start, extent))
            found.append(Access(block.name, region.buffer, kind, tuple(dims), loops,
                                region_text(region), tuple(conjuncts)))
    return found


def _conjuncts(condition: PrimExpr) -> list[PrimExpr]:
    if isinstance(condition, And):
        return _conjuncts(condition.a) + _conjuncts(condition.b)
    return [] if const_value(condition) is not None else [condition]



def fix_unit_loops(access: Access, ranges: dict[Var, tuple[int, int]]) -> Access:
    """``access`` with the variables of one-iteration loops replaced by their value, so a
    split by 1 (``(f0 + f1) // 10`` with ``f1`` in ``[0, 0]``) reads as the loop it was."""
    fixed = {v: IntImm(lo, v.dtype) for v, (lo, hi) in ranges.items() if lo == hi}
    if not fixed:
        return access
    def pin(expr: PrimExpr) -> PrimExpr:
        return simplify(substitute(expr, fixed))
    region = tuple((pin(start), pin(extent)) for start, extent in access.region)
    predicate = tuple(pin(cond) for cond in access.predicate)
    return dataclasses.replace(access, region=region, predicate=predicate)


def loop_range(loop: For) -> Range:
    return Range(loop.min, loop.extent)
