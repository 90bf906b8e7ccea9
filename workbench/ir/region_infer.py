"""Region inference for moving a block under a loop (TVM's compute_at region analysis).

Pure IR analysis: no schedule imports. The compute location primitives ask three
questions, all answered here with interval and affine reasoning (never by enumerating
points, so the answers do not depend on the problem size):

* **What is accessed at one iteration of a loop?** ``read_intervals`` /
  ``write_intervals`` *relax* a block's accesses over the loops between the target loop
  and the block: each such loop variable is replaced by its range, giving per buffer
  dimension a *symbolic interval* ``(lo, hi)`` (inclusive) in the loops at and around the
  target. ``A[i_0 * 4 + i_1]`` under ``i_0`` needs ``A[i_0 * 4 : i_0 * 4 + 3]``;
  ``A[(i_0 * 8 + i_1) // 16]`` (``i_1 < 8``) needs ``A[i_0 // 2]``.
* **Which iterations of the moved block give that region?** ``solve_iter_domains``
  inverts the block's own access indices: ``v + c``, ``c - v``, ``v * s + c`` and the
  mixed-radix digits of one iter var (``v // 16``, ``v % 16``, ``v % 4 // 2``) each give
  the iter var an interval, intersected with its domain.
* **Is each element computed exactly once, and all of them?** See ``region_cover``.
"""

from __future__ import annotations

from workbench.ir.arith import int_bounds, prove, simplify
from workbench.ir.arith.linear import linear_form
from workbench.ir.buffer import Buffer
from workbench.ir.expr import (
    EQ,
    GE,
    LE,
    Add,
    BufferLoad,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mul,
    PrimExpr,
    Sub,
    Var,
    const_value,
)
from workbench.ir.functor import collect, expr_vars, substitute
from workbench.ir.stmt import Block, BlockRealize, BufferRegion, For, IterKind, IterVar, Stmt

Interval = tuple[PrimExpr, PrimExpr]
IntRanges = dict[Var, tuple[int, int]]

__all__ = [
    "Interval",
    "relax",
    "div_split",
    "read_intervals",
    "write_intervals",
    "hull_dims",
    "solve_iter_domains",
    "reduce_loop_among",
    "for_ancestors",
    "loops_below",
    "loop_ranges",
    "storage_relaxed_loops",
]


# ---------------------------------------------------------------------------------------
# Loops
# ---------------------------------------------------------------------------------------


def for_ancestors(ancestors: tuple[Stmt, ...]) -> list[For]:
    return [a for a in ancestors if isinstance(a, For)]


def loops_below(ancestors: tuple[Stmt, ...], target: For) -> list[For]:
    """The loops in ``ancestors`` strictly inside ``target``."""
    start = next(i for i, a in enumerate(ancestors) if a is target)
    return [a for a in ancestors[start + 1 :] if isinstance(a, For)]


def loops_to(ancestors: tuple[Stmt, ...], target: For) -> list[For]:
    """The loops in ``ancestors`` down to ``target`` (included)."""
    stop = next(i for i, a in enumerate(ancestors) if a is target)
    return [a for a in ancestors[: stop + 1] if isinstance(a, For)]


def loop_ranges(loops: list[For]) -> IntRanges:
    """Inclusive value ranges of loop variables with constant bounds."""
    ranges = {}
    for loop in loops:
        lo, ext = const_value(loop.min), const_value(loop.extent)
        if isinstance(lo, int) and isinstance(ext, int) and ext > 0:
            ranges[loop.loop_var] = (lo, lo + ext - 1)
    return ranges


def int_domain(iv: IterVar) -> tuple[int, int] | None:
    lo, ext = const_value(iv.dom.min), const_value(iv.dom.extent)
    if isinstance(lo, int) and isinstance(ext, int):
        return lo, lo + ext - 1
    return None


def domain(iv: IterVar) -> Interval:
    return iv.dom.min, iv.dom.min + iv.dom.extent - 1


# ---------------------------------------------------------------------------------------
# Symbolic intervals
# ---------------------------------------------------------------------------------------


def _int(value: int, dtype: str) -> IntImm:
    return IntImm(value, dtype)


def div_split(expr: PrimExpr, divisor: int, bounds: IntRanges) -> tuple[PrimExpr, PrimExpr] | None:
    """``(q, r)`` with ``expr == q * divisor + r`` and ``0 <= r < divisor`` provable under
    ``bounds``, so that ``expr // divisor == q`` and ``expr % divisor == r``; None if the
    affine form of ``expr`` does not give one.

    A term ``c * t`` goes to ``q`` when ``divisor`` divides ``c``; when ``c`` divides
    ``divisor`` (``divisor = c * m``) it is split as ``(t // m) * divisor + c * (t % m)``
    (TVM's trick for ``(i * 8 + 7) // 16 == i // 2``); otherwise it stays in ``r``.
    """
    expr = simplify(expr, bounds)
    dtype = expr.dtype
    form = linear_form(expr, dtype)
    quotient: PrimExpr = _int(0, dtype)
    rest: PrimExpr = _int(form.const, dtype)
    for term, coeff in form.terms.items():
        if coeff % divisor == 0:
            quotient = quotient + term * _int(coeff // divisor, dtype)
        elif coeff > 0 and divisor % coeff == 0:
            m = divisor // coeff
            quotient = quotient + FloorDiv(term, _int(m, dtype))
            rest = rest + FloorMod(term, _int(m, dtype)) * _int(coeff, dtype)
        else:
            rest = rest + term * _int(coeff, dtype)
    low, high = int_bounds(rest, bounds)
    if low is None or high is None or low // divisor != high // divisor:
        return None
    k = low // divisor
    return (
        simplify(quotient + _int(k, dtype), bounds),
        simplify(rest - _int(k * divisor, dtype), bounds),
    )


def _relax_div(expr, inner: Interval, bounds: IntRanges) -> Interval:
    divisor = const_value(expr.b)
    lo_split, hi_split = div_split(inner[0], divisor, bounds), div_split(inner[1], divisor, bounds)
    if isinstance(expr, FloorDiv):
        lo = lo_split[0] if lo_split else FloorDiv(inner[0], expr.b)
        hi = hi_split[0] if hi_split else FloorDiv(inner[1], expr.b)
        return simplify(lo, bounds), simplify(hi, bounds)
    if lo_split and hi_split and simplify(lo_split[0] - hi_split[0], bounds) == _int(
        0, expr.dtype
    ):
        return lo_split[1], hi_split[1]  # one quotient: the remainders do not wrap
    return _int(0, expr.dtype), _int(divisor - 1, expr.dtype)


def relax(
    expr: PrimExpr, ranges: dict[Var, Interval], bounds: IntRanges | None = None
) -> Interval | None:
    """``(lo, hi)`` of ``expr`` when each variable of ``ranges`` takes any value in its
    interval; None when that cannot be bounded (a data-dependent or non-linear index).

    ``bounds`` are integer ranges of the other variables (the loops at and around the
    target loop); they decide ``//`` and ``%`` of the relaxed bounds.
    """
    bounds = bounds or {}
    if collect(expr, lambda n: isinstance(n, BufferLoad)):
        return None  # a data-dependent index
    if not expr_vars(expr) & ranges.keys():
        return expr, expr
    if isinstance(expr, Var):
        return ranges[expr]
    if isinstance(expr, (Add, Sub, Min, Max)):
        a, b = relax(expr.a, ranges, bounds), relax(expr.b, ranges, bounds)
        if a is None or b is None:
            return None
        if isinstance(expr, Add):
            return a[0] + b[0], a[1] + b[1]
        if isinstance(expr, Sub):
            return a[0] - b[1], a[1] - b[0]
        op = type(expr)
        return op(a[0], b[0]), op(a[1], b[1])
    if isinstance(expr, Mul):
        for side, other in ((expr.a, expr.b), (expr.b, expr.a)):
            factor = const_value(other)
            if isinstance(factor, int):
                inner = relax(side, ranges, bounds)
                if inner is None:
                    return None
                lo, hi = inner[0] * other, inner[1] * other
                return (lo, hi) if factor >= 0 else (hi, lo)
        return None
    divisor = const_value(expr.b) if isinstance(expr, (FloorDiv, FloorMod)) else None
    if isinstance(divisor, int) and divisor > 0:
        inner = relax(expr.a, ranges, bounds)
        if inner is None:
            return None
        return _relax_div(expr, inner, bounds)
    return None


def _loop_intervals(loops: list[For]) -> dict[Var, Interval] | None:
    intervals: dict[Var, Interval] = {}
    for loop in loops:
        if expr_vars(loop.min) & intervals.keys() or expr_vars(loop.extent) & intervals.keys():
            return None  # bounds that depend on another relaxed loop
        intervals[loop.loop_var] = (loop.min, loop.min + loop.extent - 1)
    return intervals


def _access_intervals(
    realize: BlockRealize,
    ancestors: tuple[Stmt, ...],
    target: For,
    regions: tuple[BufferRegion, ...],
    wanted: set,
) -> dict[Buffer, list[list[Interval]] | None]:
    """Per wanted buffer, one list of per-dimension intervals for each access region of the
    block, with the loops between ``target`` and the block relaxed (None: some access cannot
    be bounded, or uses a variable that is not a loop around the block)."""
    bindings = {
        iv.var: v for iv, v in zip(realize.block.iter_vars, realize.iter_values, strict=True)
    }
    below = loops_below(ancestors, target)
    bounds = loop_ranges(loops_to(ancestors, target))
    known = {loop.loop_var for loop in for_ancestors(ancestors)}
    found: dict[Buffer, list[list[Interval]] | None] = {}
    for region in regions:
        if region.buffer not in wanted:
            continue
        relaxed_loops = _loop_intervals(
            below + storage_relaxed_loops(region.buffer.scope, loops_to(ancestors, target))
        )
        dims: list[Interval] | None = []
        for rng in region.region:
            extent = const_value(rng.extent)
            start = substitute(rng.min, bindings)
            interval = None
            if relaxed_loops is not None and not expr_vars(start) - known:
                interval = relax(start, relaxed_loops, bounds)
            if interval is None or not isinstance(extent, int):
                dims = None
                break
            dims.append((interval[0], interval[1] + (extent - 1)))
        accesses = found.setdefault(region.buffer, [])
        if dims is None or accesses is None:
            found[region.buffer] = None
        else:
            accesses.append(dims)
    return found


def storage_relaxed_loops(scope: str, outer: list[For]) -> list[For]:
    """The loops among ``outer`` (the target loop and those around it) over which an access
    region of a buffer in ``scope`` is relaxed as well (TVM's ``CanRelaxStorageUnderThread``):
    a ``shared`` buffer is one buffer for all the threads of a block, so what one iteration
    of the target loop needs is what *every thread* of the block needs there: the
    ``threadIdx`` loops are relaxed (and ``vthread`` ones, should the DSL get them).
    ``local`` buffers are per thread, and ``global`` ones are not relaxed (TVM relaxes
    nothing more for them either)."""
    if scope != "shared":
        return []
    return [
        loop
        for loop in outer
        if (loop.thread_binding or "").startswith(("threadIdx", "vthread"))
    ]


def read_intervals(realize, ancestors, target, wanted) -> dict[Buffer, list | None]:
    """Per buffer of ``wanted`` the block reads: one list of per-dimension intervals for each
    read region, relaxed over the loops between ``target`` and the block."""
    return _access_intervals(realize, ancestors, target, realize.block.reads, wanted)


def write_intervals(realize, ancestors, target, wanted) -> dict[Buffer, list | None]:
    """Like ``read_intervals``, for the block's writes."""
    return _access_intervals(realize, ancestors, target, realize.block.writes, wanted)


def fold_bound(op, values: list[PrimExpr], ranges: IntRanges) -> PrimExpr:
    """min (op=Min) or max (op=Max) of ``values``, decided by proofs where possible."""
    result: list[PrimExpr] = []
    for value in values:
        value = simplify(value, ranges)
        keep = True
        for i, other in enumerate(result):
            if other == value:
                keep = False
                break
            better = LE(value, other) if op is Min else GE(value, other)
            worse = GE(value, other) if op is Min else LE(value, other)
            if prove(better, ranges):
                result[i] = value
                keep = False
                break
            if prove(worse, ranges):
                keep = False
                break
        if keep:
            result.append(value)
    bound = result[0]
    for other in result[1:]:
        bound = op(bound, other)
    return bound


def _clip(interval: Interval, low: PrimExpr, high: PrimExpr, ranges: IntRanges) -> Interval:
    """``interval`` intersected with ``[low, high]`` where a side provably sticks out, as
    long as that keeps a constant width (else the interval is kept and the moved block
    gets a ``T.where``, as TVM does)."""
    lo, hi = interval
    new_lo = low if prove(LE(lo, low), ranges) else lo
    new_hi = high if prove(GE(hi, high), ranges) else hi
    if (new_lo, new_hi) == (lo, hi):
        return interval
    if const_value(simplify(hi - lo, ranges)) is not None and const_value(
        simplify(new_hi - new_lo, ranges)
    ) is None:
        return interval
    return new_lo, new_hi


def hull_dims(
    accesses: list[list[Interval]], ranges: IntRanges, shape: tuple | None = None
) -> list[Interval]:
    """The hull, per dimension, of several accesses' intervals, intersected with the
    buffer's ``shape`` where an interval provably sticks out of it (an access guarded by a
    condition, e.g. the ``X[ax - 85]`` branch of a concatenation)."""
    hull = []
    for axis, intervals in enumerate(zip(*accesses, strict=True)):
        lo = fold_bound(Min, [i[0] for i in intervals], ranges)
        hi = fold_bound(Max, [i[1] for i in intervals], ranges)
        if shape is not None:
            zero = IntImm(0, lo.dtype)
            lo, hi = _clip((lo, hi), zero, IntImm(int(shape[axis]) - 1, lo.dtype), ranges)
        hull.append((lo, hi))
    return hull


# ---------------------------------------------------------------------------------------
# Inverting the moved block's accesses
# ---------------------------------------------------------------------------------------


def _affine_in(expr: PrimExpr, var_set: set[Var]) -> tuple[Var, int, PrimExpr] | None:
    """``expr`` as ``var * coeff + rest`` with one var of ``var_set`` and ``rest`` free of
    them, else None."""
    form = linear_form(simplify(expr, {}), expr.dtype)
    own = [(t, c) for t, c in form.terms.items() if expr_vars(t) & var_set]
    if len(own) != 1 or not isinstance(own[0][0], Var):
        return None
    var, coeff = own[0]
    rest: PrimExpr = IntImm(form.const, expr.dtype)
    for term, c in form.terms.items():
        if term is not var and term != var:
            rest = rest + term * IntImm(c, expr.dtype)
    return var, coeff, simplify(rest, {})


def as_digit(expr: PrimExpr) -> tuple[PrimExpr, int, int | None] | None:
    """``expr`` as the digit ``x // a % b`` (``b`` None: no modulus), also read from
    ``x % m // a``; None when it has neither ``//`` nor ``%`` by a positive constant."""
    div = const_value(expr.b) if isinstance(expr, (FloorDiv, FloorMod)) else None
    if not isinstance(div, int) or div <= 0:
        return None
    if isinstance(expr, FloorMod):
        inner = as_digit(expr.a) if isinstance(expr.a, FloorDiv) else None
        if inner is not None and inner[2] is None:
            return inner[0], inner[1], div
        return expr.a, 1, div
    inner_mod = const_value(expr.a.b) if isinstance(expr.a, FloorMod) else None
    if isinstance(inner_mod, int) and inner_mod > 0 and inner_mod % div == 0:
        return expr.a.a, div, inner_mod // div
    return expr.a, div, None


def _digits_interval(digits, dtype: str, ranges: IntRanges) -> Interval | None:
    """The hull of ``sum(a * d)`` over digits ``(a, b, lo, hi)`` of one variable, lower
    digits not mentioned taken whole; None when the digits do not form a mixed radix with
    a top (quotient) digit."""
    digits = sorted(digits, key=lambda d: d[0])
    top = digits[-1]
    if top[1] is not None:
        return None  # only remainders: the value above them is not constrained
    lo: PrimExpr = IntImm(0, dtype)
    hi: PrimExpr = IntImm(0, dtype)
    place = 1
    for a, b, d_lo, d_hi in digits:
        if place is None or a < place or a % place:
            return None  # overlapping digits
        if a > place:  # a digit nobody reads: whole
            hi = hi + IntImm(a - place, dtype)
        lo = lo + d_lo * IntImm(a, dtype)
        hi = hi + d_hi * IntImm(a, dtype)
        place = a * b if b is not None else None
    return simplify(lo, ranges), simplify(hi, ranges)


def solve_iter_domains(
    block: Block,
    regions: tuple[BufferRegion, ...],
    intervals: dict[Buffer, list[Interval]],
    ranges: IntRanges,
    *,
    exact: bool = False,
    narrow_reduce: bool = False,
) -> list[Interval] | None:
    """The interval of each iter var such that the block's accesses ``regions`` (in its iter
    vars) cover ``intervals`` (compute_at) or stay on them (``exact``, reverse).

    A spatial iter var that indexes a dimension as ``v * s + c`` (``s`` = +-1 or another
    constant) takes the dimension's interval solved for ``v``; the digits of one iter var
    (``v // 16`` and ``v % 16``) are put back together. Several dimensions give the hull
    (compute_at: computing more is harmless) or must agree (``exact``: else None). Every
    interval is intersected with the iter var's domain; iter vars indexing nothing, and
    reduce vars (unless ``narrow_reduce``: a consumer reducing over what was produced at
    one iteration, TVM's reverse_compute_at of a factorized reduction), keep their whole
    domain.
    """
    spatial = {
        iv.var
        for iv in block.iter_vars
        if iv.kind == IterKind.SPATIAL or (narrow_reduce and iv.kind == IterKind.REDUCE)
    }
    candidates: dict[Var, list[Interval]] = {}
    digits: dict[Var, list] = {}
    for region in regions:
        dims = intervals.get(region.buffer)
        if dims is None:
            continue
        for rng, (lo, hi) in zip(region.region, dims, strict=True):
            if const_value(rng.extent) != 1:
                continue
            index = simplify(rng.min, {})
            digit = as_digit(index)
            if digit is not None and expr_vars(digit[0]) and expr_vars(digit[0]) <= spatial:
                key = simplify(digit[0], {})
                digits.setdefault(key, []).append((digit[1], digit[2], lo, hi))
                continue
            found = _affine_in(index, spatial)
            if found is None or expr_vars(found[2]) & spatial:
                continue
            var, coeff, rest = found
            solved = _solve_affine(lo, hi, coeff, rest, ranges)
            if solved is not None:
                candidates.setdefault(var, []).append(solved)
    for x, x_digits in digits.items():
        solved = _digits_interval(x_digits, x.dtype, ranges)
        if solved is None:
            continue
        if isinstance(x, Var):
            candidates.setdefault(x, []).append(solved)
            continue
        top = _top_var(x, solved, block, ranges)
        if top is not None:
            candidates.setdefault(top[0], []).append(top[1])
    result = []
    for iv in block.iter_vars:
        found = [_clip(f, *domain(iv), ranges) for f in candidates.get(iv.var, [])]
        if not found:
            result.append(domain(iv))
        elif exact:
            if any(f != found[0] for f in found[1:]):
                return None
            result.append(found[0])
        else:
            result.append(
                (
                    fold_bound(Min, [f[0] for f in found], ranges),
                    fold_bound(Max, [f[1] for f in found], ranges),
                )
            )
    return result


def _top_var(x: PrimExpr, interval: Interval, block: Block, ranges) -> tuple[Var, Interval] | None:
    """For ``x = c * v + r`` (``v`` the iter var with the largest coefficient, ``r`` the
    other iter vars over their domains) in ``interval``: ``v`` in
    ``[ceil((lo - max r) / c), floor((hi - min r) / c)]``; None when ``x`` is not affine
    with positive coefficients in the block's iter vars."""
    doms = {iv.var: int_domain(iv) for iv in block.iter_vars}
    form = linear_form(x, x.dtype)
    terms = list(form.terms.items())
    if not terms or any(
        not isinstance(t, Var) or doms.get(t) is None or c <= 0 for t, c in terms
    ):
        return None
    var, coeff = max(terms, key=lambda tc: tc[1])
    r_min = form.const + sum(c * doms[t][0] for t, c in terms if t is not var)
    r_max = form.const + sum(c * doms[t][1] for t, c in terms if t is not var)
    dtype = x.dtype
    step = IntImm(coeff, dtype)
    low = FloorDiv(interval[0] - IntImm(r_max - coeff + 1, dtype), step)
    high = FloorDiv(interval[1] - IntImm(r_min, dtype), step)
    return var, (simplify(low, ranges), simplify(high, ranges))


def _solve_affine(lo, hi, coeff: int, rest: PrimExpr, ranges) -> Interval | None:
    """The values of ``v`` with ``v * coeff + rest`` in ``[lo, hi]`` (a hull)."""
    dtype = rest.dtype
    if coeff == 1:
        return simplify(lo - rest, ranges), simplify(hi - rest, ranges)
    if coeff == -1:
        return simplify(rest - hi, ranges), simplify(rest - lo, ranges)
    if coeff > 1:
        step = IntImm(coeff, dtype)
        low = FloorDiv(lo - rest + IntImm(coeff - 1, dtype), step)
        return simplify(low, ranges), simplify(FloorDiv(hi - rest, step), ranges)
    return None


def reduce_loop_among(realize: BlockRealize, loops: list[For]) -> str | None:
    """The first of ``loops`` that binds a reduce iter var of the block, else None."""
    for loop in loops:
        for iv, value in zip(realize.block.iter_vars, realize.iter_values, strict=True):
            if iv.kind == IterKind.REDUCE and loop.loop_var in expr_vars(value):
                return loop.loop_var.name
    return None


def provably_equal(a: PrimExpr, b: PrimExpr, ranges: IntRanges) -> bool:
    return a == b or prove(EQ(a, b), ranges)
