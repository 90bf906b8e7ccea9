"""A direct evaluator of expressions with Python numbers (the simplifier's test oracle)."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from workbench.ir.arith.fold import COMPARE, INT_FOLD, fold_float
from workbench.ir.expr import (
    And,
    BinaryOp,
    BufferLoad,
    Call,
    Cast,
    CompareOp,
    FloatImm,
    IntImm,
    Not,
    Or,
    PrimExpr,
    Select,
    Var,
    is_float,
)


def _lookup(env: Mapping, key):
    if key in env:
        return env[key]
    return env[key.name]


def evaluate_expr(expr: PrimExpr, env: Mapping):
    if isinstance(expr, (IntImm, FloatImm)):
        return expr.value
    if isinstance(expr, Var):
        return _lookup(env, expr)
    if isinstance(expr, (And, Or)):
        a = evaluate_expr(expr.a, env)
        b = evaluate_expr(expr.b, env)
        return int(bool(a) and bool(b)) if isinstance(expr, And) else int(bool(a) or bool(b))
    if isinstance(expr, CompareOp):
        return int(COMPARE[type(expr)](evaluate_expr(expr.a, env), evaluate_expr(expr.b, env)))
    if isinstance(expr, BinaryOp):
        a, b = evaluate_expr(expr.a, env), evaluate_expr(expr.b, env)
        if is_float(expr.dtype):
            return fold_float(type(expr), a, b, expr.dtype)
        return INT_FOLD[type(expr)](a, b)
    if isinstance(expr, Not):
        return int(not evaluate_expr(expr.a, env))
    if isinstance(expr, Select):
        taken = expr.true_value if evaluate_expr(expr.condition, env) else expr.false_value
        return evaluate_expr(taken, env)
    if isinstance(expr, Cast):
        value = evaluate_expr(expr.value, env)
        if expr.dtype == "bool":
            return int(value != 0)
        return np.array(value).astype(expr.dtype).item()
    if isinstance(expr, BufferLoad):
        array = _lookup(env, expr.buffer)
        return array[tuple(evaluate_expr(index, env) for index in expr.indices)].item()
    if isinstance(expr, Call):
        args = [np.array(evaluate_expr(arg, env), dtype=expr.dtype) for arg in expr.args]
        return _call(expr.op, args)
    raise TypeError(f"cannot evaluate {type(expr).__name__}")


def _call(op: str, args: list):
    x = args[0]
    with np.errstate(all="ignore"):
        if op == "exp":
            return float(np.exp(x))
        if op == "log":
            return float(np.log(x))
        if op == "sqrt":
            return float(np.sqrt(x))
        if op == "rsqrt":
            return float(1 / np.sqrt(x))
        if op in ("tanh", "sin", "cos"):
            return float(getattr(np, op)(x))
        if op == "erf":
            return math.erf(float(x))
        if op == "sigmoid":
            return float(1 / (1 + np.exp(-x)))
        if op == "pow":
            return float(np.power(x, args[1]))
        if op == "abs":
            return float(np.abs(x))
    raise ValueError(f"unknown intrinsic {op!r}")
