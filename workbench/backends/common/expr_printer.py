"""Print IR expressions as Python (Numba-compatible) source text.

Used by the code generator of both the ``cpu`` target (Numba ``njit``) and the loop path of
the ``numpy`` reference. Operator precedence follows Python's, so the text carries no more
parentheses than it needs: ``C[i, j] + A[i, k] * B[k, j]``.

Typing rules, chosen so that Numba keeps float32 arithmetic in float32 and vectorizes:

* float constants are spelled in their dtype: ``np.float32(0.5)``; a bare ``0.5`` would
  make Numba compute in float64;
* with ``unsigned_indices`` every integer constant of an *index expression* (an integer
  expression made of loop variables and constants only) is spelled ``u64(4)``, matching
  loop variables that run over ``range(u64(n))``. Numba omits the negative-index
  wraparound check for unsigned indices, which lets LLVM vectorize the loops; mixing
  ``uint64`` with a signed integer would give float64, hence every constant is unsigned.
"""

from __future__ import annotations

import math

from workbench.ir import (
    DTYPES,
    Add,
    BufferLoad,
    Call,
    Cast,
    Div,
    FloatImm,
    IntImm,
    Max,
    Min,
    Mul,
    Not,
    PrimExpr,
    Select,
    Sub,
    Var,
    is_float,
    is_int,
)
from workbench.ir.functor import collect
from workbench.ir.operators import ATOM, COMPARE, MUL, NOT, OPERATORS, SELECT, UNARY

# the right operands an integer operation takes unparenthesized: re-association is exact for
# integers only, and a * (b // c) is not (a * b) // c
_ASSOCIATIVE_INT = {Add: (Add, Sub), Mul: (Mul,)}

_MATH_CALLS = ("exp", "log", "sqrt", "tanh", "erf", "sin", "cos", "pow")
"""The intrinsics that are one library call (``ExprPrinter._math`` spells it per target)."""


def source_dtype(dtype: str) -> str:
    """``dtype``, checked to be an IR dtype before it is printed into generated source (a
    PrimFunc parsed from an artifact may carry any string; printed raw it would be code)."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype {dtype!r} is not one of {', '.join(DTYPES)}: it is not "
                         "printed into generated source")
    return dtype


def source_comment(text) -> str:
    """``text`` made safe inside a comment or docstring of generated source: one line of
    ASCII (line breaks and other characters escaped), no double quote to end a string.
    Names are data (a block name may be any string): printed raw, a line break in one
    would start a line of code."""
    return str(text).encode("unicode_escape").decode("ascii").replace('"', "\\x22")


def np_dtype_name(dtype: str) -> str:
    """The numpy spelling of an IR dtype: ``np.float32``, ``np.bool_``."""
    return "np.bool_" if dtype == "bool" else f"np.{source_dtype(dtype)}"


def is_index_expr(expr: PrimExpr) -> bool:
    """An integer expression made only of variables, integer constants and integer arithmetic."""
    if not is_int(expr.dtype) or expr.dtype == "bool":
        return False
    return not collect(expr, lambda n: isinstance(n, (BufferLoad, Call, Cast, FloatImm, Select)))


class ExprPrinter:
    """Python source for expressions.

    Parameters
    ----------
    names
        Python name of each variable and buffer name (sanitized identifiers).
    unsigned_indices
        Spell index constants as ``u64(c)`` (see the module docstring).
    fast_exp
        Use ``rt.fast_exp_f32`` for float32 ``exp`` (and ``sigmoid``), ``rt.fast_tanh_f32``
        and ``rt.fast_erf_f32`` for float32 ``tanh`` and ``erf`` (all vectorizable, relative
        error below 1e-6: ``workbench.backends.cpu.fast_math``).
    """

    def __init__(
        self, names: dict[str, str], *, unsigned_indices: bool = False, fast_exp: bool = False
    ):
        self.names = names
        self.unsigned_indices = unsigned_indices
        self.fast_exp = fast_exp
        self.uses_runtime = False
        self.uses_math = False

    def __call__(self, expr: PrimExpr) -> str:
        return self.print(expr)

    def print(self, expr: PrimExpr, index_context: bool = False) -> str:
        text, _ = self._print(expr, index_context)
        return text

    # -- implementation: every _print returns (text, precedence) --------------------

    def _print(self, expr: PrimExpr, index_context: bool) -> tuple[str, int]:
        if not index_context and self.unsigned_indices and is_index_expr(expr):
            index_context = True
        method = getattr(self, "_print_" + type(expr).__name__, None)
        if method is not None:
            return method(expr, index_context)
        op = OPERATORS.get(type(expr))
        if op is not None:
            return self._binary(expr, op.symbol, op.precedence, index_context)
        raise NotImplementedError(f"no Python code generation for {type(expr).__name__}")

    def _wrap(
        self, expr: PrimExpr, min_prec: int, index_context: bool, strict: bool = False
    ) -> str:
        text, prec = self._print(expr, index_context)
        if prec < min_prec or (strict and prec == min_prec):
            return f"({text})"
        return text

    def _binary(self, expr, symbol: str, prec: int, index_context: bool) -> tuple[str, int]:
        # Python chains comparisons (a < b < c), so a comparison operand is always wrapped.
        compare = prec == COMPARE
        takes = _ASSOCIATIVE_INT.get(type(expr), ())
        exact_assoc = is_int(expr.dtype) and isinstance(expr.b, takes)
        left = self._wrap(expr.a, prec, index_context, strict=compare)
        right = self._wrap(expr.b, prec, index_context, strict=compare or not exact_assoc)
        return f"{left} {symbol} {right}", prec

    def _print_Var(self, expr: Var, index_context: bool):
        return self.names.get(expr.name, expr.name), ATOM

    def _print_IntImm(self, expr: IntImm, index_context: bool):
        if expr.dtype == "bool":
            return ("True" if expr.value else "False"), ATOM
        value = int(expr.value)  # an int, whatever the IR node was built from
        if index_context and self.unsigned_indices:
            return f"u64({value})", ATOM
        if value < 0:
            return str(value), UNARY
        return str(value), ATOM

    def _print_FloatImm(self, expr: FloatImm, index_context: bool):
        value = expr.value
        if math.isnan(value):
            literal = "np.nan"
        elif math.isinf(value):
            literal = "np.inf" if value > 0 else "-np.inf"
        else:
            literal = repr(float(value))
        if expr.dtype == "float64" and not literal.startswith("-"):
            return literal, ATOM
        return f"{np_dtype_name(expr.dtype)}({literal})", ATOM

    def _print_Cast(self, expr: Cast, index_context: bool):
        inner = self.print(expr.value)
        if expr.dtype == "bool":
            return f"bool({inner})", ATOM
        return f"{np_dtype_name(expr.dtype)}({inner})", ATOM

    def _print_Div(self, expr: Div, index_context: bool):
        if is_float(expr.dtype):
            return self._binary(expr, "/", MUL, index_context)
        self.uses_runtime = True
        a, b = self.print(expr.a, index_context), self.print(expr.b, index_context)
        return f"rt.truncdiv({a}, {b})", ATOM

    def _print_Min(self, expr: Min, index_context: bool):
        return (
            f"min({self.print(expr.a, index_context)}, {self.print(expr.b, index_context)})",
            ATOM,
        )

    def _print_Max(self, expr: Max, index_context: bool):
        return (
            f"max({self.print(expr.a, index_context)}, {self.print(expr.b, index_context)})",
            ATOM,
        )

    def _print_Not(self, expr: Not, index_context: bool):
        return f"not {self._wrap(expr.a, NOT, index_context)}", NOT

    def _print_Select(self, expr: Select, index_context: bool):
        true_text = self._wrap(expr.true_value, SELECT, index_context, strict=True)
        cond_text = self._wrap(expr.condition, SELECT, index_context, strict=True)
        false_text = self._wrap(expr.false_value, SELECT, index_context)
        return f"{true_text} if {cond_text} else {false_text}", SELECT

    def _print_BufferLoad(self, expr: BufferLoad, index_context: bool):
        return f"{self.names[expr.buffer.name]}[{self.indices(expr.indices)}]", ATOM

    def indices(self, indices) -> str:
        """The subscript text of ``indices`` (``()`` for a 0-d buffer)."""
        if not indices:
            return "()"
        return ", ".join(self.print(index) for index in indices)

    language = "Python"
    """What the printer writes, for the error on an intrinsic it has no spelling for."""

    def _print_Call(self, expr: Call, index_context: bool):
        if expr.op == "bounds_check":  # the debug build's index check (see bounds_checks)
            self.uses_runtime = True
            index, extent, check_id, *variables = (self.print(arg) for arg in expr.args)
            values = "(" + "".join(f"{v}, " for v in variables) + ")"
            return f"rt.checked_index({index}, {extent}, {check_id}, {values})", ATOM
        return self._intrinsic(expr)

    def _intrinsic(self, expr: Call) -> tuple[str, int]:
        """A math intrinsic: the table of intrinsics, each target spelling the library
        calls through ``_math`` (numpy and runtime helpers here, ``math`` on the GPU)."""
        args = [self.print(arg) for arg in expr.args]
        dtype, op = expr.dtype, expr.op
        one = f"{np_dtype_name(dtype)}(1.0)"
        if op in _MATH_CALLS:
            return self._math(op, args, dtype), ATOM
        if op == "abs":
            return f"abs({args[0]})", ATOM
        if op == "rsqrt":
            return f"{one} / {self._math('sqrt', args, dtype)}", MUL
        if op == "sigmoid":
            negated = self._negated(expr.args[0], args[0])
            return f"{one} / ({one} + {self._math('exp', [negated], dtype)})", MUL
        raise NotImplementedError(f"no {self.language} code generation for intrinsic {op!r}")

    def _negated(self, arg: PrimExpr, text: str) -> str:
        return "-" + self._wrap(arg, UNARY, False)

    def _math(self, op: str, args: list[str], dtype: str) -> str:
        """The call computing intrinsic ``op`` (one of ``_MATH_CALLS``) of printed ``args``."""
        if op == "exp":
            return self._exp(args[0], dtype)
        if op in ("tanh", "erf") and self.fast_exp and dtype == "float32":
            self.uses_runtime = True
            return f"rt.fast_{op}_f32({args[0]})"
        if op == "erf":
            self.uses_math = True
            return f"{np_dtype_name(dtype)}(math.erf({args[0]}))"
        if op == "pow":
            return f"{np_dtype_name(dtype)}(np.power({args[0]}, {args[1]}))"
        return f"np.{op}({args[0]})"

    def _exp(self, arg: str, dtype: str) -> str:
        if self.fast_exp and dtype == "float32":
            self.uses_runtime = True
            return f"rt.fast_exp_f32({arg})"
        return f"np.exp({arg})"
