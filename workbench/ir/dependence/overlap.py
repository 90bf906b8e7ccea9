"""Whether two iterations of a loop can touch one element (the race analysis).

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
4. When that leaves a possible conflict, two dimensions indexed by adjacent digits of one
   value (``x // 3`` and ``x % 3``, a fused loop's axes after a split) are read as the one
   dimension ``x`` they determine (``access.digit_pairs_merged``), and the whole index as one
   row-major (or other order) offset into the buffer (``_flattened``); each is asked again.

Anything the analysis cannot read (a data-dependent index, a loop without constant bounds, a
non-linear use of ``l``) counts as a possible conflict: it is conservative, never optimistic.

Answers are memoized by what they depend on (``_query_key``: each access's buffer, region,
guards and the ranges of the loops around it, and ``L``'s variable and range), not by the
function: a schedule edit builds a new function whose unchanged blocks ask the same questions
again (a ``compute_at`` of a conv's padding stage re-analyses the whole scope), and get the
answer already found. The IR is frozen and the answer a pure function of the key, so an entry
is never stale; ``memo_info()`` counts hits and misses.
"""

from __future__ import annotations

import dataclasses
import itertools
import math

from workbench.ir import (
    LE,
    LT,
    Evaluate,
    For,
    ForKind,
    IntImm,
    PrimExpr,
    Var,
    const_value,
    expr_vars,
)
from workbench.ir.arith import int_bounds, simplify
from workbench.ir.arith.linear import lift_quotient
from workbench.ir.dependence.access import (
    Access,
    Bounds,
    digit_pairs_merged,
    fix_unit_loops,
)
from workbench.ir.dependence.index_form import (
    Form,
    NarrowInside,
    ReplaceExprs,
    Unreadable,
    add_bounds,
    narrowed,
    read_index,
    scale_bounds,
    split_l,
    sums_replaced,
)
from workbench.ir.region_infer import loop_ranges

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
            total = add_bounds(total, scale_bounds(int_bounds(term, ranges), diff))
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



def _flattened(access: Access, ranges, order: tuple[int, ...] | None = None) -> Access | None:
    """A point access to a constant-shape buffer, proven in bounds, as one index with the
    dimensions in ``order`` (outermost first; default row-major: ``x // 12, x % 12``
    becomes ``x``; ``(1, 0)``: column-major, for a fused loop of swapped axes), or ``None``."""
    shape = [dim if isinstance(dim, int) else const_value(dim) for dim in access.buffer.shape]
    if not shape or not all(isinstance(n, int) for n in shape):
        return None
    # the T.where guards bound the executed iterations (a split that does not divide)
    mapping, extra = narrowed(access, Var("no_loop", "int32"), ranges)
    guarded = {**ranges, **extra}
    order = tuple(range(len(shape))) if order is None else order
    dims = [(access.region[d], shape[d]) for d in order]
    flat, stride, outermost_unproven = None, 1, False
    for position, ((start, extent), size) in enumerate(reversed(dims)):
        if const_value(extent) != 1:
            return None
        lo, hi = _narrow_bounds(start, mapping, ranges, guarded)
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


def _narrow_bounds(start: PrimExpr, mapping, ranges, guarded) -> Bounds:
    """Bounds of an index under the ``T.where`` guards: of the index as it is and of its
    quotient put back together (``f1_0 + (f0 * 6 + r) // 4`` as ``(f0 * 6 + f1_0 * 4 + r)
    // 4``, where a guarded sum ``f1_0 * 4 + r < 6`` is seen whole), the tighter ends."""
    bounds = []
    for form in {start, lift_quotient(start)}:
        bounds.append(int_bounds(NarrowInside(mapping, ranges).visit(form) if mapping else form,
                                 guarded))
    los = [lo for lo, _ in bounds if lo is not None]
    his = [hi for _, hi in bounds if hi is not None]
    return (max(los) if los else None), (min(his) if his else None)


def _in_range(expr: PrimExpr, mapping, guarded, ranges, size: int) -> bool:
    """Whether ``0 <= expr < size``, with the ``T.where``-bounded sums of ``mapping`` read as
    their narrowed variables."""
    lo, hi = int_bounds(sums_replaced(expr, mapping, ranges), guarded)
    return lo is not None and hi is not None and lo >= 0 and hi < size


MEMO_SIZE = 8192
"""Answers kept (the memo is emptied when full: a tuning run asks many distinct questions)."""
_memo: dict = {}
_memo_counts = {"hits": 0, "misses": 0}


def memo_info() -> dict[str, int]:
    """``{"hits", "misses", "size"}`` of the ``iterations_overlap`` memo since the last
    ``memo_clear``."""
    return {**_memo_counts, "size": len(_memo)}


def memo_clear() -> None:
    _memo.clear()
    _memo_counts.update(hits=0, misses=0)


def _access_key(access: Access, loop: For) -> tuple:
    """Everything of ``access`` the analysis reads: the loops by variable and range (and
    which one is ``loop``: it is found by identity), never by body."""
    loops = tuple((lp.loop_var, lp.min, lp.extent, lp is loop) for lp in access.loops)
    return access.buffer, access.region, access.predicate, loops


def _query_key(first: Access, second: Access, loop: For) -> tuple:
    return (_access_key(first, loop), _access_key(second, loop),
            (loop.loop_var, loop.min, loop.extent))


def iterations_overlap(first: Access, second: Access, loop: For) -> bool:
    """Whether ``first`` in one iteration of ``loop`` and ``second`` in another (the loops
    around ``loop`` at the same values) may touch one element. Conservative: True when unsure.
    Memoized by ``_query_key`` (module docstring).
    """
    if first.buffer != second.buffer:
        return False
    key = _query_key(first, second, loop)
    answer = _memo.get(key)
    if answer is not None:
        _memo_counts["hits"] += 1
        return answer
    _memo_counts["misses"] += 1
    answer = _iterations_overlap(first, second, loop)
    if len(_memo) >= MEMO_SIZE:
        _memo.clear()
    _memo[key] = answer
    return answer


def _iterations_overlap(first: Access, second: Access, loop: For) -> bool:
    if _proven_disjoint(first, second, loop):
        return False
    merged = digit_pairs_merged(first, second)
    if merged is not None and _proven_disjoint(*merged, loop):
        return False
    ranges = loop_ranges(first.loops + second.loops)
    if len(first.region) == 1:
        return True
    # one-iteration loops pinned first: a guard ``f0 * 90 + f1 * 15 + f2 < 60`` with ``f0``
    # in [0, 0] bounds the ``f1 * 15 + f2`` of the indices
    pinned1, pinned2 = fix_unit_loops(first, ranges), fix_unit_loops(second, ranges)
    for order in _dimension_orders(len(first.region)):
        flat1, flat2 = _flattened(pinned1, ranges, order), _flattened(pinned2, ranges, order)
        if flat1 is None or flat2 is None:
            continue  # not proven in bounds in this order
        if _proven_disjoint(flat1, flat2, loop):
            return False
    return True


def _proven_disjoint(first: Access, second: Access, loop: For) -> bool:
    """Whether the index forms (``_overlap``) or a shared ``T.where`` sum
    (``_overlap_through_guarded_sums``) show two iterations never touch one element."""
    return not (_overlap(first, second, loop)
                and _overlap_through_guarded_sums(first, second, loop))


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
    ranges = loop_ranges(first.loops + second.loops)
    for cond in first.predicate:
        if cond not in second.predicate or not isinstance(cond, (LT, LE)):
            continue
        bound = const_value(cond.b)
        if not isinstance(bound, int):
            continue
        total = simplify(cond.a, ranges)
        try:
            coeff, _ = split_l(total, l_var)
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
    replace = NarrowInside({total: digit}, ranges)
    region = []
    for start, extent in access.region:
        if l_var in expr_vars(extent):
            return None
        rebuilt = sums_replaced(simplify(replace.visit(start), ranges), {total: digit}, ranges)
        if l_var in expr_vars(rebuilt):
            return None
        region.append((rebuilt, extent))
    if any(lp is loop for lp in access.loops):
        loops = tuple(digit_loop if lp is loop else lp for lp in access.loops)
    else:
        return None
    predicate = tuple(c for c in access.predicate if l_var not in expr_vars(c))
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
    ranges = loop_ranges(first.loops + second.loops)
    first, second = fix_unit_loops(first, ranges), fix_unit_loops(second, ranges)
    map1, extra1 = narrowed(first, l_var, ranges)
    map2, extra2 = narrowed(second, l_var, ranges)
    # a guarded sum of outer variables only is itself the same in both iterations
    outer |= {var for bounded, var in (*map1.items(), *map2.items()) if expr_vars(bounded) <= outer}
    ranges1, ranges2 = {**ranges, **extra1}, {**ranges, **extra2}
    try:
        dims = []
        for (s1, e1), (s2, e2) in zip(first.region, second.region, strict=True):
            s1 = ReplaceExprs(map1).visit(s1) if map1 else s1
            s2 = ReplaceExprs(map2).visit(s2) if map2 else s2
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
        noise = add_bounds(f1.rest, scale_bounds(f2.rest, -1))
        noise = add_bounds(noise, _outer_rest(f1, f2, ranges))
        for k in set(c1) | set(c2):
            diff = c1.get(k, 0) - c2.get(k, 0)
            if diff:
                span = spans[k]
                noise = add_bounds(noise, scale_bounds((0, span), diff))
        noise = add_bounds(noise, (f1.const - f2.const, f1.const - f2.const))
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
    ranges = loop_ranges(access.loops)
    for cond in access.predicate:
        if not isinstance(cond, LT) or not isinstance(const_value(cond.b), int):
            continue
        try:
            c, rest = split_l(simplify(cond.a, ranges), l_var)
        except Unreadable:
            continue
        rest_lo = int_bounds(rest, ranges)[0]
        if c > 0 and rest_lo is not None and c * (lo + 1) + rest_lo >= const_value(cond.b):
            return True
    return False


