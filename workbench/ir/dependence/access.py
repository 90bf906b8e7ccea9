"""Block instances' accesses: each declared region of a block rewritten in the loop
variables around it (``Access``), the unit every dependence question is asked about.

A block's declared regions (``T.reads`` / ``T.writes``, in its iteration variables) are
rewritten through the bindings of the block and of every block around it into expressions
of loop variables; for one dimension that is an interval ``[e, e + extent - 1]``. The
``T.where`` predicates of the block and of the blocks around it come along, in loop
variables too (they bound the iterations that run).

Two rewrites keep what matters to the overlap question: ``fix_unit_loops`` pins the loops of
one iteration, ``digit_pairs_merged`` reads two dimensions indexed by ``x // c`` and ``x % c``
as the one dimension ``x``.
"""

from __future__ import annotations

import dataclasses
import itertools

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
from workbench.ir.arith.linear import Linear, as_digit, from_linear, merge_div_mod
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


def digit_pairs_merged(first: Access, second: Access) -> tuple[Access, Access] | None:
    """``first`` and ``second`` with each pair of dimensions that ``first`` indexes by
    adjacent digits of one value (``x // 3`` and ``x % 3``: the axes of a fused loop after a
    split) merged into one dimension ``3 * d_high + d_low`` (``x``), pair by pair (``x // 6,
    x // 2 % 3, x % 2`` becomes ``x // 6, x % 6``, then ``x``), up to a pair in which
    ``second`` is wider than one element; ``None`` when no pair is merged.

    Sound whatever the indices: both accesses go through one function of their element, so
    elements that differ once merged differ before. Exact for ``first``: ``x // c`` and
    ``x % c`` determine ``x`` (``x == c * (x // c) + x % c``).
    """
    merged = None
    pair = _adjacent_digits(first)
    while pair is not None:
        second = _merge_dimensions(second, *pair)
        if second is None:
            break  # ``second`` spans several elements there: its merge is no interval
        first = _merge_dimensions(first, *pair)
        merged = first, second
        pair = _adjacent_digits(first)
    return merged


def _adjacent_digits(access: Access) -> tuple[int, int, int] | None:
    """``(high, low, radix)``: two one-element-wide dimensions of ``access`` whose indices
    ``radix * d_high + d_low`` merge into one digit of one value (``merge_div_mod``), where
    ``d_low`` is some ``y % radix``; else None."""
    point = [d for d, (_, extent) in enumerate(access.region) if const_value(extent) == 1]
    for high, low in itertools.permutations(point, 2):
        d_high, d_low = access.region[high][0], access.region[low][0]
        _, _, radix = as_digit(d_low)
        if radix is not None and d_high.dtype == d_low.dtype and (
                d_low not in _radix_sum(d_high, d_low, radix).terms):
            return high, low, radix
    return None


def _merge_dimensions(access: Access, high: int, low: int, radix: int) -> Access | None:
    """``access`` with dimension ``high`` indexed by ``radix * d_high + d_low`` and dimension
    ``low`` dropped; None unless both are one element wide (of one dtype)."""
    (d_high, w_high), (d_low, w_low) = access.region[high], access.region[low]
    if const_value(w_high) != 1 or const_value(w_low) != 1 or d_high.dtype != d_low.dtype:
        return None
    index = from_linear(_radix_sum(d_high, d_low, radix), d_low.dtype)
    region = [(index, w_high) if d == high else dim for d, dim in enumerate(access.region)]
    del region[low]
    return dataclasses.replace(access, region=tuple(region))


def _radix_sum(d_high: PrimExpr, d_low: PrimExpr, radix: int) -> Linear:
    """``radix * d_high + d_low`` with adjacent digits of one value merged into one
    (``x // 3 * 3 + x % 3 -> x``)."""
    return merge_div_mod(Linear({d_high: radix}).add(Linear({d_low: 1})), d_low.dtype)


def loop_range(loop: For) -> Range:
    return Range(loop.min, loop.extent)
