"""Integer arithmetic on the IR: a small rewrite simplifier, interval bounds, proofs.

Schedule primitives create index expressions such as ``(i_0 * 32 + i_1) // 32``;
``simplify`` turns them back into what a person would write (``i_0``) when the loop
ranges allow it. The approach follows TVM's rewrite simplifier, kept small:

* expressions are simplified bottom-up, one method per node family
  (``rewrite.Simplifier``: ``_add_sub``, ``_mul``, ``_floordiv``, ``_floormod``,
  ``_min_max``, ``_compare``, ``_logic``, ``_select``, ``_cast``), repeated until nothing
  changes (at most ``rewrite.MAX_ROUNDS`` rounds, so it cannot loop forever);
* integer sums are normalised through a *linear form*, ``c0 + sum(c_k * t_k)``, whose
  terms ``t_k`` keep the order they first appear in and whose constant goes last, so
  ``(x + 1) + 2 -> x + 3``, ``(x * 2) * 3 -> x * 6``, ``x - x -> 0``, ``2 * x -> x * 2``;
* ``var_ranges`` (inclusive bounds per variable, e.g. loop ranges) feed an interval
  analysis (``int_bounds``) that decides ``//``, ``%``, ``min``/``max`` and comparisons.

The package is split by concern: ``linear`` (linear forms), ``intervals`` (interval
arithmetic), ``fold`` (constant folding), ``rewrite`` (the simplifier) and ``evaluate``
(a direct evaluator, the simplifier's test oracle).

Integer rules only touch integer dtypes. Float expressions are only ever changed by
folding two constants of the same dtype (computed in that dtype) and by moving a
constant to the right of a commutative ``+``/``*``: no reassociation, no ``x + 0.0``.

Example
-------
>>> from workbench.ir import Var
>>> i_0, i_1 = Var("i_0"), Var("i_1")
>>> ranges = {i_0: (0, 3), i_1: (0, 31)}
>>> simplify((i_0 * 32 + i_1) // 32, ranges)
Var(name='i_0', dtype='int32')
"""

from __future__ import annotations

from collections.abc import Mapping

from workbench.ir.arith.evaluate import evaluate_expr
from workbench.ir.arith.intervals import Bounds
from workbench.ir.arith.rewrite import Simplifier, StmtSimplifier, VarRanges
from workbench.ir.expr import IntImm, PrimExpr
from workbench.ir.node import Node

__all__ = ["Bounds", "VarRanges", "evaluate", "int_bounds", "is_const_int", "prove",
           "simplify", "simplify_stmt"]


# --------------------------------------------------------------------------- public API


def simplify(expr: PrimExpr, var_ranges: VarRanges | None = None) -> PrimExpr:
    """Simplify ``expr``, using ``var_ranges`` (inclusive bounds) where given.

    Parameters
    ----------
    expr:
        The expression to simplify.
    var_ranges:
        ``{var: (lo, hi)}``, inclusive; ``None`` for an unknown side. Loop ``for i in
        range(0, 32)`` is ``{i: (0, 31)}``.

    Returns
    -------
    PrimExpr
        An equal expression (for every assignment of the variables within their ranges).

    Example
    -------
    >>> from workbench.ir import LT, IntImm, Var
    >>> i_0, i_1 = Var("i_0"), Var("i_1")
    >>> r = {i_0: (0, 3), i_1: (0, 31)}
    >>> simplify((i_0 * 32 + i_1) % 32, r)
    Var(name='i_1', dtype='int32')
    >>> simplify(LT(i_0 * 32 + i_1, IntImm(128)), r)
    IntImm(value=1, dtype='bool')
    """
    return Simplifier(var_ranges).run(expr)


def simplify_stmt(node: Node, var_ranges: VarRanges | None = None) -> Node:
    """Simplify every expression inside a statement (or a ``PrimFunc``).

    Loop variables get the ranges of their ``For`` (when ``min`` and ``extent`` are
    constants) and block iteration variables the ranges of their domains, so indices
    created by ``split``/``fuse`` collapse where the loops allow it.

    Example
    -------
    >>> from workbench.ir import Buffer, BufferStore, FloatImm, For, ForKind, IntImm, Var
    >>> i_0, i_1, A = Var("i_0"), Var("i_1"), Buffer("A", (128,))
    >>> store = BufferStore(A, FloatImm(0.0), ((i_0 * 32 + i_1) // 32 * 32 + i_1 % 32,))
    >>> loop = For(i_0, IntImm(0), IntImm(4), ForKind.SERIAL,
    ...            For(i_1, IntImm(0), IntImm(32), ForKind.SERIAL, store))
    >>> simplify_stmt(loop).body.body.indices == (i_0 * 32 + i_1,)
    True
    """
    return StmtSimplifier(var_ranges).visit(node)


def int_bounds(expr: PrimExpr, var_ranges: VarRanges | None = None) -> Bounds:
    """Inclusive interval ``(lo, hi)`` that contains every value of integer ``expr``.

    A side is ``None`` when it is unknown (unbounded). The expression is simplified first,
    so correlated terms cancel (``x - x`` is ``(0, 0)``).

    Example
    -------
    >>> from workbench.ir import Var
    >>> i, j = Var("i"), Var("j")
    >>> int_bounds(i * 4 + j, {i: (0, 7), j: (0, 3)})
    (0, 31)
    >>> int_bounds(i + 1, {})
    (None, None)
    """
    simplifier = Simplifier(var_ranges)
    return simplifier.bounds(simplifier.run(expr))


def prove(cond: PrimExpr, var_ranges: VarRanges | None = None) -> bool:
    """True only when ``cond`` is provably true for all variables within ``var_ranges``.

    ``False`` means "not proven", not "false".

    Example
    -------
    >>> from workbench.ir import LT, IntImm, Var
    >>> i = Var("i")
    >>> prove(LT(i, IntImm(64)), {i: (0, 63)}), prove(LT(i, IntImm(64)), {i: (0, 64)})
    (True, False)
    """
    result = simplify(cond, var_ranges)
    return is_const_int(result) and result.value != 0


def is_const_int(expr: PrimExpr, value: int | None = None) -> bool:
    """Whether ``expr`` is an integer constant (equal to ``value`` when given).

    Example
    -------
    >>> from workbench.ir import FloatImm, IntImm
    >>> is_const_int(IntImm(3)), is_const_int(IntImm(3), 4), is_const_int(FloatImm(3.0))
    (True, False, False)
    """
    if not isinstance(expr, IntImm):
        return False
    return value is None or expr.value == value


def evaluate(expr: PrimExpr, env: Mapping) -> int | float:
    """Evaluate ``expr`` with Python numbers, reading variables from ``env``.

    ``env`` maps a ``Var`` (or its name) to a number, and a ``Buffer`` (or its name) to a
    numpy array for ``BufferLoad``. Integer ``//`` and ``%`` are floor division and modulo,
    integer ``/`` truncates (as in the IR); comparisons give 0 or 1.

    Example
    -------
    >>> from workbench.ir import Var
    >>> i = Var("i")
    >>> evaluate((i * 3 + 1) // 2, {i: 5})
    8
    """
    return evaluate_expr(expr, env)
