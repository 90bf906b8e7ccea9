"""Reading one index as digits of a loop variable ``l`` plus outer terms plus a bounded rest
(``Form``), the step of the race analysis that turns an index into numbers
(``workbench.ir.dependence.overlap``).

An index ``e`` (in loop variables) is read as a linear form over *digits* of ``l`` (the
``l // a % b`` pieces that ``fuse`` creates: ``l = g0 + 16 * g1``), the variables of the
loops around ``l``'s loop (equal in both iterations compared: they cancel) and a bounded
remainder (the loops inside, independent in the two iterations; non-linear terms by their
interval bounds). ``T.where`` conjuncts bounding a sum narrow it to a variable of the
narrower range (``narrowed``). Anything that cannot be read raises ``Unreadable``.
"""

from __future__ import annotations

import dataclasses
import math

from workbench.ir import (
    GE,
    GT,
    LE,
    LT,
    FloorDiv,
    FloorMod,
    IntImm,
    IRMapper,
    PrimExpr,
    Var,
    collect,
    const_value,
    expr_vars,
)
from workbench.ir.arith import int_bounds, simplify
from workbench.ir.arith.linear import as_digit, from_linear, linear_form
from workbench.ir.dependence.access import Access, Bounds


class ReplaceExprs(IRMapper):
    def __init__(self, mapping: dict[PrimExpr, Var]):
        self.mapping = mapping

    def visit(self, node):
        if isinstance(node, PrimExpr) and node in self.mapping:
            return self.mapping[node]
        return super().visit(node)


def narrowed(access: Access, l_var: Var, ranges) -> tuple[dict[PrimExpr, Var], dict]:
    """Sub-expressions the ``T.where`` bounds (``f0 * 3 + f1 < 20``), each replaced by a
    fresh variable of the narrower range, so ``(f0 * 3 + f1) // 10`` is known to be 0 or 1;
    a bound on a lone loop variable (``f0 < 1``) narrows that variable's range instead
    (replacing it would hide the sums it is part of)."""
    from workbench.ir.expr_text import expr_text

    mapping: dict[PrimExpr, Var] = {}
    extra: dict[Var, tuple[int, int]] = {}
    for cond in access.predicate:
        if not isinstance(cond, (LT, LE, GT, GE)):
            continue
        expr, bound = cond.a, const_value(cond.b)
        if not isinstance(bound, int) or l_var in expr_vars(expr) or not expr_vars(expr):
            continue
        if isinstance(expr, Var):  # a bound on one loop variable narrows its own range
            lo, hi = extra.get(expr, ranges.get(expr, (None, None)))
        else:
            lo, hi = extra[mapping[expr]] if expr in mapping else int_bounds(expr, ranges)
        if isinstance(cond, LT):
            hi = bound - 1 if hi is None else min(hi, bound - 1)
        elif isinstance(cond, LE):
            hi = bound if hi is None else min(hi, bound)
        elif isinstance(cond, GT):
            lo = bound + 1 if lo is None else max(lo, bound + 1)
        else:
            lo = bound if lo is None else max(lo, bound)
        if lo is None or hi is None:
            continue
        if isinstance(expr, Var):
            extra[expr] = (lo, hi)
            continue
        # named by the sum itself: one sum is one variable in both accesses, never two
        var = mapping[expr] if expr in mapping else Var(f"where({expr_text(expr)})", expr.dtype)
        mapping[expr], extra[var] = var, (lo, hi)
    return mapping, extra



# ---------------------------------------------------------------------------------------
# Reading one index as digits of l + outer terms + bounded rest
# ---------------------------------------------------------------------------------------


class Unreadable(Exception):
    """An index the analysis cannot read as a function of the loop's digits."""


@dataclasses.dataclass
class Form:
    """``sum(digits[(a, b)] * (l // a % b)) + sum(outer[t] * t) + const + rest``; ``rest`` is
    always a multiple of ``step`` (0: no rest terms)."""

    digits: dict[tuple[int, int | None], int]
    outer: dict[PrimExpr, int]
    const: int
    rest: Bounds
    step: int = 0
    inner: dict[PrimExpr, int] = dataclasses.field(default_factory=dict)
    """The rest term by term (``exact``: nothing else is in ``rest``)."""
    exact: bool = True



def add_bounds(a: Bounds, b: Bounds) -> Bounds:
    lo = None if a[0] is None or b[0] is None else a[0] + b[0]
    hi = None if a[1] is None or b[1] is None else a[1] + b[1]
    return lo, hi


def scale_bounds(a: Bounds, c: int) -> Bounds:
    lo = None if a[0] is None else a[0] * c
    hi = None if a[1] is None else a[1] * c
    return (lo, hi) if c >= 0 else (hi, lo)


def _pos(expr: PrimExpr) -> int | None:
    return expr.value if isinstance(expr, IntImm) and expr.value > 0 else None


def split_l(expr: PrimExpr, l_var: Var) -> tuple[int, PrimExpr]:
    """``(c, rest)`` with ``expr == c * l + rest`` and ``rest`` free of ``l``; Unreadable else."""
    form = linear_form(expr, expr.dtype)
    coeff, rest = 0, IntImm(form.const, expr.dtype)
    for term, c in form.terms.items():
        if term == l_var:
            coeff += c
        elif l_var in expr_vars(term):
            raise Unreadable(expr)
        else:
            rest = rest + term * IntImm(c, expr.dtype) if c != 1 else rest + term
    return coeff, rest


def _substitute_sum(form, bounded: PrimExpr, var: Var, ranges):
    """``form`` with a multiple ``k * bounded`` of a ``T.where``-bounded linear sum replaced
    by ``k * var`` (``i_0 + i_1_0 * 2 + i_1_1`` with ``i_1_0 * 2 + i_1_1 < 1``)."""
    part = linear_form(simplify(bounded, ranges), bounded.dtype)
    if not part.terms:
        return form
    ratios = set()
    for term, coeff in part.terms.items():
        have = form.terms.get(term, 0)
        if have == 0 or have % coeff:
            return form
        ratios.add(have // coeff)
    if len(ratios) != 1:
        return form
    (k,) = ratios
    terms = {t: c for t, c in form.terms.items() if t not in part.terms}
    terms[var] = terms.get(var, 0) + k
    return type(form)(terms, form.const - k * part.const)


def read_index(
    expr: PrimExpr, l_var: Var, outer: set[Var], ranges: dict[Var, tuple[int, int]],
    narrow: dict[PrimExpr, Var] | None = None,
) -> Form:
    """Read an index (in loop variables) as a ``Form`` relative to loop variable ``l_var``;
    ``narrow`` maps ``T.where``-bounded sums to variables of their narrower ranges."""
    if collect(expr, lambda n: not isinstance(n, PrimExpr)):
        raise Unreadable(expr)  # a buffer load in an index: data-dependent
    expr = simplify(expr, ranges)
    form = linear_form(expr, expr.dtype)
    for bounded, var in (narrow or {}).items():
        form = _substitute_sum(form, bounded, var, ranges)
    result = Form({}, {}, form.const, (0, 0))
    for term, coeff in form.terms.items():
        used = expr_vars(term)
        if l_var not in used:
            if used <= outer:
                result.outer[term] = result.outer.get(term, 0) + coeff
            else:
                result.rest = add_bounds(result.rest, scale_bounds(int_bounds(term, ranges), coeff))
                result.step = math.gcd(result.step, coeff)
                result.inner[term] = result.inner.get(term, 0) + coeff
            continue
        for key, c, rest in _digit_terms(term, l_var, ranges):
            result.digits[key] = result.digits.get(key, 0) + c * coeff
            result.rest = add_bounds(result.rest, scale_bounds(rest, coeff))
            if rest != (0, 0):
                result.step = math.gcd(result.step, coeff)
                result.exact = False
    return result


def _digit_terms(term: PrimExpr, l_var: Var, ranges) -> list[tuple[tuple, int, Bounds]]:
    """``[(digit key, coefficient, rest bounds)]`` for a term that uses ``l``."""
    if term == l_var:
        return [((1, None), 1, (0, 0))]
    x, a, b = as_digit(term)
    if x == l_var:
        return [((a, b), 1, (0, 0))]
    # (c*l + rest) // a  ==  (c/a)*l + rest // a   when a divides c
    if isinstance(term, FloorDiv) and _pos(term.b):
        a = term.b.value
        c, rest = split_l(term.a, l_var)
        if c % a == 0:
            return [((1, None), c // a, int_bounds(FloorDiv(rest, term.b), ranges))]
        # a split of a fused loop: (c*l + r) // a  ==  l // (a/c)  when c divides a, 0 <= r < c
        if c > 0 and a % c == 0 and _within(rest, c, ranges):
            return [((a // c, None), 1, (0, 0))]
    # (c*l + rest) % a  ==  rest % a   when a divides c
    if isinstance(term, FloorMod) and _pos(term.b):
        a = term.b.value
        c, rest = split_l(term.a, l_var)
        if c % a == 0:
            return [((1, None), 0, (0, a - 1))]
        # (c*l + r) % a  ==  (l % (a/c)) * c + r  when c divides a, 0 <= r < c
        if c > 0 and a % c == 0 and _within(rest, c, ranges):
            return [((1, a // c), c, int_bounds(rest, ranges))]
    # (c*l + rest) % a  ==  c*l + rest % a  and  (c*l + rest) // a  ==  rest // a  when
    # rest is a multiple of some m dividing a with 0 <= c*l < m (no wrap-around: the
    # lanes of a vectorized loop inside a group, e.g. (tx * 4 + v) % 32 with v < 4)
    if isinstance(term, (FloorMod, FloorDiv)) and _pos(term.b):
        a = term.b.value
        c, rest = split_l(term.a, l_var)
        lo, hi = ranges.get(l_var, (None, None))
        m = math.gcd(_known_factor(rest), a)
        if c > 0 and lo is not None and lo >= 0 and c * hi < m:
            if isinstance(term, FloorMod):
                return [((1, None), c, int_bounds(FloorMod(rest, term.b), ranges))]
            return [((1, None), 0, int_bounds(FloorDiv(rest, term.b), ranges))]
    raise Unreadable(term)


def _known_factor(expr: PrimExpr) -> int:
    """A number ``expr`` is always a multiple of (0: it is 0), from its linear form: the
    gcd of the constant and of each coefficient times what its term is a multiple of."""
    form = linear_form(expr, expr.dtype)
    factor = abs(form.const)
    for term, coeff in form.terms.items():
        inner = 1
        if isinstance(term, FloorMod) and _pos(term.b):
            inner = math.gcd(_known_factor(term.a), term.b.value)
        factor = math.gcd(factor, abs(coeff) * inner)
    return factor


def _within(rest: PrimExpr, c: int, ranges) -> bool:
    """Whether ``0 <= rest < c`` under ``ranges``."""
    lo, hi = int_bounds(rest, ranges)
    return lo is not None and hi is not None and lo >= 0 and hi < c



def sums_replaced(expr: PrimExpr, mapping: dict[PrimExpr, Var], ranges) -> PrimExpr:
    """``expr`` with every multiple of a bounded sum of ``mapping`` replaced by ``k`` times
    the sum's variable (``_substitute_sum`` on its linear form, rebuilt)."""
    form = linear_form(expr, expr.dtype)
    for bounded, var in mapping.items():
        form = _substitute_sum(form, bounded, var, ranges)
    return from_linear(form, expr.dtype)


class NarrowInside(IRMapper):
    """Each floordiv/floormod operand with a multiple of a ``T.where``-bounded sum replaced
    by the sum's variable (``(f0 * 8 + f1 * 4 + f2) // 10`` with ``f0 * 2 + f1 < 15`` reads
    as ``(w * 4 + f2) // 10``, ``w`` in ``[0, 14]``): for bounds only."""

    def __init__(self, mapping: dict[PrimExpr, Var], ranges):
        self.mapping, self.ranges = mapping, ranges

    def visit(self, node):
        if isinstance(node, PrimExpr) and node in self.mapping:
            return self.mapping[node]
        if isinstance(node, (FloorDiv, FloorMod)):
            operand = simplify(self.visit(node.a), self.ranges)
            return type(node)(sums_replaced(operand, self.mapping, self.ranges), node.b)
        return super().visit(node)


