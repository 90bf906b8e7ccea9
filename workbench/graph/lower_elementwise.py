"""The graph's elementwise operators as IR expressions (the epilogues and elementwise
kernels of ``lower_ops``): ``elementwise_value(node, args)`` is one node's expression over
its arguments' expressions, ``unify_floats`` widens the mixed float operations of a chain,
``param_dtype`` the dtype a kernel parameter keeps.
"""

from __future__ import annotations

import math

import numpy as np

from workbench.graph.ir import Node
from workbench.ir.expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    BinaryOp,
    Call,
    Cast,
    IntImm,
    Max,
    Min,
    PrimExpr,
    Select,
    is_float,
)
from workbench.ir.functor import IRMapper
from workbench.ops.compose import const

_INV_SQRT2 = 0.7071067811865476


def param_dtype(dtype: str) -> str:
    """Integer tensors (indices), booleans (a model's mask inputs) and float64 ones keep
    their type; everything else is float32."""
    return dtype if dtype.startswith(("int", "uint")) or dtype in ("float64", "bool") else "float32"


def _literal(value: float, dtype: str) -> PrimExpr:
    """``value`` as a literal of ``dtype`` where it is one (an integer tensor's relu, neg or
    clamp to whole bounds stays integer, as in PyTorch); a float literal otherwise."""
    if not is_float(dtype) and float(value).is_integer():
        return IntImm(int(value), dtype)
    return const(value, dtype if is_float(dtype) else "float32")


def elementwise_value(node: Node, args: list[PrimExpr]) -> PrimExpr:
    """The expression of the elementwise ``node`` over its argument expressions."""
    op, a = node.op, args[0]
    if op in ("add", "bias_add"):
        return a + args[1]
    if op == "sub":
        return a - args[1]
    if op == "mul":
        return a * args[1]
    if op == "div":
        return a / args[1]
    if op == "relu":
        return Max(a, _literal(0, a.dtype))
    if op == "gelu":
        if node.attrs.get("approximate", "none") == "tanh":
            inner = const(math.sqrt(2.0 / math.pi)) * (a + const(0.044715) * a * a * a)
            return const(0.5) * a * (const(1.0) + Call("tanh", (inner,)))
        return const(0.5) * a * (const(1.0) + Call("erf", (a * const(_INV_SQRT2),)))
    if op == "silu":
        return a * Call("sigmoid", (a,))
    if op in ("sigmoid", "tanh", "exp", "sqrt", "erf", "rsqrt", "sin", "cos", "log", "abs"):
        return Call(op, (a,))
    value = _more_elementwise(node, op, args)
    if value is not None:
        return value
    if op == "neg":
        return _literal(0, a.dtype) - a
    if op == "cast":
        dtype = param_dtype(node.attrs["dtype"])
        return a if a.dtype == dtype else Cast(dtype, a)
    if op == "batch_norm":
        mean, var, gamma, beta = args[1:]
        scale = Call("rsqrt", (var + const(node.attrs.get("eps", 1e-5)),))
        return (a - mean) * scale * gamma + beta
    raise NotImplementedError(f"no elementwise lowering for {op}")


_COMPARE = {"eq": EQ, "ne": NE, "lt": LT, "le": LE, "gt": GT, "ge": GE}


def _softplus(a: PrimExpr) -> PrimExpr:
    """``log(1 + exp(a))`` without overflow: ``max(a, 0) + log(1 + exp(-|a|))``."""
    return Max(a, const(0.0)) + Call("log", (const(1.0) + Call("exp", (const(0.0)
                                                                       - Call("abs", (a,)),)),))


def _more_elementwise(node: Node, op: str, args: list[PrimExpr]) -> PrimExpr | None:
    a = args[0]
    if op == "clamp":
        low, high = node.attrs.get("min"), node.attrs.get("max")
        if low is not None:
            a = Max(a, _literal(low, a.dtype))
        return a if high is None else Min(a, _literal(high, a.dtype))
    if op == "pow":
        e = float(node.attrs.get("exponent", 2.0))
        if e == 2.0:
            return a * a
        if e == 3.0:
            return a * a * a
        if e == 1.0:
            return a
        if e == 0.5:
            return Call("sqrt", (a,))
        if e == -0.5:
            return Call("rsqrt", (a,))
        return Call("pow", (a, const(e)))
    if op == "hardsigmoid":
        return Min(Max(a * const(1.0 / 6.0) + const(0.5), const(0.0)), const(1.0))
    if op == "hardswish":
        return a * Min(Max(a * const(1.0 / 6.0) + const(0.5), const(0.0)), const(1.0))
    if op == "softplus":
        return _softplus(a)
    if op == "mish":
        return a * Call("tanh", (_softplus(a),))
    if op == "where":
        return Select(NE(args[2], const(0.0)), a, args[1])
    if op in _COMPARE:  # a 0/1 mask in the node's dtype (an integer input's: integer)
        dtype = node.type.dtype if node.type.dtype != "bool" else "float32"
        return Select(_COMPARE[op](a, args[1]), _literal(1, dtype), _literal(0, dtype))
    return None


class _Unify(IRMapper):
    def generic_visit(self, node):
        node = super().generic_visit(node)
        if isinstance(node, BinaryOp):
            a, b = _widened(node.a, node.b)
            return node if (a, b) == (node.a, node.b) else node.replace(a=a, b=b)
        if isinstance(node, Select):
            a, b = _widened(node.true_value, node.false_value)
            if (a, b) != (node.true_value, node.false_value):
                return node.replace(true_value=a, false_value=b)
        return node


def _widened(a: PrimExpr, b: PrimExpr) -> tuple[PrimExpr, PrimExpr]:
    if a.dtype == b.dtype or not (is_float(a.dtype) and is_float(b.dtype)):
        return a, b
    wide = max(a.dtype, b.dtype, key=lambda d: np.dtype(d).itemsize)
    return (a if a.dtype == wide else Cast(wide, a)), (b if b.dtype == wide else Cast(wide, b))


def unify_floats(value: PrimExpr) -> PrimExpr:
    """``value`` with the narrower operand of every mixed-precision float operation cast to
    the wider (a float32 literal beside float64 operands: type promotion's float64)."""
    return _Unify().visit(value)
