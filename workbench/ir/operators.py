"""The IR's binary operators, one table: how each is written (Python's symbol and precedence)
and what it computes on Python numbers and on numpy arrays.

Every printer, parser and evaluator of expressions reads it: the DSL text
(``workbench.ir.expr_text``) and its parser (``workbench.script.expr_parser``), the generated
Python (``workbench.backends.common.expr_printer``), constant folding
(``workbench.ir.arith.fold``) and the array evaluators (``workbench.viz.iteration``,
``workbench.backends.numpy.numpy_whole_array``). The symbol is the node class's own
(``Add.symbol``, ``workbench.ir.expr``).

Example
-------
>>> from workbench.ir.expr import FloorDiv
>>> op = OPERATORS[FloorDiv]
>>> op.symbol, op.precedence == MUL, op.python(7, 2)
('//', True, 3)
>>> NODE_OF["//"] is FloorDiv
True
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from workbench.ir import expr

# Python's precedence levels, low to high (higher binds tighter): ``x if c else y``, ``or``,
# ``and``, ``not``, comparisons, ``+ -``, ``* / // %``, unary ``-``, atoms (names, calls,
# subscripts, literals)
SELECT, OR, AND, NOT, COMPARE, ADD, MUL, UNARY, ATOM = range(1, 10)


def _logical_and(a, b) -> bool:
    return bool(a) and bool(b)


def _logical_or(a, b) -> bool:
    return bool(a) or bool(b)


@dataclass(frozen=True)
class Operator:
    """One binary operator of the IR.

    ``precedence`` is Python's (``ATOM`` for ``min``/``max``, written as calls); ``python``
    computes it on two Python numbers as Python does (``/`` is true division: the IR's
    integer ``Div`` truncates, see ``workbench.ir.arith.fold.trunc_div``); ``numpy`` is the
    elementwise function on arrays (None for ``Div``: its integer form has none).
    """

    node: type[expr.BinaryOp]
    precedence: int
    python: Callable
    numpy: Callable | None

    @property
    def symbol(self) -> str:
        return self.node.symbol


OPERATORS: dict[type, Operator] = {op.node: op for op in (
    Operator(expr.Add, ADD, operator.add, np.add),
    Operator(expr.Sub, ADD, operator.sub, np.subtract),
    Operator(expr.Mul, MUL, operator.mul, np.multiply),
    Operator(expr.Div, MUL, operator.truediv, None),
    Operator(expr.FloorDiv, MUL, operator.floordiv, np.floor_divide),
    Operator(expr.FloorMod, MUL, operator.mod, np.mod),
    Operator(expr.Min, ATOM, min, np.minimum),
    Operator(expr.Max, ATOM, max, np.maximum),
    Operator(expr.EQ, COMPARE, operator.eq, np.equal),
    Operator(expr.NE, COMPARE, operator.ne, np.not_equal),
    Operator(expr.LT, COMPARE, operator.lt, np.less),
    Operator(expr.LE, COMPARE, operator.le, np.less_equal),
    Operator(expr.GT, COMPARE, operator.gt, np.greater),
    Operator(expr.GE, COMPARE, operator.ge, np.greater_equal),
    Operator(expr.And, AND, _logical_and, np.logical_and),
    Operator(expr.Or, OR, _logical_or, np.logical_or),
)}
"""Every binary operator node class to its ``Operator``."""

NODE_OF: dict[str, type] = {op.symbol: node for node, op in OPERATORS.items()}
"""The node class of each symbol (``"+"`` -> ``Add``)."""

COMPARISONS = (expr.EQ, expr.NE, expr.LT, expr.LE, expr.GT, expr.GE)
"""The comparison nodes (``And``/``Or`` share their base class ``CompareOp``, not their
precedence)."""
