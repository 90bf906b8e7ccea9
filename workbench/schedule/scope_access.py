"""Block instances' accesses, and whether two iterations of a loop can touch one element.

The question every loop-kind legality check asks (``parallel``, ``vectorize``, the DSL's
``T.parallel``) is: *do two different iterations of loop ``L`` (in one iteration of the loops
around ``L``) touch the same element of a buffer, at least one of them writing it?* It is
answered without enumerating iterations, so the answer does not depend on problem size:

1. Each block's declared regions (``T.reads`` / ``T.writes``, in its iteration variables) are
   rewritten through the bindings of the block and of every block around it into expressions
   of loop variables (``Access``). For one dimension that is an interval
   ``[e, e + extent - 1]``.
2. Each index ``e`` is read as a linear form over *digits* of ``L``'s variable ``l`` (the
   ``l // a % b`` pieces that ``fuse`` creates: ``l = g0 + 16 * g1``), the variables of the
   loops around ``L`` (equal in both iterations: they cancel) and a bounded remainder (the
   loops inside ``L``, independent in the two iterations; non-linear terms by their interval
   bounds, ``workbench.ir.arith.int_bounds``).
3. Two iterations differ in at least one digit, ``delta_k = g_k - g_k' != 0``. A dimension in
   which the accesses overlap bounds ``sum_k a_k * delta_k`` to a small interval; when one
   coefficient outweighs the interval plus every other term, that digit must be equal in the
   two iterations. Digits are eliminated until none is left (the iterations cannot overlap:
   independent) or no dimension forces another one (a possible conflict: refused).

Anything the analysis cannot read (a data-dependent index, a loop without constant bounds, a
non-linear use of ``l``) counts as a possible conflict: it is conservative, never optimistic.
"""

from __future__ import annotations

import dataclasses
import itertools
import math

from workbench.ir import (
    GE,
    GT,
    LE,
    LT,
    And,
    Block,
    BlockRealize,
    Buffer,
    BufferRegion,
    Evaluate,
    FloorDiv,
    FloorMod,
    For,
    ForKind,
    IntImm,
    IRMapper,
    PrimExpr,
    Range,
    Stmt,
    Var,
    collect,
    const_value,
    substitute,
)
from workbench.ir.arith import int_bounds, simplify
from workbench.ir.arith.linear import as_digit, from_linear, linear_form

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


def region_text(region: BufferRegion) -> str:
    """``B[vk]``, ``A[vi:vi + 2, 0:16]``: a declared region as the DSL prints it."""
    from workbench.script.printer_expr import expr_text

    parts = []
    for rng in region.region:
        if const_value(rng.extent) == 1:
            parts.append(expr_text(rng.min))
        else:
            parts.append(f"{expr_text(rng.min)}:{expr_text(simplify(rng.min + rng.extent))}")
    return f"{region.buffer.name}[{', '.join(parts)}]"


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


class _Replace(IRMapper):
    def __init__(self, mapping: dict[PrimExpr, Var]):
        self.mapping = mapping

    def visit(self, node):
        if isinstance(node, PrimExpr) and node in self.mapping:
            return self.mapping[node]
        return super().visit(node)


def _narrowed(access: Access, l_var: Var, ranges) -> tuple[dict[PrimExpr, Var], dict]:
    """Sub-expressions the ``T.where`` bounds (``f0 * 3 + f1 < 20``), each replaced by a
    fresh variable of the narrower range, so ``(f0 * 3 + f1) // 10`` is known to be 0 or 1;
    a bound on a lone loop variable (``f0 < 1``) narrows that variable's range instead
    (replacing it would hide the sums it is part of)."""
    from workbench.script.printer_expr import expr_text

    mapping: dict[PrimExpr, Var] = {}
    extra: dict[Var, tuple[int, int]] = {}
    for cond in access.predicate:
        if not isinstance(cond, (LT, LE, GT, GE)):
            continue
        expr, bound = cond.a, const_value(cond.b)
        if not isinstance(bound, int) or l_var in _vars(expr) or not _vars(expr):
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


def _vars(expr: PrimExpr) -> set[Var]:
    return set(collect(expr, lambda n: isinstance(n, Var)))


def _add(a: Bounds, b: Bounds) -> Bounds:
    lo = None if a[0] is None or b[0] is None else a[0] + b[0]
    hi = None if a[1] is None or b[1] is None else a[1] + b[1]
    return lo, hi


def _scale(a: Bounds, c: int) -> Bounds:
    lo = None if a[0] is None else a[0] * c
    hi = None if a[1] is None else a[1] * c
    return (lo, hi) if c >= 0 else (hi, lo)


def _pos(expr: PrimExpr) -> int | None:
    return expr.value if isinstance(expr, IntImm) and expr.value > 0 else None


def _split_l(expr: PrimExpr, l_var: Var) -> tuple[int, PrimExpr]:
    """``(c, rest)`` with ``expr == c * l + rest`` and ``rest`` free of ``l``; Unreadable else."""
    form = linear_form(expr, expr.dtype)
    coeff, rest = 0, IntImm(form.const, expr.dtype)
    for term, c in form.terms.items():
        if term == l_var:
            coeff += c
        elif l_var in _vars(term):
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
        used = _vars(term)
        if l_var not in used:
            if used <= outer:
                result.outer[term] = result.outer.get(term, 0) + coeff
            else:
                result.rest = _add(result.rest, _scale(int_bounds(term, ranges), coeff))
                result.step = math.gcd(result.step, coeff)
                result.inner[term] = result.inner.get(term, 0) + coeff
            continue
        for key, c, rest in _digit_terms(term, l_var, ranges):
            result.digits[key] = result.digits.get(key, 0) + c * coeff
            result.rest = _add(result.rest, _scale(rest, coeff))
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
        c, rest = _split_l(term.a, l_var)
        if c % a == 0:
            return [((1, None), c // a, int_bounds(FloorDiv(rest, term.b), ranges))]
        # a split of a fused loop: (c*l + r) // a  ==  l // (a/c)  when c divides a, 0 <= r < c
        if c > 0 and a % c == 0 and _within(rest, c, ranges):
            return [((a // c, None), 1, (0, 0))]
    # (c*l + rest) % a  ==  rest % a   when a divides c
    if isinstance(term, FloorMod) and _pos(term.b):
        a = term.b.value
        c, rest = _split_l(term.a, l_var)
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
        c, rest = _split_l(term.a, l_var)
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


# ---------------------------------------------------------------------------------------
# Digits of l and the elimination
# ---------------------------------------------------------------------------------------


def _digit_chain(keys: set[tuple[int, int | None]], extent: int | None) -> list[int] | None:
    """Radix boundaries ``1 = r0 < r1 < ...`` (each dividing the next) for the digit keys."""
    bounds = {1}
    for a, b in keys:
        bounds.add(a)
        if b is not None:
            bounds.add(a * b)
    if extent is not None:
        bounds = {r for r in bounds if r < extent} | {1}
    chain = sorted(bounds)
    if any(high % low for low, high in zip(chain, chain[1:], strict=False)):
        return None
    return chain


def _digit_ranges(chain: list[int], extent: int | None) -> list[int | None]:
    """Largest |g_k - g_k'| per digit: ``r_{k+1}/r_k - 1``, the top one from the extent."""
    spans: list[int | None] = [high // low - 1 for low, high in zip(chain, chain[1:], strict=False)]
    spans.append(None if extent is None else (extent - 1) // chain[-1])
    return spans


def _key_coefficients(key: tuple[int, int | None], chain: list[int]) -> dict[int, int]:
    """``l // a % b`` as ``sum(coeff_k * g_k)`` over the chain's digits."""
    a, b = key
    top = None if b is None else a * b
    return {k: r // a for k, r in enumerate(chain) if r >= a and (top is None or r < top)}


def _expand(form: Form, chain: list[int]) -> dict[int, int]:
    coeffs: dict[int, int] = {}
    for key, c in form.digits.items():
        for k, kc in _key_coefficients(key, chain).items():
            coeffs[k] = coeffs.get(k, 0) + c * kc
    return coeffs


def _outer_rest(first: Form, second: Form, ranges) -> Bounds:
    """Bounds of ``outer(first) - outer(second)`` for equal outer variables."""
    total: Bounds = (0, 0)
    for term in set(first.outer) | set(second.outer):
        diff = first.outer.get(term, 0) - second.outer.get(term, 0)
        if diff:
            total = _add(total, _scale(int_bounds(term, ranges), diff))
    return total


def _forced(coeffs: dict[int, int], spans: list[int | None], free: set[int], window: Bounds) -> set:
    """Digits that must be equal for ``sum(coeffs[k] * delta_k)`` to land in ``window``."""
    forced = set()
    if window[0] is None or window[1] is None:
        return forced
    reach = max(abs(window[0]), abs(window[1]))
    active = sorted((k for k in free if coeffs.get(k)), key=lambda k: -abs(coeffs[k]))
    for position, k in enumerate(active):
        others = 0
        for j in active[position + 1:]:
            if spans[j] is None:
                return forced
            others += abs(coeffs[j]) * spans[j]
        if abs(coeffs[k]) - others > reach:
            forced.add(k)
        else:
            return forced
    return forced


def _disjoint_anyway(coeffs, spans, free, window: Bounds) -> bool:
    """Whether no choice of the free digits' differences reaches ``window``."""
    span = 0
    for k in free:
        if coeffs.get(k):
            if spans[k] is None:
                return False
            span += abs(coeffs[k]) * spans[k]
    lo, hi = window
    return (lo is not None and lo > span) or (hi is not None and hi < -span)


def _modular_window(f1: Form, f2: Form, c1, c2, spans, window: Bounds) -> Bounds | None:
    """For point accesses: every term of ``e1 - e2`` but ``L = sum(c1_k * delta_k)`` is a
    multiple of ``g``; when ``|L| < g`` always, the two touch one element only if ``L == 0``
    (``2 * f + l`` with ``f`` an inner loop and ``l`` in ``[0, 1]``). ``None``: never."""
    g = math.gcd(f1.step, f2.step, f1.const - f2.const)
    for term in set(f1.outer) | set(f2.outer):
        g = math.gcd(g, f1.outer.get(term, 0) - f2.outer.get(term, 0))
    for k in set(c1) | set(c2):
        g = math.gcd(g, c1.get(k, 0) - c2.get(k, 0))
    if g <= 1 or any(spans[k] is None for k in c1 if c1[k]):
        return window
    if sum(abs(c) * spans[k] for k, c in c1.items()) >= g:
        return window
    lo, hi = window
    if (lo is not None and lo > 0) or (hi is not None and hi < 0):
        return None
    return (0, 0)


def _sums_replaced(expr: PrimExpr, mapping: dict[PrimExpr, Var], ranges) -> PrimExpr:
    """``expr`` with every multiple of a bounded sum of ``mapping`` replaced by ``k`` times
    the sum's variable (``_substitute_sum`` on its linear form, rebuilt)."""
    form = linear_form(expr, expr.dtype)
    for bounded, var in mapping.items():
        form = _substitute_sum(form, bounded, var, ranges)
    return from_linear(form, expr.dtype)


class _NarrowInside(IRMapper):
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
            return type(node)(_sums_replaced(operand, self.mapping, self.ranges), node.b)
        return super().visit(node)


def _flattened(access: Access, ranges, order: tuple[int, ...] | None = None) -> Access | None:
    """A point access to a constant-shape buffer, proven in bounds, as one index with the
    dimensions in ``order`` (outermost first; default row-major: ``x // 12, x % 12``
    becomes ``x``; ``(1, 0)``: column-major, for a fused loop of swapped axes), or ``None``."""
    shape = [dim if isinstance(dim, int) else const_value(dim) for dim in access.buffer.shape]
    if not shape or not all(isinstance(n, int) for n in shape):
        return None
    # the T.where guards bound the executed iterations (a split that does not divide)
    mapping, extra = _narrowed(access, Var("no_loop", "int32"), ranges)
    guarded = {**ranges, **extra}
    order = tuple(range(len(shape))) if order is None else order
    dims = [(access.region[d], shape[d]) for d in order]
    flat, stride, outermost_unproven = None, 1, False
    for position, ((start, extent), size) in enumerate(reversed(dims)):
        if const_value(extent) != 1:
            return None
        lo, hi = int_bounds(_NarrowInside(mapping, ranges).visit(start) if mapping else start,
                            guarded)
        if lo is None or hi is None or lo < 0 or hi >= size:
            if position != len(dims) - 1:
                return None
            outermost_unproven = True  # proven below through the whole flat index
        term = start if stride == 1 else start * IntImm(stride, start.dtype)
        flat = term if flat is None else term + flat
        stride *= size
    flat = simplify(flat, ranges)
    # the inner dimensions in bounds and the flat index in [0, size): the outermost one is
    # in bounds too (a guard ``f0 * 40 + f1 * 2 + f2 < 60`` bounds the flat index whole)
    if outermost_unproven and not _in_range(flat, mapping, guarded, ranges, stride):
        return None
    one = IntImm(1, flat.dtype)
    return dataclasses.replace(access, region=((flat, one),))


def _in_range(expr: PrimExpr, mapping, guarded, ranges, size: int) -> bool:
    """Whether ``0 <= expr < size``, with the ``T.where``-bounded sums of ``mapping`` read as
    their narrowed variables."""
    lo, hi = int_bounds(_sums_replaced(expr, mapping, ranges), guarded)
    return lo is not None and hi is not None and lo >= 0 and hi < size


def iterations_overlap(first: Access, second: Access, loop: For) -> bool:
    """Whether ``first`` in one iteration of ``loop`` and ``second`` in another (the loops
    around ``loop`` at the same values) may touch one element. Conservative: True when unsure.
    """
    if first.buffer != second.buffer:
        return False
    if not _overlap(first, second, loop):
        return False
    if not _overlap_through_guarded_sums(first, second, loop):
        return False
    ranges = _ranges(first.loops + second.loops)
    if len(first.region) == 1:
        return True
    # one-iteration loops pinned first: a guard ``f0 * 90 + f1 * 15 + f2 < 60`` with ``f0``
    # in [0, 0] bounds the ``f1 * 15 + f2`` of the indices
    pinned1, pinned2 = _fix_unit_loops(first, ranges), _fix_unit_loops(second, ranges)
    for order in _dimension_orders(len(first.region)):
        flat1, flat2 = _flattened(pinned1, ranges, order), _flattened(pinned2, ranges, order)
        if flat1 is None or flat2 is None:
            continue  # not proven in bounds in this order
        if not (_overlap(flat1, flat2, loop)
                and _overlap_through_guarded_sums(flat1, flat2, loop)):
            return False
    return True


def _dimension_orders(ndim: int) -> list[tuple[int, ...]]:
    """Row-major first, then column-major, then (up to 3 dimensions) every other order."""
    row, column = tuple(range(ndim)), tuple(reversed(range(ndim)))
    orders = [row, column] if ndim > 1 else [row]
    if ndim <= 3:
        orders += [p for p in itertools.permutations(row) if p not in orders]
    return orders


# ---------------------------------------------------------------------------------------
# A T.where-bounded sum holding l, read as one digit
# ---------------------------------------------------------------------------------------


def _overlap_through_guarded_sums(first: Access, second: Access, loop: For) -> bool:
    """False when a ``T.where`` conjunct ``S < bound`` shared by both accesses, with
    ``S = c * l + inner`` (``c > 0``), proves the iterations disjoint in two steps:

    1. with ``S`` read as a variable ``w`` of the guarded range (a loop of its own in
       ``l``'s place), two instances with different ``w`` never touch one element;
    2. two iterations of ``l`` never give one value of ``S``.

    So one element means one ``w`` means one ``l``. This is the non-dividing split of a
    fused loop moved outside its sibling (``f0 * 3 + (l * 2 + r)`` under ``l * 2 + r < 3``):
    the guarded sum is a digit of radix 3 although ``l``'s own coefficient, 2, is not.
    Conservative: True whenever a step cannot be shown."""
    l_var = loop.loop_var
    ranges = _ranges(first.loops + second.loops)
    for cond in first.predicate:
        if cond not in second.predicate or not isinstance(cond, (LT, LE)):
            continue
        bound = const_value(cond.b)
        if not isinstance(bound, int):
            continue
        total = simplify(cond.a, ranges)
        try:
            coeff, _ = _split_l(total, l_var)
        except Unreadable:
            continue
        lo, hi = int_bounds(total, ranges)
        top = bound - 1 if isinstance(cond, LT) else bound
        hi = top if hi is None else min(hi, top)
        if coeff <= 0 or lo is None or hi < lo:
            continue
        digit = Var("guarded_sum", total.dtype)
        digit_loop = For(digit, IntImm(lo, total.dtype), IntImm(hi - lo + 1, total.dtype),
                         ForKind.SERIAL, Evaluate(IntImm(0, total.dtype)))
        by_digit = [_as_digit_access(a, loop, total, digit, digit_loop, ranges)
                    for a in (first, second)]
        if None in by_digit or _overlap(by_digit[0], by_digit[1], digit_loop):
            continue
        one_value = dataclasses.replace(first, region=((total, IntImm(1, total.dtype)),))
        if not _overlap(one_value, one_value, loop):
            return False
    return True


def _as_digit_access(access: Access, loop: For, total: PrimExpr, digit: Var, digit_loop: For,
                     ranges) -> Access | None:
    """``access`` with every multiple of ``total`` replaced by ``digit`` and ``loop`` by
    ``digit_loop``; ``None`` when ``loop``'s variable is left anywhere in the region.
    Conjuncts that use ``loop``'s variable are dropped (fewer guards: conservative)."""
    l_var = loop.loop_var
    replace = _NarrowInside({total: digit}, ranges)
    region = []
    for start, extent in access.region:
        if l_var in _vars(extent):
            return None
        rebuilt = _sums_replaced(simplify(replace.visit(start), ranges), {total: digit}, ranges)
        if l_var in _vars(rebuilt):
            return None
        region.append((rebuilt, extent))
    if any(lp is loop for lp in access.loops):
        loops = tuple(digit_loop if lp is loop else lp for lp in access.loops)
    else:
        return None
    predicate = tuple(c for c in access.predicate if l_var not in _vars(c))
    return dataclasses.replace(access, region=tuple(region), loops=loops, predicate=predicate)


def _overlap(first: Access, second: Access, loop: For) -> bool:
    l_var = loop.loop_var
    lo, extent = const_value(loop.min), const_value(loop.extent)
    extent = extent if isinstance(extent, int) else None
    if extent is not None and extent <= 1:
        return False  # one iteration: nothing to race with
    if _guarded_to_one(first, l_var, lo) and _guarded_to_one(second, l_var, lo):
        return False  # a T.where lets only the first iteration run
    outer: set[Var] = set()
    for chain_loop in first.loops:
        if chain_loop is loop or chain_loop.loop_var == l_var:
            break
        outer.add(chain_loop.loop_var)
    ranges = _ranges(first.loops + second.loops)
    first, second = _fix_unit_loops(first, ranges), _fix_unit_loops(second, ranges)
    map1, extra1 = _narrowed(first, l_var, ranges)
    map2, extra2 = _narrowed(second, l_var, ranges)
    # a guarded sum of outer variables only is itself the same in both iterations
    outer |= {var for bounded, var in (*map1.items(), *map2.items()) if _vars(bounded) <= outer}
    ranges1, ranges2 = {**ranges, **extra1}, {**ranges, **extra2}
    try:
        dims = []
        for (s1, e1), (s2, e2) in zip(first.region, second.region, strict=True):
            s1 = _Replace(map1).visit(s1) if map1 else s1
            s2 = _Replace(map2).visit(s2) if map2 else s2
            f1 = read_index(s1, l_var, outer, ranges1, map1)
            f2 = read_index(s2, l_var, outer, ranges2, map2)
            w1, w2 = int_bounds(e1, ranges)[1], int_bounds(e2, ranges)[1]
            dims.append((f1, f2, w1, w2))
    except Unreadable:
        return True
    keys = {key for f1, f2, _, _ in dims for key in (*f1.digits, *f2.digits)}
    if keys - {(1, None)} and lo != 0:
        return True
    chain = _digit_chain(keys, extent)
    if chain is None:
        return True
    spans = _digit_ranges(chain, extent)
    equations = []
    for f1, f2, w1, w2 in dims:
        c1, c2 = _expand(f1, chain), _expand(f2, chain)
        # e1 - e2 = sum(c1_k * delta_k) + sum((c1_k - c2_k) * g'_k) + outer + const + rests
        noise = _add(f1.rest, _scale(f2.rest, -1))
        noise = _add(noise, _outer_rest(f1, f2, ranges))
        for k in set(c1) | set(c2):
            diff = c1.get(k, 0) - c2.get(k, 0)
            if diff:
                span = spans[k]
                noise = _add(noise, _scale((0, span), diff))
        noise = _add(noise, (f1.const - f2.const, f1.const - f2.const))
        if w1 is None or w2 is None:
            return True
        # overlap  <=>  e1 - e2 in [-(w1 - 1), w2 - 1]
        window_lo = None if noise[1] is None else -(w1 - 1) - noise[1]
        window_hi = None if noise[0] is None else (w2 - 1) - noise[0]
        window = (window_lo, window_hi)
        if w1 == w2 == 1 and _same_point_forces_digits(
                f1, f2, c1, c2, spans, ranges1 if extra1 == extra2 else ranges):
            return False
        if w1 == w2 == 1:
            window = _modular_window(f1, f2, c1, c2, spans, window)
            if window is None:
                return False
        equations.append((c1, window))
    free = set(range(len(chain)))
    if any(_disjoint_anyway(c, spans, free, w) for c, w in equations):
        return False
    changed = True
    while changed and free:
        changed = False
        for coeffs, window in equations:
            forced = _forced(coeffs, spans, free, window)
            if forced:
                free -= forced
                changed = True
    return bool(free)


def _same_point_forces_digits(f1: Form, f2: Form, c1, c2, spans, ranges) -> bool:
    """For one index expression in both accesses (``e(l, inner) == e(l', inner')``):
    ``sum(c_k * delta_k) + sum(a_t * delta_t) == 0`` with every ``|delta| <= span``; True
    when every solution has all the digit differences ``delta_k`` of ``l`` zero."""
    if not (f1.exact and f2.exact) or (f1.inner, f1.outer, f1.const, c1) != (
            f2.inner, f2.outer, f2.const, c2):
        return False
    terms: dict[object, tuple[int, int]] = {}
    for k, span in enumerate(spans):
        if span is None or (span and not c1.get(k)):
            return False  # a digit the index does not use (or unbounded) stays free
        if span:
            terms[("digit", k)] = (c1[k], span)
    for term, coeff in f1.inner.items():
        lo, hi = int_bounds(term, ranges)
        if lo is None or hi is None:
            return False
        terms[term] = (coeff, hi - lo)
    targets = {key for key in terms if isinstance(key, tuple) and key[:1] == ("digit",)}
    return _only_zero(terms, targets)


def _only_zero(terms: dict[object, tuple[int, int]], targets: set) -> bool:
    """Whether ``sum(a * x) == 0`` with ``|x| <= span`` per term forces ``x == 0`` for every
    term in ``targets``: a term whose coefficient outweighs all the others is 0; a group of
    the smallest terms that cannot reach the gcd of the other coefficients sums to 0 on its
    own (mixed-radix digits: ``36 * f0 + 12 * f1 + 2 * l + r`` splits into ``2 * l + r`` and
    ``6 * (6 * f0 + 2 * f1)``). Conservative: False when neither rule settles it."""
    terms = {key: (a, span) for key, (a, span) in terms.items() if a and span}
    if not targets & terms.keys():
        return True
    reach = sum(abs(a) * span for a, span in terms.values())
    for key, (a, span) in terms.items():
        if abs(a) > reach - abs(a) * span:  # outweighs the rest: x == 0
            rest = {k: v for k, v in terms.items() if k != key}
            return _only_zero(rest, targets)
    ordered = sorted(terms, key=lambda key: abs(terms[key][0]))
    partial = 0
    for position in range(len(ordered) - 1):
        a, span = terms[ordered[position]]
        partial += abs(a) * span
        big = ordered[position + 1:]
        g = math.gcd(*(terms[key][0] for key in big))
        if partial < g:
            small = {key: terms[key] for key in ordered[:position + 1]}
            scaled = {key: (terms[key][0] // g, terms[key][1]) for key in big}
            return _only_zero(small, targets) and _only_zero(scaled, targets)
    return False


def _guarded_to_one(access: Access, l_var: Var, lo) -> bool:
    """Whether a ``T.where`` conjunct ``c * l + rest < bound`` (``c > 0``) keeps ``l`` at its
    first value ``lo`` (a split of a one-iteration loop: ``l_0 * 2 + l_1 < 1``)."""
    if not isinstance(lo, int):
        return False
    ranges = _ranges(access.loops)
    for cond in access.predicate:
        if not isinstance(cond, LT) or not isinstance(const_value(cond.b), int):
            continue
        try:
            c, rest = _split_l(simplify(cond.a, ranges), l_var)
        except Unreadable:
            continue
        rest_lo = int_bounds(rest, ranges)[0]
        if c > 0 and rest_lo is not None and c * (lo + 1) + rest_lo >= const_value(cond.b):
            return True
    return False


def _fix_unit_loops(access: Access, ranges: dict[Var, tuple[int, int]]) -> Access:
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


def _ranges(loops: tuple[For, ...]) -> dict[Var, tuple[int, int]]:
    ranges = {}
    for loop in loops:
        lo, ext = const_value(loop.min), const_value(loop.extent)
        if isinstance(lo, int) and isinstance(ext, int) and ext > 0:
            ranges[loop.loop_var] = (lo, lo + ext - 1)
    return ranges


def loop_range(loop: For) -> Range:
    return Range(loop.min, loop.extent)
