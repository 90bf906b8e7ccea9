"""Expressions to DSL text, with the fewest parentheses Python's precedence allows.

The text parses back (``workbench.script.expr_parser``) to the same expression. It lives in
the IR layer (error messages of the analyses print expressions) and is what the DSL printer
(``workbench.script.printer``) prints expressions with:

- ``int32`` constants print bare (``3``), other integer constants typed (``T.int64(3)``),
  booleans as ``True``/``False``, floats always typed (``T.float32(0.5)``), so a float
  keeps its dtype without looking at its neighbours;
- the parser folds two bare numbers (``1 + 2`` is ``3``), so a binary operation of two
  ``int32`` constants prints its left side typed: ``T.int32(1) + 2``;
- ``0 - x`` prints as ``-x`` (what the parser builds for ``-x``).
"""

from __future__ import annotations

import json
import math

from workbench.ir.expr import (
    BinaryOp,
    BufferLoad,
    Call,
    Cast,
    FloatImm,
    IntImm,
    Max,
    Min,
    Not,
    PrimExpr,
    Select,
    Sub,
    Var,
    is_float,
)
from workbench.ir.operators import ATOM, COMPARE, NOT, OPERATORS, UNARY


def expr_text(expr: PrimExpr) -> str:
    """The DSL text of ``expr``.

    Example
    -------
    >>> from workbench.ir import Var, IntImm
    >>> i, j = Var("i"), Var("j")
    >>> expr_text((i + j) * IntImm(4))
    '(i + j) * 4'
    """
    return _text(expr)[0]


def float_literal(value: float, dtype: str) -> str:
    """``T.float32(0)``, ``T.float32(0.5)``, ``T.float32("-inf")``."""
    if math.isnan(value):
        shown = '"nan"'
    elif math.isinf(value):
        shown = '"inf"' if value > 0 else '"-inf"'
    elif value.is_integer() and abs(value) < 1e16:
        shown = str(int(value))
    else:
        shown = repr(float(value))
    return f"T.{dtype}({shown})"


def literal(value) -> str:
    """A Python literal for annotation values (strings with double quotes)."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, tuple):
        if len(value) == 1:
            return f"({literal(value[0])},)"
        return "(" + ", ".join(literal(v) for v in value) + ")"
    return repr(value)


def dict_literal(items: tuple) -> str:
    return "{" + ", ".join(f"{literal(k)}: {literal(v)}" for k, v in items) + "}"


def _is_bare_int(expr: PrimExpr) -> bool:
    return isinstance(expr, IntImm) and expr.dtype == "int32"


def _typed_int(expr: IntImm) -> str:
    return f"T.{expr.dtype}({expr.value})"


def _is_zero_of(expr: PrimExpr, dtype: str) -> bool:
    if is_float(dtype):
        return isinstance(expr, FloatImm) and expr.dtype == dtype and expr.value == 0.0 \
            and math.copysign(1.0, expr.value) > 0
    return isinstance(expr, IntImm) and expr.dtype == dtype and expr.value == 0


def _wrap(part: tuple[str, int], needs_parens: bool) -> str:
    return f"({part[0]})" if needs_parens else part[0]


def _text(expr: PrimExpr) -> tuple[str, int]:
    """``(text, precedence)`` of ``expr``."""
    if isinstance(expr, Var):
        return expr.name, ATOM
    if isinstance(expr, IntImm):
        if expr.dtype == "bool":
            return ("True" if expr.value else "False"), ATOM
        if expr.dtype != "int32":
            return _typed_int(expr), ATOM
        return str(expr.value), (ATOM if expr.value >= 0 else UNARY)
    if isinstance(expr, FloatImm):
        return float_literal(expr.value, expr.dtype), ATOM
    if isinstance(expr, Cast):
        return f'T.Cast("{expr.dtype}", {_text(expr.value)[0]})', ATOM
    if isinstance(expr, BufferLoad):
        return f"{expr.buffer.name}[{index_text(expr.indices)}]", ATOM
    if isinstance(expr, Call):
        args = ", ".join(_text(arg)[0] for arg in expr.args)
        if expr.args and expr.dtype != expr.args[0].dtype:
            args += f', dtype="{expr.dtype}"'
        return f"T.{expr.op}({args})", ATOM
    if isinstance(expr, Select):
        parts = (expr.condition, expr.true_value, expr.false_value)
        return f"T.if_then_else({', '.join(_text(p)[0] for p in parts)})", ATOM
    if isinstance(expr, Not):
        operand = _text(expr.a)
        return f"not {_wrap(operand, operand[1] < NOT)}", NOT
    if isinstance(expr, (Min, Max)):
        name = "min" if isinstance(expr, Min) else "max"
        return f"T.{name}({_text(expr.a)[0]}, {_text(expr.b)[0]})", ATOM
    if isinstance(expr, Sub) and _is_zero_of(expr.a, expr.b.dtype) and not _is_bare_int(expr.b):
        operand = _text(expr.b)
        return f"-{_wrap(operand, operand[1] < UNARY)}", UNARY
    if isinstance(expr, BinaryOp):
        return _binary_text(expr)
    raise TypeError(f"cannot print expression {expr!r}")


def _binary_text(expr: BinaryOp) -> tuple[str, int]:
    precedence = OPERATORS[type(expr)].precedence
    if _is_bare_int(expr.a) and _is_bare_int(expr.b):
        left = (_typed_int(expr.a), ATOM)  # two bare numbers would fold when parsed
    else:
        left = _text(expr.a)
    right = _text(expr.b)
    chained = precedence == COMPARE  # a < b < c means something else in Python
    left_text = _wrap(left, left[1] < precedence or (chained and left[1] == precedence))
    right_text = _wrap(right, right[1] <= precedence)
    return f"{left_text} {expr.symbol} {right_text}", precedence


def index_text(indices: tuple[PrimExpr, ...]) -> str:
    if not indices:
        return "()"
    return ", ".join(_text(index)[0] for index in indices)
