"""Constant folding shared by the simplifier and the evaluator."""

from __future__ import annotations

import numpy as np

from workbench.ir.expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mul,
    PrimExpr,
    Sub,
    is_int,
)
from workbench.ir.operators import COMPARISONS, OPERATORS

TRUE = IntImm(1, "bool")
FALSE = IntImm(0, "bool")


def is_index(dtype: str) -> bool:
    """Integer types that take part in arithmetic (``bool`` only in logic)."""
    return is_int(dtype) and dtype != "bool"


def const_of(expr: PrimExpr):
    if isinstance(expr, (IntImm, FloatImm)):
        return expr.value
    return None


def bool_imm(value: bool) -> IntImm:
    return TRUE if value else FALSE


def trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def fold_float(op: type, a: float, b: float, dtype: str):
    """Compute a float binary op in ``dtype``; None when it must not be folded."""
    scalar = np.dtype(dtype).type
    x, y = scalar(a), scalar(b)
    with np.errstate(all="ignore"):
        if op is Add:
            return float(x + y)
        if op is Sub:
            return float(x - y)
        if op is Mul:
            return float(x * y)
        if op is Div:
            return None if y == 0 else float(x / y)
        if op is Min:
            return float(np.minimum(x, y))
        if op is Max:
            return float(np.maximum(x, y))
    return None


INT_FOLD = {node: OPERATORS[node].python
            for node in (Add, Sub, Mul, FloorDiv, FloorMod, Min, Max)} | {Div: trunc_div}
"""Integer semantics of the arithmetic nodes (``Div`` truncates, as in TVM)."""

COMPARE = {node: OPERATORS[node].python for node in COMPARISONS}

# a OP b  <=>  b FLIPPED a
FLIPPED = {EQ: EQ, NE: NE, LT: GT, LE: GE, GT: LT, GE: LE}
# not (a OP b)  <=>  a NEGATED b   (integers only: floats have NaN)
NEGATED = {EQ: NE, NE: EQ, LT: GE, LE: GT, GT: LE, GE: LT}
