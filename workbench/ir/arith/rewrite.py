"""The rewrite simplifier: bottom-up, one method per node family, to a fixed point."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from workbench.ir.arith.fold import (
    COMPARE,
    FLIPPED,
    INT_FOLD,
    NEGATED,
    bool_imm,
    const_of,
    fold_float,
    is_index,
)
from workbench.ir.arith.intervals import (
    Bounds,
    add_bounds,
    dtype_bounds,
    floordiv_bounds,
    floormod_bounds,
    max_bounds,
    min_bounds,
    mul_bounds,
    trunc_div_bounds,
    union_bounds,
)
from workbench.ir.arith.linear import Linear, from_linear, linear_form
from workbench.ir.expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    BinaryOp,
    BufferLoad,
    Call,
    Cast,
    CompareOp,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mul,
    Not,
    Or,
    PrimExpr,
    Select,
    Sub,
    Var,
    is_float,
    is_int,
)
from workbench.ir.functor import IRMapper

VarRanges = Mapping[Var, tuple[int | None, int | None]]

MAX_ROUNDS = 8


def is_multiple(expr: PrimExpr, d: int) -> bool:
    """Whether ``expr`` is a non-zero integer constant that ``d`` divides."""
    return isinstance(expr, IntImm) and expr.value != 0 and expr.value % d == 0


class Simplifier:
    """Simplify expressions under fixed variable ranges (``run``); also answers interval
    queries (``bounds``), memoised per instance."""

    def __init__(self, var_ranges: VarRanges | None):
        self.var_ranges = dict(var_ranges or {})
        self._bounds_memo: dict[PrimExpr, Bounds] = {}

    # ---- driver

    def run(self, expr: PrimExpr) -> PrimExpr:
        for _ in range(MAX_ROUNDS):
            new = self.visit(expr)
            if new == expr:
                return new
            expr = new
        return expr

    def visit(self, expr: PrimExpr) -> PrimExpr:
        if isinstance(expr, (Var, IntImm, FloatImm)):
            return expr
        if isinstance(expr, BinaryOp):
            a, b = self.visit(expr.a), self.visit(expr.b)
            return self.binary(type(expr), a, b)
        if isinstance(expr, Not):
            return self._not(self.visit(expr.a))
        if isinstance(expr, Select):
            return self._select(self.visit(expr.condition), self.visit(expr.true_value),
                                self.visit(expr.false_value))
        if isinstance(expr, Cast):
            return self._cast(expr.dtype, self.visit(expr.value))
        if isinstance(expr, BufferLoad):
            indices = tuple(self.visit(index) for index in expr.indices)
            return expr if indices == expr.indices else expr.replace(indices=indices)
        if isinstance(expr, Call):
            args = tuple(self.visit(arg) for arg in expr.args)
            return expr if args == expr.args else expr.replace(args=args)
        return expr

    def binary(self, op: type, a: PrimExpr, b: PrimExpr) -> PrimExpr:
        if op in (Add, Sub):
            return self._add_sub(op, a, b)
        if op is Mul:
            return self._mul(a, b)
        if op is Div:
            return self._div(a, b)
        if op is FloorDiv:
            return self._floordiv(a, b)
        if op is FloorMod:
            return self._floormod(a, b)
        if op in (Min, Max):
            return self._min_max(op, a, b)
        if op in (And, Or):
            return self._logic(op, a, b)
        return self._compare(op, a, b)

    # ---- shared: constants of one dtype

    def _fold(self, op: type, a: PrimExpr, b: PrimExpr) -> PrimExpr | None:
        """Fold ``a op b`` when both are constants of the same dtype."""
        if a.dtype != b.dtype:
            return None
        if isinstance(a, IntImm) and isinstance(b, IntImm) and op in INT_FOLD:
            if op in (FloorDiv, FloorMod, Div) and b.value == 0:
                return None
            return IntImm(INT_FOLD[op](a.value, b.value), a.dtype)
        if isinstance(a, FloatImm) and isinstance(b, FloatImm):
            value = fold_float(op, a.value, b.value, a.dtype)
            return None if value is None else FloatImm(value, a.dtype)
        return None

    def _int_rules(self, a: PrimExpr, b: PrimExpr) -> bool:
        return is_index(a.dtype) and a.dtype == b.dtype

    # ---- node families

    def _add_sub(self, op: type, a: PrimExpr, b: PrimExpr) -> PrimExpr:
        folded = self._fold(op, a, b)
        if folded is not None:
            return folded
        if not self._int_rules(a, b):
            if op is Add and const_of(a) is not None and const_of(b) is None:
                return Add(b, a)  # float + is commutative: constant to the right
            return op(a, b)
        form = linear_form(a, a.dtype).add(linear_form(b, a.dtype), 1 if op is Add else -1)
        return from_linear(form, a.dtype)

    def _mul(self, a: PrimExpr, b: PrimExpr) -> PrimExpr:
        folded = self._fold(Mul, a, b)
        if folded is not None:
            return folded
        if not self._int_rules(a, b):
            if const_of(a) is not None and const_of(b) is None:
                return Mul(b, a)
            return Mul(a, b)
        if isinstance(a, IntImm):
            a, b = b, a
        if isinstance(b, IntImm):
            return from_linear(linear_form(a, a.dtype).scale(b.value), a.dtype)
        return Mul(a, b)

    def _div(self, a: PrimExpr, b: PrimExpr) -> PrimExpr:
        folded = self._fold(Div, a, b)
        if folded is not None:
            return folded
        if not self._int_rules(a, b):
            return Div(a, b)
        if isinstance(b, IntImm) and b.value == 1:
            return a
        lo, _ = self.bounds(a)
        if isinstance(b, IntImm) and b.value > 0 and lo is not None and lo >= 0:
            return self._floordiv(a, b)  # truncation == floor for a >= 0
        return Div(a, b)

    def _floordiv(self, a: PrimExpr, b: PrimExpr) -> PrimExpr:
        folded = self._fold(FloorDiv, a, b)
        if folded is not None:
            return folded
        if not self._int_rules(a, b) or not isinstance(b, IntImm) or b.value <= 0:
            return FloorDiv(a, b)
        dtype, d = a.dtype, b.value
        if d == 1:
            return a
        if isinstance(a, FloorDiv) and isinstance(a.b, IntImm) and a.b.value > 0:
            return self._floordiv(a.a, IntImm(a.b.value * d, dtype))  # (x // c) // d
        if isinstance(a, FloorMod) and is_multiple(a.b, d) and a.b.value > 0:
            # (x % (c*d)) // d -> x // d % c: every "digit" of x in one form
            inner = self._floordiv(a.a, IntImm(d, dtype))
            return self._floormod(inner, IntImm(a.b.value // d, dtype))
        form = linear_form(a, dtype)
        g = math.gcd(d, form.const, *form.terms.values())
        if g > 1:  # (g*x) // (g*d) -> x // d
            form, d = Linear({t: c // g for t, c in form.terms.items()}, form.const // g), d // g
            if d == 1:
                return from_linear(form, dtype)
        quotient, rest = self._split_multiples(form, d)
        rest_expr = from_linear(rest, dtype)
        lo, hi = self.bounds(rest_expr)
        if lo is not None and hi is not None and lo // d == hi // d:
            return from_linear(quotient.add(Linear({}, lo // d)), dtype)
        if not quotient.terms and quotient.const == 0:
            return FloorDiv(from_linear(form, dtype), IntImm(d, dtype))
        return from_linear(quotient.add(Linear({FloorDiv(rest_expr, IntImm(d, dtype)): 1})), dtype)

    def _floormod(self, a: PrimExpr, b: PrimExpr) -> PrimExpr:
        folded = self._fold(FloorMod, a, b)
        if folded is not None:
            return folded
        if not self._int_rules(a, b) or not isinstance(b, IntImm) or b.value <= 0:
            return FloorMod(a, b)
        dtype, d = a.dtype, b.value
        if d == 1:
            return IntImm(0, dtype)
        if isinstance(a, FloorMod) and is_multiple(a.b, d):
            return self._floormod(a.a, b)  # (x % (k*d)) % d
        form = linear_form(a, dtype)
        g = math.gcd(d, form.const, *form.terms.values())
        if g > 1:  # (g*x) % (g*d) -> (x % d) * g
            reduced = Linear({t: c // g for t, c in form.terms.items()}, form.const // g)
            inner = self._floormod(from_linear(reduced, dtype), IntImm(d // g, dtype))
            return from_linear(linear_form(inner, dtype).scale(g), dtype)
        _, rest = self._split_multiples(form, d)
        rest_expr = from_linear(rest, dtype)
        lo, hi = self.bounds(rest_expr)
        if lo is not None and hi is not None and lo // d == hi // d:
            return from_linear(rest.add(Linear({}, -(lo // d) * d)), dtype)
        return FloorMod(rest_expr, IntImm(d, dtype))

    @staticmethod
    def _split_multiples(form: Linear, d: int) -> tuple[Linear, Linear]:
        """``form == d * quotient + rest``: terms with coefficients divisible by ``d`` go to the
        quotient, the constant is split so that ``0 <= rest.const < d``."""
        quotient = Linear({t: c // d for t, c in form.terms.items() if c % d == 0}, form.const // d)
        rest = Linear({t: c for t, c in form.terms.items() if c % d != 0}, form.const % d)
        return quotient, rest

    def _min_max(self, op: type, a: PrimExpr, b: PrimExpr) -> PrimExpr:
        folded = self._fold(op, a, b)
        if folded is not None:
            return folded
        if not self._int_rules(a, b):
            return op(a, b)
        if a == b:
            return a
        if isinstance(a, IntImm):
            a, b = b, a  # constant to the right
        lo, hi = self.bounds(self._add_sub(Sub, a, b))
        a_le_b = hi is not None and hi <= 0
        a_ge_b = lo is not None and lo >= 0
        if a_le_b:
            return a if op is Min else b
        if a_ge_b:
            return b if op is Min else a
        return op(a, b)

    def _compare(self, op: type, a: PrimExpr, b: PrimExpr) -> PrimExpr:
        if const_of(a) is not None and const_of(b) is not None and a.dtype == b.dtype:
            return bool_imm(COMPARE[op](a.value, b.value))
        if self._int_rules(a, b):
            if a == b:
                return bool_imm(op in (EQ, LE, GE))
            lo, hi = self.bounds(self._add_sub(Sub, a, b))
            decided = self._decide(op, lo, hi)
            if decided is not None:
                return bool_imm(decided)
        if const_of(a) is not None and const_of(b) is None:
            return FLIPPED[op](b, a)  # constant to the right
        return op(a, b)

    @staticmethod
    def _decide(op: type, lo: int | None, hi: int | None) -> bool | None:
        """Decide ``diff OP 0`` for every ``diff`` in ``[lo, hi]``; None when it depends."""
        negative = hi is not None and hi < 0
        positive = lo is not None and lo > 0
        non_negative = lo is not None and lo >= 0
        non_positive = hi is not None and hi <= 0
        zero = lo == 0 and hi == 0
        always_never = {
            LT: (negative, non_negative),
            LE: (non_positive, positive),
            GT: (positive, non_positive),
            GE: (non_negative, negative),
            EQ: (zero, negative or positive),
            NE: (negative or positive, zero),
        }
        always, never = always_never[op]
        if always:
            return True
        if never:
            return False
        return None

    def _logic(self, op: type, a: PrimExpr, b: PrimExpr) -> PrimExpr:
        absorbing = 0 if op is And else 1  # false and x -> false ; true or x -> true
        for x, y in ((a, b), (b, a)):
            if isinstance(x, IntImm):
                if (x.value != 0) == bool(absorbing):
                    return bool_imm(bool(absorbing))
                return y if y.dtype == "bool" else op(a, b)
        if a == b:
            return a
        return op(a, b)

    def _not(self, a: PrimExpr) -> PrimExpr:
        if isinstance(a, IntImm):
            return bool_imm(a.value == 0)
        if isinstance(a, Not):
            return a.a
        if isinstance(a, CompareOp) and type(a) in NEGATED and self._int_rules(a.a, a.b):
            return NEGATED[type(a)](a.a, a.b)
        return Not(a)

    def _select(self, cond: PrimExpr, t: PrimExpr, f: PrimExpr) -> PrimExpr:
        if isinstance(cond, IntImm):
            return t if cond.value != 0 else f
        if t == f:
            return t
        return Select(cond, t, f)

    def _cast(self, dtype: str, value: PrimExpr) -> PrimExpr:
        if value.dtype == dtype:
            return value
        c = const_of(value)
        if c is None:
            return Cast(dtype, value)
        if dtype == "bool":
            return bool_imm(c != 0)
        if is_float(dtype):
            return FloatImm(float(np.array(c).astype(dtype)), dtype)
        if isinstance(value, FloatImm) and not math.isfinite(c):
            return Cast(dtype, value)
        with np.errstate(all="ignore"):
            return IntImm(int(np.array(c).astype(dtype)), dtype)

    # ---- interval analysis

    def bounds(self, expr: PrimExpr) -> Bounds:
        memo = self._bounds_memo.get(expr)
        if memo is None:
            memo = self._compute_bounds(expr)
            self._bounds_memo[expr] = memo
        return memo

    def _compute_bounds(self, expr: PrimExpr) -> Bounds:
        if isinstance(expr, IntImm):
            return expr.value, expr.value
        if not is_int(expr.dtype):
            return None, None
        if isinstance(expr, Var):
            return self.var_ranges.get(expr, dtype_bounds(expr.dtype))
        if isinstance(expr, (CompareOp, Not)):
            return 0, 1
        if isinstance(expr, BinaryOp):
            a, b = self.bounds(expr.a), self.bounds(expr.b)
            combine = {
                Add: add_bounds,
                Sub: lambda x, y: add_bounds(x, y, -1),
                Mul: mul_bounds,
                FloorDiv: floordiv_bounds,
                FloorMod: floormod_bounds,
                Div: trunc_div_bounds,
                Min: min_bounds,
                Max: max_bounds,
            }[type(expr)]
            return combine(a, b)
        if isinstance(expr, Select):
            cond = self.visit(expr.condition)
            if isinstance(cond, IntImm):
                return self.bounds(expr.true_value if cond.value else expr.false_value)
            return union_bounds(self.bounds(expr.true_value), self.bounds(expr.false_value))
        if isinstance(expr, Cast) and is_int(expr.value.dtype):
            return self.bounds(expr.value)
        return dtype_bounds(expr.dtype)


class StmtSimplifier(IRMapper):
    """Simplify every expression of a statement, with the ranges of the loops and blocks
    around it: a ``For`` with constant bounds and a block iteration variable with a constant
    domain add their variable's range while their body is visited."""

    def __init__(self, var_ranges: VarRanges | None = None):
        self.ranges: dict[Var, tuple[int | None, int | None]] = dict(var_ranges or {})

    def visit(self, node):
        if isinstance(node, PrimExpr):
            new = Simplifier(self.ranges).run(node)
            return node if new == node else new
        return super().visit(node)

    def visit_For(self, loop):
        ranges = {}
        lo, extent = loop.min, loop.extent
        if isinstance(lo, IntImm) and isinstance(extent, IntImm) and extent.value > 0:
            ranges[loop.loop_var] = (lo.value, lo.value + extent.value - 1)
        return self._visit_with(loop, ranges)

    def visit_Block(self, block):
        ranges = {}
        for iv in block.iter_vars:
            lo, extent = iv.dom.min, iv.dom.extent
            if isinstance(lo, IntImm) and isinstance(extent, IntImm) and extent.value > 0:
                ranges[iv.var] = (lo.value, lo.value + extent.value - 1)
        return self._visit_with(block, ranges)

    def _visit_with(self, node, ranges):
        saved = dict(self.ranges)
        self.ranges.update(ranges)
        try:
            return self.generic_visit(node)
        finally:
            self.ranges = saved
