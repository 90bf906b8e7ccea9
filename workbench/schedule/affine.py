"""Quasi-affine bindings: the check ``reorder`` and ``rfactor`` share (TVM's affine-binding
check, kept structural).

An index expression is *quasi-affine* in a set of loop variables when it is built from them
with ``+``, ``-``, multiplication by a term free of them, and ``//`` / ``%`` by a positive
constant. Sub-expressions that use none of the loop variables (constants, outer loops,
``v0 * v0`` when ``v0`` is outside the loops considered) count as constants: this is TVM's
*partial* affineness, checked relative to the loops a primitive rearranges.

Example
-------
>>> from workbench.ir import Var, IntImm
>>> k = Var("k")
>>> is_quasi_affine((k * IntImm(4) + IntImm(1)) // IntImm(2), {"k"})
True
>>> is_quasi_affine((k * k) // IntImm(2), {"k"})
False
"""

from __future__ import annotations

from collections.abc import Iterable

from workbench.ir import (
    Add,
    BlockRealize,
    FloorDiv,
    FloorMod,
    Mul,
    PrimExpr,
    Sub,
    Var,
    collect,
    const_value,
)


def _uses_any(expr: PrimExpr, names: set[str]) -> bool:
    return any(v.name in names for v in collect(expr, lambda n: isinstance(n, Var)))


def is_quasi_affine(expr: PrimExpr, loop_vars: set[str]) -> bool:
    """Whether ``expr`` is quasi-affine in the loop variables named ``loop_vars``."""
    if not _uses_any(expr, loop_vars):
        return True
    if isinstance(expr, Var):
        return True
    if isinstance(expr, (Add, Sub)):
        return is_quasi_affine(expr.a, loop_vars) and is_quasi_affine(expr.b, loop_vars)
    if isinstance(expr, Mul):
        if not _uses_any(expr.a, loop_vars):
            return is_quasi_affine(expr.b, loop_vars)
        if not _uses_any(expr.b, loop_vars):
            return is_quasi_affine(expr.a, loop_vars)
        return False
    if isinstance(expr, (FloorDiv, FloorMod)):
        divisor = const_value(expr.b)
        return isinstance(divisor, int) and divisor > 0 and is_quasi_affine(expr.a, loop_vars)
    return False


def first_non_affine(
    realizes: Iterable[BlockRealize], loop_vars: set[str]
) -> tuple[BlockRealize, str, PrimExpr] | None:
    """The first ``(realize, iter var name, binding)`` whose binding is not quasi-affine in
    ``loop_vars``, or None when all are."""
    for realize in realizes:
        for iv, value in zip(realize.block.iter_vars, realize.iter_values, strict=True):
            if not is_quasi_affine(value, loop_vars):
                return realize, iv.var.name, value
    return None
