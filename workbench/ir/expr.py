"""Expressions of the tensor IR.

Grammar::

    PrimExpr ::= Var(name, dtype)
               | IntImm(value, dtype) | FloatImm(value, dtype)
               | Cast(dtype, value)
               | Add | Sub | Mul | Div | FloorDiv | FloorMod | Min | Max        (a, b)
               | EQ | NE | LT | LE | GT | GE                                    (a, b)
               | And | Or (a, b) | Not(a)
               | Select(condition, true_value, false_value)
               | BufferLoad(buffer, indices)
               | Call(op, args, dtype)                                          (math intrinsics)

``Div`` is true division for floats and, as in TVM, truncating division for integers;
index arithmetic uses ``FloorDiv``/``FloorMod``. Python operators build expressions
(``i * 4 + j``) but ``==`` is structural equality, never an IR comparison: use ``EQ``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from workbench.ir.node import Node, ir_node

if TYPE_CHECKING:
    from workbench.ir.buffer import Buffer

INT_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint32", "uint64", "bool")
FLOAT_DTYPES = ("float16", "float32", "float64")
DTYPES = INT_DTYPES + FLOAT_DTYPES

INTRINSICS = {
    # name: number of arguments
    "exp": 1, "log": 1, "sqrt": 1, "rsqrt": 1, "tanh": 1, "erf": 1,
    "sigmoid": 1, "pow": 2, "abs": 1, "sin": 1, "cos": 1,
}


def is_float(dtype: str) -> bool:
    return dtype.startswith("float")


def is_int(dtype: str) -> bool:
    return dtype in INT_DTYPES


class PrimExpr(Node):
    """Base class of expressions. Every expression has a ``dtype``."""

    dtype: str

    # Python operators build IR; comparisons are spelled EQ/LT/... explicitly.
    def __add__(self, other): return Add(self, as_expr(other, self.dtype))
    def __radd__(self, other): return Add(as_expr(other, self.dtype), self)
    def __sub__(self, other): return Sub(self, as_expr(other, self.dtype))
    def __rsub__(self, other): return Sub(as_expr(other, self.dtype), self)
    def __mul__(self, other): return Mul(self, as_expr(other, self.dtype))
    def __rmul__(self, other): return Mul(as_expr(other, self.dtype), self)
    def __truediv__(self, other): return Div(self, as_expr(other, self.dtype))
    def __rtruediv__(self, other): return Div(as_expr(other, self.dtype), self)
    def __floordiv__(self, other): return FloorDiv(self, as_expr(other, self.dtype))
    def __rfloordiv__(self, other): return FloorDiv(as_expr(other, self.dtype), self)
    def __mod__(self, other): return FloorMod(self, as_expr(other, self.dtype))
    def __rmod__(self, other): return FloorMod(as_expr(other, self.dtype), self)
    def __neg__(self): return Sub(as_expr(0, self.dtype), self)

    def __bool__(self):
        raise TypeError("an IR expression has no truth value; compare with EQ/LT/... nodes")

    __hash__ = Node.__hash__


@ir_node
class Var(PrimExpr):
    """A scalar variable: a loop variable, a block iteration variable."""

    name: str
    dtype: str = "int32"

    __hash__ = Node.__hash__


@ir_node
class IntImm(PrimExpr):
    value: int
    dtype: str = "int32"

    __hash__ = Node.__hash__


@ir_node
class FloatImm(PrimExpr):
    value: float
    dtype: str = "float32"

    __hash__ = Node.__hash__


@ir_node
class Cast(PrimExpr):
    dtype: str
    value: PrimExpr

    __hash__ = Node.__hash__


class MixedOperandTypeError(TypeError):
    """A binary expression was built from an integer and a float operand.

    The IR never converts implicitly: write ``Cast("float32", i)`` (``T.Cast`` in the DSL).
    """


class BinaryOp(PrimExpr):
    """Base of two-operand expressions. ``symbol`` is the printed Python operator.

    Both operands must be integers or both floats: mixing raises ``MixedOperandTypeError``.
    """

    a: PrimExpr
    b: PrimExpr
    symbol: ClassVar[str] = "?"

    def __post_init__(self):
        a_dtype, b_dtype = getattr(self.a, "dtype", None), getattr(self.b, "dtype", None)
        if a_dtype is None or b_dtype is None:
            return
        if is_float(a_dtype) != is_float(b_dtype):
            raise MixedOperandTypeError(
                f"{type(self).__name__}: cannot mix {a_dtype} operand {self.a!r} with "
                f"{b_dtype} operand {self.b!r}; cast one of them (Cast / T.Cast)"
            )

    @property
    def dtype(self) -> str:
        return self.a.dtype

    __hash__ = Node.__hash__


class CompareOp(BinaryOp):
    """Base of comparisons; their dtype is ``bool``."""

    @property
    def dtype(self) -> str:
        return "bool"

    __hash__ = Node.__hash__


def _binary(name: str, symbol: str, base=BinaryOp):
    cls = type(name, (base,), {"__annotations__": {"a": "PrimExpr", "b": "PrimExpr"},
                               "symbol": symbol, "__hash__": Node.__hash__,
                               "__module__": __name__})
    return ir_node(cls)


Add = _binary("Add", "+")
Sub = _binary("Sub", "-")
Mul = _binary("Mul", "*")
Div = _binary("Div", "/")
FloorDiv = _binary("FloorDiv", "//")
FloorMod = _binary("FloorMod", "%")
Min = _binary("Min", "min")
Max = _binary("Max", "max")
EQ = _binary("EQ", "==", CompareOp)
NE = _binary("NE", "!=", CompareOp)
LT = _binary("LT", "<", CompareOp)
LE = _binary("LE", "<=", CompareOp)
GT = _binary("GT", ">", CompareOp)
GE = _binary("GE", ">=", CompareOp)
And = _binary("And", "and", CompareOp)
Or = _binary("Or", "or", CompareOp)


@ir_node
class Not(PrimExpr):
    a: PrimExpr

    @property
    def dtype(self) -> str:
        return "bool"

    __hash__ = Node.__hash__


@ir_node
class Select(PrimExpr):
    """``true_value if condition else false_value``; both branches may be evaluated."""

    condition: PrimExpr
    true_value: PrimExpr
    false_value: PrimExpr

    @property
    def dtype(self) -> str:
        return self.true_value.dtype

    __hash__ = Node.__hash__


@ir_node
class BufferLoad(PrimExpr):
    buffer: Buffer
    indices: tuple[PrimExpr, ...]

    @property
    def dtype(self) -> str:
        return self.buffer.dtype

    __hash__ = Node.__hash__


@ir_node
class Call(PrimExpr):
    """A math intrinsic such as ``exp`` (see ``INTRINSICS``)."""

    op: str
    args: tuple[PrimExpr, ...]
    dtype: str = "float32"

    __hash__ = Node.__hash__


def as_expr(value, dtype: str | None = None) -> PrimExpr:
    """Convert a Python number (or an expression) to an expression.

    Integers become ``IntImm`` (``int32`` unless ``dtype`` is an integer type) and
    floats ``FloatImm`` (``float32`` unless ``dtype`` is a float type).
    """
    if isinstance(value, PrimExpr):
        return value
    if isinstance(value, bool):
        return IntImm(int(value), "bool")
    if isinstance(value, int):
        if dtype is not None and is_float(dtype):
            return FloatImm(float(value), dtype)
        int_dtype = dtype if dtype is not None and is_int(dtype) and dtype != "bool" else "int32"
        return IntImm(value, int_dtype)
    if isinstance(value, float):
        return FloatImm(value, dtype if dtype is not None and is_float(dtype) else "float32")
    raise TypeError(f"cannot convert {value!r} to an IR expression")


def const_value(expr: PrimExpr) -> int | float | None:
    """The Python value of a constant expression, else None."""
    if isinstance(expr, (IntImm, FloatImm)):
        return expr.value
    return None
