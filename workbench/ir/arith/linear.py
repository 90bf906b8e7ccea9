"""Linear forms of integer expressions: ``const + sum(coeff * term)``.

Sums are flattened into a ``Linear`` and rebuilt in one canonical order (terms as first
seen, positive before negative, the constant last), which gives constant folding, nested
constants, cancellation and "constants on the right" in one place.
"""

from __future__ import annotations

from workbench.ir.expr import Add, FloorDiv, FloorMod, IntImm, Mul, PrimExpr, Sub


class Linear:
    """``const + sum(coeff * term)`` over integer terms, terms in first-seen order."""

    def __init__(self, terms: dict[PrimExpr, int] | None = None, const: int = 0):
        self.terms: dict[PrimExpr, int] = dict(terms or {})
        self.const = const

    def add(self, other: Linear, scale: int = 1) -> Linear:
        terms = dict(self.terms)
        for term, coeff in other.terms.items():
            terms[term] = terms.get(term, 0) + coeff * scale
        return Linear({t: c for t, c in terms.items() if c != 0}, self.const + other.const * scale)

    def scale(self, factor: int) -> Linear:
        if factor == 0:
            return Linear()
        return Linear({t: c * factor for t, c in self.terms.items()}, self.const * factor)


def linear_form(expr: PrimExpr, dtype: str) -> Linear:
    """The linear form of an (already simplified) integer expression of ``dtype``."""
    if isinstance(expr, IntImm) and expr.dtype == dtype:
        return Linear({}, expr.value)
    if expr.dtype == dtype:
        if isinstance(expr, Add):
            return linear_form(expr.a, dtype).add(linear_form(expr.b, dtype))
        if isinstance(expr, Sub):
            return linear_form(expr.a, dtype).add(linear_form(expr.b, dtype), -1)
        if isinstance(expr, Mul) and isinstance(expr.b, IntImm) and expr.b.dtype == dtype:
            return linear_form(expr.a, dtype).scale(expr.b.value)
        if isinstance(expr, Mul) and isinstance(expr.a, IntImm) and expr.a.dtype == dtype:
            return linear_form(expr.b, dtype).scale(expr.a.value)
    return Linear({expr: 1}, 0)


Digit = tuple[PrimExpr, int, int | None]
"""``(x, a, b)`` stands for the term ``x // a % b`` (``b`` None: no ``% b``; ``a`` 1: no ``//``)."""


def _const_pos(expr: PrimExpr) -> int | None:
    return expr.value if isinstance(expr, IntImm) and expr.value > 0 else None


def as_digit(term: PrimExpr) -> Digit:
    """Read a term as a "digit" of a mixed-radix number: ``x // a % b``."""
    if isinstance(term, FloorMod) and _const_pos(term.b):
        inner = term.a
        if isinstance(inner, FloorDiv) and _const_pos(inner.b):
            return inner.a, inner.b.value, term.b.value
        return inner, 1, term.b.value
    if isinstance(term, FloorDiv) and _const_pos(term.b):
        return term.a, term.b.value, None
    return term, 1, None


def digit_expr(x: PrimExpr, a: int, b: int | None, dtype: str) -> PrimExpr:
    """The expression ``x // a % b`` (without the parts that are identities)."""
    expr = x if a == 1 else FloorDiv(x, IntImm(a, dtype))
    return expr if b is None else FloorMod(expr, IntImm(b, dtype))


def _congruent(x: PrimExpr, y: PrimExpr, modulus: int | None, dtype: str) -> bool:
    """Whether ``x - y`` is a multiple of ``modulus`` for every value of the variables
    (``modulus`` None: ``x == y``), read on their linear forms."""
    if x == y:
        return True
    diff = linear_form(x, dtype).add(linear_form(y, dtype), -1)
    if modulus is None:
        return not diff.terms and diff.const == 0
    return diff.const % modulus == 0 and all(c % modulus == 0 for c in diff.terms.values())


def lift_quotient(expr: PrimExpr) -> PrimExpr:
    """``m + y // k`` as ``(k*m + y) // k``, the same value (``m``, the other terms and the
    constant, is an integer): the form ``simplify`` took apart, ``(32*l + r) // 4 ->
    8*l + r // 4``, put back together. ``expr`` itself when it has no single ``y // k``
    term of coefficient 1 beside other terms.

    Example
    -------
    >>> from workbench.ir.expr import Var
    >>> from workbench.ir.expr_text import expr_text
    >>> l, r = Var("l"), Var("r")
    >>> expr_text(lift_quotient(l * 8 + r // 4))
    '(l * 32 + r) // 4'
    """
    dtype = expr.dtype
    form = linear_form(expr, dtype)
    divs = [t for t, c in form.terms.items()
            if c == 1 and isinstance(t, FloorDiv) and _const_pos(t.b) and t.a.dtype == dtype]
    if len(divs) != 1 or len(form.terms) == 1 and form.const == 0:
        return expr
    (div,) = divs
    k = div.b.value
    rest = Linear({t: c for t, c in form.terms.items() if t != div}, form.const)
    return FloorDiv(_from_form(rest.scale(k).add(linear_form(div.a, dtype)), dtype), div.b)


def _lifted(digit: Digit) -> Digit | None:
    """The digit ``(m + y // k) // a % b`` read as ``(k*m + y) // (k*a) % b``
    (``lift_quotient``), or None."""
    x, a, b = digit
    lifted = lift_quotient(x)
    if lifted is x:
        return None
    return lifted.a, lifted.b.value * a, b


def _merge_digits(low: Digit, low_coeff: int, high: Digit, high_coeff: int,
                  dtype: str) -> Digit | None:
    """Merge two terms of one ``x`` into one, when they are adjacent digits.

    * ``(x // (a*b) % c) * (k*b) + (x // a % b) * k  ==  (x // a % (b*c)) * k``
      (``c`` may be absent), e.g. ``x // 16 * 16 + x % 16 == x`` and
      ``x // 16 % 8 * 16 + x % 16 == x % 128``; the low digit only needs ``x`` modulo
      ``a*b`` (``(32*l + r) // 16 * 16 + r % 16 == 32*l + r``) and may be in the form
      ``simplify`` gives a quotient (``_lifted``);
    * ``(x // a) * k - (x // (a*b)) * (k*b)  ==  (x // a % b) * k``, e.g.
      ``x - x // 8 * 8 == x % 8``.
    """
    (x, a_low, b_low), (x_high, a_high, b_high) = low, high
    if b_low is None and b_high is not None:
        return None
    if b_low is not None:
        if high_coeff != low_coeff * b_low or a_high % (a_low * b_low):
            return None  # not the next digit at any scale (checked before any linear form)
        merged = x_high, a_high // b_low, None if b_high is None else b_low * b_high
        if a_high == a_low * b_low and _congruent(x_high, x, a_high, dtype):
            return merged
        lifted = _lifted(low)
        if lifted is not None and a_high == lifted[1] * b_low and _congruent(
                x_high, lifted[0], a_high, dtype):
            return merged
        return None
    if x != x_high:
        return None
    # low has no "% b": only the subtraction form applies
    if b_high is None and a_high > a_low and a_high % a_low == 0:
        radix = a_high // a_low
        if high_coeff == -low_coeff * radix:
            return x, a_low, radix
    return None


def merge_div_mod(form: Linear, dtype: str) -> Linear:
    """Merge pairs of terms that are adjacent digits of one value (see ``_merge_digits``).

    This is what turns the indices that ``split`` and ``fuse`` create back into the
    original variable: ``fused // 16 * 16 + fused % 16 -> fused``.
    """
    changed = True
    while changed:
        changed = False
        items = list(form.terms.items())
        for (t1, c1), (t2, c2) in ((p, q) for p in items for q in items if p[0] != q[0]):
            merged = _merge_digits(as_digit(t2), c2, as_digit(t1), c1, dtype)
            if merged is None:
                continue
            x, a, b = merged
            replacement = linear_form(digit_expr(x, a, b, dtype), dtype).scale(c2)
            form = _replace_pair(form, t1, t2, replacement)
            changed = True
            break
    return form


def _replace_pair(form: Linear, first: PrimExpr, second: PrimExpr, replacement: Linear) -> Linear:
    """``form`` without ``first`` and ``second``, ``replacement`` added where ``first`` was."""
    result = Linear({}, form.const)
    for term, coeff in form.terms.items():
        if term == first:
            result = result.add(replacement)
        elif term != second:
            result = result.add(Linear({term: coeff}))
    return result


def from_linear(form: Linear, dtype: str) -> PrimExpr:
    """Rebuild an expression: positive terms in order, then negative ones, constant last."""
    return _from_form(merge_div_mod(form, dtype), dtype)


def _from_form(form: Linear, dtype: str) -> PrimExpr:
    """``form`` as an expression, its terms as they are (``from_linear`` without merging)."""
    terms = [(t, c) for t, c in form.terms.items() if c != 0]
    const = form.const

    def times(term: PrimExpr, coeff: int) -> PrimExpr:
        return term if coeff == 1 else Mul(term, IntImm(coeff, dtype))

    result: PrimExpr | None = None
    for term, coeff in terms:
        if coeff > 0:
            result = times(term, coeff) if result is None else Add(result, times(term, coeff))
    for term, coeff in terms:
        if coeff > 0:
            continue
        if result is None:
            if const > 0:
                result, const = IntImm(const, dtype), 0
            else:
                result = times(term, coeff)
                continue
        result = Sub(result, times(term, -coeff))
    if result is None:
        return IntImm(const, dtype)
    if const > 0:
        return Add(result, IntImm(const, dtype))
    if const < 0:
        return Sub(result, IntImm(-const, dtype))
    return result
