"""Coverage questions of region inference (``region_infer``), answered with interval and
affine reasoning, never by enumerating points (so they do not depend on problem size):

* ``uncovered_read``: does a moved consumer read only what was produced at one iteration?
* ``recomputed_point`` / ``uncovered_domain_point``: with its iter vars' intervals read as
  affine functions of the outer loops (``lo = c0 + sum(c_k * x_k)``, width ``w``), is each
  element computed exactly once / at least once? The mixed-radix argument: sorted by
  coefficient, the tiles are disjoint when each ``c_k`` is at least the reach of the smaller
  ones, and contiguous when it is at most that.
* ``span_upper``: a tight upper bound of an interval's length, for the new loop's extent.
"""

from __future__ import annotations

import math

from workbench.ir.arith import int_bounds, prove, simplify
from workbench.ir.arith.linear import linear_form
from workbench.ir.buffer import Buffer
from workbench.ir.expr import (
    GE,
    LE,
    Add,
    FloorDiv,
    FloorMod,
    IntImm,
    PrimExpr,
    Sub,
    Var,
    const_value,
)
from workbench.ir.region_infer import Interval, IntRanges, expr_vars, int_domain, relax
from workbench.ir.stmt import Block

__all__ = [
    "uncovered_read",
    "span_upper",
    "recomputed_point",
    "uncovered_domain_point",
    "linear_coefficients",
]


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
            relaxed = relax(rng.min, var_ranges, ranges)
            extent = const_value(rng.extent)
            if relaxed is None or not isinstance(extent, int):
                return f"{region.buffer.name} (axis {axis} cannot be bounded)"
            read_lo, read_hi = relaxed[0], relaxed[1] + (extent - 1)
            if not (prove(GE(read_lo, lo), ranges) and prove(LE(read_hi, hi), ranges)):
                return f"{region.buffer.name} (axis {axis})"
    return None


def _peel_const(expr: PrimExpr) -> tuple[PrimExpr, int]:
    """``expr`` as ``core + k`` with a constant ``k``."""
    if isinstance(expr, (Add, Sub)) and isinstance(const_value(expr.b), int):
        core, k = _peel_const(expr.a)
        return core, k + (const_value(expr.b) if isinstance(expr, Add) else -const_value(expr.b))
    return expr, 0


def span_upper(lo: PrimExpr, hi: PrimExpr, ranges: IntRanges) -> int | None:
    """An upper bound of ``hi - lo + 1`` over ``ranges``. For ``A // d + k1`` and
    ``B // e + k2`` both are brought to one divisor ``m`` (``A // d == (A * m/d) // m``);
    then ``A' // m - B' // m <= (A' - B') // m``, plus one only when the remainders can
    carry (``(A' - B') % m + max(B' % m) >= m``): tighter than bounding each side."""
    (h_core, h_k), (l_core, l_k) = _peel_const(hi), _peel_const(lo)
    if isinstance(h_core, FloorDiv) and isinstance(l_core, FloorDiv):
        d, e = const_value(h_core.b), const_value(l_core.b)
        if isinstance(d, int) and isinstance(e, int) and d > 0 and e > 0:
            m = math.lcm(d, e)
            dtype = h_core.dtype
            a = h_core.a * IntImm(m // d, dtype) if m != d else h_core.a
            b = l_core.a * IntImm(m // e, dtype) if m != e else l_core.a
            diff = int_bounds(simplify(a - b, ranges), ranges)[1]
            carry = int_bounds(simplify(FloorMod(b, IntImm(m, dtype)), ranges), ranges)[1]
            if diff is not None and carry is not None:
                quotient = diff // m + (1 if diff % m + carry >= m else 0)
                return quotient + h_k - l_k + 1
    return int_bounds(simplify(hi - lo + 1, ranges), ranges)[1]


# ---------------------------------------------------------------------------------------
# Once per element, every element: affine tiling of the outer loops
# ---------------------------------------------------------------------------------------


def _affine_outer(expr: PrimExpr, ranges: IntRanges) -> tuple[int, list[tuple[int, int]]] | None:
    """``expr`` as ``c0 + sum(c_k * x_k)`` over loop variables of ``ranges``:
    ``(c0 + sum of c_k * min x_k, [(c_k, extent_k)])`` with every ``c_k`` made positive
    (a loop running backwards tiles the same way), or None when not affine."""
    expr = simplify(expr, ranges)
    form = linear_form(expr, expr.dtype)
    base = form.const
    terms = []
    for term, coeff in form.terms.items():
        if not isinstance(term, Var) or term not in ranges:
            return None
        low, high = ranges[term]
        if high == low:
            base += coeff * low
            continue
        base += coeff * (low if coeff > 0 else high)
        terms.append((abs(coeff), high - low + 1))
    return base, terms


def _outer_vars(interval: Interval, ranges: IntRanges) -> set[Var]:
    return {v for v in expr_vars(interval[0]) | expr_vars(interval[1]) if v in ranges}


def recomputed_point(block: Block, intervals: list[Interval], ranges: IntRanges) -> str | None:
    """Why some element of ``block`` would be computed by two iterations of the loops in
    ``ranges`` (its iter vars taking ``intervals``), or None when each is computed once.

    A loop of extent > 1 that no interval uses repeats the same elements. Otherwise the
    iterations are disjoint when some iter var's interval ``[lo, lo + w - 1]`` (``lo``
    affine in the loops) steps through them like a mixed-radix number: sorted by
    coefficient, each ``c_k`` is at least ``w + sum(c_j * (e_j - 1))`` of the smaller
    ones. Loops used by several iter vars are accepted only when one iter var covers all
    loops with such a tiling (a sufficient, size-independent test).
    """
    used: set[Var] = set()
    for interval in intervals:
        used |= _outer_vars(interval, ranges)
    for var, (low, high) in ranges.items():
        if var not in used and high > low:
            return f"every iteration of loop {var.name!r} would update the same elements again"
    moving = {v for v in used if ranges[v][1] > ranges[v][0]}
    claimed: set[Var] = set()
    for iv, interval in zip(block.iter_vars, intervals, strict=True):
        loops = {v for v in _outer_vars(interval, ranges) if v in moving}
        if not loops:
            continue
        if not _tiles_disjointly(interval, ranges):
            return f"two iterations would update the same {iv.var.name}"
        claimed |= loops
    if claimed != moving:
        return "the iterations could not be shown to update disjoint elements"
    return None


def _tiles_disjointly(interval: Interval, ranges: IntRanges) -> bool:
    lo, hi = interval
    affine = _affine_outer(lo, ranges)
    width = const_value(simplify(hi - lo + 1, ranges))
    if affine is None or not isinstance(width, int):
        return False
    reach = width
    for coeff, extent in sorted(affine[1]):
        if coeff < reach:
            return False
        reach = coeff * (extent - 1) + reach
    return True


def uncovered_domain_point(
    block: Block, intervals: list[Interval], ranges: IntRanges
) -> str | None:
    """A text naming a part of ``block``'s domain that no iteration of the outer loops
    (``ranges``) computes once its iter vars take ``intervals``, or None when all are.

    ``[lo, lo + w - 1]`` with ``lo`` affine in the loops covers one contiguous range when,
    sorted by coefficient, each ``c_k`` is at most the length covered by the smaller ones
    (``w`` to start with); that range must contain the domain. A non-affine ``lo``
    (a clipped tile) falls back to the hull of the interval over the loops.
    """
    for iv, (low, high) in zip(block.iter_vars, intervals, strict=True):
        dom = int_domain(iv)
        if dom is None:
            continue
        affine = _affine_outer(low, ranges)
        width_min = int_bounds(simplify(high - low + 1, ranges), ranges)[0]
        if affine is not None and width_min is not None:
            start, covered = affine[0], width_min
            for coeff, extent in sorted(affine[1]):
                if coeff > covered:
                    return f"{iv.var.name} = {start + covered}"  # the first gap
                covered += coeff * (extent - 1)
            if start > dom[0]:
                return f"{iv.var.name} = {dom[0]}"
            if start + covered - 1 < dom[1]:
                return f"{iv.var.name} = {start + covered}"
            continue
        first, _ = int_bounds(low, ranges)
        _, last = int_bounds(high, ranges)
        if first is None or last is None or first > dom[0] or last < dom[1]:
            return f"some {iv.var.name} in [{dom[0]}, {dom[1]}]"
    return None


def linear_coefficients(expr: PrimExpr, ranges: IntRanges) -> dict[Var, int] | None:
    """The coefficient of each loop variable of ``ranges`` in the affine ``expr``, or None
    when ``expr`` is not affine in them."""
    expr = simplify(expr, ranges)
    form = linear_form(expr, expr.dtype)
    if any(not isinstance(t, Var) or t not in ranges for t in form.terms):
        return None
    return dict(form.terms)
