"""Inverting an affine index map (TVM's ``DetectIterMap`` + ``InverseAffineIterMap``, for
the patterns a schedule produces).

``reverse_compute_inline`` folds a consumer ``C[v...] = f(B[L(v)])`` into the producer of
``B`` (which stores ``B[P(u)]``): every produced element ``B[P(u)]`` must give back the
one consumer iteration ``v`` with ``L(v) == P(u)``. ``invert_indices`` finds ``v`` as
expressions of ``P``. Each index of ``L`` is read as a mixed-radix *digit* ``x // a % b``
of an affine expression ``x`` of the iter vars (``vi * 2048 + vj * 64 + vk * 8 + vl``,
``v // 16``, ``v % 16``, or just ``vi``); the digits of one ``x`` are put back together,
and ``x`` is split into its iter vars when their coefficients form a mixed radix over
their domains (``vj`` steps 1 up to its extent, ``vi`` steps by that extent...).

Example
-------
``L(v) = (v // 16, v % 16)`` with ``v`` in ``[0, 256)`` and ``P(u) = (ui, uj)`` give
``v = ui * 16 + uj``.
"""

from __future__ import annotations

from workbench.ir.arith import int_bounds, simplify
from workbench.ir.arith.linear import linear_form
from workbench.ir.expr import EQ, FloorDiv, FloorMod, IntImm, PrimExpr, Var, const_value
from workbench.ir.region_infer import as_digit, expr_vars
from workbench.ir.stmt import IterVar

__all__ = ["invert_indices"]


def _domains(iter_vars: list[IterVar]) -> dict[Var, tuple[int, int]] | None:
    doms = {}
    for iv in iter_vars:
        lo, ext = const_value(iv.dom.min), const_value(iv.dom.extent)
        if not (isinstance(lo, int) and isinstance(ext, int)) or ext < 1:
            return None
        doms[iv.var] = (lo, ext)
    return doms


def _join_digits(digits: list[tuple[int, int | None, PrimExpr]], x_max: int | None):
    """``x`` from its digits ``(a, b, value)`` (``x // a % b == value``), lowest first;
    None unless they are exactly the digits 1, b0, b0*b1, ... of ``x``."""
    digits = sorted(digits, key=lambda d: d[0])
    place: int | None = 1
    total: PrimExpr | None = None
    for a, b, value in digits:
        if place is None or a != place:
            return None
        term = value if a == 1 else value * IntImm(a, value.dtype)
        total = term if total is None else total + term
        place = a * b if b is not None else None
    if place is not None and (x_max is None or x_max >= place):
        return None  # the part of x above the last remainder is not read
    return total


def _split_vars(x: PrimExpr, value: PrimExpr, doms) -> dict[Var, PrimExpr] | None:
    """The iter vars of the affine ``x`` from ``x == value``, or None when ``x`` is not a
    mixed radix of its iter vars over their domains."""
    form = linear_form(x, x.dtype)
    terms = sorted(form.terms.items(), key=lambda tc: abs(tc[1]))
    if not terms or any(not isinstance(t, Var) or t not in doms for t, _ in terms):
        return None
    dtype = x.dtype
    if len(terms) == 1 and terms[0][1] == -1:  # x = const - v
        var = terms[0][0]
        return {var: IntImm(form.const, dtype) - value}
    shift = form.const + sum(c * doms[t][0] for t, c in terms)
    rest = value - IntImm(shift, dtype) if shift else value
    result: dict[Var, PrimExpr] = {}
    step = 1
    for position, (var, coeff) in enumerate(terms):
        if coeff != step:
            return None
        low, extent = doms[var]
        part = rest if coeff == 1 else FloorDiv(rest, IntImm(coeff, dtype))
        if position < len(terms) - 1:
            part = FloorMod(part, IntImm(extent, dtype))
        result[var] = part + IntImm(low, dtype) if low else part
        step = coeff * extent
    return result


def invert_indices(
    indices: tuple[PrimExpr, ...],
    iter_vars: list[IterVar],
    values: tuple[PrimExpr, ...],
) -> tuple[dict[Var, PrimExpr], list[PrimExpr]] | None:
    """``v`` (each of ``iter_vars``) as expressions of ``values`` such that
    ``indices(v) == values``, plus conditions on ``values`` that must hold (an index that
    is a constant); None when ``indices`` is not an affine bijection of the iter vars
    (an iter var of extent 1 missing from the indices takes its minimum).

    The results are not simplified; substitute and simplify them in the caller's terms.
    """
    doms = _domains(iter_vars)
    if doms is None:
        return None
    ranges = {v: (lo, lo + ext - 1) for v, (lo, ext) in doms.items()}
    groups: dict[PrimExpr, list[tuple[int, int | None, PrimExpr]]] = {}
    conditions: list[PrimExpr] = []
    for index, value in zip(indices, values, strict=True):
        if not expr_vars(index) & doms.keys():
            conditions.append(EQ(value, index))
            continue
        digit = as_digit(index) or (simplify(index, {}), 1, None)
        x, a, b = digit
        groups.setdefault(simplify(x, {}), []).append((a, b, value))
    mapping: dict[Var, PrimExpr] = {}
    for x, digits in groups.items():
        joined = _join_digits(digits, int_bounds(x, ranges)[1])
        if joined is None:
            return None
        found = _split_vars(x, joined, doms)
        if found is None or found.keys() & mapping.keys():
            return None
        mapping.update(found)
    for var, (low, extent) in doms.items():
        if var in mapping:
            continue
        if extent != 1:
            return None
        mapping[var] = IntImm(low, var.dtype)
    return mapping, conditions
