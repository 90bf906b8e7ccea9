"""Proving an index map injective, symbolically: the answer never depends on the buffer size.

``transform_layout`` needs every element of the old buffer to land on its own position of
the new one. Two proofs, tried in turn; neither enumerates points:

* **affine inverse** (TVM's ``InverseAffineIterMap``): each new index is a digit
  ``x // a % b`` of an affine ``x`` of the old indices, the digits of one ``x`` a mixed
  radix; ``workbench.ir.affine_inverse.invert_indices`` builds the inverse, and
  ``inverse(map(i))`` must simplify to ``i`` on the buffer's domain. Covers fusions such as
  ``lambda i, j: ((i * 16 + j) // 8, (i * 16 + j) % 8)``.
* **digits of each old index**: every new index is a linear combination of *digits*
  ``i // a % b`` of single old indices (``i``, ``i % 4``, ``i // 4``, ``i % 16 // 4``...).
  The proof holds when

  1. the digits of each old index ``i`` (extent ``E``) tile it as a mixed radix: sorted by
     ``a``, the first has ``a = 1``, each next ``a`` is the previous ``a * b``, and the last
     is not cut by a ``% b`` (``b = ceil(E / a)``); then the digits determine ``i``;
  2. no digit is used twice (in one new index or in two);
  3. within one new index the coefficients, sorted by size, each exceed what all smaller
     terms together can reach (``sum |c| * (b - 1)``); then the new index determines its
     digits (they are the digits of one number, gaps allowed: ``2 * i``, ``i * 8 + j``
     with ``j < 8``, ``i % 2 * 2 + i // 2``).

  Then new indices determine digits, and digits determine old indices: injective.

A map neither proof covers is *not proven* (``False``), which ``transform_layout`` refuses
whatever the buffer size (``IndexMapNotBijectiveError``): a bijection such as
``lambda i: (i * 3 % 16,)`` is refused on 16 elements as on 2^28.

Example
-------
>>> from workbench.schedule.layout_index_map import IndexMap
>>> proves_injective(IndexMap.from_text("lambda i, j: (j // 16, i, j % 16)"), (64, 4096))
True
>>> proves_injective(IndexMap.from_text("lambda i: (i % 2 * 2 + i // 2,)"), (4,))
True
>>> proves_injective(IndexMap.from_text("lambda i: (i // 2,)"), (8,))
False
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from workbench.ir import FloorDiv, FloorMod, IntImm, Range, Var, substitute
from workbench.ir.affine_inverse import invert_indices
from workbench.ir.arith import simplify
from workbench.ir.arith.linear import linear_form
from workbench.ir.stmt import IterVar

if TYPE_CHECKING:
    from workbench.schedule.layout_index_map import IndexMap


def proves_injective(imap: IndexMap, shape: tuple[int, ...]) -> bool:
    """Whether ``imap`` is proven injective on ``0 <= param < shape`` (False: not proven,
    which does not mean it is not injective). The work done does not depend on the sizes
    in ``shape``, only on the map's expressions."""
    ranges = {p: (0, size - 1) for p, size in zip(imap.params, shape, strict=True)}
    return _inverse_checked(imap, shape, ranges) or _digits_proof(imap, shape, ranges)


# ---------------------------------------------------------------------------------------
# The affine inverse
# ---------------------------------------------------------------------------------------


def _inverse_checked(imap: IndexMap, shape, ranges) -> bool:
    """``affine_inverse.invert_indices`` finds the old indices from the new ones, and the
    inverse composed with the map simplifies to the identity on the domain."""
    iter_vars = [
        IterVar(p, Range(IntImm(0, p.dtype), IntImm(size, p.dtype)))
        for p, size in zip(imap.params, shape, strict=True)
    ]
    new = tuple(Var(f"new_{d}", r.dtype) for d, r in enumerate(imap.results))
    found = invert_indices(imap.results, iter_vars, new)
    if found is None:
        return False
    inverse, _ = found  # conditions: constant new indices, which injectivity ignores
    forward = dict(zip(new, imap.results, strict=True))
    for param in imap.params:
        back = simplify(substitute(inverse[param], forward), ranges)
        if back != param and ranges[param] != (0, 0):
            return False
    return True


# ---------------------------------------------------------------------------------------
# Digits of single old indices
# ---------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Digit:
    """``param // a % b``, with ``0 <= param < extent``; ``b`` at most ``ceil(extent / a)``
    (``b == ceil(extent / a)``: the top digit, no ``% b`` cut)."""

    param: Var
    a: int
    b: int
    extent: int

    @property
    def top(self) -> bool:
        return self.b == _ceil_div(self.extent, self.a)


def _ceil_div(x: int, y: int) -> int:
    return -(-x // y)


def _digit(expr, extents: dict[Var, int]) -> _Digit | None:
    """``expr`` read as a digit of one old index, or None."""
    if isinstance(expr, Var):
        if expr not in extents:
            return None
        return _Digit(expr, 1, extents[expr], extents[expr])
    if not isinstance(expr, (FloorDiv, FloorMod)):
        return None
    if not (isinstance(expr.b, IntImm) and expr.b.value > 0):
        return None
    inner = _digit(expr.a, extents)
    if inner is None:
        return None
    c = expr.b.value
    if isinstance(expr, FloorDiv):  # (p // a % b) // c
        a = inner.a * c
        if inner.top:
            b = _ceil_div(inner.extent, a)
        elif inner.b % c == 0:
            b = inner.b // c
        else:
            return None
    else:  # (p // a % b) % c
        a = inner.a
        if c >= inner.b:
            b = inner.b
        elif inner.top or inner.b % c == 0:
            b = c
        else:
            return None
    return _Digit(inner.param, a, min(b, _ceil_div(inner.extent, a)), inner.extent)


def _digits_proof(imap: IndexMap, shape, ranges) -> bool:
    """The digit proof of the module docstring (rules 1-3)."""
    extents = dict(zip(imap.params, shape, strict=True))
    used: list[_Digit] = []
    for result in imap.results:
        form = linear_form(simplify(result, ranges), result.dtype)
        terms = []
        for term, coeff in form.terms.items():
            digit = _digit(term, extents)
            if digit is None:
                return False
            if digit.b > 1 and coeff != 0:
                terms.append((digit, coeff))
        reach = 0  # rule 3
        for digit, coeff in sorted(terms, key=lambda dc: abs(dc[1])):
            if abs(coeff) <= reach:
                return False
            reach += abs(coeff) * (digit.b - 1)
        used.extend(digit for digit, _ in terms)
    if len(set(used)) != len(used):  # rule 2
        return False
    for param, extent in extents.items():  # rule 1
        digits = sorted((d for d in used if d.param == param), key=lambda d: d.a)
        if extent <= 1:
            continue
        if not digits or digits[0].a != 1 or not digits[-1].top:
            return False
        for low, high in zip(digits, digits[1:], strict=False):
            if high.a != low.a * low.b:
                return False
    return True
